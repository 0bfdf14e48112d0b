// Inspector: the listings of a server with known connections (peers and
// byte counts), their cap, a stuck loop that neither blocks the listing's
// loop nor holds its answer past the timeout, the peer check (a peer
// outside the allowed ones gets 403), and CPU profiles: one that
// google-pprof reads and that names libnet's functions, a second one
// refused while the first runs, bad lengths, and the private files removed
// when the profile ends or its client leaves.
#include "net/inspect/Inspector.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/CountDownLatch.h"
#include "gtest/gtest.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/TcpServer.h"
#include "net/http/HttpResponse.h"
#include "net/http/ResponseWriter.h"
#include "net/inspect/CpuProfiler.h"
#include "tests/net/TestUtil.h"

namespace libnet::inspect {
namespace {

using http::HttpRequest;
using http::HttpResponse;

// A writer that keeps the answer for the test to look at.
class FakeWriter final : public http::ResponseWriter {
 public:
  explicit FakeWriter(EventLoop* loop) : loop_(loop) {}

  void respond(HttpResponse response) override {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = response.status();
    body_ = response.body();
    answered_.set_value();
  }
  void start(HttpResponse) override { ADD_FAILURE() << "the inspector streams nothing"; }
  bool write(std::string) override { return false; }
  void finish() override {}
  void abort() override { aborted_ = true; }
  void setWritableCallback(std::function<void()>) override {}
  void setClosedCallback(std::function<void()> callback) override {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = std::move(callback);
  }
  [[nodiscard]] bool closed() const override { return false; }
  [[nodiscard]] size_t queuedBytes() const override { return 0; }
  [[nodiscard]] EventLoop* loop() const override { return loop_; }

  // Waits (bounded) for the answer.
  bool wait(std::chrono::seconds limit = test::kWait) {
    return future_.wait_for(limit) == std::future_status::ready;
  }
  int status() {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }
  std::string body() {
    std::lock_guard<std::mutex> lock(mutex_);
    return body_;
  }
  // The client goes away: runs the closed callback on the loop.
  void leave() {
    std::function<void()> closed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed = std::move(closed_);
    }
    if (closed) test::runSync(loop_, closed);
  }
  bool aborted() const { return aborted_; }

 private:
  EventLoop* const loop_;
  std::mutex mutex_;
  int status_ = 0;
  std::string body_;
  std::function<void()> closed_;
  std::promise<void> answered_;
  std::future<void> future_ = answered_.get_future();
  std::atomic<bool> aborted_{false};
};

// A connected socket from `source` (a loopback address) to `server`.
UniqueFd connectFrom(const char* source, const SocketAddress& server) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &local.sin_addr);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local), 0);
  EXPECT_EQ(::connect(fd.get(), server.sockAddr(), server.sockLen()), 0);
  return fd;
}

std::string localAddressOf(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return SocketAddress::fromSockAddr(ss, len).toString();
}

class InspectorTest : public test::EchoServerTest {
 protected:
  // An echo server on two I/O loops that keeps its connections for the
  // requests (a request's peer is its connection's).
  void start() {
    startServer(
        [this](TcpServer& server) {
          server.setConnectionCallback([this](const TcpConnectionPtr& conn) {
            std::lock_guard<std::mutex> lock(connsMutex_);
            if (conn->connected()) conns_.push_back(conn);
          });
        },
        {.threads = 2});
  }

  // The server's connection whose peer is `peer`.
  TcpConnectionPtr connectionFrom(const std::string& peer) {
    TcpConnectionPtr found;
    test::waitUntil([&] {
      std::lock_guard<std::mutex> lock(connsMutex_);
      for (const TcpConnectionPtr& c : conns_) {
        if (c->peerAddress().toString() == peer) found = c;
      }
      return found != nullptr;
    });
    return found;
  }

  // GET `target` from the client on `from`, served by `inspector` on the
  // server's loop; the writer holds the answer (or will).
  std::shared_ptr<FakeWriter> get(Inspector& inspector, const std::string& target,
                                  const TcpConnectionPtr& from) {
    auto writer = std::make_shared<FakeWriter>(loop_);
    HttpRequest request;
    EXPECT_EQ(request.assign(http::Method::kGet, http::Version::kHttp11, target), 0);
    request.setConnection(from);
    EXPECT_TRUE(test::runSync(loop_, [&] { return inspector.serve(request, writer); }));
    return writer;
  }

  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(connsMutex_);
      conns_.clear();
    }
    EchoServerTest::TearDown();
  }

  std::mutex connsMutex_;
  std::vector<TcpConnectionPtr> conns_;
};

// The lines of `text` that list a connection (after the header line).
std::vector<std::string> connectionLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  bool listing = false;
  while (std::getline(in, line)) {
    if (listing) lines.push_back(line);
    if (line.starts_with("peer ")) listing = true;
  }
  return lines;
}

// A client holding 3 connections, each having echoed a different number of
// bytes: 3 listed, each with its peer and its bytes in and out.
TEST_P(InspectorTest, ListsEachConnectionWithItsPeerAndBytes) {
  start();
  std::vector<std::unique_ptr<test::BlockingClient>> clients;
  for (size_t n : {10, 200, 3000}) {
    clients.push_back(std::make_unique<test::BlockingClient>(address_));
    ASSERT_TRUE(clients.back()->sendAll(std::string(n, 'x')));
    ASSERT_EQ(clients.back()->recvExactly(n).size(), n);
  }
  Inspector inspector({});
  inspector.addServer(server_.get());
  auto writer =
      get(inspector, "/debug/connections", connectionFrom(localAddressOf(clients[0]->fd())));
  ASSERT_TRUE(writer->wait());
  EXPECT_EQ(writer->status(), 200);
  const std::string text = writer->body();
  EXPECT_TRUE(text.starts_with("3 connections, 3 listed (at most 10000 are)\n")) << text;
  const std::vector<std::string> lines = connectionLines(text);
  ASSERT_EQ(lines.size(), 3U) << text;
  for (size_t i = 0; i < clients.size(); ++i) {
    const std::string peer = localAddressOf(clients[i]->fd());
    const std::string bytes = std::to_string(std::vector<size_t>{10, 200, 3000}[i]);
    bool found = false;
    for (const std::string& line : lines) {
      std::istringstream fields(line);
      std::string p, age, in, out, queued, loop, name;
      fields >> p >> age >> in >> out >> queued >> loop >> name;
      if (p != peer) continue;
      found = true;
      EXPECT_EQ(in, bytes) << line;
      EXPECT_EQ(out, bytes) << line;
      EXPECT_EQ(queued, "0") << line;
      EXPECT_TRUE(loop == "test/0" || loop == "test/1") << line;
      EXPECT_TRUE(name.starts_with("test#")) << line;
    }
    EXPECT_TRUE(found) << peer << " not listed in\n" << text;
  }
}

TEST_P(InspectorTest, ListsAtMostTheCapAndSaysHowManyThereAre) {
  start();
  std::vector<std::unique_ptr<test::BlockingClient>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<test::BlockingClient>(address_));
  ASSERT_TRUE(test::waitUntil([&] { return server_->connectionCount() == 3; }));
  Inspector inspector({.maxConnectionsListed = 2});
  inspector.addServer(server_.get());
  auto writer =
      get(inspector, "/debug/connections", connectionFrom(localAddressOf(clients[0]->fd())));
  ASSERT_TRUE(writer->wait());
  EXPECT_TRUE(writer->body().starts_with("3 connections, 2 listed (at most 2 are)\n"))
      << writer->body();
  EXPECT_EQ(connectionLines(writer->body()).size(), 2U);
}

TEST_P(InspectorTest, ListsEachLoopWithItsThreadBackendAndConnections) {
  start();
  std::vector<std::unique_ptr<test::BlockingClient>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<test::BlockingClient>(address_));
  ASSERT_TRUE(test::waitUntil([&] { return server_->connectionCount() == 3; }));
  Inspector inspector({});
  inspector.addServer(server_.get());
  auto writer = get(inspector, "/debug/loops", connectionFrom(localAddressOf(clients[0]->fd())));
  ASSERT_TRUE(writer->wait());
  const std::string text = writer->body();
  ASSERT_TRUE(text.starts_with("2 loops\n")) << text;
  const std::string backend = GetParam() == PollerKind::kEpoll ? "epoll" : "uring";
  size_t connections = 0;
  for (size_t i = 0; i < 2; ++i) {
    EventLoop* loop = server_->ioLoops()[i];
    const std::string head = "test loop " + std::to_string(i) + ": thread " +
                             std::to_string(loop->threadId()) + ", backend " +
                             std::string(pollerKindName(loop->pollerKind())) + ", connections ";
    const size_t at = text.find(head);
    ASSERT_NE(at, std::string::npos) << head << "\nin\n" << text;
    connections += std::stoul(text.substr(at + head.size()));
  }
  EXPECT_EQ(connections, 3U);
  EXPECT_NE(text.find("turns "), std::string::npos);
  EXPECT_NE(text.find("lag p50 "), std::string::npos);
  EXPECT_EQ(pollerKindName(server_->ioLoops()[0]->pollerKind()), backend);
}

// One loop stuck in a callback: the listing's own loop does not block for
// it (no blocking wait counted), and the answer comes at the gather
// timeout, naming the loop that did not answer and listing the other's.
TEST_P(InspectorTest, AStuckLoopNeitherBlocksNorHoldsTheListing) {
  start();
  test::BlockingClient client(address_);
  ASSERT_TRUE(test::waitUntil([&] { return server_->connectionCount() == 1; }));
  EventLoop* stuck = server_->ioLoops()[0];
  // Shared: the stuck functor may still be returning from its wait when
  // the test ends.
  auto entered = std::make_shared<CountDownLatch>(1);
  auto release = std::make_shared<CountDownLatch>(1);
  stuck->runInLoop([entered, release] {
    entered->countDown();
    EXPECT_TRUE(release->waitFor(test::kWait));
  });
  ASSERT_TRUE(entered->waitFor(test::kWait));
  Inspector inspector({.gatherTimeout = std::chrono::milliseconds(200)});
  inspector.addServer(server_.get());
  const uint64_t waitsBefore = loop_->metrics().blockingWaits;
  auto writer = get(inspector, "/debug/loops", connectionFrom(localAddressOf(client.fd())));
  const bool answered = writer->wait();
  release->countDown();
  ASSERT_TRUE(answered);
  EXPECT_EQ(loop_->metrics().blockingWaits, waitsBefore);
  const std::string text = writer->body();
  EXPECT_NE(text.find("test loop 0: (did not answer within 0.2 s"), std::string::npos) << text;
  EXPECT_NE(text.find("test loop 1: thread "), std::string::npos) << text;
}

TEST(InspectorPeers, LoopbackAndUnixAreAllowedByDefaultOthersAreNot) {
  const Inspector::Options options;
  EXPECT_TRUE(Inspector::allowed(options, InetAddress(*InetAddress::parse("127.0.0.1", 1))));
  EXPECT_TRUE(Inspector::allowed(options, InetAddress(*InetAddress::parse("127.3.2.1", 1))));
  EXPECT_TRUE(Inspector::allowed(options, InetAddress(*InetAddress::parse("::1", 1))));
  EXPECT_TRUE(Inspector::allowed(options, InetAddress(*InetAddress::parse("::ffff:127.0.0.1", 1))));
  EXPECT_TRUE(Inspector::allowed(options, SocketAddress::unixPath("/tmp/x")));
  EXPECT_FALSE(Inspector::allowed(options, InetAddress(*InetAddress::parse("10.0.0.1", 1))));
  EXPECT_FALSE(Inspector::allowed(options, InetAddress(*InetAddress::parse("192.168.1.2", 1))));
  EXPECT_FALSE(Inspector::allowed(options, InetAddress(*InetAddress::parse("2001:db8::1", 1))));
  EXPECT_FALSE(Inspector::allowed(options, InetAddress(*InetAddress::parse("::ffff:10.0.0.1", 1))));
  Inspector::Options remote;
  remote.allowRemote = true;
  EXPECT_TRUE(Inspector::allowed(remote, InetAddress(*InetAddress::parse("10.0.0.1", 1))));
}

// Allowed: 127.0.0.2 only. A request from 127.0.0.1 gets 403; one from
// 127.0.0.2 is served (both are loopback, so the check itself is what
// decides).
TEST_P(InspectorTest, APeerOutsideTheAllowedOnesGets403) {
  start();
  UniqueFd outsider = connectFrom("127.0.0.1", address_);
  UniqueFd insider = connectFrom("127.0.0.2", address_);
  Inspector inspector({.allowedPeers = {*ProxyProtocol::TrustedSource::parse("127.0.0.2")}});
  inspector.addServer(server_.get());
  auto refused = get(inspector, "/debug/loops", connectionFrom(localAddressOf(outsider.get())));
  ASSERT_TRUE(refused->wait());
  EXPECT_EQ(refused->status(), 403);
  auto served = get(inspector, "/debug/loops", connectionFrom(localAddressOf(insider.get())));
  ASSERT_TRUE(served->wait());
  EXPECT_EQ(served->status(), 200);
}

TEST_P(InspectorTest, OtherPathsAreNotTheInspectors) {
  start();
  test::BlockingClient client(address_);
  const TcpConnectionPtr from = connectionFrom(localAddressOf(client.fd()));
  Inspector inspector({});
  auto writer = std::make_shared<FakeWriter>(loop_);
  for (const char* target : {"/", "/debugger", "/hello", "/metrics"}) {
    HttpRequest request;
    ASSERT_EQ(request.assign(http::Method::kGet, http::Version::kHttp11, target), 0);
    request.setConnection(from);
    EXPECT_FALSE(test::runSync(loop_, [&] { return inspector.serve(request, writer); })) << target;
  }
  auto missing = get(inspector, "/debug/nothing", from);
  ASSERT_TRUE(missing->wait());
  EXPECT_EQ(missing->status(), 404);
  auto index = get(inspector, "/debug", from);
  ASSERT_TRUE(index->wait());
  EXPECT_NE(index->body().find("/debug/pprof/profile?seconds=N"), std::string::npos);
}

// Runs `command`, returning its exit status and what it printed.
std::pair<int, std::string> run(const std::string& command) {
  std::string output;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, output};
  char chunk[4096];
  size_t n = 0;
  while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) output.append(chunk, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

std::string testTempDir() {
  const char* dir = ::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A profile of a server under load for a second: google-pprof reads it
// (exit 0) and lists the loop threads' functions among its samples; its private
// file and directory are gone once it was answered.
TEST_P(InspectorTest, AProfileUnderLoadIsReadByPprof) {
  start();
  test::BlockingClient probe(address_);
  const TcpConnectionPtr from = connectionFrom(localAddressOf(probe.fd()));
  Inspector inspector({});
  std::atomic<bool> loading{true};
  std::thread load([&] {
    test::BlockingClient client(address_);
    const std::string message(512, 'm');
    while (loading.load()) {
      if (!client.sendAll(message) || client.recvExactly(message.size()).size() != message.size()) {
        break;
      }
    }
  });
  auto writer = get(inspector, "/debug/pprof/profile?seconds=1", from);
  ASSERT_TRUE(CpuProfiler::running());
  const std::string file = CpuProfiler::currentPath();
  const bool answered = writer->wait();
  loading.store(false);
  load.join();
  ASSERT_TRUE(answered);
  ASSERT_EQ(writer->status(), 200);
  EXPECT_FALSE(CpuProfiler::running());
  EXPECT_FALSE(exists(file));
  EXPECT_FALSE(exists(file.substr(0, file.rfind('/'))));
  const std::string saved = testTempDir() + "/inspector-" + std::to_string(::getpid()) + ".prof";
  {
    std::ofstream out(saved, std::ios::binary);
    out << writer->body();
  }
  const auto [status, text] =
      run("google-pprof --text /proc/" + std::to_string(::getpid()) + "/exe " + saved + " 2>&1");
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("Total: "), std::string::npos) << text;
  // Samples taken on the loop threads (which block the other asynchronous
  // signals): the server's work is in the profile, not only the client's.
  EXPECT_NE(text.find("libnet::EventLoop::loop"), std::string::npos) << text;
  ::unlink(saved.c_str());
}

// While one profile runs, a second is refused with 409 and the reason; the
// first client leaving ends its profile (the answer aborted, the files
// removed) and frees the profiler.
TEST_P(InspectorTest, ASecondProfileIsRefusedAndALeavingClientEndsItsProfile) {
  start();
  test::BlockingClient client(address_);
  const TcpConnectionPtr from = connectionFrom(localAddressOf(client.fd()));
  Inspector inspector({});
  auto first = get(inspector, "/debug/pprof/profile?seconds=60", from);
  ASSERT_TRUE(CpuProfiler::running());
  const std::string file = CpuProfiler::currentPath();
  const std::string dir = file.substr(0, file.rfind('/'));
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700U);
  auto second = get(inspector, "/debug/pprof/profile?seconds=1", from);
  ASSERT_TRUE(second->wait());
  EXPECT_EQ(second->status(), 409);
  EXPECT_NE(second->body().find("already being taken"), std::string::npos) << second->body();
  EXPECT_TRUE(CpuProfiler::running());
  first->leave();
  EXPECT_TRUE(first->aborted());
  EXPECT_FALSE(CpuProfiler::running());
  EXPECT_FALSE(exists(file));
  EXPECT_FALSE(exists(dir));
}

TEST_P(InspectorTest, AProfileLengthOutOfRangeIs400) {
  start();
  test::BlockingClient client(address_);
  const TcpConnectionPtr from = connectionFrom(localAddressOf(client.fd()));
  Inspector inspector({});
  for (const char* bad : {"0", "301", "abc", "", "5s", "-1"}) {
    auto writer = get(inspector, std::string("/debug/pprof/profile?seconds=") + bad, from);
    ASSERT_TRUE(writer->wait());
    EXPECT_EQ(writer->status(), 400) << bad;
    EXPECT_NE(writer->body().find("from 1 to 300"), std::string::npos) << writer->body();
  }
  EXPECT_FALSE(CpuProfiler::running());
}

// The inspector going away with a profile under way stops it and removes
// its files.
TEST_P(InspectorTest, DestroyingTheInspectorEndsItsProfile) {
  start();
  test::BlockingClient client(address_);
  const TcpConnectionPtr from = connectionFrom(localAddressOf(client.fd()));
  std::shared_ptr<FakeWriter> writer;
  std::string file;
  {
    Inspector inspector({});
    writer = get(inspector, "/debug/pprof/profile?seconds=60", from);
    file = CpuProfiler::currentPath();
    ASSERT_TRUE(exists(file));
  }
  EXPECT_FALSE(CpuProfiler::running());
  EXPECT_TRUE(writer->aborted());
  EXPECT_FALSE(exists(file));
}

INSTANTIATE_TEST_SUITE_P(Backends, InspectorTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::inspect
