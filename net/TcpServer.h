// TcpServer: accepts connections and serves each on one loop of its
// EventLoopThreadPool (0 threads: everything on the server's own loop). With
// I/O threads, how connections reach their loops is the AcceptMode: by
// default each I/O loop has its own listening socket (SO_REUSEPORT) and
// accepts and serves its own connections, with no thread hand-over; or the
// server's loop accepts and hands each connection to an I/O loop,
// round-robin or to the one with the fewest connections (Options::handOver).
// I/O loop threads may be pinned to CPUs (Options::cpuAffinity). Each loop
// keeps its live connections in a map of its own (no hop between threads to
// add or remove one); they are torn down when the server is destroyed.
//
// Despite the name, any stream socket: TCP on an IPv4 or IPv6 address, or a
// Unix domain socket on a path or an abstract name (SocketAddress::unixPath,
// unixAbstract). For a path, the socket file is handled deliberately: a
// stale one (nothing answers on it) is removed before bind, a live server's
// path or a file that is not a socket is refused (std::system_error, the
// file left untouched), Options::unixFileMode is applied before anyone can
// connect, and the file is removed when the server is destroyed (if it is
// still the one the server made). docs/sockets.md has the details. The
// TCP-only options (tcpNoDelay, deferAccept, reusePort) do nothing on a
// Unix socket, and kPerLoop accepts as kHandOver does (a path or name can
// be bound only once). A Unix server listens from its constructor on
// (clients that come before start() wait in the backlog), so that another
// server's stale-file probe never takes it for a dead one.
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
// std::system_error; listen() failures surface from start(). Configuration
// is the Options given to the constructor, checked there (a bad value throws
// std::invalid_argument); the setters of 0.1 that remain, deprecated, change
// the same fields before start() and throw std::logic_error after it. Callbacks are
// set before start() (one set after it throws std::logic_error: the I/O
// loops make connections with what start() copied). Callbacks run on the
// connection's loop thread.
//
// Idle timeout (Options::idleTimeout, off by default): each I/O loop gets one
// TimingWheel, built in start() and destroyed on its own loop after the last
// connection of that loop has left it. Every connection joins its loop's
// wheel when established, is touched whenever bytes arrive and whenever
// queued output makes progress (on either backend), and leaves it when
// destroyed; one with no progress either way for the timeout is closed
// (forceClose(), or the idle callback). So a slow reader of a long download
// is not idle, and a reader that has stopped reading is.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/Duration.h"
#include "base/UniqueFd.h"
#include "net/Callbacks.h"
#include "net/ProxyProtocol.h"
#include "net/SocketAddress.h"

namespace libnet {

class Acceptor;
class ConnectionLayer;
class EventLoop;
class EventLoopThreadPool;
class TcpConnection;

class TcpServer {
 public:
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
    // socket to an I/O loop (Options::handOver: round-robin by default);
    // the connection is made on the I/O loop. Where the accepting loop and
    // the I/O loop both run on io_uring (and the kernel has
    // IORING_OP_MSG_RING), the socket goes as a message
    // from the one's ring to the other's, with the accepting loop's next
    // submission (no lock, no eventfd write, no system call of its own);
    // otherwise, or with Options::ringHandOver false, through the I/O loop's
    // queue (a lock, and an eventfd write when that loop sleeps).
    kHandOver,
  };
  // Which I/O loop the accepting loop hands a connection to (kHandOver, and
  // a Unix socket's server, which accepts on its own loop in either mode).
  enum class HandOver {
    // Default. Each loop in turn.
    kRoundRobin,
    // The loop with the fewest live connections, the one after the last
    // chosen among equals (so equals still take turns). A loop's count is
    // every socket handed to it that has not ended yet: on its way there,
    // waiting for a PROXY protocol header, or an open connection; the
    // accepting loop keeps how many it handed to each, and each loop counts
    // the ones that ended on it (closed, refused by a limit, a rejected
    // header) in atomics that only it writes, so choosing takes no lock and
    // one relaxed load per counter. It balances how many connections each
    // loop holds, not how busy they keep it: a loop with a few connections
    // that stream all the time looks lighter than one with many idle ones.
    // docs/operations.md has the measurement against kRoundRobin and
    // kPerLoop.
    kLeastConnections,
  };
  // TcpConnection::kDefaultMaxQueuedOutput (without including it).
  static constexpr size_t kDefaultMaxQueuedOutput = 64 * 1024 * 1024;

  // Everything a server is configured with, given to the constructor and
  // checked there (std::invalid_argument names the field). Designated
  // initializers name what differs from the defaults:
  //   TcpServer server(loop, addr, "echo", {.threads = 4, .tcpNoDelay = true});
  struct Options {
    // I/O loop threads; 0: everything on the server's own loop. Not negative.
    int threads = 0;
    // How connections reach the I/O loops (no difference without threads).
    AcceptMode acceptMode = AcceptMode::kPerLoop;
    // kHandOver: false makes every hand-over go through the I/O loop's
    // queue, even between io_uring loops that could pass the socket ring to
    // ring (for comparing the two).
    bool ringHandOver = true;
    // kHandOver: how the loop for each connection is chosen.
    HandOver handOver = HandOver::kRoundRobin;
    // CPU pinning: I/O loop thread i runs on cpuAffinity[i % size], pinned
    // before its loop is built (EventLoopThreadPool). Empty: not pinned.
    // Checked in the constructor (std::invalid_argument: a CPU that does
    // not exist, one outside the process's allowed set, or a list with no
    // I/O thread to pin: the server's own loop is the caller's thread,
    // which pinCurrentThread(), base/CpuAffinity.h, pins); a thread the
    // kernel refuses to pin fails start() (std::system_error naming the
    // loop and the CPU).
    std::vector<int> cpuAffinity{};
    // SO_REUSEPORT on the constructor's listening socket from the start, so
    // that other processes (of the same user) may listen on the port too.
    bool reusePort = false;
    // TCP_DEFER_ACCEPT on the listening socket(s), for protocols where the
    // client speaks first (HTTP): the kernel completes the handshake but
    // hands the connection over only once data has arrived (or, after about
    // this long, rounded up to whole seconds, without it), so a connection
    // that would only sit idle costs the server nothing until then. Zero:
    // off. Not negative.
    Duration deferAccept = Duration::zero();
    // TCP_NODELAY on every accepted connection (set on the listening
    // socket, which its accepted sockets inherit: no system call each).
    bool tcpNoDelay = false;
    // A layer between every connection and its backend (TLS:
    // tls::newLayer(context), net/tls/TlsLayer.h). Callbacks see plaintext;
    // the connection (up) callback runs once the handshake is done. Null:
    // plain TCP.
    std::shared_ptr<const ConnectionLayer> layer{};
    // Back-pressure, each connection's output limit
    // (TcpConnection::setMaxQueuedOutput): reading from a peer pauses while
    // more than this waits to be written to it, and resumes, handing the
    // input buffered meanwhile to the message callback first, once half has
    // drained; 0 turns it off. On io_uring it also bounds what one receive
    // takes (the room left under it).
    size_t maxQueuedOutput = kDefaultMaxQueuedOutput;
    // Close a connection once nothing has moved on it (no byte received, no
    // queued byte written) for idleTimeout; it is closed between idleTimeout
    // and idleTimeout + idleTick after the last progress. Zero: off (then
    // the read path pays one predictable branch). Not negative; with it on,
    // idleTick must be positive and at most TimingWheel::kMaxBuckets - 1
    // times shorter than idleTimeout.
    Duration idleTimeout = Duration::zero();
    Duration idleTick = std::chrono::seconds(1);
    // A Unix socket bound to a path: the socket file's mode (say 0660, to
    // let one group in), set after bind and before listen. Unset: what the
    // umask leaves. Ignored for TCP and abstract names (which have no file).
    std::optional<mode_t> unixFileMode{};

    // PROXY protocol (haproxy's send-proxy / send-proxy-v2, v1 or v2, both
    // understood): a load balancer in front says, in a header at the start
    // of each connection, whom it proxies. Off: nothing is ever read as a
    // header. On: the header is read on the connection's loop before the
    // TcpConnection is made, whose peerAddress() and localAddress() are then
    // the header's source and destination (LOCAL, UNKNOWN and the like keep
    // the socket's own); the connection callback, a TLS handshake and the
    // application's bytes all come after it. A connection with a missing,
    // malformed or late header is closed (a WARN line, LoopStats::
    // proxyRejected). Which connections must send one:
    // - trusted empty: every one (the port is reachable only through the
    //   proxy);
    // - trusted not empty: those from the listed sources only; any other
    //   peer is served as a direct client, and its bytes are never read as
    //   a header (a forged one reaches the application as data).
    struct ProxyProtocolOptions {
      bool enabled = false;
      // From accept to the whole header. Positive.
      Duration headerTimeout = std::chrono::seconds(5);
      std::vector<ProxyProtocol::TrustedSource> trusted{};
    };
    ProxyProtocolOptions proxyProtocol{};
    // Connection limits. A connection over a limit is accepted and closed
    // at once (never left in the backlog), after `refusal` is written to it
    // with one non-blocking send, and counted (LoopStats::refused).
    // The most connections open at once over the whole server, all loops
    // (a shared atomic, touched only when set); 0: no limit.
    size_t maxConnections = 0;
    // The most open at once from one client IP address (any port); Unix
    // sockets are exempt. 0: no limit. On, each accept and close takes a
    // short lock (and a getpeername() where the accept reported no address).
    size_t maxConnectionsPerPeer = 0;
    // What a refused client is sent before the close (the input it already
    // sent is read first, so that the close does not turn into a reset
    // that overtakes it); empty: just closed.
    std::string refusal{};
  };

  // One I/O loop's share of the work (loopStats()).
  struct LoopStats {
    size_t connections = 0;      // live now
    uint64_t accepted = 0;       // connections made on the loop since start()
    uint64_t ringHandOvers = 0;  // of those, handed over ring to ring (kHandOver)
    // PROXY protocol: connections closed for a missing, malformed or late
    // header (not counted in accepted).
    uint64_t proxyRejected = 0;
    uint64_t closed = 0;         // connections that closed (before the server went)
    uint64_t refused = 0;        // accepted and closed at once: over a limit
    uint64_t bytesReceived = 0;  // handed to the message callback (plaintext under TLS)
    uint64_t bytesSent = 0;      // sent by the application (written or still queued)
    // Bytes queued on the loop's connections and not yet written, as of the
    // loop's last sum (refreshQueuedOutput(), queuedOutput()); 0 before one.
    size_t queuedOutput = 0;
  };

  // Binds (std::system_error, with the call's name, when it cannot);
  // throws std::invalid_argument for a bad option.
  TcpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name);
  TcpServer(EventLoop* loop, const SocketAddress& listenAddr, std::string name, Options options);
  // Serves sockets that are already bound and listening, inherited from the
  // process that started this one (net/ListenFds.h: systemd socket
  // activation, or a predecessor's hand-over), instead of binding; the
  // server owns them. listenAddress() is the first one's. Which loop accepts
  // on which socket:
  // - with I/O threads and kPerLoop (a TCP first socket): one acceptor per
  //   I/O loop at least, and one per socket at least: acceptor k runs on
  //   loop k % loops and accepts on socket k % sockets (a socket shared by
  //   two loops is dup()ed; both backends may wait on one listening socket
  //   from several loops, and the kernel gives each connection to one);
  // - otherwise (kHandOver, no I/O threads, a Unix first socket): the
  //   server's loop accepts on all of them, and hands out as usual.
  // Options::reusePort and unixFileMode do nothing here (the sockets are
  // bound already); tcpNoDelay and deferAccept are set on every socket. A
  // Unix socket's file is not removed when the server goes: we did not
  // create it. Throws std::invalid_argument when there is no socket, and
  // std::system_error when one is not a socket.
  TcpServer(EventLoop* loop, std::vector<UniqueFd> listeningSockets, std::string name);
  TcpServer(EventLoop* loop, std::vector<UniqueFd> listeningSockets, std::string name,
            Options options);
  ~TcpServer();
  TcpServer(const TcpServer&) = delete;
  TcpServer& operator=(const TcpServer&) = delete;

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] EventLoop* loop() const { return loop_; }
  // The bound address (the real port when port 0 was asked for).
  [[nodiscard]] SocketAddress listenAddress() const;

  [[nodiscard]] const Options& options() const { return options_; }

  // The listening sockets, one fd per socket (not per acceptor), borrowed:
  // for passing on to a successor (net/Successor.h), which then listens on
  // the very same sockets. Before start(): the constructor's; after it,
  // with kPerLoop and no inherited sockets, the per-loop ones; none once
  // drain() has been called (the sockets are being closed). Server's
  // thread only, while the server lives.
  [[nodiscard]] std::vector<int> listeningFds() const;

  // The callbacks: before start(); a call after start() throws
  // std::logic_error (the connections are made with what start() copied).
  //
  // On each I/O loop's thread before its loop runs (without threads: on
  // this loop, from start()).
  void setThreadInitCallback(ThreadInitCallback cb);
  // Called on the connection's loop for an idle connection (idleTimeout),
  // instead of conn->forceClose() (say, to log, or to send a goodbye and
  // shutdown()). A connection it leaves open comes round again one timeout
  // later.
  void setIdleCallback(IdleCallback cb);
  void setConnectionCallback(ConnectionCallback cb);
  void setMessageCallback(MessageCallback cb);
  void setWriteCompleteCallback(WriteCompleteCallback cb);

  // Graceful drain.
  // What a connection is told when the server starts draining (on its loop,
  // once): the protocol above decides whether it closes now (idle) or after
  // its current work. Before start(), like the other setters.
  using DrainCallback = std::function<void(const TcpConnectionPtr&)>;
  void setDrainCallback(DrainCallback cb);
  // Server's loop thread, after start(). Stops accepting at once (every
  // acceptor on its own loop: the sockets already in the backlog, whose
  // handshakes the kernel completed, are accepted and served, and the
  // listening socket is closed, never shut down), then calls the drain
  // callback for every live connection (default: conn->shutdown(), which
  // closes once queued output is written) and for every one made after
  // that (a socket in flight to its loop). Runs `done` on this loop once
  // the last connection has closed, or once `deadline` has passed, after
  // force-closing those left. A second drain() with a shorter deadline
  // brings it forward; drain(Duration::zero(), ...) forces at once; each
  // `done` runs once. Destroying the server before `done` ran is fine (the
  // pending ones never run).
  void drain(Duration deadline, std::function<void()> done);
  [[nodiscard]] bool draining() const { return drain_ != nullptr; }
  // Draining, every listening socket is closed (from then on, connects are
  // refused) and the connections are being told. Server's loop thread.
  [[nodiscard]] bool stoppedAccepting() const;

  // Starts the I/O threads and listens. Idempotent. Loop thread only.
  void start();

  // The configuration setters of 0.1, kept for one minor version
  // (CHANGELOG.md): each sets its Options field, checked as the constructor
  // checks it, before start() (after it: std::logic_error).
  [[deprecated("use Options::threads")]] void setThreadNum(int numThreads);
  [[deprecated("use Options::acceptMode")]] void setAcceptMode(AcceptMode mode);
  [[deprecated("use Options::deferAccept")]] void setDeferAccept(int seconds);
  [[deprecated("use Options::tcpNoDelay")]] void setTcpNoDelay(bool on);
  [[deprecated("use Options::layer")]] void setConnectionLayer(
      std::shared_ptr<const ConnectionLayer> layer);
  [[deprecated("use Options::maxQueuedOutput")]] void setMaxQueuedOutput(size_t bytes);
  [[deprecated("use Options::idleTimeout and idleTick")]] void setIdleTimeout(
      Duration timeout, Duration tick = std::chrono::seconds(1));
  [[deprecated("use loop()")]] [[nodiscard]] EventLoop* getLoop() const { return loop_; }

  // Live connections. Any thread; with I/O threads, a sum of per-loop counts
  // that each loop updates on its own.
  [[nodiscard]] size_t connectionCount() const;
  // Per I/O loop (the server's own without threads), in the pool's order,
  // after start(); empty before. Any thread; each loop counts its own.
  [[nodiscard]] std::vector<LoopStats> loopStats() const;
  // The I/O loops, in loopStats()' order (the server's own without
  // threads), after start(); empty before. Any thread.
  [[nodiscard]] std::vector<EventLoop*> ioLoops() const;
  // Asks every I/O loop to sum the bytes queued on its connections, from its
  // own queue, into LoopStats::queuedOutput; returns at once (on an I/O
  // loop, its own sum is taken at once). At most one request per loop waits
  // in its queue: calls made while one does are answered by it. Any thread.
  void refreshQueuedOutput() const;
  // Per I/O loop as loopStats(): bytes queued on the loop's connections and
  // not yet written. Each loop sums its own, while this waits (at most
  // `wait` each; a loop that does not answer in time reads 0). Any thread,
  // but it blocks: called on a loop thread it stalls that loop's
  // connections meanwhile (counted in EventLoop::Metrics::blockingWaits);
  // a loop should use refreshQueuedOutput() and loopStats() instead.
  [[nodiscard]] std::vector<size_t> queuedOutput(Duration wait = std::chrono::seconds(1)) const;

 private:
  // What the server keeps for one I/O loop: built by the server's thread in
  // start(), then used on that loop's thread, except the counters (atomics:
  // connectionCount(), loopStats()), the hand-over receiver published to
  // the accepting loop (receiving), and the acceptor pointer that
  // ~TcpServer checks before having the loop destroy it.
  struct LoopState;
  // What making a connection takes, copied from the settings in start():
  // held by every LoopState, so that it outlives the acceptors, the
  // hand-overs and the connections.
  struct ConnectionFactory;

  // Throws std::logic_error when `what` (a callback setter) comes after
  // start().
  void checkNotStarted(const char* what) const;
  // The deprecated setters: `what` before start(), the options checked.
  void reconfigure(const char* what, Options options);
  void startPerLoopAcceptors();
  // Destroys every per-loop acceptor on its own loop and waits (bounded)
  // until all are gone.
  void stopPerLoopAcceptors();
  // On state's loop: whether the limits admit one more connection from
  // `peer` (looked up when missing and needed); if so, it is counted
  // against them, under `peerKey` for the per-peer one.
  static bool admit(LoopState* state, int fd, std::optional<SocketAddress>* peer,
                    std::string* peerKey);
  // On state's loop: a connection counted by admit() has closed.
  static void release(LoopState* state, const std::string& peerKey);
  // On state's loop: makes the connection and establishes it.
  // With the PROXY protocol on, a socket goes to the loop's header reader
  // first, which calls this again with `proxied` set: the local address the
  // header gave (none: the socket's own).
  static void newConnection(LoopState* state, UniqueFd sockfd,
                            const std::optional<SocketAddress>& peerAddr,
                            const std::optional<SocketAddress>* proxied = nullptr);
  // start(), PROXY protocol on: a header reader for each loop.
  void startProxyHeaderReaders();
  // On the accepting loop (kHandOver): the loop for the next connection
  // (Options::handOver), counted as handed to it.
  LoopState* chooseLoop();
  // On the accepting loop: sockets handed to state's loop that have not
  // ended yet (HandOver::kLeastConnections).
  static uint64_t liveHandedTo(const LoopState& state);
  // On the accepting loop (kHandOver): has state's loop make the connection,
  // ring to ring where it can, else through the loop's queue.
  void handOver(LoopState* state, UniqueFd sockfd, const std::optional<SocketAddress>& peerAddr);
  // start(), kHandOver: has each I/O loop that the accepting loop can post
  // to receive sockets ring to ring, and waits (bounded) until they do.
  void startRingHandOver();
  // On such an I/O loop: makes the loop's state receive the sockets posted
  // to its poller.
  static void startReceiving(LoopState* state);
  // On state's loop: the connection is done; it is destroyed from the loop's
  // queue (we may be inside its own event handler).
  static void removeConnection(LoopState* state, const TcpConnectionPtr& conn);
  // newConnection(): what conn's close does (with the limits on, it gives
  // back what admit() counted under peerKey).
  static void setCloseCallback(LoopState* state, const TcpConnectionPtr& conn, bool limited,
                               std::string peerKey);
  // On state's loop: the server is going; destroys its connections.
  static void tearDown(LoopState* state);
  // On the state's loop: the bytes queued on its connections, also kept for
  // LoopStats::queuedOutput.
  static size_t sumQueuedOutput(LoopState* state);

  // Inherited sockets (the second constructor), from start(). The per-loop
  // rule: acceptors on the I/O loops.
  void startInheritedPerLoop();
  // Otherwise: acceptor_ takes the first socket, moreAcceptors_ the others.
  void adoptInheritedOnServerLoop();
  // kHandOver or no I/O threads: the acceptors on the server's loop.
  void startServerLoopAcceptors();
  // Options::tcpNoDelay and deferAccept on an acceptor's socket.
  void applySocketOptions(Acceptor& acceptor) const;
  // Graceful drain (drain()), on the server's loop unless said otherwise.
  struct DrainState;
  // What the loops' messages reach the server through: nulled by
  // ~TcpServer, so that one arriving later finds no server.
  struct DrainWatch {
    TcpServer* server;
    EventLoop* loop;  // the server's
  };
  void armDrainDeadline(MonoTime due);
  void stopAccepting();
  void onAcceptorStopped();
  // Every acceptor has stopped: each loop tells its connections.
  void tellConnections();
  // On state's loop: the drain callback for each connection.
  static void drainLoop(LoopState* state, const std::shared_ptr<DrainWatch>& watch);
  // The deadline: each loop force-closes what is left.
  void forceDrain();
  static void forceLoop(LoopState* state, const std::shared_ptr<DrainWatch>& watch);
  // A loop told (or forced) its connections, or its last one closed.
  enum class Report { kTold, kForced, kEmpty };
  void onLoopReport(Report report);
  static void report(const std::shared_ptr<DrainWatch>& watch, Report report);
  void finishDrainIfDone();
  // On state's loop, draining: its last connection has gone, or a socket
  // ended without becoming one (refused by a limit, a rejected header).
  static void reportEmpty(LoopState* state);

  EventLoop* loop_;
  const std::string name_;
  // Before the acceptor and the pool, which are made from it. Changed only
  // by the deprecated setters, before start().
  Options options_;
  std::unique_ptr<Acceptor> acceptor_;  // kHandOver, or no I/O threads
  std::unique_ptr<EventLoopThreadPool> threadPool_;
  ConnectionCallback connectionCallback_;
  MessageCallback messageCallback_;
  WriteCompleteCallback writeCompleteCallback_;
  ThreadInitCallback threadInitCallback_;
  SocketAddress listenAddr_;  // as bound (the real port)
  IdleCallback idleCallback_;
  bool started_ = false;
  bool withIoThreads_ = false;                  // from start(): connections made on I/O loops
  std::shared_ptr<ConnectionFactory> factory_;  // from start()
  // One per I/O loop (the server's own without threads), from start(). Each
  // is also held by the tear-down functor queued to its loop by ~TcpServer,
  // so it lives until its connections are gone.
  std::vector<std::shared_ptr<LoopState>> loopStates_;
  size_t nextLoop_ = 0;  // kHandOver: where the next choice starts
  // Inherited listening sockets: held from the constructor to start(), which
  // gives them to acceptors. The server loop's acceptors after the first.
  std::vector<UniqueFd> inherited_;
  std::vector<std::unique_ptr<Acceptor>> moreAcceptors_;
  std::vector<int> listeningFds_;  // from start() (listeningFds())
  // Graceful drain.
  DrainCallback drainCallback_;
  bool perLoop_ = false;           // from start(): state->acceptor per loop
  uint64_t acceptedByServer_ = 0;  // by acceptor_ (kHandOver, no threads)
  std::unique_ptr<DrainState> drain_;
  std::shared_ptr<DrainWatch> drainWatch_;
};

}  // namespace libnet
