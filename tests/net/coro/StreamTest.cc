// The coroutine layer over real connections: serve() with a coroutine per
// connection, Stream reads and writes, half-close, back-pressure, timeouts,
// stop requests, exceptions, the loop going away with coroutines suspended,
// and connect() on a TcpClient; over both backends.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/coro/DrainToken.h"
#include "tests/net/TestUtil.h"

// Heap allocations made by each thread, for the steady-state test.
namespace {
thread_local uint64_t t_allocations = 0;
}

void* operator new(std::size_t size) {
  ++t_allocations;
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace libnet;
using namespace libnet::coro;
using namespace std::chrono_literals;

namespace {

using test::BlockingClient;
using test::runSync;
using test::waitUntil;

// What the handlers report; a member of the fixture, so it outlives the
// server's connections (the handlers are kept until the loop goes).
struct Report {
  std::atomic<int> entered{0};
  std::atomic<int> finished{0};
  std::atomic<int> eof{0};
  std::atomic<int> closed{0};
  std::atomic<int> cancelled{0};
  std::atomic<int> timedOut{0};
  std::atomic<int> destroyed{0};
  std::atomic<size_t> handedOver{0};
  std::atomic<size_t> maxQueued{0};
  std::stop_source stop;
};

struct CountOnExit {
  explicit CountOnExit(std::atomic<int>* counter) : counter_(counter) {}
  ~CountOnExit() { ++*counter_; }
  std::atomic<int>* counter_;
};

class StreamTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    // Before the loop: the test that destroys it compares against this.
    fdBaselineNoLoop_ = test::openFdCount();
    thread_ = std::make_unique<EventLoopThread>(nullptr, "server", GetParam());
    loop_ = thread_->startLoop();
    fdBaseline_ = test::openFdCount();
  }

  void TearDown() override {
    stopServer();
    thread_.reset();
  }

  void startServer(ConnectionHandler handler, bool noDelay = false,
                   const StreamOptions& options = {}) {
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "coro",
                                            TcpServer::Options{.tcpNoDelay = noDelay});
      serve(*server_, std::move(handler), options);
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  void stopServer() {
    if (server_) runSync(loop_, [&] { server_.reset(); });
  }

  static void raiseFdLimit() {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }

  Report report_;
  int fdBaselineNoLoop_ = 0;
  int fdBaseline_ = 0;
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<TcpServer> server_;
  SocketAddress address_;
};

Task<> echo(Stream stream) {
  while (Input in = co_await stream.read()) {
    if (co_await stream.write(&*in) != Errc::kOk) break;
  }
}

TEST_P(StreamTest, Echo) {
  startServer(echo);
  BlockingClient client(address_);
  for (int i = 0; i < 100; ++i) {
    const std::string message = "message " + std::to_string(i);
    ASSERT_TRUE(client.sendAll(message));
    ASSERT_EQ(client.recvExactly(message.size()), message);
  }
}

TEST_P(StreamTest, ReplyAfterThePeersHalfClose) {
  startServer([](Stream stream) -> Task<> {
    size_t total = 0;
    Input in = co_await stream.read();
    for (; in; in = co_await stream.read()) {
      total += in->readableBytes();
      in->retrieveAll();
    }
    if (in.error() != Errc::kEof) co_return;
    // After the end of input: output still goes out.
    co_await sleep(1ms);
    co_await stream.write("got " + std::to_string(total));
  });
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(test::randomBytes(300'000, 7)));
  client.shutdownWrite();
  bool eof = false;
  EXPECT_EQ(client.recvUntilEof(&eof), "got 300000");
  EXPECT_TRUE(eof);
}

TEST_P(StreamTest, LargeTransferEveryByteVerified) {
  startServer(echo);
  BlockingClient client(address_);
  const std::string data = test::randomBytes(16 * 1024 * 1024, 11);
  std::atomic<bool> sent{false};
  std::thread sender([&] { sent = client.sendAll(data); });
  const std::string back = client.recvExactly(data.size());
  sender.join();
  EXPECT_TRUE(sent);
  ASSERT_EQ(back.size(), data.size());
  EXPECT_TRUE(back == data);
}

TEST_P(StreamTest, ReadUntilAndReadAtLeast) {
  startServer([](Stream stream) -> Task<> {
    Input line = co_await stream.readUntil("\r\n", 64);
    if (line.error() == Errc::kTooLong) {
      co_await stream.write("too long\n");
      co_return;
    }
    if (!line) co_return;
    co_await stream.write(line.view());
    line.consume();
    Input fixed = co_await stream.readAtLeast(5);
    if (!fixed) co_return;
    co_await stream.write(fixed.view());
    fixed.consume();
    // What is left after the match stays for the next read.
    Input rest = co_await stream.read();
    if (rest) co_await stream.write(&*rest);
  });
  BlockingClient client(address_);
  for (const char* part : {"hel", "lo\r", "\nab", "cd", "efg"}) ASSERT_TRUE(client.sendAll(part));
  EXPECT_EQ(client.recvExactly(14), "hello\r\nabcdefg");

  BlockingClient tooLong(address_);
  ASSERT_TRUE(tooLong.sendAll(std::string(100, 'x')));
  bool eof = false;
  EXPECT_EQ(tooLong.recvUntilEof(&eof), "too long\n");
  EXPECT_TRUE(eof);
}

TEST_P(StreamTest, ReadMoreWaitsForBytesBeyondTheUnreadOnes) {
  startServer([](Stream stream) -> Task<> {
    // Leaves "ab" unread: read() would return at once; readMore() waits for
    // the next byte, and then has all three.
    Input first = co_await stream.readAtLeast(2);
    if (!first) co_return;
    co_await stream.write("+");  // the client sends the next byte only now
    Input more = co_await stream.readMore();
    if (!more) co_return;
    co_await stream.write(std::to_string(more.size()) + ":" + std::string(more.view()));
  });
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("ab"));
  ASSERT_EQ(client.recvExactly(1), "+");
  ASSERT_TRUE(client.sendAll("c"));
  EXPECT_EQ(client.recvExactly(5), "3:abc");
}

TEST_P(StreamTest, PeerClosesWhileACoroutineAwaitsARead) {
  startServer([this](Stream stream) -> Task<> {
    ++report_.entered;
    Input in = co_await stream.read();
    if (in.error() == Errc::kEof) ++report_.eof;
    if (in.error() == Errc::kClosed) ++report_.closed;
    ++report_.finished;
  });
  {
    BlockingClient client(address_);
    ASSERT_TRUE(waitUntil([&] { return report_.entered == 1; }));
    client.close();  // FIN
    ASSERT_TRUE(waitUntil([&] { return report_.finished == 1; }));
    EXPECT_EQ(report_.eof, 1);
  }
  {
    BlockingClient client(address_);
    ASSERT_TRUE(waitUntil([&] { return report_.entered == 2; }));
    client.resetConnection();  // RST
    ASSERT_TRUE(waitUntil([&] { return report_.finished == 2; }));
    EXPECT_EQ(report_.closed, 1);
  }
  stopServer();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == fdBaseline_; }));
}

// The writer is held by the connection's own output limit, the one that
// also stops its reading (TcpConnection::maxQueuedOutput()).
TEST_P(StreamTest, APeerThatNeverReadsSuspendsTheWriterWithBoundedMemory) {
  constexpr size_t kChunk = 64 * 1024;
  constexpr size_t kTotal = 100 * 1024 * 1024;
  constexpr size_t kHighWater = 1024 * 1024;
  startServer([this](Stream stream) -> Task<> {
    stream.connection()->setMaxQueuedOutput(kHighWater);
    std::string chunk(kChunk, '\0');
    for (size_t sent = 0; sent < kTotal; sent += kChunk) {
      std::fill(chunk.begin(), chunk.end(), static_cast<char>((sent / kChunk) % 251));
      if (co_await stream.write(chunk) != Errc::kOk) co_return;
      report_.handedOver += kChunk;
      const size_t queued = stream.connection()->queuedOutputBytes();
      if (queued > report_.maxQueued) report_.maxQueued = queued;
    }
    ++report_.finished;
  });
  BlockingClient client(address_, /*rcvbuf=*/64 * 1024);
  // The peer reads nothing: the writer gets past what the kernel buffers
  // hold, then must be suspended, its queue at the connection's limit.
  ASSERT_TRUE(waitUntil([&] { return report_.handedOver >= 2 * kHighWater; }));
  EXPECT_LT(report_.handedOver.load(), kTotal / 2);
  EXPECT_LE(report_.maxQueued.load(), kHighWater);
  // Now read everything, checking every byte.
  size_t received = 0;
  bool intact = true;
  while (received < kTotal) {
    const std::string part = client.recvExactly(std::min<size_t>(kChunk, kTotal - received));
    if (part.empty()) break;
    for (size_t i = 0; i < part.size() && intact; ++i) {
      intact = part[i] == static_cast<char>(((received + i) / kChunk) % 251);
    }
    received += part.size();
  }
  EXPECT_EQ(received, kTotal);
  EXPECT_TRUE(intact);
  ASSERT_TRUE(waitUntil([&] { return report_.finished == 1; }));
  EXPECT_LE(report_.maxQueued.load(), kHighWater);
}

TEST_P(StreamTest, TimeoutFiresMidRead) {
  startServer([](Stream stream) -> Task<> {
    Input in = co_await withTimeout(100ms, stream.readAtLeast(10));
    if (in.error() == Errc::kTimedOut) {
      // What did arrive is still there.
      co_await stream.write("timed out with " + std::to_string(stream.input().readableBytes()));
    }
  });
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("12345"));
  bool eof = false;
  EXPECT_EQ(client.recvUntilEof(&eof), "timed out with 5");
  EXPECT_TRUE(eof);
}

TEST_P(StreamTest, StopRequestedWhileAThousandCoroutinesAreSuspended) {
  raiseFdLimit();
  constexpr int kClients = 1000;
  startServer([this](Stream stream) -> Task<> {
    ++report_.entered;
    Input in = co_await withStop(report_.stop.get_token(), stream.read());
    if (in.error() == Errc::kCancelled) ++report_.cancelled;
  });
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  ASSERT_TRUE(waitUntil([&] { return report_.entered == kClients; }));
  report_.stop.request_stop();  // from this thread, not the loop's
  ASSERT_TRUE(waitUntil([&] { return report_.cancelled == kClients; }));
  // Each coroutine returned, so its connection was closed.
  for (auto& client : clients) {
    bool eof = false;
    EXPECT_EQ(client->recvUntilEof(&eof), "");
    EXPECT_TRUE(eof);
  }
  clients.clear();
  stopServer();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == fdBaseline_; }));
}

// A drain of the server requests every stream's drainToken(): a handler
// waiting for input sees kCancelled, says goodbye and returns, and the drain
// completes once the connections have closed.
TEST_P(StreamTest, DrainRequestsEveryStreamsStop) {
  constexpr int kClients = 3;
  startServer([this](Stream stream) -> Task<> {
    ++report_.entered;
    for (;;) {
      Input in = co_await withStop(drainToken(stream), stream.read());
      if (in.error() == Errc::kCancelled) {
        ++report_.cancelled;
        (void)co_await stream.write("bye");
        co_return;
      }
      if (!in || co_await stream.write(&*in) != Errc::kOk) co_return;
    }
  });
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<BlockingClient>(address_));
    ASSERT_TRUE(clients.back()->sendAll("hi"));
    ASSERT_EQ(clients.back()->recvExactly(2), "hi");
  }
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> drained = done->get_future();
  runSync(loop_, [&] { server_->drain(std::chrono::seconds(30), [done] { done->set_value(); }); });
  for (auto& client : clients) {
    bool eof = false;
    EXPECT_EQ(client->recvUntilEof(&eof), "bye");
    EXPECT_TRUE(eof);
    client->close();
  }
  EXPECT_EQ(report_.cancelled.load(), kClients);
  EXPECT_EQ(drained.wait_for(test::kWait), std::future_status::ready);
}

TEST_P(StreamTest, DestroyingTheServerEndsEverySuspendedRead) {
  raiseFdLimit();
  constexpr int kClients = 1000;
  startServer([this](Stream stream) -> Task<> {
    ++report_.entered;
    Input in = co_await stream.read();
    if (in.error() == Errc::kClosed) ++report_.closed;
  });
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  ASSERT_TRUE(waitUntil([&] { return report_.entered == kClients; }));
  stopServer();
  // The server's loop tears its connections down right after.
  EXPECT_TRUE(waitUntil([&] { return report_.closed == kClients; }));
  clients.clear();
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == fdBaseline_; }));
}

TEST_P(StreamTest, TheLoopGoingAwayDestroysSuspendedCoroutines) {
  constexpr int kClients = 100;
  startServer([this](Stream stream) -> Task<> {
    CountOnExit onExit(&report_.destroyed);
    ++report_.entered;
    co_await stream.write("hello");
    co_await sleep(1h);  // holds its Stream, past its connection's close
  });
  std::vector<std::unique_ptr<BlockingClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(std::make_unique<BlockingClient>(address_));
  ASSERT_TRUE(waitUntil([&] { return report_.entered == kClients; }));
  stopServer();
  EXPECT_EQ(report_.destroyed, 0);
  thread_.reset();  // the loop goes with a hundred coroutines asleep
  EXPECT_EQ(report_.destroyed, kClients);
  clients.clear();
  EXPECT_EQ(test::openFdCount(), fdBaselineNoLoop_);
}

TEST_P(StreamTest, AnExceptionClosesOnlyItsConnection) {
  startServer([](Stream stream) -> Task<> {
    while (Input line = co_await stream.readUntil("\n")) {
      if (line.view() == "boom\n") throw std::runtime_error("asked to throw");
      co_await stream.write(line.view());
      line.consume();
    }
  });
  BlockingClient good(address_);
  BlockingClient bad(address_);
  ASSERT_TRUE(good.sendAll("one\n"));
  EXPECT_EQ(good.recvExactly(4), "one\n");
  ASSERT_TRUE(bad.sendAll("boom\n"));
  bool eof = false;
  EXPECT_EQ(bad.recvUntilEof(&eof), "");
  EXPECT_TRUE(eof);
  ASSERT_TRUE(good.sendAll("two\n"));
  EXPECT_EQ(good.recvExactly(4), "two\n");
  BlockingClient later(address_);
  ASSERT_TRUE(later.sendAll("three\n"));
  EXPECT_EQ(later.recvExactly(6), "three\n");
}

// Thrown by a connection's code: derives from nothing.
struct NotAnException {
  int code = 7;
};

[[noreturn]] void throwKind(int kind) {
  switch (kind) {
    case 0:
      throw std::runtime_error("asked to throw");
    case 1:
      throw 42;
    case 2:
      throw std::string("asked to throw");
    default:
      throw NotAnException{};
  }
}

// Anything thrown (std::exception, an int, a string, an object), by the
// handler before its coroutine exists or by the coroutine after it has
// queued output of its own, costs that connection only: the clients after
// it, on every loop (0 and 2 I/O threads), get exactly their own bytes.
TEST_P(StreamTest, AnythingThrownClosesOnlyItsConnection) {
  for (const int threads : {0, 2}) {
    for (int kind = 0; kind < 4; ++kind) {
      for (const bool inCoroutine : {false, true}) {
        SCOPED_TRACE("threads=" + std::to_string(threads) + " kind=" + std::to_string(kind) +
                     (inCoroutine ? " in the coroutine" : " in the handler"));
        runSync(loop_, [&] {
          server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "coro",
                                                TcpServer::Options{.threads = threads});
          // The first connection's code throws; the others echo lines.
          serve(*server_,
                [kind, inCoroutine,
                 first = std::make_shared<std::atomic<bool>>(true)](Stream stream) -> Task<> {
                  const bool throws = first->exchange(false);
                  if (throws && !inCoroutine) throwKind(kind);
                  return [](Stream s, bool throws, int kind) -> Task<> {
                    while (Input line = co_await s.readUntil("\n")) {
                      // Queued output of this connection's own, then the throw.
                      co_await s.write(line.view());
                      if (throws) throwKind(kind);
                      line.consume();
                    }
                  }(std::move(stream), throws, kind);
                });
          server_->start();
        });
        address_ = runSync(loop_, [&] { return server_->listenAddress(); });
        {
          BlockingClient a(address_);
          ASSERT_TRUE(a.sendAll("secret of a\n"));
          bool eof = false;  // or a reset: its line was left unread
          const std::string got = a.recvUntilEof(&eof);
          EXPECT_TRUE(got.empty() || got == "secret of a\n") << got;
        }
        for (int i = 0; i < 4; ++i) {
          BlockingClient b(address_);
          const std::string mine = "line of b" + std::to_string(i) + "\n";
          ASSERT_TRUE(b.sendAll(mine));
          EXPECT_EQ(b.recvExactly(mine.size()), mine);
        }
        stopServer();
      }
    }
  }
}

// A pipelining client: bytes that arrive while the coroutine is suspended
// in a write (its peer not reading yet) are unread but new to it, and
// readMore() must report them instead of waiting for a byte beyond them,
// which such a client never sends. The write is a file, and the stream
// allows one queued file: the writer waits for it to go out, while the
// connection (its output limit off, so that it does not pause reading too)
// goes on reading meanwhile.
TEST_P(StreamTest, ReadMoreReportsBytesThatArrivedDuringASuspendedWrite) {
  constexpr size_t kBig = 8 * 1024 * 1024;
  char path[] = "/tmp/libnet-stream-big-XXXXXX";
  {
    UniqueFd fd(::mkstemp(path));
    ASSERT_TRUE(fd);
    ASSERT_EQ(::ftruncate(fd.get(), kBig), 0);
  }
  const std::string file = path;
  auto conn = std::make_shared<std::weak_ptr<TcpConnection>>();
  startServer(
      [this, conn, file](Stream stream) -> Task<> {
        *conn = stream.connection();
        stream.connection()->setMaxQueuedOutput(0);
        Input first = co_await stream.readAtLeast(5);
        if (!first) co_return;
        first.consume();
        UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd) co_return;
        ++report_.entered;
        // The peer reads nothing yet: suspended here while "second" arrives.
        if (co_await stream.sendFile(std::move(fd), 0, kBig) != Errc::kOk) co_return;
        Input more = co_await stream.readMore();
        const std::string reply = more ? "got:" + std::string(more.view()) : "nothing";
        co_await stream.write(reply);
      },
      /*noDelay=*/false, StreamOptions{.maxQueuedFiles = 1});
  BlockingClient client(address_, /*rcvbuf=*/64 * 1024);
  ASSERT_TRUE(client.sendAll("first"));
  ASSERT_TRUE(waitUntil([&] { return report_.entered == 1; }));
  ASSERT_TRUE(client.sendAll("second"));
  // Kept by the connection before the writer can resume.
  ASSERT_TRUE(waitUntil([&] {
    return runSync(loop_, [&] {
      const TcpConnectionPtr c = conn->lock();
      return c && c->inputBuffer()->readableBytes() == 6;
    });
  }));
  EXPECT_EQ(client.recvExactly(kBig), std::string(kBig, '\0'));
  EXPECT_EQ(client.recvExactly(10), "got:second");
  ::unlink(path);
}

// StreamOptions given to serve() bound every stream it makes.
TEST_P(StreamTest, ServeGivesEveryStreamItsOptions) {
  StreamOptions options;
  options.maxInput = 16;
  options.maxQueuedFiles = 0;  // counts as 1
  startServer(
      [](Stream stream) -> Task<> {
        co_await stream.write(std::to_string(stream.maxInput()) + " " +
                              std::to_string(stream.maxQueuedFiles()) + "\n");
        // readUntil()'s default limit is maxInput.
        Input line = co_await stream.readUntil("\n");
        co_await stream.write(line.error() == Errc::kTooLong ? "too long\n" : "fits\n");
      },
      /*noDelay=*/false, options);
  BlockingClient client(address_);
  EXPECT_EQ(client.recvExactly(5), "16 1\n");
  ASSERT_TRUE(client.sendAll(std::string(32, 'x') + "\n"));
  bool eof = false;
  EXPECT_EQ(client.recvUntilEof(&eof), "too long\n");
  EXPECT_TRUE(eof);
}

// Pipelined file requests: the files queued on a connection (each an open
// fd until it is sent) are bounded by maxQueuedFiles(), however many
// requests the client has sent and however little it reads.
TEST_P(StreamTest, PipelinedFileRequestsHoldABoundedNumberOfFds) {
  constexpr int kRequests = 3000;
  constexpr size_t kFileSize = 100;
  constexpr size_t kMaxQueuedFiles = 16;  // the stream's default
  char path[] = "/tmp/libnet-stream-files-XXXXXX";
  {
    UniqueFd fd(::mkstemp(path));
    ASSERT_TRUE(fd);
    ASSERT_EQ(::write(fd.get(), std::string(kFileSize, 'f').data(), kFileSize),
              static_cast<ssize_t>(kFileSize));
  }
  const std::string file = path;
  startServer([this, file](Stream stream) -> Task<> {
    Buffer head;
    while (Input line = co_await stream.readUntil("\n")) {
      line.consume();
      UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd) co_return;
      head.append("F:");
      if (co_await stream.sendFile(std::move(fd), 0, kFileSize, &head) != Errc::kOk) co_return;
      // Held here: every fd the process has open, the queued files included.
      report_.maxQueued = std::max<size_t>(report_.maxQueued, test::openFdCount());
      ++report_.finished;
    }
  });
  const size_t baseline = static_cast<size_t>(test::openFdCount());
  BlockingClient client(address_, /*rcvbuf=*/16 * 1024);
  std::string requests;
  for (int i = 0; i < kRequests; ++i) requests += "GET\n";
  ASSERT_TRUE(client.sendAll(requests));
  const std::string answers = client.recvExactly(kRequests * (2 + kFileSize));
  EXPECT_EQ(answers.size(), kRequests * (2 + kFileSize));
  EXPECT_EQ(report_.finished.load(), kRequests);
  ::unlink(path);
  // The client's socket, the server's side of it, and the queued files.
  EXPECT_LE(report_.maxQueued.load(), baseline + 2 + kMaxQueuedFiles);
}

TEST_P(StreamTest, SteadyStateReadsAndWritesAllocateNothing) {
  // TCP_NODELAY: without it, Nagle and the client's delayed ACK make each
  // round trip on io_uring take milliseconds (the test would take seconds).
  startServer(echo, /*noDelay=*/true);
  BlockingClient client(address_);
  const std::string message(1000, 'm');
  auto roundTrips = [&](int n) {
    for (int i = 0; i < n; ++i) {
      if (!client.sendAll(message) || client.recvExactly(message.size()) != message) return false;
    }
    return true;
  };
  // Warm up: buffers, pools, the ring, and on io_uring the connection's
  // first receive, limited to a share of the ring until the peer is seen to
  // wait for its answers (UringConnectionIo::armRecv): its end, 65 messages
  // in, cuts a message in two, and the storage the halves pass through
  // settles over the next hundred or so.
  ASSERT_TRUE(roundTrips(200));
  const auto before = runSync(loop_, [] { return std::pair(t_allocations, frameAllocations()); });
  ASSERT_TRUE(roundTrips(2000));
  const auto after = runSync(loop_, [] { return std::pair(t_allocations, frameAllocations()); });
  EXPECT_EQ(after.second - before.second, 0u) << "coroutine frames";
  // Nothing per message (that would be 2000 or more). runSync's own functor
  // is made on this thread, not the loop's. A loaded machine can make a
  // send partial for the first time in the run, and the loop's BufferPool
  // then lends its first output block: a one-time allocation or two.
  EXPECT_LT(after.first - before.first, 10u) << "heap allocations on the loop thread";
}

// connect() runs on a loop of the test thread.
class ConnectTest : public StreamTest {};

struct ConnectOutcome {
  Errc error = Errc::kCancelled;
  int sysError = -1;
  std::string reply;
};

Task<> connectAndPing(EventLoop* loop, TcpClient* client, Duration timeout, ConnectOutcome* out) {
  ConnectResult r = co_await connect(*client, timeout);
  out->error = r.error;
  out->sysError = r.sysError;
  if (r) {
    co_await r.stream.write("ping");
    if (Input in = co_await r.stream.readAtLeast(4)) out->reply = std::string(in.view());
  }
  loop->quit();
}

TEST_P(ConnectTest, ConnectsWritesAndReads) {
  startServer(echo);
  EventLoop loop(GetParam());
  TcpClient client(&loop, address_, "client");
  ConnectOutcome out;
  spawn(&loop, connectAndPing(&loop, &client, 5s, &out));
  loop.runAfter(test::kWait, [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(out.error, Errc::kOk);
  EXPECT_EQ(out.reply, "ping");
}

TEST_P(ConnectTest, ARefusedConnectEndsWithItsErrno) {
  InetAddress closedPort;
  {
    // A port that was just free: nothing listens there.
    UniqueFd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    InetAddress any(0, true);
    ASSERT_EQ(::bind(probe.get(), any.sockAddr(), any.sockLen()), 0);
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    ::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    closedPort = InetAddress(ntohs(bound.sin_port), true);
  }
  EventLoop loop(GetParam());
  TcpClient client(&loop, closedPort, "client");
  ConnectOutcome out;
  spawn(&loop, connectAndPing(&loop, &client, 5s, &out));
  loop.runAfter(test::kWait, [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(out.error, Errc::kConnectFailed);
  EXPECT_EQ(out.sysError, ECONNREFUSED);
}

TEST_P(ConnectTest, AConnectThatHangsTimesOut) {
  // A listener whose accept queue is full and that never accepts: the
  // kernel drops further SYNs, so a connect neither succeeds nor fails.
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  InetAddress any(0, true);
  ASSERT_EQ(::bind(listener.get(), any.sockAddr(), any.sockLen()), 0);
  ASSERT_EQ(::listen(listener.get(), 0), 0);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &len);
  const InetAddress target(ntohs(bound.sin_port), true);
  std::vector<std::unique_ptr<BlockingClient>> fillers;
  // Backlog 0 queues one connection; the next SYNs are dropped.
  fillers.push_back(std::make_unique<BlockingClient>(target));
  EventLoop loop(GetParam());
  TcpClient client(&loop, target, "client");
  ConnectOutcome out;
  spawn(&loop, connectAndPing(&loop, &client, 200ms, &out));
  loop.runAfter(test::kWait, [&] { loop.quit(); });
  loop.loop();
  EXPECT_EQ(out.error, Errc::kTimedOut);
}

// Connects to `address` as fast as it can until destroyed
// (test::ConnectStorm), and with each connection does one of: send half a
// line and keep the connection open for a while (its coroutine stays
// suspended in a read); send whole lines and close without reading the
// answers; send half a line and reset.
std::unique_ptr<test::ConnectStorm> lineStorm(const SocketAddress& address) {
  constexpr size_t kKeptOpen = 16;
  // A ring of connections with half a line, on the storm's thread.
  auto kept = std::make_shared<std::vector<UniqueFd>>(kKeptOpen);
  return std::make_unique<test::ConnectStorm>(address, [kept](int i, UniqueFd fd) {
    using test::ConnectStorm;
    switch (i % 3) {
      case 0:
        ConnectStorm::sendIgnoringErrors(fd, "half a li");
        (*kept)[static_cast<size_t>(i / 3) % kKeptOpen] = std::move(fd);  // closes the oldest
        break;
      case 1:
        ConnectStorm::sendIgnoringErrors(fd, "one\ntwo\nthree\n");
        break;
      default:
        ConnectStorm::sendIgnoringErrors(fd, "half a li");
        ConnectStorm::resetOnClose(fd);
        break;
    }
  });
}

// serve() on a server with two I/O loops that accept on sockets of their own,
// destroyed 20 times in a row while a storm of connections sends it whole
// lines, half lines and resets: once the server's destructor has returned,
// every connection's coroutine has ended (its I/O loops are gone), none is
// left to run on a dead loop, and in the end every fd is closed.
TEST_P(StreamTest, DestroyingAServerWithIoThreadsDuringAConnectStormEndsEveryCoroutine) {
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto entered = std::make_shared<std::atomic<int>>(0);
    auto exited = std::make_shared<std::atomic<int>>(0);
    auto answered = std::make_shared<std::atomic<int>>(0);
    runSync(loop_, [&] {
      server_ = std::make_unique<TcpServer>(loop_, InetAddress(0, true), "coro-storm",
                                            TcpServer::Options{.threads = 2});
      serve(*server_, [entered, exited, answered](Stream stream) -> Task<> {
        CountOnExit onExit(exited.get());
        ++*entered;
        while (Input line = co_await stream.readUntil("\n", 1024)) {
          if (co_await stream.write("ok\n") != Errc::kOk) break;
          ++*answered;
          line.consume();
        }
      });
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
    {
      const auto storm = lineStorm(address_);
      // Mid-storm: lines are being answered on both loops.
      ASSERT_TRUE(waitUntil([&] { return answered->load() >= 20; }))
          << "only " << answered->load() << " lines answered";
      stopServer();
      EXPECT_EQ(exited->load(), entered->load()) << "coroutines outlived the server's I/O loops";
    }
  }
  EXPECT_TRUE(waitUntil([&] { return test::openFdCount() == fdBaseline_; }))
      << test::openFdCount() << " fds open, " << fdBaseline_ << " before";
}

INSTANTIATE_TEST_SUITE_P(Backends, StreamTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);
INSTANTIATE_TEST_SUITE_P(Backends, ConnectTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
