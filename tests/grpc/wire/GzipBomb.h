// A gzip bomb for the tests: `mebibytes` MiB of zeros as one gzip member of
// about 1 KiB per MiB. Deflating a GiB of zeros takes seconds; instead one
// MiB is deflated into a block that refers only to itself (run-length
// matches after a first literal, flushed to a byte boundary), which is then
// repeated, and the trailer's CRC is combined arithmetically.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace libnet::grpc::test {

inline std::string deflateStep(z_stream* z, int flush) {
  std::string out;
  unsigned char chunk[16384];
  do {
    z->next_out = chunk;
    z->avail_out = sizeof chunk;
    if (deflate(z, flush) == Z_STREAM_ERROR) throw std::runtime_error("deflate");
    out.append(reinterpret_cast<const char*>(chunk), sizeof chunk - z->avail_out);
  } while (z->avail_out == 0);
  return out;
}

inline std::string gzipBomb(uint32_t mebibytes) {
  z_stream z{};
  // Raw deflate (the gzip wrapper is written here), run-length matches only.
  if (deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_RLE) != Z_OK) {
    throw std::runtime_error("deflateInit2");
  }
  std::vector<unsigned char> zeros(1 << 20, 0);
  z.next_in = zeros.data();
  z.avail_in = static_cast<uInt>(zeros.size());
  const std::string block = deflateStep(&z, Z_FULL_FLUSH);
  const std::string last = deflateStep(&z, Z_FINISH);
  deflateEnd(&z);
  const uLong blockCrc = crc32(0, zeros.data(), static_cast<uInt>(zeros.size()));
  uLong crc = crc32(0, nullptr, 0);
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  out.reserve(10 + block.size() * mebibytes + last.size() + 8);
  for (uint32_t i = 0; i < mebibytes; ++i) {
    out += block;
    crc = crc32_combine(crc, blockCrc, static_cast<z_off_t>(zeros.size()));
  }
  out += last;
  const uint32_t size = static_cast<uint32_t>(uint64_t{mebibytes} << 20);  // mod 2^32
  for (const uint32_t word : {static_cast<uint32_t>(crc), size}) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>(word >> (8 * i));
  }
  return out;
}

}  // namespace libnet::grpc::test
