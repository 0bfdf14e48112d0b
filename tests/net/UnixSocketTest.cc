// TcpServer and TcpClient over Unix domain sockets, on both backends: echo
// over a path and over an abstract name, the socket file's policy (stale
// file replaced, a live server's path and a non-socket refused, two servers
// started at once, the mode applied, the file removed at destruction), peer
// credentials, the coroutine layer, and 10,000 connections held at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/EventLoop.h"
#include "net/SocketAddress.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

using namespace std::chrono_literals;
using test::BlockingClient;
using test::runSync;
using test::waitUntil;

std::optional<struct stat> statOf(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expectEcho(const SocketAddress& address, size_t size = 10) {
  BlockingClient client(address);
  const std::string message = test::randomBytes(size, static_cast<uint32_t>(size));
  ASSERT_TRUE(client.sendAll(message));
  EXPECT_EQ(client.recvExactly(size), message);
}

class UnixSocketTest : public test::EchoServerTest {
 protected:
  void SetUp() override {
    EchoServerTest::SetUp();
    if (IsSkipped()) return;
    // Not TEST_TMPDIR: its paths can be longer than sun_path holds.
    char dir[] = "/tmp/libnet-unix-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    EchoServerTest::TearDown();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string uniqueName() {
    static std::atomic<int> next{0};
    return "libnet-test-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
  }
  // What constructing a TcpServer on the server's loop throws: its errno
  // and message. (Copied out as plain values: a std::system_error shares
  // its message between copies through a count that ThreadSanitizer cannot
  // see, made on one thread and destroyed on another.)
  struct Error {
    int code = 0;
    std::string what;
  };
  std::optional<Error> constructionError(const SocketAddress& address) {
    return runSync(loop_, [&]() -> std::optional<Error> {
      try {
        TcpServer other(loop_, address, "other");
      } catch (const std::system_error& e) {
        return Error{e.code().value(), e.what()};
      }
      return std::nullopt;
    });
  }

  std::string dir_;
};

TEST_P(UnixSocketTest, EchoesOverAPath) {
  const std::string file = path("echo.sock");
  startServer({}, {}, SocketAddress::unixPath(file));
  EXPECT_EQ(address_.toString(), "unix:" + file);
  const std::optional<struct stat> st = statOf(file);
  ASSERT_TRUE(st);
  EXPECT_TRUE(S_ISSOCK(st->st_mode));
  expectEcho(address_);
  expectEcho(address_, 1 << 20);  // many provided buffers on io_uring
}

TEST_P(UnixSocketTest, EchoesOverAnAbstractNameThatNoOtherServerCanTake) {
  const std::string name = uniqueName();
  startServer({}, {}, SocketAddress::unixAbstract(name));
  EXPECT_EQ(address_.toString(), "unix:@" + name);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
  expectEcho(address_);
  const std::optional<Error> error = constructionError(address_);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, EADDRINUSE) << error->what;
  EXPECT_NE(error->what.find("unix:@" + name), std::string::npos) << error->what;
}

TEST_P(UnixSocketTest, ConnectionsKnowBothAddressesAndThePeersCredentials) {
  const std::string file = path("creds.sock");
  std::mutex mutex;
  std::vector<std::string> seen;  // guarded by mutex
  std::optional<ucred> credentials;
  startServer(
      [&](TcpServer& server) {
        server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
          if (!conn->connected()) return;
          std::lock_guard lock(mutex);
          seen = {conn->localAddress().toString(), conn->peerAddress().toString()};
          credentials = conn->peerCredentials();
          conn->send("x");
        });
      },
      {}, SocketAddress::unixPath(file));
  BlockingClient client(address_);
  ASSERT_EQ(client.recvExactly(1), "x");
  std::lock_guard lock(mutex);
  EXPECT_EQ(seen, (std::vector<std::string>{"unix:" + file, "unix:"}));
  ASSERT_TRUE(credentials);
  EXPECT_EQ(credentials->pid, ::getpid());
  EXPECT_EQ(credentials->uid, ::getuid());
  EXPECT_EQ(credentials->gid, ::getgid());
}

TEST_P(UnixSocketTest, ATcpConnectionHasNoPeerCredentials) {
  std::atomic<int> answered{0};
  std::atomic<bool> hadCredentials{true};
  startServer([&](TcpServer& server) {
    server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
      if (!conn->connected()) return;
      hadCredentials = conn->peerCredentials().has_value();
      answered.fetch_add(1);
    });
  });
  BlockingClient client(address_);
  ASSERT_TRUE(waitUntil([&] { return answered.load() == 1; }));
  EXPECT_FALSE(hadCredentials.load());
}

TEST_P(UnixSocketTest, AppliesTheFileMode) {
  const std::string file = path("mode.sock");
  // Not what any usual umask leaves (0755, 0775, 0777).
  startServer({}, {.unixFileMode = 0604}, SocketAddress::unixPath(file));
  const std::optional<struct stat> st = statOf(file);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->st_mode & 07777, 0604u);
  expectEcho(address_);  // root ignores the mode; the server still answers
}

TEST_P(UnixSocketTest, RemovesAStaleSocketFileAndStarts) {
  const std::string file = path("stale.sock");
  {
    // A server that died: its socket file is left, nothing listens on it.
    UniqueFd dead(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const SocketAddress address = SocketAddress::unixPath(file);
    ASSERT_EQ(::bind(dead.get(), address.sockAddr(), address.sockLen()), 0);
  }
  // A second name for the stale file keeps its inode (and its number) from
  // being reused, and tells whether the server unlinked the first.
  const std::string link = path("stale.link");
  ASSERT_EQ(::link(file.c_str(), link.c_str()), 0);
  ASSERT_EQ(statOf(link)->st_nlink, 2u);
  startServer({}, {}, SocketAddress::unixPath(file));
  const std::optional<struct stat> stale = statOf(link);
  const std::optional<struct stat> now = statOf(file);
  ASSERT_TRUE(stale && now);
  EXPECT_EQ(stale->st_nlink, 1u);
  EXPECT_NE(now->st_ino, stale->st_ino);
  EXPECT_TRUE(S_ISSOCK(now->st_mode));
  expectEcho(address_);
}

TEST_P(UnixSocketTest, RefusesALiveServersPathAndLeavesItServing) {
  const std::string file = path("live.sock");
  startServer({}, {}, SocketAddress::unixPath(file));
  const std::optional<struct stat> before = statOf(file);
  ASSERT_TRUE(before);
  const std::optional<Error> error = constructionError(address_);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, EADDRINUSE) << error->what;
  EXPECT_NE(error->what.find(file), std::string::npos) << error->what;
  const std::optional<struct stat> after = statOf(file);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->st_ino, before->st_ino);
  expectEcho(address_);
}

// What constructing a TcpServer on `address` gave, on a thread of its own
// with a loop of `kind`, once every thread counting `start` is there: made,
// or the error. A server made lives until release() (or destruction), so
// that the test can reach it.
class ServerAttempt {
 public:
  ServerAttempt(PollerKind kind, SocketAddress address, std::latch* start)
      : thread_([this, kind, address, start] {
          EventLoop loop(kind);
          std::optional<TcpServer> server;
          start->arrive_and_wait();
          try {
            server.emplace(&loop, address, "attempt");
            made_ = true;
          } catch (const std::system_error& e) {
            code_ = e.code().value();
            what_ = e.what();
          }
          done_.count_down();
          release_.wait();
        }) {}
  ~ServerAttempt() {
    release();
    thread_.join();
  }
  ServerAttempt(const ServerAttempt&) = delete;
  ServerAttempt& operator=(const ServerAttempt&) = delete;

  void release() {
    if (!released_) release_.count_down();
    released_ = true;
  }
  // Whether the attempt has ended (made or failed); what it gave may be
  // read once it has.
  [[nodiscard]] bool ended() const { return done_.try_wait(); }
  bool waitEnded() {
    return test::waitUntil([this] { return ended(); });
  }
  [[nodiscard]] bool made() const { return made_; }
  [[nodiscard]] int code() const { return code_; }
  [[nodiscard]] const std::string& what() const { return what_; }

 private:
  std::latch done_{1};
  std::latch release_{1};
  bool released_ = false;
  bool made_ = false;  // these three are written before done_ is counted down
  int code_ = 0;
  std::string what_;
  std::thread thread_;  // last: starts once the rest is made
};

bool canConnect(const SocketAddress& address) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  return ::connect(fd.get(), address.sockAddr(), address.sockLen()) == 0;
}

// Two servers started at once on one path, many times over: each time
// exactly one runs, reachable at the path, and the other is refused with
// EADDRINUSE. (Without the directory's lock the second's check could find
// the first between its bind and its listen, take its socket for a dead
// one's, remove it and bind: both ran, the first where no client reached.)
TEST_P(UnixSocketTest, TwoServersStartedAtOnceOneRunsTheOtherIsRefused) {
  const SocketAddress address = SocketAddress::unixPath(path("race.sock"));
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    std::latch start(2);
    ServerAttempt a(GetParam(), address, &start);
    ServerAttempt b(GetParam(), address, &start);
    ASSERT_TRUE(a.waitEnded() && b.waitEnded()) << "round " << round;
    ASSERT_NE(a.made(), b.made()) << "round " << round << ": "
                                  << (a.made() ? "both ran" : "neither ran: ") << a.what() << " "
                                  << b.what();
    const ServerAttempt& loser = a.made() ? b : a;
    ASSERT_EQ(loser.code(), EADDRINUSE) << "round " << round << ": " << loser.what();
    ASSERT_TRUE(canConnect(address)) << "round " << round;
  }
}

// The same, made certain: a server between its bind and its listen (the test
// plays it, holding the directory's lock as a starting server does) is not
// taken for a dead one. Another server starting meanwhile waits for the lock
// (and says so), then finds a live server and is refused; the first's file
// is left alone.
TEST_P(UnixSocketTest, AServerBetweenBindAndListenIsNotTakenForStale) {
  const std::string file = path("starting.sock");
  const SocketAddress address = SocketAddress::unixPath(file);
  std::mutex mutex;
  bool waitingSaid = false;
  // Restores the log's level and output however the test ends.
  struct LogCapture {
    LogLevel level = Logger::level();
    ~LogCapture() {
      Logger::setOutput({});
      Logger::setLevel(level);
    }
  } capture;
  Logger::setLevel(LogLevel::kInfo);
  Logger::setOutput([&](std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    waitingSaid = waitingSaid || line.find("waiting for the lock on " + dir_) != line.npos;
  });
  UniqueFd directory(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_EQ(::flock(directory.get(), LOCK_EX), 0);
  UniqueFd starting(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::bind(starting.get(), address.sockAddr(), address.sockLen()), 0);
  const std::optional<struct stat> before = statOf(file);
  std::latch start(1);
  {
    ServerAttempt other(GetParam(), address, &start);
    // Until the other has ended (without the lock: it took the bound socket
    // for stale) or says it waits for the lock.
    EXPECT_TRUE(test::waitUntil([&] {
      std::lock_guard<std::mutex> lock(mutex);
      return waitingSaid || other.ended();
    }));
    ASSERT_EQ(::listen(starting.get(), 16), 0);
    directory.reset();
    ASSERT_TRUE(other.waitEnded());
    EXPECT_FALSE(other.made()) << "the starting server's socket was taken for stale";
    EXPECT_EQ(other.code(), EADDRINUSE) << other.what();
  }
  const std::optional<struct stat> after = statOf(file);
  ASSERT_TRUE(before && after);
  EXPECT_EQ(after->st_ino, before->st_ino);
  EXPECT_TRUE(canConnect(address));
}

TEST_P(UnixSocketTest, RefusesAPathThatIsNotASocketAndLeavesTheFileAlone) {
  const std::string file = path("precious.txt");
  std::ofstream(file) << "not a socket";
  const std::optional<Error> error = constructionError(SocketAddress::unixPath(file));
  ASSERT_TRUE(error);
  EXPECT_NE(error->what.find("not a socket"), std::string::npos) << error->what;
  EXPECT_EQ(readFile(file), "not a socket");
  // A directory is no socket either.
  const std::string directory = path("dir");
  ASSERT_TRUE(std::filesystem::create_directory(directory));
  EXPECT_TRUE(constructionError(SocketAddress::unixPath(directory)));
  EXPECT_TRUE(std::filesystem::is_directory(directory));
}

TEST_P(UnixSocketTest, RemovesItsFileWhenDestroyed) {
  const std::string file = path("gone.sock");
  startServer({}, {}, SocketAddress::unixPath(file));
  ASSERT_TRUE(statOf(file));
  stopServer();
  EXPECT_FALSE(statOf(file));
}

TEST_P(UnixSocketTest, LeavesAFileThatReplacedItsOwn) {
  const std::string file = path("replaced.sock");
  startServer({}, {}, SocketAddress::unixPath(file));
  ASSERT_EQ(::unlink(file.c_str()), 0);
  std::ofstream(file) << "someone else's";
  stopServer();
  EXPECT_EQ(readFile(file), "someone else's");
}

TEST_P(UnixSocketTest, AClientStartedBeforeItsServerRetriesUntilThePathAppears) {
  const SocketAddress address = SocketAddress::unixPath(path("late.sock"));
  EventLoop loop(GetParam());
  TcpClient client(&loop, address, "client", {.initialRetryDelay = 5ms, .maxRetryDelay = 20ms});
  std::vector<int> errors;
  std::string reply;
  std::optional<ucred> credentials;
  SocketAddress peer;
  client.setConnectErrorCallback([&](int error) {
    errors.push_back(error);
    if (errors.size() == 1) startServer({}, {}, address);
  });
  client.setConnectionCallback([&](const TcpConnectionPtr& conn) {
    if (!conn->connected()) return;
    peer = conn->peerAddress();
    credentials = conn->peerCredentials();
    conn->send("ping");
  });
  client.setMessageCallback([&](const TcpConnectionPtr&, Buffer* buffer, Timestamp) {
    reply += buffer->retrieveAllAsString();
    if (reply.size() >= 4) loop.quit();
  });
  client.connect();
  loop.runAfter(test::kWait, [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(reply, "ping");
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors.front(), ENOENT);
  EXPECT_EQ(peer, address);
  ASSERT_TRUE(credentials);
  EXPECT_EQ(credentials->pid, ::getpid());
}

coro::Task<> coroEcho(coro::Stream stream) {
  while (coro::Input in = co_await stream.read()) {
    if (co_await stream.write(&*in) != coro::Errc::kOk) break;
  }
}

coro::Task<> connectAndPing(EventLoop* loop, TcpClient* client, std::string* reply) {
  coro::ConnectResult r = co_await coro::connect(*client, 5s);
  if (r) {
    co_await r.stream.write("coro ping");
    if (coro::Input in = co_await r.stream.readAtLeast(9)) *reply = std::string(in.view());
  }
  loop->quit();
}

TEST_P(UnixSocketTest, CoroutineEchoOverAnAbstractName) {
  startServer([](TcpServer& server) { coro::serve(server, coroEcho); }, {},
              SocketAddress::unixAbstract(uniqueName()));
  EventLoop loop(GetParam());
  TcpClient client(&loop, address_, "client");
  std::string reply;
  coro::spawn(&loop, connectAndPing(&loop, &client, &reply));
  loop.runAfter(test::kWait, [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(reply, "coro ping");
}

TEST_P(UnixSocketTest, TenThousandConnectionsHeldAtOnceEachEchoed) {
  constexpr int kConnections = 10000;
  // This process holds the server's ends, the child (unix_clients_main) the
  // clients': one fd per connection each, plus a margin.
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_max < kConnections + 512) {
    GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is " << limit.rlim_max;
  }
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  const std::string helper = test::testBinary("unix_clients_main");
  ASSERT_FALSE(helper.empty()) << "unix_clients_main not found in the runfiles";

  std::mutex mutex;
  int live = 0;      // guarded by mutex
  int peakLive = 0;  // guarded by mutex
  const std::string file = path("many.sock");
  // With I/O threads: kPerLoop, the default, accepts on one socket and hands
  // over for a Unix path.
  startServer(
      [&](TcpServer& server) {
        server.setConnectionCallback([&](const TcpConnectionPtr& conn) {
          (conn->connected() ? ups_ : downs_).fetch_add(1);
          std::lock_guard lock(mutex);
          live += conn->connected() ? 1 : -1;
          peakLive = std::max(peakLive, live);
        });
      },
      {.threads = 2}, SocketAddress::unixPath(file));
  const test::ChildResult child = test::runChild({helper, file, std::to_string(kConnections)},
                                                 test::currentEnvironment(), 4min);
  ASSERT_EQ(child.exitCode, 0) << child.describe();
  EXPECT_EQ(child.out, "connected=10000 echoed=10000\n");
  ASSERT_TRUE(waitUntil([&] { return downs_.load() == kConnections; }, 60s)) << downs_.load();
  EXPECT_EQ(ups_.load(), kConnections);
  std::lock_guard lock(mutex);
  EXPECT_EQ(peakLive, kConnections);
  const std::vector<TcpServer::LoopStats> stats =
      runSync(loop_, [&] { return server_->loopStats(); });
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_GT(stats[0].accepted, 0u);
  EXPECT_GT(stats[1].accepted, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, UnixSocketTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet
