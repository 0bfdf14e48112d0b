#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

// Bytes whose value depends on their position, so a misplaced or dropped
// chunk shows up as a mismatch.
std::string pattern(size_t n, size_t offset = 0) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) {
    const size_t k = i + offset;
    s[i] = static_cast<char>((k * 131 + (k >> 8) * 7 + 3) & 0xff);
  }
  return s;
}

TEST(BufferTest, InitialState) {
  const Buffer buf;
  EXPECT_EQ(buf.readableBytes(), 0u);
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
  EXPECT_EQ(buf.capacity(), Buffer::kCheapPrepend + Buffer::kInitialSize);
  EXPECT_EQ(buf.view(), "");

  const Buffer small(16);
  EXPECT_EQ(small.writableBytes(), 16u);
}

TEST(BufferTest, AppendRetrieve) {
  Buffer buf;
  const std::string data(200, 'x');
  buf.append(data);
  EXPECT_EQ(buf.readableBytes(), 200u);
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize - 200);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);

  const std::string first = buf.retrieveAsString(50);
  EXPECT_EQ(first, std::string(50, 'x'));
  EXPECT_EQ(buf.readableBytes(), 150u);
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize - 200);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend + 50);

  buf.append(data);
  EXPECT_EQ(buf.readableBytes(), 350u);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend + 50);

  const std::string all = buf.retrieveAllAsString();
  EXPECT_EQ(all, std::string(350, 'x'));
  EXPECT_EQ(buf.readableBytes(), 0u);
  // Emptying the buffer resets both indices.
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize);
}

TEST(BufferTest, RetrieveAllOfReadableResetsIndices) {
  Buffer buf;
  buf.append("hello");
  buf.retrieve(5);
  EXPECT_EQ(buf.readableBytes(), 0u);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize);
}

TEST(BufferTest, RetrieveUntilAndView) {
  Buffer buf;
  buf.append("key=value;rest");
  const char* semicolon = buf.peek() + buf.view().find(';');
  buf.retrieveUntil(semicolon);
  EXPECT_EQ(buf.view(), ";rest");
  buf.retrieveAll();
  EXPECT_EQ(buf.view(), "");
}

TEST(BufferTest, BeginWriteHasWrittenUnwrite) {
  Buffer buf;
  buf.ensureWritableBytes(10);
  std::memcpy(buf.beginWrite(), "abcdef", 6);
  buf.hasWritten(6);
  EXPECT_EQ(buf.view(), "abcdef");
  buf.unwrite(2);
  EXPECT_EQ(buf.view(), "abcd");
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize - 4);
}

TEST(BufferTest, EmptyAppendIsHarmless) {
  Buffer buf;
  buf.append(std::string_view());
  buf.prepend(std::string_view());
  EXPECT_EQ(buf.readableBytes(), 0u);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
}

TEST(BufferTest, PrependInt32IntoCheapPrependArea) {
  Buffer buf;
  buf.append("payload");
  const size_t capacity = buf.capacity();
  const char* payload = buf.peek();
  buf.prependInt32(7);
  EXPECT_EQ(buf.readableBytes(), 4u + 7u);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend - 4);
  EXPECT_EQ(buf.capacity(), capacity);
  EXPECT_EQ(buf.peek() + 4, payload);  // the payload did not move
  EXPECT_EQ(buf.peekInt32(), 7);
  // Network byte order.
  EXPECT_EQ(buf.view().substr(0, 4), std::string_view("\0\0\0\7", 4));
  EXPECT_EQ(buf.readInt32(), 7);
  EXPECT_EQ(buf.view(), "payload");
}

TEST(BufferTest, PrependFillsTheWholeCheapArea) {
  Buffer buf;
  buf.append("x");
  buf.prependInt32(-2);
  buf.prepend(std::string_view("ab\0d", 4));
  EXPECT_EQ(buf.prependableBytes(), 0u);
  EXPECT_EQ(buf.readableBytes(), 9u);
  EXPECT_EQ(buf.view().substr(0, 4), std::string_view("ab\0d", 4));
  buf.retrieve(4);
  EXPECT_EQ(buf.readInt32(), -2);
  EXPECT_EQ(buf.view(), "x");
}

TEST(BufferTest, Int32RoundTripInNetworkOrder) {
  Buffer buf;
  buf.appendInt32(0x01020304);
  buf.appendInt32(-1);
  buf.appendInt32(INT32_MIN);
  buf.appendInt32(0);
  EXPECT_EQ(buf.readableBytes(), 16u);
  EXPECT_EQ(buf.view().substr(0, 4), "\x01\x02\x03\x04");
  EXPECT_EQ(buf.peekInt32(), 0x01020304);
  EXPECT_EQ(buf.readableBytes(), 16u);  // peek does not consume
  EXPECT_EQ(buf.readInt32(), 0x01020304);
  EXPECT_EQ(buf.readInt32(), -1);
  EXPECT_EQ(buf.readInt32(), INT32_MIN);
  EXPECT_EQ(buf.readInt32(), 0);
  EXPECT_EQ(buf.readableBytes(), 0u);
}

TEST(BufferTest, GrowsAndKeepsContent) {
  Buffer buf;
  const std::string data = pattern(1 << 20);
  // Appends of odd sizes, so growth happens at many different fill levels.
  size_t offset = 0;
  size_t chunk = 1;
  while (offset < data.size()) {
    const size_t n = std::min(chunk, data.size() - offset);
    buf.append(std::string_view(data).substr(offset, n));
    offset += n;
    chunk = chunk * 3 + 1;
    if (chunk > 100000) chunk = 7;
  }
  EXPECT_EQ(buf.readableBytes(), data.size());
  EXPECT_GE(buf.capacity(), data.size() + Buffer::kCheapPrepend);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
  EXPECT_TRUE(buf.view() == data);
}

TEST(BufferTest, GrowthWithDataAlreadyRetrieved) {
  Buffer buf;
  buf.append(pattern(1000));
  buf.retrieve(100);
  const std::string more = pattern(5000, 1000);
  buf.append(more);
  EXPECT_EQ(buf.readableBytes(), 900u + 5000u);
  EXPECT_TRUE(buf.view() == pattern(5900, 100));
}

TEST(BufferTest, MovesDataToFrontInsteadOfGrowing) {
  Buffer buf;
  buf.append(pattern(1000));
  EXPECT_EQ(buf.writableBytes(), Buffer::kInitialSize - 1000);
  buf.retrieve(900);
  EXPECT_EQ(buf.readableBytes(), 100u);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend + 900);
  const size_t capacity = buf.capacity();

  // 500 bytes do not fit behind the data, but do fit once the 100 readable
  // bytes slide to the front.
  buf.append(pattern(500, 1000));
  EXPECT_EQ(buf.capacity(), capacity);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
  EXPECT_EQ(buf.readableBytes(), 600u);
  EXPECT_EQ(buf.writableBytes(), capacity - Buffer::kCheapPrepend - 600);
  EXPECT_TRUE(buf.view() == pattern(600, 900));
}

TEST(BufferTest, FindCRLF) {
  Buffer buf;
  buf.append("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  const char* first = buf.findCRLF();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first - buf.peek(), 14);
  const char* second = buf.findCRLF(first + 2);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(std::string_view(first + 2, static_cast<size_t>(second - first - 2)), "Host: x");
  const char* third = buf.findCRLF(second + 2);
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(third, second + 2);
  EXPECT_EQ(buf.findCRLF(third + 2), nullptr);
  EXPECT_EQ(buf.findCRLF(third + 1), nullptr);  // a lone "\n"

  Buffer partial;
  partial.append("no line end\r");
  EXPECT_EQ(partial.findCRLF(), nullptr);
  partial.append("\n");
  ASSERT_NE(partial.findCRLF(), nullptr);
  EXPECT_EQ(partial.findCRLF() - partial.peek(), 11);

  const Buffer empty;
  EXPECT_EQ(empty.findCRLF(), nullptr);
}

TEST(BufferTest, FindCRLFIgnoresRetrievedBytes) {
  Buffer buf;
  buf.append("a\r\nbc");
  buf.retrieve(3);
  EXPECT_EQ(buf.findCRLF(), nullptr);
}

TEST(BufferTest, FindEOL) {
  Buffer buf;
  buf.append("one\ntwo\r\nthree");
  const char* eol = buf.findEOL();
  ASSERT_NE(eol, nullptr);
  EXPECT_EQ(eol - buf.peek(), 3);
  const char* next = buf.findEOL(eol + 1);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next - buf.peek(), 8);
  EXPECT_EQ(buf.findEOL(next + 1), nullptr);

  const Buffer empty;
  EXPECT_EQ(empty.findEOL(), nullptr);
}

TEST(BufferTest, ShrinkReleasesMemoryAndKeepsContent) {
  Buffer buf;
  buf.append(pattern(100000));
  buf.retrieve(99000);
  EXPECT_GE(buf.capacity(), 100000u);
  buf.shrink(0);
  EXPECT_EQ(buf.readableBytes(), 1000u);
  EXPECT_EQ(buf.capacity(), Buffer::kCheapPrepend + 1000);
  EXPECT_EQ(buf.prependableBytes(), Buffer::kCheapPrepend);
  EXPECT_TRUE(buf.view() == pattern(1000, 99000));

  buf.shrink(64);
  EXPECT_EQ(buf.capacity(), Buffer::kCheapPrepend + 1000 + 64);
  EXPECT_EQ(buf.writableBytes(), 64u);
  EXPECT_TRUE(buf.view() == pattern(1000, 99000));
}

TEST(BufferTest, Swap) {
  Buffer a;
  Buffer b(16);
  a.append("aaa");
  b.append("bbbbb");
  a.swap(b);
  EXPECT_EQ(a.view(), "bbbbb");
  EXPECT_EQ(b.view(), "aaa");
  EXPECT_EQ(a.capacity(), Buffer::kCheapPrepend + 16);
}

class BufferReadFdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    readEnd_.reset(fds[0]);
    writeEnd_.reset(fds[1]);
  }

  UniqueFd readEnd_;
  UniqueFd writeEnd_;
};

TEST_F(BufferReadFdTest, LargeBurstUsesStackOverflowAndIsByteExact) {
  constexpr size_t kTotal = 200 * 1024;
  // A pipe this big holds the whole burst, so the reader sees it all at once
  // without a concurrent writer.
  ASSERT_GE(::fcntl(writeEnd_.get(), F_SETPIPE_SZ, 1 << 20), static_cast<int>(kTotal))
      << "F_SETPIPE_SZ: " << std::strerror(errno);
  const std::string data = pattern(kTotal);
  ASSERT_EQ(::write(writeEnd_.get(), data.data(), data.size()), static_cast<ssize_t>(kTotal));

  Buffer buf;
  const size_t initialWritable = buf.writableBytes();
  Buffer::ReadResult first = buf.readFd(readEnd_.get());
  ASSERT_GT(first.bytes, 0) << std::strerror(first.error);
  // More than the buffer could take: the 64 KiB stack overflow was used.
  EXPECT_GT(static_cast<size_t>(first.bytes), initialWritable);
  EXPECT_EQ(static_cast<size_t>(first.bytes), initialWritable + Buffer::kExtraReadSize);
  EXPECT_TRUE(first.filled);  // everything offered was used: more may wait
  EXPECT_EQ(first.error, 0);
  EXPECT_EQ(buf.readableBytes(), static_cast<size_t>(first.bytes));
  EXPECT_TRUE(buf.view() == std::string_view(data).substr(0, buf.readableBytes()));

  int reads = 1;
  bool sawPartial = false;
  while (buf.readableBytes() < kTotal && reads < 100) {
    const size_t writable = buf.writableBytes();
    const Buffer::ReadResult r = buf.readFd(readEnd_.get());
    ++reads;
    ASSERT_GT(r.bytes, 0) << "after " << buf.readableBytes()
                          << " bytes: " << std::strerror(r.error);
    // filled is true exactly when the read used everything it was offered.
    const size_t offered =
        writable < Buffer::kExtraReadSize ? writable + Buffer::kExtraReadSize : writable;
    EXPECT_EQ(r.filled, static_cast<size_t>(r.bytes) == offered);
    if (!r.filled) sawPartial = true;
  }
  ASSERT_EQ(buf.readableBytes(), kTotal);
  EXPECT_TRUE(buf.view() == data) << "content differs";
  // 200 KiB in reads of at most (capacity + 64 KiB) ends in a partial read.
  EXPECT_TRUE(sawPartial);

  // Drained: a nonblocking fd reports EAGAIN.
  const Buffer::ReadResult again = buf.readFd(readEnd_.get());
  EXPECT_LT(again.bytes, 0);
  EXPECT_EQ(again.error, EAGAIN);
  EXPECT_FALSE(again.filled);
  EXPECT_EQ(buf.readableBytes(), kTotal);
}

TEST_F(BufferReadFdTest, SmallReadIsNotFilled) {
  ASSERT_EQ(::write(writeEnd_.get(), "hello", 5), 5);
  Buffer buf;
  const Buffer::ReadResult r = buf.readFd(readEnd_.get());
  EXPECT_EQ(r.bytes, 5);
  EXPECT_FALSE(r.filled);
  EXPECT_EQ(buf.view(), "hello");
}

TEST_F(BufferReadFdTest, ReadAppendsAfterExistingData) {
  Buffer buf(8);
  buf.append("12345678");
  ASSERT_EQ(buf.writableBytes(), 0u);
  const std::string data = pattern(3000);
  ASSERT_EQ(::write(writeEnd_.get(), data.data(), data.size()), 3000);
  const Buffer::ReadResult r = buf.readFd(readEnd_.get());
  EXPECT_EQ(r.bytes, 3000);
  EXPECT_EQ(buf.readableBytes(), 3008u);
  EXPECT_TRUE(buf.view() == "12345678" + data);
}

TEST_F(BufferReadFdTest, EmptyNonblockingFdGivesEagain) {
  Buffer buf;
  const Buffer::ReadResult r = buf.readFd(readEnd_.get());
  EXPECT_LT(r.bytes, 0);
  EXPECT_EQ(r.error, EAGAIN);
  EXPECT_FALSE(r.filled);
  EXPECT_EQ(buf.readableBytes(), 0u);
}

TEST_F(BufferReadFdTest, EndOfFileGivesZero) {
  ASSERT_EQ(::write(writeEnd_.get(), "tail", 4), 4);
  writeEnd_.reset();
  Buffer buf;
  const Buffer::ReadResult data = buf.readFd(readEnd_.get());
  EXPECT_EQ(data.bytes, 4);
  const Buffer::ReadResult eof = buf.readFd(readEnd_.get());
  EXPECT_EQ(eof.bytes, 0);
  EXPECT_FALSE(eof.filled);
  EXPECT_EQ(buf.view(), "tail");
}

TEST(BufferReadFdErrorTest, BadFdGivesEbadf) {
  Buffer buf;
  const Buffer::ReadResult r = buf.readFd(-1);
  EXPECT_LT(r.bytes, 0);
  EXPECT_EQ(r.error, EBADF);
}

// A lender that records what was handed back.
class RecordingLender : public Buffer::Lender {
 public:
  void release(uint32_t token) override { released.push_back(token); }
  std::vector<uint32_t> released;
};

TEST(BufferViewTest, ReadsTheViewedBytesAndReleasesOnce) {
  RecordingLender lender;
  std::string storage = "GET / HTTP/1.1\r\n\r\n";
  {
    Buffer buf(0);
    buf.borrow(storage, &lender, 7);
    EXPECT_TRUE(buf.borrowed());
    EXPECT_EQ(buf.peek(), storage.data());  // no copy
    EXPECT_EQ(buf.readableBytes(), storage.size());
    EXPECT_EQ(buf.writableBytes(), 0u);
    EXPECT_EQ(buf.prependableBytes(), 0u);
    ASSERT_NE(buf.findCRLF(), nullptr);
    EXPECT_EQ(buf.retrieveAsString(4), "GET ");
    buf.retrieveAll();
    EXPECT_TRUE(lender.released.empty());  // still viewed until released
  }
  EXPECT_EQ(lender.released, std::vector<uint32_t>{7});  // the destructor
}

TEST(BufferViewTest, WritingCopiesFirstAndLeavesTheViewedBytesAlone) {
  RecordingLender lender;
  std::string storage = "abcdef";
  Buffer buf(0);
  buf.borrow(storage, &lender, 3);
  buf.retrieve(2);
  buf.append("XY");
  EXPECT_FALSE(buf.borrowed());
  EXPECT_EQ(buf.view(), "cdefXY");
  EXPECT_EQ(storage, "abcdef");
  EXPECT_EQ(lender.released, std::vector<uint32_t>{3});
  buf.prepend("<");
  EXPECT_EQ(buf.view(), "<cdefXY");
  EXPECT_EQ(lender.released.size(), 1u);  // never twice
}

TEST(BufferViewTest, ExchangeMovesTheViewButSwapCopiesIt) {
  RecordingLender lender;
  std::string storage = "payload";
  Buffer viewing(0);
  viewing.borrow(storage, &lender, 1);
  Buffer queue;
  queue.exchange(viewing);  // the send queue takes the view along
  EXPECT_TRUE(queue.borrowed());
  EXPECT_FALSE(viewing.borrowed());
  EXPECT_EQ(queue.peek(), storage.data());
  EXPECT_EQ(viewing.readableBytes(), 0u);
  EXPECT_TRUE(lender.released.empty());
  queue.releaseBorrowed();
  EXPECT_EQ(lender.released, std::vector<uint32_t>{1});
  EXPECT_EQ(queue.readableBytes(), 0u);

  Buffer user;
  Buffer other(0);
  other.borrow(storage, &lender, 2);
  user.swap(other);  // a user's swap must not carry the view out of the callback
  EXPECT_FALSE(user.borrowed());
  EXPECT_NE(user.peek(), storage.data());
  EXPECT_EQ(user.view(), "payload");
  EXPECT_EQ(lender.released, (std::vector<uint32_t>{1, 2}));
}

TEST(BufferViewTest, MoveCarriesTheView) {
  RecordingLender lender;
  std::string storage = "xyz";
  Buffer a(0);
  a.borrow(storage, &lender, 9);
  Buffer b(std::move(a));
  EXPECT_TRUE(b.borrowed());
  EXPECT_EQ(b.view(), "xyz");
  b = Buffer();
  EXPECT_EQ(lender.released, std::vector<uint32_t>{9});
  b.append("ok");
  EXPECT_EQ(b.view(), "ok");
}

// Large storage comes from mmap and is not zero-filled: reserving 8 MiB and
// writing a few bytes makes only the written page resident, and bytes survive
// growth across the mapping threshold and back to small storage.
TEST(BufferStorageTest, LargeStorageIsMappedAndBecomesResidentOnlyWhereWritten) {
  Buffer b;
  b.append("head");
  b.ensureWritableBytes(8 * 1024 * 1024);
  ASSERT_GE(b.capacity(), 8u * 1024 * 1024);
  const long resident = test::residentBytes(b.peek(), b.capacity() - 64 * 1024);
  ASSERT_GE(resident, 0) << "the storage is not one mapping";
  EXPECT_LE(resident, 2 * 4096) << "growth made " << resident << " bytes resident";
  EXPECT_EQ(b.view(), "head");

  const std::string big(300 * 1024, 'q');
  b.append(big);
  EXPECT_EQ(b.readableBytes(), 4 + big.size());
  b.retrieve(4);
  EXPECT_EQ(b.retrieveAllAsString(), big);
  Buffer small;
  small.append("tail");
  small.swap(b);
  EXPECT_EQ(b.view(), "tail");
  EXPECT_EQ(small.readableBytes(), 0u);
}

// A large buffer read bit by bit gives the pages of what was read back, and
// keeps what was not.
TEST(BufferStorageTest, SpentPagesOfLargeStorageGoBack) {
  const std::string bytes = test::randomBytes(1024 * 1024, 5);
  Buffer b;
  b.append(bytes);
  const char* start = b.peek();
  b.retrieve(600 * 1024);
  ASSERT_GT(test::residentBytes(start, 512 * 1024), 500 * 1024) << "written, so resident";
  const size_t released = b.releaseSpentPages(0);
  EXPECT_GE(released, 590u * 1024);
  EXPECT_EQ(test::residentBytes(start + 4096, 512 * 1024), 0);
  EXPECT_EQ(b.view(), std::string_view(bytes).substr(600 * 1024));
  EXPECT_EQ(b.releaseSpentPages(released), released) << "nothing more was read";
  Buffer small;
  small.append("x");
  small.retrieve(1);
  EXPECT_EQ(small.releaseSpentPages(0), 0u) << "heap storage is left alone";
}

// An empty Buffer's storage (its prepend area) lives inside the object, so a
// connection's idle buffers cost no allocation; moves and swaps must carry
// its bytes and point at their new place.
TEST(BufferStorageTest, EmptyBuffersKeepTheirPrependAreaInsideAndSurviveMovesAndSwaps) {
  Buffer a(0);
  const auto* object = reinterpret_cast<const char*>(&a);
  EXPECT_GE(a.peek(), object);
  EXPECT_LT(a.peek(), object + sizeof a);
  a.prepend("abcd");
  Buffer b(0);
  b.prepend("wxyz");
  a.swap(b);
  EXPECT_EQ(a.view(), "wxyz");
  EXPECT_EQ(b.view(), "abcd");
  Buffer c(std::move(a));
  EXPECT_EQ(c.view(), "wxyz");
  const auto* cObject = reinterpret_cast<const char*>(&c);
  EXPECT_GE(c.peek(), cObject);
  EXPECT_LT(c.peek(), cObject + sizeof c);
  // Growing out of the inline block keeps the bytes.
  c.append(std::string(1000, 'q'));
  EXPECT_EQ(c.view().substr(0, 4), "wxyz");
  EXPECT_EQ(c.readableBytes(), 1004u);
  b.swap(c);
  EXPECT_EQ(b.readableBytes(), 1004u);
  EXPECT_EQ(c.view(), "abcd");
}

}  // namespace
}  // namespace libnet
