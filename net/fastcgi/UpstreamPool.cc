#include "net/fastcgi/UpstreamPool.h"

#include <algorithm>
#include <utility>

#include "net/EventLoop.h"
#include "net/fastcgi/Exchange.h"
#include "net/fastcgi/UpstreamConnection.h"

namespace libnet::fastcgi {

UpstreamPool::UpstreamPool(EventLoop* loop, std::shared_ptr<const UpstreamOptions> options)
    : loop_(loop), options_(std::move(options)) {}

UpstreamPool::~UpstreamPool() {
  if (queueTimer_.valid()) loop_->cancel(queueTimer_);
  for (const std::shared_ptr<UpstreamConnection>& c : connections_) c->close();
  for (Waiting& w : queue_) w.exchange->fail(503, "the server is stopping");
}

void UpstreamPool::submit(std::shared_ptr<Exchange> exchange) {
  exchange->setPool(weak_from_this());
  // Most recently used first; a dead idle connection is dropped on the way.
  for (auto it = connections_.rbegin(); it != connections_.rend(); ++it) {
    if ((*it)->state() != UpstreamConnection::State::kIdle) continue;
    std::shared_ptr<UpstreamConnection> c = *it;
    if (c->reusable()) {
      // Moved to the back: the most recently used.
      connections_.erase(std::next(it).base());
      connections_.push_back(c);
      c->send(std::move(exchange));
      return;
    }
    c->close();
    onClosed(c.get());
    submit(std::move(exchange));
    return;
  }
  if (connections_.size() < options_->poolSize) {
    startConnection(std::move(exchange));
    return;
  }
  if (queue_.size() >= options_->queueLength) {
    exchange->fail(
        503, "all " + std::to_string(options_->poolSize) + " connections busy and the queue full");
    return;
  }
  queue_.push_back({std::move(exchange), MonoClock::now() + options_->queueTimeout});
  if (!queueTimer_.valid()) armQueueTimer();
}

void UpstreamPool::startConnection(std::shared_ptr<Exchange> exchange) {
  auto c = std::make_shared<UpstreamConnection>(loop_, this, *options_);
  connections_.push_back(c);
  c->start(std::move(exchange));
}

void UpstreamPool::cancel(const Exchange* exchange) {
  auto it = std::find_if(queue_.begin(), queue_.end(),
                         [&](const Waiting& w) { return w.exchange.get() == exchange; });
  if (it != queue_.end()) queue_.erase(it);
}

std::shared_ptr<Exchange> UpstreamPool::nextWaiting() {
  while (!queue_.empty()) {
    std::shared_ptr<Exchange> exchange = std::move(queue_.front().exchange);
    queue_.pop_front();
    if (!exchange->done()) return exchange;
  }
  return nullptr;
}

void UpstreamPool::onIdle(UpstreamConnection* connection) {
  if (std::shared_ptr<Exchange> next = nextWaiting()) connection->send(std::move(next));
}

void UpstreamPool::onClosed(UpstreamConnection* connection) {
  auto it = std::find_if(connections_.begin(), connections_.end(),
                         [&](const auto& c) { return c.get() == connection; });
  if (it == connections_.end()) return;
  // Not destroyed here: this runs inside the connection's own callbacks
  // (and its TcpClient's); it goes once they have returned.
  loop_->queueInLoop([doomed = std::move(*it)] {});
  connections_.erase(it);
  if (connections_.size() < options_->poolSize) {
    if (std::shared_ptr<Exchange> next = nextWaiting()) startConnection(std::move(next));
  }
}

void UpstreamPool::armQueueTimer() {
  if (queue_.empty()) return;
  std::weak_ptr<UpstreamPool> weak = weak_from_this();
  queueTimer_ = loop_->runAt(queue_.front().deadline, [weak] {
    if (auto self = weak.lock()) self->onQueueTimer();
  });
}

void UpstreamPool::onQueueTimer() {
  queueTimer_ = TimerId();
  const MonoTime now = MonoClock::now();
  while (!queue_.empty() && queue_.front().deadline <= now) {
    std::shared_ptr<Exchange> exchange = std::move(queue_.front().exchange);
    queue_.pop_front();
    exchange->fail(503, "no connection to the application came free in time");
  }
  armQueueTimer();
}

}  // namespace libnet::fastcgi
