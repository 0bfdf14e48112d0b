// BufferPool (net/BufferPool.h): storage changes hands between buffers,
// buffers holding bytes are never touched, and what the pool keeps is
// bounded in count and size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/Buffer.h"
#include "net/BufferPool.h"

namespace libnet {
namespace {

// An empty buffer whose storage is `capacity`-ish bytes.
Buffer grownEmpty(size_t bytes) {
  Buffer buffer(0);
  buffer.append(std::string(bytes, 'x'));
  buffer.retrieveAll();
  return buffer;
}

TEST(BufferPoolTest, ReclaimTakesLargeStorageAndLendHandsItOut) {
  BufferPool pool;
  Buffer idle = grownEmpty(64 * 1024);
  const size_t large = idle.capacity();
  ASSERT_GT(large, BufferPool::kSmallCapacity);
  pool.reclaim(&idle);
  EXPECT_LE(idle.capacity(), BufferPool::kSmallCapacity);
  EXPECT_EQ(idle.readableBytes(), 0u);
  EXPECT_EQ(pool.spareCount(), 1u);

  Buffer busy(0);
  pool.lend(&busy);
  EXPECT_EQ(busy.capacity(), large);
  EXPECT_EQ(busy.readableBytes(), 0u);
  EXPECT_EQ(pool.spareCount(), 0u);
  busy.append("hello");
  EXPECT_EQ(busy.view(), "hello");
}

TEST(BufferPoolTest, BuffersHoldingBytesAreLeftAlone) {
  BufferPool pool;
  Buffer spare = grownEmpty(32 * 1024);
  pool.reclaim(&spare);
  ASSERT_EQ(pool.spareCount(), 1u);

  Buffer holding(0);
  holding.append("keep me");
  pool.lend(&holding);
  EXPECT_EQ(holding.view(), "keep me");
  EXPECT_EQ(pool.spareCount(), 1u);

  Buffer full = grownEmpty(32 * 1024);
  full.append("still here");
  const size_t capacity = full.capacity();
  pool.reclaim(&full);
  EXPECT_EQ(full.capacity(), capacity);
  EXPECT_EQ(full.view(), "still here");
  EXPECT_EQ(pool.spareCount(), 1u);
}

TEST(BufferPoolTest, SmallBuffersStayAndLargeOnesAreNotLentMore) {
  BufferPool pool;
  Buffer small(0);
  small.append(std::string(100, 'y'));
  small.retrieveAll();
  const size_t smallCapacity = small.capacity();
  pool.reclaim(&small);
  EXPECT_EQ(small.capacity(), smallCapacity);
  EXPECT_EQ(pool.spareCount(), 0u);

  Buffer spare = grownEmpty(32 * 1024);
  pool.reclaim(&spare);
  Buffer large = grownEmpty(16 * 1024);
  pool.lend(&large);  // already large: keeps its own
  EXPECT_EQ(pool.spareCount(), 1u);
}

TEST(BufferPoolTest, KeepsAtMostMaxSpareBuffersAndNoHugeOnes) {
  BufferPool pool;
  std::vector<Buffer> buffers;
  for (size_t i = 0; i < BufferPool::kMaxSpare + 20; ++i) buffers.push_back(grownEmpty(8 * 1024));
  for (Buffer& buffer : buffers) {
    pool.reclaim(&buffer);
    EXPECT_LE(buffer.capacity(), BufferPool::kSmallCapacity);
  }
  EXPECT_EQ(pool.spareCount(), BufferPool::kMaxSpare);

  BufferPool other;
  Buffer huge = grownEmpty(BufferPool::kMaxSpareCapacity + 1);
  other.reclaim(&huge);
  EXPECT_LE(huge.capacity(), BufferPool::kSmallCapacity);
  EXPECT_EQ(other.spareCount(), 0u);
}

TEST(BufferPoolTest, LendOnAnEmptyPoolLeavesTheBufferToGrowByItself) {
  BufferPool pool;
  Buffer buffer(0);
  pool.lend(&buffer);
  buffer.append(std::string(20000, 'z'));
  EXPECT_EQ(buffer.readableBytes(), 20000u);
}

// However many large buffers come back at once (output queued for slow
// peers), the pool keeps at most kMaxSpareBytes of them.
TEST(BufferPoolTest, KeepsAtMostMaxSpareBytes) {
  BufferPool pool;
  std::vector<Buffer> buffers;
  for (int i = 0; i < 40; ++i) buffers.push_back(grownEmpty(900 * 1024));
  for (Buffer& buffer : buffers) pool.reclaim(&buffer);
  const size_t each = 900 * 1024;
  EXPECT_GE(pool.spareCount(), BufferPool::kMaxSpareBytes / (2 * each));
  EXPECT_LE(pool.spareCount() * each, BufferPool::kMaxSpareBytes);
  EXPECT_TRUE(pool.trimDue() || pool.spareCount() < 40u);
}

// Storage the pool frees, and what connections report freeing, add up; a
// heap trim is due from kTrimAfterBytes on and the count starts over after.
TEST(BufferPoolTest, FreedStorageMakesAHeapTrimDue) {
  BufferPool pool;
  EXPECT_FALSE(pool.trimDue());
  Buffer huge = grownEmpty(BufferPool::kMaxSpareCapacity + 1);
  const size_t freed = huge.capacity();
  pool.reclaim(&huge);  // too large to keep: freed, and counted
  EXPECT_FALSE(pool.trimDue());
  pool.noteFreed(BufferPool::kTrimAfterBytes - freed - 1);
  EXPECT_FALSE(pool.trimDue()) << "one byte short of the threshold";
  pool.noteFreed(1);
  EXPECT_TRUE(pool.trimDue());
  pool.trimHeap();
  EXPECT_FALSE(pool.trimDue());
}

}  // namespace
}  // namespace libnet
