// OutputQueue (net/OutputQueue.h): the order bytes and files leave in, the
// byte counts, the in-flight buffer's hand-over, storage borrowed from the
// pool, and sendfile(2) of a queued file (net/poller/SendFile.h, which the
// strategies that send use) to a peer that is gone without a SIGPIPE
// reaching the process.
#include "net/OutputQueue.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/poller/SendFile.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

// Reads what is available on a non-blocking-enough socket end (the test
// writes first, so everything is there).
std::string drain(int fd, size_t bytes) {
  std::string out;
  char buf[65536];
  while (out.size() < bytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

class OutputQueueTest : public ::testing::Test {
 protected:
  BufferPool pool_;
  OutputQueue queue_{&pool_};
};

TEST_F(OutputQueueTest, CountsBuffersAndFilesAndKeepsTheirOrder) {
  EXPECT_TRUE(queue_.empty());
  queue_.append("head|");
  queue_.appendFile(test::temporaryFile("FILE"), 0, 4);
  queue_.append("|tail");
  EXPECT_FALSE(queue_.empty());
  EXPECT_TRUE(queue_.hasFile());
  EXPECT_EQ(queue_.bufferedBytes(), 10u);
  EXPECT_EQ(queue_.queuedBytes(), 14u);
  // Only the bytes ahead of the file are waiting; the rest waits behind it.
  EXPECT_EQ(queue_.waiting().view(), "head|");

  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  std::string sent(queue_.waiting().view());
  queue_.waiting().retrieveAll();
  bool progressed = false;
  const FileSendResult result = sendQueuedFile(&queue_, ours.get(), &progressed);
  EXPECT_EQ(result.status, FileSendResult::kDone);
  EXPECT_TRUE(progressed);
  EXPECT_FALSE(queue_.hasFile());
  EXPECT_EQ(queue_.waiting().view(), "|tail");  // now next
  sent += drain(theirs.get(), 4);
  sent += queue_.waiting().view();
  EXPECT_EQ(sent, "head|FILE|tail");
}

TEST_F(OutputQueueTest, StartSendHandsTheWaitingBytesOverWithoutCopying) {
  queue_.append(std::string(5000, 'a'));
  const char* storage = queue_.waiting().peek();
  EXPECT_TRUE(queue_.startSend());
  EXPECT_EQ(queue_.inFlight().peek(), storage);
  EXPECT_EQ(queue_.inFlight().readableBytes(), 5000u);
  EXPECT_EQ(queue_.waiting().readableBytes(), 0u);
  EXPECT_FALSE(queue_.startSend());  // nothing waiting
  // Bytes sent meanwhile queue behind, in their own buffer.
  queue_.append("later");
  EXPECT_EQ(queue_.inFlight().peek(), storage);
  EXPECT_EQ(queue_.bufferedBytes(), 5005u);
}

TEST_F(OutputQueueTest, AnEmptyQueueTakesABuffersStorageAndLendsSpareBack) {
  Buffer spare(0);
  spare.append(std::string(32 * 1024, 's'));
  spare.retrieveAll();
  pool_.reclaim(&spare);
  ASSERT_EQ(pool_.spareCount(), 1u);

  Buffer message(0);
  message.append(std::string(20000, 'm'));
  const char* storage = message.peek();
  queue_.append(&message, /*lendBack=*/true);
  EXPECT_EQ(message.readableBytes(), 0u);
  EXPECT_EQ(queue_.waiting().peek(), storage);                // taken, not copied
  EXPECT_GT(message.capacity(), BufferPool::kSmallCapacity);  // spare lent back
  EXPECT_EQ(pool_.spareCount(), 0u);

  // With bytes queued, the next one is copied behind them.
  Buffer next(0);
  next.append("xyz");
  queue_.append(&next, true);
  EXPECT_EQ(next.readableBytes(), 0u);
  EXPECT_EQ(queue_.bufferedBytes(), 20003u);
}

TEST_F(OutputQueueTest, ClearKeepsTheBytesOfASendInFlight) {
  queue_.append("in flight");
  ASSERT_TRUE(queue_.startSend());
  queue_.append("waiting");
  queue_.appendFile(test::temporaryFile("F"), 0, 1);
  queue_.clear();
  EXPECT_FALSE(queue_.hasFile());
  EXPECT_EQ(queue_.waiting().readableBytes(), 0u);
  EXPECT_EQ(queue_.inFlight().view(), "in flight");  // the kernel may still read it
}

TEST_F(OutputQueueTest, AFileThatEndsEarlyFails) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  UniqueFd ours(pair[0]);
  UniqueFd theirs(pair[1]);
  queue_.appendFile(test::temporaryFile("short"), 0, 100);
  bool progressed = false;
  const FileSendResult result = sendQueuedFile(&queue_, ours.get(), &progressed);
  EXPECT_EQ(result.status, FileSendResult::kFailed);
  EXPECT_EQ(result.error, ENODATA);
}

TEST_F(OutputQueueTest, SendFileToAGonePeerRaisesNoSignalAndLeavesTheDispositionAlone) {
  // The default disposition kills the process on SIGPIPE: surviving is the
  // test. Neither the disposition nor the thread's mask may change, and no
  // SIGPIPE may be left pending.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  struct sigaction saved {};
  ASSERT_EQ(::sigaction(SIGPIPE, &dfl, &saved), 0);
  sigset_t maskBefore;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &maskBefore), 0);

  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  UniqueFd ours(pair[0]);
  ::close(pair[1]);  // the peer is gone
  queue_.appendFile(test::temporaryFile(std::string(100000, 'f')), 0, 100000);
  bool progressed = false;
  const FileSendResult result = sendQueuedFile(&queue_, ours.get(), &progressed);
  EXPECT_EQ(result.status, FileSendResult::kFailed);
  EXPECT_EQ(result.error, EPIPE);

  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
  sigset_t maskAfter;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, nullptr, &maskAfter), 0);
  EXPECT_EQ(::sigismember(&maskAfter, SIGPIPE), ::sigismember(&maskBefore, SIGPIPE));
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_EQ(::sigismember(&pending, SIGPIPE), 0);
  ::sigaction(SIGPIPE, &saved, nullptr);
}

// io_uring's one send in flight, going out in parts to a slow peer: the
// part sent goes back to the system as it goes, the rest stays intact.
TEST(OutputQueueMemoryTest, ALargeSendGoingOutInPartsGivesBackWhatWasSent) {
  BufferPool pool;
  OutputQueue queue(&pool);
  const std::string bytes = test::randomBytes(1024 * 1024, 9);
  queue.append(bytes);
  ASSERT_TRUE(queue.startSend());
  const char* start = queue.inFlight().peek();
  for (size_t sent = 0; sent < 768 * 1024; sent += 128 * 1024) queue.sent(128 * 1024);
  EXPECT_LE(test::residentBytes(start, 768 * 1024), 256 * 1024)
      << "the sent part is still resident";
  EXPECT_EQ(queue.inFlight().view(), std::string_view(bytes).substr(768 * 1024));
  EXPECT_EQ(queue.bufferedBytes(), 256u * 1024);
}

}  // namespace
}  // namespace libnet
