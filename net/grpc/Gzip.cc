#include "net/grpc/Gzip.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <new>

namespace libnet::grpc {

namespace {

// windowBits 15 plus 16: a gzip wrapper (RFC 1952) rather than zlib's.
constexpr int kGzipWindowBits = 15 + 16;
// zlib counts in 32-bit uInt: longer inputs and outputs go in pieces.
constexpr size_t kMaxPiece = size_t{1} << 30;
// Inflate's output step, on the stack.
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
  InflateStream() {
    if (inflateInit2(&stream_, kGzipWindowBits) != Z_OK) throw std::bad_alloc();
  }
  ~InflateStream() { inflateEnd(&stream_); }
  InflateStream(const InflateStream&) = delete;
  InflateStream& operator=(const InflateStream&) = delete;
  z_stream* get() { return &stream_; }

 private:
  z_stream stream_{};
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

enum class Inflated { kComplete, kPastCap, kCorrupt };

// Inflates the gzip members of `data`, one after another (RFC 1952 allows
// several; anything else after the first fails as the next one's header),
// a chunk at a time, appending the output to *out (when not null: reserved
// for `cap` bytes, so that it never grows) or only counting it. *total: the
// bytes of output; stops as soon as they pass `cap`.
Inflated inflateAll(std::string_view data, size_t cap, std::string* out, size_t* total) {
  InflateStream decompressor;
  z_stream* z = decompressor.get();
  std::array<char, kInflateChunk> chunk;
  size_t fed = 0;
  *total = 0;
  while (true) {
    feedInput(z, data, &fed);
    // One byte past the cap is enough to know the cap is passed. (Not
    // cap + 1 - total: the cap may be SIZE_MAX.)
    const size_t room = std::min(cap - *total, chunk.size() - 1) + 1;
    z->next_out = reinterpret_cast<Bytef*>(chunk.data());
    z->avail_out = static_cast<uInt>(room);
    const int rc = inflate(z, Z_NO_FLUSH);
    const size_t produced = room - z->avail_out;
    *total += produced;
    if (*total > cap) return Inflated::kPastCap;
    if (out != nullptr) out->append(chunk.data(), produced);
    if (rc == Z_STREAM_END) {
      if (z->avail_in == 0 && fed == data.size()) return Inflated::kComplete;
      inflateReset(z);
      continue;
    }
    // Z_BUF_ERROR: no progress possible, i.e. the input ended mid-member.
    if (rc != Z_OK) return Inflated::kCorrupt;
  }
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
  if (data.empty()) return std::nullopt;
  // An honest single member announces its size: one pass into a string
  // reserved at that size. Otherwise (a liar, several members) the output
  // is first only counted, then inflated again into a string reserved at its
  // exact size: the output never grows by copying, so a message costs at
  // most maxOutput bytes (and zlib's state) while it is inflated, and a
  // bomb no more than a chunk beyond what its trailer admits. Reserving
  // touches no memory: a hint that is a lie costs an allocation, not a fill.
  const size_t hint = sizeHint(data, maxOutput);
  std::string out;
  out.reserve(hint);
  size_t total = 0;
  Inflated result = inflateAll(data, hint, &out, &total);
  if (result == Inflated::kComplete) {
    // A hint far above the truth: keep no more storage than needed.
    if (out.capacity() > 2 * total + kInflateChunk) out.shrink_to_fit();
    return out;
  }
  std::string().swap(out);  // frees it (assigning an empty string would keep the storage)
  if (result == Inflated::kPastCap && hint < maxOutput) {
    result = inflateAll(data, maxOutput, nullptr, &total);
    if (result == Inflated::kComplete) {
      out.reserve(total);
      if (inflateAll(data, total, &out, &total) == Inflated::kComplete) return out;
      return std::nullopt;
    }
  }
  if (result == Inflated::kPastCap && tooLarge != nullptr) *tooLarge = true;
  return std::nullopt;
}

}  // namespace libnet::grpc
