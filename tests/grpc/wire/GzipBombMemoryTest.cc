// The most heap a gzip bomb costs while it is refused: this binary replaces
// the global operator new with one that tracks the peak of the bytes held
// (what the library's strings allocate; zlib's own state, about 40 KiB, is
// malloc'd and not counted). Not under the sanitizers, which bring their
// own allocator: there the tests skip themselves.
#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "net/grpc/Gzip.h"
#include "net/grpc/MessageReader.h"
#include "net/grpc/Wire.h"
#include "tests/grpc/wire/GzipBomb.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCounting = false;
#else
constexpr bool kCounting = true;
#endif

namespace {

std::atomic<long> g_held{0};
std::atomic<long> g_peak{0};
std::atomic<bool> g_tracking{false};

[[maybe_unused]] void* trackedAllocation(std::size_t size) {
  void* p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  if (g_tracking.load(std::memory_order_relaxed)) {
    const long held = g_held += static_cast<long>(malloc_usable_size(p));
    long peak = g_peak.load(std::memory_order_relaxed);
    while (held > peak && !g_peak.compare_exchange_weak(peak, held)) {
    }
  }
  return p;
}

[[maybe_unused]] void trackedFree(void* p) noexcept {
  if (p != nullptr && g_tracking.load(std::memory_order_relaxed)) {
    g_held -= static_cast<long>(malloc_usable_size(p));
  }
  std::free(p);
}

// The peak of the bytes allocated by `work` and held at once.
template <class Work>
long peakOf(Work work) {
  g_held = 0;
  g_peak = 0;
  g_tracking = true;
  work();
  g_tracking = false;
  return g_peak.load();
}

}  // namespace

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
void* operator new(std::size_t size) { return trackedAllocation(size); }
void* operator new[](std::size_t size) { return trackedAllocation(size); }
void operator delete(void* p) noexcept { trackedFree(p); }
void operator delete[](void* p) noexcept { trackedFree(p); }
void operator delete(void* p, std::size_t) noexcept { trackedFree(p); }
void operator delete[](void* p, std::size_t) noexcept { trackedFree(p); }
#endif

namespace libnet::grpc {
namespace {

constexpr long kSlack = 64 * 1024;
constexpr size_t kLimit = 4 * 1024 * 1024;

// 1 GiB of zeros; its trailer says so (mod 2^32: 2^30).
TEST(GzipBombMemoryTest, ABombCostsAtMostTheLimit) {
  if (!kCounting) GTEST_SKIP() << "not counted under the sanitizers";
  const std::string bomb = test::gzipBomb(1024);
  bool tooLarge = false;
  const long peak =
      peakOf([&] { EXPECT_EQ(gzipDecompress(bomb, kLimit, &tooLarge), std::nullopt); });
  EXPECT_TRUE(tooLarge);
  EXPECT_LE(peak, static_cast<long>(kLimit) + kSlack);
}

// The same bomb with a trailer that claims a small size: the output is
// counted, not held.
TEST(GzipBombMemoryTest, ABombWithALyingTrailerCostsAChunk) {
  if (!kCounting) GTEST_SKIP() << "not counted under the sanitizers";
  std::string bomb = test::gzipBomb(1024);
  for (size_t i = bomb.size() - 4; i < bomb.size(); ++i) bomb[i] = '\0';
  bool tooLarge = false;
  const long peak =
      peakOf([&] { EXPECT_EQ(gzipDecompress(bomb, kLimit, &tooLarge), std::nullopt); });
  EXPECT_TRUE(tooLarge);
  EXPECT_LE(peak, kSlack);
}

// Two members, 1 MiB and 2 MiB: the trailer read (the last member's) is
// short of the whole. The output is counted, then inflated into a string of
// its size, never grown by copying.
TEST(GzipBombMemoryTest, SeveralMembersCostNoMoreThanTheirOutput) {
  if (!kCounting) GTEST_SKIP() << "not counted under the sanitizers";
  const std::string gzip = test::gzipBomb(1) + test::gzipBomb(2);
  std::optional<std::string> plain;
  const long peak = peakOf([&] { plain = gzipDecompress(gzip, kLimit, nullptr); });
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->size(), 3u << 20);
  EXPECT_LE(peak, (3 << 20) + kSlack);
}

// Through a MessageReader, fed as HTTP/2 DATA would be: the compressed
// message (about 1 MiB) is held whole, then inflating stops at the limit.
TEST(GzipBombMemoryTest, AReaderRefusesABombWithinTheLimitAndTheMessage) {
  if (!kCounting) GTEST_SKIP() << "not counted under the sanitizers";
  const std::string bomb = test::gzipBomb(1024);
  std::string stream;
  appendFrame(&stream, bomb, true);
  MessageReader reader({.maxMessageBytes = kLimit}, "gzip");
  bool ok = true;
  const long peak = peakOf([&] {
    for (size_t at = 0; at < stream.size() && ok; at += 16384) {
      ok = reader.feed(std::string_view(stream).substr(at, 16384));
    }
  });
  EXPECT_FALSE(ok);
  EXPECT_EQ(reader.error(), MessageReader::Error::kDecompressedTooLarge);
  EXPECT_LE(peak, static_cast<long>(bomb.size() + kLimit) + kSlack);
}

}  // namespace
}  // namespace libnet::grpc
