// CpuAffinityFlag: the --cpu-affinity LIST option of the example servers,
// which pins their loops to CPUs. LIST is a CPU list as taskset -c takes
// one ("0", "0,2-3"; base/CpuAffinity.h), checked as it is read: a
// malformed list, a CPU that does not exist here or one outside the CPUs
// this process may use is a usage error naming the option (exit 2).
//
// The rule, for T I/O threads (--threads) and K CPUs in LIST:
// - K == T + 1: the main loop (the one that accepts, and with T = 0 the
//   only one) runs on the first CPU, I/O loop i on CPU i + 1 of the list;
// - K <= T: I/O loop i runs on LIST[i % K] (the list is taken round), and
//   the main loop is not pinned;
// - K > T + 1: a usage error (more CPUs than loops).
//
// Single-threaded use, from main(): addTo() before parsing, check() after
// it, ioLoopCpus() for the server's options, pinMainLoop() once the server
// has started (threads made after that inherit the main loop's CPU).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "examples/common/Flags.h"

namespace libnet {

class CpuAffinityFlag {
 public:
  static constexpr const char* kUsage =
      "  --cpu-affinity LIST  pin the loops to CPUs (taskset's list: 0,2-3): with one CPU\n"
      "                       more than --threads, the main loop on the first and I/O loop\n"
      "                       i on the next ones; otherwise I/O loop i on CPU i mod count\n"
      "                       and the main loop unpinned (default: none pinned)\n";

  void addTo(Flags* flags);
  // After parsing: "" when LIST fits `threads` I/O threads, else why not
  // (naming the option).
  [[nodiscard]] std::string check(int threads);
  // For TcpServer::Options::cpuAffinity (HttpServer::Options::cpuAffinity);
  // empty when the I/O loops are not pinned.
  [[nodiscard]] const std::vector<int>& ioLoopCpus() const { return ioLoops_; }
  // Pins the calling thread, the main loop's, when the rule gives it a CPU,
  // and returns one line for the start-up banner saying where the loops run
  // ("" without the option). Call it after the server's start(): the I/O
  // threads pin themselves, and threads made after this share the main
  // loop's CPU. Throws std::system_error naming the main loop and the CPU
  // when the kernel refuses.
  std::string pinMainLoop() const;

 private:
  std::vector<int> list_;
  std::optional<int> mainLoop_;
  std::vector<int> ioLoops_;
};

}  // namespace libnet
