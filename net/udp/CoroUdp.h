// Coroutines over udp::UdpSocket (net/coro/'s machinery, on either
// backend): a CoroUdpSocket owns a UdpSocket, started, whose datagrams are
// awaited rather than called back.
//
//   udp::CoroUdpSocket sock(loop, {.bind = InetAddress(9000)});
//   for (;;) {
//     udp::Received in = co_await withTimeout(5s, sock.recvFrom());
//     if (in.error != coro::Errc::kOk) break;              // kTimedOut, ...
//     co_await sock.sendTo(in.from, in.data);               // back-pressure
//   }
//
// recvFrom(): the next datagram, copied out of the backend's storage (it
// outlives the loop turn). Datagrams that arrive while no task awaits one
// wait in a small queue (maxBuffered datagrams; beyond it they are dropped
// and counted in bufferDropped(), as the kernel drops when its buffer is
// full). Ready at once when one is queued.
//
// sendTo(): sent (or queued by the socket) at once when the socket's send
// queue has room; otherwise the task waits until the queue has drained
// (rather than the datagram being dropped, as a plain UdpSocket::sendTo()
// past the bound would). Its result says what became of the datagram.
//
// Both end early with Errc::kTimedOut / kCancelled under withTimeout() /
// withStop() (net/coro/Cancel.h), and with Errc::kClosed when the socket is
// destroyed while a task waits (resumed from inside the destructor: the
// task must not touch the socket then). Loop thread only; the awaitables
// are movable until awaited.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "net/InetAddress.h"
#include "net/coro/Errc.h"
#include "net/coro/Operation.h"
#include "net/udp/UdpSocket.h"

namespace libnet::udp {

class CoroUdpSocket;

// What co_await recvFrom() gives.
struct Received {
  coro::Errc error = coro::Errc::kOk;
  InetAddress from;
  std::string data;
  DatagramFlags flags;
};

// What co_await sendTo() gives: kOk with the socket's SendResult (kSent,
// kQueued, or kError: UdpSocket::lastSendError() says why), or the error
// that ended the wait (nothing was sent).
struct Sent {
  coro::Errc error = coro::Errc::kOk;
  SendResult result = SendResult::kSent;
};

class RecvAwaiter : public coro::detail::Operation {
 public:
  explicit RecvAwaiter(CoroUdpSocket* socket) : socket_(socket) {}
  RecvAwaiter(RecvAwaiter&&) noexcept = default;  // before awaiting
  RecvAwaiter& operator=(RecvAwaiter&&) = delete;
  ~RecvAwaiter();

  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  Received await_resume();

 private:
  friend class CoroUdpSocket;
  void cancel(coro::Errc why) override;
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  void deliver(const InetAddress& from, std::string_view data, DatagramFlags flags);
  void closed();

  CoroUdpSocket* socket_;
  Received received_;
};

class SendAwaiter : public coro::detail::Operation {
 public:
  SendAwaiter(CoroUdpSocket* socket, const InetAddress* peer, std::string_view data)
      : socket_(socket),
        peer_(peer != nullptr ? *peer : InetAddress()),
        connected_(!peer),
        data_(data) {}
  SendAwaiter(SendAwaiter&&) noexcept = default;  // before awaiting
  SendAwaiter& operator=(SendAwaiter&&) = delete;
  ~SendAwaiter();

  [[nodiscard]] bool await_ready();
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  [[nodiscard]] Sent await_resume() const { return {result_, sent_}; }

 private:
  friend class CoroUdpSocket;
  void cancel(coro::Errc why) override;
  bool suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context);
  // The queue has room again: sends, and resumes the task.
  void sendNow();
  void closed();

  CoroUdpSocket* socket_;
  InetAddress peer_;
  bool connected_;
  std::string_view data_;
  std::string copy_;  // the bytes, once suspended (the caller's may go)
  SendResult sent_ = SendResult::kSent;
};

class CoroUdpSocket {
 public:
  // Creates, binds and starts the socket (throws as UdpSocket does).
  // `maxBuffered`: datagrams kept for recvFrom() while no task awaits one.
  CoroUdpSocket(EventLoop* loop, const UdpSocket::Options& options, size_t maxBuffered = 64);
  // Resumes waiting tasks with Errc::kClosed.
  ~CoroUdpSocket();
  CoroUdpSocket(const CoroUdpSocket&) = delete;
  CoroUdpSocket& operator=(const CoroUdpSocket&) = delete;

  [[nodiscard]] RecvAwaiter recvFrom() { return RecvAwaiter(this); }
  [[nodiscard]] SendAwaiter sendTo(const InetAddress& peer, std::string_view data) {
    return SendAwaiter(this, &peer, data);
  }
  // To the connected peer (connect()).
  [[nodiscard]] SendAwaiter send(std::string_view data) { return SendAwaiter(this, nullptr, data); }
  void connect(const InetAddress& peer) { socket_.connect(peer); }

  [[nodiscard]] UdpSocket& socket() { return socket_; }
  [[nodiscard]] InetAddress localAddress() const { return socket_.localAddress(); }
  // Datagrams dropped because maxBuffered were waiting already.
  [[nodiscard]] uint64_t bufferDropped() const { return bufferDropped_; }

 private:
  friend class RecvAwaiter;
  friend class SendAwaiter;
  void onDatagram(const InetAddress& from, std::string_view data, DatagramFlags flags);
  void onDrained();
  [[nodiscard]] bool hasRoomFor(size_t bytes) const;
  template <class T>
  static void remove(std::deque<T*>* waiters, T* waiter);

  UdpSocket socket_;
  size_t maxBuffered_;
  std::deque<Received> buffered_;
  std::deque<RecvAwaiter*> receivers_;  // tasks awaiting recvFrom(), in order
  std::deque<SendAwaiter*> senders_;    // tasks waiting for room, in order
  uint64_t bufferDropped_ = 0;
  bool* destroyed_ = nullptr;  // set while onDrained() resumes tasks
};

}  // namespace libnet::udp
