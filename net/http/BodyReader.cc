#include "net/http/BodyReader.h"

#include <utility>

#include "net/http/CoroFetch.h"

namespace libnet::http {

// Shared with the request's callbacks, which may run after the reader is
// gone only if cancel failed to stop them; they then find no waiter.
struct BodyReader::State {
  std::deque<std::string> pieces;
  size_t queuedBytes = 0;
  bool paused = false;
  std::optional<FetchResult> result;
  NextAwaiter* waiter = nullptr;

  void wake() {
    if (NextAwaiter* w = std::exchange(waiter, nullptr)) w->wake();
  }
};

BodyReader::BodyReader(HttpClient& client, Request request)
    : client_(&client), url_(request.url), state_(std::make_shared<State>()) {
  std::weak_ptr<State> weak = state_;
  request.options.bodySink = [this, weak](std::string_view piece) {
    if (auto state = weak.lock()) {
      state->pieces.emplace_back(piece);
      state->queuedBytes += piece.size();
      if (!state->paused && state->queuedBytes > kHighWater) {
        state->paused = true;
        client_->pauseResponse(handle_);
      }
      state->wake();
    }
  };
  handle_ = client_->request(std::move(request), [weak](FetchResult result) {
    if (auto state = weak.lock()) {
      state->result.emplace(std::move(result));
      state->wake();
    }
  });
}

BodyReader::~BodyReader() { client_->cancel(handle_); }

const std::optional<FetchResult>& BodyReader::result() const { return state_->result; }

size_t BodyReader::queuedBytes() const { return state_->queuedBytes; }

BodyReader::NextAwaiter::~NextAwaiter() {
  if (!suspended()) return;
  if (reader_->state_->waiter == this) reader_->state_->waiter = nullptr;
  forgetInTask();
}

bool BodyReader::NextAwaiter::await_ready() const noexcept {
  const State& state = *reader_->state_;
  return !state.pieces.empty() || state.result.has_value();
}

bool BodyReader::NextAwaiter::suspend(std::coroutine_handle<> awaiting,
                                      coro::TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  reader_->state_->waiter = this;
  return true;
}

void BodyReader::NextAwaiter::cancel(coro::Errc why) {
  State& state = *reader_->state_;
  state.waiter = nullptr;
  reader_->client_->cancel(reader_->handle_);
  if (!state.result) state.result.emplace(cancelledError(why, reader_->url_));
  resumeWith(why);
}

BodyChunk BodyReader::NextAwaiter::await_resume() {
  State& state = *reader_->state_;
  BodyChunk chunk;
  if (result_ != coro::Errc::kOk) {
    chunk.error = std::string(state.result->errorMessage());
    return chunk;
  }
  if (!state.pieces.empty()) {
    chunk.data = std::move(state.pieces.front());
    state.pieces.pop_front();
    state.queuedBytes -= chunk.data.size();
    if (state.paused && state.queuedBytes <= kLowWater) {
      state.paused = false;
      reader_->client_->resumeResponse(reader_->handle_);
    }
    return chunk;
  }
  if (state.result && !state.result->ok()) {
    chunk.error = std::string(state.result->errorMessage());
  } else {
    chunk.end = true;
  }
  return chunk;
}

}  // namespace libnet::http
