// The base of the client tests' fixtures: a loop of the test's backend on
// the test thread, an HttpClient on it made on first use, and a helper that
// runs requests to the end with every wait bounded by the loop's watchdog.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/http/HttpClient.h"
#include "tests/net/TestUtil.h"

namespace libnet::test {

class ClientLoopTest : public LoopTest {
  // Public: the coroutines of the tests reach them through a pointer.
 public:
  using ClientError = http::ClientError;
  using FetchResult = http::FetchResult;
  using HttpClient = http::HttpClient;
  using Request = http::Request;

  // For a fixture's SetUp() once its server is known to be up.
  void startLoop() {
    loop_ = std::make_unique<EventLoop>(GetParam());
    armWatchdog(*loop_);
  }
  void TearDown() override {
    client_.reset();
    loop_.reset();
  }

  HttpClient& client(HttpClient::Options options = {}) {
    if (!client_) client_ = std::make_unique<HttpClient>(loop_.get(), std::move(options));
    return *client_;
  }

  // Sends the requests one after the other (each once the previous one
  // ended), running the loop until the last one ends; their results in order.
  std::vector<FetchResult> fetchInTurn(std::vector<Request> requests) {
    std::vector<FetchResult> results;
    auto next = std::make_shared<std::function<void(size_t)>>();
    *next = [&, next](size_t i) {
      if (i == requests.size()) {
        loop_->quit();
        return;
      }
      client().request(requests[i], [&, next, i](FetchResult r) {
        results.push_back(std::move(r));
        (*next)(i + 1);
      });
    };
    loop_->queueInLoop([next] { (*next)(0); });
    loop_->loop();
    EXPECT_FALSE(timedOut_) << "the loop's watchdog fired";
    *next = nullptr;
    return results;
  }

  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<HttpClient> client_;
};

}  // namespace libnet::test
