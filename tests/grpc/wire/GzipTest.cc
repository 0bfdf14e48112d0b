// net/grpc/Gzip: whole-message gzip, and a decompression bounded by its
// limit whatever the input claims.
#include "net/grpc/Gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <random>
#include <string>

#include "tests/grpc/wire/GzipBomb.h"

namespace libnet::grpc {
namespace {

std::string randomBytes(size_t length, unsigned seed) {
  std::mt19937 random(seed);
  std::string bytes(length, '\0');
  for (char& c : bytes) c = static_cast<char>(random() % 16);  // compressible, not trivially
  return bytes;
}

// What the gzip tool itself (zlib's gzip wrapper) accepts: the reference the
// compressor is checked against.
std::string zlibGunzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(1 << 22, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

TEST(GzipTest, CompressesToGzipThatRoundTrips) {
  for (const size_t length : {0, 1, 127, 128, 16384, 16385, 100000, 1 << 20}) {
    const std::string data = randomBytes(length, static_cast<unsigned>(length));
    const std::string compressed = gzipCompress(data);
    ASSERT_GE(compressed.size(), 18u);
    EXPECT_EQ(static_cast<unsigned char>(compressed[0]), 0x1f);
    EXPECT_EQ(static_cast<unsigned char>(compressed[1]), 0x8b);
    EXPECT_EQ(zlibGunzip(compressed), data) << length;
    bool tooLarge = true;
    EXPECT_EQ(gzipDecompress(compressed, length, &tooLarge), data) << length;
    EXPECT_FALSE(tooLarge);
  }
}

TEST(GzipTest, DecompressesAtTheLimitNotPast) {
  const std::string data = randomBytes(50000, 1);
  const std::string compressed = gzipCompress(data);
  bool tooLarge = false;
  EXPECT_EQ(gzipDecompress(compressed, 50001, &tooLarge), data);
  EXPECT_EQ(gzipDecompress(compressed, 50000, &tooLarge), data);
  EXPECT_FALSE(tooLarge);
  EXPECT_EQ(gzipDecompress(compressed, 49999, &tooLarge), std::nullopt);
  EXPECT_TRUE(tooLarge);
  EXPECT_EQ(gzipDecompress(compressed, 0, &tooLarge), std::nullopt);
  EXPECT_TRUE(tooLarge);
  EXPECT_EQ(gzipDecompress(gzipCompress(""), 0, &tooLarge), "");
  EXPECT_FALSE(tooLarge);
}

// "No limit" spelled as the largest size_t.
TEST(GzipTest, TakesTheLargestLimit) {
  const std::string data = randomBytes(40000, 5);
  bool tooLarge = true;
  EXPECT_EQ(gzipDecompress(gzipCompress(data), SIZE_MAX, &tooLarge), data);
  EXPECT_FALSE(tooLarge);
  EXPECT_EQ(gzipDecompress(gzipCompress(""), SIZE_MAX, &tooLarge), "");
  // Two members: the trailer read is the second's, short of the whole.
  EXPECT_EQ(gzipDecompress(gzipCompress(data) + gzipCompress("end"), SIZE_MAX, &tooLarge),
            data + "end");
  EXPECT_FALSE(tooLarge);
}

TEST(GzipTest, TakesMembersOneAfterTheOther) {
  const std::string both = gzipCompress("hello, ") + gzipCompress("world");
  EXPECT_EQ(gzipDecompress(both, 100, nullptr), "hello, world");
  // The limit counts all members together.
  bool tooLarge = false;
  EXPECT_EQ(gzipDecompress(both, 11, &tooLarge), std::nullopt);
  EXPECT_TRUE(tooLarge);
}

TEST(GzipTest, RefusesWhatIsNotWholeGzip) {
  const std::string good = gzipCompress(randomBytes(5000, 2));
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x55;
  std::string badCrc = good;
  badCrc[badCrc.size() - 6] ^= 1;
  std::string badLength = good;
  badLength[badLength.size() - 2] ^= 1;
  std::string zlibFormat(100, '\0');
  uLongf zlibLength = zlibFormat.size();
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(zlibFormat.data()), &zlibLength,
                     reinterpret_cast<const Bytef*>("abc"), 3),
            Z_OK);
  zlibFormat.resize(zlibLength);
  for (const std::string& bad :
       {std::string(), std::string("hello"), good.substr(0, good.size() - 1), good.substr(0, 10),
        good + "x", good + std::string(4, '\0'), flipped, badCrc, badLength, zlibFormat}) {
    bool tooLarge = true;
    EXPECT_EQ(gzipDecompress(bad, 1 << 20, &tooLarge), std::nullopt) << bad.size();
    EXPECT_FALSE(tooLarge);
  }
}

// Every cut of a message must fail cleanly, never pass as a shorter one.
TEST(GzipTest, RefusesEveryTruncation) {
  const std::string good = gzipCompress(randomBytes(3000, 3));
  for (size_t cut = 0; cut < good.size(); ++cut) {
    ASSERT_EQ(gzipDecompress(good.substr(0, cut), 1 << 20, nullptr), std::nullopt) << cut;
  }
}

TEST(GzipTest, StopsABombAtTheLimit) {
  // 1 GiB of zeros in about a megabyte.
  const std::string bomb = test::gzipBomb(1024);
  ASSERT_LT(bomb.size(), 2u << 20);
  bool tooLarge = false;
  EXPECT_EQ(gzipDecompress(bomb, 4 << 20, &tooLarge), std::nullopt);
  EXPECT_TRUE(tooLarge);
}

// The trailer's size is a hint only: a lying one neither lets more through
// nor makes a small message reserve much.
TEST(GzipTest, IgnoresALyingSizeInTheTrailer) {
  const std::string data = randomBytes(10000, 4);
  std::string compressed = gzipCompress(data);
  for (const uint32_t announced : {0u, 1u, 9999u, 10001u, 0xffffffffu}) {
    for (int i = 0; i < 4; ++i) {
      compressed[compressed.size() - 4 + i] = static_cast<char>(announced >> (8 * i));
    }
    // zlib checks ISIZE against what it inflated: a wrong one is corrupt.
    bool tooLarge = true;
    EXPECT_EQ(gzipDecompress(compressed, 1 << 20, &tooLarge), std::nullopt) << announced;
    EXPECT_FALSE(tooLarge);
    EXPECT_EQ(gzipDecompress(compressed, 5000, &tooLarge), std::nullopt) << announced;
    EXPECT_TRUE(tooLarge);
  }
}

}  // namespace
}  // namespace libnet::grpc
