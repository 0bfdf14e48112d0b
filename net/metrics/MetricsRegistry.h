// MetricsRegistry: the servers and loops an application wants watched, and
// their metrics rendered in the Prometheus text exposition format (0.0.4):
// what a scraper reads from an HTTP path (serveMetrics(), MetricsHandler.h).
// docs/operations.md lists every series.
//
// It holds plain pointers: whatever is added must outlive the registry, or
// be removed first. Any thread: add/remove/refresh/render take a lock of the
// registry's own (not held while rendering).
//
// Nothing here waits for a loop, so a scrape served on any loop never
// blocks it (nor another): render() reads the counters of every loop
// (relaxed loads of atomics that each loop writes for itself, current at
// the scrape) and, for the queued output, each loop's last sum
// (TcpServer::LoopStats::queuedOutput). refresh() asks every server loop
// for a new sum through its queue and returns at once; concurrent refreshes
// are merged (one request per loop waits in its queue). serveMetrics() calls
// refresh() then render(): the scrape's own loop sums at once, the others
// show the sum that the previous refresh made. An application that wants
// the gauge fresher calls refresh() on a timer (http_server: every second).
#pragma once

#include <string>
#include <vector>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"

namespace libnet {
class EventLoop;
class TcpServer;
}  // namespace libnet

namespace libnet::metrics {

class MetricsRegistry {
 public:
  // The content type of render()'s text.
  static constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // A server (after start(): its loops are known then): its connection
  // series per I/O loop, labelled server="<its name>", loop="<index>", and
  // those loops' own series, labelled the same.
  void addServer(const TcpServer* server);
  // A loop of no server (or one to watch apart): its loop series, labelled
  // server="<server>", loop="<loop>".
  void addLoop(const EventLoop* loop, std::string server, std::string name);
  void remove(const TcpServer* server);
  void remove(const EventLoop* loop);

  // Asks every server's loops to sum their queued output again, from their
  // own queues (TcpServer::refreshQueuedOutput()); returns at once.
  void refresh() const;
  // Every series, each family with its # HELP and # TYPE. Never waits.
  [[nodiscard]] std::string render() const;

 private:
  struct Loop {
    const EventLoop* loop;
    std::string server;
    std::string name;
  };

  mutable Mutex mutex_;
  std::vector<const TcpServer*> servers_ LIBNET_GUARDED_BY(mutex_);
  std::vector<Loop> loops_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet::metrics
