#include "net/grpc/CoroClient.h"

#include "net/EventLoop.h"
#include "net/grpc/Channel.h"

namespace libnet::grpc::detail {

namespace {

Status statusOfScope(coro::Errc why) {
  if (why == coro::Errc::kTimedOut)
    return Status(StatusCode::kDeadlineExceeded, "Deadline Exceeded");
  return Status(StatusCode::kCancelled, "Cancelled");
}

}  // namespace

ClientCore::~ClientCore() {
  if (call_ && !call_->finished()) call_->cancel();
}

void ClientCore::start(std::shared_ptr<Channel> channel, std::string path,
                       ClientCallOptions options) {
  loop_ = EventLoop::currentThreadLoop();
  if (loop_ == nullptr) loop_ = channel->loop();
  // The events go to the coroutine's loop through its queue, never inline:
  // a coroutine resumed inside the connection's callbacks could act on the
  // connection there.
  const std::weak_ptr<ClientCore> weak = weak_from_this();
  EventLoop* loop = loop_;
  ClientCall::Callbacks callbacks;
  callbacks.onInitialMetadata = [weak, loop](const Metadata& metadata) {
    loop->queueInLoop([weak, metadata] {
      if (const auto self = weak.lock()) self->onMetadata(metadata);
    });
  };
  callbacks.onMessage = [weak, loop](std::string message) {
    loop->queueInLoop([weak, message = std::move(message)]() mutable {
      if (const auto self = weak.lock()) self->onMessage(std::move(message));
    });
  };
  callbacks.onFinish = [weak, loop](const Status& status, const Metadata& trailers) {
    loop->queueInLoop([weak, status, trailers]() mutable {
      if (const auto self = weak.lock()) self->onFinish(std::move(status), std::move(trailers));
    });
  };
  callbacks.onWritable = [weak, loop] {
    loop->queueInLoop([weak] {
      if (const auto self = weak.lock()) self->onWritable();
    });
  };
  call_ = ClientCall::start(std::move(channel), std::move(path), std::move(options),
                            std::move(callbacks));
}

ClientCore::Op ClientCore::read() { return Op(shared_from_this(), Op::Kind::kRead); }

ClientCore::Op ClientCore::write(std::string message, bool noCompression) {
  return Op(shared_from_this(), Op::Kind::kWrite, std::move(message), noCompression);
}

ClientCore::Op ClientCore::finish() { return Op(shared_from_this(), Op::Kind::kFinish); }

void ClientCore::onMessage(std::string message) {
  if (reader_ != nullptr) {
    Op* reader = std::exchange(reader_, nullptr);
    reader->message_ = std::move(message);
    reader->complete();
    return;
  }
  messages_.push_back(std::move(message));
  // Taken ahead of a read: the server waits for the next one.
  call_->pause();
}

void ClientCore::onFinish(Status status, Metadata trailers) {
  status_ = std::move(status);
  trailers_ = std::move(trailers);
  // Each may resume a coroutine that destroys this: hold it.
  const std::shared_ptr<ClientCore> hold = shared_from_this();
  if (Op* reader = std::exchange(reader_, nullptr)) reader->complete();
  if (Op* writer = std::exchange(writer_, nullptr)) {
    writer->ok_ = false;
    writer->complete();
  }
  if (Op* finisher = std::exchange(finisher_, nullptr)) {
    finisher->status_ = *status_;
    finisher->complete();
  }
}

void ClientCore::onWritable() {
  if (Op* writer = std::exchange(writer_, nullptr)) {
    writer->ok_ = true;
    writer->complete();
  }
}

ClientCore::Op::~Op() {
  if (waiting_ && core_ && slot() == this) {
    slot() = nullptr;
    forgetInTask();
  }
}

ClientCore::Op*& ClientCore::Op::slot() const {
  switch (kind_) {
    case Kind::kRead:
      return core_->reader_;
    case Kind::kWrite:
      return core_->writer_;
    case Kind::kFinish:
      break;
  }
  return core_->finisher_;
}

bool ClientCore::Op::await_ready() {
  ClientCore& core = *core_;
  switch (kind_) {
    case Kind::kRead:
      if (!core.messages_.empty()) {
        message_ = std::move(core.messages_.front());
        core.messages_.pop_front();
        if (core.messages_.empty() && !core.status_) core.call_->resume();
        return true;
      }
      return core.status_.has_value();
    case Kind::kWrite:
      if (core.status_) return true;  // ok_ false: the call is over
      ok_ = core.call_->write(std::move(out_), noCompression_);
      return ok_ || core.call_->finished();
    case Kind::kFinish:
      if (core.status_) status_ = *core.status_;
      return core.status_.has_value();
  }
  return true;
}

bool ClientCore::Op::suspend(std::coroutine_handle<> awaiting, coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) {
    endByScope(result_);
    return false;
  }
  waiting_ = true;
  slot() = this;
  if (kind_ == Kind::kRead) core_->call_->resume();
  return true;
}

void ClientCore::Op::endByScope(coro::Errc why) {
  const Status status = statusOfScope(why);
  core_->call_->cancel(status);
  ok_ = false;
  message_.reset();
  status_ = core_->status_.value_or(status);
}

void ClientCore::Op::cancel(coro::Errc why) {
  if (slot() == this) slot() = nullptr;
  waiting_ = false;
  endByScope(why);
  resumeWith(why);
}

void ClientCore::Op::complete() {
  waiting_ = false;
  resumeWith(coro::Errc::kOk);  // may destroy this
}

}  // namespace libnet::grpc::detail
