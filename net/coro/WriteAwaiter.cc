#include "net/coro/WriteAwaiter.h"

namespace libnet::coro {

WriteAwaiter::~WriteAwaiter() {
  if (context_ == nullptr) return;
  state_->clearWriter(this);
  context_->resumedFrom(this);
}

bool WriteAwaiter::start() {
  TcpConnection* conn = state_->connection();
  if (state_->closed() || conn->disconnected()) {
    if (buffer_ != nullptr) buffer_->retrieveAll();
    result_ = Errc::kClosed;
    return true;
  }
  if (file_) {
    conn->sendFile(std::move(file_), offset_, length_, buffer_);
  } else if (buffer_ != nullptr) {
    conn->send(buffer_);
  } else {
    conn->send(data_);
  }
  return conn->queuedOutputBytes() <= state_->writeHighWater;
}

bool WriteAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (const Errc why = context->cancelled(); why != Errc::kOk) {
    result_ = why;
    return false;
  }
  context_ = context;
  awaiting_ = awaiting;
  context->suspendOn(this);
  state_->setWriter(this);
  return true;
}

void WriteAwaiter::complete(Errc result) {
  state_->clearWriter(this);
  context_->resumedFrom(this);
  result_ = result;
  awaiting_.resume();  // may destroy this
}

void WriteAwaiter::cancel(Errc why) {
  state_->clearWriter(this);
  result_ = why;
  awaiting_.resume();
}

}  // namespace libnet::coro
