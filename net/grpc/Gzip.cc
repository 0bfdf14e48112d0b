#include "net/grpc/Gzip.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <new>

#include "net/grpc/GrowWithin.h"

namespace libnet::grpc {

namespace {

// windowBits 15 plus 16: a gzip wrapper (RFC 1952) rather than zlib's.
constexpr int kGzipWindowBits = 15 + 16;
// zlib counts in 32-bit uInt: longer inputs and outputs go in pieces.
constexpr size_t kMaxPiece = size_t{1} << 30;
// Inflate's output step: the most the output grows past what it needs.
constexpr size_t kInflateChunk = 16 * 1024;
// Deflate cannot do better than about 1032:1 (a 258-byte match per 2 bits
// or so), so no honest member inflates to more than this per input byte.
constexpr size_t kMaxDeflateRatio = 1032;

class DeflateStream {
 public:
  DeflateStream() {
    if (deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::bad_alloc();  // Z_MEM_ERROR: the parameters are fixed and valid
    }
  }
  ~DeflateStream() { deflateEnd(&stream_); }
  DeflateStream(const DeflateStream&) = delete;
  DeflateStream& operator=(const DeflateStream&) = delete;
  z_stream* get() { return &stream_; }

 private:
  z_stream stream_{};
};

class InflateStream {
 public:
  InflateStream() { ok_ = inflateInit2(&stream_, kGzipWindowBits) == Z_OK; }
  ~InflateStream() {
    if (ok_) inflateEnd(&stream_);
  }
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;
  [[nodiscard]] bool ok() const { return ok_; }
  z_stream* get() { return &stream_; }

 private:
  z_stream stream_{};
  bool ok_ = false;
};

// The room to reserve for the output at once: the size the gzip trailer
// announces (ISIZE, the last member's length mod 2^32), believed only as far
// as deflate could honestly get from this much input and the limit allows,
// so that a small liar costs no more than a real bomb.
size_t sizeHint(std::string_view data, size_t maxOutput) {
  if (data.size() < 18) return 0;  // smaller than any gzip member
  const auto* tail = reinterpret_cast<const unsigned char*>(data.data() + data.size() - 4);
  const size_t announced =
      size_t{tail[0]} | size_t{tail[1]} << 8 | size_t{tail[2]} << 16 | size_t{tail[3]} << 24;
  return std::min({announced, data.size() * kMaxDeflateRatio, maxOutput});
}

void feedInput(z_stream* z, std::string_view data, size_t* fed) {
  if (z->avail_in != 0 || *fed == data.size()) return;
  const size_t piece = std::min(data.size() - *fed, kMaxPiece);
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + *fed));
  z->avail_in = static_cast<uInt>(piece);
  *fed += piece;
}

}  // namespace

std::string gzipCompress(std::string_view data) {
  DeflateStream compressor;
  z_stream* z = compressor.get();
  std::string out(deflateBound(z, data.size()), '\0');
  size_t fed = 0;
  size_t written = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    feedInput(z, data, &fed);
    if (written == out.size()) out.resize(out.size() * 2);
    const size_t room = std::min(out.size() - written, kMaxPiece);
    z->next_out = reinterpret_cast<Bytef*>(out.data() + written);
    z->avail_out = static_cast<uInt>(room);
    const bool last = fed == data.size();
    rc = deflate(z, last ? Z_FINISH : Z_NO_FLUSH);
    written += room - z->avail_out;
  }
  out.resize(written);
  return out;
}

std::optional<std::string> gzipDecompress(std::string_view data, size_t maxOutput, bool* tooLarge) {
  if (tooLarge != nullptr) *tooLarge = false;
  InflateStream decompressor;
  if (!decompressor.ok() || data.empty()) return std::nullopt;
  z_stream* z = decompressor.get();
  std::string out;
  out.reserve(sizeHint(data, maxOutput));
  std::array<char, kInflateChunk> chunk;
  size_t fed = 0;
  while (true) {
    feedInput(z, data, &fed);
    // One byte past the limit is enough to know the limit is passed.
    const size_t room = std::min(chunk.size(), maxOutput - out.size() + 1);
    z->next_out = reinterpret_cast<Bytef*>(chunk.data());
    z->avail_out = static_cast<uInt>(room);
    const int rc = ::inflate(z, Z_NO_FLUSH);
    const size_t produced = room - z->avail_out;
    if (produced > maxOutput - out.size()) {
      if (tooLarge != nullptr) *tooLarge = true;
      return std::nullopt;
    }
    appendWithin(&out, std::string_view(chunk.data(), produced), maxOutput);
    if (rc == Z_STREAM_END) {
      if (z->avail_in == 0 && fed == data.size()) return out;
      // RFC 1952: members may follow one another; anything else after the
      // first fails as the header of the next.
      inflateReset(z);
      continue;
    }
    // Z_BUF_ERROR: no progress possible, i.e. the input ended mid-member.
    if (rc != Z_OK) return std::nullopt;
  }
}

}  // namespace libnet::grpc
