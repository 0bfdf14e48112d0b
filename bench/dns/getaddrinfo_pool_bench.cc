// Plain getaddrinfo in a pool of worker threads (4 by default), the way a
// program without an async resolver scales its lookups: the main thread
// keeps K lookups queued or running at once, the workers take them one at a
// time and each blocks in getaddrinfo. It is the second anchor, besides
// Boost.Asio's resolver, of libnet's resolver benchmark
// (bench/dns/run_dns_bench.py). The hints are the ones asio passes for
// ip::tcp (AF_UNSPEC, SOCK_STREAM, numeric service), so both ask the same.
//
// usage: getaddrinfo_pool_bench --count N --inflight K [--threads T]
//            [--names FILE | --name-pattern P --distinct D]
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/dns/ProcessMeter.h"
#include "bench/dns/ResolveBenchArgs.h"

namespace {

// The tasks and the completions, behind one mutex: the lookups take
// milliseconds, so the queue is never the bottleneck.
class LookupPool {
 public:
  explicit LookupPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }

  ~LookupPool() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    taskReady_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  LookupPool(const LookupPool&) = delete;
  LookupPool& operator=(const LookupPool&) = delete;

  void submit(const std::string* name) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(name);
      ++outstanding_;
    }
    taskReady_.notify_one();
  }

  // Waits until fewer than `limit` lookups are outstanding.
  void waitBelow(uint64_t limit) {
    std::unique_lock lock(mutex_);
    taskDone_.wait(lock, [&] { return outstanding_ < limit; });
  }

  [[nodiscard]] uint64_t done() {
    std::lock_guard lock(mutex_);
    return done_;
  }

  [[nodiscard]] uint64_t failed() {
    std::lock_guard lock(mutex_);
    return failed_;
  }

 private:
  void work() {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    hints.ai_flags = AI_NUMERICSERV;
    for (;;) {
      const std::string* name = nullptr;
      {
        std::unique_lock lock(mutex_);
        taskReady_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        name = tasks_.front();
        tasks_.pop_front();
      }
      addrinfo* result = nullptr;
      const int err = ::getaddrinfo(name->c_str(), "80", &hints, &result);
      if (result != nullptr) ::freeaddrinfo(result);
      {
        std::lock_guard lock(mutex_);
        ++done_;
        --outstanding_;
        if (err != 0 && failed_++ == 0) {
          std::fprintf(stderr, "getaddrinfo_pool_bench: %s: %s\n", name->c_str(),
                       ::gai_strerror(err));
        }
      }
      taskDone_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable taskReady_;
  std::condition_variable taskDone_;
  std::deque<const std::string*> tasks_;
  uint64_t outstanding_ = 0;
  uint64_t done_ = 0;
  uint64_t failed_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

int main(int argc, char** argv) {
  const dnsbench::ResolveBenchArgs args = dnsbench::parseResolveBenchArgs(
      argc, argv, {.program = "getaddrinfo_pool_bench", .threads = true});
  LookupPool pool(args.threads);
  dnsbench::ProcessMeter meter;
  meter.start();
  for (uint64_t i = 0; i < args.count; ++i) {
    pool.waitBelow(static_cast<uint64_t>(args.inflight));
    pool.submit(&args.names[i % args.names.size()]);
  }
  pool.waitBelow(1);
  meter.finish(pool.done(), pool.failed());
  return 0;
}
