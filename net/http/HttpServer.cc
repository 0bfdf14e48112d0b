#include "net/http/HttpServer.h"

#include <unistd.h>

#include <algorithm>
#include <any>
#include <cassert>
#include <cerrno>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/http/Http1RequestBody.h"
#include "net/http/Http1Writer.h"
#include "net/http/HttpChars.h"
#include "net/http/HttpDate.h"
#include "net/http/WriterGate.h"

namespace libnet::http {

struct HttpServer::ConnectionState {
  ConnectionState(const HttpParser::Limits& limits, std::shared_ptr<BodyBudget> budget)
      : parser(limits), body(std::move(budget)) {}

  HttpParser parser;
  // The budget the body of the request being received holds; empty between
  // requests and for a body that arrived whole.
  BodyBudget::Reservation body;
  MonoTime requestStart{};        // of the request whose line or headers are incomplete
  TimerId headerTimer;            // valid while that request's deadline is armed
  bool headerStarted = false;     // requestStart is set (the headers are not done)
  bool closing = false;           // an answer with Connection: close is on its way
  bool continueSent = false;      // "100 Continue" already sent for this request
  bool linger = false;            // the client may still be sending: half-close, read on
  bool offered = false;           // the connection taker has seen the first bytes
  bool draining = false;          // the server drains: the next answer closes
  bool answering = false;         // an answer handed off by the AsyncHandler is pending
  bool heldInput = false;         // reading paused behind that answer
  Timestamp lastActive;           // last bytes received (or the connection's start)
  int handles = 0;                // StateHandles that own it (loop thread only)
  bool bodyStoppedRead = false;   // reading stopped while the streamed body waits
  Route route = Route::kHandler;  // with a router: where the request goes
  // The pending answer's writer (owned by the handler's side).
  std::weak_ptr<Http1Writer> pending;
  // The body of the request being received in pieces (Route::kStreamedBody),
  // until it ends.
  std::shared_ptr<Http1RequestBody> streaming;
};

// What a connection's context holds: its ConnectionState, owned through the
// count in the state. One pointer, which std::any keeps inside itself: a
// shared_ptr (two) would take an allocation of its own per connection.
// Copied, if ever, on the connection's loop thread only.
class HttpServer::StateHandle {
 public:
  explicit StateHandle(ConnectionState* state) : state_(state) { ++state_->handles; }
  StateHandle(const StateHandle& other) : state_(other.state_) { ++state_->handles; }
  StateHandle(StateHandle&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  StateHandle& operator=(const StateHandle&) = delete;
  StateHandle& operator=(StateHandle&&) = delete;
  ~StateHandle() {
    if (state_ != nullptr && --state_->handles == 0) delete state_;
  }
  [[nodiscard]] ConnectionState* get() const { return state_; }

 private:
  ConnectionState* state_;
};

namespace {

// The request handler, as a log line names it when it throws.
struct HandlerOf {
  const std::string& connection;
};

LogStream& operator<<(LogStream& stream, const HandlerOf& handler) {
  return stream << "request handler on " << handler.connection;
}

// The answers of one onMessage call are gathered here, then sent in one
// write. Per thread, so an idle connection holds no output memory; taken
// only through a BatchScope, so it is empty again whenever the scope is left.
Buffer& batchBuffer() {
  thread_local Buffer buffer(16 * 1024);
  return buffer;
}

// The per-thread batch, for the duration of one connection's event. Leaving
// the scope empties it however it is left: if anything throws past the
// handler's own guard (an allocation failing while an answer is built), the
// answers gathered for this connection must not stay behind for the next
// connection served on this thread to send.
class BatchScope {
 public:
  BatchScope() : buffer_(batchBuffer()) { assert(buffer_.readableBytes() == 0); }
  ~BatchScope() { buffer_.retrieveAll(); }
  BatchScope(const BatchScope&) = delete;
  BatchScope& operator=(const BatchScope&) = delete;

  Buffer& buffer() { return buffer_; }

 private:
  Buffer& buffer_;
};

std::string_view currentDate() {
  thread_local HttpDateCache cache;
  return cache.now();
}

// Reads [0, size) of `fd` into `out`; false if the file ended early or failed.
bool appendFileContents(int fd, size_t size, Buffer* out) {
  out->ensureWritableBytes(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out->beginWrite() + done, size - done, static_cast<off_t>(done));
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  out->hasWritten(size);
  return true;
}

}  // namespace

namespace {

// The constructor's checks of what is HTTP's own (TcpServer checks the rest).
const HttpServer::Options& checked(const HttpServer::Options& options) {
  if (options.headerTimeout <= Duration::zero()) {
    // There is no "off": a server without it is held by every client that
    // starts a request and never finishes its headers.
    throw std::invalid_argument("HttpServer: Options::headerTimeout must be positive");
  }
  if (options.idleTimeout < Duration::zero()) {
    throw std::invalid_argument("HttpServer: Options::idleTimeout is negative");
  }
  if (options.maxBufferedBodyBytes != 0 &&
      options.maxBufferedBodyBytes < options.limits.maxBodyBytes) {
    // The largest bodies the limits allow could never be accepted.
    throw std::invalid_argument("HttpServer: Options::maxBufferedBodyBytes (" +
                                std::to_string(options.maxBufferedBodyBytes) +
                                ") is below limits.maxBodyBytes (" +
                                std::to_string(options.limits.maxBodyBytes) + ")");
  }
  return options;
}

TcpServer::Options tcpOptions(const HttpServer::Options& options) {
  TcpServer::Options tcp{
      .threads = options.threads,
      .acceptMode = options.acceptMode,
      .ringHandOver = options.ringHandOver,
      .handOver = options.handOver,
      .cpuAffinity = options.cpuAffinity,
      .reusePort = options.reusePort,
      .deferAccept = options.deferAccept,
      .tcpNoDelay = true,  // a response is one write; never let Nagle hold its tail
      .layer = options.layer,
      .maxQueuedOutput = options.maxQueuedOutput,
      .idleTimeout = options.idleTimeout,
  };
  tcp.proxyProtocol = options.proxyProtocol;
  // Connection limits: the refusal is a whole response, sent at once.
  tcp.maxConnections = options.maxConnections;
  tcp.maxConnectionsPerPeer = options.maxConnectionsPerPeer;
  if (!options.layer) {
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(options.retryAfter).count();
    tcp.refusal = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: " +
                  std::to_string(std::max<int64_t>(0, seconds)) +
                  "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  }
  if (options.idleTimeout > Duration::zero()) {
    // Ticks of a second (a quarter of the timeout if that is shorter) keep
    // the kick within a few percent of the timeout at a tick cost of nothing.
    tcp.idleTick = std::min<Duration>(
        std::chrono::seconds(1),
        std::max<Duration>(options.idleTimeout / 4, std::chrono::milliseconds(1)));
  }
  return tcp;
}

}  // namespace

HttpServer::HttpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name)
    : HttpServer(loop, listenAddr, std::move(name), Options{}) {}

HttpServer::HttpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name,
                       Options options)
    : options_(checked(options)),
      bodyBudget_(std::make_shared<BodyBudget>(options_.maxBufferedBodyBytes)),
      gate_(std::make_shared<WriterGate>()),
      busyCheck_(std::make_shared<BusyCheck>()),
      server_(loop, listenAddr, std::move(name), tcpOptions(options_)) {
  takeCallbacks();
}

HttpServer::HttpServer(EventLoop* loop, std::vector<UniqueFd> listeningSockets, std::string name,
                       Options options)
    : options_(checked(options)),
      bodyBudget_(std::make_shared<BodyBudget>(options_.maxBufferedBodyBytes)),
      gate_(std::make_shared<WriterGate>()),
      busyCheck_(std::make_shared<BusyCheck>()),
      server_(loop, std::move(listeningSockets), std::move(name), tcpOptions(options_)) {
  takeCallbacks();
}

HttpServer::~HttpServer() {
  // Before the I/O loops go (server_ is destroyed next): a writer kept by
  // another thread must not reach them.
  gate_->close();
}

void HttpServer::setThreadNum(int numThreads) {
// Forwarding one deprecated setter to the other.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  server_.setThreadNum(numThreads);  // checks it, and that start() has not run
#pragma GCC diagnostic pop
  options_.threads = numThreads;
}

void HttpServer::takeCallbacks() {
  server_.setConnectionCallback([this](const TcpConnectionPtr& conn) { onConnection(conn); });
  server_.setMessageCallback(
      [this](const TcpConnectionPtr& conn, Buffer* buf, Timestamp t) { onMessage(conn, buf, t); });
  // Static: it touches only the connection, and may run on an I/O loop.
  server_.setDrainCallback(
      [grace = options_.drainGrace](const TcpConnectionPtr& conn) { onDrain(conn, grace); });
  // A connection waiting for its answer is not idle, as long as nothing of
  // it is stuck in the output (a client that stopped reading is); one
  // handed over is asked through the busy check.
  server_.setIdleCallback([busy = busyCheck_](const TcpConnectionPtr& conn) {
    const ConnectionState* state = stateOf(conn);
    if (state != nullptr && state->streaming) {
      // A body the handler holds back (not asked for yet, or paused) waits
      // on the server; one it reads from a silent client is idle.
      if (state->streaming->holding()) return;
    } else if (conn->queuedOutputBytes() == 0) {
      if (state != nullptr && state->answering) return;
      if (state == nullptr && *busy && (*busy)(conn)) return;
    }
    LOG_DEBUG << conn->name() << " is idle, closing it";
    conn->forceClose();
  });
}

void HttpServer::setHandler(Handler handler) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": setHandler() after start()");
  handler_ = std::move(handler);
}

void HttpServer::setAsyncHandler(AsyncHandler handler) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": setAsyncHandler() after start()");
  asyncHandler_ = std::move(handler);
}

void HttpServer::setRouter(Router router) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": setRouter() after start()");
  router_ = std::move(router);
}

void HttpServer::setBusyCheck(BusyCheck check) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": setBusyCheck() after start()");
  *busyCheck_ = std::move(check);
}

void HttpServer::setUpgradeHandler(UpgradeHandler handler) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": setUpgradeHandler() after start()");
  upgradeHandler_ = std::move(handler);
}

void HttpServer::setConnectionTaker(ConnectionTaker taker) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": setConnectionTaker() after start()");
  taker_ = std::move(taker);
}

void HttpServer::addDrainListener(std::function<void()> listener) {
  if (started_)
    throw std::logic_error("HttpServer " + server_.name() + ": addDrainListener() after start()");
  drainListeners_.push_back(std::move(listener));
}

void HttpServer::drain(Duration deadline, std::function<void()> done) {
  if (!server_.draining()) {
    for (const std::function<void()>& listener : drainListeners_) listener();
  }
  server_.drain(deadline, std::move(done));
}

void HttpServer::onDrain(const TcpConnectionPtr& conn, Duration grace) {
  ConnectionState* state = stateOf(conn);
  // None: taken (HTTP/2, WebSocket: their drain listeners), or a TLS
  // handshake not done yet (left to the deadline).
  if (state == nullptr) return;
  state->draining = true;
  if (!state->closing) closeIfIdle(conn, state, grace);
}

void HttpServer::closeIfIdle(const TcpConnectionPtr& conn, ConnectionState* state, Duration grace) {
  // Mid-request, or requests buffered: the answer says Connection: close.
  // Answering later: the end of that answer closes.
  if (state->answering) return;
  if (state->parser.midRequest() || conn->inputBuffer()->readableBytes() > 0) return;
  const Timestamp now = Timestamp::now();
  Duration wait;
  if (conn->queuedOutputBytes() > 0) {
    // Still answering (a keep-alive answer, sent before the drain): the
    // client's next request comes only once it has read it, so the grace
    // counts from when the output is gone, looked at every so often.
    state->lastActive = now;
    wait = std::clamp<Duration>(grace / 4, std::chrono::milliseconds(5),
                                std::chrono::milliseconds(50));
  } else if (const Duration idleFor = now - state->lastActive; idleFor < grace) {
    wait = grace - idleFor;
  } else {
    // Half-closed rather than closed: a request racing the FIN is discarded
    // instead of turning the close into a reset.
    state->closing = true;
    state->linger = true;
    finishClosing(conn, state, conn->inputBuffer());
    return;
  }
  conn->loop()->runAfter(wait, [weakConn = std::weak_ptr<TcpConnection>(conn), grace] {
    const TcpConnectionPtr c = weakConn.lock();
    if (!c || !c->connected()) return;
    ConnectionState* s = stateOf(c);
    if (s != nullptr && !s->closing) closeIfIdle(c, s, grace);
  });
}

void HttpServer::start() {
  started_ = true;
  server_.start();
}

void HttpServer::onConnection(const TcpConnectionPtr& conn) {
  if (conn->connected()) {
    if (taker_ && taker_(conn, nullptr) == Take::kTaken) return;
    conn->setContext(StateHandle(new ConnectionState(options_.limits, bodyBudget_)));
    stateOf(conn)->parser.request().setConnection(conn);
    // The router runs at each request's head, before its body.
    if (router_) stateOf(conn)->parser.setStopAfterHead(true);
    stateOf(conn)->lastActive = Timestamp::now();
    if (!taker_) stateOf(conn)->offered = true;
  } else {
    // May run after the server is gone (its connections are torn down on
    // their loops later): touch nothing of it. The state takes its budget
    // reservation with it.
    if (ConnectionState* state = stateOf(conn)) {
      endHeaderDeadline(conn, state);
      // Held first: the body's callbacks may be all that holds the writer.
      const std::shared_ptr<Http1Writer> writer = state->pending.lock();
      if (state->streaming) {
        const std::shared_ptr<Http1RequestBody> body = std::move(state->streaming);
        body->end(RequestBody::End::kAborted);
      }
      if (state->answering) {
        state->answering = false;
        if (writer) writer->onConnectionClosed();
      }
    }
    conn->setContext(std::any());
  }
}

size_t HttpServer::bufferedBodyBytes() const { return bodyBudget_->used(); }

void HttpServer::appendError(int status, Buffer* out) {
  HttpResponse response(true);
  response.setStatusPage(status);
  response.appendToBuffer(out, currentDate());
}

HttpServer::ConnectionState* HttpServer::stateOf(const TcpConnectionPtr& conn) {
  auto* holder = std::any_cast<StateHandle>(conn->mutableContext());
  return holder != nullptr ? holder->get() : nullptr;
}

void HttpServer::onMessage(const TcpConnectionPtr& conn, Buffer* buf, Timestamp receiveTime) {
  ConnectionState* state = stateOf(conn);
  if (state == nullptr || state->closing) {  // answered already; drain until the peer goes
    buf->retrieveAll();
    return;
  }
  state->lastActive = receiveTime;
  if (state->streaming) {
    const StateHandle keep(state);  // the body's callbacks may close the connection
    if (!feedBody(conn, state, buf)) {
      if (state->closing) buf->retrieveAll();
      return;
    }
  }
  if (state->answering) {
    holdBehindAnswer(conn, state, buf);
    return;
  }
  if (!state->offered && !offerFirstBytes(conn, state, buf)) return;
  BatchScope batch;
  Buffer& out = batch.buffer();
  HttpParser& parser = state->parser;
  while (!state->closing) {
    if (buf->readableBytes() > 0 && !parser.midRequest() && !mayAnswerMore(conn, &out)) {
      // Answer no more until the client has read what it has been sent:
      // the unparsed requests stay in the connection's input buffer, and
      // the connection hands them back here when it resumes reading.
      break;
    }
    const HttpParser::Result result = parser.parse(buf);
    if (result == HttpParser::Result::kHead) {
      endHeaderDeadline(conn, state);
      const Next next = routeHead(conn, state, buf, &out);
      if (next == Next::kReturn) return;
      if (next == Next::kStop) break;
      continue;
    }
    if (result == HttpParser::Result::kNeedMore) {
      if (parser.midRequest()) onIncomplete(conn, state, buf, &out);
      break;
    }
    endHeaderDeadline(conn, state);  // the headers are complete, or broken
    if (result == HttpParser::Result::kError) {
      LOG_DEBUG << conn->name() << ": bad request, " << parser.errorStatus() << " "
                << parser.errorMessage();
      appendError(parser.errorStatus(), &out);
      state->closing = true;
      state->linger = true;
      break;
    }
    const Next next = answerRequest(conn, state, buf, &out);
    if (next == Next::kReturn) return;
    if (next == Next::kStop) break;
  }
  if (out.readableBytes() > 0) conn->send(&out);
  if (state->closing) finishClosing(conn, state, buf);
}

HttpServer::Next HttpServer::answerRequest(const TcpConnectionPtr& conn, ConnectionState* state,
                                           Buffer* buf, Buffer* out) {
  HttpParser& parser = state->parser;
  if (upgradeHandler_ && parser.request().header("Upgrade")) {
    const Upgrade upgrade = tryUpgrade(conn, state, buf, out);
    if (upgrade == Upgrade::kTaken) return Next::kReturn;  // `state` is gone; `out` was sent
    if (upgrade == Upgrade::kRejected) {
      state->closing = true;
      state->linger = true;
      return Next::kStop;
    }
  }
  // Draining, the last request buffered gets Connection: close.
  const bool lastOne = state->draining && buf->readableBytes() == 0;
  const bool async = router_ ? state->route == Route::kAsync : static_cast<bool>(asyncHandler_);
  const Answered answered = async ? respondAsync(conn, state, parser.request(), out, lastOne)
                            : respond(conn, parser.request(), out, lastOne) ? Answered::kKeepAlive
                                                                            : Answered::kClose;
  requestDone(state, answered == Answered::kClose);
  if (answered == Answered::kPending) {  // `out` was sent
    holdBehindAnswer(conn, state, buf);
    return Next::kReturn;
  }
  return state->closing ? Next::kStop : Next::kParseOn;
}

bool HttpServer::offerFirstBytes(const TcpConnectionPtr& conn, ConnectionState* state,
                                 Buffer* buf) {
  const StateHandle keep(state);  // the taker may replace the context, and this handle
  const Take take = taker_(conn, buf);
  if (take == Take::kTaken) {
    endHeaderDeadline(conn, state);  // one a partial first read armed
    return false;
  }
  if (take == Take::kNotMine) {
    state->offered = true;
    return true;
  }
  // Too few bytes to tell: the header deadline covers a client that stops
  // here.
  if (!state->headerStarted) {
    state->headerStarted = true;
    state->requestStart = MonoClock::now();
    startHeaderDeadline(conn, state);
  }
  return false;
}

void HttpServer::onIncomplete(const TcpConnectionPtr& conn, ConnectionState* state,
                              const Buffer* buf, Buffer* out) {
  HttpParser& parser = state->parser;
  if (parser.inHeaderPhase()) {
    const MonoTime now = MonoClock::now();
    if (!state->headerStarted) {
      // Blank lines alone (the parser consumed them and left nothing, and no
      // request line has been read) do not start a request: some clients
      // send a stray CRLF after a body, then idle on the keep-alive
      // connection, and that is for the idle timeout to judge.
      if (buf->readableBytes() == 0 && parser.request().target().empty()) return;
      state->headerStarted = true;
      state->requestStart = now;
    }
    if (now - state->requestStart > options_.headerTimeout) {
      // Bytes that arrive after the deadline, before the timer has had its
      // turn in this loop iteration.
      LOG_DEBUG << conn->name() << ": headers not complete in time";
      appendError(408, out);
      state->closing = true;
      state->linger = true;
    } else if (!state->headerTimer.valid()) {
      startHeaderDeadline(conn, state);
    }
    return;
  }
  endHeaderDeadline(conn, state);
  if (!state->body.cover(parser.bodyBytesCommitted())) {
    LOG_DEBUG << conn->name() << ": no room for a body of " << parser.bodyBytesCommitted()
              << " bytes (" << bodyBudget_->used() << " of " << bodyBudget_->limit()
              << " buffered)";
    appendError(503, out);
    state->closing = true;
    state->linger = true;
    return;
  }
  if (!state->continueSent && parser.request().version() == Version::kHttp11) {
    // The client waits for a go-ahead before sending a large body; it gets
    // one only once the body has its room (else the 503 above).
    const auto expect = parser.request().header("Expect");
    if (expect && detail::equalsIgnoreCase(*expect, "100-continue")) {
      out->append("HTTP/1.1 100 Continue\r\n\r\n");
      state->continueSent = true;
    }
  }
}

void HttpServer::startHeaderDeadline(const TcpConnectionPtr& conn, ConnectionState* state) const {
  // A one-shot timer per incomplete request rather than a per-loop wheel: a
  // request that arrives whole (nearly all) never gets here, so the cost is
  // paid by slow or partial requests only, each one O(log n) insert into the
  // loop's timer queue and one cancel; the deadline is exact (a wheel would
  // add up to a tick); and there is no periodic tick to run when no request
  // is slow. The timer holds a weak_ptr only: it never keeps a closed
  // connection alive, and finding it gone is the normal case after a close.
  state->headerTimer = conn->loop()->runAt(
      state->requestStart + options_.headerTimeout,
      [weakConn = std::weak_ptr<TcpConnection>(conn)] { onHeaderDeadline(weakConn); });
}

void HttpServer::endHeaderDeadline(const TcpConnectionPtr& conn, ConnectionState* state) {
  state->headerStarted = false;
  if (!state->headerTimer.valid()) return;
  conn->loop()->cancel(state->headerTimer);  // on the loop thread: at once
  state->headerTimer = TimerId();
}

void HttpServer::onHeaderDeadline(const std::weak_ptr<TcpConnection>& weakConn) {
  const TcpConnectionPtr conn = weakConn.lock();
  if (!conn || !conn->connected()) return;
  ConnectionState* state = stateOf(conn);
  if (state == nullptr) return;
  state->headerTimer = TimerId();  // fired: nothing left to cancel
  // Completing the headers cancels the timer, so this holds; checked anyway,
  // as a 408 to a request that is fine would be worse than none.
  if (state->closing || !state->headerStarted || !state->parser.inHeaderPhase()) return;
  LOG_DEBUG << conn->name() << ": headers not complete at the deadline";
  BatchScope batch;
  Buffer& out = batch.buffer();
  appendError(408, &out);
  conn->send(&out);
  state->closing = true;
  state->linger = true;
  finishClosing(conn, state, conn->inputBuffer());
}

void HttpServer::finishClosing(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf) {
  endHeaderDeadline(conn, state);
  // Nothing more is parsed here: give the budget and the body memory back
  // now, not when the client leaves (after an error, maybe an idle timeout
  // later). reset() alone would keep up to 64 KiB of body capacity.
  state->body.release();
  state->parser.reset();
  std::string().swap(state->parser.request().body());
  state->streaming.reset();
  endBodyHold(conn, state);  // what still comes is read, to be discarded
  if (state->linger || buf->readableBytes() > 0) {
    // Closing with unread input would send a reset that can destroy the
    // answer before the client reads it: half-close once it is out, and
    // discard what still comes until the client closes (or idles out).
    buf->retrieveAll();
    conn->shutdown();
  } else {
    conn->closeAfterOutput();  // a clean end: no wait for the client's FIN
  }
}

bool HttpServer::mayAnswerMore(const TcpConnectionPtr& conn, Buffer* out) {
  // The connection's own output limit is the one back-pressure: the batch
  // goes out early when it would take the connection past it, so that the
  // connection sees it and pauses reading.
  const size_t limit = conn->maxQueuedOutput();
  if (limit == 0 || conn->queuedOutputBytes() + out->readableBytes() <= limit) {
    return conn->isReading();
  }
  if (out->readableBytes() > 0) conn->send(out);
  // Past the limit the connection has paused reading, and hands the
  // requests left in the buffer back when it resumes.
  return conn->isReading();
}

HttpServer::Upgrade HttpServer::tryUpgrade(const TcpConnectionPtr& conn, ConnectionState* state,
                                           Buffer* buf, Buffer* out) {
  // Answers to earlier pipelined requests go before whatever the new
  // protocol sends (a 101 first of all).
  if (out->readableBytes() > 0) conn->send(out);
  // The upgrade handler may set the connection's context, which destroys
  // the handle there: this one keeps `state` (and the request) alive until
  // the call is over.
  const StateHandle keep(state);
  HttpResponse rejection(/*close=*/true);
  Upgrade upgrade = Upgrade::kDeclined;
  const bool ok = callGuarded(HandlerOf{conn->name()}, [&] {
    upgrade = upgradeHandler_(state->parser.request(), conn, buf, &rejection);
  });
  if (!ok) {
    upgrade = Upgrade::kRejected;
    rejection = HttpResponse(true);
    rejection.setStatusPage(500);
  }
  if (upgrade == Upgrade::kTaken) {
    endHeaderDeadline(conn, state);
    state->body.release();
    if (std::any_cast<StateHandle>(&conn->context()) != nullptr) conn->setContext(std::any());
    return upgrade;
  }
  if (upgrade == Upgrade::kRejected) {
    rejection.setCloseConnection(true);
    rejection.appendToBuffer(out, currentDate());
  }
  return upgrade;
}

bool HttpServer::respond(const TcpConnectionPtr& conn, const HttpRequest& request, Buffer* out,
                         bool close) {
  HttpResponse response(close || !request.keepAlive());
  if (!close && request.version() == Version::kHttp10 && request.keepAlive()) {
    response.setKeepAliveHeader(true);
  }
  // Anything may be thrown (an int, a string): it costs this request a 500
  // and the connection, never the answers of another connection.
  const bool answered = callGuarded(HandlerOf{conn->name()}, [&] {
    if (handler_) {
      handler_(request, &response);
    } else {
      response.setStatus(404);
    }
  });
  if (!answered) {
    appendError(500, out);
    return false;
  }
  // The head written here, not through appendResponse(): this is the path
  // of every synchronous answer, kept as short as it was.
  const bool headOnly = request.method() == Method::kHead;
  const size_t mark = out->readableBytes();
  response.appendToBuffer(out, currentDate(), headOnly);
  if (response.hasFile() && !headOnly &&
      !appendFile(conn, &response, options_.inlineFileMax, mark, out)) {
    return false;
  }
  return !response.closeConnection();
}

bool HttpServer::appendResponse(const TcpConnectionPtr& conn, HttpResponse* response, bool headOnly,
                                size_t inlineFileMax, Buffer* out) {
  const size_t mark = out->readableBytes();
  response->appendToBuffer(out, currentDate(), headOnly);
  return !response->hasFile() || headOnly || appendFile(conn, response, inlineFileMax, mark, out);
}

bool HttpServer::appendFile(const TcpConnectionPtr& conn, HttpResponse* response,
                            size_t inlineFileMax, size_t mark, Buffer* out) {
  UniqueFd file = response->takeFile();
  const size_t length = response->contentLength();
  if (length <= inlineFileMax) {
    if (!appendFileContents(file.get(), length, out)) {
      LOG_SYSERR << conn->name() << ": reading the response file";
      out->unwrite(out->readableBytes() - mark);  // take back the headers
      appendError(500, out);
      return false;
    }
  } else {
    conn->sendFile(std::move(file), 0, length, out);  // `out` (heads so far) goes first
  }
  return true;
}

HttpServer::Answered HttpServer::respondAsync(const TcpConnectionPtr& conn, ConnectionState* state,
                                              const HttpRequest& request, Buffer* out, bool close,
                                              std::shared_ptr<Http1RequestBody> body) {
  // The answers before this one go first: the writer sends straight to the
  // connection, maybe before the handler returns.
  if (out->readableBytes() > 0) conn->send(out);
  const Http1Writer::Request shape{
      .headOnly = request.method() == Method::kHead,
      .close = close || !request.keepAlive(),
      .http10 = request.version() == Version::kHttp10,
  };
  auto writer =
      std::make_shared<Http1Writer>(gate_, conn, shape, options_.inlineFileMax, options_.writer);
  if (body) {
    body->setWriter(writer);
    writer->setRequestBody(std::move(body));
  }
  const bool returned =
      callGuarded(HandlerOf{conn->name()}, [&] { asyncHandler_(request, writer); });
  if (!returned) writer->abortInLoop();  // a 500 if nothing was sent yet
  if (writer->ended()) {
    return !returned || writer->closesConnection() ? Answered::kClose : Answered::kKeepAlive;
  }
  state->answering = true;
  state->pending = writer;
  writer->handOff();
  return Answered::kPending;
}

void HttpServer::answerEnded(const TcpConnectionPtr& conn, bool close) {
  ConnectionState* state = stateOf(conn);
  if (state == nullptr || !state->answering || !conn->connected()) return;
  state->answering = false;
  state->pending.reset();
  if (state->streaming) {
    // Answered before its body was read through: the rest of the body is
    // not read, and the connection closes after the answer.
    const std::shared_ptr<Http1RequestBody> body = std::move(state->streaming);
    body->end(RequestBody::End::kAborted);
    close = true;
    state->linger = true;
  }
  state->lastActive = Timestamp::now();
  if (close || state->draining) {
    state->closing = true;
    finishClosing(conn, state, conn->inputBuffer());
    return;
  }
  // The requests that waited: startRead() hands back what was kept, once
  // reading is on again; a connection still reading gets them the same way
  // (the pause is only the way to that hand-back).
  if (!state->heldInput) {
    if (conn->inputBuffer()->readableBytes() == 0) return;
    conn->stopRead();
  }
  state->heldInput = false;
  conn->startRead();
}

void HttpServer::requestDone(ConnectionState* state, bool closing) {
  state->closing = closing;
  state->continueSent = false;
  state->parser.reset();
  state->body.release();
}

void HttpServer::holdBehindAnswer(const TcpConnectionPtr& conn, ConnectionState* state,
                                  const Buffer* buf) {
  // Requests pipelined behind an answer still to come wait in the input, as
  // much as kHeldInputMax; then reading pauses until the answer ends.
  if (buf->readableBytes() > kHeldInputMax && !state->heldInput) {
    state->heldInput = true;
    conn->stopRead();
  }
}

bool HttpServer::drainingConnection(const TcpConnectionPtr& conn) {
  const ConnectionState* state = conn ? stateOf(conn) : nullptr;
  return state != nullptr && state->draining;
}

HttpServer::Next HttpServer::routeHead(const TcpConnectionPtr& conn, ConnectionState* state,
                                       Buffer* buf, Buffer* out) {
  HttpParser& parser = state->parser;
  Route route = Route::kHandler;
  const bool routed =
      callGuarded(HandlerOf{conn->name()}, [&] { route = router_(parser.request()); });
  int refusal = routed ? 0 : 500;
  if (routed && (route == Route::kHandler ? !handler_ : !asyncHandler_)) {
    LOG_ERROR << conn->name() << ": the router chose a handler that is not set";
    refusal = 500;
  }
  if (refusal == 0 && route != Route::kStreamedBody) {
    state->route = route;
    parser.readBodyWhole();  // a body over limits.maxBodyBytes: 413 from the next parse()
    return Next::kParseOn;
  }
  if (refusal == 0) {
    parser.streamBody(options_.maxStreamedBodyBytes);
    refusal = parser.errorStatus();  // 413: its Content-Length is over the bound
  }
  if (refusal != 0) {
    appendError(refusal, out);
    state->closing = true;
    state->linger = true;
    return Next::kStop;
  }
  return startStreamed(conn, state, buf, out);
}

HttpServer::Next HttpServer::startStreamed(const TcpConnectionPtr& conn, ConnectionState* state,
                                           Buffer* buf, Buffer* out) {
  const StateHandle keep(state);  // the handler may close the connection
  HttpParser& parser = state->parser;
  const HttpRequest& request = parser.request();
  const auto expect = request.header("Expect");
  auto body =
      std::make_shared<Http1RequestBody>(gate_, conn, parser.announcedLength(),
                                         request.version() == Version::kHttp11 && expect &&
                                             detail::equalsIgnoreCase(*expect, "100-continue"));
  // Set before the handler runs: an answer it ends at once must find it.
  // No body at all: it ends kComplete at once (an end callback set later
  // still hears it).
  if (body->contentLength() != 0) {
    state->streaming = body;
  } else {
    body->end(RequestBody::End::kComplete);
  }
  const Answered answered = respondAsync(conn, state, request, out, state->draining, body);
  if (!state->streaming) {
    // No body: as any request answered.
    requestDone(state, answered == Answered::kClose);
    if (answered != Answered::kPending) return state->closing ? Next::kStop : Next::kParseOn;
    holdBehindAnswer(conn, state, buf);
    return Next::kReturn;
  }
  if (answered != Answered::kPending) {
    // Answered before the handler asked for the body: it is not read.
    state->streaming.reset();
    body->end(RequestBody::End::kAborted);
    state->closing = true;
    state->linger = true;
    return Next::kStop;
  }
  if (!feedBody(conn, state, buf)) {
    if (state->closing) buf->retrieveAll();
    return Next::kReturn;
  }
  if (state->answering) {
    holdBehindAnswer(conn, state, buf);
    return Next::kReturn;
  }
  return Next::kParseOn;
}

bool HttpServer::feedBody(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf) {
  const std::shared_ptr<Http1RequestBody> body = state->streaming;
  HttpParser& parser = state->parser;
  while (state->streaming == body && !state->closing && conn->connected()) {
    if (body->holding()) {
      // The handler holds it back: the connection stops reading, so TCP
      // holds the client back, and what was read waits in the input.
      if (!state->bodyStoppedRead) {
        state->bodyStoppedRead = true;
        conn->stopRead();
      }
      return false;
    }
    const HttpParser::Result result = parser.parse(buf);
    if (result == HttpParser::Result::kPiece) {
      // Straight from the input: the piece is the bytes in `buf`.
      const std::string_view piece = parser.piece(*buf);
      parser.takePiece(buf);
      if (!body->deliver(piece)) conn->forceClose();
      continue;
    }
    if (result == HttpParser::Result::kNeedMore) {
      endBodyHold(conn, state);
      return false;
    }
    state->streaming.reset();
    endBodyHold(conn, state);
    if (result == HttpParser::Result::kComplete) {
      requestDone(state, state->closing);
      body->end(RequestBody::End::kComplete);
      return !state->closing && conn->connected();
    }
    // A malformed chunk, or past maxStreamedBodyBytes.
    LOG_DEBUG << conn->name() << ": streamed body broke off, " << parser.errorStatus() << " "
              << parser.errorMessage();
    const int status = parser.errorStatus();
    // Held first: the body's callbacks may be all that holds the writer.
    const std::shared_ptr<Http1Writer> writer = state->pending.lock();
    body->end(RequestBody::End::kAborted);
    state->linger = true;
    if (writer && state->answering) {
      writer->refuseInLoop(status);  // its end closes the connection
    } else if (!state->closing) {
      state->closing = true;
      finishClosing(conn, state, conn->inputBuffer());
    }
    return false;
  }
  return false;
}

void HttpServer::bodyWanted(const TcpConnectionPtr& conn) {
  ConnectionState* state = stateOf(conn);
  if (state == nullptr || !state->streaming || state->closing || !conn->connected()) return;
  const StateHandle keep(state);
  Buffer* input = conn->inputBuffer();
  if (!feedBody(conn, state, input)) return;
  // Complete: what followed the body is the next request, for onMessage
  // (which holds it behind the answer still to come).
  if (input->readableBytes() > 0) {
    conn->stopRead();
    conn->startRead();
  }
}

void HttpServer::endBodyHold(const TcpConnectionPtr& conn, ConnectionState* state) {
  if (!state->bodyStoppedRead) return;
  state->bodyStoppedRead = false;
  conn->startRead();
}

}  // namespace libnet::http
