// TimerId: names one timer of one EventLoop, as a plain value (a sequence
// number), so no pointer into the timer queue ever escapes. Cancelling a timer
// that already fired, or was already cancelled, is harmless.
#pragma once

#include <cstdint>

namespace libnet {

class TimerId {
 public:
  constexpr TimerId() = default;
  constexpr explicit TimerId(int64_t sequence) : sequence_(sequence) {}

  [[nodiscard]] constexpr int64_t sequence() const { return sequence_; }
  [[nodiscard]] constexpr bool valid() const { return sequence_ > 0; }
  friend constexpr bool operator==(TimerId, TimerId) = default;

 private:
  int64_t sequence_ = 0;
};

}  // namespace libnet
