// HttpServer's answers that come later (setAsyncHandler, ResponseWriter) over
// real loopback sockets, on every backend: answers from another thread,
// streamed bodies (chunked and with Content-Length) read back byte-exact by
// HttpClient, back-pressure against a client that does not read, a client
// that leaves mid-answer, abort and dropped writers, pipelined requests
// behind a pending answer, throwing handlers, the idle timeout and drain
// with an answer pending, and writers that outlive the server.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/http/HttpClient.h"
#include "net/http/HttpServer.h"
#include "tests/net/TestUtil.h"

namespace libnet::http {
namespace {

using test::BlockingClient;
using test::randomBytes;
using test::runSync;
using test::waitUntil;

// One worker thread that runs what it is given, in order: the "database"
// an asynchronous handler hands its request to.
class Worker {
 public:
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cond_.notify_all();
    thread_.join();
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cond_.notify_all();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cond_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable cond_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::map<std::string, std::string> trailers;  // of a chunked body; names lower-cased
  bool whole =
      false;  // the framing's end was seen (length, last chunk, or EOF when close-delimited)

  [[nodiscard]] std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// Reads HTTP/1.1 answers off a raw socket: Content-Length, chunked, or up
// to the close; keeps what follows one answer for the next.
class AnswerReader {
 public:
  explicit AnswerReader(BlockingClient* client) : client_(client) {}

  Answer next(bool headOnly = false) {
    Answer a;
    size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return a;
    }
    parseHead(pending_.substr(0, end), &a);
    pending_.erase(0, end + 4);
    if (headOnly || a.status == 204 || a.status == 304) {
      a.whole = true;
    } else if (!a.header("content-length").empty()) {
      const size_t n = std::stoul(a.header("content-length"));
      if (!need(n)) return a;
      a.body = pending_.substr(0, n);
      pending_.erase(0, n);
      a.whole = true;
    } else if (a.header("transfer-encoding") == "chunked") {
      a.whole = readChunks(&a.body, &a.trailers);
    } else {
      while (fill()) {
      }
      a.body = std::move(pending_);
      pending_.clear();
      a.whole = eof_;
    }
    return a;
  }

  bool closedByServer() {
    while (fill()) {
    }
    return eof_;
  }
  [[nodiscard]] const std::string& pending() const { return pending_; }

 private:
  static void addField(const std::string& line, std::map<std::string, std::string>* fields) {
    const size_t colon = line.find(':');
    std::string name = line.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    (*fields)[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }

  static void parseHead(const std::string& head, Answer* a) {
    size_t lineEnd = head.find("\r\n");
    a->status = std::stoi(head.substr(9, 3));
    while (lineEnd != std::string::npos) {
      const size_t start = lineEnd + 2;
      lineEnd = head.find("\r\n", start);
      addField(
          head.substr(start, lineEnd == std::string::npos ? std::string::npos : lineEnd - start),
          &a->headers);
    }
  }

  bool readChunks(std::string* body, std::map<std::string, std::string>* trailers) {
    for (;;) {
      size_t lineEnd;
      while ((lineEnd = pending_.find("\r\n")) == std::string::npos) {
        if (!fill()) return false;
      }
      const size_t size = std::stoul(pending_.substr(0, lineEnd), nullptr, 16);
      pending_.erase(0, lineEnd + 2);
      if (size == 0) return readTrailers(trailers);
      if (!need(size + 2)) return false;
      if (pending_.compare(size, 2, "\r\n") != 0) return false;
      body->append(pending_, 0, size);
      pending_.erase(0, size + 2);
    }
  }

  // The trailer section after the last chunk, to its empty line.
  bool readTrailers(std::map<std::string, std::string>* trailers) {
    for (;;) {
      size_t lineEnd;
      while ((lineEnd = pending_.find("\r\n")) == std::string::npos) {
        if (!fill()) return false;
      }
      const std::string line = pending_.substr(0, lineEnd);
      pending_.erase(0, lineEnd + 2);
      if (line.empty()) return true;
      addField(line, trailers);
    }
  }

  bool need(size_t n) {
    while (pending_.size() < n) {
      if (!fill()) return false;
    }
    return true;
  }

  bool fill() {
    char buf[65536];
    ssize_t n;
    do {
      n = ::recv(client_->fd(), buf, sizeof buf, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0) eof_ = true;
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
    return true;
  }

  BlockingClient* client_;
  std::string pending_;
  bool eof_ = false;
};

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

HttpResponse okWith(std::string body) {
  HttpResponse response(false);
  response.setBody(std::move(body));
  return response;
}

// A thread-safe slot for the writer a handler keeps for the test to use.
class WriterSlot {
 public:
  void put(ResponseWriterPtr writer) {
    std::lock_guard<std::mutex> lock(mutex_);
    writers_.push_back(std::move(writer));
  }
  // Waits (bounded) for the n-th writer handed over.
  ResponseWriterPtr wait(size_t n = 0) {
    ResponseWriterPtr writer;
    waitUntil([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      if (writers_.size() <= n) return false;
      writer = writers_[n];
      return true;
    });
    return writer;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    writers_.clear();
  }

 private:
  std::mutex mutex_;
  std::vector<ResponseWriterPtr> writers_;
};

class HttpServerAsyncTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "http", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    // The server first (no handler runs after it), then the worker (its
    // tasks find the writers' gate closed).
    if (server_) runSync(loop_, [&] { server_.reset(); });
    worker_.reset();
    kept_.clear();
    thread_.reset();
  }

  void startServer(HttpServer::Options options = {}, int threads = 0) {
    options.threads = threads;
    runSync(loop_, [&] {
      server_ = std::make_unique<HttpServer>(loop_, InetAddress(0, true), "async", options);
      server_->setAsyncHandler(
          [this](const HttpRequest& request, ResponseWriterPtr writer) { route(request, writer); });
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  // The routes every test shares; the loop thread.
  void route(const HttpRequest& request, const ResponseWriterPtr& writer) {
    const std::string path = request.path();
    if (path == "/now") {
      writer->respond(okWith("now"));
    } else if (path == "/later") {
      worker_->post([writer] { writer->respond(okWith("later")); });
    } else if (path == "/keep") {
      kept_.put(writer);  // the test answers
    } else if (path == "/drop") {
      // the writer goes when the handler returns
    } else if (path == "/throw-before") {
      throw 42;
    } else if (path == "/throw-after") {
      writer->start(HttpResponse(false));
      writer->write("part");
      throw std::runtime_error("after start");
    } else if (path == "/stream" || path == "/stream-length") {
      const bool length = path == "/stream-length";
      worker_->post([this, writer, length] { stream(writer, length); });
    } else {
      writer->respond(okWith("other"));
    }
  }

  // /stream: kPieces pieces of streamed_, chunked or with its length.
  void stream(const ResponseWriterPtr& writer, bool withLength) {
    HttpResponse head(false);
    head.setContentType("application/octet-stream");
    if (withLength) head.setContentLength(streamed_.size());
    writer->start(std::move(head));
    const size_t piece = streamed_.size() / kPieces;
    for (size_t i = 0; i < kPieces; ++i) writer->write(streamed_.substr(i * piece, piece));
    writer->finish();
  }

  // GET `path` with the library's client; the response, or an error.
  FetchResult fetch(const std::string& path) {
    EventLoopThread clientThread(nullptr, "client", GetParam());
    EventLoop* clientLoop = clientThread.startLoop();
    std::promise<FetchResult> done;
    std::future<FetchResult> result = done.get_future();
    auto client = runSync(clientLoop, [&] {
      auto c = std::make_shared<HttpClient>(clientLoop, HttpClient::Options{});
      c->request({.url = "http://" + address_.toIpPort() + path},
                 [&done](FetchResult r) { done.set_value(std::move(r)); });
      return c;
    });
    EXPECT_EQ(result.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    runSync(clientLoop, [&] { client.reset(); });
    return result.get();
  }

  static constexpr size_t kPieces = 64;
  const std::string streamed_ = randomBytes(kPieces * 4096, 3);
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<Worker> worker_ = std::make_unique<Worker>();
  WriterSlot kept_;
  std::unique_ptr<HttpServer> server_;
  SocketAddress address_;
};

TEST_P(HttpServerAsyncTest, AnswersFromAnotherThreadAfterTheHandlerReturned) {
  startServer();
  BlockingClient client(address_);
  AnswerReader reader(&client);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.sendAll(get(i == 1 ? "/now" : "/later")));
    const Answer a = reader.next();
    ASSERT_TRUE(a.whole) << i;
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, i == 1 ? "now" : "later");
    EXPECT_EQ(a.header("content-length"), i == 1 ? "3" : "5");
    EXPECT_NE(a.header("connection"), "close");
  }
}

TEST_P(HttpServerAsyncTest, StreamedBodiesReadBackByteExact) {
  startServer();
  for (const char* path : {"/stream", "/stream-length"}) {
    FetchResult r = fetch(path);
    ASSERT_TRUE(r.ok()) << path << ": " << r.errorMessage();
    EXPECT_EQ(r.response().status, 200);
    EXPECT_TRUE(r.response().body == streamed_) << path << ": " << r.response().body.size();
    const auto encoding = r.response().header("Transfer-Encoding");
    const auto length = r.response().header("Content-Length");
    if (std::string_view(path) == "/stream") {
      EXPECT_EQ(encoding.value_or(""), "chunked");
      EXPECT_FALSE(length.has_value());
    } else {
      EXPECT_FALSE(encoding.has_value());
      EXPECT_EQ(length.value_or(""), std::to_string(streamed_.size()));
    }
  }
}

TEST_P(HttpServerAsyncTest, HeadAndNoContentCarryNoBody) {
  startServer();
  BlockingClient client(address_);
  AnswerReader reader(&client);
  ASSERT_TRUE(client.sendAll("HEAD /keep HTTP/1.1\r\nHost: t\r\n\r\n"));
  ResponseWriterPtr writer = kept_.wait();
  ASSERT_TRUE(writer);
  writer->start(HttpResponse(false));
  writer->write("never sent");
  writer->finish();
  Answer a = reader.next(/*headOnly=*/true);
  EXPECT_EQ(a.status, 200);
  ASSERT_TRUE(client.sendAll(get("/keep")));
  writer = kept_.wait(1);
  ASSERT_TRUE(writer);
  HttpResponse noContent(false);
  noContent.setStatus(204);
  writer->start(std::move(noContent));
  writer->write("never sent");
  writer->finish();
  a = reader.next();
  EXPECT_EQ(a.status, 204);
  EXPECT_EQ(a.header("transfer-encoding"), "");
  // Nothing of either body came: the next answer follows at once.
  ASSERT_TRUE(client.sendAll(get("/now")));
  a = reader.next();
  EXPECT_EQ(a.body, "now");
}

TEST_P(HttpServerAsyncTest, Http10StreamEndsWithTheConnection) {
  startServer();
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll("GET /stream HTTP/1.0\r\n\r\n"));
  AnswerReader reader(&client);
  const Answer a = reader.next();
  EXPECT_TRUE(a.whole);
  EXPECT_EQ(a.header("transfer-encoding"), "");
  EXPECT_EQ(a.header("connection"), "close");
  EXPECT_TRUE(a.body == streamed_) << a.body.size();
}

TEST_P(HttpServerAsyncTest, PipelinedRequestsBehindAPendingAnswerComeBackInOrder) {
  startServer();
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(get("/now") + get("/keep") + get("/now") + get("/later")));
  ResponseWriterPtr writer = kept_.wait();
  ASSERT_TRUE(writer);
  AnswerReader reader(&client);
  Answer a = reader.next();
  EXPECT_EQ(a.body, "now");
  // The rest waits for /keep.
  char byte;
  EXPECT_EQ(::recv(client.fd(), &byte, 1, MSG_DONTWAIT), -1);
  worker_->post([writer] {
    HttpResponse head(false);
    writer->start(std::move(head));
    writer->write("kept ");
    writer->write("answer");
    writer->finish();
  });
  a = reader.next();
  EXPECT_TRUE(a.whole);
  EXPECT_EQ(a.body, "kept answer");
  a = reader.next();
  EXPECT_EQ(a.body, "now");
  a = reader.next();
  EXPECT_EQ(a.body, "later");
  EXPECT_TRUE(a.whole);
}

TEST_P(HttpServerAsyncTest, AbortAndDroppedWritersNeverPassAHalfAnswerOffAsWhole) {
  startServer();
  {  // abort before start: a 500
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/keep")));
    kept_.wait()->abort();
    AnswerReader reader(&client);
    const Answer a = reader.next();
    EXPECT_EQ(a.status, 500);
    EXPECT_TRUE(reader.closedByServer());
  }
  kept_.clear();
  {  // abort after start: the chunked body never ends
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/keep")));
    ResponseWriterPtr writer = kept_.wait();
    writer->start(HttpResponse(false));
    writer->write("half");
    writer->abort();
    EXPECT_TRUE(waitUntil([&] { return writer->closed(); }));
    EXPECT_FALSE(writer->write("more"));
    AnswerReader reader(&client);
    const Answer a = reader.next();
    EXPECT_FALSE(a.whole);  // no last chunk
    EXPECT_EQ(a.body, "half");
    EXPECT_TRUE(reader.closedByServer());
  }
  kept_.clear();
  {  // dropped without a word: a 500
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/drop")));
    AnswerReader reader(&client);
    EXPECT_EQ(reader.next().status, 500);
    EXPECT_TRUE(reader.closedByServer());
  }
  {  // dropped after start, short of its Content-Length
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/keep")));
    ResponseWriterPtr writer = kept_.wait();
    HttpResponse head(false);
    head.setContentLength(100);
    writer->start(std::move(head));
    writer->write("ten bytes.");
    worker_->post([w = std::move(writer)]() mutable { w.reset(); });
    kept_.clear();
    AnswerReader reader(&client);
    const Answer a = reader.next();
    EXPECT_FALSE(a.whole);
    EXPECT_EQ(a.header("content-length"), "100");
    EXPECT_TRUE(reader.closedByServer());
    EXPECT_EQ(reader.pending(), "ten bytes.");
  }
}

TEST_P(HttpServerAsyncTest, TrailersEndAChunkedBodyAndResetCutsOnlyAnUnfinishedAnswer) {
  startServer();
  BlockingClient client(address_);
  AnswerReader reader(&client);
  ASSERT_TRUE(client.sendAll(get("/keep", "TE: trailers\r\n")));
  ResponseWriterPtr writer = kept_.wait();
  writer->start(HttpResponse(false));
  writer->write("abc");
  writer->finish({{"X-Checksum", "abc"}, {"X-Split\r\nInjected", "v\r\nalue"}});
  Answer a = reader.next();
  ASSERT_TRUE(a.whole);
  EXPECT_EQ(a.body, "abc");
  const std::map<std::string, std::string> trailers = {{"x-checksum", "abc"},
                                                       {"x-split  injected", "v  alue"}};
  EXPECT_EQ(a.trailers, trailers);
  kept_.clear();
  // With a Content-Length there is no place for them: dropped, the answer whole.
  ASSERT_TRUE(client.sendAll(get("/keep")));
  writer = kept_.wait();
  HttpResponse head(false);
  head.setContentLength(3);
  writer->start(std::move(head));
  writer->write("xyz");
  writer->finish({{"X-Checksum", "xyz"}});
  a = reader.next();
  ASSERT_TRUE(a.whole);
  EXPECT_EQ(a.body, "xyz");
  EXPECT_TRUE(a.trailers.empty());
  // reset() of a complete answer does nothing: the connection serves on.
  writer->reset(0x8);
  kept_.clear();
  ASSERT_TRUE(client.sendAll(get("/now")));
  a = reader.next();
  EXPECT_EQ(a.body, "now");
  // reset() before the head: the connection closes, no 500 made up.
  ASSERT_TRUE(client.sendAll(get("/keep")));
  kept_.wait()->reset(0x8);
  EXPECT_TRUE(reader.closedByServer());
  EXPECT_EQ(reader.pending(), "");
}

TEST_P(HttpServerAsyncTest, ThrowingHandlerIs500BeforeTheAnswerAndACutAfter) {
  startServer();
  {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/throw-before")));
    AnswerReader reader(&client);
    const Answer a = reader.next();
    EXPECT_EQ(a.status, 500);
    EXPECT_EQ(a.header("connection"), "close");
    EXPECT_TRUE(reader.closedByServer());
  }
  {
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/throw-after")));
    AnswerReader reader(&client);
    const Answer a = reader.next();
    EXPECT_EQ(a.status, 200);
    EXPECT_FALSE(a.whole);
    EXPECT_TRUE(reader.closedByServer());
  }
}

// The client's receive buffer is small and it reads nothing at first: the
// writer must be told to stop (write() false) with its queue bounded, and
// told to go on (the writable callback) once the client reads.
TEST_P(HttpServerAsyncTest, ClientThatDoesNotReadHoldsTheWriterBack) {
  HttpServer::Options options;
  options.writer = {.highWater = 64 * 1024, .lowWater = 16 * 1024, .maxQueued = 0};
  startServer(options);
  BlockingClient client(address_, 4096);
  ASSERT_TRUE(client.sendAll(get("/keep")));
  ResponseWriterPtr writer = kept_.wait();
  ASSERT_TRUE(writer);
  constexpr size_t kPiece = 16 * 1024;
  constexpr size_t kFraming = 64;  // a chunk's size line and CRLF
  constexpr size_t kTotal = 32 * 1024 * 1024;
  std::atomic<int> writable{0};
  std::atomic<size_t> maxQueued{0};
  std::atomic<size_t> written{0};
  std::atomic<bool> held{false};
  std::atomic<bool> finished{false};
  // The producer, on the worker: writes until told to stop, then waits for
  // the writable callback to call it again.
  auto produce = std::make_shared<std::function<void()>>();
  *produce = [&, writer] {
    while (written < kTotal) {
      const size_t at = written;
      std::string piece(kPiece, static_cast<char>('a' + at / kPiece % 26));
      written += kPiece;
      const bool more = writer->write(std::move(piece));
      maxQueued = std::max<size_t>(maxQueued, writer->queuedBytes());
      if (!more) {
        held = true;
        return;
      }
    }
    writer->finish();
    finished = true;
  };
  writer->setWritableCallback([&, produce] {
    ++writable;
    worker_->post(*produce);
  });
  writer->start(HttpResponse(false));
  worker_->post(*produce);
  ASSERT_TRUE(waitUntil([&] { return held.load(); }));
  EXPECT_LT(written.load(), kTotal) << "never held back";
  EXPECT_LE(maxQueued.load(), 64 * 1024 + kPiece + kFraming);
  // Now read it all.
  AnswerReader reader(&client);
  const Answer a = reader.next();
  ASSERT_TRUE(a.whole);
  EXPECT_EQ(a.body.size(), kTotal);
  EXPECT_GE(writable.load(), 1);
  EXPECT_TRUE(finished.load());
  bool exact = true;
  for (size_t i = 0; i < a.body.size() && exact; i += kPiece) {
    exact = a.body[i] == static_cast<char>('a' + i / kPiece % 26);
  }
  EXPECT_TRUE(exact);
  EXPECT_LE(maxQueued.load(), 64 * 1024 + kPiece + kFraming);
  // The producer's captures (this scope's) go before they do.
  runSync(loop_, [&] { server_.reset(); });
  worker_.reset();
}

TEST_P(HttpServerAsyncTest, WriterPastMaxQueuedIsCutOff) {
  HttpServer::Options options;
  options.writer = {.highWater = 16 * 1024, .lowWater = 4 * 1024, .maxQueued = 256 * 1024};
  startServer(options);
  BlockingClient client(address_, 4096);
  ASSERT_TRUE(client.sendAll(get("/keep")));
  ResponseWriterPtr writer = kept_.wait();
  std::atomic<bool> closed{false};
  writer->setClosedCallback([&] { closed = true; });
  writer->start(HttpResponse(false));
  // Ignores back-pressure: past maxQueued it is cut off.
  for (int i = 0; i < 4096 && !writer->closed(); ++i) {
    writer->write(std::string(64 * 1024, 'x'));
    waitUntil([&] { return writer->queuedBytes() < 1024 * 1024 || writer->closed(); });
  }
  EXPECT_TRUE(waitUntil([&] { return closed.load(); }));
  EXPECT_TRUE(writer->closed());
  EXPECT_FALSE(writer->write("more"));
}

TEST_P(HttpServerAsyncTest, ClientThatLeavesMidAnswerReachesTheClosedCallback) {
  startServer();
  for (const bool reset : {false, true}) {
    kept_.clear();
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/keep")));
    ResponseWriterPtr writer = kept_.wait();
    ASSERT_TRUE(writer);
    std::atomic<int> closed{0};
    writer->setClosedCallback([&] { ++closed; });
    writer->start(HttpResponse(false));
    EXPECT_TRUE(writer->write("first piece"));
    AnswerReader reader(&client);
    if (reset) {
      client.resetConnection();
    } else {
      client.close();
    }
    ASSERT_TRUE(waitUntil([&] { return closed.load() == 1; })) << reset;
    EXPECT_TRUE(writer->closed());
    EXPECT_FALSE(writer->write("after"));
    writer->finish();
    runSync(loop_, [] {});  // whatever the writer queued has run
    EXPECT_EQ(closed.load(), 1);
  }
}

TEST_P(HttpServerAsyncTest, PendingAnswerIsNotIdleButItsClientLeavingIsNoticed) {
  HttpServer::Options options;
  options.idleTimeout = std::chrono::milliseconds(200);
  startServer(options);
  BlockingClient waiting(address_);
  ASSERT_TRUE(waiting.sendAll(get("/keep")));
  ResponseWriterPtr writer = kept_.wait();
  ASSERT_TRUE(writer);
  // An idle connection opened after it is closed by the timeout...
  BlockingClient idle(address_);
  AnswerReader idleReader(&idle);
  EXPECT_TRUE(idleReader.closedByServer());
  // ... while the one waiting for its answer is still there.
  EXPECT_FALSE(writer->closed());
  writer->respond(okWith("worth the wait"));
  AnswerReader reader(&waiting);
  const Answer a = reader.next();
  EXPECT_EQ(a.body, "worth the wait");
}

TEST_P(HttpServerAsyncTest, DrainFinishesAPendingAnswerThenCloses) {
  startServer();
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(get("/keep")));
  ResponseWriterPtr writer = kept_.wait();
  ASSERT_TRUE(writer);
  std::atomic<bool> drained{false};
  runSync(loop_, [&] { server_->drain(std::chrono::seconds(10), [&] { drained = true; }); });
  EXPECT_FALSE(writer->closed());
  EXPECT_FALSE(drained.load());
  writer->start(HttpResponse(false));
  writer->write("during the drain");
  writer->finish();
  AnswerReader reader(&client);
  const Answer a = reader.next();
  EXPECT_TRUE(a.whole);
  EXPECT_EQ(a.body, "during the drain");
  // Connection: close in the head when the drain reached the connection
  // before start() (it reaches it once the listeners have stopped, which on
  // io_uring may come after), and the close in every case.
  EXPECT_TRUE(reader.closedByServer());
  client.close();
  EXPECT_TRUE(waitUntil([&] { return drained.load(); }));
}

TEST_P(HttpServerAsyncTest, DrainDeadlineCutsAPendingAnswer) {
  startServer();
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(get("/keep")));
  ResponseWriterPtr writer = kept_.wait();
  ASSERT_TRUE(writer);
  std::atomic<bool> closed{false};
  writer->setClosedCallback([&] { closed = true; });
  std::atomic<bool> drained{false};
  runSync(loop_, [&] { server_->drain(std::chrono::milliseconds(50), [&] { drained = true; }); });
  EXPECT_TRUE(waitUntil([&] { return drained.load() && closed.load(); }));
  AnswerReader reader(&client);
  EXPECT_TRUE(reader.closedByServer());
}

TEST_P(HttpServerAsyncTest, ServerDestroyedWhileAnotherThreadHoldsAWriter) {
  for (const int threads : {0, 2}) {
    kept_.clear();
    startServer({}, threads);
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(get("/keep")));
    ResponseWriterPtr writer = kept_.wait();
    ASSERT_TRUE(writer);
    std::atomic<bool> stop{false};
    // Another thread keeps writing while the server goes.
    std::thread writing([&] {
      writer->start(HttpResponse(false));
      while (!stop && writer->write(std::string(4096, 'x'))) {
      }
    });
    runSync(loop_, [&] { server_.reset(); });
    stop = true;
    writing.join();
    EXPECT_FALSE(writer->write("after the server"));
    writer->finish();
    writer->abort();
    writer.reset();
    kept_.clear();  // the last owner lets go: nothing to do
    runSync(loop_, [] {});
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HttpServerAsyncTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         test::pollerName);

}  // namespace
}  // namespace libnet::http
