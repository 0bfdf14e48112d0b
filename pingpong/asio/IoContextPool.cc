#include "pingpong/asio/IoContextPool.h"

#include <thread>

namespace pingpong {

IoContextPool::IoContextPool(int threads, bool keepAlive) {
  for (int i = 0; i < threads; ++i) {
    // Concurrency hint 1: each context is run by exactly one thread, which
    // lets asio's scheduler skip the work of waking other runners. Posting
    // from other threads stays safe.
    contexts_.push_back(std::make_unique<boost::asio::io_context>(1));
    guards_.emplace_back();
    if (keepAlive) guards_.back().emplace(contexts_.back()->get_executor());
  }
}

boost::asio::io_context& IoContextPool::next() {
  boost::asio::io_context& ctx = *contexts_[next_];
  next_ = (next_ + 1) % contexts_.size();
  return ctx;
}

void IoContextPool::run() {
  std::vector<std::jthread> threads;
  for (size_t i = 1; i < contexts_.size(); ++i) {
    threads.emplace_back([ctx = contexts_[i].get()] { ctx->run(); });
  }
  contexts_[0]->run();
}

void IoContextPool::stop() {
  for (auto& ctx : contexts_) ctx->stop();
}

}  // namespace pingpong
