// Successor: a fork and exec of a helper (successor_child_main) on listening
// sockets, on every backend: the sockets reach it on 3, 4, ... with nothing
// else of ours, its readiness is reported, and a successor that exits, hangs
// or says something else is reported as failed and reaped; one that runs is
// stopped with SIGTERM (SIGKILL only past the grace), never killed first,
// also when the Successor goes while it is pending; a ready one can be
// signalled and its exit is reported.
#include "net/Successor.h"

#include <gtest/gtest.h>
#include <signal.h>
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
                         Duration timeout = std::chrono::seconds(10),
                         Duration stopGrace = std::chrono::seconds(10)) {
    EventLoop loop(GetParam());
    armWatchdog(loop);
    Successor successor(&loop);
    std::optional<Successor::Outcome> outcome;
    const Successor::Options options{.program = child_,
                                     .argv = {child_, mode, outFile_},
                                     .readyTimeout = timeout,
                                     .stopGrace = stopGrace};
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

// It may have accepted connections from the shared sockets already: asked
// to drain (SIGTERM), not killed.
TEST_P(SuccessorTest, OneNotReadyInTimeIsSentSigterm) {
  UniqueFd socket = listeningSocket();
  const Successor::Outcome outcome = run({socket.get()}, "hang", std::chrono::milliseconds(300));
  EXPECT_FALSE(outcome.ready);
  EXPECT_NE(outcome.why.find("not ready within 300 ms (sent SIGTERM; killed by signal 15)"),
            std::string::npos)
      << outcome.why;
  EXPECT_EQ(::waitpid(outcome.pid, nullptr, WNOHANG), -1);
}

TEST_P(SuccessorTest, OneThatIgnoresSigtermIsKilledAfterTheGrace) {
  UniqueFd socket = listeningSocket();
  const Successor::Outcome outcome = run({socket.get()}, "stubborn", std::chrono::milliseconds(300),
                                         std::chrono::milliseconds(300));
  EXPECT_FALSE(outcome.ready);
  EXPECT_NE(outcome.why.find("(sent SIGTERM; SIGKILL after 300 ms; killed by signal 9)"),
            std::string::npos)
      << outcome.why;
  EXPECT_EQ(::waitpid(outcome.pid, nullptr, WNOHANG), -1);
}

// The owner stops waiting (its process is exiting): a successor not known to
// be ready is asked to drain, never SIGKILLed.
TEST_P(SuccessorTest, DestroyedWhilePendingSendsSigtermNotSigkill) {
  UniqueFd socket = listeningSocket();
  pid_t pid = -1;
  {
    EventLoop loop(GetParam());
    Successor successor(&loop);
    ASSERT_TRUE(successor.start({socket.get()},
                                {.program = child_, .argv = {child_, "hang", outFile_}},
                                [](const Successor::Outcome&) {}));
    pid = successor.pid();
    ASSERT_GT(pid, 0);
  }
  int status = 0;
  ASSERT_TRUE(test::waitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }))
      << "the successor still runs";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

// A ready successor stays reachable: signal() reaches it, watchExit()
// reports its end, and it is reaped.
TEST_P(SuccessorTest, AReadyOneIsSignalledAndItsExitReported) {
  UniqueFd socket = listeningSocket();
  EventLoop loop(GetParam());
  armWatchdog(loop);
  Successor successor(&loop);
  pid_t readyPid = -1;
  pid_t exitedPid = -1;
  std::string status;
  ASSERT_TRUE(successor.start({socket.get()},
                              {.program = child_, .argv = {child_, "drain", outFile_}},
                              [&](const Successor::Outcome& o) {
                                EXPECT_TRUE(o.ready) << o.why;
                                readyPid = o.pid;
                                EXPECT_EQ(successor.pid(), o.pid);
                                EXPECT_TRUE(successor.signal(SIGTERM));
                                successor.watchExit([&](pid_t pid, const std::string& how) {
                                  exitedPid = pid;
                                  status = how;
                                  loop.quit();
                                });
                              }));
  loop.loop();
  EXPECT_FALSE(timedOut_);
  EXPECT_GT(readyPid, 0);
  EXPECT_EQ(exitedPid, readyPid);
  EXPECT_EQ(status, "exited with status 7");
  EXPECT_EQ(successor.pid(), -1);
  EXPECT_FALSE(successor.signal(SIGTERM));
  EXPECT_EQ(::waitpid(readyPid, nullptr, WNOHANG), -1);  // reaped
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
