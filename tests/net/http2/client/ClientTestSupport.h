// What the client's tests share: a stream's outcome as its callbacks saw it
// (read from the test thread under a lock), and a fixture with a client loop
// thread and a server loop thread of the backend under test.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/http2/ClientConnection.h"
#include "tests/net/TestUtil.h"

namespace libnet::http2::test {

using Fields = ClientSession::Fields;
using State = ClientConnection::State;

// One stream's callbacks, recorded.
struct Outcome {
  mutable std::mutex mu;
  int status = 0;
  int heads = 0;
  Fields fields;
  std::string body;
  uint64_t bytes = 0;
  bool keepBody = true;
  std::optional<Fields> trailers;
  std::optional<ClientSession::Close> close;
  int closes = 0;
  // Run on the loop thread after the head is recorded.
  std::function<void()> onHead;

  [[nodiscard]] bool closed() const {
    std::lock_guard<std::mutex> lock(mu);
    return closes > 0;
  }
  [[nodiscard]] ClientSession::Close closeValue() const {
    std::lock_guard<std::mutex> lock(mu);
    return close.value_or(ClientSession::Close{});
  }
};

inline ClientSession::StreamCallbacks record(const std::shared_ptr<Outcome>& o) {
  ClientSession::StreamCallbacks cb;
  cb.onHead = [o](int status, const Fields& fields) {
    {
      std::lock_guard<std::mutex> lock(o->mu);
      o->status = status;
      o->fields = fields;
      ++o->heads;
    }
    if (o->onHead) o->onHead();
  };
  cb.onData = [o](std::string_view data) {
    std::lock_guard<std::mutex> lock(o->mu);
    o->bytes += data.size();
    if (o->keepBody) o->body.append(data);
  };
  cb.onTrailers = [o](const Fields& trailers) {
    std::lock_guard<std::mutex> lock(o->mu);
    o->trailers = trailers;
  };
  cb.onClose = [o](const ClientSession::Close& close) {
    std::lock_guard<std::mutex> lock(o->mu);
    o->close = close;
    ++o->closes;
  };
  return cb;
}

inline Fields request(std::string_view method, std::string_view path) {
  return {{":method", std::string(method)},
          {":scheme", "http"},
          {":path", std::string(path)},
          {":authority", "127.0.0.1"}};
}

inline std::string fieldOf(const Fields& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return {};
}

class ClientFixture : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    serverThread_ = std::make_unique<EventLoopThread>(nullptr, "h2-server", GetParam());
    serverLoop_ = serverThread_->startLoop();
    clientThread_ = std::make_unique<EventLoopThread>(nullptr, "h2-client", GetParam());
    clientLoop_ = clientThread_->startLoop();
  }

  void TearDown() override {
    if (clientLoop_ != nullptr) libnet::test::runSync(clientLoop_, [&] { conn_.reset(); });
    stopServer();
    clientThread_.reset();
    serverThread_.reset();
  }

  // The server's side, torn down after the client (its loop still runs).
  virtual void stopServer() {}

  // Makes the connection on the client loop and starts connecting.
  void connect(const SocketAddress& address, ClientConnection::Options options = {}) {
    libnet::test::runSync(clientLoop_, [&] {
      conn_ = ClientConnection::create(clientLoop_, address, "h2-client", std::move(options));
      conn_->setStateCallback([this](State state, std::string_view reason) {
        std::lock_guard<std::mutex> lock(stateMu_);
        states_.emplace_back(state, std::string(reason));
      });
      conn_->setPingAckCallback([this] {
        std::lock_guard<std::mutex> lock(stateMu_);
        ++pingAcks_;
      });
      conn_->connect();
    });
  }

  // Submits on the client loop (the calls made there run at once).
  ClientConnection::StreamKey submit(Fields fields, std::string body, bool end,
                                     const std::shared_ptr<Outcome>& o) {
    return libnet::test::runSync(clientLoop_, [&] {
      return conn_->submit(std::move(fields), std::move(body), end, record(o));
    });
  }

  bool waitState(State state) {
    return libnet::test::waitUntil([&] {
      std::lock_guard<std::mutex> lock(stateMu_);
      for (const auto& [s, reason] : states_) {
        if (s == state) return true;
      }
      return false;
    });
  }

  // The reason of the kClosed state ("" before it).
  std::string closeReason() {
    std::lock_guard<std::mutex> lock(stateMu_);
    for (const auto& [s, reason] : states_) {
      if (s == State::kClosed) return reason;
    }
    return {};
  }

  int closedCount() {
    std::lock_guard<std::mutex> lock(stateMu_);
    int n = 0;
    for (const auto& entry : states_) n += entry.first == State::kClosed ? 1 : 0;
    return n;
  }

  int pingAcks() {
    std::lock_guard<std::mutex> lock(stateMu_);
    return pingAcks_;
  }

  std::unique_ptr<EventLoopThread> serverThread_;
  std::unique_ptr<EventLoopThread> clientThread_;
  EventLoop* serverLoop_ = nullptr;
  EventLoop* clientLoop_ = nullptr;
  std::shared_ptr<ClientConnection> conn_;
  std::mutex stateMu_;
  std::vector<std::pair<State, std::string>> states_;
  int pingAcks_ = 0;
};

}  // namespace libnet::http2::test
