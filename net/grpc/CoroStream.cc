#include "net/grpc/CoroStream.h"

#include <stop_token>

#include "net/coro/Spawn.h"

namespace libnet::grpc::detail {

void CoroCall::listen() {
  const std::weak_ptr<CoroCall> weak = weak_from_this();
  call_->setMessageCallback([weak](std::string message) {
    if (const std::shared_ptr<CoroCall> self = weak.lock()) self->onMessage(std::move(message));
  });
  call_->setHalfCloseCallback([weak] {
    if (const std::shared_ptr<CoroCall> self = weak.lock()) self->onEnd();
  });
}

void CoroCall::onMessage(std::string message) {
  if (reader_ != nullptr) {
    Read* reader = reader_;
    reader_ = nullptr;
    reader->deliver(std::move(message));
    return;
  }
  messages_.push_back(std::move(message));
  // Taken ahead of a read: the client waits for the next one.
  call_->pauseReading();
}

void CoroCall::onEnd() {
  ended_ = true;
  if (reader_ != nullptr) {
    Read* reader = reader_;
    reader_ = nullptr;
    reader->deliver(std::nullopt);
  }
}

CoroCall::Read::~Read() {
  if (waiting_ && call_ && call_->reader_ == this) {
    call_->reader_ = nullptr;
    forgetInTask();
  }
}

bool CoroCall::Read::await_ready() {
  CoroCall& core = *call_;
  if (!core.messages_.empty()) {
    message_ = std::move(core.messages_.front());
    core.messages_.pop_front();
    if (core.messages_.empty()) core.call_->resumeReading();
    return true;
  }
  return core.ended_ || core.call_->cancelled();
}

bool CoroCall::Read::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;  // a scope is cancelled already
  waiting_ = true;
  call_->reader_ = this;
  call_->call_->resumeReading();
  return true;
}

void CoroCall::Read::deliver(std::optional<std::string> message) {
  waiting_ = false;
  message_ = std::move(message);
  resumeWith(coro::Errc::kOk);  // may destroy this
}

void CoroCall::Read::cancel(coro::Errc why) {
  if (call_->reader_ == this) call_->reader_ = nullptr;
  waiting_ = false;
  message_.reset();
  resumeWith(why);
}

CoroCall::Write::~Write() {
  if (slot_ && slot_->awaiter != nullptr) {
    slot_->awaiter = nullptr;
    call_->call().setWritableCallback(nullptr);
    forgetInTask();
  }
}

bool CoroCall::Write::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  ServerCall& call = call_->call();
  if (call.write(std::move(message_))) {
    ok_ = true;
    return false;
  }
  // Past highWater (the message is queued: it waits for the writable
  // callback), or over (false).
  ok_ = false;
  if (call.cancelled() || !prepareSuspend(awaiting, context)) return false;
  slot_ = std::make_shared<Slot>(Slot{this});
  call.setWritableCallback([slot = slot_] {
    if (slot->awaiter != nullptr) slot->awaiter->resume(true);
  });
  return true;
}

void CoroCall::Write::cancel(coro::Errc) { resume(false); }

void CoroCall::Write::resume(bool ok) {
  slot_->awaiter = nullptr;
  ok_ = ok;
  resumeWith(coro::Errc::kOk);  // may destroy this
}

void spawnCall(const ServerCallPtr& call, coro::Task<> task) {
  // Cancellation ends the operation the coroutine waits on (a read: nullopt;
  // a write: false), and every one it starts afterwards.
  auto stop = std::make_shared<std::stop_source>();
  call->setCancelCallback([stop] { stop->request_stop(); });
  coro::spawn(call->loop(), std::move(task), stop->get_token());
}

}  // namespace libnet::grpc::detail
