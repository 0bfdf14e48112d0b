#include "net/http/BodyBudget.h"

#include <cassert>
#include <utility>

namespace libnet::http {

bool BodyBudget::tryAcquire(size_t bytes) {
  if (unlimited()) {
    used_.fetch_add(bytes, std::memory_order_relaxed);
    return true;
  }
  // A compare-and-swap loop rather than add-then-undo: a failed attempt must
  // never make the counter look fuller than it is to a concurrent caller, or
  // two uploads that would fit together could both be refused.
  size_t current = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ - current) return false;  // current <= limit_ always holds
  } while (!used_.compare_exchange_weak(current, current + bytes, std::memory_order_relaxed));
  return true;
}

void BodyBudget::release(size_t bytes) {
  [[maybe_unused]] const size_t before = used_.fetch_sub(bytes, std::memory_order_relaxed);
  assert(before >= bytes);
}

BodyBudget::Reservation::Reservation(Reservation&& other) noexcept
    : budget_(std::move(other.budget_)), bytes_(std::exchange(other.bytes_, 0)) {}

BodyBudget::Reservation& BodyBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    release();
    budget_ = std::move(other.budget_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

bool BodyBudget::Reservation::cover(size_t total) {
  if (total <= bytes_) return true;
  if (!budget_ || !budget_->tryAcquire(total - bytes_)) return false;
  bytes_ = total;
  return true;
}

void BodyBudget::Reservation::release() {
  if (bytes_ == 0) return;
  budget_->release(bytes_);
  bytes_ = 0;
}

}  // namespace libnet::http
