// HttpClient over TLS against close_notify_https_server.py (a certificate
// made at test time, verified), on both backends: a pooled connection whose
// server sent close_notify with its last answer is not given the next
// request, though no FIN has come.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/http/HttpClient.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/http/client/ClientLoopTest.h"
#include "tests/net/tls/TestPki.h"

namespace libnet::test {
namespace {

using http::Method;
using Kind = http::ClientError::Kind;

class HttpClientTlsTest : public ClientLoopTest {
 public:
  static void SetUpTestSuite() {
    pki_ = new TestPki;
    server_ = new ServerChild;
    const std::string script = testBinary("close_notify_https_server.py", "tests/net/http/client");
    started_ = !script.empty() &&
               server_->start(
                   {"/usr/bin/python3", script, pki_->serverCertFile(), pki_->serverKeyFile()}) &&
               server_->waitForPort() != 0;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    delete pki_;
    pki_ = nullptr;
  }

  void SetUp() override {
    LoopTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(started_) << "HTTPS server did not start: " << server_->output();
    startLoop();
    HttpClient::Options options;
    options.caFile = pki_->caFile();
    client(options);
  }

  static std::string url(std::string_view path) {
    return "https://127.0.0.1:" + std::to_string(server_->announcedPort()) + std::string(path);
  }

  static inline TestPki* pki_ = nullptr;
  static inline ServerChild* server_ = nullptr;
  static inline bool started_ = false;
};

TEST_P(HttpClientTlsTest, KeepAliveOverTls) {
  const std::vector<FetchResult> results =
      fetchInTurn({Request{.url = url("/echo")}, Request{.url = url("/echo")}});
  ASSERT_EQ(results.size(), 2u);
  for (const FetchResult& r : results) {
    ASSERT_TRUE(r.ok()) << r.errorMessage();
    EXPECT_EQ(r.response().body, "GET 0");
  }
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

// The answer and close_notify come in one read: the connection is done,
// though its FIN has not come, and the POST that the answer's callback makes
// goes on a new connection instead of being lost with that one.
TEST_P(HttpClientTlsTest, PooledConnectionWhoseServerSentCloseNotifyIsNotReused) {
  Request post{.method = Method::kPost, .url = url("/echo"), .body = "payload"};
  const std::vector<FetchResult> results =
      fetchInTurn({Request{.url = url("/ok-then-close-notify")}, post});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  EXPECT_EQ(results[0].response().body, "ok");
  ASSERT_TRUE(results[1].ok()) << results[1].errorMessage();
  EXPECT_EQ(results[1].response().body, "POST 7");
  EXPECT_EQ(client().stats().connectionsOpened, 2u);
  EXPECT_EQ(client().stats().retries, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpClientTlsTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
