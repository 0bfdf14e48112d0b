// HttpClient against nginx, started by the test on a loopback port with a
// configuration written at test time (skipped, with a message, where nginx
// is not installed): static files byte for byte, a chunked response,
// keep-alive reuse, and HTTPS with a certificate made at test time
// (tools/make_test_certs.py): verified against its CA, refused for a wrong
// host name and without the CA. On both backends.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "net/EventLoop.h"
#include "net/http/HttpClient.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"
#include "tests/net/http/client/ClientLoopTest.h"
#include "tests/net/tls/TestPki.h"

namespace libnet::test {
namespace {

namespace fs = std::filesystem;
using http::ClientError;
using http::FetchResult;
using http::HttpClient;
using http::Request;
using Kind = ClientError::Kind;

constexpr char kNginx[] = "/usr/sbin/nginx";

// A TCP port of 127.0.0.1 free at the moment (nginx cannot be told port 0).
uint16_t freePort() { return freeLoopbackPort(SOCK_STREAM).value_or(0); }

bool accepts(uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const InetAddress addr("127.0.0.1", port);
  return fd && ::connect(fd.get(), addr.sockAddr(), addr.sockLen()) == 0;
}

std::string config(const fs::path& dir, uint16_t port, uint16_t tlsPort, bool subModule) {
  const std::string d = dir.string();
  std::string c = "daemon off;\nmaster_process off;\npid " + d + "/nginx.pid;\n";
  c += "error_log stderr warn;\nevents { worker_connections 256; }\n";
  c += "http {\n access_log off;\n default_type application/octet-stream;\n";
  for (const char* temp : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
    c += std::string(" ") + temp + "_temp_path " + d + "/" + temp + ";\n";
  }
  c += " server {\n  listen 127.0.0.1:" + std::to_string(port) + ";\n";
  c += "  listen 127.0.0.1:" + std::to_string(tlsPort) + " ssl;\n";
  c += "  ssl_certificate " + d + "/certs/server.pem;\n";
  c += "  ssl_certificate_key " + d + "/certs/server.key;\n";
  c += "  root " + d + "/www;\n";
  if (subModule) {
    // sub_filter rewrites the body as it goes, so nginx cannot know its
    // length: it answers HTTP/1.1 with Transfer-Encoding: chunked.
    c += "  location /chunked/ { sub_filter 'cat' 'dog'; sub_filter_once off; ";
    c += "sub_filter_types *; }\n";
  }
  c += "  location / { }\n }\n}\n";
  return c;
}

class NginxTest : public ClientLoopTest {
 protected:
  static void SetUpTestSuite() {
    if (::access(kNginx, X_OK) != 0) return;
    dir_ = new fs::path(fs::path(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") /
                        "nginx_client_test");
    fs::create_directories(*dir_ / "www" / "chunked");
    big_ = new std::string(1 << 20, '\0');
    std::mt19937 random(42);
    for (char& c : *big_) c = static_cast<char>(random());
    std::ofstream(*dir_ / "www" / "big.bin", std::ios::binary) << *big_;
    std::ofstream(*dir_ / "www" / "small.txt") << "small\n";
    std::ofstream(*dir_ / "www" / "chunked" / "cats.txt") << "cat and cat\n";
    const std::string tool = testBinary("make_test_certs.py", "tools");
    const ChildResult certs =
        runChild({"/usr/bin/python3", tool, (*dir_ / "certs").string()}, {"PATH=/usr/bin:/bin"});
    if (certs.exitCode != 0) {
      why_ = "make_test_certs.py failed: " + certs.describe();
      return;
    }
    // Debian builds sub_filter in; a build without it only skips the
    // chunked test (the scripted server's tests cover chunked bodies too).
    const ChildResult version = runChild({kNginx, "-V"}, {});
    subModule_ = version.err.find("http_sub_module") != std::string::npos;
    startNginx();
  }

  static void startNginx() {
    for (int attempt = 0; attempt < 5 && port_ == 0; ++attempt) {
      const uint16_t port = freePort();
      const uint16_t tlsPort = freePort();
      std::ofstream(*dir_ / "nginx.conf") << config(*dir_, port, tlsPort, subModule_);
      nginx_ = new ServerChild;
      if (!nginx_->start({kNginx, "-p", dir_->string(), "-c", (*dir_ / "nginx.conf").string()})) {
        why_ = "nginx did not start: " + nginx_->output();
      } else if (waitUntil([&] { return accepts(port) && accepts(tlsPort); }, kWait)) {
        port_ = port;
        tlsPort_ = tlsPort;
        return;
      }
      delete nginx_;  // a port was taken meanwhile: others
      nginx_ = nullptr;
    }
    if (why_.empty()) why_ = "nginx did not listen";
  }

  static void TearDownTestSuite() {
    delete nginx_;
    delete dir_;
    delete big_;
    nginx_ = nullptr;
  }

  void SetUp() override {
    LoopTest::SetUp();
    if (IsSkipped()) return;
    if (::access(kNginx, X_OK) != 0) GTEST_SKIP() << "nginx is not installed (" << kNginx << ")";
    ASSERT_NE(port_, 0) << why_;
    startLoop();
  }

  // The URLs fetched one after the other.
  std::vector<FetchResult> fetchUrls(const std::vector<std::string>& urls) {
    std::vector<Request> requests;
    for (const std::string& u : urls) requests.push_back(Request{.url = u});
    return fetchInTurn(std::move(requests));
  }

  static std::string url(std::string_view path) {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }
  static std::string tlsUrl(std::string_view host, std::string_view path) {
    return "https://" + std::string(host) + ":" + std::to_string(tlsPort_) + std::string(path);
  }
  static std::string caFile() { return (*dir_ / "certs" / "ca.pem").string(); }

  static inline fs::path* dir_ = nullptr;
  static inline std::string* big_ = nullptr;
  static inline ServerChild* nginx_ = nullptr;
  static inline uint16_t port_ = 0;
  static inline uint16_t tlsPort_ = 0;
  static inline std::string why_;
  static inline bool subModule_ = false;
};

TEST_P(NginxTest, StaticFileByteForByte) {
  const std::vector<FetchResult> results = fetchUrls({url("/big.bin"), url("/missing")});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  EXPECT_EQ(results[0].response().status, 200);
  EXPECT_EQ(results[0].response().header("content-length"), std::to_string(big_->size()));
  EXPECT_TRUE(results[0].response().body == *big_) << "1 MiB body differs";
  ASSERT_TRUE(results[1].ok()) << results[1].errorMessage();
  EXPECT_EQ(results[1].response().status, 404);
  EXPECT_EQ(results[1].response().reason, "Not Found");
}

TEST_P(NginxTest, ChunkedResponse) {
  if (!subModule_) GTEST_SKIP() << "this nginx has no sub_filter (http_sub_module)";
  const std::vector<FetchResult> results = fetchUrls({url("/chunked/cats.txt")});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  EXPECT_EQ(results[0].response().header("transfer-encoding"), "chunked");
  EXPECT_FALSE(results[0].response().header("content-length").has_value());
  EXPECT_EQ(results[0].response().body, "dog and dog\n");
}

TEST_P(NginxTest, TenRequestsOneConnection) {
  const std::vector<FetchResult> results =
      fetchUrls(std::vector<std::string>(10, url("/small.txt")));
  ASSERT_EQ(results.size(), 10u);
  for (const FetchResult& r : results) {
    ASSERT_TRUE(r.ok()) << r.errorMessage();
    EXPECT_EQ(r.response().body, "small\n");
  }
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
  EXPECT_EQ(client().stats().reusedRequests, 9u);
}

TEST_P(NginxTest, HttpsVerifiedAgainstItsCa) {
  HttpClient::Options options;
  options.caFile = caFile();
  client(options);
  const std::vector<FetchResult> results =
      fetchUrls({tlsUrl("127.0.0.1", "/big.bin"), tlsUrl("127.0.0.1", "/small.txt")});
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok()) << results[0].errorMessage();
  EXPECT_TRUE(results[0].response().body == *big_);
  ASSERT_TRUE(results[1].ok()) << results[1].errorMessage();
  EXPECT_EQ(client().stats().connectionsOpened, 1u);
}

TEST_P(NginxTest, HttpsWrongHostNameIsAVerifyError) {
  HttpClient::Options options;
  options.caFile = caFile();
  client(options);
  // The certificate names IP 127.0.0.1 only.
  const std::vector<FetchResult> results = fetchUrls({tlsUrl("localhost", "/small.txt")});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error().kind, Kind::kTls) << results[0].errorMessage();
  // The message says why, not just that the handshake failed.
  EXPECT_EQ(lowered(results[0].error().message),
            "tls handshake with localhost:" + std::to_string(tlsPort_) +
                " failed: certificate verify failed: hostname mismatch");
}

TEST_P(NginxTest, HttpsWithoutTheCaIsAVerifyError) {
  const std::vector<FetchResult> results = fetchUrls({tlsUrl("127.0.0.1", "/small.txt")});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].error().kind, Kind::kTls) << results[0].errorMessage();
  // The system's store does not hold the test CA: the issuer is unknown.
  const std::string& message = results[0].error().message;
  EXPECT_EQ(message.rfind("TLS handshake with 127.0.0.1:" + std::to_string(tlsPort_) +
                              " failed: certificate verify failed: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("issuer certificate"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(Backends, NginxTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring), pollerName);

}  // namespace
}  // namespace libnet::test
