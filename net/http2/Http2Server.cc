#include "net/http2/Http2Server.h"

#include <sys/resource.h>

#include <algorithm>
#include <any>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/Logging.h"
#include "base/Mutex.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/http/HttpServer.h"
#include "net/http2/ServerSession.h"

namespace libnet::http2 {

namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Options::maxServerFiles, or a quarter of the descriptors this process may
// open: room is left for the connections themselves, for HTTP/1.1's files
// and for the application's own.
size_t serverFiles(const Options& options) {
  if (options.maxServerFiles != 0) return options.maxServerFiles;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return 1 << 16;
  }
  return std::max<size_t>(limit.rlim_cur / 4, 1);
}

// What every HTTP/2 connection of one server shares.
class Shared : public Service {
 public:
  Shared(http::HttpServer* server, Options options)
      : server_(server), options_(options), serverOptions_(server->options()) {}

  // The session configuration, made once the server has started (its
  // handler is set by then): the first connection taken makes it.
  const ServerSession::Config& config() {
    std::call_once(configOnce_, [this] {
      config_.options = options_;
      config_.limits = serverOptions_.limits;
      config_.handler = server_->handler();
      config_.asyncHandler = server_->asyncHandler();
      config_.router = server_->router();
      config_.maxStreamedBodyBytes = serverOptions_.maxStreamedBodyBytes;
      config_.gate = server_->writerGate();
      config_.writer = serverOptions_.writer;
      config_.bodyBudget = server_->bodyBudget();
      config_.fileBudget = std::make_shared<http::BodyBudget>(serverFiles(options_));
      server_ = nullptr;  // the server may go before its connections
    });
    return config_;
  }
  [[nodiscard]] const Options& options() const { return options_; }
  [[nodiscard]] Duration headerTimeout() const { return serverOptions_.headerTimeout; }
  [[nodiscard]] Duration idleTimeout() const { return serverOptions_.idleTimeout; }
  [[nodiscard]] size_t maxRequestLine() const { return serverOptions_.limits.maxRequestLine; }

  // Registers a connection; true if the server is going away already.
  bool add(const TcpConnectionPtr& conn) {
    MutexLock lock(mutex_);
    live_.emplace(conn.get(), conn);
    return goingAway_;
  }
  void remove(const TcpConnection* conn) {
    std::function<void()> done;
    {
      MutexLock lock(mutex_);
      if (live_.erase(conn) == 0) return;
      if (goingAway_ && live_.empty()) done = std::move(whenDone_);
    }
    if (done) done();
  }

  void goAway(std::function<void()> done) override;
  [[nodiscard]] size_t connections() const override {
    MutexLock lock(mutex_);
    return live_.size();
  }

 private:
  http::HttpServer* server_;
  const Options options_;
  const http::HttpServer::Options serverOptions_;
  std::once_flag configOnce_;
  ServerSession::Config config_;
  mutable Mutex mutex_;
  std::unordered_map<const TcpConnection*, std::weak_ptr<TcpConnection>> live_
      LIBNET_GUARDED_BY(mutex_);
  bool goingAway_ LIBNET_GUARDED_BY(mutex_) = false;
  std::function<void()> whenDone_ LIBNET_GUARDED_BY(mutex_);
};

// One HTTP/2 connection: its session and its deadlines. Kept in the
// connection's context; used on its loop thread only.
struct Link {
  Link(std::shared_ptr<Shared> s, const std::string& name)
      : shared(std::move(s)), session(shared->config(), name) {}

  std::shared_ptr<Shared> shared;
  ServerSession session;
  TimerId headerTimer;       // armed while the preface or a header block is incomplete
  TimerId stallTimer;        // armed while answers are pending: one window of the rate check
  uint64_t stallMark = 0;    // response bytes when the window began
  uint64_t stallNeeded = 0;  // what the window must move
  bool ending = false;
  bool flushQueued = false;  // a writer's frames wait for the flush queued to the loop
};

// The connection's Link, held for as long as the caller keeps the result: a
// shutdown() may close the connection at once (its peer had closed), and the
// close callback then drops the Link from the context while the caller still
// works with it.
std::shared_ptr<Link> linkOf(const TcpConnectionPtr& conn) {
  auto* held = std::any_cast<std::shared_ptr<Link>>(conn->mutableContext());
  return held != nullptr ? *held : nullptr;
}

// Frames of one turn, gathered and sent in one write; per thread.
Buffer& outputBuffer() {
  thread_local Buffer buffer(16 * 1024);
  return buffer;
}

// Frames are produced in slices of kSlice bytes, each sent as it is made,
// while the connection holds less than kAhead bytes of output (or half its
// output limit, if that is less): enough to keep the socket busy until the
// write-complete callback asks for more; never past the limit (which would
// pause reading, on io_uring a cancelled and re-armed receive, at every turn
// of a large download); and little enough that the output queue's buffers
// stay small and are reused (io_uring copies what is sent while a send is in
// flight into the queue's waiting buffer: half a megabyte there was a buffer
// mapped, faulted in and unmapped again for every turn).
constexpr size_t kSlice = 64 * 1024;
constexpr size_t kAhead = 2 * kSlice;

void flush(const TcpConnectionPtr& conn, Link* link) {
  const size_t limit = conn->maxQueuedOutput();
  const size_t ceiling = limit == 0 ? kAhead : std::min(kAhead, limit / 2);
  Buffer& out = outputBuffer();
  while (link->session.wantsWrite()) {
    const size_t queued = conn->queuedOutputBytes();
    if (queued >= ceiling) return;  // the write-complete callback resumes
    link->session.produce(&out, std::min(kSlice, ceiling - queued));
    if (out.readableBytes() == 0) return;  // what is left waits for the peer's window
    conn->send(&out);
    out.retrieveAll();
  }
}

// The connection is done: what is queued (a GOAWAY) goes out, then a
// half-close; a client that does not close in turn is closed after the
// header timeout.
void end(const TcpConnectionPtr& conn, Link* link) {
  if (link->ending) return;
  link->ending = true;
  flush(conn, link);
  const Duration grace = link->shared->headerTimeout();
  conn->shutdown();  // may close the connection at once; the caller holds `link`
  conn->loop()->runAfter(grace, [weak = std::weak_ptr<TcpConnection>(conn)] {
    if (const TcpConnectionPtr c = weak.lock()) c->forceClose();
  });
}

void updateTimers(const TcpConnectionPtr& conn, Link* link);

void onHeaderDeadline(const std::weak_ptr<TcpConnection>& weak) {
  const TcpConnectionPtr conn = weak.lock();
  const std::shared_ptr<Link> link = conn ? linkOf(conn) : nullptr;
  if (link == nullptr) return;
  link->headerTimer = TimerId();
  if (!link->session.awaitingHeaders()) return;
  LOG_DEBUG << conn->name() << ": HTTP/2 preface or header block not complete in time";
  link->session.terminate(0 /* NO_ERROR */, "header timeout");
  end(conn, link.get());
}

void onStallCheck(const std::weak_ptr<TcpConnection>& weak) {
  const TcpConnectionPtr conn = weak.lock();
  const std::shared_ptr<Link> link = conn ? linkOf(conn) : nullptr;
  if (link == nullptr) return;
  link->stallTimer = TimerId();
  if (link->session.pendingResponses() == 0) return;
  const uint64_t moved = link->session.responseBytes() - link->stallMark;
  if (moved >= link->stallNeeded) {
    updateTimers(conn, link.get());  // progress: the next window starts now
    return;
  }
  LOG_DEBUG << conn->name() << ": HTTP/2 answers too slow: " << moved << " of " << link->stallNeeded
            << " bytes sent in the idle timeout";
  link->session.terminate(0 /* NO_ERROR */, "stalled");
  flush(conn, link.get());
  conn->forceClose();
}

void updateTimers(const TcpConnectionPtr& conn, Link* link) {
  EventLoop* loop = conn->loop();
  const bool awaiting = link->session.awaitingHeaders() && !link->ending;
  if (awaiting && !link->headerTimer.valid()) {
    link->headerTimer =
        loop->runAfter(link->shared->headerTimeout(),
                       [weak = std::weak_ptr<TcpConnection>(conn)] { onHeaderDeadline(weak); });
  } else if (!awaiting && link->headerTimer.valid()) {
    loop->cancel(link->headerTimer);
    link->headerTimer = TimerId();
  }
  const Duration idle = link->shared->idleTimeout();
  if (idle > Duration::zero() && link->session.pendingResponses() > 0 &&
      !link->stallTimer.valid()) {
    link->stallMark = link->session.responseBytes();
    link->stallNeeded = link->session.progressNeeded(idle);
    link->stallTimer =
        loop->runAfter(idle, [weak = std::weak_ptr<TcpConnection>(conn)] { onStallCheck(weak); });
  }
}

// After input or output moved: send what the session has, end it when it is
// finished or failed, and keep its deadlines right.
void advance(const TcpConnectionPtr& conn, Link* link, bool ok) {
  flush(conn, link);
  if (!ok || link->session.finished()) {
    end(conn, link);  // may close the connection: its timers are done with
    return;
  }
  updateTimers(conn, link);
}

void onMessage(const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
  const std::shared_ptr<Link> link = linkOf(conn);
  if (link == nullptr || link->ending) {
    buf->retrieveAll();
    return;
  }
  const bool ok = link->session.receive(std::string_view(buf->peek(), buf->readableBytes()));
  buf->retrieveAll();
  advance(conn, link.get(), ok);
}

void onWriteComplete(const TcpConnectionPtr& conn) {
  const std::shared_ptr<Link> link = linkOf(conn);
  if (link == nullptr || link->ending) return;
  advance(conn, link.get(), true);
}

void onConnection(const TcpConnectionPtr& conn) {
  if (conn->connected()) return;
  const std::shared_ptr<Link> link = linkOf(conn);
  if (link == nullptr) return;
  if (link->headerTimer.valid()) conn->loop()->cancel(link->headerTimer);
  if (link->stallTimer.valid()) conn->loop()->cancel(link->stallTimer);
  const std::shared_ptr<Shared> shared = link->shared;
  conn->setContext(std::any());
  shared->remove(conn.get());
}

void goAwayOn(const TcpConnectionPtr& conn) {
  const std::shared_ptr<Link> link = linkOf(conn);
  if (link == nullptr || link->ending) return;
  link->session.goAway();
  advance(conn, link.get(), true);
}

// Makes `conn` an HTTP/2 connection; `input` (may be null) holds its first
// bytes.
void adopt(const std::shared_ptr<Shared>& shared, const TcpConnectionPtr& conn, Buffer* input) {
  const auto link = std::make_shared<Link>(shared, conn->name());
  link->session.setConnection(conn);
  // An answer written later (AsyncHandler) queued frames: they go out from
  // one flush queued behind the writes the loop has queued already, so that
  // a writer's many small writes become few frames and one send.
  link->session.setWake([weak = std::weak_ptr<TcpConnection>(conn), raw = link.get()] {
    if (raw->flushQueued) return;
    raw->flushQueued = true;
    const TcpConnectionPtr c = weak.lock();
    if (!c) return;
    c->loop()->queueInLoop([weak] {
      const TcpConnectionPtr live = weak.lock();
      const std::shared_ptr<Link> l = live ? linkOf(live) : nullptr;
      if (l == nullptr) return;
      l->flushQueued = false;
      if (!l->ending) advance(live, l.get(), true);
    });
  });
  Link* raw = link.get();  // kept alive by `link` whatever the calls below close
  conn->setContext(link);
  conn->setMessageCallback(onMessage);
  conn->setConnectionCallback(onConnection);
  conn->setWriteCompleteCallback(onWriteComplete);
  const bool goingAway = shared->add(conn);
  bool ok = true;
  if (input != nullptr) {
    ok = raw->session.receive(std::string_view(input->peek(), input->readableBytes()));
    input->retrieveAll();
  }
  if (goingAway) raw->session.goAway();
  advance(conn, raw, ok);
}

// Not the preface: HTTP/1.x if the first line is a request line of it (its
// last word "HTTP/..."), else a broken preface, which HTTP/2 answers (GOAWAY
// PROTOCOL_ERROR, RFC 9113 3.4) rather than HTTP/1.1's 400, on a port that
// serves prior knowledge. kNeedMore until the line is complete, bounded by
// the request line limit of HTTP/1.1 (past it, HTTP/1.1's 414).
http::HttpServer::Take classifyFirstLine(const std::shared_ptr<Shared>& shared,
                                         const TcpConnectionPtr& conn, Buffer* input) {
  using Take = http::HttpServer::Take;
  const std::string_view bytes(input->peek(), input->readableBytes());
  const size_t lf = bytes.find('\n');
  if (lf == std::string_view::npos) {
    return bytes.size() < shared->maxRequestLine() ? Take::kNeedMore : Take::kNotMine;
  }
  std::string_view line = bytes.substr(0, lf);
  if (line.ends_with('\r')) line.remove_suffix(1);
  const size_t space = line.rfind(' ');
  if (space != std::string_view::npos && line.substr(space + 1).starts_with("HTTP/")) {
    return Take::kNotMine;
  }
  adopt(shared, conn, input);
  return Take::kTaken;
}

http::HttpServer::Take take(const std::shared_ptr<Shared>& shared, const TcpConnectionPtr& conn,
                            Buffer* input) {
  using Take = http::HttpServer::Take;
  if (input == nullptr) {
    if (conn->applicationProtocol() != "h2") return Take::kNotMine;
    adopt(shared, conn, nullptr);
    return Take::kTaken;
  }
  if (!shared->options().priorKnowledge) return Take::kNotMine;
  const size_t n = std::min(input->readableBytes(), kPreface.size());
  if (std::memcmp(input->peek(), kPreface.data(), n) == 0) {
    if (n < kPreface.size()) return Take::kNeedMore;
    adopt(shared, conn, input);
    return Take::kTaken;
  }
  return classifyFirstLine(shared, conn, input);
}

void Shared::goAway(std::function<void()> done) {
  std::vector<std::weak_ptr<TcpConnection>> conns;
  {
    MutexLock lock(mutex_);
    goingAway_ = true;
    for (const auto& [key, weak] : live_) conns.push_back(weak);
    if (!live_.empty()) whenDone_ = std::move(done);
  }
  if (conns.empty()) {
    if (done) done();
    return;
  }
  for (const std::weak_ptr<TcpConnection>& weak : conns) {
    const TcpConnectionPtr conn = weak.lock();
    if (!conn) continue;
    conn->loop()->runInLoop([weak] {
      if (const TcpConnectionPtr c = weak.lock()) goAwayOn(c);
    });
  }
}

}  // namespace

std::shared_ptr<Service> serve(http::HttpServer& server, Options options) {
  ServerSession::validate(options, server.options().limits);
  auto shared = std::make_shared<Shared>(&server, options);
  server.setConnectionTaker(
      [shared](const TcpConnectionPtr& conn, Buffer* input) { return take(shared, conn, input); });
  // HttpServer::drain: GOAWAY to every HTTP/2 connection, and at once to
  // those taken later.
  server.addDrainListener([shared] { shared->goAway(nullptr); });
  // The idle timeout spares a connection whose answers are still to come,
  // as HTTP/1.1's; the rate check of answers being sent stays.
  server.setBusyCheck([](const TcpConnectionPtr& conn) {
    const std::shared_ptr<Link> link = linkOf(conn);
    return link != nullptr && !link->ending && link->session.answersAwaited() > 0;
  });
  return shared;
}

}  // namespace libnet::http2
