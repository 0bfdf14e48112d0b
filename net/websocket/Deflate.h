// Deflate: the permessage-deflate extension (RFC 7692) on zlib: the
// Sec-WebSocket-Extensions negotiation for both roles, the per-sender
// Deflater and the per-receiver Inflater. One Deflater and one Inflater per
// connection, used on its thread only (not thread-safe).
//
// Window bits map to zlib's negative windowBits (a raw deflate stream, no
// zlib header). zlib refuses a raw deflate window of 8 bits, so a Deflater
// asked for 8 uses 9: zlib never emits a match further back than the window
// size minus 262 bytes (MIN_LOOKAHEAD), which for a 512-byte window is 250,
// so the stream still decodes with the 256-byte window the peer agreed to
// keep.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "net/Buffer.h"
#include "net/websocket/Frame.h"

namespace libnet::ws {

// What this end is willing to use.
struct DeflateOptions {
  bool enabled = false;
  // Server: ask/agree that the server resets its compressor after every
  // message. Client: the offer requests it.
  bool serverNoContextTakeover = false;
  // Same for the client's compressor.
  bool clientNoContextTakeover = false;
  // 8..15. Server: the largest window it compresses with (a smaller client
  // request is honoured). Client: a value under 15 is offered.
  int serverMaxWindowBits = 15;
  // 8..15. Server: the window it asks the client to compress with when the
  // client offered client_max_window_bits. Client: offered when under 15
  // (the offer always announces client_max_window_bits support).
  int clientMaxWindowBits = 15;
  // zlib compression level, 0..9 (1 is fastest; 6 zlib's default).
  int level = 6;
  // Messages shorter than this are sent uncompressed (RSV1 clear): the
  // deflate block overhead would make them no shorter.
  size_t minMessageSize = 64;
};

// What both ends agreed on (the four RFC 7692 parameters), as seen from the
// wire: the server's and the client's compressor settings.
struct DeflateParams {
  bool serverNoContextTakeover = false;
  bool clientNoContextTakeover = false;
  int serverMaxWindowBits = 15;
  int clientMaxWindowBits = 15;
};

// Server side: picks the first acceptable permessage-deflate offer in a
// Sec-WebSocket-Extensions value (several fields joined with ", "). An
// offer that is malformed (a duplicate or unknown parameter, window bits
// outside 8..15, a value where none belongs) is declined and the next one
// tried. Returns the agreed parameters and sets *responseHeaderValue to the
// value for the response's Sec-WebSocket-Extensions; nullopt (and an empty
// value) when deflate is disabled or no offer was acceptable.
[[nodiscard]] std::optional<DeflateParams> negotiateOffer(std::string_view secWebSocketExtensions,
                                                          const DeflateOptions& options,
                                                          std::string* responseHeaderValue);

// Client side: the Sec-WebSocket-Extensions value offering deflate as
// `options` say ("" when disabled).
[[nodiscard]] std::string makeOffer(const DeflateOptions& options);

// Client side: checks the server's Sec-WebSocket-Extensions value against
// the offer makeOffer(options) made. An empty value: nullopt, no error
// (deflate declined). A valid permessage-deflate response: the agreed
// parameters. Anything else (another extension, parameters not offered,
// invalid or duplicate values): nullopt and *error says why; the handshake
// has failed.
[[nodiscard]] std::optional<DeflateParams> acceptResponse(std::string_view responseValue,
                                                          const DeflateOptions& options,
                                                          std::string* error);

// Compresses whole messages for the side `self` sends, with that side's
// agreed window and context takeover.
//
// Memory: zlib's state, allocated once and kept (heldMemory(): about 262 KiB
// at windowBits 15 and zlib's memLevel 8), whatever the messages. The
// output goes straight into the caller's buffer, grown a chunk at a time
// as deflate fills it, never sized to deflate's worst case for the whole
// message.
class Deflater {
 public:
  // Output room made per deflate() call when the buffer has less.
  static constexpr size_t kChunk = 16 * 1024;

  Deflater(Role self, const DeflateParams& params, int level = 6);
  ~Deflater();
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;

  // Appends the compressed message to *out (raw deflate, flushed with
  // Z_SYNC_FLUSH, the trailing 00 00 ff ff removed, RFC 7692 7.2.1); never
  // empty (an empty message is the single byte 00).
  void compress(std::string_view message, Buffer* out);
  // The same, replacing *out (a convenience: the bytes are copied once more).
  void compress(std::string_view message, std::string* out);

  // Bytes zlib has allocated for this stream.
  [[nodiscard]] size_t heldMemory() const;

 private:
  struct Stream;
  std::unique_ptr<Stream> stream_;
  bool noContextTakeover_;
};

// Decompresses the messages the peer of `self` sends.
//
// Memory: zlib's state (about 7 KiB), and its window (1 << windowBits bytes)
// from the first message on, kept: with context takeover the peer's next
// message may refer to the bytes of the ones before.
class Inflater {
 public:
  enum class Result {
    kOk,
    // The output would pass the limit; the message should be refused (1009).
    kTooBig,
    // Not a valid deflate stream (1007).
    kCorrupt,
  };
  // Output grows by at most this much per inflate() call.
  static constexpr size_t kChunk = 16 * 1024;

  Inflater(Role self, const DeflateParams& params);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Inflates the next compressed bytes of the current message, appending to
  // *out, whose readable bytes must never pass `limit`: kTooBig as soon as
  // they would (the output grows a bounded chunk at a time, so a tiny input
  // that inflates hugely costs at most limit plus one chunk of memory).
  [[nodiscard]] Result feed(std::string_view compressed, Buffer* out, size_t limit);
  // Ends the message: inflates the 00 00 ff ff the sender removed and resets
  // the window when the peer does not take context over. kCorrupt also when
  // the message does not end between deflate blocks (an empty payload, or
  // one cut short). After kTooBig or kCorrupt the stream is unusable (the
  // connection is to be closed).
  [[nodiscard]] Result finish(Buffer* out, size_t limit);
  // The same into a string (a convenience: the output is copied once more).
  [[nodiscard]] Result feed(std::string_view compressed, std::string* out, size_t limit);
  [[nodiscard]] Result finish(std::string* out, size_t limit);

  // Bytes zlib has allocated for this stream.
  [[nodiscard]] size_t heldMemory() const;

 private:
  Result run(const char* data, size_t length, Buffer* out, size_t limit);

  struct Stream;
  std::unique_ptr<Stream> stream_;
  bool noContextTakeover_;
};

}  // namespace libnet::ws
