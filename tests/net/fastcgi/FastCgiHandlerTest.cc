// FastCgiHandler against a real php-fpm (its own, in a temporary directory)
// and against scripted applications for the failures php-fpm does not make
// on demand, on both backends. The client side is a RecordingWriter: the
// handler is tested as the asynchronous handler it is, without a server.
#include "net/fastcgi/FastCgiHandler.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/fastcgi/RecordEncoder.h"
#include "tests/net/TestUtil.h"
#include "tests/net/fastcgi/FakeApplication.h"
#include "tests/net/fastcgi/PhpFpm.h"
#include "tests/net/fastcgi/RecordingWriter.h"

namespace libnet::fastcgi {
namespace {

using test::RecordingWriter;
using Ending = RecordingWriter::Ending;
using WriterPtr = std::shared_ptr<RecordingWriter>;

constexpr auto kTestDeadline = std::chrono::seconds(60);

// The large answer's size: 100 MiB, a quarter of it under the sanitizers
// (which make every byte many times dearer; the bound checked is the same).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kLargeMiB = 25;
#else
constexpr int kLargeMiB = 100;
#endif

http::HttpRequest makeRequest(http::Method method, std::string_view target, std::string body = {}) {
  http::HttpRequest r;
  EXPECT_EQ(r.assign(method, http::Version::kHttp11, target), 0);
  if (!body.empty()) {
    r.appendHeader("Content-Type", "application/octet-stream");
    r.appendHeader("Content-Length", std::to_string(body.size()));
  }
  r.body() = std::move(body);
  return r;
}

UpstreamOptions optionsFor(const SocketAddress& address, const std::string& root = "/srv") {
  UpstreamOptions o;
  o.address = address;
  o.documentRoot = root;
  return o;
}

class FastCgiHandlerTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    loop_ = std::make_unique<EventLoop>(GetParam());
    loop_->runAfter(kTestDeadline, [this] {
      timedOut_ = true;
      loop_->quit();
    });
  }
  void TearDown() override {
    loop_.reset();
    EXPECT_FALSE(timedOut_) << "the test ran past its deadline";
  }

  // Skips the test without php-fpm; the caller returns when IsSkipped().
  void startPhp(int children) {
    if (!test::PhpFpm::installed())
      GTEST_SKIP() << "php-fpm not installed (" << test::PhpFpm::kBinary
                   << "; tools/setup.sh installs php8.2-fpm)";
    fpm_ = std::make_unique<test::PhpFpm>();
    writeScripts();
    ASSERT_TRUE(fpm_->start(children)) << fpm_->log();
  }

  UpstreamOptions phpOptions() const {
    return optionsFor(SocketAddress::unixPath(fpm_->socketPath()), fpm_->dir());
  }

  WriterPtr newWriter() {
    auto w = std::make_shared<RecordingWriter>(loop_.get());
    w->onEnd = [this] {
      if (--pending_ == 0) loop_->quit();
    };
    return w;
  }

  // Sends every request of `batch` in one loop turn and runs the loop until
  // all are answered.
  std::vector<WriterPtr> runAll(const FastCgiHandler& handler,
                                const std::vector<http::HttpRequest>& batch,
                                const std::function<void(const WriterPtr&)>& setup = {}) {
    std::vector<WriterPtr> writers;
    for (size_t i = 0; i < batch.size(); ++i) {
      writers.push_back(newWriter());
      if (setup) setup(writers.back());
    }
    pending_ = static_cast<int>(batch.size());
    loop_->queueInLoop([&] {
      for (size_t i = 0; i < batch.size(); ++i) handler(batch[i], writers[i]);
    });
    loop_->loop();
    return writers;
  }

  WriterPtr runOne(const FastCgiHandler& handler, const http::HttpRequest& request,
                   const std::function<void(const WriterPtr&)>& setup = {}) {
    return runAll(handler, {request}, setup).front();
  }

  // Runs the loop until `done` holds (checked every millisecond), bounded.
  bool runLoopUntil(const std::function<bool()>& done) {
    const TimerId check = loop_->runEvery(std::chrono::milliseconds(1), [&] {
      if (done()) loop_->quit();
    });
    const TimerId limit = loop_->runAfter(test::kWait, [this] { loop_->quit(); });
    loop_->loop();
    loop_->cancel(check);
    loop_->cancel(limit);
    return done();
  }

  void writeScripts() {
    fpm_->writeScript("env.php",
                      "<?php header('Content-Type: text/plain');\n"
                      "foreach ($_SERVER as $k => $v) if (is_string($v)) echo \"$k=$v\\n\";\n");
    fpm_->writeScript("post.php",
                      "<?php $d = file_get_contents('php://input');\n"
                      "echo strlen($d), ' ', hash('fnv1a64', $d);\n");
    fpm_->writeScript("headers.php",
                      "<?php http_response_code(418); header('Content-Type: text/plain');\n"
                      "header('X-Test: yes'); setcookie('a', '1'); setcookie('b', '2');\n"
                      "header('Content-Length: 999'); echo 'teapot';\n");
    fpm_->writeScript("redirect.php", "<?php header('Location: /elsewhere');\n");
    fpm_->writeScript("big.php",
                      "<?php $chunk = str_repeat('x', 65536);\n"
                      "for ($i = 0; $i < 16 * (int)$_GET['mb']; $i++) echo $chunk;\n");
    // Writes a line every 20 ms for a minute: flush() is where PHP notices
    // that the web server has closed the connection.
    fpm_->writeScript("ticker.php",
                      "<?php for ($i = 0; $i < 3000; $i++) { echo \"tick $i\\n\"; flush();\n"
                      "usleep(20000); }\n");
    fpm_->writeScript("sleep.php", "<?php usleep((int)$_GET['ms'] * 1000); echo 'slept';\n");
    fpm_->writeScript("stderr.php", "<?php error_log('note from php'); echo 'ok';\n");
  }

  std::unique_ptr<test::PhpFpm> fpm_;
  std::unique_ptr<EventLoop> loop_;
  int pending_ = 0;
  bool timedOut_ = false;
};

std::map<std::string, std::string> lines(const std::string& body) {
  std::map<std::string, std::string> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

TEST_P(FastCgiHandlerTest, PhpSeesTheCgiVariables) {
  startPhp(2);
  if (IsSkipped() || HasFatalFailure()) return;
  FastCgiHandler handler(phpOptions());
  http::HttpRequest r = makeRequest(http::Method::kGet, "/env.php?a=1&b=%41");
  r.appendHeader("Host", "example.com:8080");
  r.appendHeader("X-Custom-Header", "custom");
  r.appendHeader("Proxy", "http://evil.example:1");
  r.appendHeader("Cookie", "c=1");
  r.appendHeader("Cookie", "d=2");
  WriterPtr w = runOne(handler, r);
  ASSERT_EQ(w->status, 200) << w->body;
  EXPECT_NE(w->ending, Ending::kAborted);
  const auto vars = lines(w->body);
  EXPECT_EQ(vars.at("SCRIPT_FILENAME"), fpm_->dir() + "/env.php");
  EXPECT_EQ(vars.at("SCRIPT_NAME"), "/env.php");
  EXPECT_EQ(vars.at("QUERY_STRING"), "a=1&b=%41");
  EXPECT_EQ(vars.at("REQUEST_METHOD"), "GET");
  EXPECT_EQ(vars.at("REQUEST_URI"), "/env.php?a=1&b=%41");
  EXPECT_EQ(vars.at("DOCUMENT_ROOT"), fpm_->dir());
  EXPECT_EQ(vars.at("SERVER_PROTOCOL"), "HTTP/1.1");
  EXPECT_EQ(vars.at("GATEWAY_INTERFACE"), "CGI/1.1");
  EXPECT_EQ(vars.at("SERVER_NAME"), "example.com");
  EXPECT_EQ(vars.at("HTTP_HOST"), "example.com:8080");
  EXPECT_EQ(vars.at("HTTP_X_CUSTOM_HEADER"), "custom");
  EXPECT_EQ(vars.at("HTTP_COOKIE"), "c=1; d=2");
  EXPECT_EQ(vars.count("HTTP_PROXY"), 0u);
  EXPECT_EQ(vars.count("HTTPS"), 0u);
}

TEST_P(FastCgiHandlerTest, TenMebibytePostArrivesWhole) {
  startPhp(2);
  if (IsSkipped() || HasFatalFailure()) return;
  FastCgiHandler handler(phpOptions());
  const std::string body = test::randomBytes(10 * 1024 * 1024, 44);
  test::Fnv1a64 expected;
  expected.update(body);
  WriterPtr w = runOne(handler, makeRequest(http::Method::kPost, "/post.php", body));
  ASSERT_EQ(w->status, 200) << w->body;
  EXPECT_EQ(w->body, std::to_string(body.size()) + " " + expected.hex());
}

TEST_P(FastCgiHandlerTest, StatusAndFieldsFromPhp) {
  startPhp(2);
  if (IsSkipped() || HasFatalFailure()) return;
  FastCgiHandler handler(phpOptions());
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/headers.php"));
  EXPECT_EQ(w->status, 418);
  EXPECT_EQ(w->body, "teapot");
  EXPECT_EQ(w->contentType.rfind("text/plain", 0), 0u) << w->contentType;
  EXPECT_EQ(w->field("X-Test"), "yes");
  EXPECT_EQ(w->fields.count("Set-Cookie"), 2u);
  EXPECT_EQ(w->fields.count("Content-Length"), 0u);  // the server frames the answer

  WriterPtr r = runOne(handler, makeRequest(http::Method::kGet, "/redirect.php"));
  EXPECT_EQ(r->status, 302);
  EXPECT_EQ(r->field("Location"), "/elsewhere");

  WriterPtr missing = runOne(handler, makeRequest(http::Method::kGet, "/missing.php"));
  EXPECT_EQ(missing->status, 404);

  WriterPtr escape = runOne(handler, makeRequest(http::Method::kGet, "/a/../../etc/x.php"));
  EXPECT_EQ(escape->status, 400);
}

// 100 MiB (kLargeMiB) to a client that reads 256 KiB a millisecond at most (nothing
// before its first write is refused): what waits
// for it stays near the high-water mark, because reading from php-fpm stops
// while the client is behind.
TEST_P(FastCgiHandlerTest, LargeOutputToASlowClientIsBounded) {
  startPhp(2);
  if (IsSkipped() || HasFatalFailure()) return;
  FastCgiHandler handler(phpOptions());
  std::weak_ptr<RecordingWriter> current;
  const TimerId reader = loop_->runEvery(std::chrono::milliseconds(1), [&current] {
    // Reads nothing until the first write was refused, so that the
    // back-pressure is met however fast php-fpm writes here.
    if (auto w = current.lock(); w && w->refusals > 0) w->drain(256 * 1024);
  });
  WriterPtr w =
      runOne(handler, makeRequest(http::Method::kGet, "/big.php?mb=" + std::to_string(kLargeMiB)),
             [&current](const WriterPtr& writer) {
               writer->slow = true;
               writer->keepBody = false;
               current = writer;
             });
  loop_->cancel(reader);
  ASSERT_EQ(w->status, 200);
  EXPECT_EQ(w->ending, Ending::kFinished);
  EXPECT_EQ(w->bodyBytes, size_t{kLargeMiB} * 1024 * 1024);
  test::Fnv1a64 expected;
  const std::string chunk(65536, 'x');
  for (int i = 0; i < kLargeMiB * 16; ++i) expected.update(chunk);
  EXPECT_EQ(w->hash.hex(), expected.hex());
  EXPECT_GT(w->refusals, 0);
  // One read of the application's socket beyond the mark at most.
  EXPECT_LE(w->maxQueued, w->highWater + 512 * 1024);
}

// php-fpm killed (master and children) after the head and some body went
// out: the client's answer is aborted, never finished; the next request
// finds nobody at the socket: 502.
TEST_P(FastCgiHandlerTest, PhpKilledMidAnswer) {
  startPhp(2);
  if (IsSkipped() || HasFatalFailure()) return;
  FastCgiHandler handler(phpOptions());
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/ticker.php"),
                       [this](const WriterPtr& writer) {
                         writer->onData = [this, raw = writer.get()] {
                           if (raw->bodyBytes > 0) fpm_->kill();
                         };
                       });
  EXPECT_EQ(w->status, 200);
  EXPECT_TRUE(w->started);
  EXPECT_EQ(w->ending, Ending::kAborted);
  WriterPtr next = runOne(handler, makeRequest(http::Method::kGet, "/env.php"));
  EXPECT_EQ(next->status, 502);
  EXPECT_EQ(next->ending, Ending::kWhole);
}

// The client leaves mid-answer: the handler closes the application's
// connection, PHP stops at its next flush(), and the only child is free for
// the next request (which would otherwise wait for the script's minute).
TEST_P(FastCgiHandlerTest, ClientLeavingFreesTheApplication) {
  startPhp(1);
  if (IsSkipped() || HasFatalFailure()) return;
  UpstreamOptions o = phpOptions();
  o.readTimeout = std::chrono::seconds(20);
  FastCgiHandler handler(o);
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/ticker.php"),
                       [this](const WriterPtr& writer) {
                         writer->onData = [this, raw = writer.get()] {
                           if (raw->bodyBytes > 0 && !raw->gone) {
                             raw->leave();
                             loop_->quit();
                           }
                         };
                       });
  EXPECT_TRUE(w->gone);
  WriterPtr next = runOne(handler, makeRequest(http::Method::kGet, "/sleep.php?ms=0"));
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(next->body, "slept");
}

// Pool of 2, queue of 1: of four requests at once, two run, one waits for a
// connection and one is refused at once.
TEST_P(FastCgiHandlerTest, PoolAndQueueFull) {
  startPhp(4);
  if (IsSkipped() || HasFatalFailure()) return;
  UpstreamOptions o = phpOptions();
  o.poolSize = 2;
  o.queueLength = 1;
  FastCgiHandler handler(o);
  const http::HttpRequest r = makeRequest(http::Method::kGet, "/sleep.php?ms=100");
  std::vector<WriterPtr> ws = runAll(handler, {r, r, r, r});
  std::map<int, int> statuses;
  for (const WriterPtr& w : ws) ++statuses[w->status];
  EXPECT_EQ(statuses[200], 3);
  EXPECT_EQ(statuses[503], 1);
  EXPECT_EQ(ws[3]->status, 503);
  // The pool's connections are kept: more requests go through them.
  std::vector<WriterPtr> again = runAll(handler, {r, r});
  EXPECT_EQ(again[0]->status, 200);
  EXPECT_EQ(again[1]->status, 200);
}

TEST_P(FastCgiHandlerTest, WaitingPastTheQueueTimeoutIs503) {
  startPhp(2);
  if (IsSkipped() || HasFatalFailure()) return;
  UpstreamOptions o = phpOptions();
  o.poolSize = 1;
  o.queueTimeout = std::chrono::milliseconds(100);
  FastCgiHandler handler(o);
  std::vector<WriterPtr> ws =
      runAll(handler, {makeRequest(http::Method::kGet, "/sleep.php?ms=2000"),
                       makeRequest(http::Method::kGet, "/env.php")});
  EXPECT_EQ(ws[0]->status, 200);
  EXPECT_EQ(ws[1]->status, 503);
}

TEST_P(FastCgiHandlerTest, StderrGoesToTheLog) {
  startPhp(1);
  if (IsSkipped() || HasFatalFailure()) return;
  FastCgiHandler handler(phpOptions());
  std::string logged;
  Logger::setOutput([&logged](std::string_view line) { logged.append(line); });
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/stderr.php"));
  Logger::setOutput(nullptr);
  EXPECT_EQ(w->status, 200);
  EXPECT_EQ(w->body, "ok");
  EXPECT_NE(logged.find("note from php"), std::string::npos) << logged;
}

TEST_P(FastCgiHandlerTest, RefusedIs502) {
  char dir[] = "/tmp/libnet-fcgi-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  FastCgiHandler unix(optionsFor(SocketAddress::unixPath(std::string(dir) + "/none.sock")));
  WriterPtr w = runOne(unix, makeRequest(http::Method::kGet, "/x.php"));
  ::rmdir(dir);
  EXPECT_EQ(w->status, 502);

  const std::optional<uint16_t> port = test::freeLoopbackPort(SOCK_STREAM);
  ASSERT_TRUE(port);
  FastCgiHandler tcp(optionsFor(InetAddress("127.0.0.1", *port)));
  EXPECT_EQ(runOne(tcp, makeRequest(http::Method::kGet, "/x.php"))->status, 502);
}

std::string records(const std::function<void(const RecordEncoder&, std::string*)>& fill,
                    uint16_t id = 1) {
  std::string out;
  fill(RecordEncoder(id), &out);
  return out;
}

struct Scripted {
  const char* name;
  std::string reply;
  bool closeAfter;
  int status;
  Ending ending;
};

std::vector<Scripted> scriptedCases() {
  using T = RecordType;
  const std::string head = "Content-Type: text/plain\r\n\r\n";
  return {
      {"http_instead", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, 502, Ending::kWhole},
      {"bad_version", std::string("\2\6\0\1\0\0\0\0", 8), false, 502, Ending::kWhole},
      {"other_request_id",
       records([&](const RecordEncoder& e, std::string* o) { e.stream(o, T::kStdout, head); }, 2),
       false, 502, Ending::kWhole},
      {"overloaded", records([](const RecordEncoder& e, std::string* o) {
         e.endRequest(o, 0, ProtocolStatus::kOverloaded);
       }),
       false, 503, Ending::kWhole},
      {"end_without_head", records([](const RecordEncoder& e, std::string* o) {
         e.stream(o, T::kStdout, "Content-Type: text/plain\r\n");
         e.endRequest(o, 0, ProtocolStatus::kRequestComplete);
       }),
       false, 502, Ending::kWhole},
      {"bad_head", records([](const RecordEncoder& e, std::string* o) {
         e.stream(o, T::kStdout, "not a field\r\n\r\n");
       }),
       false, 502, Ending::kWhole},
      {"head_too_big", records([](const RecordEncoder& e, std::string* o) {
         e.stream(o, T::kStdout, "X-Big: " + std::string(65535 - 7, 'b'));
         e.stream(o, T::kStdout, "\r\n\r\n");
       }),
       false, 502, Ending::kWhole},
      {"closed_before_answer", "", true, 502, Ending::kWhole},
      {"closed_mid_body", records([&](const RecordEncoder& e, std::string* o) {
         e.stream(o, T::kStdout, head + "part of it");
       }),
       true, 200, Ending::kAborted},
      {"garbage_after_head", records([&](const RecordEncoder& e, std::string* o) {
                               e.stream(o, T::kStdout, head + "part of it");
                             }) + "garbage!",
       false, 0, Ending::kNone},
      {"whole", records([&](const RecordEncoder& e, std::string* o) {
         e.stream(o, T::kStderr, "a warning\nanother\n");
         e.stream(o, T::kStdout, "Status: 201 Made\r\n" + head + "made");
         e.endStream(o, T::kStdout);
         e.endRequest(o, 0, ProtocolStatus::kRequestComplete);
       }),
       false, 201, Ending::kWhole},
  };
}

TEST_P(FastCgiHandlerTest, ScriptedApplications) {
  for (const Scripted& c : scriptedCases()) {
    SCOPED_TRACE(c.name);
    test::FakeApplication app(c.reply, c.closeAfter);
    ASSERT_TRUE(app.ok());
    FastCgiHandler handler(optionsFor(app.address()));
    WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/x.php"));
    EXPECT_TRUE(app.sawRequest());
    if (c.status == 0) {
      // Read in one batch or two: a 502 before anything went out, or the
      // answer aborted after its head; never finished.
      EXPECT_TRUE(w->status == 502 || w->ending == Ending::kAborted) << w->status;
      EXPECT_NE(w->ending, Ending::kFinished);
      continue;
    }
    EXPECT_EQ(w->status, c.status);
    EXPECT_EQ(w->ending, c.ending);
  }
}

TEST_P(FastCgiHandlerTest, SilentApplicationIs504AfterTheReadTimeout) {
  test::FakeApplication app("", false);
  ASSERT_TRUE(app.ok());
  UpstreamOptions o = optionsFor(app.address());
  o.readTimeout = std::chrono::milliseconds(200);
  FastCgiHandler handler(o);
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/x.php"));
  EXPECT_EQ(w->status, 504);
  // The connection is closed on the loop: run it until the application sees it.
  EXPECT_TRUE(runLoopUntil([&] { return app.sawClose(); }));
}

// 200 KiB of FCGI_STDERR: at most maxStderrLogBytes of it logged, then one
// line counting the rest; the answer itself is not disturbed.
TEST_P(FastCgiHandlerTest, StderrLoggingIsBounded) {
  std::string noise;
  for (int i = 0; i < 20000; ++i) noise += "warning " + std::to_string(i % 10) + "\n";
  std::string reply;
  const RecordEncoder e(1);
  e.stream(&reply, RecordType::kStderr, noise);
  e.stream(&reply, RecordType::kStdout, "Content-Type: text/plain\r\n\r\nfine");
  e.endStream(&reply, RecordType::kStdout);
  e.endRequest(&reply, 0, ProtocolStatus::kRequestComplete);
  test::FakeApplication app(reply, false);
  ASSERT_TRUE(app.ok());
  UpstreamOptions o = optionsFor(app.address());
  o.maxStderrLogBytes = 1000;
  FastCgiHandler handler(o);
  size_t stderrLines = 0;
  size_t stderrBytes = 0;
  bool counted = false;
  Logger::setOutput([&](std::string_view line) {
    if (line.find("fastcgi stderr") == std::string_view::npos) return;
    if (line.find("more bytes not logged") != std::string_view::npos) {
      counted = true;
      return;
    }
    ++stderrLines;
    stderrBytes += line.size() - line.find("): ") - 3;
  });
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/x.php"));
  Logger::setOutput(nullptr);
  EXPECT_EQ(w->status, 200);
  EXPECT_EQ(w->body, "fine");
  EXPECT_GT(stderrLines, 0u);
  // Each logged line also carries the source location and a newline.
  EXPECT_LE(stderrLines, 1000u / 9 + 1);
  EXPECT_LE(stderrBytes, 1000u + stderrLines * 64);
  EXPECT_TRUE(counted);
}

// An application that never reads: the 8 MiB request fills the socket's
// buffers, no piece drains within the send timeout: 504, connection closed.
TEST_P(FastCgiHandlerTest, ApplicationNotReadingIs504AfterTheSendTimeout) {
  test::FakeApplication app("", false, /*readRequest=*/false);
  ASSERT_TRUE(app.ok());
  UpstreamOptions o = optionsFor(app.address());
  o.sendTimeout = std::chrono::milliseconds(200);
  FastCgiHandler handler(o);
  WriterPtr w = runOne(
      handler, makeRequest(http::Method::kPost, "/x.php", std::string(8 * 1024 * 1024, 'p')));
  EXPECT_EQ(w->status, 504);
  EXPECT_TRUE(runLoopUntil([&] { return app.sawClose(); }));
}

// A listening socket whose accept queue is full (backlog 0, one connection
// waiting in it) drops the next SYN: the connect never completes, 504 after
// the connect timeout.
TEST_P(FastCgiHandlerTest, ConnectNotCompletingIs504) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  InetAddress any("127.0.0.1", 0);
  ASSERT_EQ(::bind(listener.get(), any.sockAddr(), any.sockLen()), 0);
  ASSERT_EQ(::listen(listener.get(), 0), 0);
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ASSERT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &length), 0);
  const SocketAddress address = SocketAddress::fromSockAddr(bound, length);
  UniqueFd filler(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(filler.get(), address.sockAddr(), address.sockLen()), 0);
  UpstreamOptions o = optionsFor(address);
  o.connectTimeout = std::chrono::milliseconds(200);
  FastCgiHandler handler(o);
  WriterPtr w = runOne(handler, makeRequest(http::Method::kGet, "/x.php"));
  EXPECT_EQ(w->status, 504);
}

INSTANTIATE_TEST_SUITE_P(Backends, FastCgiHandlerTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::fastcgi
