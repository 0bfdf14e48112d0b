// base/CpuAffinity: CPU lists as taskset writes them, checked against this
// machine and this process, and a thread pinned to one CPU.
#include "base/CpuAffinity.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace libnet {
namespace {

// The message of the std::invalid_argument that `f` throws ("" when none).
template <class F>
std::string invalidArgument(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CpuAffinityTest, ParsesCpusAndRangesInTheOrderWritten) {
  EXPECT_EQ(parseCpuList("0"), std::vector<int>({0}));
  EXPECT_EQ(parseCpuList("0,2-3"), std::vector<int>({0, 2, 3}));
  EXPECT_EQ(parseCpuList("3,1"), std::vector<int>({3, 1}));
  EXPECT_EQ(parseCpuList("5-5"), std::vector<int>({5}));
  EXPECT_EQ(parseCpuList("1,1"), std::vector<int>({1, 1}));
  EXPECT_EQ(parseCpuList("1023"), std::vector<int>({1023}));
}

TEST(CpuAffinityTest, RefusesMalformedListsSayingWhy) {
  EXPECT_NE(invalidArgument([] { (void)parseCpuList(""); }).find("empty"), std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("0,,1"); }).find("empty entry"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("0,"); }).find("empty entry"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("a"); }).find("\"a\" is not a CPU number"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList(" 1"); }).find("not a CPU number"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("1x"); }).find("not a CPU number"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("-1"); }).find("neither a CPU nor a range"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("2-"); }).find("neither a CPU nor a range"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("1-2-3"); }).find("not a CPU number"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("3-1"); }).find("ends below its start"),
            std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("1024"); }).find("beyond"), std::string::npos);
  EXPECT_NE(invalidArgument([] { (void)parseCpuList("99999999999"); }).find("beyond"),
            std::string::npos);
}

TEST(CpuAffinityTest, FormatsWhatParseReadsBack) {
  EXPECT_EQ(formatCpuList({0, 1, 2, 5}), "0-2,5");
  EXPECT_EQ(formatCpuList({3, 1}), "3,1");
  EXPECT_EQ(formatCpuList({}), "");
  const std::vector<int> cpus{0, 2, 3, 4, 7};
  EXPECT_EQ(parseCpuList(formatCpuList(cpus)), cpus);
}

TEST(CpuAffinityTest, AllowedCpusAreThisProcesssMask) {
  const std::vector<int>& allowed = allowedCpus();
  ASSERT_FALSE(allowed.empty());
  EXPECT_EQ(allowed, currentThreadCpus());
  EXPECT_NO_THROW(checkCpus("test", allowed));
}

TEST(CpuAffinityTest, RefusesCpusThatDoNotExistOrAListWiderThanTheMachine) {
  const int configured = ::get_nprocs_conf();
  std::string why = invalidArgument([&] { checkCpus("test", {configured}); });
  EXPECT_EQ(why.rfind("test: CPU " + std::to_string(configured) + " does not exist", 0), 0u) << why;
  why = invalidArgument([] { checkCpus("test", {-1}); });
  EXPECT_NE(why.find("CPU -1 does not exist"), std::string::npos) << why;
  // Every CPU the process may use, and one more: the list is wider than the set.
  std::vector<int> wider = allowedCpus();
  wider.push_back(configured);
  why = invalidArgument([&] { checkCpus("test", wider); });
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
  why = invalidArgument([] { checkCpus("test", {}); });
  EXPECT_NE(why.find("empty"), std::string::npos) << why;
}

TEST(CpuAffinityTest, PinsTheCallingThread) {
  for (const int cpu : allowedCpus()) {
    std::vector<int> mask;
    int ranOn = -1;
    std::thread([&] {
      pinCurrentThread(cpu);
      mask = currentThreadCpus();
      ranOn = ::sched_getcpu();
    }).join();
    EXPECT_EQ(mask, std::vector<int>({cpu}));
    EXPECT_EQ(ranOn, cpu);
  }
  // The process's set is what it was before any thread was pinned.
  EXPECT_EQ(allowedCpus(), currentThreadCpus());
}

TEST(CpuAffinityTest, PinningToACpuTheKernelRefusesThrowsNamingIt) {
  // Beyond every machine's CPUs, within a cpu_set_t: the kernel finds no
  // CPU of the mask it could run the thread on.
  std::string what;
  std::thread([&] {
    try {
      pinCurrentThread(CPU_SETSIZE - 1);
    } catch (const std::system_error& e) {
      what = e.what();
    }
  }).join();
  EXPECT_NE(what.find("pthread_setaffinity_np to CPU " + std::to_string(CPU_SETSIZE - 1)),
            std::string::npos)
      << what;
}

}  // namespace
}  // namespace libnet
