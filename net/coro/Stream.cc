#include "net/coro/Stream.h"

#include "net/EventLoop.h"

namespace libnet::coro {

Stream::Stream(TcpConnectionPtr conn)
    : conn_(std::move(conn)), state_(StreamState::attach(conn_)) {}

Stream::Stream(Stream&& other) noexcept
    : conn_(std::move(other.conn_)), state_(std::exchange(other.state_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    release();
    conn_ = std::move(other.conn_);
    state_ = std::exchange(other.state_, nullptr);
  }
  return *this;
}

Stream::~Stream() { release(); }

void Stream::release() {
  if (state_ == nullptr) return;
  state_->detach();
  conn_->closeAfterOutput();
  state_ = nullptr;
  conn_.reset();
}

}  // namespace libnet::coro
