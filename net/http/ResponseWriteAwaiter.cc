#include "net/http/ResponseWriteAwaiter.h"

namespace libnet::http {

ResponseWriteAwaiter::~ResponseWriteAwaiter() {
  if (slot_ && slot_->awaiter != nullptr) {
    // Destroyed while waiting (its task went): the callback finds nothing.
    slot_->awaiter = nullptr;
    writer_->setWritableCallback(nullptr);
    forgetInTask();
  }
}

bool ResponseWriteAwaiter::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (writer_->closed()) {
    result_ = coro::Errc::kClosed;
    return false;
  }
  if (writer_->write(std::move(data_))) {
    result_ = coro::Errc::kOk;
    return false;
  }
  if (writer_->closed()) {
    result_ = coro::Errc::kClosed;
    return false;
  }
  if (!prepareSuspend(awaiting, context)) return false;  // a scope is cancelled already
  slot_ = std::make_shared<Slot>(Slot{this});
  writer_->setWritableCallback([slot = slot_] {
    if (slot->awaiter != nullptr) slot->awaiter->resume(coro::Errc::kOk);
  });
  return true;
}

void ResponseWriteAwaiter::cancel(coro::Errc why) { resume(why); }

void ResponseWriteAwaiter::resume(coro::Errc why) {
  slot_->awaiter = nullptr;
  resumeWith(why);  // may destroy this
}

}  // namespace libnet::http
