// The fixture of the client tests that talk to scripted_http_server.py: one
// server per test binary (started before the first test), a loop of the
// test's backend on the test thread, and helpers that run requests to the
// end with every wait bounded by the loop's watchdog.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/http/HttpClient.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"
#include "tests/net/http/client/ServerProcess.h"

namespace libnet::test {

class ScriptedServerTest : public LoopTest {
  // Public: the coroutines of the tests reach them through a pointer.
 public:
  using ClientError = http::ClientError;
  using FetchResult = http::FetchResult;
  using HttpClient = http::HttpClient;
  using Request = http::Request;

  static void SetUpTestSuite() {
    server_ = new ServerProcess;
    const std::string script = testBinary("scripted_http_server.py", "tests/net/http/client");
    started_ = !script.empty() && server_->start({"/usr/bin/python3", script}, "\n");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    LoopTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(started_) << "scripted server did not start: " << server_->output();
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

  static std::string url(std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(server_->scriptedPort()) + std::string(path);
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

  FetchResult fetchOne(Request request) {
    std::vector<FetchResult> results = fetchInTurn({std::move(request)});
    if (results.empty())
      return FetchResult(ClientError{ClientError::Kind::kCancelled, "no result"});
    return std::move(results.front());
  }

  static Request get(std::string_view path) { return Request{.url = url(path)}; }

  static inline ServerProcess* server_ = nullptr;
  static inline bool started_ = false;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<HttpClient> client_;
};

}  // namespace libnet::test
