// The result line of the resolver benchmark's programs (see
// ResolveBenchArgs.h): ProcessMeter measures the whole process between
// start() and finish() and prints
//
//   lookups=N failed=F seconds=S lookups_per_s=X cpu_s=C threads=T
//
// where cpu_s is the process's user+system time over the lookups (every
// thread, the hidden ones included) and threads the process's thread count
// when finish() is called, which the caller does before tearing anything
// down. Used from one thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace dnsbench {

class ProcessMeter {
 public:
  void start();
  // Prints the result line to stdout and flushes it.
  void finish(uint64_t lookups, uint64_t failed);

 private:
  std::chrono::steady_clock::time_point wallStart_;
  double cpuStart_ = 0;
};

// The "Threads:" field of /proc/self/status, or -1.
[[nodiscard]] int processThreads();

}  // namespace dnsbench
