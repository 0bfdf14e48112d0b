#include "bench/dns/ProcessMeter.h"

#include <sys/resource.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace dnsbench {
namespace {

double processCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

}  // namespace

void ProcessMeter::start() {
  wallStart_ = std::chrono::steady_clock::now();
  cpuStart_ = processCpuSeconds();
}

void ProcessMeter::finish(uint64_t lookups, uint64_t failed) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart_).count();
  const double cpu = processCpuSeconds() - cpuStart_;
  const int threads = processThreads();
  std::printf("lookups=%" PRIu64 " failed=%" PRIu64
              " seconds=%.3f lookups_per_s=%.0f cpu_s=%.3f threads=%d\n",
              lookups, failed, seconds, seconds > 0 ? static_cast<double>(lookups) / seconds : 0.0,
              cpu, threads);
  std::fflush(stdout);
}

int processThreads() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

}  // namespace dnsbench
