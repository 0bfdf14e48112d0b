// ConnectionIo: how one TcpConnection's bytes move on its loop's backend, the
// connection's I/O strategy. The loop's Poller makes one per connection
// (Poller::newConnectionIo) when the connection is created, so the backend is
// chosen once: the epoll strategy (net/poller/EpollConnectionIo) drives a
// Channel with EPOLLET and read/send/sendfile calls; the io_uring strategy
// (net/poller/UringConnectionIo) keeps one multishot recv and at most one send
// in flight. Each buffer has one writer: the strategy owns its output queue
// (and sends files with sendfile(2) itself) and hands received bytes up
// without keeping any; TcpConnection keeps the state machine, the callbacks
// and the input buffer, alone decides what of the received bytes is kept, and
// knows the backend only through this interface; the strategy reports back
// through Owner.
//
// A ConnectionLayer (TLS, net/tls/) may stand between the connection and the
// backend's strategy: its ConnectionIo is the connection's, and the backend's
// strategy reports to it. The connection then sees plaintext only. The layer
// owns its own output (plaintext waiting, files being encrypted) and stacks
// it on the backend strategy's queue (ciphertext).
//
// Owned by its TcpConnection (built inside it: see Room), or, under a layer,
// by the layer's strategy (TlsConnectionIo holds the backend's); the owner
// outlives it. Made on the connection's loop thread, and used on it only.
// Part of the library's inside, not of its API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <utility>

#include <sys/types.h>

#include "base/Timestamp.h"
#include "base/UniqueFd.h"

namespace libnet {

class Buffer;
class EventLoop;
class OutputQueue;

// Where the bytes in a Buffer handed between a connection and its strategy
// live, and so what becomes of what a callback leaves in it. The kind is said,
// never guessed from the Buffer's address.
enum class InputKind : uint8_t {
  // The connection's own input buffer (what the callback leaves stays
  // there). Never handed up by a strategy: the connection delivers it itself.
  kConnectionInput,
  // Storage the strategy keeps (the epoll loop's scratch buffer, a TLS
  // strategy's plaintext, a ring view the output queue may not hold on to):
  // the owner copies out what it keeps and leaves the buffer empty (a view
  // handed back, Buffer::releaseBorrowed) before onInput() returns.
  kTransient,
  // A view of the io_uring buffer ring's memory (the loop's received view):
  // transient like the above, except that a send of it may take the view
  // itself (no copy), the ring buffer going back when that send is done.
  kRingView,
  // A Buffer of the application's own, passed to send(): the strategy may
  // take its bytes and give it spare storage back.
  kApplication,
};

class ConnectionIo {
 public:
  // Owner::inputRoom() of an owner without an output limit.
  static constexpr size_t kNoInputLimit = SIZE_MAX;

  // What a strategy tells its connection. Every call comes on the loop
  // thread: from the strategy's own event or completion handling, or from
  // inside start(), resumeRead() or flush() (a read that finds bytes, a
  // write that drains or fails, a TLS client's first flight failing), which
  // the connection calls only from connectEstablished() or a functor of the
  // loop's queue; never from inside write(), so never inside a user's send().
  class Owner {
   public:
    // Bytes arrived in `buffer`, of kind kTransient or kRingView, whether
    // or not wantsInput() (io_uring may complete a receive after reading was
    // paused). The owner alone decides what is kept, and leaves `buffer`
    // empty (a view handed back) before this returns, whatever its callbacks
    // do (return, throw, close the connection). A TcpConnection delivers the
    // bytes to its message callback (in place, or behind what it kept from
    // before) and keeps what the callback leaves; while not reading it keeps
    // them all, in order (TcpConnection::Impl::onInput()). A TlsConnectionIo
    // decrypts the ciphertext whole. The strategy only fills the buffer.
    virtual void onInput(Buffer* buffer, InputKind kind, Timestamp receiveTime) = 0;
    // Some queued output was written.
    virtual void onOutputProgress() = 0;
    // Everything queued has been written.
    virtual void onOutputDrained() = 0;
    // The peer closed its side (end of file).
    virtual void onPeerClosed() = 0;
    // `call` failed with `err` (errno), or the peer hung up: the connection
    // cannot go on.
    virtual void onIoError(const char* call, int err) = 0;
    // Whether to read now: not paused, the peer has not closed, still open.
    [[nodiscard]] virtual bool wantsInput() const = 0;
    // How many bytes the owner takes in before its output limit pauses
    // reading (TcpConnection: one more than the room left under
    // maxQueuedOutput, so that taking all of it pauses); kNoInputLimit
    // without a limit, 0 when there is no room now. A strategy whose reads
    // would otherwise overshoot (io_uring's multishot recv drains everything
    // the socket holds in one kernel pass, after the connection could say
    // stop) reads no more than this per arming where the kernel takes a
    // total on a multishot recv; without one it receives single-shot (at
    // most the room) when the room is small, and above that one pass may
    // read past the room (kept by the owner). It asks again when output has
    // moved (docs/architecture.md, "How much a receive may take").
    [[nodiscard]] virtual size_t inputRoom() const { return kNoInputLimit; }
    // A reference that keeps the connection, and so its strategy, alive:
    // held across callbacks and while an operation is in flight.
    [[nodiscard]] virtual std::shared_ptr<void> keepAlive() = 0;
    // From inside release(): the owner hands its fd over, and the strategy
    // closes it (the epoll strategy at once; the io_uring strategy through
    // the ring with its next submission, no system call of its own, except
    // under SQPOLL, where it is a plain close(2) at once; ops still in
    // flight hold the socket in the kernel until they complete).
    [[nodiscard]] virtual UniqueFd onReleased() = 0;
    // A strategy that was not ready() at start() has become ready (a TLS
    // handshake completed): the connection may announce itself now.
    virtual void onReady() {}
    // Before the onIoError() that ends a connection that never became ready:
    // why, in a few words for the application ("certificate verify failed:
    // hostname mismatch"). Only on such a failure, never per message.
    virtual void onLayerFailure(std::string_view reason) { static_cast<void>(reason); }

   protected:
    ~Owner() = default;
  };

  // Storage inside the connection that one strategy may be built in
  // (make()), so that a connection and its strategy take one allocation.
  // Taken by the first strategy made with it that fits; under a layer, the
  // layer's strategy (large) goes to the heap and the backend's takes it.
  struct Room {
    // What TcpConnection offers: the larger of the two backends' strategies
    // (epoll's), so that a connection is one allocation on either; both fit
    // (asserted where they are made). Every connection carries it, so a
    // member added to a strategy grows every connection by as much
    // (tests/net/IdleConnectionMemoryTest holds the total).
    static constexpr size_t kConnectionRoom = 352;
    void* at;
    size_t size;
    bool taken = false;
  };
  // Destroys a strategy made by make(): in its room, or from the heap.
  class Deleter {
   public:
    Deleter() = default;
    explicit Deleter(bool inRoom) : inRoom_(inRoom) {}
    void operator()(ConnectionIo* io) const noexcept {
      if (inRoom_) {
        io->~ConnectionIo();
      } else {
        delete io;
      }
    }

   private:
    bool inRoom_ = false;
  };
  using Ptr = std::unique_ptr<ConnectionIo, Deleter>;

  // What a strategy works on; the owner outlives the strategy. `room`
  // (optional) is where make() may build the strategy.
  struct Parts {
    Owner* owner;
    int fd;
    Room* room = nullptr;
  };

  // A T built with `args`: in `room` when it is free and T fits, else on
  // the heap.
  template <class T, class... Args>
  [[nodiscard]] static Ptr make(Room* room, Args&&... args) {
    if (room != nullptr && !room->taken && sizeof(T) <= room->size &&
        alignof(T) <= alignof(std::max_align_t)) {
      room->taken = true;
      return Ptr(::new (room->at) T(std::forward<Args>(args)...), Deleter(true));
    }
    return Ptr(new T(std::forward<Args>(args)...), Deleter(false));
  }

  ConnectionIo() = default;
  virtual ~ConnectionIo() = default;
  ConnectionIo(const ConnectionIo&) = delete;
  ConnectionIo& operator=(const ConnectionIo&) = delete;

  // The connection is established: start reading (and writing when asked).
  virtual void start() = 0;
  // Stop reading; bytes already received stay in the input buffer.
  virtual void pauseRead() = 0;
  // Read again (the owner has delivered what was buffered meanwhile).
  virtual void resumeRead() = 0;
  // `data` goes out after everything queued. Returns 0, or the errno of a
  // write that failed at once (the owner closes the connection, from the
  // loop: the caller may be inside a callback).
  [[nodiscard]] virtual int write(std::string_view data) = 0;
  // The same for all readable bytes of `buffer`, which is left empty; the
  // strategy may take the buffer's storage (or view) instead of copying its
  // bytes, and give a kApplication buffer spare storage back.
  [[nodiscard]] virtual int write(Buffer* buffer, InputKind kind) = 0;
  // Queues `length` bytes of `file` from `offset` (and `head`, emptied, right
  // before them) after everything queued; nothing moves until flush().
  virtual void queueFile(UniqueFd file, off_t offset, size_t length, Buffer* head) = 0;
  // Something was queued (a file): move it.
  virtual void flush() = 0;
  // Whether application bytes can flow: true from start() on, except under
  // a layer with a handshake to make first (it calls Owner::onReady()).
  [[nodiscard]] virtual bool ready() const { return true; }
  // The application protocol the layer negotiated (TLS ALPN: "h2",
  // "http/1.1"); empty when none was.
  [[nodiscard]] virtual std::string_view applicationProtocol() const { return {}; }
  // The output this strategy (and the one below it, under a layer) holds
  // for the peer in memory, which the high-water mark counts: buffered
  // bytes, and under TLS plaintext not yet encrypted and file bytes not yet
  // read (they will be ciphertext). The output limit counts queuedOutput().
  [[nodiscard]] virtual size_t bufferedOutput() const = 0;
  // Everything still to write, file ranges included.
  [[nodiscard]] virtual size_t queuedOutput() const = 0;
  // Nothing is left to write: the connection may half-close or close.
  [[nodiscard]] virtual bool outputDrained() const = 0;
  // Storage the output holds (capacity, not content).
  [[nodiscard]] virtual size_t outputCapacity() const = 0;
  // The connection is done sending (shutdown, close after output, end after
  // the peer's): queue whatever the protocol says last (TLS close_notify).
  // Called at most once that matters; later calls do nothing.
  virtual void endOutput() {}
  // After endOutput(), with output still queued: the connection closes once
  // it is written (TcpConnection::closeAfterOutput), so the FIN may follow
  // the last bytes at once instead of with the close, a turn later. True:
  // this strategy sends it as soon as its last bytes are written (io_uring:
  // shutdown(SHUT_WR) in the handling of the completion that empties the
  // queue, before the turn end reports the output drained). False (the
  // default, and a layer's, whose own closing bytes come first): the
  // connection shuts the write side when told the output drained.
  [[nodiscard]] virtual bool shutdownAfterOutput() { return false; }
  // Stop all I/O now: the connection is closed and its output dropped
  // (queued files closed; a send in flight completes or is cancelled).
  virtual void close() = 0;
  // The owner is done with the fd: onReleased() follows, from inside this
  // call (both strategies: an io_uring op still in flight holds the socket in
  // the kernel, not the fd). The strategy may outlive the call until its
  // last op in flight completes (it keeps the owner alive meanwhile).
  virtual void release() = 0;
};

}  // namespace libnet
