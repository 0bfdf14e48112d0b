// Timestamp: a wall-clock instant with microsecond resolution, a thin value type
// over std::chrono::system_clock. Used for log lines and for "when did these
// bytes arrive". Intervals and timer deadlines use the monotonic clock instead
// (libnet::MonoClock, base/Duration.h), because wall time can jump.
// A plain value: any thread may use it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "base/Duration.h"

namespace libnet {

class Timestamp {
 public:
  using Clock = std::chrono::system_clock;
  using Micros = std::chrono::microseconds;

  constexpr Timestamp() = default;
  constexpr explicit Timestamp(Micros sinceEpoch) : sinceEpoch_(sinceEpoch) {}

  static Timestamp now() {
    return Timestamp(std::chrono::duration_cast<Micros>(Clock::now().time_since_epoch()));
  }
  static Timestamp fromUnixSeconds(int64_t seconds) {
    return Timestamp(std::chrono::seconds(seconds));
  }

  [[nodiscard]] bool valid() const { return sinceEpoch_.count() > 0; }
  [[nodiscard]] int64_t microsSinceEpoch() const { return sinceEpoch_.count(); }
  [[nodiscard]] int64_t secondsSinceEpoch() const {
    return std::chrono::duration_cast<std::chrono::seconds>(sinceEpoch_).count();
  }
  [[nodiscard]] Micros sinceEpoch() const { return sinceEpoch_; }

  // "1700000000.123456"
  [[nodiscard]] std::string toString() const;
  // "20231114 22:13:20.123456" (UTC); showMicros=false drops the fraction.
  [[nodiscard]] std::string toFormattedString(bool showMicros = true) const;

  friend constexpr auto operator<=>(Timestamp, Timestamp) = default;
  friend constexpr Timestamp operator+(Timestamp t, Duration d) {
    return Timestamp(t.sinceEpoch_ + std::chrono::duration_cast<Micros>(d));
  }
  friend constexpr Micros operator-(Timestamp a, Timestamp b) {
    return a.sinceEpoch_ - b.sinceEpoch_;
  }

 private:
  Micros sinceEpoch_{0};
};

}  // namespace libnet
