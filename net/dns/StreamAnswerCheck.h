// StreamAnswerCheck: one DNS-over-TCP connection of the resolver, watched in
// both directions as c-ares writes and reads it, so that a server's
// malformed answer is told apart from a server that cannot be reached.
//
// On TCP every message is its length in two bytes, then the message (RFC
// 1035, 4.2.2). c-ares 1.18 reads the length, then exactly that many bytes,
// and gives what it read to its answer matching; it ignores a message whose
// id and question match no query (right for UDP, where anyone can send a
// datagram to the port: an off-path forgery is dropped), and takes a
// connection that ends (or fails) as the server's failure, reporting
// ARES_ECONNREFUSED once every try is spent. So a length of zero (read as an
// end of file), an answer cut short by the server's close, or bytes that are
// no answer at all became "no name server reachable", or a wait for the
// timeout. On TCP a connection carries only what the server sent, so these
// are the server's malformed answers, and this check says so:
//
// - a length shorter than a DNS header (12 bytes; zero included);
// - a complete message that is not a response (QR clear) or whose id is
//   that of no query sent on this connection;
// - the connection's end (a close or a reset) in the middle of a message
//   (midMessage(), which the caller asks when the read says so).
//
// Owned by the resolver, one per TCP socket; loop thread only.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libnet::dns {

class StreamAnswerCheck {
 public:
  // A DNS message's fixed header: id, flags, four counts.
  static constexpr size_t kHeaderSize = 12;

  // c-ares wrote the first `written` bytes of `iov` on the connection: the
  // ids of the queries in them are noted.
  void sent(const iovec* iov, int count, size_t written);
  // c-ares read `bytes` from the connection. False when they make it
  // malformed (see above); then the check is over and says false from now on.
  [[nodiscard]] bool received(const unsigned char* bytes, size_t n);
  // Some of a message (its length included) has been read, not all of it.
  [[nodiscard]] bool midMessage() const { return in_.read > 0; }

 private:
  // One direction's framing: the length, then the message, whose id and
  // first flags byte are kept.
  struct Framing {
    size_t read = 0;      // bytes of the current length-and-message so far
    uint16_t length = 0;  // the message's, once both of its bytes are in
    unsigned char head[3] = {};
  };
  enum class Step : uint8_t { kMore, kLength, kMessage };
  // Takes bytes from `*bytes` (at most `*n`, both advanced) into `framing`,
  // up to the next step: the length complete, or the message.
  static Step take(Framing* framing, const unsigned char** bytes, size_t* n);
  static uint16_t idOf(const Framing& framing) {
    return static_cast<uint16_t>(framing.head[0] << 8 | framing.head[1]);
  }

  Framing out_;
  Framing in_;
  bool malformed_ = false;
  // The ids of the queries sent, kept for the connection's life (c-ares
  // closes it once no query is left): an answer repeated is not malformed.
  std::vector<uint16_t> sent_;
};

}  // namespace libnet::dns
