// A ResponseWriter that records what a handler answers, for testing an
// asynchronous handler without a server: status, fields, body bytes (kept,
// or only counted and hashed for large ones) and how the answer ended. It
// can play a slow client (write() says false past highWater until the test
// drains it, then the writable callback runs) and a client that leaves.
// Loop thread only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "net/EventLoop.h"
#include "net/http/ResponseWriter.h"

namespace libnet::test {

// FNV-1a, 64 bits: PHP's hash('fnv1a64', ...), to check a body both sides hash.
class Fnv1a64 {
 public:
  void update(std::string_view data) {
    for (unsigned char c : data) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ULL;
    }
  }
  [[nodiscard]] std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash_));
    return out;
  }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

class RecordingWriter : public http::ResponseWriter {
 public:
  enum class Ending { kNone, kWhole, kFinished, kAborted };

  explicit RecordingWriter(EventLoop* loop) : loop_(loop) {}

  void respond(http::HttpResponse response) override {
    record(response);
    append(response.body());
    end(Ending::kWhole);
  }
  void start(http::HttpResponse head) override {
    record(head);
    started = true;
  }
  bool write(std::string data) override {
    if (gone) return false;
    append(data);
    if (slow) {
      queued_ += data.size();
      maxQueued = std::max(maxQueued, queued_);
    }
    const bool more = queued_ <= highWater;
    if (!more) {
      blocked_ = true;
      ++refusals;
    }
    return more;
  }
  void finish() override { end(Ending::kFinished); }
  void abort() override { end(Ending::kAborted); }
  void setWritableCallback(std::function<void()> callback) override {
    writable_ = std::move(callback);
  }
  void setClosedCallback(std::function<void()> callback) override { closed_ = std::move(callback); }
  [[nodiscard]] bool closed() const override { return gone; }
  [[nodiscard]] size_t queuedBytes() const override { return queued_; }
  [[nodiscard]] EventLoop* loop() const override { return loop_; }

  // The slow client reads `n` bytes; the writable callback runs once what
  // waits is down to lowWater.
  void drain(size_t n) {
    queued_ -= std::min(n, queued_);
    if (blocked_ && queued_ <= lowWater) {
      blocked_ = false;
      if (writable_) writable_();
    }
  }
  // The client goes away.
  void leave() {
    if (gone) return;
    gone = true;
    if (closed_) closed_();
  }

  [[nodiscard]] std::string field(const std::string& name) const {
    auto it = fields.find(name);
    return it == fields.end() ? std::string() : it->second;
  }

  // Set by the test.
  bool keepBody = true;
  bool slow = false;
  size_t highWater = 256 * 1024;
  size_t lowWater = 64 * 1024;
  std::function<void()> onEnd;
  // After body bytes were recorded.
  std::function<void()> onData;

  // Recorded.
  int status = 0;
  std::string contentType;
  std::multimap<std::string, std::string> fields;
  std::string body;
  size_t bodyBytes = 0;
  Fnv1a64 hash;
  bool started = false;
  bool gone = false;
  Ending ending = Ending::kNone;
  size_t maxQueued = 0;
  int refusals = 0;  // writes answered false

 private:
  void record(const http::HttpResponse& head) {
    status = head.status();
    contentType = head.contentType();
    head.forEachHeader([&](std::string_view n, std::string_view v) { fields.emplace(n, v); });
  }
  void append(std::string_view data) {
    bodyBytes += data.size();
    hash.update(data);
    if (keepBody) body.append(data);
    if (onData && !data.empty()) onData();
  }
  void end(Ending how) {
    if (ending != Ending::kNone) return;
    ending = how;
    if (onEnd) onEnd();
  }

  EventLoop* loop_;
  size_t queued_ = 0;
  bool blocked_ = false;
  std::function<void()> writable_;
  std::function<void()> closed_;
};

}  // namespace libnet::test
