// CPU affinity: which CPUs a thread may run on. The helpers behind loop
// pinning (EventLoopThreadPool's cpus, TcpServer::Options::cpuAffinity,
// the example servers' --cpu-affinity): parsing a CPU list as taskset(1)
// writes one, checking a list against the CPUs this process may use, and
// pinning a thread. docs/operations.md says when pinning helps.
//
// Any thread. A CPU is a number as the kernel counts them (0, 1, ...; what
// /proc/cpuinfo calls "processor").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace libnet {

// "0", "0,2", "0-3", "0,2-3": CPUs and inclusive ranges separated by
// commas, no spaces. Returned in the order written, a range in ascending
// order; a CPU may appear more than once (two loops given one CPU). Throws
// std::invalid_argument saying what is wrong (empty, not a number, a range
// whose end is below its start, a CPU beyond CPU_SETSIZE) for anything
// else. Whether the CPUs exist here is checkCpus()' question.
[[nodiscard]] std::vector<int> parseCpuList(std::string_view list);

// The CPUs as a list parseCpuList() reads back, ranges joined where the
// numbers run on ("0-2,5"); duplicates and order are kept as given.
[[nodiscard]] std::string formatCpuList(const std::vector<int>& cpus);

// The CPUs this process may run on: the calling thread's affinity mask
// (sched_getaffinity) the first time any thread asked, before anything was
// pinned through these helpers (pinCurrentThread() asks first), so a main
// thread pinned since does not shrink it. taskset and cgroup cpusets set it
// for the whole process. Sorted.
[[nodiscard]] const std::vector<int>& allowedCpus();

// The CPUs the calling thread may run on now (sched_getaffinity), sorted.
[[nodiscard]] std::vector<int> currentThreadCpus();

// Throws std::invalid_argument, the message starting with `what`, for an
// empty list, a CPU that does not exist on this machine (negative, or not
// below the number of CPUs configured), or one outside allowedCpus(),
// naming the CPU and the set it should come from.
void checkCpus(std::string_view what, const std::vector<int>& cpus);

// Pins the calling thread to `cpu` (pthread_setaffinity_np). Throws
// std::system_error naming the CPU when the kernel refuses (a CPU that is
// not online, or not in the thread's cpuset). Not checked against
// checkCpus(): a caller that wants a std::invalid_argument first calls it.
void pinCurrentThread(int cpu);

}  // namespace libnet
