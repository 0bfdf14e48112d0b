// Heap allocations in the client's steady state: the response parser makes
// none per response once warmed up (headers are views into storage it
// reuses; a discarded body is not copied), and a keep-alive request through
// HttpClient with a prepared request, as the load generator sends it, makes
// at most kMaxPerRequest. The test counts this thread's calls of the global
// operator new (tests/net/AllocationCounter.h). Not under the sanitizers,
// which bring their own allocator.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "net/Buffer.h"
#include "net/http/HttpResponseParser.h"
#include "tests/net/AllocationCounter.h"
#include "tests/net/http/client/ScriptedServerTest.h"

namespace libnet::test {
namespace {

// The request's Exchange (its state while it runs), plus a node of the
// origin's queue every 32 requests: measured 1.03 on both backends.
constexpr double kMaxPerRequest = 1.5;

TEST(ClientAllocationsTest, ParserAllocatesNothingPerResponse) {
  if (!kCountingAllocations) GTEST_SKIP() << "allocations are not counted under sanitizers";
  const std::string response =
      "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Fri, 27 Nov 2026 10:00:00 GMT\r\n"
      "Content-Type: text/plain\r\nContent-Length: 12\r\nConnection: keep-alive\r\n\r\n"
      "hello world\n"
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello "
      "\r\n6\r\nworld\n\r\n0\r\n\r\n";
  http::HttpResponseParser parser;
  parser.setBodyMode(http::HttpResponseParser::BodyMode::kDiscard);
  Buffer buf(64 * 1024);
  auto parseBoth = [&] {
    buf.append(response);
    for (int i = 0; i < 2; ++i) {
      parser.start(false);
      ASSERT_EQ(parser.parse(&buf), http::HttpResponseParser::Result::kComplete);
      ASSERT_TRUE(parser.keepAlive());
    }
  };
  parseBoth();  // warm-up: the parser's storage grows once
  AllocationCount counting;
  for (int i = 0; i < 1000; ++i) parseBoth();
  EXPECT_EQ(counting.count(), 0);
}

using ClientAllocationsTestP = ScriptedServerTest;

TEST_P(ClientAllocationsTestP, KeepAliveRequestsAllocateLittle) {
  if (!kCountingAllocations) GTEST_SKIP() << "allocations are not counted under sanitizers";
  Request request = get("/ok");
  request.options.discardBody = true;
  request.options.keepHeaders = false;
  request.options.idleTimeout = std::chrono::seconds(0);
  http::ClientError error;
  constexpr int kRequests = 2000;
  const http::PreparedRequestPtr prepared = client().prepare(request, &error);
  ASSERT_TRUE(prepared) << error.message;
  // The callback captures one pointer, which std::function keeps inline:
  // what is counted is the client's.
  struct State {
    HttpClient* client;
    EventLoop* loop;
    http::PreparedRequestPtr prepared;
    int done = 0;
    long counted = 0;
    std::unique_ptr<AllocationCount> counting;
    void next() {
      client->request(prepared, [this](FetchResult r) {
        EXPECT_TRUE(r.ok()) << r.errorMessage();
        if (++done == 100) counting = std::make_unique<AllocationCount>();  // warmed up
        if (done == 100 + kRequests) {
          counted = counting->count();
          counting.reset();
          loop->quit();
          return;
        }
        next();
      });
    }
  };
  State state{&client(), loop_.get(), prepared, 0, 0, nullptr};
  loop_->queueInLoop([&state] { state.next(); });
  loop_->loop();
  const int done = state.done;
  const long counted = state.counted;
  ASSERT_EQ(done, 100 + kRequests);
  const double perRequest = static_cast<double>(counted) / kRequests;
  RecordProperty("allocations_per_request", std::to_string(perRequest));
  EXPECT_LE(perRequest, kMaxPerRequest);
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClientAllocationsTestP,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
