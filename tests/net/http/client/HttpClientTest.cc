// HttpClient against scripted_http_server.py (started by the test): the
// pool, the retry rule, every framing case a server can get wrong, limits,
// timeouts and redirects, on both backends.
#include "net/http/HttpClient.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/dns/Resolver.h"
#include "tests/net/http/client/HalfClosingServer.h"
#include "tests/net/http/client/ScriptedServerTest.h"

namespace libnet::test {
namespace {

using namespace std::chrono_literals;
using http::ClientError;
using http::FetchResult;
using http::HttpClient;
using http::Method;
using http::Request;
using Kind = ClientError::Kind;

using HttpClientTest = ScriptedServerTest;

TEST_P(HttpClientTest, KeepAliveReusesOneConnection) {
  std::vector<Request> requests(10, get("/ok"));
  const std::vector<FetchResult> results = fetchInTurn(requests);
  ASSERT_EQ(results.size(), 10u);
  for (const FetchResult& r : results) {
    ASSERT_TRUE(r.ok()) << r.errorMessage();
    EXPECT_EQ(r.response().status, 200);
    EXPECT_EQ(r.response().body, "ok");
    EXPECT_EQ(r.response().header("content-length"), "2");
  }
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
  EXPECT_EQ(client().stats().reusedRequests, 9u);
  EXPECT_EQ(client().idleConnectionCount(), 1u);
}

TEST_P(HttpClientTest, GetOnAPooledConnectionTheServerClosedIsRetriedOnce) {
  const std::vector<FetchResult> results = fetchInTurn({get("/close-next"), get("/echo")});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[1].ok()) << results[1].errorMessage();
  EXPECT_EQ(results[1].response().body, "GET 0");
  EXPECT_EQ(client().stats().retries, 1u);
  EXPECT_EQ(client().stats().connectionsOpened, 2u);
}

TEST_P(HttpClientTest, PostOnAPooledConnectionTheServerClosedIsAnErrorNeverASuccess) {
  Request post{.method = Method::kPost, .url = url("/echo"), .body = "payload"};
  const std::vector<FetchResult> results = fetchInTurn({get("/close-next"), post});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].error().kind, Kind::kClosedBeforeResponse);
  EXPECT_NE(results[1].errorMessage().find("not retried: POST is not idempotent"),
            std::string_view::npos)
      << results[1].errorMessage();
  EXPECT_EQ(client().stats().retries, 0u);
}

// The server answers and closes at once (keep-alive response, FIN in the
// same segment): the FIN is at the client's socket before the response is
// read, and the POST that the response's callback makes must not be sent on
// that connection, where it would be lost and could not be retried.
TEST_P(HttpClientTest, PooledConnectionWhoseFinHasArrivedIsNotReused) {
  Request post{.method = Method::kPost, .url = url("/echo"), .body = "payload"};
  const std::vector<FetchResult> results = fetchInTurn({get("/ok-then-fin"), post, get("/ok")});
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  ASSERT_TRUE(results[1].ok()) << results[1].errorMessage();
  EXPECT_EQ(results[1].response().body, "POST 7");
  ASSERT_TRUE(results[2].ok()) << results[2].errorMessage();
  EXPECT_EQ(client().stats().connectionsOpened, 2u);
  EXPECT_EQ(client().stats().retries, 0u);
  EXPECT_EQ(client().stats().reusedRequests, 1u) << "the second connection carries /ok";
}

// The other way a FIN beats a request: the connection has been idle in the
// pool since an earlier turn, and the FIN arrives while the loop is busy
// (here, in the callback that makes the request). The loop has not seen it;
// the check at the socket before reuse does.
TEST_P(HttpClientTest, IdleConnectionWhoseFinArrivedSinceTheLastPollIsNotReused) {
  HalfClosingServer server;
  ASSERT_NE(server.port(), 0);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  std::optional<FetchResult> post;
  client().request(Request{.url = base + "/first"}, [&](FetchResult first) {
    EXPECT_TRUE(first.ok()) << first.errorMessage();
    // Queued after the end-of-turn step that pools the connection.
    loop_->queueInLoop([&] {
      EXPECT_EQ(client().idleConnectionCount(), 1u);
      EXPECT_TRUE(server.closeFirstAndWaitForAck());
      client().request(Request{.method = Method::kPost, .url = base + "/second", .body = "payload"},
                       [&](FetchResult r) {
                         post = std::move(r);
                         loop_->quit();
                       });
    });
  });
  loop_->loop();
  ASSERT_TRUE(post.has_value()) << "the loop's watchdog fired";
  ASSERT_TRUE(post->ok()) << post->errorMessage();
  EXPECT_EQ(post->response().body, "new");
  EXPECT_EQ(server.secondRequest().find("POST /second"), 0u);
  EXPECT_EQ(client().stats().connectionsOpened, 2u);
  EXPECT_EQ(client().stats().retries, 0u);
}

// The client frames the body: a caller's Transfer-Encoding, or a
// Content-Length that is not the body's, is refused before anything is sent.
TEST_P(HttpClientTest, CallerFramingHeadersThatConflictAreRefused) {
  using Headers = std::vector<std::pair<std::string, std::string>>;
  constexpr std::string_view kMismatch = "does not match the body (5 bytes)";
  constexpr std::string_view kOwned = "the client frames the body itself";
  const std::vector<std::pair<Headers, std::string_view>> refused = {
      {{{"Transfer-Encoding", "chunked"}}, kOwned},
      {{{"Content-Length", "0"}}, kMismatch},
      {{{"Content-Length", "5"}, {"Content-Length", "7"}}, kMismatch},
      {{{"content-length", "7, 5"}}, kMismatch},
      {{{"Content-Length", "+5"}}, kMismatch},
      {{{"Content-Length", "18446744073709551621"}}, kMismatch},
      {{{"Content-Length", "5"}, {"Transfer-Encoding", "gzip"}}, kOwned}};
  for (const auto& [headers, why] : refused) {
    Request post{.method = Method::kPost, .url = url("/echo"), .headers = headers, .body = "hello"};
    const FetchResult r = fetchOne(post);
    ASSERT_FALSE(r.ok()) << headers.front().first << ": " << headers.front().second;
    EXPECT_EQ(r.error().kind, Kind::kBadRequest) << r.errorMessage();
    EXPECT_NE(r.errorMessage().find(why), std::string_view::npos) << r.errorMessage();
  }
  EXPECT_EQ(client().stats().requestsSent, 0u);
  EXPECT_EQ(client().stats().connectionsOpened, 0u);
  // A Content-Length that matches is sent once, as the client's.
  Request post{.method = Method::kPost,
               .url = url("/request-head"),
               .headers = {{"Content-Length", "5"}, {"content-length", "5, 5"}},
               .body = "hello"};
  Request get{.url = url("/request-head"), .headers = {{"Content-Length", "0"}}};
  const std::vector<FetchResult> results = fetchInTurn({post, get, this->get("/echo")});
  ASSERT_EQ(results.size(), 3u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].errorMessage();
    const std::string& head = results[i].response().body;
    std::string lower = head;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const size_t first = lower.find("content-length:");
    ASSERT_NE(first, std::string::npos) << head;
    EXPECT_EQ(lower.find("content-length:", first + 1), std::string::npos) << head;
    EXPECT_NE(head.find(i == 0 ? "Content-Length: 5" : "Content-Length: 0"), std::string::npos)
        << head;
  }
  // Nothing was left over to be read as a request of its own.
  ASSERT_TRUE(results[2].ok()) << results[2].errorMessage();
  EXPECT_EQ(results[2].response().body, "GET 0");
}

// A length of 2^64 or more in a streamed body (fetch -o): refused before any
// byte reaches the sink; so in a stored or discarded one. Lengths at the
// edge that fit (leading zeros) are read as they say.
TEST_P(HttpClientTest, LengthsOf2To64OrMoreAreRefusedWhateverTheBodyMode) {
  for (const char* path : {"/length/18446744073709551616", "/length/184467440737095516150",
                           "/chunk/10000000000000000", "/chunk/fffffffffffffffff"}) {
    for (int mode = 0; mode < 3; ++mode) {
      Request request = get(path);
      std::string streamed;
      if (mode == 1) {
        request.options.bodySink = [&](std::string_view piece) { streamed.append(piece); };
      }
      request.options.discardBody = mode == 2;
      const FetchResult r = fetchOne(request);
      ASSERT_FALSE(r.ok()) << path << " mode " << mode;
      EXPECT_EQ(r.error().kind, Kind::kMalformed) << r.errorMessage();
      EXPECT_NE(r.errorMessage().find("2^64 or more"), std::string_view::npos) << r.errorMessage();
      EXPECT_EQ(streamed, "") << path;
    }
  }
  for (const char* path : {"/length/000000000000000000000005", "/chunk/00000000000000005"}) {
    Request request = get(path);
    std::string streamed;
    request.options.bodySink = [&](std::string_view piece) { streamed.append(piece); };
    const FetchResult r = fetchOne(request);
    ASSERT_TRUE(r.ok()) << path << ": " << r.errorMessage();
    EXPECT_EQ(streamed, "hello");
  }
}

TEST_P(HttpClientTest, EndlessInterimResponsesAreRefused) {
  const FetchResult r = fetchOne(get("/interim-flood"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kTooLarge);
  EXPECT_NE(r.errorMessage().find("too many interim (1xx) responses"), std::string_view::npos)
      << r.errorMessage();
  EXPECT_EQ(client().connectionCount(), 0u) << "closed, not pooled";
}

// A 103 is a byte of the answer: the connection ending after it is a
// truncated response, and the GET is not sent again.
TEST_P(HttpClientTest, InterimResponseThenCloseOnAReusedConnectionIsNotRetried) {
  const std::vector<FetchResult> results = fetchInTurn({get("/ok"), get("/interim-then-close")});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  ASSERT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].error().kind, Kind::kTruncated) << results[1].errorMessage();
  EXPECT_NE(results[1].errorMessage().find("interim"), std::string_view::npos)
      << results[1].errorMessage();
  EXPECT_EQ(client().stats().retries, 0u);
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

TEST_P(HttpClientTest, UnsupportedTransferCodingIsAnErrorNotABody) {
  for (int mode = 0; mode < 2; ++mode) {
    Request request = get("/gzip-coded");
    std::string streamed;
    if (mode == 1) {
      request.options.bodySink = [&](std::string_view piece) { streamed.append(piece); };
    }
    const FetchResult r = fetchOne(request);
    ASSERT_FALSE(r.ok()) << "a gzip-coded body passed off as the body";
    EXPECT_EQ(r.error().kind, Kind::kMalformed);
    EXPECT_NE(r.errorMessage().find("unsupported transfer coding (Transfer-Encoding: gzip)"),
              std::string_view::npos)
        << r.errorMessage();
    EXPECT_EQ(streamed, "");
  }
}

TEST_P(HttpClientTest, LyingContentLengthIsAnError) {
  const FetchResult r = fetchOne(get("/short"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kTruncated);
  EXPECT_NE(r.errorMessage().find("5 of 100"), std::string_view::npos) << r.errorMessage();
}

TEST_P(HttpClientTest, EndlessChunkedBodyHitsTheLimit) {
  HttpClient::Options options;
  options.limits.maxBodyBytes = 1024 * 1024;
  client(options);
  const FetchResult r = fetchOne(get("/endless"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kTooLarge);
  EXPECT_NE(r.errorMessage().find("body too large"), std::string_view::npos) << r.errorMessage();
  EXPECT_EQ(client().connectionCount(), 0u) << "the connection is closed, not pooled";
}

TEST_P(HttpClientTest, StallMidBodyIsAnIdleTimeout) {
  Request request = get("/stall");
  request.options.idleTimeout = 300ms;
  const auto began = std::chrono::steady_clock::now();
  const FetchResult r = fetchOne(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kIdleTimeout) << r.errorMessage();
  EXPECT_GE(std::chrono::steady_clock::now() - began, 300ms);
}

TEST_P(HttpClientTest, WholeRequestTimeout) {
  Request request = get("/stall");
  request.options.requestTimeout = 200ms;
  const FetchResult r = fetchOne(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kRequestTimeout) << r.errorMessage();
}

TEST_P(HttpClientTest, InformationalResponsesBeforeTheAnswer) {
  const FetchResult r = fetchOne(get("/informational"));
  ASSERT_TRUE(r.ok()) << r.errorMessage();
  EXPECT_EQ(r.response().status, 200);
  EXPECT_EQ(r.response().body, "final");
}

TEST_P(HttpClientTest, TenThousandHeadersAreAnError) {
  const FetchResult r = fetchOne(get("/headers10000"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kTooLarge);
  EXPECT_NE(r.errorMessage().find("too many header fields"), std::string_view::npos)
      << r.errorMessage();
}

TEST_P(HttpClientTest, HeadHasNoBodyAndTheConnectionIsReused) {
  Request head = get("/ok");
  head.method = Method::kHead;
  const std::vector<FetchResult> results = fetchInTurn({head, get("/ok")});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  EXPECT_EQ(results[0].response().header("content-length"), "1000");
  EXPECT_EQ(results[0].response().body, "");
  ASSERT_TRUE(results[1].ok()) << results[1].errorMessage();
  EXPECT_EQ(results[1].response().body, "ok");
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

TEST_P(HttpClientTest, NoContentAndNotModifiedHaveNoBody) {
  const std::vector<FetchResult> results = fetchInTurn({get("/204"), get("/304"), get("/ok")});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].response().status, 204);
  EXPECT_EQ(results[1].response().status, 304);
  ASSERT_TRUE(results[2].ok()) << results[2].errorMessage();
  EXPECT_EQ(results[2].response().body, "ok");
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

TEST_P(HttpClientTest, CloseDelimitedBody) {
  const FetchResult r = fetchOne(get("/close-delimited"));
  ASSERT_TRUE(r.ok()) << r.errorMessage();
  EXPECT_EQ(r.response().body, "until the end");
  EXPECT_EQ(client().idleConnectionCount(), 0u);
}

TEST_P(HttpClientTest, RedirectsFollowedOnlyWhenAsked) {
  Request post{.method = Method::kPost, .url = url("/303"), .body = "abc"};
  FetchResult notFollowed = fetchOne(post);
  ASSERT_TRUE(notFollowed.ok()) << notFollowed.errorMessage();
  EXPECT_EQ(notFollowed.response().status, 303);
  post.options.followRedirects = true;
  std::vector<Request> requests = {post};
  for (const char* path : {"/301", "/302", "/307", "/308"}) {
    Request r{.method = Method::kPut, .url = url(path), .body = "abcd"};
    r.options.followRedirects = true;
    requests.push_back(r);
  }
  const std::vector<FetchResult> results = fetchInTurn(requests);
  ASSERT_EQ(results.size(), 5u);
  // 303 turns the POST into a GET without a body; the others keep both.
  EXPECT_EQ(results[0].response().body, "GET 0");
  for (size_t i = 1; i < 5; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].errorMessage();
    EXPECT_EQ(results[i].response().status, 200);
    EXPECT_EQ(results[i].response().body, "PUT 4") << requests[i].url;
    EXPECT_EQ(results[i].response().url, url("/echo"));
  }
}

TEST_P(HttpClientTest, RedirectLoopIsTooManyRedirects) {
  Request r = get("/loop");
  r.options.followRedirects = true;
  r.options.maxRedirects = 3;
  const FetchResult result = fetchOne(r);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, Kind::kTooManyRedirects) << result.errorMessage();
}

TEST_P(HttpClientTest, ConnectionRefused) {
  const FetchResult r = fetchOne(Request{.url = "http://127.0.0.1:1/"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kConnectRefused) << r.errorMessage();
}

TEST_P(HttpClientTest, BadUrlIsReportedLaterNotInsideRequest) {
  bool called = false;
  client().request(Request{.url = "ftp://x/"}, [&](FetchResult r) {
    called = true;
    EXPECT_EQ(r.error().kind, Kind::kBadRequest);
    loop_->quit();
  });
  EXPECT_FALSE(called);
  loop_->loop();
  EXPECT_TRUE(called);
}

TEST_P(HttpClientTest, RequestsQueueBeyondTheConnectionLimit) {
  HttpClient::Options options;
  options.maxConnectionsPerOrigin = 2;
  client(options);
  int done = 0;
  int ok = 0;
  for (int i = 0; i < 20; ++i) {
    client().request(get("/ok"), [&](FetchResult r) {
      ok += r.ok() ? 1 : 0;
      if (++done == 20) loop_->quit();
    });
  }
  EXPECT_LE(client().connectionCount(), 2u);
  loop_->loop();
  EXPECT_EQ(ok, 20);
  EXPECT_LE(client().stats().connectionsOpened, 2u);
  EXPECT_EQ(client().stats().reusedRequests, 20u - client().stats().connectionsOpened);
}

TEST_P(HttpClientTest, TheQueueIsBounded) {
  HttpClient::Options options;
  options.maxConnectionsPerOrigin = 1;
  options.maxQueuedPerOrigin = 2;
  client(options);
  std::vector<Kind> errors;
  int ok = 0;
  int done = 0;
  bool inRequest = false;
  for (int i = 0; i < 5; ++i) {
    inRequest = true;
    client().request(get("/ok"), [&](FetchResult r) {
      EXPECT_FALSE(inRequest) << "a callback ran inside request()";
      if (r.ok()) {
        ++ok;
      } else {
        errors.push_back(r.error().kind);
      }
      if (++done == 5) loop_->quit();
    });
    inRequest = false;
  }
  loop_->loop();
  // One on the connection, two queued, two refused.
  EXPECT_EQ(ok, 3);
  EXPECT_EQ(errors, std::vector<Kind>(2, Kind::kQueueFull));
}

TEST_P(HttpClientTest, CancelClosesTheConnectionAndSkipsTheCallback) {
  bool called = false;
  http::RequestHandle handle = client().request(get("/stall"), [&](FetchResult) { called = true; });
  loop_->runAfter(100ms, [&] {
    EXPECT_TRUE(handle.pending());
    client().cancel(handle);
    EXPECT_FALSE(handle.pending());
    loop_->quit();
  });
  loop_->loop();
  EXPECT_FALSE(called);
  EXPECT_EQ(client().connectionCount(), 0u);
}

TEST_P(HttpClientTest, ResponseCallbackThatThrowsAnIntLeavesTheClientServing) {
  // The first callback throws 42; the client must go on: the next request
  // is answered, on the same pooled connection.
  int calls = 0;
  client().request(get("/ok"), [&](FetchResult r) {
    ++calls;
    EXPECT_TRUE(r.ok()) << r.errorMessage();
    loop_->queueInLoop([&] {
      client().request(get("/ok"), [&](FetchResult second) {
        ++calls;
        ASSERT_TRUE(second.ok()) << second.errorMessage();
        EXPECT_EQ(second.response().body, "ok");
        loop_->quit();
      });
    });
    throw 42;
  });
  loop_->loop();
  EXPECT_FALSE(timedOut_);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

TEST_P(HttpClientTest, BodySinkThatThrowsEndsItsRequestWithAnError) {
  Request request = get("/endless");
  request.options.bodySink = [](std::string_view) { throw std::string("no room"); };
  const FetchResult first = fetchOne(request);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().kind, Kind::kCancelled);
  EXPECT_NE(first.errorMessage().find("body sink threw"), std::string::npos)
      << first.errorMessage();
  // The connection that carried it was closed, not pooled mid-body; the
  // client still serves.
  const FetchResult second = fetchOne(get("/ok"));
  ASSERT_TRUE(second.ok()) << second.errorMessage();
  EXPECT_EQ(second.response().body, "ok");
  EXPECT_EQ(client().stats().connectionsOpened, 2u);
}

TEST_P(HttpClientTest, StreamedBodyGoesToTheSink) {
  HttpClient::Options options;
  options.limits.maxBodyBytes = 16;  // a stored body's limit only
  client(options);
  Request request = get("/endless");
  size_t received = 0;
  request.options.bodySink = [&](std::string_view piece) {
    received += piece.size();
    if (received > 4 * 1024 * 1024) loop_->quit();
  };
  client().request(request, [&](FetchResult r) {
    ADD_FAILURE() << "an endless body cannot end: " << r.errorMessage();
    loop_->quit();
  });
  loop_->loop();
  EXPECT_GT(received, 4u * 1024 * 1024);
}

// Runs the loop until `pred` holds (checked every 10 ms; bounded by the
// watchdog); whether it did.
bool runUntil(EventLoop* loop, const std::function<bool()>& pred) {
  bool held = false;
  loop->runEvery(10ms, [&] {
    if (pred()) {
      held = true;
      loop->quit();
    }
  });
  loop->loop();
  return held;
}

TEST_P(HttpClientTest, IdleConnectionThatGetsBytesIsDropped) {
  ASSERT_TRUE(fetchOne(get("/late-bytes")).ok());
  EXPECT_EQ(client().idleConnectionCount(), 1u);
  EXPECT_TRUE(runUntil(loop_.get(), [&] { return client().connectionCount() == 0; }));
}

TEST_P(HttpClientTest, IdleConnectionThatTheServerClosesIsDropped) {
  ASSERT_TRUE(fetchOne(get("/close-after")).ok());
  EXPECT_EQ(client().idleConnectionCount(), 1u);
  EXPECT_TRUE(runUntil(loop_.get(), [&] { return client().connectionCount() == 0; }));
  // The next request opens a new connection; nothing is retried.
  ASSERT_TRUE(fetchOne(get("/ok")).ok());
  EXPECT_EQ(client().stats().connectionsOpened, 2u);
  EXPECT_EQ(client().stats().retries, 0u);
}

TEST_P(HttpClientTest, PooledConnectionClosedAfterIdleTimeout) {
  HttpClient::Options options;
  options.idleTimeout = 100ms;
  client(options);
  ASSERT_TRUE(fetchOne(get("/ok")).ok());
  EXPECT_EQ(client().idleConnectionCount(), 1u);
  const auto idleFrom = std::chrono::steady_clock::now();
  EXPECT_TRUE(runUntil(loop_.get(), [&] { return client().connectionCount() == 0; }));
  EXPECT_GE(std::chrono::steady_clock::now() - idleFrom, 90ms);
}

TEST_P(HttpClientTest, BodyFromAFile) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/body.bin";
  { std::ofstream(path) << std::string(300000, 'b'); }
  Request byPath{.method = Method::kPost, .url = url("/echo"), .bodyFile = path};
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  Request byFd{.method = Method::kPut,
               .url = url("/echo"),
               .bodyFd = fd.get(),
               .bodyFileOffset = 100,
               .bodyLength = 1000};
  Request missing{.method = Method::kPost, .url = url("/echo"), .bodyFile = path + ".none"};
  const std::vector<FetchResult> results = fetchInTurn({byPath, byFd, byFd, missing});
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].response().body, "POST 300000") << results[0].errorMessage();
  EXPECT_EQ(results[1].response().body, "PUT 1000") << results[1].errorMessage();
  EXPECT_EQ(results[2].response().body, "PUT 1000") << "the fd's position is not moved";
  ASSERT_FALSE(results[3].ok());
  EXPECT_EQ(results[3].error().kind, Kind::kFile);
}

TEST_P(HttpClientTest, NameThatDoesNotResolveIsADnsError) {
  // A name server that is not there: the lookup fails at once (refused).
  dns::Resolver::Options dnsOptions;
  const std::optional<uint16_t> port = freeLoopbackPort(SOCK_DGRAM);
  ASSERT_TRUE(port.has_value());
  dnsOptions.servers = {InetAddress("127.0.0.1", *port)};
  dnsOptions.useHostsFile = false;
  dnsOptions.tries = 1;
  dnsOptions.timeout = 200ms;
  dnsOptions.searchDomains = std::vector<std::string>{};
  HttpClient::Options options;
  options.resolver = std::make_shared<dns::Resolver>(loop_.get(), dnsOptions);
  client(options);
  const FetchResult r = fetchOne(Request{.url = "http://no-such-host.test:8080/"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, Kind::kDns) << r.errorMessage();
  EXPECT_NE(r.errorMessage().find("no-such-host.test"), std::string_view::npos);
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpClientTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
