#include "net/udp/CoroUdp.h"

#include <algorithm>
#include <utility>

#include "net/EventLoop.h"

namespace libnet::udp {

using coro::Errc;

RecvAwaiter::~RecvAwaiter() {
  if (!suspended()) return;
  if (socket_ != nullptr) CoroUdpSocket::remove(&socket_->receivers_, this);
  forgetInTask();
}

bool RecvAwaiter::await_ready() {
  if (socket_->buffered_.empty()) return false;
  received_ = std::move(socket_->buffered_.front());
  socket_->buffered_.pop_front();
  return true;
}

bool RecvAwaiter::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  socket_->receivers_.push_back(this);
  return true;
}

Received RecvAwaiter::await_resume() {
  if (result_ != Errc::kOk) received_.error = result_;
  return std::move(received_);
}

void RecvAwaiter::deliver(const InetAddress& from, std::string_view data, DatagramFlags flags) {
  received_.from = from;
  received_.data.assign(data);
  received_.flags = flags;
  resumeWith(Errc::kOk);
}

void RecvAwaiter::cancel(Errc why) {
  CoroUdpSocket::remove(&socket_->receivers_, this);
  resumeWith(why);
}

void RecvAwaiter::closed() {
  socket_ = nullptr;
  resumeWith(Errc::kClosed);
}

SendAwaiter::~SendAwaiter() {
  if (!suspended()) return;
  if (socket_ != nullptr) CoroUdpSocket::remove(&socket_->senders_, this);
  forgetInTask();
}

bool SendAwaiter::await_ready() {
  // Behind tasks already waiting for room, so that datagrams keep the order
  // in which their tasks asked.
  if (!socket_->senders_.empty() || !socket_->hasRoomFor(data_.size())) return false;
  UdpSocket& s = socket_->socket_;
  sent_ = connected_ ? s.send(data_) : s.sendTo(peer_, data_);
  return true;
}

bool SendAwaiter::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  copy_.assign(data_);
  data_ = copy_;
  socket_->senders_.push_back(this);
  return true;
}

void SendAwaiter::sendNow() {
  UdpSocket& s = socket_->socket_;
  sent_ = connected_ ? s.send(data_) : s.sendTo(peer_, data_);
  resumeWith(Errc::kOk);
}

void SendAwaiter::cancel(Errc why) {
  CoroUdpSocket::remove(&socket_->senders_, this);
  resumeWith(why);
}

void SendAwaiter::closed() {
  socket_ = nullptr;
  resumeWith(Errc::kClosed);
}

CoroUdpSocket::CoroUdpSocket(EventLoop* loop, const UdpSocket::Options& options, size_t maxBuffered)
    : socket_(loop, options), maxBuffered_(maxBuffered) {
  socket_.setReceiveCallback([this](const InetAddress& from, std::string_view data,
                                    DatagramFlags flags) { onDatagram(from, data, flags); });
  socket_.setDrainedCallback([this] { onDrained(); });
  socket_.start();
}

CoroUdpSocket::~CoroUdpSocket() {
  if (destroyed_ != nullptr) *destroyed_ = true;
  while (!receivers_.empty()) {
    RecvAwaiter* r = receivers_.front();
    receivers_.pop_front();
    r->closed();
  }
  while (!senders_.empty()) {
    SendAwaiter* s = senders_.front();
    senders_.pop_front();
    s->closed();
  }
}

template <class T>
void CoroUdpSocket::remove(std::deque<T*>* waiters, T* waiter) {
  waiters->erase(std::remove(waiters->begin(), waiters->end(), waiter), waiters->end());
}

bool CoroUdpSocket::hasRoomFor(size_t bytes) const {
  return socket_.queuedDatagrams() == 0 ||
         socket_.queuedBytes() + bytes <= socket_.options().maxQueuedBytes;
}

void CoroUdpSocket::onDatagram(const InetAddress& from, std::string_view data,
                               DatagramFlags flags) {
  if (!receivers_.empty()) {
    RecvAwaiter* r = receivers_.front();
    receivers_.pop_front();
    r->deliver(from, data, flags);  // may destroy this: the last use of it
    return;
  }
  if (buffered_.size() >= maxBuffered_) {
    ++bufferDropped_;
    return;
  }
  buffered_.push_back(Received{Errc::kOk, from, std::string(data), flags});
}

void CoroUdpSocket::onDrained() {
  // Each resumed task may send more, or destroy the socket (whose
  // destructor resumes the rest with kClosed).
  bool destroyed = false;
  destroyed_ = &destroyed;
  while (!senders_.empty() && hasRoomFor(senders_.front()->data_.size())) {
    SendAwaiter* s = senders_.front();
    senders_.pop_front();
    s->sendNow();
    if (destroyed) return;
  }
  destroyed_ = nullptr;
}

}  // namespace libnet::udp
