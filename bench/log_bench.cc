// log_bench: throughput and front-end latency of libnet's logging against
// spdlog, side by side in one run, printed as a markdown table.
//
//   log_bench [--lines N] [--threads 1,2,4] [--dir DIR]
//
// For each logger and thread count, N lines in total (split evenly over the
// threads) of about 115 bytes each go to a file in DIR. Each thread times
// every logging call with steady_clock; the run's wall time ends when the
// last line is on its way to the kernel (stop()/shutdown() returned), so a
// back end that only queues does not look faster than it is.
//
// - libnet-async: LOG_INFO through AsyncLogging into LogFile.
// - libnet-sync:  LOG_INFO through a sink that fwrites into LogFile under a
//                 mutex.
// - spdlog-async: spdlog's async logger, queue 8192, 1 worker, blocking on
//                 overflow, pattern "%Y%m%d %H:%M:%S.%f %t %l %v".

#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/utsname.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/AsyncLogging.h"
#include "base/LogFile.h"
#include "base/Logging.h"

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

std::vector<int> parseThreads(std::string_view text) {
  std::vector<int> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int n = 0;
    std::from_chars(item.data(), item.data() + item.size(), n);
    if (n > 0) out.push_back(n);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::string withSeparators(int64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

}  // namespace

int main(int argc, char* argv[]) {
  int64_t lines = 1'000'000;
  std::vector<int> threadCounts = {1, 2, 4};
  fs::path dir = fs::temp_directory_path() / "libnet_log_bench";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: log_bench [--lines N] [--threads 1,2,4] [--dir DIR]\n";
      return 0;
    }
    if (i + 1 >= argc) {
      std::cerr << "log_bench: " << arg << " needs a value\n";
      return 2;
    }
    const std::string_view value = argv[++i];
    if (arg == "--lines") {
      std::from_chars(value.data(), value.data() + value.size(), lines);
    } else if (arg == "--threads") {
      threadCounts = parseThreads(value);
    } else if (arg == "--dir") {
      dir = std::string(value);
    } else {
      std::cerr << "log_bench: unknown option " << arg << "\n";
      return 2;
    }
  }
  if (lines <= 0 || threadCounts.empty()) {
    std::cerr << "log_bench: bad --lines or --threads\n";
    return 2;
  }

  struct utsname uts;
  ::uname(&uts);
  std::cout << "log_bench: " << lines << " lines per run, " << std::thread::hardware_concurrency()
            << " CPUs, " << uts.sysname << ' ' << uts.release << ", files in " << dir.string()
            << "\n\n";
  std::cout << "| logger | threads | lines/s | MB/s | p50 ns | p99 ns | p99.9 ns | max ns |\n"
            << "|---|---|---|---|---|---|---|---|\n";
  using Runner = Result (*)(int, int64_t, const fs::path&);
  const Runner runners[] = {runLibnetAsync, runLibnetSync, runSpdlogAsync};
  for (Runner run : runners) {
    for (int threads : threadCounts) {
      fs::remove_all(dir);
      fs::create_directories(dir);
      const Result r = run(threads, lines, dir);
      std::printf("| %s | %d | %.2fM | %.0f | %s | %s | %s | %s |\n", r.logger.c_str(), r.threads,
                  static_cast<double>(r.lines) / r.seconds / 1e6,
                  static_cast<double>(r.bytes) / r.seconds / 1e6, withSeparators(r.p50).c_str(),
                  withSeparators(r.p99).c_str(), withSeparators(r.p999).c_str(),
                  withSeparators(r.max).c_str());
      std::fflush(stdout);
    }
  }
  fs::remove_all(dir);
  return 0;
}
