#include "net/coro/ReadAwaiter.h"

#include "net/Buffer.h"
#include "net/coro/StreamState.h"

namespace libnet::coro {

ReadAwaiter::~ReadAwaiter() {
  if (!suspended()) return;
  state_->clearReader(this);
  forgetInTask();
}

bool ReadAwaiter::satisfiedBy(const Buffer& input) {
  const size_t readable = input.readableBytes();
  switch (mode_) {
    case Mode::kSome:
      length_ = readable;
      return readable > 0;
    case Mode::kMore:
      length_ = readable;
      return readable >= count_;
    case Mode::kAtLeast:
      length_ = count_;
      return readable >= count_;
    case Mode::kUntil: {
      const std::string_view bytes = input.view();
      const size_t at = bytes.find(delimiter_, scanned_);
      if (at != std::string_view::npos && at + delimiter_.size() <= count_) {
        length_ = at + delimiter_.size();
        return true;
      }
      if (at != std::string_view::npos || readable >= count_) {
        result_ = Errc::kTooLong;
        length_ = 0;
        return true;
      }
      // A delimiter may start in the last size()-1 bytes and end in the next.
      if (readable >= delimiter_.size()) scanned_ = readable - delimiter_.size() + 1;
      return false;
    }
  }
  return false;
}

bool ReadAwaiter::settled() {
  // readMore() asks for a byte beyond the unread ones. Bytes that arrived
  // while the coroutine was suspended elsewhere are unread but new to it:
  // they satisfy the read, which then reports everything unread.
  if (mode_ == Mode::kMore && state_->hasUnseenInput()) count_ = 1;
  if (satisfiedBy(state_->input())) {
    if (result_ == Errc::kOk) state_->noteInputSeen();
    return true;
  }
  length_ = 0;
  result_ = state_->end();
  return result_ != Errc::kOk;
}

bool ReadAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  if (!prepareSuspend(awaiting, context)) return false;
  state_->setReader(this);
  return true;
}

void ReadAwaiter::complete() {
  state_->clearReader(this);
  if (result_ == Errc::kOk) state_->noteInputSeen();
  if (result_ != Errc::kOk) length_ = 0;
  resumeWith(result_);
}

void ReadAwaiter::cancel(Errc why) {
  state_->clearReader(this);
  length_ = 0;
  resumeWith(why);
}

}  // namespace libnet::coro
