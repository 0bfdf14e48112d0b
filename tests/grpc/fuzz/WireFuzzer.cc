// The libFuzzer entry point for gRPC's wire core (tools/fuzz.sh target
// grpc_wire builds it with clang's -fsanitize=fuzzer; WireFuzzerTest links
// the same file with gcc and replays the seed corpus through it).
//
// Input: byte 0 picks the call's encoding (bit 0: gzip) and the piece size
// (bits 1-6: 1..64 bytes); bytes 1-2 the message limit (1..65536, small so
// that the too-large paths are reached); the rest is one direction of a
// call. MessageReader reads it whole and in pieces, and both must see the
// same messages and the same verdict; between messages it holds no more
// than the limit; every message is within the limit, and framed again (the
// first few compressed again in a gzip call) reads back as itself. The same
// bytes go through gzipDecompress (within the limit, and compressed again
// round trip) and the text codecs (percent, base64, grpc-timeout).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/grpc/Gzip.h"
#include "net/grpc/MessageReader.h"
#include "net/grpc/Wire.h"

namespace {

using libnet::grpc::MessageReader;

void check(bool ok) {
  if (!ok) std::abort();
}

struct Trace {
  std::vector<std::string> messages;
  MessageReader::Error error = MessageReader::Error::kNone;
  bool atBoundary = true;
  bool operator==(const Trace&) const = default;
};

Trace readStream(std::string_view stream, size_t step, size_t limit, bool gzip) {
  MessageReader reader({.maxMessageBytes = limit}, gzip ? "gzip" : "");
  Trace trace;
  for (size_t at = 0; at < stream.size(); at += step) {
    const bool ok = reader.feed(stream.substr(at, step));
    check(ok == (reader.error() == MessageReader::Error::kNone));
    while (std::optional<std::string> message = reader.next()) {
      check(message->size() <= limit);
      trace.messages.push_back(std::move(*message));
    }
    // Drained, it holds at most a partial prefix or a partial payload.
    check(reader.buffered() <= std::max<size_t>(limit, libnet::grpc::kFramePrefixBytes));
    if (!ok) break;
  }
  trace.error = reader.error();
  trace.atBoundary = reader.atBoundary();
  check(!reader.feed("x") || trace.error == MessageReader::Error::kNone);
  return trace;
}

void checkReframed(const Trace& trace, size_t limit, bool gzip) {
  std::string stream;
  // In a gzip call, the first few compressed again (a deflate stream costs
  // a few hundred KiB of zlib state), the rest plain: both may be mixed.
  size_t compress = gzip ? 8 : 0;
  for (const std::string& message : trace.messages) {
    if (compress > 0) {
      --compress;
      libnet::grpc::appendFrame(&stream, libnet::grpc::gzipCompress(message), true);
    } else {
      libnet::grpc::appendFrame(&stream, message, false);
    }
  }
  // A compressed message may be longer than the limit itself.
  const Trace again = readStream(stream, stream.size() + 1, gzip ? SIZE_MAX / 2 : limit, gzip);
  check(again.messages == trace.messages && again.error == MessageReader::Error::kNone);
}

void checkGzip(std::string_view bytes, size_t limit) {
  bool tooLarge = false;
  const std::optional<std::string> plain = libnet::grpc::gzipDecompress(bytes, limit, &tooLarge);
  check(!(plain && tooLarge));
  if (!plain) return;
  check(plain->size() <= limit);
  const std::string again = libnet::grpc::gzipCompress(*plain);
  check(libnet::grpc::gzipDecompress(again, plain->size(), nullptr) == plain);
}

void checkText(std::string_view text) {
  using namespace libnet::grpc;
  const std::string encoded = percentEncode(text);
  check(percentDecode(encoded) == text);
  check(percentEncode(percentDecode(encoded)) == encoded);
  (void)percentDecode(text);
  check(base64Decode(base64Encode(text)) == text);
  if (const std::optional<std::string> bytes = base64Decode(text)) {
    // Strict decoding: the text is the canonical form, less any padding.
    const std::string canonical = base64Encode(*bytes);
    check(canonical.substr(0, text.size()) == text);
  }
  if (const std::optional<libnet::Duration> timeout = parseTimeout(text)) {
    const std::string formatted = formatTimeout(*timeout);
    check(formatted.size() <= 9);
    const std::optional<libnet::Duration> back = parseTimeout(formatted);
    check(back.has_value() && *back >= *timeout);
  }
  check(validMetadataValue("k-bin", text));
  (void)validMetadataKey(text);
  (void)validMetadataValue("k", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const bool gzip = (data[0] & 1) != 0;
  const size_t step = (data[0] >> 1) % 64 + 1;
  const size_t limit = (size_t{data[1]} << 8 | data[2]) + 1;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 3, size - 3);
  const Trace whole = readStream(stream, stream.size() + 1, limit, gzip);
  check(whole == readStream(stream, step, limit, gzip));
  checkReframed(whole, limit, gzip);
  checkGzip(stream, limit);
  checkText(stream.substr(0, 64));
  return 0;
}
