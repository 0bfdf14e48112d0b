// http2::Options: what an HTTP/2 server connection is configured with beyond
// the HttpServer's own options (whose limits, timeouts and output limit it
// shares: see docs/http2.md for every default and the attack each one bounds).
#pragma once

#include <cstddef>
#include <cstdint>

namespace libnet::http2 {

struct Options {
  // Serve HTTP/2 with prior knowledge on plain TCP ("h2c": a connection that
  // starts with the client preface). HTTP/2 over TLS is chosen by ALPN
  // whenever the server's TLS context offers "h2".
  bool priorKnowledge = true;
  // SETTINGS_MAX_CONCURRENT_STREAMS: streams past it are refused.
  uint32_t maxConcurrentStreams = 100;
  // SETTINGS_INITIAL_WINDOW_SIZE: how much of a request body a client may
  // send on one stream before the server has taken it in.
  uint32_t initialWindowSize = 1024 * 1024;
  // Rapid Reset (CVE-2023-44487): streams the client resets (or that end
  // before their answer) draw from a bucket of this many tokens, refilled at
  // resetsPerSecond; an empty bucket is a GOAWAY (ENHANCE_YOUR_CALM).
  uint32_t resetBurst = 200;
  uint32_t resetsPerSecond = 33;
  // PING, SETTINGS and empty frames the same way (floods that cost the
  // server an answer each).
  uint32_t controlBurst = 1000;
  uint32_t controlPerSecond = 100;
  // A header block (HEADERS plus CONTINUATION frames) is bounded in frames
  // and in bytes on the wire (twice the header section limit); past either,
  // GOAWAY. Its decoded size is bounded by the header section limit per
  // stream (431), and by four times that per block (HPACK bomb: GOAWAY).
  uint32_t maxHeaderBlockFrames = 32;
  // Request bodies buffered on one connection, over all its streams; a
  // stream whose body would pass it is answered 503.
  size_t maxConnectionBodyBytes = 8 * 1024 * 1024;
};

}  // namespace libnet::http2
