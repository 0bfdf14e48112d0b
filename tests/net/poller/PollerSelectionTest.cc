// Backend selection: PollerKind names, what an EventLoop reports for each
// kind, the LIBNET_POLLER override and the fallback to epoll when io_uring
// cannot be set up (net/Poller.h, net/PollerKind.h, net/EventLoop.h).
//
// The override and the probe are read once per process, so those cases run
// poller_probe_main in child processes. The fallback case runs it the way
// DESIGN.md ("Testing the ENOMEM fallback") describes: as an unprivileged
// user with RLIMIT_MEMLOCK 0, since root's CAP_IPC_LOCK ignores the limit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/Poller.h"
#include "net/PollerKind.h"
#include "net/poller/EpollPoller.h"
#include "net/poller/UringPoller.h"
#include "net/poller/UringProbe.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"

namespace libnet {
namespace {

namespace fs = std::filesystem;

// Where this test's helper binaries are, in its runfiles.
constexpr std::string_view kPackage = "tests/net/poller";

// ---- names ----

TEST(PollerKindTest, NamesRoundTrip) {
  for (const PollerKind kind : {PollerKind::kEpoll, PollerKind::kIoUring, PollerKind::kAuto}) {
    const std::string_view name = pollerKindName(kind);
    const std::optional<PollerKind> parsed = parsePollerKind(name);
    ASSERT_TRUE(parsed.has_value()) << name;
    EXPECT_EQ(*parsed, kind) << name;
  }
  EXPECT_EQ(pollerKindName(PollerKind::kEpoll), "epoll");
  EXPECT_EQ(pollerKindName(PollerKind::kIoUring), "uring");
  EXPECT_EQ(pollerKindName(PollerKind::kAuto), "auto");
}

TEST(PollerKindTest, ParsesTheDocumentedNamesAndRejectsJunk) {
  EXPECT_EQ(parsePollerKind("epoll"), PollerKind::kEpoll);
  EXPECT_EQ(parsePollerKind("uring"), PollerKind::kIoUring);
  EXPECT_EQ(parsePollerKind("io_uring"), PollerKind::kIoUring);
  EXPECT_EQ(parsePollerKind("auto"), PollerKind::kAuto);
  for (const std::string_view junk :
       {"", "bogus", "epol", "epoll ", " epoll", "uring2", "select", "poll", "io-uring", "autoo"}) {
    EXPECT_EQ(parsePollerKind(junk), std::nullopt) << "'" << junk << "'";
  }
}

// ---- in this process ----

// The in-process cases build loops with explicit kinds; an override in this
// process's own environment would change what they get.
class EventLoopBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* env = std::getenv("LIBNET_POLLER"); env != nullptr && *env) {
      GTEST_SKIP() << "LIBNET_POLLER=" << env << " is set for this test process";
    }
  }
};

TEST_F(EventLoopBackendTest, EpollLoopHasNoRing) {
  EXPECT_EQ(EventLoop::resolvePollerKind(PollerKind::kEpoll), PollerKind::kEpoll);
  EventLoop loop(PollerKind::kEpoll);
  EXPECT_EQ(loop.pollerKind(), PollerKind::kEpoll);
  EXPECT_EQ(LoopInternals::poller(loop).kind(), PollerKind::kEpoll);
  EXPECT_NE(dynamic_cast<EpollPoller*>(&LoopInternals::poller(loop)), nullptr);
}

TEST_F(EventLoopBackendTest, IoUringLoopExposesItsRing) {
  const UringProbe::Result& probe = UringProbe::result();
  if (!probe.ok) GTEST_SKIP() << "io_uring unavailable here: " << probe.detail;
  EXPECT_EQ(EventLoop::resolvePollerKind(PollerKind::kIoUring), PollerKind::kIoUring);
  EventLoop loop(PollerKind::kIoUring);
  EXPECT_EQ(loop.pollerKind(), PollerKind::kIoUring);
  auto* uring = dynamic_cast<UringPoller*>(&LoopInternals::poller(loop));
  ASSERT_NE(uring, nullptr);
  EXPECT_EQ(uring->kind(), PollerKind::kIoUring);
  EXPECT_EQ(uring->context().setupFlags(), probe.setupFlags);
  EXPECT_EQ(uring->ownersInFlight(), 0u);
}

TEST_F(EventLoopBackendTest, AutoResolvesToIoUringExactlyWhenTheProbeSucceeds) {
  const UringProbe::Result& probe = UringProbe::result();
  const PollerKind expected = probe.ok ? PollerKind::kIoUring : PollerKind::kEpoll;
  EXPECT_EQ(EventLoop::resolvePollerKind(PollerKind::kAuto), expected) << probe.detail;
  EventLoop loop(PollerKind::kAuto);
  EXPECT_EQ(loop.pollerKind(), expected) << probe.detail;
  EXPECT_EQ(dynamic_cast<UringPoller*>(&LoopInternals::poller(loop)) != nullptr, probe.ok);
}

// ---- child processes ----

// This environment with `overrides` applied (nullopt removes the variable).
// The log level is pinned so that the lines under test are printed.
std::vector<std::string> childEnvironment(
    const std::map<std::string, std::optional<std::string>>& overrides) {
  std::map<std::string, std::optional<std::string>> all = overrides;
  all.emplace("LIBNET_LOG_LEVEL", "INFO");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const std::string name(entry.substr(0, entry.find('=')));
    if (!all.contains(name)) env.emplace_back(entry);
  }
  for (const auto& [name, value] : all) {
    if (value) env.push_back(name + "=" + *value);
  }
  return env;
}

// Lines of `text` that contain every one of `words`.
int countLinesWith(const std::string& text, std::initializer_list<std::string_view> words) {
  int count = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    bool all = true;
    for (const std::string_view w : words) all = all && line.find(w) != std::string::npos;
    count += all ? 1 : 0;
  }
  return count;
}

class PollerOverrideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    binary_ = test::testBinary("poller_probe_main", kPackage);
    ASSERT_FALSE(binary_.empty()) << "poller_probe_main not found in the runfiles";
  }

  test::ChildResult runProbe(std::string_view kind, std::optional<std::string> env) {
    return test::runChild({binary_, std::string(kind)}, childEnvironment({{"LIBNET_POLLER", env}}));
  }

  std::string binary_;
};

TEST_F(PollerOverrideTest, HelperReportsTheKindItWasGivenWithoutOverride) {
  // The control for the override cases below: without LIBNET_POLLER the
  // program's choice is what the loop gets.
  const test::ChildResult r = runProbe("epoll", std::nullopt);
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out, "backend=epoll\n") << r.describe();
  if (UringProbe::result().ok) {
    const test::ChildResult u = runProbe("uring", std::nullopt);
    ASSERT_EQ(u.exitCode, 0) << u.describe();
    EXPECT_EQ(u.out, "backend=uring\n") << u.describe();
  }
}

TEST_F(PollerOverrideTest, ProbeDoesNotInterruptTheCallingThreadAfterwards) {
  // The probe closes its ring; the kernel's clean-up of a closed ring
  // interrupts each thread that used it, so a probe run on the caller's
  // thread turns that thread's next timed blocking call into EINTR.
  const test::ChildResult r = test::runChild({binary_, "probe-then-wait"}, childEnvironment({}));
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  if (r.out.starts_with("probe=unavailable")) GTEST_SKIP() << "io_uring unavailable here";
  EXPECT_EQ(r.out, "probe=ok interrupted=0\n") << r.describe();
}

TEST_F(PollerOverrideTest, SqPollFromTheEnvironmentIsTakenOrRefusedWithAWarning) {
  if (!UringProbe::result().ok) GTEST_SKIP() << "io_uring unavailable here";
  const test::ChildResult bad = test::runChild(
      {binary_, "uring"}, childEnvironment({{"LIBNET_URING_SQPOLL_IDLE_MS", "soon"}}));
  ASSERT_EQ(bad.exitCode, 0) << bad.describe();
  EXPECT_EQ(bad.out, "backend=uring\n") << bad.describe();
  EXPECT_EQ(countLinesWith(bad.err, {"LIBNET_URING_SQPOLL_IDLE_MS", "soon", "ignored"}), 1)
      << bad.describe();
  // A valid value: the loop runs on io_uring with SQPOLL, or without it and
  // a warning naming the refusal; either way it runs.
  const test::ChildResult good =
      test::runChild({binary_, "uring"}, childEnvironment({{"LIBNET_URING_SQPOLL_IDLE_MS", "20"}}));
  ASSERT_EQ(good.exitCode, 0) << good.describe();
  EXPECT_EQ(good.out, "backend=uring\n") << good.describe();
  EXPECT_EQ(countLinesWith(good.err, {"LIBNET_URING_SQPOLL_IDLE_MS"}), 0) << good.describe();
}

TEST_F(PollerOverrideTest, EnvironmentEpollOverridesTheProgramsUring) {
  const test::ChildResult r = runProbe("uring", "epoll");
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out, "backend=epoll\n") << r.describe();
}

TEST_F(PollerOverrideTest, EnvironmentUringOverridesTheProgramsEpoll) {
  const UringProbe::Result& probe = UringProbe::result();
  if (!probe.ok) GTEST_SKIP() << "io_uring unavailable here: " << probe.detail;
  for (const std::string_view value : {"uring", "io_uring"}) {
    const test::ChildResult r = runProbe("epoll", std::string(value));
    ASSERT_EQ(r.exitCode, 0) << "LIBNET_POLLER=" << value << "\n" << r.describe();
    EXPECT_EQ(r.out, "backend=uring\n") << "LIBNET_POLLER=" << value << "\n" << r.describe();
  }
}

TEST_F(PollerOverrideTest, EnvironmentAutoOverridesTheProgramsEpoll) {
  const UringProbe::Result& probe = UringProbe::result();
  const test::ChildResult r = runProbe("epoll", "auto");
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out, probe.ok ? "backend=uring\n" : "backend=epoll\n") << r.describe();
}

TEST_F(PollerOverrideTest, BogusEnvironmentIsReportedAndTheProgramsChoiceUsed) {
  const test::ChildResult r = runProbe("epoll", "bogus");
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out, "backend=epoll\n") << r.describe();
  EXPECT_EQ(countLinesWith(r.err, {"LIBNET_POLLER", "bogus"}), 1) << r.describe();
  if (UringProbe::result().ok) {
    const test::ChildResult u = runProbe("uring", "bogus");
    ASSERT_EQ(u.exitCode, 0) << u.describe();
    EXPECT_EQ(u.out, "backend=uring\n") << u.describe();
    EXPECT_EQ(countLinesWith(u.err, {"LIBNET_POLLER", "bogus"}), 1) << u.describe();
  }
}

// ---- a kernel that lacks what the completion path needs (simulated) ----

// Each stage of the probe failing, as on a kernel without it: kAuto settles
// on epoll with one line naming what is missing; an explicit io_uring
// request fails, naming it too.
TEST_F(PollerOverrideTest, AProbeStageMissingMeansEpollOnAutoAndAnErrorOnUring) {
  // A stage can only be simulated where the stages before it really pass.
  if (const UringProbe::Result& probe = UringProbe::result(); !probe.ok) {
    GTEST_SKIP() << "io_uring unavailable here: " << probe.detail;
  }
  const struct {
    const char* stage;
    const char* named;  // what the log line and the error must mention
  } cases[] = {
      {"setup", "io_uring_queue_init"},
      {"opcodes", "IORING_OP_"},
      {"buffer-ring", "buffer ring"},
      {"multishot-recv", "multishot recv"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.stage);
    const std::vector<std::string> env = childEnvironment({{"LIBNET_POLLER", std::nullopt}});
    const test::ChildResult onAuto =
        test::runChild({binary_, "auto", "--simulate-missing", c.stage}, env);
    ASSERT_EQ(onAuto.exitCode, 0) << onAuto.describe();
    EXPECT_EQ(onAuto.out, "backend=epoll\n") << onAuto.describe();
    EXPECT_EQ(countLinesWith(onAuto.err, {"io_uring unavailable", c.named, "(simulated)"}), 1)
        << onAuto.describe();
    EXPECT_EQ(countLinesWith(onAuto.err, {"io_uring"}), 1) << onAuto.describe();

    const test::ChildResult onUring =
        test::runChild({binary_, "uring", "--simulate-missing", c.stage}, env);
    EXPECT_EQ(onUring.exitCode, 3) << onUring.describe();
    EXPECT_EQ(onUring.out.rfind("error=", 0), 0u) << onUring.describe();
    EXPECT_NE(onUring.out.find("io_uring unavailable"), std::string::npos) << onUring.describe();
    EXPECT_NE(onUring.out.find(c.named), std::string::npos) << onUring.describe();
  }
}

// ---- the real fallback: ENOMEM from io_uring_queue_init ----

std::string findExecutable(std::string_view name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  dirs += ":/usr/bin:/bin:/usr/sbin:/sbin";
  std::istringstream in(dirs);
  for (std::string dir; std::getline(in, dir, ':');) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// A fresh world-readable directory under /tmp holding a world-executable
// copy of the helper: the runfiles live under root's cache, which the
// unprivileged user cannot reach. Removed on destruction.
class UnprivilegedCopy {
 public:
  explicit UnprivilegedCopy(const std::string& binary) {
    char pattern[] = "/tmp/libnet-poller-probe-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      error_ = std::string("mkdtemp: ") + std::strerror(errno);
      return;
    }
    dir_ = pattern;
    std::error_code ec;
    const fs::path copy = dir_ / "poller_probe_main";
    fs::copy_file(binary, copy, ec);
    if (ec || ::chmod(dir_.c_str(), 0755) != 0 || ::chmod(copy.c_str(), 0755) != 0) {
      error_ = "copying " + binary + " to " + copy.string() + ": " +
               (ec ? ec.message() : std::strerror(errno));
      return;
    }
    path_ = copy.string();
  }
  ~UnprivilegedCopy() {
    if (dir_.empty()) return;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  UnprivilegedCopy(const UnprivilegedCopy&) = delete;
  UnprivilegedCopy& operator=(const UnprivilegedCopy&) = delete;

  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
  std::string path_;
  std::string error_;
};

class PollerFallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run the helper as another user";
    const UringProbe::Result& probe = UringProbe::result();
    if (!probe.ok) {
      GTEST_SKIP() << "io_uring unavailable even to root here (" << probe.detail
                   << "), so a fallback would not show the RLIMIT_MEMLOCK path";
    }
    setpriv_ = findExecutable("setpriv");
    prlimit_ = findExecutable("prlimit");
    if (setpriv_.empty() || prlimit_.empty()) {
      GTEST_SKIP() << "setpriv and prlimit (util-linux) are needed; found setpriv='" << setpriv_
                   << "' prlimit='" << prlimit_ << "'";
    }
    for (const char* name : {"poller_probe_main", "auto_backend_echo_main"}) {
      const std::string binary = test::testBinary(name, kPackage);
      ASSERT_FALSE(binary.empty()) << name << " not found in the runfiles";
      copies_.push_back(std::make_unique<UnprivilegedCopy>(binary));
      ASSERT_TRUE(copies_.back()->error().empty()) << copies_.back()->error();
    }
  }

  void TearDown() override {
    for (auto& copy : copies_) {
      const fs::path dir = copy->dir();
      copy.reset();
      EXPECT_FALSE(fs::exists(dir)) << dir << " was not removed";
    }
  }

  // `setpriv --reuid=65534 --regid=65534 --clear-groups [prlimit
  // --memlock=BYTES] PROGRAM args...` (PROGRAM: the copy of copies_[index]),
  // with no LIBNET_POLLER.
  test::ChildResult runCopy(size_t index, const std::vector<std::string>& programArgs,
                            std::optional<uint64_t> lockedMemoryLimit) {
    std::vector<std::string> args = {setpriv_, "--reuid=65534", "--regid=65534", "--clear-groups"};
    if (lockedMemoryLimit) {
      args.push_back(prlimit_);
      args.push_back("--memlock=" + std::to_string(*lockedMemoryLimit));
    }
    args.push_back(copies_[index]->path());
    args.insert(args.end(), programArgs.begin(), programArgs.end());
    return test::runChild(args, childEnvironment({{"LIBNET_POLLER", std::nullopt}}));
  }

  // poller_probe_main KIND, with RLIMIT_MEMLOCK 0 when noLockedMemory.
  test::ChildResult runUnprivileged(std::string_view kind, bool noLockedMemory) {
    return runCopy(0, {std::string(kind)},
                   noLockedMemory ? std::optional<uint64_t>(0) : std::nullopt);
  }

  // auto_backend_echo_main THREADS under RLIMIT_MEMLOCK `limit`.
  test::ChildResult runAutoEcho(int threads, uint64_t limit) {
    return runCopy(1, {std::to_string(threads)}, limit);
  }

  std::string setpriv_;
  std::string prlimit_;
  std::vector<std::unique_ptr<UnprivilegedCopy>> copies_;
};

TEST_F(PollerFallbackTest, AutoFallsBackToEpollWithOneLineSayingWhy) {
  // Control: the same user with the inherited memlock limit gets io_uring, so
  // the limit alone is what the fallback below is about.
  const test::ChildResult control = runUnprivileged("auto", false);
  ASSERT_TRUE(control.started) << control.describe();
  if (control.out != "backend=uring\n") {
    GTEST_SKIP() << "the unprivileged user cannot use io_uring even without the memlock "
                    "limit, so this machine cannot isolate the RLIMIT_MEMLOCK fallback:\n"
                 << control.describe();
  }

  const test::ChildResult r = runUnprivileged("auto", true);
  ASSERT_TRUE(r.started) << r.describe();
  if (r.out == "backend=uring\n") {
    GTEST_SKIP() << "io_uring setup succeeded for an unprivileged process with "
                    "RLIMIT_MEMLOCK 0 (this kernel does not charge the ring to the memlock "
                    "limit), so the ENOMEM fallback cannot be provoked here";
  }
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(r.out, "backend=epoll\n") << r.describe();
  // Exactly one line, saying what failed and why.
  EXPECT_EQ(countLinesWith(r.err, {"io_uring_queue_init", "Cannot allocate memory"}), 1)
      << r.describe();
  EXPECT_EQ(countLinesWith(r.err, {"io_uring"}), 1) << r.describe();
  EXPECT_EQ(countLinesWith(r.err, {"io_uring", "unavailable", "epoll"}), 1) << r.describe();
}

TEST_F(PollerFallbackTest, ExplicitUringThrowsNamingIoUring) {
  const test::ChildResult r = runUnprivileged("uring", true);
  ASSERT_TRUE(r.started) << r.describe();
  if (r.out == "backend=uring\n") {
    GTEST_SKIP() << "io_uring setup succeeded for an unprivileged process with "
                    "RLIMIT_MEMLOCK 0, so the failure cannot be provoked here";
  }
  EXPECT_EQ(r.exitCode, 3) << r.describe();
  EXPECT_EQ(r.out.rfind("error=", 0), 0u) << r.describe();
  EXPECT_NE(r.out.find("io_uring"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("Cannot allocate memory"), std::string::npos) << r.describe();
}

// "key=N" out of auto_backend_echo_main's report line, or -1.
int reportField(const std::string& report, std::string_view key) {
  const std::string needle = std::string(key) + "=";
  const size_t at = report.find(needle);
  if (at == std::string::npos) return -1;
  return std::atoi(report.c_str() + at + needle.size());
}

// An auto process whose every loop runs, on whatever backend it could get,
// with exactly one line saying why when any loop fell back.
void expectServedOnAuto(const test::ChildResult& r, int threads) {
  const int loops = threads + 1;  // the accepting loop too
  ASSERT_TRUE(r.started) << r.describe();
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_EQ(reportField(r.out, "loops"), loops) << r.describe();
  EXPECT_EQ(reportField(r.out, "echoed"), 2 * std::max(threads, 1)) << r.describe();
  const int uring = reportField(r.out, "uring");
  const int epoll = reportField(r.out, "epoll");
  EXPECT_EQ(uring + epoll, loops) << r.describe();
  EXPECT_EQ(countLinesWith(r.err, {"io_uring unavailable"}), epoll > 0 ? 1 : 0) << r.describe();
}

// Between no locked memory at all (the probe fails, above) and plenty lie
// limits under which io_uring's small probe ring fits but a loop's real ring
// (1024 SQ / 16384 CQ entries and a buffer ring) does not: auto must not
// take the probe's word for it and then fail every loop.
TEST_F(PollerFallbackTest, AutoServesUnderSmallLockedMemoryLimits) {
  for (const uint64_t limit : {16 * 1024, 64 * 1024, 1024 * 1024}) {
    SCOPED_TRACE("RLIMIT_MEMLOCK " + std::to_string(limit));
    expectServedOnAuto(runAutoEcho(2, limit), 2);
  }
}

// Each loop has a ring of its own, and the limit is the user's, so many
// loops exhaust even a limit that one ring fits in comfortably.
TEST_F(PollerFallbackTest, SixtyFourLoopsUnderEightMiBRunOrFallBack) {
  expectServedOnAuto(runAutoEcho(64, 8 * 1024 * 1024), 64);
}

TEST_F(PollerFallbackTest, ExplicitUringUnderASmallLimitThrowsNamingIoUring) {
  // The probe ring fits in 64 KiB; the loop's real ring does not.
  const test::ChildResult r = runCopy(0, {"uring"}, 64 * 1024);
  ASSERT_TRUE(r.started) << r.describe();
  if (r.out == "backend=uring\n") {
    GTEST_SKIP() << "io_uring's ring fits under RLIMIT_MEMLOCK 64 KiB here";
  }
  EXPECT_EQ(r.exitCode, 3) << r.describe();
  EXPECT_EQ(r.out.rfind("error=", 0), 0u) << r.describe();
  EXPECT_NE(r.out.find("io_uring"), std::string::npos) << r.describe();
  EXPECT_NE(r.out.find("Cannot allocate memory"), std::string::npos) << r.describe();
}

}  // namespace
}  // namespace libnet
