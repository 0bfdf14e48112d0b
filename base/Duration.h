// The project's one duration type and monotonic clock. Every interval in the
// library (timer intervals, timeouts, retry delays, idle ticks) is a
// libnet::Duration; any std::chrono duration converts to it implicitly
// (std::chrono::seconds(1), 500ms), so callers never name it. Deadlines are
// MonoTime: the wall clock (Timestamp) can jump, the monotonic one cannot.
#pragma once

#include <chrono>

namespace libnet {

using MonoClock = std::chrono::steady_clock;
using MonoTime = MonoClock::time_point;
// steady_clock's own resolution on Linux, so MonoTime + Duration is exact.
using Duration = std::chrono::nanoseconds;

}  // namespace libnet
