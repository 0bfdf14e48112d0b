#include "net/http/RequestBodyReader.h"

#include <utility>

namespace libnet::http {

RequestBodyReader::RequestBodyReader(RequestBodyPtr body) : state_(std::make_shared<State>()) {
  state_->body = std::move(body);
  std::weak_ptr<State> weak = state_;
  state_->body->setEndCallback([weak](RequestBody::End end) {
    const std::shared_ptr<State> state = weak.lock();
    if (!state) return;
    state->end = end;
    if (ReadAwaiter* waiting = std::exchange(state->waiting, nullptr)) waiting->ended(end);
  });
  state_->body->setDataCallback([weak](std::string_view data) {
    const std::shared_ptr<State> state = weak.lock();
    if (!state) return;
    if (ReadAwaiter* waiting = std::exchange(state->waiting, nullptr)) {
      waiting->deliver(data);
      return;
    }
    // Nobody reads: keep it, and hold the rest back until somebody does.
    state->held.append(data);
    state->hasHeld = true;
    state->body->pause();
  });
}

RequestBodyReader::~RequestBodyReader() {
  // The body reads on into nothing (an answer not yet given may still
  // want it read through); a waiting read is its task's, gone with it.
  if (!state_->body->ended()) state_->body->resume();
}

RequestBodyReader::ReadAwaiter RequestBodyReader::read() { return ReadAwaiter(state_); }

const RequestBodyPtr& RequestBodyReader::body() const { return state_->body; }

RequestBodyReader::ReadAwaiter::~ReadAwaiter() {
  if (state_ && state_->waiting == this) {
    // Destroyed while waiting (its task went): the callbacks find nothing.
    state_->waiting = nullptr;
    forgetInTask();
  }
}

bool RequestBodyReader::ReadAwaiter::await_ready() {
  State& state = *state_;
  if (state.hasHeld) {
    piece_.data = std::move(state.held);
    state.held.clear();
    state.hasHeld = false;
    result_ = coro::Errc::kOk;
    state.body->resume();
    return true;
  }
  if (state.end) {
    result_ = endResult(*state.end);
    return true;
  }
  return false;
}

bool RequestBodyReader::ReadAwaiter::suspend(std::coroutine_handle<> awaiting,
                                             coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;  // a scope is cancelled already
  state_->waiting = this;
  state_->body->resume();  // paused by a piece nobody read, if any
  return true;
}

void RequestBodyReader::ReadAwaiter::deliver(std::string_view data) {
  piece_.data.assign(data);
  resumeWith(coro::Errc::kOk);  // may destroy this
}

void RequestBodyReader::ReadAwaiter::ended(RequestBody::End end) {
  resumeWith(endResult(end));  // may destroy this
}

void RequestBodyReader::ReadAwaiter::cancel(coro::Errc why) {
  state_->waiting = nullptr;
  resumeWith(why);  // may destroy this
}

coro::Errc RequestBodyReader::ReadAwaiter::endResult(RequestBody::End end) {
  return end == RequestBody::End::kComplete ? coro::Errc::kEof : coro::Errc::kClosed;
}

}  // namespace libnet::http
