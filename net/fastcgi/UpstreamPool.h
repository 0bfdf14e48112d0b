// fastcgi::UpstreamPool (private to //net/fastcgi): one loop's connections
// to one FastCGI application, at most UpstreamOptions::poolSize of them,
// and the requests waiting for one (at most queueLength, each at most
// queueTimeout; past either, 503). An idle connection is reused most
// recently used first, so that the ones left unused time out and give the
// application its workers back.
//
// One per loop (FastCgiHandler makes it on first use and the loop's
// destruction ends it), so nothing here is shared between threads. Loop
// thread only.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "base/Duration.h"
#include "net/TimerId.h"
#include "net/fastcgi/UpstreamOptions.h"

namespace libnet {
class EventLoop;
}

namespace libnet::fastcgi {

class Exchange;
class UpstreamConnection;

class UpstreamPool : public std::enable_shared_from_this<UpstreamPool> {
 public:
  UpstreamPool(EventLoop* loop, std::shared_ptr<const UpstreamOptions> options);
  // Closes every connection; requests still waiting get a 503.
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  void submit(std::shared_ptr<Exchange> exchange);
  // A waiting request's client left.
  void cancel(const Exchange* exchange);

  // From the connections.
  void onIdle(UpstreamConnection* connection);
  void onClosed(UpstreamConnection* connection);

  [[nodiscard]] size_t connections() const { return connections_.size(); }
  [[nodiscard]] size_t waiting() const { return queue_.size(); }

 private:
  struct Waiting {
    std::shared_ptr<Exchange> exchange;
    MonoTime deadline;
  };

  void startConnection(std::shared_ptr<Exchange> exchange);
  void armQueueTimer();
  void onQueueTimer();
  // The next waiting request whose client is still there, or null.
  std::shared_ptr<Exchange> nextWaiting();

  EventLoop* loop_;
  std::shared_ptr<const UpstreamOptions> options_;
  std::vector<std::shared_ptr<UpstreamConnection>> connections_;
  std::deque<Waiting> queue_;
  TimerId queueTimer_;
};

}  // namespace libnet::fastcgi
