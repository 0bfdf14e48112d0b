// HttpServer: HTTP/1.1 on a TcpServer. One HttpParser per connection (kept in
// the connection's context); every complete request already received is
// answered in order before more is read (pipelining), and the answers to one
// batch go out in one write. The handler runs on the connection's loop thread
// and fills an HttpResponse; the server adds Content-Length, Date (formatted
// once per second per thread) and the Connection header, and sends a file
// body the handler attached with the headers in one write when it is at most
// Options::inlineFileMax bytes, else with TcpConnection::sendFile.
//
// Answers that come later: with setAsyncHandler() instead, the handler gets
// a ResponseWriter and may answer after it returns, from any thread, with a
// body streamed in pieces under back-pressure (ResponseWriter.h,
// docs/http-server.md). Requests pipelined behind such an answer wait for
// it; a connection waiting for one is not idle; a drain lets it finish.
//
// Protection, all on by default: answers to a pipelining client that does
// not read them are capped by the connection's output limit
// (Options::maxQueuedOutput, which is TcpServer's: past it the connection
// pauses reading, the server stops answering and leaves the pipelined
// requests in the input buffer, and the connection hands them back once
// half the output has drained; queued file ranges count, each holding an
// open fd); the
// parser's limits (414 / 431 / 413 / 400 / 417 /
// 501 / 505, then close); a request whose line and headers are not complete
// within headerTimeout after its first byte is answered 408 and closed at
// that deadline, whether the client has gone silent or keeps trickling bytes,
// and whatever the idle timeout; the bodies of requests still arriving share
// one server-wide budget (maxBufferedBodyBytes), and a request whose body
// does not fit is answered 503 and closed; keep-alive connections idle for
// idleTimeout are closed by the TcpServer's timing wheel. After an error
// response the server half-closes and discards whatever else the client
// sends, so the response is not lost to a reset.
//
// The header deadline is a one-shot timer of the connection's loop, armed
// only when a read leaves a request incomplete in its line or headers (a
// request that arrives whole costs no timer), cancelled when the headers
// complete or the connection closes; the timer holds a weak_ptr to the
// connection, never the connection itself.
//
// Strictness (RFC 9110 / 9112): Transfer-Encoding together with
// Content-Length, a Content-Length list of different values, or two
// Content-Length fields that differ are 400 (request smuggling); a list of
// identical values ("5, 5") is one length. An Expect other than 100-continue
// (any case) is 417. A bare LF ends a line as CRLF does (RFC 9112 2.2 allows
// it, nginx accepts it, and it cannot change framing here since every line
// end is found at its LF); a CR anywhere but right before that LF is 400.
//
// Protocol upgrades (WebSocket, net/websocket/): a request with an Upgrade
// header goes to the upgrade handler first, if one is set. It may decline
// (the request goes to the handler as any other), reject (its response is
// the answer, and the connection closes after it), or take the connection:
// the server then answers nothing more on it, stops its header deadline,
// and forgets it (it clears the connection's context unless the taker has
// set one of its own), and the taker gets the bytes the client
// sent after the request (`leftover`: the first frames of the new protocol,
// which must not be lost) and from then on sets the connection's callbacks.
// Answers to requests pipelined before the upgrade request go out before the
// upgrade handler runs. Works with TLS and I/O threads alike (the handler
// runs on the connection's loop thread).
//
// Construct, start() and destroy on the base loop's thread (as TcpServer).
// With I/O threads, no callback of the server (the handler included) runs
// once the destructor has returned.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/SocketAddress.h"
#include "net/TcpServer.h"
#include "net/http/BodyBudget.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/ResponseWriter.h"

namespace libnet {
class Buffer;
class ConnectionLayer;
class EventLoop;
}  // namespace libnet

namespace libnet::http {

class Http1RequestBody;
class Http1Writer;
class WriterGate;

class HttpServer {
 public:
  // May throw: an escaping exception becomes a 500 and a close.
  using Handler = std::function<void(const HttpRequest&, HttpResponse*)>;

  // An answer that may come later (ResponseWriter.h, docs/http-server.md):
  // called on the connection's loop thread with the request (valid until it
  // returns: copy what is needed later) and the writer, which may be kept
  // and used from any thread. Once set, it answers every request instead of
  // the Handler. Throwing before the answer has started is a 500 (after it,
  // the connection is cut off).
  using AsyncHandler = std::function<void(const HttpRequest&, ResponseWriterPtr)>;

  // Which handler answers a request, chosen by the router (setRouter) when
  // the request's head is complete (its body may still be on its way):
  // kHandler, the synchronous Handler (the body is read whole first);
  // kAsync, the AsyncHandler, likewise after the whole body; kStreamedBody,
  // the AsyncHandler at once, the body following in pieces through
  // ResponseWriter::requestBody() (RequestBody.h), held back by flow control
  // and not counted against maxBufferedBodyBytes. A route whose handler is
  // not set is answered 500.
  enum class Route { kHandler, kAsync, kStreamedBody };
  // Runs on the connection's loop thread with the request's head (no body
  // yet). May throw: that is a 500 and a close.
  using Router = std::function<Route(const HttpRequest& head)>;

  // What the upgrade handler did with a request that asks to switch protocols.
  enum class Upgrade {
    kDeclined,  // not ours: the request goes to the handler
    kRejected,  // answered with the response the upgrade handler filled, then closed
    kTaken,     // the connection now speaks another protocol (see the file comment)
  };
  // Runs on the connection's loop thread; `leftover` holds what the client
  // sent after the request. Taking the connection, it must set the
  // connection's message callback (and its connection callback, to hear of
  // the close) and consume what it can of `leftover` before returning: the
  // rest stays in the connection's input and comes with the next read. May
  // throw: that is a 500 and a close.
  using UpgradeHandler = std::function<Upgrade(const HttpRequest&, const TcpConnectionPtr&,
                                               Buffer* leftover, HttpResponse* rejection)>;

  // A second protocol on the same port, chosen before any HTTP/1.1 is parsed
  // (HTTP/2: net/http2/Http2Server.h). The taker is asked once when the
  // connection comes up (`input` null: a TLS connection's ALPN choice is
  // known then) and, unless it took it, with the first bytes the client
  // sends. kNeedMore (first bytes only): too few bytes to tell; they stay in
  // the input and the header deadline runs. kTaken: as for an upgrade, the
  // taker now owns the connection's callbacks and context and has consumed
  // what it could of `input`. Runs on the connection's loop thread; must not
  // throw.
  enum class Take { kNotMine, kNeedMore, kTaken };
  using ConnectionTaker = std::function<Take(const TcpConnectionPtr&, Buffer* input)>;

  // Everything the server is configured with, given to the constructor and
  // checked there (std::invalid_argument). The first fields are forwarded to
  // the TcpServer underneath (TcpServer::Options), with HTTP's defaults; it
  // always has TCP_NODELAY (a response is one write: Nagle must never hold
  // its tail), and its idle tick is derived from idleTimeout.
  //   HttpServer server(loop, addr, "web", {.threads = 4, .idleTimeout = 30s});
  struct Options {
    // I/O loop threads; 0: everything on the server's loop.
    int threads = 0;
    TcpServer::AcceptMode acceptMode = TcpServer::AcceptMode::kPerLoop;
    bool ringHandOver = true;  // TcpServer::Options::ringHandOver
    bool reusePort = false;    // TcpServer::Options::reusePort
    // TcpServer::Options::handOver (kHandOver: round-robin or least
    // connections) and cpuAffinity (I/O loop i on cpuAffinity[i % size]).
    TcpServer::HandOver handOver = TcpServer::HandOver::kRoundRobin;
    std::vector<int> cpuAffinity{};
    // TCP_DEFER_ACCEPT (TcpServer::Options::deferAccept): HTTP clients speak
    // first. Zero: off.
    Duration deferAccept = Duration::zero();
    // TLS: tls::newLayer(context) (net/tls/TlsLayer.h). Null: plain HTTP.
    std::shared_ptr<const ConnectionLayer> layer{};
    // Keep-alive connections idle this long are closed by the TcpServer's
    // timing wheel; zero: never.
    Duration idleTimeout = std::chrono::seconds(60);
    // Each connection's output limit (TcpServer::Options::maxQueuedOutput):
    // a client that pipelines requests without reading the answers is not
    // answered further (nor read from) while more than this waits to be
    // written to it; TCP flow control then holds the client back. 0: no
    // limit. Being the connection's limit, it also bounds what one io_uring
    // receive takes (the room left under it): keep it well above a request.
    size_t maxQueuedOutput = 1024 * 1024;

    HttpParser::Limits limits{};
    // Must be positive: there is no "off".
    Duration headerTimeout = std::chrono::seconds(10);
    // File bodies up to this size are read into the response and sent with
    // its headers in one write; larger ones go out with sendfile(2).
    size_t inlineFileMax = 64 * 1024;
    // Request bodies still arriving, summed over every connection and loop
    // thread, may take at most this much; a request whose body would not
    // fit is answered 503 (before "100 Continue" when the client asked for
    // one). A body is counted from the end of its headers at its full
    // Content-Length, a chunked one chunk by chunk as chunk sizes arrive,
    // until its request has been answered or its connection closes. A
    // chunked body may overshoot by the body bytes of the delivery that
    // pushed it over (one read: at most 64 KiB on epoll, one provided
    // buffer on io_uring, a 64 KiB slice of kept input) before its 503; a body that
    // arrives whole with its headers is answered at once and never counted.
    // At least limits.maxBodyBytes (else the largest bodies the limits allow
    // could never be accepted: std::invalid_argument). 0: no bound.
    size_t maxBufferedBodyBytes = 64 * 1024 * 1024;

    // PROXY protocol: TcpServer::Options::proxyProtocol, forwarded. With it
    // on, HttpRequest::peerAddress() is the client the proxy names.
    TcpServer::Options::ProxyProtocolOptions proxyProtocol{};
    // Connection limits (TcpServer::Options: 0 is no limit). A client over
    // one gets "503 Service Unavailable" with Retry-After (retryAfter,
    // rounded up to whole seconds) and "Connection: close", then the close;
    // with a TLS layer nothing can be answered before a handshake, so it is
    // only closed.
    size_t maxConnections = 0;
    size_t maxConnectionsPerPeer = 0;
    Duration retryAfter = std::chrono::seconds(1);
    // Graceful drain (drain()).
    // Keep-alive race: clients such as wrk send their next request right
    // after reading a response, so a connection that went idle less than
    // this long ago when the drain starts is given until then to send one
    // more request (answered with Connection: close) before it is closed.
    Duration drainGrace = std::chrono::milliseconds(200);
    // The back-pressure marks of every ResponseWriter (AsyncHandler).
    ResponseWriter::Options writer{};
    // A body streamed to the handler (Route::kStreamedBody) longer than this
    // is refused: 413 before the answer has started (as soon as its
    // Content-Length shows it), else the body ends kAborted and the answer
    // is cut off. limits.maxBodyBytes bounds only bodies read whole. 0: no
    // bound.
    uint64_t maxStreamedBodyBytes = uint64_t{1} << 30;
  };

  // Binds (throws std::system_error like TcpServer); throws
  // std::invalid_argument for a bad option.
  HttpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name);
  HttpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name, Options options);
  // On sockets already listening, inherited (TcpServer's constructor of the
  // same form says which loop accepts on which).
  HttpServer(EventLoop* loop, std::vector<UniqueFd> listeningSockets, std::string name,
             Options options);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Writers still held elsewhere do nothing from here on.
  ~HttpServer();

  // Before start() (std::logic_error after it).
  void setHandler(Handler handler);
  void setAsyncHandler(AsyncHandler handler);
  // Without a router, every request goes to the AsyncHandler when one is
  // set, else to the Handler (both read the body whole).
  void setRouter(Router router);
  void setUpgradeHandler(UpgradeHandler handler);
  void setConnectionTaker(ConnectionTaker taker);
  // Whether a connection the server has handed over (to the connection
  // taker, or to an upgrade handler) is busy when the idle timeout finds it
  // quiet: waiting on work of its own, such as an HTTP/2 stream whose
  // answer is still to come. A busy connection with nothing stuck in its
  // output is kept, and comes round again one idle timeout later; any
  // other is closed as idle. Called on the connection's loop thread; must
  // not throw. http2::serve() sets it.
  using BusyCheck = std::function<bool(const TcpConnectionPtr&)>;
  void setBusyCheck(BusyCheck check);
  // Before start(): called once on this loop when drain() starts, for the
  // connections the server has handed over (HTTP/2 registers its GOAWAY
  // here; a WebSocket application may close its own). A connection taken
  // and not closed by its listener is force-closed at the drain deadline.
  void addDrainListener(std::function<void()> listener);
  void start();

  // Graceful drain, on this loop after start() (TcpServer::drain): stops
  // accepting; a connection idle between requests closes (one idle for
  // less than Options::drainGrace gets until then to send one more
  // request); a request being received, or arriving later, is answered
  // with Connection: close (requests pipelined behind it are all answered,
  // the last with Connection: close), then the connection closes. `done`
  // runs once every connection has closed, or at `deadline` after the rest
  // were force-closed. A second call with a shorter deadline brings it
  // forward (zero: now).
  void drain(Duration deadline, std::function<void()> done);

  // The request handler, for a protocol front end that answers with it
  // (HTTP/2). Set before start(); read on any loop thread after it.
  [[nodiscard]] const Handler& handler() const { return handler_; }
  [[nodiscard]] const AsyncHandler& asyncHandler() const { return asyncHandler_; }
  [[nodiscard]] const Router& router() const { return router_; }
  // What writers use to reach a loop while this server exists (WriterGate.h),
  // for a protocol front end that hands out writers of its own (HTTP/2).
  [[nodiscard]] const std::shared_ptr<WriterGate>& writerGate() const { return gate_; }

  [[nodiscard]] const Options& options() const { return options_; }
  [[nodiscard]] SocketAddress listenAddress() const { return server_.listenAddress(); }
  // For its statistics, and for callbacks of the application's own (a
  // write-complete callback, a thread-init callback) set before start(): the
  // server sets the connection and message callbacks itself.
  [[nodiscard]] TcpServer& tcpServer() { return server_; }
  // Bytes of request bodies counted against maxBufferedBodyBytes right now,
  // over all loop threads. Any thread.
  [[nodiscard]] size_t bufferedBodyBytes() const;
  // The budget itself, for a protocol front end whose request bodies draw on
  // it as HTTP/1.1's do (HTTP/2). Any thread.
  [[nodiscard]] const std::shared_ptr<BodyBudget>& bodyBudget() const { return bodyBudget_; }

  // The setter of 0.1, kept for one minor version (CHANGELOG.md): sets
  // Options::threads before start() (std::logic_error after it).
  [[deprecated("use Options::threads")]] void setThreadNum(int numThreads);

 private:
  friend class Http1Writer;
  friend class Http1RequestBody;
  struct ConnectionState;
  // What a connection's context holds: its ConnectionState (HttpServer.cc).
  class StateHandle;
  // The HTTP state kept in conn's context; null once the connection is down.
  static ConnectionState* stateOf(const TcpConnectionPtr& conn);

  // The constructors' part: the server's callbacks on the TcpServer.
  void takeCallbacks();
  void onConnection(const TcpConnectionPtr& conn);
  void onMessage(const TcpConnectionPtr& conn, Buffer* buf, Timestamp receiveTime);
  // Before the next pipelined request: hands the answers batched so far to
  // the connection when they would take it past its output limit, and says
  // whether to go on (false: it has paused reading; the rest waits in `buf`).
  static bool mayAnswerMore(const TcpConnectionPtr& conn, Buffer* out);
  // A read left a request incomplete (`buf` holds what is left of it): the
  // header deadline, the body's budget, "100 Continue". May queue an error.
  void onIncomplete(const TcpConnectionPtr& conn, ConnectionState* state, const Buffer* buf,
                    Buffer* out);
  // The header deadline. Only arming runs with the server at hand (inside
  // onMessage); the rest is static, as a timer may fire, and a connection
  // close, after the server has been destroyed.
  void startHeaderDeadline(const TcpConnectionPtr& conn, ConnectionState* state) const;
  static void endHeaderDeadline(const TcpConnectionPtr& conn, ConnectionState* state);
  static void onHeaderDeadline(const std::weak_ptr<TcpConnection>& weakConn);
  // After an error answer (or Connection: close) has been queued: frees what
  // the request held, then half-closes or closes (see the file comment).
  static void finishClosing(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf);
  // Appends one response (and sends any file body) to `out`; false when the
  // connection is to close after it.
  // `close`: answer with Connection: close whatever the request asked.
  bool respond(const TcpConnectionPtr& conn, const HttpRequest& request, Buffer* out, bool close);
  // The same with the AsyncHandler: the answer is over (and the connection
  // stays or closes), or pending (the connection waits for answerEnded()).
  enum class Answered { kKeepAlive, kClose, kPending };
  // `body`: the request's body in pieces (Route::kStreamedBody), handed out
  // through the writer.
  Answered respondAsync(const TcpConnectionPtr& conn, ConnectionState* state,
                        const HttpRequest& request, Buffer* out, bool close,
                        std::shared_ptr<Http1RequestBody> body = nullptr);
  // With a router, at a request's head: what onMessage does next.
  enum class Next { kParseOn, kStop, kReturn };
  Next routeHead(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf, Buffer* out);
  // A complete request: the upgrade handler's turn, then its handler's.
  Next answerRequest(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf,
                     Buffer* out);
  // Route::kStreamedBody: the AsyncHandler now, the body after it.
  Next startStreamed(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf,
                     Buffer* out);
  // Hands the streamed body's pieces in `buf` to it while it takes them;
  // true once it is complete and the connection goes on (what follows in
  // `buf` is the next request), false while it waits or when it broke off.
  static bool feedBody(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf);
  // The body asks for what waits (resume(), its first data callback).
  static void bodyWanted(const TcpConnectionPtr& conn);
  // Reading, if the streamed body stopped it, goes on.
  static void endBodyHold(const TcpConnectionPtr& conn, ConnectionState* state);
  // Appends `response` (with its file) to `out`; false when its file could
  // not be read (a 500 is appended instead) and the connection must close.
  static bool appendResponse(const TcpConnectionPtr& conn, HttpResponse* response, bool headOnly,
                             size_t inlineFileMax, Buffer* out);
  // Its file body, after the head that starts at `mark` in `out` (taken
  // back, for a 500, if the file cannot be read).
  static bool appendFile(const TcpConnectionPtr& conn, HttpResponse* response, size_t inlineFileMax,
                         size_t mark, Buffer* out);
  // For a writer, on the loop: an answer handed off has ended; the
  // connection goes on with the requests that waited behind it, or closes.
  static void answerEnded(const TcpConnectionPtr& conn, bool close);
  [[nodiscard]] static bool drainingConnection(const TcpConnectionPtr& conn);
  // The request has been answered (or its answer handed off): the parser
  // and the body's budget are free for the next.
  static void requestDone(ConnectionState* state, bool closing);
  static void holdBehindAnswer(const TcpConnectionPtr& conn, ConnectionState* state,
                               const Buffer* buf);
  // Bytes pipelined behind a pending answer that are kept before reading
  // pauses.
  static constexpr size_t kHeldInputMax = 64 * 1024;
  // Draining: the drain callback of each HTTP/1.1 connection, and its
  // re-check once the grace has passed.
  static void onDrain(const TcpConnectionPtr& conn, Duration grace);
  static void closeIfIdle(const TcpConnectionPtr& conn, ConnectionState* state, Duration grace);
  // A request with an Upgrade header and an upgrade handler: kDeclined to
  // answer it as usual; kTaken: the server is done with the connection
  // (`state` is gone); kRejected: the rejection is in `out`, close after it.
  Upgrade tryUpgrade(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf,
                     Buffer* out);
  static void appendError(int status, Buffer* out);
  // The connection taker's turn on a connection's first bytes: true when
  // onMessage is to go on with HTTP/1.1.
  bool offerFirstBytes(const TcpConnectionPtr& conn, ConnectionState* state, Buffer* buf);

  Options options_;  // changed only by the deprecated setThreadNum(), before start()
  Handler handler_;
  AsyncHandler asyncHandler_;
  Router router_;
  UpgradeHandler upgradeHandler_;
  ConnectionTaker taker_;
  std::vector<std::function<void()>> drainListeners_;
  bool started_ = false;
  // Shared with every connection's reservation, which may outlive the server.
  std::shared_ptr<BodyBudget> bodyBudget_;
  std::shared_ptr<WriterGate> gate_;
  // Shared with the idle callback, which may run on an I/O loop.
  std::shared_ptr<BusyCheck> busyCheck_;
  // Declared last, so destroyed first: its callbacks use this object's
  // members (the handler, the options, the budget), and with I/O threads they
  // run until ~TcpServer has stopped the acceptors and joined those threads.
  // Destroyed after the members, it would let an I/O loop call a handler
  // already destroyed, mid-request.
  TcpServer server_;
};

// The name of 0.1, kept for one minor version (CHANGELOG.md).
using HttpServerOptions [[deprecated("use HttpServer::Options")]] = HttpServer::Options;

}  // namespace libnet::http
