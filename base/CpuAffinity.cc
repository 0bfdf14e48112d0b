#include "base/CpuAffinity.h"

#include <pthread.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <stdexcept>
#include <string>
#include <system_error>

namespace libnet {

namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

// One CPU number of a list: digits only (no sign, no space), below CPU_SETSIZE.
int parseCpu(std::string_view token, std::string_view list) {
  if (token.empty()) {
    throw std::invalid_argument("CPU list " + quoted(list) + ": an empty entry");
  }
  int cpu = 0;
  const char* end = token.data() + token.size();
  auto [ptr, ec] = std::from_chars(token.data(), end, cpu);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && cpu >= CPU_SETSIZE)) {
    throw std::invalid_argument("CPU list " + quoted(list) + ": CPU " + std::string(token) +
                                " is beyond the largest CPU number (" +
                                std::to_string(CPU_SETSIZE - 1) + ")");
  }
  if (ec != std::errc() || ptr != end) {
    throw std::invalid_argument("CPU list " + quoted(list) + ": " + quoted(token) +
                                " is not a CPU number");
  }
  return cpu;
}

std::vector<int> cpusOf(const cpu_set_t& set) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

std::vector<int> parseCpuList(std::string_view list) {
  if (list.empty()) throw std::invalid_argument("CPU list is empty");
  std::vector<int> cpus;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string_view entry = list.substr(start, comma - start);
    const size_t dash = entry.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parseCpu(entry, list));
    } else if (dash == 0 || dash + 1 == entry.size()) {
      throw std::invalid_argument("CPU list " + quoted(list) + ": " + quoted(entry) +
                                  " is neither a CPU nor a range of them");
    } else {
      const int first = parseCpu(entry.substr(0, dash), list);
      const int last = parseCpu(entry.substr(dash + 1), list);
      if (last < first) {
        throw std::invalid_argument("CPU list " + quoted(list) + ": range " + quoted(entry) +
                                    " ends below its start");
      }
      for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
    }
    start = comma + 1;
  }
  return cpus;
}

std::string formatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

const std::vector<int>& allowedCpus() {
  // Taken once: after the helpers below have pinned the main thread, its
  // own mask no longer says what the process may use.
  static const std::vector<int> allowed = currentThreadCpus();
  return allowed;
}

std::vector<int> currentThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) {
    throw std::system_error(errno, std::system_category(), "sched_getaffinity");
  }
  return cpusOf(set);
}

void checkCpus(std::string_view what, const std::vector<int>& cpus) {
  const std::string prefix(what);
  if (cpus.empty()) throw std::invalid_argument(prefix + ": the CPU list is empty");
  const int configured = ::get_nprocs_conf();
  const std::vector<int>& allowed = allowedCpus();
  for (const int cpu : cpus) {
    if (cpu < 0 || cpu >= configured || cpu >= CPU_SETSIZE) {
      throw std::invalid_argument(prefix + ": CPU " + std::to_string(cpu) +
                                  " does not exist (this machine has CPUs 0-" +
                                  std::to_string(configured - 1) + ")");
    }
    if (!std::binary_search(allowed.begin(), allowed.end(), cpu)) {
      throw std::invalid_argument(prefix + ": CPU " + std::to_string(cpu) +
                                  " is not in this process's allowed set (" +
                                  formatCpuList(allowed) + ")");
    }
  }
}

void pinCurrentThread(int cpu) {
  (void)allowedCpus();  // the process's set, before this thread's shrinks
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    throw std::system_error(EINVAL, std::system_category(),
                            "pinning to CPU " + std::to_string(cpu));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (const int err = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set); err != 0) {
    throw std::system_error(err, std::system_category(),
                            "pthread_setaffinity_np to CPU " + std::to_string(cpu));
  }
}

}  // namespace libnet
