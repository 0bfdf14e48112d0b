// ws::Options: how one WebSocket connection behaves, for either role; given
// to the server upgrade (WebSocketServer.h) or the client (WebSocketClient.h)
// and copied into every WebSocket made. Plain value, checked by check().
#pragma once

#include <chrono>
#include <cstddef>

#include "base/Duration.h"
#include "net/websocket/Deflate.h"

namespace libnet::ws {

struct Options {
  // The largest frame payload accepted (1009 past it).
  size_t maxFrameBytes = 16 * 1024 * 1024;
  // The largest message accepted, fragments joined and after decompression
  // (1009 past it): what one connection may make the process hold for input.
  size_t maxMessageBytes = 16 * 1024 * 1024;
  // permessage-deflate (RFC 7692); off by default. Decompression is bounded
  // by maxMessageBytes (a deflate bomb is refused with 1009).
  DeflateOptions deflate{};
  // Outgoing messages longer than this go out as fragments of this size; 0:
  // one frame per message.
  size_t fragmentSize = 0;
  // Keep-alive: a ping when nothing has arrived for this long; a peer that
  // sends nothing (no pong either) within pingTimeout after it is dropped
  // (onClose 1006). Zero: no pings.
  Duration pingInterval = Duration::zero();
  Duration pingTimeout = std::chrono::seconds(10);
  // After our close frame, how long the peer has to answer with its own (and,
  // for a client, to close TCP) before the connection is dropped. Positive.
  Duration closeTimeout = std::chrono::seconds(5);
};

// Throws std::invalid_argument naming the field for a value that cannot work
// (a zero limit, a non-positive closeTimeout or pingTimeout, bad deflate
// window bits or level).
void check(const Options& options);

}  // namespace libnet::ws
