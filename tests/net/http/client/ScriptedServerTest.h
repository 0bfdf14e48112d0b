// The fixture of the client tests that talk to scripted_http_server.py: one
// server per test binary (started before the first test), and the loop and
// client of ClientLoopTest.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/net/ChildProcess.h"
#include "tests/net/http/client/ClientLoopTest.h"

namespace libnet::test {

class ScriptedServerTest : public ClientLoopTest {
 public:
  static void SetUpTestSuite() {
    server_ = new ServerChild;
    const std::string script = testBinary("scripted_http_server.py", "tests/net/http/client");
    started_ = !script.empty() && server_->start({"/usr/bin/python3", script}) &&
               server_->waitForPort() != 0;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    LoopTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(started_) << "scripted server did not start: " << server_->output();
    startLoop();
  }

  static std::string url(std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(server_->announcedPort()) + std::string(path);
  }

  FetchResult fetchOne(Request request) {
    std::vector<FetchResult> results = fetchInTurn({std::move(request)});
    if (results.empty())
      return FetchResult(ClientError{ClientError::Kind::kCancelled, "no result"});
    return std::move(results.front());
  }

  static Request get(std::string_view path) { return Request{.url = url(path)}; }

  static inline ServerChild* server_ = nullptr;
  static inline bool started_ = false;
};

}  // namespace libnet::test
