// pingpong_client: the client side of the muduo book's ping-pong benchmark on
// libnet. <sessions> connections, spread round-robin over <threads> loop
// threads, each send one <blocksize>-byte message once all are connected and
// then echo back whatever arrives. After <time> seconds the client stops and
// prints one line:
//
//   RESULT impl=libnet-<backend> threads=T blocksize=B sessions=S bytes=N
//          messages=M seconds=X mibps=Y
//
// bytes: read by all sessions during the measured window; messages: read
// callbacks; mibps = bytes / seconds / 2^20. Lines "START" and "STOP" mark the
// window as it opens and closes. SIGINT/SIGTERM end a run early: the window
// closes then and the RESULT line covers it (before the start: no result);
// the exit status is 0 either way.
//
// With --coro every session is a coroutine (net/coro/): it connects with
// coro::connect() and echoes with Stream reads and writes; the protocol, the
// output and the measurement are the same.
//
// A session whose connect attempt fails (refused, unreachable, ...) ends the
// run at once: every session is closed, "pingpong_client: connect to
// ADDR:PORT: REASON" goes to stderr and the exit status is 1. So does a run
// whose sessions are not all connected within 60 s.
//
// With --tls-ca FILE every session is TLS, the server's certificate checked
// against FILE and <address>; the clock starts once every handshake is done.
//
//   pingpong_client [--backend epoll|uring|auto] [--coro] [--tls-ca FILE]
//                   <address> <port> <threads> <blocksize> <sessions> <time>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/CountDownLatch.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/EventLoopThreadPool.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/coro/Coro.h"
#include "net/tls/TlsContext.h"
#include "net/tls/TlsLayer.h"
#include "pingpong/Args.h"

using namespace libnet;

namespace {

constexpr const char* kUsage =
    "usage: pingpong_client [--backend epoll|uring|auto] [--coro] [--tls-ca FILE]\n"
    "                       <address> <port> <threads> <blocksize> <sessions> <time>\n"
    "  <sessions> connections over <threads> loop threads ping-pong <blocksize>-byte\n"
    "  messages for <time> seconds, then one RESULT line is printed.\n"
    "  A failed connect ends the run at once with exit status 1.\n"
    "  --coro: every session is a coroutine (connect, read, write) instead of callbacks.\n"
    "  --tls-ca FILE: TLS, trusting the CAs in FILE; the handshakes are not timed.\n"
    "  The LIBNET_POLLER environment variable overrides --backend.\n";

class Client;

// One connection. Lives on its loop's thread (created and destroyed there).
class Session {
 public:
  Session(EventLoop* loop, const InetAddress& server, Client* owner, int id, bool coro,
          const std::shared_ptr<const ConnectionLayer>& tls);

  void connect();
  void start(const std::string& message);
  void stop();

  uint64_t bytesRead() const { return bytesRead_.load(std::memory_order_relaxed); }
  uint64_t messagesRead() const { return messagesRead_.load(std::memory_order_relaxed); }

 private:
  void onConnection(const TcpConnectionPtr& conn);
  void onMessage(const TcpConnectionPtr& conn, Buffer* buffer);
  void reportDown();
  // --coro: connects, then holds the stream until start().
  coro::Task<> connectCoro();
  // --coro: the ping-pong itself, until the connection closes.
  coro::Task<> pingCoro(coro::Stream stream, const std::string* message);

  EventLoop* loop_;
  TcpClient client_;
  const bool coro_;
  coro::Stream stream_;           // --coro: connected, not started yet
  std::stop_source stopConnect_;  // --coro: ends a pending connect
  bool connecting_ = false;       // --coro: connectCoro() is running
  bool pinging_ = false;          // --coro: pingCoro() is running
  bool downReported_ = false;
  Client* owner_;
  std::atomic<bool> counting_{false};
  std::atomic<uint64_t> bytesRead_{0};
  std::atomic<uint64_t> messagesRead_{0};
};

class Client {
 public:
  Client(EventLoop* loop, const InetAddress& server, int threads, size_t blocksize, int sessions,
         double seconds, bool coro, std::shared_ptr<const ConnectionLayer> tls)
      : loop_(loop),
        pool_(loop, "pingpong-client", threads),
        message_(blocksize, '\0'),
        sessionCount_(sessions),
        seconds_(seconds),
        server_(server),
        coro_(coro),
        tls_(std::move(tls)) {
    for (size_t i = 0; i < blocksize; ++i) message_[i] = static_cast<char>(i % 128);
    pool_.start();
  }

  void connectAll() {
    sessions_.resize(static_cast<size_t>(sessionCount_));
    for (int i = 0; i < sessionCount_; ++i) {
      EventLoop* ioLoop = pool_.nextLoop();
      loops_.push_back(ioLoop);
      ioLoop->runInLoop([this, ioLoop, i] {
        sessions_[static_cast<size_t>(i)] =
            std::make_unique<Session>(ioLoop, server_, this, i, coro_, tls_);
        sessions_[static_cast<size_t>(i)]->connect();
      });
    }
  }

  // Session threads report in; the main loop acts once all have.
  void onConnected() {
    if (++connected_ == sessionCount_) loop_->queueInLoop([this] { startClock(); });
  }
  void onDisconnected() {
    if (++disconnected_ == sessionCount_) loop_->queueInLoop([this] { loop_->quit(); });
  }
  // A session thread's connect attempt failed. Safe to queue: the main loop
  // quits only once every session is down, and a stopped session reports no
  // more errors.
  void onConnectFailed(int error) {
    loop_->queueInLoop([this, error] {
      fail("connect to " + server_.toIpPort() + ": " + std::generic_category().message(error));
    });
  }

  // Main loop thread: ends the run as failed, with `message` on stderr. Every
  // session is stopped and closed on its own thread; the main loop quits when
  // the last is down, so no connection outlives the sessions' teardown.
  void fail(std::string_view message) {
    if (stopping_) return;
    stopping_ = true;
    failed_ = true;
    std::cerr << "pingpong_client: " << message << std::endl;
    stopSessions();
  }
  [[nodiscard]] bool failed() const { return failed_; }

  // Main loop thread, on SIGINT/SIGTERM: a run under way ends now and
  // reports what it measured; one still connecting ends without a result.
  void interrupt() {
    if (stopping_) return;
    if (started_) {
      stopAll();
      return;
    }
    stopping_ = true;
    interrupted_ = true;
    stopSessions();
  }
  [[nodiscard]] bool interrupted() const { return interrupted_; }

  void report(const char* impl) {
    uint64_t bytes = 0;
    uint64_t messages = 0;
    for (const auto& session : sessions_) {
      bytes += session->bytesRead();
      messages += session->messagesRead();
    }
    const double seconds = std::chrono::duration<double>(stop_ - start_).count();
    const double mibps = seconds > 0 ? static_cast<double>(bytes) / seconds / 1048576.0 : 0;
    std::printf(
        "RESULT impl=%s threads=%zu blocksize=%zu sessions=%d bytes=%llu messages=%llu "
        "seconds=%.3f mibps=%.2f\n",
        impl, pool_.allLoops().size(), message_.size(), sessionCount_,
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(messages), seconds,
        mibps);
    std::fflush(stdout);
  }

  // Destroys every session on its own loop thread.
  void destroySessions() {
    CountDownLatch done(sessionCount_);
    for (size_t i = 0; i < sessions_.size(); ++i) {
      loops_[i]->runInLoop([this, i, &done] {
        sessions_[i].reset();
        done.countDown();
      });
    }
    done.wait();
  }

  bool connectedAll() const { return connected_.load() == sessionCount_; }
  int connectedCount() const { return connected_.load(); }

 private:
  void startClock() {
    if (stopping_) return;  // failed (timed out) just as the last one connected
    // Markers for a runner that samples the server's CPU time over exactly
    // the measured window.
    std::printf("START\n");
    std::fflush(stdout);
    start_ = MonoClock::now();
    started_ = true;
    for (size_t i = 0; i < sessions_.size(); ++i) {
      loops_[i]->runInLoop([this, i] { sessions_[i]->start(message_); });
    }
    loop_->runAfter(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds_)),
                    [this] { stopAll(); });
  }

  void stopAll() {
    if (stopping_) return;
    stopping_ = true;
    stop_ = MonoClock::now();
    std::printf("STOP\n");
    std::fflush(stdout);
    stopSessions();
  }

  void stopSessions() {
    // Queued behind each session's creation on the same loop: never null.
    for (size_t i = 0; i < sessions_.size(); ++i) {
      loops_[i]->runInLoop([this, i] { sessions_[i]->stop(); });
    }
  }

  EventLoop* loop_;
  EventLoopThreadPool pool_;
  std::string message_;
  const int sessionCount_;
  const double seconds_;
  const InetAddress server_;
  const bool coro_;
  const std::shared_ptr<const ConnectionLayer> tls_;  // null: plain TCP
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<EventLoop*> loops_;
  std::atomic<int> connected_{0};
  std::atomic<int> disconnected_{0};
  bool stopping_ = false;     // main loop thread only
  bool failed_ = false;       // main loop thread only
  bool started_ = false;      // main loop thread only
  bool interrupted_ = false;  // main loop thread only
  MonoTime start_{};
  MonoTime stop_{};
};

Session::Session(EventLoop* loop, const InetAddress& server, Client* owner, int id, bool coro,
                 const std::shared_ptr<const ConnectionLayer>& tls)
    : loop_(loop),
      client_(loop, server, "session" + std::to_string(id),
              TcpClient::Options{.tcpNoDelay = true, .layer = tls}),
      coro_(coro),
      owner_(owner) {
  if (coro_) return;  // coro::connect() sets the callbacks
  client_.setConnectionCallback([this](const TcpConnectionPtr& conn) { onConnection(conn); });
  client_.setMessageCallback(
      [this](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) { onMessage(conn, buffer); });
  client_.setConnectErrorCallback([this](int error) {
    // No retry: a benchmark against a server that refuses is over. The
    // owner then stops every session, this one included.
    client_.stop();
    owner_->onConnectFailed(error);
  });
}

void Session::connect() {
  if (!coro_) {
    client_.connect();
    return;
  }
  connecting_ = true;
  coro::spawn(loop_, connectCoro(), stopConnect_.get_token());
}

coro::Task<> Session::connectCoro() {
  // The client's own 60 s limit ends a run whose sessions do not connect.
  coro::ConnectResult result = co_await coro::connect(client_, std::chrono::seconds(120));
  connecting_ = false;
  if (!result) {
    // No retry, as in callback mode: the owner then stops every session.
    if (result.error == coro::Errc::kConnectFailed) owner_->onConnectFailed(result.sysError);
    reportDown();
    co_return;
  }
  stream_ = std::move(result.stream);
  owner_->onConnected();
}

coro::Task<> Session::pingCoro(coro::Stream stream, const std::string* message) {
  co_await stream.write(*message);
  while (coro::Input in = co_await stream.read()) {
    if (!counting_.load(std::memory_order_relaxed)) break;
    bytesRead_.fetch_add(in->readableBytes(), std::memory_order_relaxed);
    messagesRead_.fetch_add(1, std::memory_order_relaxed);
    if (co_await stream.write(&*in) != coro::Errc::kOk) break;
  }
  pinging_ = false;
  reportDown();
}

void Session::start(const std::string& message) {
  counting_ = true;
  if (coro_) {
    if (!stream_) return;
    pinging_ = true;
    coro::spawn(loop_, pingCoro(std::move(stream_), &message));
    return;
  }
  if (TcpConnectionPtr conn = client_.connection()) conn->send(message);
}

void Session::stop() {
  counting_ = false;
  if (coro_) {
    // Each coroutine reports the session down as it ends; one that is not
    // running cannot.
    if (connecting_) {
      stopConnect_.request_stop();
    } else if (pinging_) {
      stream_ = coro::Stream();
      if (TcpConnectionPtr conn = client_.connection()) conn->forceClose();
    } else {
      stream_ = coro::Stream();
      reportDown();
    }
    return;
  }
  client_.stop();
  if (TcpConnectionPtr conn = client_.connection()) {
    conn->forceClose();
  } else {
    reportDown();
  }
}

void Session::reportDown() {
  if (downReported_) return;
  downReported_ = true;
  owner_->onDisconnected();
}

void Session::onConnection(const TcpConnectionPtr& conn) {
  if (conn->connected()) {
    owner_->onConnected();
  } else {
    reportDown();
  }
}

void Session::onMessage(const TcpConnectionPtr& conn, Buffer* buffer) {
  if (!counting_.load(std::memory_order_relaxed)) {
    buffer->retrieveAll();
    return;
  }
  bytesRead_.fetch_add(buffer->readableBytes(), std::memory_order_relaxed);
  messagesRead_.fetch_add(1, std::memory_order_relaxed);
  conn->send(buffer);
}

// The positional arguments, checked and converted.
struct RunSpec {
  InetAddress address;
  int threads = 0;
  size_t blocksize = 0;
  int sessions = 0;
  double seconds = 0;
};

std::optional<RunSpec> parseRunSpec(const std::vector<std::string>& positional) {
  const auto port = InetAddress::parsePort(positional[1]);
  const auto threads = pingpong::parseNumber(positional[2], 1, 256);
  const auto blocksize = pingpong::parseNumber(positional[3], 1, 64 * 1024 * 1024);
  const auto sessions = pingpong::parseNumber(positional[4], 1, 100000);
  const auto seconds = pingpong::parseNumber(positional[5], 1, 3600);
  const auto address = port ? InetAddress::parse(positional[0], *port) : std::nullopt;
  if (!address || !threads || !blocksize || !sessions || !seconds) return std::nullopt;
  return RunSpec{*address, static_cast<int>(*threads), static_cast<size_t>(*blocksize),
                 static_cast<int>(*sessions), static_cast<double>(*seconds)};
}

// Null without --tls-ca.
std::shared_ptr<const ConnectionLayer> clientTls(const pingpong::Args& args) {
  if (args.tlsCa.empty()) return nullptr;
  tls::Context::ClientOptions options;
  options.caFile = args.tlsCa;
  // The server's certificate is checked against the address given.
  return tls::newLayer(tls::Context::newClient(options), args.positional[0]);
}

// Returns the exit status. Throws what setting up throws.
int run(const pingpong::Args& args, const RunSpec& spec) {
  EventLoop loop(args.backend);
  // Before the client's threads and connections: a SIGINT/SIGTERM from here
  // on stays pending for the main loop, which ends the run cleanly (exit 0).
  Client* running = nullptr;
  SignalSet stop(&loop, {SIGINT, SIGTERM}, [&running](int) {
    if (running != nullptr) running->interrupt();
  });
  const std::shared_ptr<const ConnectionLayer> tls = clientTls(args);
  Client client(&loop, spec.address, spec.threads, spec.blocksize, spec.sessions, spec.seconds,
                args.coro, tls);
  running = &client;
  // Connecting many sessions can take a while; give up if it takes far too long.
  loop.runAfter(std::chrono::seconds(60), [&] {
    if (!client.connectedAll()) {
      client.fail("only " + std::to_string(client.connectedCount()) + " of " +
                  std::to_string(spec.sessions) + " sessions connected within 60 s");
    }
  });
  client.connectAll();
  loop.loop();
  if (client.failed() || client.interrupted()) {
    client.destroySessions();
    return client.failed() ? 1 : 0;
  }
  const std::string impl = std::string(args.coro ? "libnet-coro-" : "libnet-") +
                           (tls ? "tls-" : "") + std::string(pollerKindName(loop.pollerKind()));
  client.report(impl.c_str());
  client.destroySessions();
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  const pingpong::Args args =
      pingpong::parseArgs(argc, argv, 6, /*acceptsLogDir=*/false, /*acceptsCoro=*/true);
  if (args.help) {
    std::cout << kUsage;
    return 0;
  }
  if (!args.error.empty()) {
    std::cerr << "pingpong_client: " << args.error << "\n" << kUsage;
    return 2;
  }
  const std::optional<RunSpec> spec = parseRunSpec(args.positional);
  if (!spec) {
    std::cerr << "pingpong_client: bad argument\n" << kUsage;
    return 2;
  }
  if (!args.tlsCert.empty() || !args.tlsKey.empty()) {
    std::cerr << "pingpong_client: a client takes --tls-ca only\n" << kUsage;
    return 2;
  }
  Logger::setLevel(std::max(Logger::level(), LogLevel::kWarn));
  try {
    return run(args, *spec);
  } catch (const std::system_error& e) {
    std::cerr << "pingpong_client: " << e.what() << "\n";
    return 1;
  } catch (const tls::Error& e) {
    std::cerr << "pingpong_client: " << e.what() << "\n";
    return 1;
  }
}
