// Successor: a fork and exec of a helper (successor_child_main) on listening
// sockets, on every backend: the sockets reach it on 3, 4, ... with nothing
// else of ours, its readiness is reported, and a successor that exits, hangs
// or says something else is reported as failed and reaped.
#include "net/Successor.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/UniqueFd.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/Socket.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using test::BlockingClient;

UniqueFd listeningSocket() {
  Socket socket = Socket::createNonblocking(AF_INET);
  socket.bindAddress(InetAddress(0, true));
  socket.listen();
  return socket.releaseFd();
}

class SuccessorTest : public test::LoopTest {
 protected:
  void SetUp() override {
    test::LoopTest::SetUp();
    if (IsSkipped()) return;
    child_ = test::testBinary("successor_child_main");
    ASSERT_FALSE(child_.empty()) << "successor_child_main not found";
    char path[] = "/tmp/libnet-successor-XXXXXX";
    UniqueFd file(::mkstemp(path));
    ASSERT_TRUE(file.valid());
    outFile_ = path;
  }
  void TearDown() override {
    if (!outFile_.empty()) ::unlink(outFile_.c_str());
  }

  // Starts the helper in `mode` on `fds` and runs the loop until the outcome.
  Successor::Outcome run(const std::vector<int>& fds, const std::string& mode,
                         Duration timeout = std::chrono::seconds(10)) {
    EventLoop loop(GetParam());
    armWatchdog(loop);
    Successor successor(&loop);
    std::optional<Successor::Outcome> outcome;
    const Successor::Options options{
        .program = child_, .argv = {child_, mode, outFile_}, .readyTimeout = timeout};
    EXPECT_TRUE(successor.start(fds, options, [&](const Successor::Outcome& o) {
      outcome = o;
      loop.quit();
    }));
    EXPECT_TRUE(successor.pending());
    // One at a time.
    EXPECT_FALSE(successor.start(fds, options, [](const Successor::Outcome&) {}));
    loop.loop();
    EXPECT_FALSE(timedOut_);
    EXPECT_FALSE(successor.pending());
    return outcome.value_or(Successor::Outcome{.why = "no outcome"});
  }

  std::string outFileContents() {
    std::ifstream in(outFile_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string child_;
  std::string outFile_;
};

TEST_P(SuccessorTest, ReadySuccessorHasTheSocketsAndNothingElse) {
  std::vector<UniqueFd> sockets;
  sockets.push_back(listeningSocket());
  sockets.push_back(listeningSocket());
  const std::vector<int> fds{sockets[0].get(), sockets[1].get()};
  const Successor::Outcome outcome = run(fds, "ready");
  ASSERT_TRUE(outcome.ready) << outcome.why;
  ASSERT_GT(outcome.pid, 0);
  // Standard streams, the two sockets, the readiness pipe: nothing of ours.
  EXPECT_EQ(outFileContents(), "0 1 2 3 4 5");
  // The very sockets: the child answers on each.
  const std::string expected = "child " + std::to_string(outcome.pid) + "\n";
  for (const UniqueFd& fd : sockets) {
    BlockingClient client(Socket::localAddress(fd.get()));
    EXPECT_EQ(client.recvExactly(expected.size()), expected);
  }
  int status = -1;
  ASSERT_EQ(::waitpid(outcome.pid, &status, 0), outcome.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_P(SuccessorTest, OneThatExitsFirstFailsWithItsStatus) {
  UniqueFd socket = listeningSocket();
  const Successor::Outcome outcome = run({socket.get()}, "exit");
  EXPECT_FALSE(outcome.ready);
  EXPECT_NE(outcome.why.find("exited with status 3"), std::string::npos) << outcome.why;
  // Reaped already.
  EXPECT_EQ(::waitpid(outcome.pid, nullptr, WNOHANG), -1);
}

TEST_P(SuccessorTest, OneNotReadyInTimeIsKilled) {
  UniqueFd socket = listeningSocket();
  const Successor::Outcome outcome = run({socket.get()}, "hang", std::chrono::milliseconds(300));
  EXPECT_FALSE(outcome.ready);
  EXPECT_NE(outcome.why.find("not ready within 300 ms"), std::string::npos) << outcome.why;
  EXPECT_NE(outcome.why.find("killed by signal 9"), std::string::npos) << outcome.why;
  EXPECT_EQ(::waitpid(outcome.pid, nullptr, WNOHANG), -1);
}

TEST_P(SuccessorTest, OneThatSaysSomethingElseFails) {
  UniqueFd socket = listeningSocket();
  const Successor::Outcome outcome = run({socket.get()}, "garbage");
  EXPECT_FALSE(outcome.ready);
  EXPECT_NE(outcome.why.find("other than READY"), std::string::npos) << outcome.why;
}

TEST_P(SuccessorTest, AProgramThatCannotBeRunFails) {
  UniqueFd socket = listeningSocket();
  child_ = "/nonexistent/successor";
  const Successor::Outcome outcome = run({socket.get()}, "ready");
  EXPECT_FALSE(outcome.ready);
  EXPECT_NE(outcome.why.find("exited with status 127"), std::string::npos) << outcome.why;
}

TEST_P(SuccessorTest, NotifyReadyWithoutAPipeSaysSo) {
  ::unsetenv("LIBNET_READY_FD");
  EXPECT_FALSE(Successor::notifyReady());
}

INSTANTIATE_TEST_SUITE_P(Backends, SuccessorTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
