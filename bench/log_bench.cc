// log_bench: throughput and front-end latency of libnet's logging against
// spdlog, side by side in one run, printed as markdown tables.
//
//   log_bench [--lines N] [--threads 1,2,4] [--loggers libnet,sync,spdlog]
//             [--reps R] [--compare OTHER_LOG_BENCH] [--dir DIR] [--no-load-check]
//
// For each logger and thread count, N lines in total (split evenly over the
// threads) of about 115 bytes each go to a file in a fresh directory that
// log_bench makes inside DIR (default: the temporary directory; DIR is
// created if missing) and removes, with only what it wrote, when it ends:
// nothing else in DIR is touched. Each thread times
// every logging call with steady_clock; the run's wall time ends when the
// last line is on its way to the kernel (stop()/shutdown() returned), so a
// back end that only queues does not look faster than it is.
//
// - libnet:  LOG_INFO through AsyncLogging into LogFile.
// - sync:    LOG_INFO through a sink that fwrites into LogFile under a mutex.
// - spdlog:  spdlog's async logger, queue 8192, 1 worker, blocking on
//            overflow, pattern "%Y%m%d %H:%M:%S.%f %t %l %v".
//
// Another logger joins with one runXxx() function that calls measure() with a
// per-line lambda and a finish lambda that returns once its back end drained
// (see runSpdlogAsync), and a name in main()'s runner list.
// --compare runs another build of log_bench (an older commit, say) right after
// each of this build's libnet rows, same thread count and lines, and adds its
// libnet row as "compare: ..."; with --reps R the runs interleave R times and
// a table of medians follows.
//
// Before the runs it prints a load check (load average and the processes that
// used CPU in the last half second); each row's "other load" is the share of
// all CPUs that other processes and the hypervisor (steal) took during it.

#include <pthread.h>
#include <signal.h>
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "base/AsyncLogging.h"
#include "base/LogFile.h"
#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/SignalSet.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Result {
  std::string logger;
  int threads = 0;
  int64_t lines = 0;
  double seconds = 0;
  uint64_t bytes = 0;
  int64_t p50 = 0, p99 = 0, p999 = 0, max = 0;
};

uint64_t bytesIn(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir)) total += entry.file_size();
  return total;
}

// Runs `logOne(i)` lines/threads times on each of `threads` threads, timing
// each call; `finish` runs after the threads and is inside the wall time.
template <class LogOne, class Finish>
Result measure(std::string logger, int threads, int64_t lines, const fs::path& dir, LogOne logOne,
               Finish finish) {
  const int64_t perThread = lines / threads;
  std::vector<std::vector<uint32_t>> samples(threads);
  for (auto& s : samples) s.resize(static_cast<size_t>(perThread));
  std::latch ready(threads + 1);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<uint32_t>& mine = samples[t];
      ready.arrive_and_wait();
      for (int64_t i = 0; i < perThread; ++i) {
        const auto start = Clock::now();
        logOne(i);
        const auto end = Clock::now();
        mine[static_cast<size_t>(i)] = static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count());
      }
    });
  }
  ready.arrive_and_wait();
  const auto start = Clock::now();
  for (auto& w : workers) w.join();
  finish();
  const auto end = Clock::now();

  std::vector<uint32_t> all;
  all.reserve(static_cast<size_t>(perThread * threads));
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  auto pct = [&](double p) {
    const size_t k =
        std::min(all.size() - 1, static_cast<size_t>(p * static_cast<double>(all.size())));
    std::nth_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
    return static_cast<int64_t>(all[k]);
  };
  Result r;
  r.logger = std::move(logger);
  r.threads = threads;
  r.lines = perThread * threads;
  r.seconds = std::chrono::duration<double>(end - start).count();
  r.bytes = bytesIn(dir);
  r.p50 = pct(0.50);
  r.p99 = pct(0.99);
  r.p999 = pct(0.999);
  r.max = *std::max_element(all.begin(), all.end());
  return r;
}

// The message part; with the front end's header and " - log_bench.cc:NNN"
// suffix a line is about 115 bytes, like ANCHORS.md's.
constexpr std::string_view kMessage = "Hello 0123456789 abcdefghijklmnopqrstuvwxyz line ";

Result runLibnetAsync(int threads, int64_t lines, const fs::path& dir) {
  libnet::AsyncLogging log(
      libnet::AsyncLogging::fileSink(std::make_shared<libnet::LogFile>(dir.string(), "async")));
  log.start();
  log.installAsDefaultSink();
  return measure(
      "libnet AsyncLogging", threads, lines, dir, [](int64_t i) { LOG_INFO << kMessage << i; },
      [&log] { log.stop(); });
}

Result runLibnetSync(int threads, int64_t lines, const fs::path& dir) {
  auto file = std::make_shared<libnet::LogFile>(dir.string(), "sync");
  auto mutex = std::make_shared<std::mutex>();
  libnet::Logger::setOutput([file, mutex](std::string_view line) {
    std::lock_guard lock(*mutex);
    file->append(line);
  });
  libnet::Logger::setFlush([file, mutex] {
    std::lock_guard lock(*mutex);
    file->flush();
  });
  Result r = measure(
      "libnet sync (fwrite under mutex)", threads, lines, dir,
      [](int64_t i) { LOG_INFO << kMessage << i; }, [] { libnet::Logger::flush(); });
  libnet::Logger::setOutput({});
  libnet::Logger::setFlush({});
  return r;
}

Result runSpdlogAsync(int threads, int64_t lines, const fs::path& dir) {
  spdlog::init_thread_pool(8192, 1);
  auto logger = spdlog::basic_logger_mt<spdlog::async_factory>(
      "bench", (dir / "spdlog.log").string(), /*truncate=*/true);
  logger->set_pattern("%Y%m%d %H:%M:%S.%f %t %l %v");
  // The same bytes per line as libnet's (its suffix is " - file:line").
  Result r = measure(
      "spdlog async (q 8192, 1 worker, block)", threads, lines, dir,
      [&logger](int64_t i) { logger->info("{}{} - log_bench.cc:150", kMessage, i); },
      [&logger] {
        logger.reset();
        // Joins the worker after it has drained the queue.
        spdlog::shutdown();
      });
  return r;
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    if (comma != 0) out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<int> parseThreads(std::string_view text) {
  std::vector<int> out;
  for (const std::string& item : split(text)) {
    int n = 0;
    std::from_chars(item.data(), item.data() + item.size(), n);
    if (n > 0) out.push_back(n);
  }
  return out;
}

std::string withSeparators(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// Machine load, read around each run: other processes' CPU time is the
// machine's busy time (/proc/stat) less this process's (getrusage), as a
// share of all CPUs over the run's wall time.
struct CpuSample {
  double machineBusy = 0;  // seconds, all CPUs
  double steal = 0;
  double self = 0;
  Clock::time_point when;
};

CpuSample sampleCpu() {
  CpuSample s;
  s.when = Clock::now();
  if (std::FILE* f = std::fopen("/proc/stat", "r")) {
    unsigned long long v[8] = {};
    if (std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8) {
      const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
      s.machineBusy = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6]) / tick;
      s.steal = static_cast<double>(v[7]) / tick;
    }
    std::fclose(f);
  }
  struct rusage ru;
  ::getrusage(RUSAGE_SELF, &ru);
  s.self = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return s;
}

// Share of all CPUs that other processes (and the hypervisor, as steal) used
// between two samples; `childCpu` is CPU time of our own children to exclude.
double otherLoad(const CpuSample& a, const CpuSample& b, double childCpu = 0) {
  const double wall = std::chrono::duration<double>(b.when - a.when).count();
  const double cpus = static_cast<double>(std::max(1u, std::thread::hardware_concurrency()));
  if (wall <= 0) return 0;
  const double other =
      (b.machineBusy - a.machineBusy) - (b.self - a.self) - childCpu + (b.steal - a.steal);
  return std::max(0.0, other) / (wall * cpus);
}

std::string readFile(const char* path) {
  std::string text;
  if (std::FILE* f = std::fopen(path, "r")) {
    char buf[256];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Before any run: the load average, and the other processes that used the
// most CPU in a half-second window (from /proc/<pid>/stat).
void printLoadCheck() {
  std::map<int, std::pair<std::string, unsigned long long>> before;
  auto scan = [](std::map<int, std::pair<std::string, unsigned long long>>* out) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string stat = readFile((entry.path() / "stat").c_str());
      const size_t open = stat.find('('), close = stat.rfind(')');
      if (open == std::string::npos || close == std::string::npos) continue;
      unsigned long long utime = 0, stime = 0;
      // Fields after ")": state ppid pgrp session tty tpgid flags minflt
      // cminflt majflt cmajflt utime stime.
      if (std::sscanf(stat.c_str() + close + 1,
                      " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                      &stime) != 2) {
        continue;
      }
      (*out)[std::stoi(name)] = {stat.substr(open + 1, close - open - 1), utime + stime};
    }
  };
  const CpuSample a = sampleCpu();
  scan(&before);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::map<int, std::pair<std::string, unsigned long long>> after;
  scan(&after);
  const CpuSample b = sampleCpu();
  std::vector<std::pair<double, std::string>> busy;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (const auto& [pid, info] : after) {
    auto it = before.find(pid);
    const unsigned long long was = it == before.end() ? 0 : it->second.second;
    const double share = static_cast<double>(info.second - was) / tick / 0.5;
    if (share >= 0.02 && pid != ::getpid()) {
      busy.emplace_back(share, info.first + "[" + std::to_string(pid) + "]");
    }
  }
  std::sort(busy.rbegin(), busy.rend());
  std::printf("load check: loadavg %s; other processes used %.0f%% of the CPUs in 0.5 s",
              readFile("/proc/loadavg").c_str(), 100 * otherLoad(a, b));
  for (size_t i = 0; i < busy.size() && i < 5; ++i) {
    std::printf("%s %s %.0f%%", i == 0 ? ":" : ",", busy[i].second.c_str(), 100 * busy[i].first);
  }
  std::printf("\n");
}

// A row as log_bench prints it: "| logger | threads | lines/s | MB/s | p50 |
// p99 | p99.9 | max |" (numbers may carry thousands separators and an M).
bool parseRow(const std::string& line, Result* r) {
  std::vector<std::string> cells;
  size_t pos = 0;
  while ((pos = line.find('|', pos)) != std::string::npos) {
    const size_t next = line.find('|', pos + 1);
    if (next == std::string::npos) break;
    std::string cell = line.substr(pos + 1, next - pos - 1);
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    cells.push_back(cell);
    pos = next;
  }
  if (cells.size() < 8) return false;
  auto num = [](std::string cell) {
    std::erase(cell, ',');
    return std::strtod(cell.c_str(), nullptr);
  };
  r->logger = cells[0];
  r->threads = static_cast<int>(num(cells[1]));
  if (r->threads <= 0) return false;
  r->lines = 1;
  r->seconds = 1 / (num(cells[2]) * 1e6);
  r->p50 = static_cast<int64_t>(num(cells[4]));
  r->p99 = static_cast<int64_t>(num(cells[5]));
  r->p999 = static_cast<int64_t>(num(cells[6]));
  r->max = static_cast<int64_t>(num(cells[7]));
  return true;
}

// Runs another build of log_bench (or anything printing the same rows) for
// one thread count and returns its libnet AsyncLogging row.
bool runCompare(const std::string& binary, bool knowsLoggers, int threads, int64_t lines,
                const fs::path& dir, Result* r, double* childCpu) {
  std::string cmd = binary + " --lines " + std::to_string(lines) + " --threads " +
                    std::to_string(threads) + " --dir " + (dir / "compare").string();
  if (knowsLoggers) cmd += " --loggers libnet --no-load-check";
  struct rusage before, after;
  ::getrusage(RUSAGE_CHILDREN, &before);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  char buf[512];
  bool found = false;
  while (std::fgets(buf, sizeof buf, p)) {
    Result row;
    if (!found && parseRow(buf, &row) && row.logger.starts_with("libnet AsyncLogging")) {
      *r = row;
      found = true;
    }
  }
  const int status = ::pclose(p);
  ::getrusage(RUSAGE_CHILDREN, &after);
  *childCpu = static_cast<double>(after.ru_utime.tv_sec - before.ru_utime.tv_sec +
                                  after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
              static_cast<double>(after.ru_utime.tv_usec - before.ru_utime.tv_usec +
                                  after.ru_stime.tv_usec - before.ru_stime.tv_usec) /
                  1e6;
  return found && status == 0;
}

void printRow(const Result& r, double other) {
  // A --compare row carries no byte count.
  char mbs[32] = "-";
  if (r.bytes > 0)
    std::snprintf(mbs, sizeof mbs, "%.0f", static_cast<double>(r.bytes) / r.seconds / 1e6);
  std::printf("| %s | %d | %.2fM | %s | %s | %s | %s | %s | %.0f%% |\n", r.logger.c_str(),
              r.threads, static_cast<double>(r.lines) / r.seconds / 1e6, mbs,
              withSeparators(r.p50).c_str(), withSeparators(r.p99).c_str(),
              withSeparators(r.p999).c_str(), withSeparators(r.max).c_str(), 100 * other);
  std::fflush(stdout);
}

template <class T>
T median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The directory the runs write into: made fresh inside `parent` (created,
// with any missing ancestors, if it does not exist), and removed at exit with
// everything in it; the directories made for `parent` go too if they are
// empty then. Nothing else is ever removed: --dir may hold the user's files.
class WorkDir {
 public:
  explicit WorkDir(const fs::path& parent) {
    fs::path dir = fs::absolute(parent).lexically_normal();
    if (dir.filename().empty()) dir = dir.parent_path();  // "a/b/" names "a/b"
    for (fs::path p = dir; !fs::exists(p) && p != p.parent_path(); p = p.parent_path()) {
      firstCreated_ = p;
    }
    parent_ = dir;
    try {
      fs::create_directories(dir);
    } catch (...) {
      removeCreatedParents();
      throw;
    }
    std::string pattern = (dir / "log_bench.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      const int err = errno;
      removeCreatedParents();
      throw std::system_error(err, std::generic_category(), "mkdtemp in " + dir.string());
    }
    path_ = pattern;
  }
  ~WorkDir() { remove(); }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;

  [[nodiscard]] const fs::path& path() const { return path_; }

  // Idempotent; never throws. A writer that still runs (a stop signal) may
  // add a file while the tree is being removed, hence the few passes.
  void remove() noexcept {
    std::error_code ignored;
    for (int pass = 0; pass < 10 && fs::exists(path_, ignored); ++pass) {
      fs::remove_all(path_, ignored);
    }
    removeCreatedParents();
  }

 private:
  void removeCreatedParents() noexcept {
    if (firstCreated_.empty()) return;
    std::error_code ec;
    // Innermost first; fs::remove fails (and so stops the walk) on a
    // directory that is not empty.
    for (fs::path p = parent_; fs::remove(p, ec); p = p.parent_path()) {
      if (p == firstCreated_) break;
    }
  }

  fs::path path_;
  fs::path parent_;
  fs::path firstCreated_;  // the outermost directory this made; empty: none
};

// The live WorkDir, for the stop-signal thread. The mutex keeps main() from
// destroying it while that thread removes it, and that thread from touching
// it once it is gone.
std::mutex g_workDirMutex;
WorkDir* g_workDir = nullptr;  // guarded by g_workDirMutex

// Owns the WorkDir that main() uses and publishes it to the signal thread.
class PublishedWorkDir {
 public:
  explicit PublishedWorkDir(const fs::path& parent) : dir_(parent) {
    std::lock_guard lock(g_workDirMutex);
    g_workDir = &dir_;
  }
  ~PublishedWorkDir() {
    std::lock_guard lock(g_workDirMutex);
    g_workDir = nullptr;
    dir_.remove();
  }
  PublishedWorkDir(const PublishedWorkDir&) = delete;
  PublishedWorkDir& operator=(const PublishedWorkDir&) = delete;

  [[nodiscard]] const fs::path& path() const { return dir_.path(); }

 private:
  WorkDir dir_;
};

// SIGINT/SIGTERM: blocked here before any thread starts, so that every
// thread inherits the mask, and taken by a SignalSet on a loop thread of
// their own, which removes the run's directory and ends the process with
// status 0; no half-written files stay behind and nothing of the user's is
// touched. The thread lives until main() returns.
std::unique_ptr<libnet::EventLoopThread> handleStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (const int err = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); err != 0) {
    throw std::system_error(err, std::generic_category(), "pthread_sigmask");
  }
  auto thread = std::make_unique<libnet::EventLoopThread>(
      [](libnet::EventLoop* loop) {
        auto* stop = new libnet::SignalSet(loop, {SIGINT, SIGTERM}, [](int) {
          std::fprintf(stderr, "log_bench: interrupted, removing its files\n");
          // Held until the process ends: main() cannot free the directory
          // object under us, nor start removing it a second time.
          g_workDirMutex.lock();
          if (g_workDir != nullptr) g_workDir->remove();
          std::fflush(stdout);
          std::_Exit(0);
        });
        loop->runOnDestroy([stop] { delete stop; });
      },
      "log_bench-stop");
  thread->startLoop();
  return thread;
}

struct Options {
  int64_t lines = 1'000'000;
  int reps = 1;
  bool loadCheck = true;
  std::vector<int> threadCounts = {1, 2, 4};
  std::vector<std::string> loggers = {"libnet", "sync", "spdlog"};
  std::string compare;
  fs::path parent = fs::temp_directory_path();
};

// nullopt: go on. Otherwise the exit status to return now: 0 after --help,
// 2 after a bad option (the reason printed).
std::optional<int> parseOptions(int argc, char* argv[], Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: log_bench [--lines N] [--threads 1,2,4] [--loggers libnet,sync,spdlog]\n"
                   "                 [--reps R] [--compare OTHER_LOG_BENCH] [--dir DIR]\n"
                   "                 [--no-load-check]\n";
      return 0;
    }
    if (arg == "--no-load-check") {
      options->loadCheck = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "log_bench: " << arg << " needs a value\n";
      return 2;
    }
    const std::string_view value = argv[++i];
    if (arg == "--lines") {
      std::from_chars(value.data(), value.data() + value.size(), options->lines);
    } else if (arg == "--threads") {
      options->threadCounts = parseThreads(value);
    } else if (arg == "--loggers") {
      options->loggers = split(value);
    } else if (arg == "--reps") {
      std::from_chars(value.data(), value.data() + value.size(), options->reps);
    } else if (arg == "--compare") {
      options->compare = std::string(value);
    } else if (arg == "--dir") {
      options->parent = std::string(value);
    } else {
      std::cerr << "log_bench: unknown option " << arg << "\n";
      return 2;
    }
  }
  if (options->lines <= 0 || options->threadCounts.empty() || options->reps <= 0) {
    std::cerr << "log_bench: bad --lines, --threads or --reps\n";
    return 2;
  }
  return std::nullopt;
}

using Runner = Result (*)(int, int64_t, const fs::path&);
using Runners = std::vector<std::pair<std::string, Runner>>;

// nullopt after naming an unknown logger.
std::optional<Runners> runnersFor(const std::vector<std::string>& loggers) {
  Runners runners;
  for (const std::string& name : loggers) {
    if (name == "libnet") {
      runners.emplace_back(name, runLibnetAsync);
    } else if (name == "sync") {
      runners.emplace_back(name, runLibnetSync);
    } else if (name == "spdlog") {
      runners.emplace_back(name, runSpdlogAsync);
    } else {
      std::cerr << "log_bench: unknown logger " << name << " (libnet, sync, spdlog)\n";
      return std::nullopt;
    }
  }
  return runners;
}

// Whether the --compare build takes --loggers (an older one may not);
// nullopt, after a message, if it cannot be run.
std::optional<bool> compareKnowsLoggers(const std::string& compare) {
  bool knows = false;
  std::FILE* p = ::popen((compare + " --help").c_str(), "r");
  char buf[512];
  while (p != nullptr && std::fgets(buf, sizeof buf, p)) {
    if (std::string_view(buf).find("--loggers") != std::string_view::npos) knows = true;
  }
  if (p == nullptr || ::pclose(p) != 0) {
    std::cerr << "log_bench: cannot run " << compare << "\n";
    return std::nullopt;
  }
  return knows;
}

// Every cell's runs, for the medians, in the order the cells first ran.
struct Cells {
  using Key = std::pair<std::string, int>;  // logger, threads
  std::map<Key, std::vector<Result>> runs;
  std::map<Key, std::vector<double>> loads;
  std::vector<Key> order;

  // Keeps a run and prints its row.
  void record(const Result& r, double other) {
    const auto key = std::make_pair(r.logger, r.threads);
    if (!runs.contains(key)) order.push_back(key);
    runs[key].push_back(r);
    loads[key].push_back(other);
    printRow(r, other);
  }
};

// Runs every cell `options.reps` times; with --compare the other build runs
// right after this one's libnet row, so both see the same machine. False
// (after a message) if the other build gave no row.
bool runCells(const Options& options, const Runners& runners, bool knowsLoggers,
              const fs::path& dir, Cells* cells) {
  for (int rep = 0; rep < options.reps; ++rep) {
    for (const auto& [name, run] : runners) {
      for (int threads : options.threadCounts) {
        // Our own directory: emptied for each run.
        for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
        const CpuSample a = sampleCpu();
        const Result r = run(threads, options.lines, dir);
        const CpuSample b = sampleCpu();
        cells->record(r, otherLoad(a, b));
        if (name != "libnet" || options.compare.empty()) continue;
        Result other;
        double childCpu = 0;
        const CpuSample c = sampleCpu();
        if (!runCompare(options.compare, knowsLoggers, threads, options.lines, dir, &other,
                        &childCpu)) {
          std::cerr << "log_bench: no libnet AsyncLogging row from " << options.compare << "\n";
          return false;
        }
        const CpuSample d = sampleCpu();
        other.logger = "compare: " + other.logger;
        cells->record(other, otherLoad(c, d, childCpu));
      }
    }
  }
  return true;
}

void printMedians(const Cells& cells, int reps) {
  std::printf("\nMedians of %d runs (lines/s min-max):\n\n", reps);
  std::printf(
      "| logger | threads | lines/s | p50 ns | p99 ns | p99.9 ns | max ns | other load |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const auto& key : cells.order) {
    std::vector<double> rate;
    std::vector<int64_t> p50, p99, p999, mx;
    for (const Result& r : cells.runs.at(key)) {
      rate.push_back(static_cast<double>(r.lines) / r.seconds / 1e6);
      p50.push_back(r.p50);
      p99.push_back(r.p99);
      p999.push_back(r.p999);
      mx.push_back(r.max);
    }
    std::printf("| %s | %d | %.2fM (%.2f-%.2f) | %s | %s | %s | %s | %.0f%% |\n", key.first.c_str(),
                key.second, median(rate), *std::min_element(rate.begin(), rate.end()),
                *std::max_element(rate.begin(), rate.end()), withSeparators(median(p50)).c_str(),
                withSeparators(median(p99)).c_str(), withSeparators(median(p999)).c_str(),
                withSeparators(median(mx)).c_str(), 100 * median(cells.loads.at(key)));
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseOptions(argc, argv, &options)) {
    return *exitStatus;
  }
  const std::optional<Runners> runners = runnersFor(options.loggers);
  if (!runners) return 2;
  bool knowsLoggers = false;
  if (!options.compare.empty()) {
    const std::optional<bool> knows = compareKnowsLoggers(options.compare);
    if (!knows) return 2;
    knowsLoggers = *knows;
  }

  std::unique_ptr<libnet::EventLoopThread> stopSignals;
  std::optional<PublishedWorkDir> workDir;
  try {
    stopSignals = handleStopSignals();
    workDir.emplace(options.parent);
  } catch (const std::exception& e) {
    std::cerr << "log_bench: " << e.what() << "\n";
    return 2;
  }
  const fs::path& dir = workDir->path();

  struct utsname uts;
  ::uname(&uts);
  std::cout << "log_bench: " << options.lines << " lines per run, " << options.reps << " rep(s), "
            << std::thread::hardware_concurrency() << " CPUs, " << uts.sysname << ' ' << uts.release
            << ", files in " << dir.string() << "\n";
  if (options.loadCheck) printLoadCheck();
  std::cout << "\n| logger | threads | lines/s | MB/s | p50 ns | p99 ns | p99.9 ns | max ns | "
               "other load |\n"
            << "|---|---|---|---|---|---|---|---|---|\n";
  Cells cells;
  if (!runCells(options, *runners, knowsLoggers, dir, &cells)) return 1;
  if (options.reps > 1) printMedians(cells, options.reps);
  return 0;
}
