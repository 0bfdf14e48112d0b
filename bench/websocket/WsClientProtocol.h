// The client side of the WebSocket protocol (RFC 6455, RFC 7692) as ws_load
// needs it: the opening handshake, masked frames built once and resent, and
// raw deflate/inflate of whole messages with zlib. Written from the RFCs on
// OpenSSL and zlib alone, sharing no code with any server the benchmark
// measures (libnet's, Beast's).
//
// Plain functions, and an Inflater each thread owns alone.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace wsload {

constexpr int kOpText = 1;
constexpr int kOpBinary = 2;
constexpr int kOpClose = 8;
constexpr int kOpPing = 9;
constexpr int kOpPong = 10;

// A fresh Sec-WebSocket-Key: 16 random bytes, base64.
[[nodiscard]] std::string makeKey();

// The Sec-WebSocket-Accept a server must answer `key` with.
[[nodiscard]] std::string acceptFor(std::string_view key);

// The GET request that asks host:port to upgrade; with deflate it offers
// permessage-deflate with both no_context_takeover parameters, so that every
// message is compressed on its own in both directions.
[[nodiscard]] std::string upgradeRequest(std::string_view host, uint16_t port, std::string_view key,
                                         bool deflate);

// "" if `head` (the response up to and including its blank line) is a 101
// that accepts `key` and negotiated exactly what was offered; otherwise what
// is wrong.
[[nodiscard]] std::string checkUpgradeResponse(std::string_view head, std::string_view key,
                                               bool deflate);

// `size` bytes of compressible ASCII: a JSON-like line repeated, so that a
// deflate run compresses the same text on every server.
[[nodiscard]] std::string makePayload(size_t size);

// One masked frame with FIN set (RSV1 too when compressed), under a random
// mask.
[[nodiscard]] std::string maskedFrame(int opcode, bool compressed, std::string_view payload);

// `payload` as one permessage-deflate message: raw deflate, sync-flushed,
// without the trailing 00 00 ff ff (RFC 7692 7.2.1).
[[nodiscard]] std::string deflateMessage(std::string_view payload);

// Inflates whole permessage-deflate messages, each on its own (the server
// agreed to server_no_context_takeover).
class Inflater {
 public:
  Inflater();
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // The message `in` inflated into *out; false if it is not valid deflate
  // data or inflates to more than `limit` bytes.
  [[nodiscard]] bool inflate(std::string_view in, size_t limit, std::string* out);

 private:
  z_stream stream_{};
};

}  // namespace wsload
