// net/poller/BufferRing against a real io_uring: the shrink must never give
// back the pages of a buffer the kernel has filled and whose completion has
// not been handled yet (that completion's bytes would read as zeros).
// Skipped where io_uring cannot run here.
#include "net/poller/BufferRing.h"

#include <gtest/gtest.h>
#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "base/UniqueFd.h"
#include "net/poller/UringProbe.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

constexpr uint16_t kGroup = 7;
constexpr uint32_t kCapacity = 64;
constexpr uint32_t kInitial = 4;
constexpr uint32_t kSize = 4096;

class BufferRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const UringProbe::Result& probe = UringProbe::result();
    if (!probe.ok) GTEST_SKIP() << "io_uring unavailable here: " << probe.detail;
    io_uring_params params{};
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (io_uring_queue_init_params(64, &ring_, &params) < 0) {
      params = {};
      ASSERT_EQ(io_uring_queue_init_params(64, &ring_, &params), 0);
    }
    ringUp_ = true;
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    reader_.reset(fds[0]);
    writer_.reset(fds[1]);
  }
  void TearDown() override {
    if (ringUp_) io_uring_queue_exit(&ring_);
  }

  void armRecv(const BufferRing& buffers) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    ASSERT_NE(sqe, nullptr);
    io_uring_prep_recv_multishot(sqe, reader_.get(), nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = buffers.groupId();
    io_uring_sqe_set_data64(sqe, 1);
    ASSERT_EQ(io_uring_submit(&ring_), 1);
  }

  // Writes `bytes` to the socket and waits until the receive's completion
  // is in the CQ, without taking it out.
  void receiveInto(std::string_view bytes) {
    ASSERT_EQ(::write(writer_.get(), bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
    io_uring_cqe* cqe = nullptr;
    ASSERT_EQ(io_uring_wait_cqe(&ring_, &cqe), 0);
    ASSERT_EQ(cqe->res, static_cast<int>(bytes.size()));
    ASSERT_TRUE(cqe->flags & IORING_CQE_F_BUFFER);
  }

  // Takes the completion out of the CQ and returns its bytes.
  std::string take(BufferRing& buffers) {
    io_uring_cqe* cqe = nullptr;
    EXPECT_EQ(io_uring_peek_cqe(&ring_, &cqe), 0);
    if (cqe == nullptr) return {};
    const BufferRing::Received r = buffers.received(cqe->flags, cqe->res);
    std::string bytes(r.bytes);
    io_uring_cqe_seen(&ring_, cqe);
    buffers.finished(r.id);
    return bytes;
  }

  io_uring ring_{};
  bool ringUp_ = false;
  UniqueFd reader_;
  UniqueFd writer_;
};

TEST_F(BufferRingTest, ShrinkKeepsABufferWhoseCompletionIsStillInTheQueue) {
  // Whole buffers, so that each receive takes the next buffer of the ring.
  BufferRing buffers(&ring_, kGroup, kCapacity, kSize, kInitial, /*incremental=*/false);
  while (buffers.grow()) {
  }
  ASSERT_EQ(buffers.provided(), kCapacity);
  buffers.shrinkIfQuiet(true);  // the growth is forgiven once; demand is counted anew
  armRecv(buffers);

  // The kernel takes buffers in ring order: after 40 receives, handled and
  // given back, the next one lands in buffer 40, far beyond what a shrink
  // keeps (the initial 4).
  for (int i = 0; i < 40; ++i) {
    receiveInto(std::string(100, static_cast<char>('a' + i % 26)));
    ASSERT_EQ(take(buffers), std::string(100, static_cast<char>('a' + i % 26)));
  }

  const std::string payload = test::randomBytes(3000, 29) + std::string(1, 'z');
  receiveInto(payload);
  // Demand is low (nothing lent, nothing noted): the shrink takes every
  // buffer beyond the initial four out of circulation and gives back the
  // pages of those that look unused, while the completion naming buffer
  // 40 still waits in the CQ.
  buffers.shrinkIfQuiet(true);
  ASSERT_EQ(buffers.provided(), kInitial) << "the ring did not shrink: the test shows nothing";
  const std::string got = take(buffers);
  ASSERT_EQ(got.size(), payload.size());
  EXPECT_TRUE(got == payload) << "received bytes were lost to the shrink (first zero at "
                              << got.find('\0') << ")";
}

}  // namespace
}  // namespace libnet
