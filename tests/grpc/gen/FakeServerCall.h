// FakeServerCall: a grpc::ServerCall with no connection under it, for
// driving generated services and handlers without a server: the test
// delivers messages and the client's half-close itself, and reads back what
// the handler wrote and the status it finished with. One thread (the
// test's); loop() is null, so handlers that need a loop cannot use it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/InetAddress.h"
#include "net/grpc/ServerCall.h"

namespace libnet::grpc::testing {

class FakeServerCall : public ServerCall {
 public:
  explicit FakeServerCall(std::string method) : method_(std::move(method)) {}

  const std::string& method() const override { return method_; }
  const Metadata& clientMetadata() const override { return clientMetadata_; }
  std::optional<MonoTime> deadline() const override { return std::nullopt; }
  const InetAddress& peer() const override { return peer_; }
  EventLoop* loop() const override { return nullptr; }

  void setMessageCallback(std::function<void(std::string)> callback) override {
    onMessage_ = std::move(callback);
  }
  void setHalfCloseCallback(std::function<void()> callback) override {
    onHalfClose_ = std::move(callback);
  }
  void pauseReading() override { paused_ = true; }
  void resumeReading() override { paused_ = false; }

  void addInitialMetadata(std::string key, std::string value) override {
    initialMetadata_.emplace_back(std::move(key), std::move(value));
  }
  void addTrailingMetadata(std::string key, std::string value) override {
    trailingMetadata_.emplace_back(std::move(key), std::move(value));
  }
  void setCompression(bool gzip) override { gzip_ = gzip; }
  bool write(std::string message) override {
    if (status_ || cancelled_) return false;
    written_.push_back(std::move(message));
    return written_.size() < highWater_;
  }
  void setWritableCallback(std::function<void()> callback) override {
    onWritable_ = std::move(callback);
  }
  // As a real call, an ended one lets go of its callbacks (which often hold
  // the call itself).
  void finish(Status status) override {
    if (!status_ && !cancelled_) status_ = std::move(status);
    releaseCallbacks();
  }
  bool cancelled() const override { return cancelled_; }
  void setCancelCallback(std::function<void()> callback) override {
    if (cancelled_) {
      if (callback) callback();
      return;
    }
    onCancel_ = std::move(callback);
  }

  // ---- the test's side: the client.
  // False when no message callback is set (the handler does not read).
  bool deliver(std::string message) {
    if (!onMessage_) return false;
    auto callback = onMessage_;  // the callback may end the call
    callback(std::move(message));
    return true;
  }
  bool halfClose() {
    if (!onHalfClose_) return false;
    auto callback = onHalfClose_;
    callback();
    return true;
  }
  // write() says false (as past the writer's high-water mark) once this
  // many messages have been written; the message is kept all the same.
  void setHighWater(size_t messages) { highWater_ = messages; }
  // The client read everything written: write() says true again, and the
  // writable callback runs.
  void drain() {
    highWater_ = SIZE_MAX;
    if (!onWritable_) return;
    auto callback = onWritable_;
    callback();
  }
  void cancel() {
    if (cancelled_) return;
    cancelled_ = true;
    auto callback = std::move(onCancel_);
    if (callback) callback();
    releaseCallbacks();
  }

  [[nodiscard]] const std::optional<Status>& status() const { return status_; }
  [[nodiscard]] const std::vector<std::string>& written() const { return written_; }
  [[nodiscard]] bool paused() const { return paused_; }
  [[nodiscard]] const Metadata& trailingMetadata() const { return trailingMetadata_; }

 private:
  void releaseCallbacks() {
    onMessage_ = nullptr;
    onHalfClose_ = nullptr;
    onWritable_ = nullptr;
    onCancel_ = nullptr;
  }

  std::string method_;
  Metadata clientMetadata_;
  InetAddress peer_;
  std::function<void(std::string)> onMessage_;
  std::function<void()> onHalfClose_;
  std::function<void()> onWritable_;
  std::function<void()> onCancel_;
  Metadata initialMetadata_;
  Metadata trailingMetadata_;
  std::vector<std::string> written_;
  std::optional<Status> status_;
  size_t highWater_ = SIZE_MAX;
  bool paused_ = false;
  bool gzip_ = false;
  bool cancelled_ = false;
};

}  // namespace libnet::grpc::testing
