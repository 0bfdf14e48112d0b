#include "net/coro/WriteAwaiter.h"

namespace libnet::coro {

WriteAwaiter::~WriteAwaiter() {
  if (!suspended()) return;
  state_->clearWriter(this);
  forgetInTask();
}

bool WriteAwaiter::start() {
  TcpConnection* conn = state_->connection();
  // The connection is disconnected before the state hears of the close.
  if (conn->disconnected()) {
    if (buffer_ != nullptr) buffer_->retrieveAll();
    result_ = Errc::kClosed;
    return true;
  }
  if (file_) {
    conn->sendFile(std::move(file_), offset_, length_, buffer_);
    state_->noteFileQueued();
  } else if (buffer_ != nullptr) {
    conn->send(buffer_);
  } else {
    conn->send(data_);
  }
  return state_->outputWithinLimits();
}

bool WriteAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  state_->setWriter(this);
  return true;
}

void WriteAwaiter::complete(Errc result) {
  state_->clearWriter(this);
  resumeWith(result);
}

void WriteAwaiter::cancel(Errc why) {
  state_->clearWriter(this);
  resumeWith(why);
}

}  // namespace libnet::coro
