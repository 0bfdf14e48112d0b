// EventLoopThreadPool's CPU pinning: each loop thread runs on the CPU it was
// given (its affinity mask, and the CPU it is seen running on), lists the
// machine or the process cannot honour are refused with the reason, and a
// CPU the kernel refuses at thread start fails start() naming the loop and
// the CPU. On every backend.
#include "net/EventLoopThreadPool.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "base/CpuAffinity.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::runSync;

class EventLoopThreadPoolTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    base_ = std::make_unique<EventLoopThread>(nullptr, "base", GetParam());
    baseLoop_ = base_->startLoop();
  }
  void TearDown() override {
    if (pool_) runSync(baseLoop_, [&] { pool_.reset(); });
  }

  // Made and started on the base loop's thread.
  void startPool(int threads, std::vector<int> cpus) {
    runSync(baseLoop_, [&] {
      pool_ = std::make_unique<EventLoopThreadPool>(baseLoop_, "pool", threads, cpus);
      pool_->start();
    });
  }

  // Each pool loop's thread: the CPUs it may run on, seen from inside it.
  std::vector<std::vector<int>> masks() {
    std::vector<std::vector<int>> result;
    for (EventLoop* loop : pool_->allLoops()) {
      result.push_back(runSync(loop, [] { return currentThreadCpus(); }));
    }
    return result;
  }

  std::unique_ptr<EventLoopThread> base_;
  EventLoop* baseLoop_ = nullptr;
  std::unique_ptr<EventLoopThreadPool> pool_;
};

TEST_P(EventLoopThreadPoolTest, EachLoopRunsOnTheCpuItWasGiven) {
  const std::vector<int>& allowed = allowedCpus();
  // One loop more than CPUs: the list is taken round.
  const int threads = static_cast<int>(allowed.size()) + 1;
  startPool(threads, allowed);
  const std::vector<EventLoop*> loops = pool_->allLoops();
  ASSERT_EQ(loops.size(), static_cast<size_t>(threads));
  for (size_t i = 0; i < loops.size(); ++i) {
    const int cpu = allowed[i % allowed.size()];
    EXPECT_EQ(runSync(loops[i], [] { return currentThreadCpus(); }), std::vector<int>({cpu}))
        << "loop " << i;
    EXPECT_EQ(runSync(loops[i], [] { return ::sched_getcpu(); }), cpu) << "loop " << i;
  }
  // The base loop's thread is the caller's business: left as it was.
  EXPECT_EQ(runSync(baseLoop_, [] { return currentThreadCpus(); }), allowed);
}

TEST_P(EventLoopThreadPoolTest, LoopsGetTheCpusInTheOrderListed) {
  const std::vector<int>& allowed = allowedCpus();
  if (allowed.size() < 2) GTEST_SKIP() << "needs 2 CPUs, this process may use 1";
  const std::vector<int> reversed{allowed[1], allowed[0]};
  startPool(2, reversed);
  EXPECT_EQ(masks(), std::vector<std::vector<int>>({{allowed[1]}, {allowed[0]}}));
}

TEST_P(EventLoopThreadPoolTest, WithoutCpusLoopsKeepTheProcesssMask) {
  startPool(2, {});
  EXPECT_EQ(masks(), std::vector<std::vector<int>>(2, allowedCpus()));
}

TEST_P(EventLoopThreadPoolTest, RefusesCpusItCannotHonour) {
  const int missing = ::get_nprocs_conf();
  std::string why;
  runSync(baseLoop_, [&] {
    try {
      EventLoopThreadPool pool(baseLoop_, "pool", 2, {allowedCpus().front(), missing});
    } catch (const std::invalid_argument& e) {
      why = e.what();
    }
  });
  EXPECT_NE(why.find("EventLoopThreadPool: CPU " + std::to_string(missing) + " does not exist"),
            std::string::npos)
      << why;
  why.clear();
  runSync(baseLoop_, [&] {
    try {
      EventLoopThreadPool pool(baseLoop_, "pool", 0, {allowedCpus().front()});
    } catch (const std::invalid_argument& e) {
      why = e.what();
    }
  });
  EXPECT_NE(why.find("no loop thread to pin"), std::string::npos) << why;
}

TEST_P(EventLoopThreadPoolTest, ACpuTheKernelRefusesFailsTheStartNamingLoopAndCpu) {
  // Unchecked by EventLoopThread itself: the kernel's refusal is what is
  // reported (the CPU exists in no machine's online set).
  EventLoopThread thread(nullptr, "pinned7", EventLoopOptions{.poller = GetParam(), .ioUring = {}},
                         CPU_SETSIZE - 1);
  std::string what;
  try {
    (void)thread.startLoop();
  } catch (const std::system_error& e) {
    what = e.what();
  }
  EXPECT_NE(what.find("EventLoopThread pinned7: pthread_setaffinity_np to CPU " +
                      std::to_string(CPU_SETSIZE - 1)),
            std::string::npos)
      << what;
}

INSTANTIATE_TEST_SUITE_P(Backends, EventLoopThreadPoolTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
