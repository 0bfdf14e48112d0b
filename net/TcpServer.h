// TcpServer: accepts connections and serves each on one loop of its
// EventLoopThreadPool (0 threads: everything on the server's own loop). With
// I/O threads, how connections reach their loops is the AcceptMode: by
// default each I/O loop has its own listening socket (SO_REUSEPORT) and
// accepts and serves its own connections, with no thread hand-over; or the
// server's loop accepts and hands each connection to an I/O loop,
// round-robin. Each loop keeps its live connections in a map of its own (no
// hop between threads to add or remove one); they are torn down when the
// server is destroyed.
//
// Destruction: the destructor first stops every acceptor on its own loop and
// waits for that (bounded), so that no connection is made after it; sends
// off the sockets it has handed over ring to ring but not yet submitted;
// then each loop tears its connections down (a socket that reaches a loop
// after that is closed there), and the I/O threads are joined,
// before any other member goes: with I/O threads, no callback of the server
// runs once the destructor has returned. What connections use (callbacks,
// ConnectionLayer, options) is copied in start() into one object that the
// acceptors and every connection share, so none of them depends on the
// server object's lifetime. The server's own loop need not be running (a
// main() may destroy its server after loop() returned).
//
// Construct, start() and destroy it on its loop's thread. Binding happens in
// the constructor, so "port in use" or "permission denied" surfaces there as
// std::system_error; listen() failures surface from start(). Set the
// callbacks and options before start(): I/O loops read them from then on.
// Callbacks run on the connection's loop thread.
//
// Idle timeout (setIdleTimeout, off by default): each I/O loop gets one
// TimingWheel, built in start() and destroyed on its own loop after the last
// connection of that loop has left it. Every connection joins its loop's
// wheel when established, is touched whenever bytes arrive and whenever
// queued output makes progress (on either backend), and leaves it when
// destroyed; one with no progress either way for the timeout is closed
// (forceClose(), or the idle callback). So a slow reader of a long download
// is not idle, and a reader that has stopped reading is.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/InetAddress.h"
#include "net/TimingWheel.h"

namespace libnet {

class Acceptor;
class ConnectionLayer;
class EventLoop;
class EventLoopThreadPool;
class TcpConnection;

class TcpServer {
 public:
  using ThreadInitCallback = std::function<void(EventLoop*)>;
  // kReusePort: SO_REUSEPORT on the listening socket from the start, so that
  // other processes (of the same user) may listen on the port too.
  enum class Option { kNoReusePort, kReusePort };
  // How a server with I/O threads spreads connections over its loops (no
  // difference without threads: the server's loop does everything).
  enum class AcceptMode {
    // Default. One listening socket per I/O loop, all on the port bound in
    // the constructor (SO_REUSEPORT; the constructor's socket is closed in
    // start() and its port taken over at once): the kernel spreads
    // connections over them, and each loop accepts and serves its own.
    // docs/benchmarks.md measures it against kHandOver.
    kPerLoop,
    // One listening socket, on the server's loop, which hands each accepted
    // socket to an I/O loop, round-robin; the connection is made on the I/O
    // loop. Where the accepting loop and the I/O loop both run on io_uring
    // (and the kernel has IORING_OP_MSG_RING), the socket goes as a message
    // from the one's ring to the other's, with the accepting loop's next
    // submission (no lock, no eventfd write, no system call of its own);
    // otherwise, or with setRingHandOver(false), through the I/O loop's
    // queue (a lock, and an eventfd write when that loop sleeps).
    kHandOver,
  };
  // One I/O loop's share of the work (loopStats()).
  struct LoopStats {
    size_t connections = 0;      // live now
    uint64_t accepted = 0;       // connections made on the loop since start()
    uint64_t ringHandOvers = 0;  // of those, handed over ring to ring (kHandOver)
  };

  TcpServer(EventLoop* loop, const InetAddress& listenAddr, std::string name,
            Option option = Option::kNoReusePort);
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] EventLoop* getLoop() const { return loop_; }
  // The bound address (the real port when port 0 was asked for).
  [[nodiscard]] InetAddress listenAddress() const;

  // Before start(): number of I/O loop threads (0: all on this loop).
  void setThreadNum(int numThreads);
  void setThreadInitCallback(ThreadInitCallback cb) { threadInitCallback_ = std::move(cb); }
  // Before start(). Default kPerLoop.
  void setAcceptMode(AcceptMode mode) { acceptMode_ = mode; }
  // Before start(), kHandOver: false makes every hand-over go through the
  // I/O loop's queue, even between io_uring loops that could pass the
  // socket ring to ring (for comparing the two; default true).
  void setRingHandOver(bool on) { ringHandOver_ = on; }
  // Before start(): TCP_DEFER_ACCEPT on the listening socket(s), for
  // protocols where the client speaks first (HTTP): the kernel completes the
  // handshake but hands the connection over only once data has arrived
  // (or, after about `seconds`, without it), so a connection that would
  // only sit idle costs the server nothing until then. 0: off (default).
  void setDeferAccept(int seconds) { deferAcceptSeconds_ = seconds; }
  // TCP_NODELAY on every accepted connection.
  void setTcpNoDelay(bool on) { tcpNoDelay_ = on; }
  // Before start(): a layer between every connection and its backend (TLS:
  // std::make_shared<TlsLayer>(context), net/tls/). Callbacks see plaintext;
  // the connection (up) callback runs once the handshake is done.
  void setConnectionLayer(std::shared_ptr<const ConnectionLayer> layer) {
    layer_ = std::move(layer);
  }
  // Back-pressure for every connection (TcpConnection::setMaxQueuedOutput):
  // reading from a peer pauses while more than `bytes` of output wait for
  // it, and resumes once half has drained; 0 turns it off. Default:
  // TcpConnection::kDefaultMaxQueuedOutput (64 MiB).
  void setMaxQueuedOutput(size_t bytes) { maxQueuedOutput_ = bytes; }
  // Before start(): close a connection once nothing has moved on it (no
  // byte received, no queued byte written) for `timeout`; it is closed
  // between `timeout` and `timeout + tick` after the last progress. Zero turns it off (the
  // default); when off, the read path pays one predictable branch. Throws std::invalid_argument for
  // a negative timeout, or (timeout on) a tick that is not positive or more than
  // TimingWheel::kMaxBuckets - 1 times shorter than the timeout.
  void setIdleTimeout(Duration timeout, Duration tick = std::chrono::seconds(1));
  // Before start(): called on the connection's loop for an idle connection,
  // instead of conn->forceClose() (say, to log, or to send a goodbye and
  // shutdown()). A connection it leaves open comes round again one timeout
  // later.
  void setIdleCallback(TimingWheel::ExpireCallback cb) { idleCallback_ = std::move(cb); }

  // Starts the I/O threads and listens. Idempotent. Loop thread only.
  void start();

  // Before start(). Without I/O threads also later, on the loop's thread,
  // for the connections made from then on; with I/O threads (either accept
  // mode) a later call is ignored, with a warning: the I/O loops make their
  // connections with what start() copied.
  void setConnectionCallback(ConnectionCallback cb);
  void setMessageCallback(MessageCallback cb);
  void setWriteCompleteCallback(WriteCompleteCallback cb);

  // Live connections. Any thread; with I/O threads, a sum of per-loop counts
  // that each loop updates on its own.
  [[nodiscard]] size_t connectionCount() const;
  // Per I/O loop (the server's own without threads), in the pool's order,
  // after start(); empty before. Any thread; each loop counts its own.
  [[nodiscard]] std::vector<LoopStats> loopStats() const;

 private:
  // What the server keeps for one I/O loop: used on that loop's thread only
  // (built and read by the server's thread before start() hands it over).
  struct LoopState;
  // What making a connection takes, copied from the settings in start():
  // held by every LoopState, so that it outlives the acceptors, the
  // hand-overs and the connections.
  struct ConnectionFactory;

  // For a callback set after start(): the factory that the accepting loop
  // uses, or null (not started; or per-loop acceptors, with a warning).
  ConnectionFactory* startedFactory(const char* what);
  void startPerLoopAcceptors();
  // Destroys every per-loop acceptor on its own loop and waits (bounded)
  // until all are gone.
  void stopPerLoopAcceptors();
  // On state's loop: makes the connection and establishes it.
  static void newConnection(LoopState* state, UniqueFd sockfd,
                            const std::optional<InetAddress>& peerAddr);
  // On the accepting loop (kHandOver): has state's loop make the connection,
  // ring to ring where it can, else through the loop's queue.
  void handOver(LoopState* state, UniqueFd sockfd, const std::optional<InetAddress>& peerAddr);
  // start(), kHandOver: has each I/O loop that the accepting loop can post
  // to receive sockets ring to ring, and waits (bounded) until they do.
  void startRingHandOver();
  // On such an I/O loop: makes the loop's state receive the sockets posted
  // to its poller.
  static void startReceiving(LoopState* state);
  // On state's loop: the connection is done; it is destroyed from the loop's
  // queue (we may be inside its own event handler).
  static void removeConnection(LoopState* state, const TcpConnectionPtr& conn);
  // On state's loop: the server is going; destroys its connections.
  static void tearDown(LoopState* state);

  EventLoop* loop_;
  const std::string name_;
  std::unique_ptr<Acceptor> acceptor_;  // kHandOver, or no I/O threads
  std::unique_ptr<EventLoopThreadPool> threadPool_;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  WriteCompleteCallback writeCompleteCallback_;
  ThreadInitCallback threadInitCallback_;
  bool tcpNoDelay_ = false;
  std::shared_ptr<const ConnectionLayer> layer_;  // null: plain TCP
  std::optional<size_t> maxQueuedOutput_;         // unset: the connection's default
  AcceptMode acceptMode_ = AcceptMode::kPerLoop;
  bool ringHandOver_ = true;
  int deferAcceptSeconds_ = 0;
  InetAddress listenAddr_;  // as bound (the real port)
  Duration idleTimeout_{};
  Duration idleTick_{};
  TimingWheel::ExpireCallback idleCallback_;
  bool started_ = false;
  bool withIoThreads_ = false;                  // from start(): connections made on I/O loops
  std::shared_ptr<ConnectionFactory> factory_;  // from start()
  // One per I/O loop (the server's own without threads), from start(). Each
  // is also held by the tear-down functor queued to its loop by ~TcpServer,
  // so it lives until its connections are gone.
  std::vector<std::shared_ptr<LoopState>> loopStates_;
  size_t nextLoop_ = 0;  // kHandOver's round-robin
};

}  // namespace libnet
