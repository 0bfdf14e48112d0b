// loadgen: a wrk-like HTTP/1.1 load generator on libnet's HTTP client.
//
//   loadgen -c CONNS -d SECS [-t THREADS] [-n REQUESTS] [--backend B] URL
//
// CONNS keep-alive connections spread over THREADS loops (one thread
// each); every connection keeps one request in flight. Runs for SECS
// seconds, or until REQUESTS requests in total have completed (-n). Prints:
//   requests: N  seconds: S  requests/s: R
//   latency_us: p50 A  p90 B  p99 C  max D
//   errors: E  connections_opened: O  reused: U
// (errors: requests that failed or got no 2xx/3xx answer; reused: requests
// sent on a connection that had served one before.)
//
// Built to cost little CPU per request: the request is formatted once per
// thread (HttpClient::prepare()), headers are not copied out of the parser,
// the body is counted and dropped, and no timer is set per request.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/Logging.h"
#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/http/HttpClient.h"

namespace {

using libnet::EventLoop;
using libnet::Flags;
using libnet::PollerKind;
using libnet::http::ClientError;
using libnet::http::FetchResult;
using libnet::http::HttpClient;
using libnet::http::PreparedRequestPtr;
using libnet::http::Request;
using Clock = std::chrono::steady_clock;

constexpr char kUsage[] =
    "usage: loadgen -c CONNS -d SECS [-t THREADS] [-n REQUESTS] [--backend epoll|uring|auto] URL\n"
    "  CONNS keep-alive connections over THREADS loops, one request in flight\n"
    "  on each, for SECS seconds or until REQUESTS requests completed.\n";

struct Settings {
  int connections = 10;
  int seconds = 10;
  int threads = 1;
  int requests = 0;  // 0: run for `seconds`
  PollerKind backend = PollerKind::kAuto;
  std::vector<std::string> urls;
};

// What one thread measured.
struct Totals {
  uint64_t requests = 0;
  uint64_t errors = 0;
  uint64_t opened = 0;
  uint64_t reused = 0;
  std::vector<uint32_t> latencyUs;
  std::string firstError;
};

// One thread's loop, client and connections.
class Worker {
 public:
  Worker(const Settings& settings, int connections, std::atomic<int64_t>* budget)
      : settings_(settings), connections_(connections), budget_(budget) {}

  void run(Totals* totals) {
    EventLoop loop(settings_.backend);
    HttpClient::Options options;
    options.maxConnectionsPerOrigin = static_cast<size_t>(connections_);
    options.idleTimeout = std::chrono::seconds(0);
    HttpClient client(&loop, options);
    loop_ = &loop;
    client_ = &client;
    totals_ = totals;
    totals->latencyUs.reserve(1 << 20);
    Request request{.url = settings_.urls.front()};
    request.options.discardBody = true;
    request.options.keepHeaders = false;
    request.options.idleTimeout = std::chrono::seconds(0);
    request.options.connectTimeout = std::chrono::seconds(5);
    ClientError error;
    prepared_ = client.prepare(request, &error);
    if (!prepared_) {
      totals->firstError = error.message;
      return;
    }
    if (settings_.requests == 0) {
      loop.runAfter(std::chrono::seconds(settings_.seconds), [this] { stopping_ = true; });
    }
    loop.queueInLoop([this] {
      for (int i = 0; i < connections_; ++i) issue();
      if (inFlight_ == 0) loop_->quit();
    });
    loop.loop();
    totals->opened = client.stats().connectionsOpened;
    totals->reused = client.stats().reusedRequests;
  }

 private:
  void issue() {
    if (stopping_ || (settings_.requests > 0 && budget_->fetch_sub(1) <= 0)) {
      stopping_ = true;
      return;
    }
    ++inFlight_;
    const Clock::time_point sent = Clock::now();
    client_->request(prepared_, [this, sent](FetchResult result) { done(sent, result); });
  }

  void done(Clock::time_point sent, const FetchResult& result) {
    --inFlight_;
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent);
    totals_->latencyUs.push_back(static_cast<uint32_t>(us.count()));
    ++totals_->requests;
    if (!result.ok() || result.response().status >= 400) {
      ++totals_->errors;
      if (totals_->firstError.empty()) {
        totals_->firstError = result.ok() ? "status " + std::to_string(result.response().status)
                                          : std::string(result.errorMessage());
      }
    }
    issue();
    if (inFlight_ == 0) loop_->quit();
  }

  const Settings& settings_;
  const int connections_;
  std::atomic<int64_t>* budget_;
  EventLoop* loop_ = nullptr;
  HttpClient* client_ = nullptr;
  Totals* totals_ = nullptr;
  PreparedRequestPtr prepared_;
  int inFlight_ = 0;
  bool stopping_ = false;
};

uint32_t percentile(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1));
  return sorted[i];
}

void report(std::vector<Totals>& all, double seconds) {
  Totals sum;
  for (Totals& t : all) {
    sum.requests += t.requests;
    sum.errors += t.errors;
    sum.opened += t.opened;
    sum.reused += t.reused;
    sum.latencyUs.insert(sum.latencyUs.end(), t.latencyUs.begin(), t.latencyUs.end());
    if (sum.firstError.empty()) sum.firstError = t.firstError;
  }
  std::sort(sum.latencyUs.begin(), sum.latencyUs.end());
  std::printf("requests: %llu  seconds: %.3f  requests/s: %.1f\n",
              static_cast<unsigned long long>(sum.requests), seconds,
              seconds > 0 ? static_cast<double>(sum.requests) / seconds : 0.0);
  std::printf("latency_us: p50 %u  p90 %u  p99 %u  max %u\n", percentile(sum.latencyUs, 0.50),
              percentile(sum.latencyUs, 0.90), percentile(sum.latencyUs, 0.99),
              sum.latencyUs.empty() ? 0 : sum.latencyUs.back());
  std::printf("errors: %llu  connections_opened: %llu  reused: %llu\n",
              static_cast<unsigned long long>(sum.errors),
              static_cast<unsigned long long>(sum.opened),
              static_cast<unsigned long long>(sum.reused));
  if (!sum.firstError.empty())
    std::fprintf(stderr, "loadgen: first error: %s\n", sum.firstError.c_str());
}

std::optional<int> parseArgs(int argc, char* argv[], Settings* settings) {
  Flags flags("loadgen", kUsage);
  flags.addInt("-c", &settings->connections, 1, 100000);
  flags.addInt("-d", &settings->seconds, 1, 86400);
  flags.addInt("-t", &settings->threads, 1, 256);
  flags.addInt("-n", &settings->requests, 0, 2000000000);
  flags.addBackend("--backend", &settings->backend);
  flags.setPositional(&settings->urls);
  if (std::optional<int> exitStatus = flags.parse(argc, argv)) return exitStatus;
  if (settings->urls.size() != 1) {
    std::cerr << "loadgen: exactly one URL is needed\n" << kUsage;
    return Flags::kExitUsage;
  }
  if (settings->threads > settings->connections) settings->threads = settings->connections;
  return std::nullopt;
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  if (std::optional<int> exitStatus = parseArgs(argc, argv, &settings)) return *exitStatus;
  libnet::Logger::setLevel(libnet::LogLevel::kError);
  std::atomic<int64_t> budget{settings.requests};
  std::vector<Totals> totals(static_cast<size_t>(settings.threads));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < settings.threads; ++i) {
    // The connections spread as evenly as they divide.
    const int share = settings.connections / settings.threads +
                      (i < settings.connections % settings.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(settings, share, &budget));
  }
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0; i < workers.size(); ++i) {
    threads.emplace_back([&, i] { workers[i]->run(&totals[i]); });
  }
  for (std::thread& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report(totals, seconds);
  bool clean = true;
  for (const Totals& t : totals) clean = clean && t.errors == 0 && t.firstError.empty();
  return clean ? 0 : 1;
}
