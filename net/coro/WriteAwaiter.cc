#include "net/coro/WriteAwaiter.h"

#include <unistd.h>

#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/TcpConnection.h"
#include "net/coro/StreamState.h"

namespace libnet::coro {

WriteAwaiter::WriteAwaiter(StreamState* state, UniqueFd file, off_t offset, size_t length,
                           Buffer* head)
    : state_(state), buffer_(head), file_(file.release()), offset_(offset), length_(length) {}

WriteAwaiter::~WriteAwaiter() {
  if (file_ >= 0) ::close(file_);  // never awaited
  if (!suspended()) return;
  state_->clearWriter(this);
  forgetInTask();
}

bool WriteAwaiter::start() {
  TcpConnection* conn = state_->connection();
  // The connection is disconnected before the state hears of the close.
  if (conn->disconnected()) {
    if (buffer_ != nullptr) buffer_->retrieveAll();
    if (file_ >= 0) ::close(std::exchange(file_, -1));
    result_ = Errc::kClosed;
    return true;
  }
  if (file_ >= 0) {
    conn->sendFile(UniqueFd(std::exchange(file_, -1)), offset_, length_, buffer_);
    state_->noteFileQueued();
  } else if (buffer_ != nullptr) {
    conn->send(buffer_);
  } else {
    conn->send(data_);
  }
  return state_->outputWithinLimits(/*resuming=*/false);
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
