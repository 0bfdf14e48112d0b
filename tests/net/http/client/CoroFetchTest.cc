// co_await http::fetch() and http::BodyReader against scripted_http_server.py,
// on both backends: results, cancellation through withTimeout (the
// connection closed, not pooled), and a large body read piece by piece.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "net/coro/Cancel.h"
#include "net/coro/Sleep.h"
#include "net/coro/Spawn.h"
#include "net/coro/Task.h"
#include "net/http/BodyReader.h"
#include "net/http/CoroFetch.h"
#include "tests/net/http/client/ScriptedServerTest.h"

namespace libnet::test {
namespace {

using namespace std::chrono_literals;
using Kind = http::ClientError::Kind;
using CoroFetchTest = ScriptedServerTest;

TEST_P(CoroFetchTest, FetchReturnsTheResponseThenReusesTheConnection) {
  std::vector<std::string> bodies;
  coro::spawn(loop_.get(), [](CoroFetchTest* t, std::vector<std::string>* out) -> coro::Task<> {
    // The client and the request are named first: GCC 12 destroys a
    // default argument's temporary twice when it is made inside a co_await
    // expression.
    http::HttpClient& client = t->client();
    for (int i = 0; i < 3; ++i) {
      http::Request request = get("/echo");
      http::FetchResult r = co_await http::fetch(client, std::move(request));
      out->push_back(r.ok() ? r.response().body : std::string(r.errorMessage()));
    }
    t->loop_->quit();
  }(this, &bodies));
  loop_->loop();
  ASSERT_EQ(bodies.size(), 3u);
  for (const std::string& b : bodies) EXPECT_EQ(b, "GET 0");
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

TEST_P(CoroFetchTest, WithTimeoutCancelsAndClosesTheConnection) {
  std::optional<http::FetchResult> result;
  coro::spawn(loop_.get(),
              [](CoroFetchTest* t, std::optional<http::FetchResult>* out) -> coro::Task<> {
                http::HttpClient& client = t->client();
                http::Request request = get("/stall");
                out->emplace(co_await coro::withTimeout(200ms, http::fetch(client, request)));
                t->loop_->quit();
              }(this, &result));
  loop_->loop();
  ASSERT_TRUE(result.has_value());
  ASSERT_FALSE(result->ok());
  EXPECT_EQ(result->error().kind, Kind::kRequestTimeout) << result->errorMessage();
  EXPECT_EQ(client().connectionCount(), 0u) << "a half-read response's connection is closed";
}

TEST_P(CoroFetchTest, BodyReaderReadsALargeBodyInPieces) {
  size_t received = 0;
  int pieces = 0;
  std::string error;
  coro::spawn(
      loop_.get(),
      [](CoroFetchTest* t, size_t* received, int* pieces, std::string* error) -> coro::Task<> {
        http::HttpClient& client = t->client();
        http::BodyReader reader(client, get("/endless"));
        while (*received < 8 * 1024 * 1024) {
          http::BodyChunk chunk = co_await reader.next();
          if (!chunk.error.empty() || chunk.end) {
            *error = chunk.end ? "ended" : chunk.error;
            break;
          }
          *received += chunk.data.size();
          ++*pieces;
        }
        t->loop_->quit();
      }(this, &received, &pieces, &error));
  loop_->loop();
  EXPECT_EQ(error, "");
  EXPECT_GE(received, 8u * 1024 * 1024);
  EXPECT_GT(pieces, 1);
  // The reader went out of scope mid-body: its request was cancelled.
  EXPECT_EQ(client().connectionCount(), 0u);
}

// A reader that stops taking pieces holds about kHighWater bytes, not what
// the server can push meanwhile (an endless body at loopback speed).
TEST_P(CoroFetchTest, SlowBodyReaderHoldsBoundedMemory) {
  size_t heldWhileSlow = 0;
  size_t readAfter = 0;
  coro::spawn(loop_.get(), [](CoroFetchTest* t, size_t* held, size_t* after) -> coro::Task<> {
    http::HttpClient& client = t->client();
    http::BodyReader reader(client, get("/endless"));
    http::BodyChunk first = co_await reader.next();
    if (first.data.empty()) {
      t->loop_->quit();
      co_return;
    }
    // The slow consumer this test is about, not a synchronisation.
    co_await coro::sleep(300ms);
    *held = reader.queuedBytes();
    // Reading resumes once the reader drains below its low-water mark.
    while (*after < 4 * http::BodyReader::kHighWater) {
      http::BodyChunk chunk = co_await reader.next();
      if (chunk.data.empty()) break;
      *after += chunk.data.size();
    }
    t->loop_->quit();
  }(this, &heldWhileSlow, &readAfter));
  loop_->loop();
  EXPECT_GT(heldWhileSlow, 0u);
  EXPECT_LE(heldWhileSlow, http::BodyReader::kHighWater + 1024 * 1024) << "one read past the mark";
  EXPECT_GE(readAfter, 4 * http::BodyReader::kHighWater);
}

TEST_P(CoroFetchTest, BodyReaderReportsATruncatedBodyAsAnError) {
  std::string error;
  bool ended = false;
  coro::spawn(loop_.get(), [](CoroFetchTest* t, std::string* error, bool* ended) -> coro::Task<> {
    http::HttpClient& client = t->client();
    http::BodyReader reader(client, get("/short"));
    while (true) {
      http::BodyChunk chunk = co_await reader.next();
      if (chunk.end) *ended = true;
      if (!chunk.error.empty()) *error = chunk.error;
      if (chunk.end || !chunk.error.empty()) break;
    }
    t->loop_->quit();
  }(this, &error, &ended));
  loop_->loop();
  EXPECT_FALSE(ended);
  EXPECT_NE(error.find("5 of 100"), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Backends, CoroFetchTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
