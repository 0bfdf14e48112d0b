#include "net/coro/Stream.h"

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/coro/StreamState.h"

namespace libnet::coro {

Stream::Stream(TcpConnectionPtr conn, const StreamOptions& options)
    : conn_(std::move(conn)), state_(StreamState::attach(conn_, options)) {}

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

ReadAwaiter Stream::readMore() {
  return ReadAwaiter(state_, ReadAwaiter::Mode::kMore, input().readableBytes() + 1, {});
}

ReadAwaiter Stream::readUntil(std::string_view delimiter, size_t limit) {
  return ReadAwaiter(state_, ReadAwaiter::Mode::kUntil,
                     limit != 0 ? limit : state_->options().maxInput, delimiter);
}

WriteAwaiter Stream::sendFile(UniqueFd file, off_t offset, size_t length, Buffer* head) {
  return WriteAwaiter(state_, std::move(file), offset, length, head);
}

Buffer& Stream::input() const { return state_->input(); }

void Stream::shutdown() { conn_->shutdown(); }

void Stream::close() { conn_->forceClose(); }

size_t Stream::maxInput() const { return state_->options().maxInput; }

size_t Stream::maxQueuedFiles() const { return state_->options().maxQueuedFiles; }

}  // namespace libnet::coro
