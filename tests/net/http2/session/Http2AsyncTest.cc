// Answers that come later over HTTP/2 (HttpServer::setAsyncHandler served by
// http2::serve()), over loopback sockets, on every backend: an answer from
// another thread, a body streamed as DATA frames, RST_STREAM from the client
// and the connection's close reaching the closed callback, a stream window
// of zero holding the writer back until WINDOW_UPDATE, abort as RST_STREAM
// INTERNAL_ERROR (or a 500 before the head), a throwing handler, and a
// writer held by another thread while the server goes. The frames are read
// off the socket as the client receives them.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "net/http2/Http2Server.h"
#include "tests/net/TestUtil.h"
#include "tests/net/http2/session/H2Peer.h"

namespace libnet::http2 {
namespace {

using libnet::test::BlockingClient;
using libnet::test::runSync;
using libnet::test::waitUntil;
using test::frame;
using test::Frame;
using test::FrameReader;

bool endsStream(const Frame& f, int32_t stream) {
  return f.stream == stream && (f.flags & NGHTTP2_FLAG_END_STREAM) != 0 &&
         (f.type == NGHTTP2_DATA || f.type == NGHTTP2_HEADERS);
}

bool resets(const Frame& f, int32_t stream) {
  return f.stream == stream && f.type == NGHTTP2_RST_STREAM;
}

std::string bodyOf(const std::vector<Frame>& frames, int32_t stream) {
  std::string body;
  for (const Frame& f : frames) {
    if (f.type == NGHTTP2_DATA && f.stream == stream) body += f.payload;
  }
  return body;
}

uint32_t word(std::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  return v;
}

std::string be32(uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  return out;
}

std::string get(int32_t stream, const std::string& path) {
  return frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, stream,
               test::getBlock(path));
}

// A field of the first HEADERS of `stream`, decoded ("" if absent).
std::string fieldOf(const std::vector<Frame>& frames, int32_t stream, std::string_view name);

int statusOf(const std::vector<Frame>& frames, int32_t stream) {
  const std::string status = fieldOf(frames, stream, ":status");
  return status.empty() ? 0 : std::stoi(status);
}

std::string fieldOf(const std::vector<Frame>& frames, int32_t stream, std::string_view name) {
  for (const Frame& f : frames) {
    if (f.type != NGHTTP2_HEADERS || f.stream != stream) continue;
    nghttp2_hd_inflater* inflater = nullptr;
    nghttp2_hd_inflate_new(&inflater);
    auto* in = reinterpret_cast<const uint8_t*>(f.payload.data());
    size_t left = f.payload.size();
    std::string found;
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      const ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, in, left, 1);
      if (n < 0) break;
      in += n;
      left -= static_cast<size_t>(n);
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0 &&
          std::string_view(reinterpret_cast<char*>(nv.name), nv.namelen) == name) {
        found.assign(reinterpret_cast<char*>(nv.value), nv.valuelen);
      }
      if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) break;
      if (n == 0 && left == 0) break;
    }
    nghttp2_hd_inflate_del(inflater);
    return found;
  }
  return "";
}

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

class Http2AsyncTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "h2", GetParam());
    loop_ = thread_->startLoop();
  }

  void TearDown() override {
    // The server first (no handler runs after it), then the worker.
    if (server_) runSync(loop_, [&] { server_.reset(); });
    worker_.reset();
    {
      std::lock_guard<std::mutex> lock(keptMutex_);
      kept_.clear();
    }
    thread_.reset();
  }

  void startServer(http::HttpServer::Options options = {}) {
    runSync(loop_, [&] {
      server_ = std::make_unique<http::HttpServer>(loop_, InetAddress(0, true), "h2", options);
      server_->setAsyncHandler(
          [this](const http::HttpRequest& request, http::ResponseWriterPtr writer) {
            route(request.path(), writer);
          });
      service_ = serve(*server_, {});
      server_->start();
    });
    address_ = runSync(loop_, [&] { return server_->listenAddress(); });
  }

  void route(const std::string& path, const http::ResponseWriterPtr& writer) {
    if (path == "/later") {
      worker_->post([writer] {
        http::HttpResponse response(false);
        response.setBody("later");
        writer->respond(std::move(response));
      });
    } else if (path == "/stream") {
      worker_->post([this, writer] {
        writer->start(http::HttpResponse(false));
        for (int i = 0; i < 40; ++i) writer->write(streamed_.substr(i * 4096, 4096));
        writer->finish();
      });
    } else if (path == "/throw") {
      throw 7;
    } else {
      std::lock_guard<std::mutex> lock(keptMutex_);
      kept_.push_back(writer);
    }
  }

  http::ResponseWriterPtr keptWriter(size_t n = 0) {
    http::ResponseWriterPtr writer;
    waitUntil([&] {
      std::lock_guard<std::mutex> lock(keptMutex_);
      if (kept_.size() <= n) return false;
      writer = kept_[n];
      return true;
    });
    return writer;
  }

  const std::string streamed_ = libnet::test::randomBytes(40 * 4096, 5);
  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<Worker> worker_ = std::make_unique<Worker>();
  std::mutex keptMutex_;
  std::vector<http::ResponseWriterPtr> kept_;
  std::unique_ptr<http::HttpServer> server_;
  std::shared_ptr<Service> service_;
  SocketAddress address_;
};

TEST_P(Http2AsyncTest, AnswersLaterAndStreamsDataFrames) {
  startServer();
  BlockingClient client(address_);
  // Windows large enough for the whole streamed body.
  const std::string bigWindow = std::string("\x00\x04", 2) + be32(1 << 24);
  ASSERT_TRUE(client.sendAll(
      std::string(test::kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, bigWindow) +
      frame(NGHTTP2_WINDOW_UPDATE, 0, 0, be32(1 << 24)) + get(1, "/later") + get(3, "/stream")));
  FrameReader reader(client.fd());
  bool one = false;
  bool three = false;
  const auto frames = reader.until([&](const Frame& f) {
    one = one || endsStream(f, 1);
    three = three || endsStream(f, 3);
    return one && three;
  });
  ASSERT_TRUE(one && three);
  EXPECT_EQ(statusOf(frames, 1), 200);
  EXPECT_EQ(bodyOf(frames, 1), "later");
  EXPECT_EQ(fieldOf(frames, 1, "content-length"), "5");
  EXPECT_EQ(fieldOf(frames, 3, "content-length"), "");  // streamed: no length
  EXPECT_EQ(statusOf(frames, 3), 200);
  EXPECT_TRUE(bodyOf(frames, 3) == streamed_) << bodyOf(frames, 3).size();
}

TEST_P(Http2AsyncTest, ResetFromTheClientReachesTheClosedCallback) {
  startServer();
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(test::prefaceAndSettings() + get(1, "/keep")));
  http::ResponseWriterPtr writer = keptWriter();
  ASSERT_TRUE(writer);
  std::atomic<int> closed{0};
  writer->setClosedCallback([&] { ++closed; });
  writer->start(http::HttpResponse(false));
  EXPECT_TRUE(writer->write("first"));
  FrameReader reader(client.fd());
  const auto first =
      reader.until([](const Frame& f) { return f.type == NGHTTP2_DATA && f.stream == 1; });
  EXPECT_EQ(bodyOf(first, 1), "first");
  ASSERT_TRUE(client.sendAll(frame(NGHTTP2_RST_STREAM, 0, 1, be32(NGHTTP2_CANCEL))));
  ASSERT_TRUE(waitUntil([&] { return closed.load() == 1; }));
  EXPECT_TRUE(writer->closed());
  EXPECT_FALSE(writer->write("after"));
  writer->finish();
  // The connection serves on.
  ASSERT_TRUE(client.sendAll(get(3, "/later")));
  const auto frames = reader.until([](const Frame& f) { return endsStream(f, 3); });
  EXPECT_EQ(bodyOf(frames, 3), "later");
  EXPECT_EQ(closed.load(), 1);
}

TEST_P(Http2AsyncTest, ConnectionCloseReachesTheClosedCallback) {
  startServer();
  auto client = std::make_unique<BlockingClient>(address_);
  ASSERT_TRUE(client->sendAll(test::prefaceAndSettings() + get(1, "/keep")));
  http::ResponseWriterPtr writer = keptWriter();
  ASSERT_TRUE(writer);
  std::atomic<bool> closed{false};
  writer->setClosedCallback([&] { closed = true; });
  client.reset();
  ASSERT_TRUE(waitUntil([&] { return closed.load(); }));
  EXPECT_FALSE(writer->write("after"));
}

// The client's stream window is zero: nothing can be framed, so the writer
// is held back with its bytes bounded; a WINDOW_UPDATE lets it go on.
TEST_P(Http2AsyncTest, ZeroWindowHoldsTheWriterBackUntilWindowUpdate) {
  http::HttpServer::Options options;
  options.writer = {.highWater = 32 * 1024, .lowWater = 8 * 1024, .maxQueued = 0};
  startServer(options);
  BlockingClient client(address_);
  const std::string zeroWindow =
      std::string("\x00\x04", 2) + be32(0);  // SETTINGS_INITIAL_WINDOW_SIZE = 0
  ASSERT_TRUE(client.sendAll(std::string(test::kPreface) +
                             frame(NGHTTP2_SETTINGS, 0, 0, zeroWindow) + get(1, "/keep")));
  http::ResponseWriterPtr writer = keptWriter();
  ASSERT_TRUE(writer);
  constexpr size_t kPiece = 4096;
  std::atomic<int> writable{0};
  writer->setWritableCallback([&] { ++writable; });
  writer->start(http::HttpResponse(false));
  size_t written = 0;
  size_t maxQueued = 0;
  while (written < 1024 * 1024 && writer->write(std::string(kPiece, 'w'))) {
    written += kPiece;
    maxQueued = std::max(maxQueued, writer->queuedBytes());
  }
  written += kPiece;
  EXPECT_LT(written, 1024 * 1024U) << "never held back";
  EXPECT_LE(writer->queuedBytes(), 32 * 1024 + kPiece);
  EXPECT_EQ(writable.load(), 0);
  // Open the stream's window (the connection's has 64 KiB already).
  ASSERT_TRUE(client.sendAll(frame(NGHTTP2_WINDOW_UPDATE, 0, 1, be32(1 << 30)) +
                             frame(NGHTTP2_WINDOW_UPDATE, 0, 0, be32(1 << 30))));
  ASSERT_TRUE(waitUntil([&] { return writable.load() >= 1; }));
  writer->write("end");
  writer->finish();
  FrameReader reader(client.fd());
  const auto frames = reader.until([](const Frame& f) { return endsStream(f, 1); });
  const std::string body = bodyOf(frames, 1);
  EXPECT_EQ(body.size(), written + 3);
  EXPECT_TRUE(body.ends_with("wend"));
}

TEST_P(Http2AsyncTest, AbortIsAResetOrA500AndAThrowIsA500) {
  startServer();
  BlockingClient client(address_);
  ASSERT_TRUE(client.sendAll(test::prefaceAndSettings() + get(1, "/keep") + get(3, "/keep") +
                             get(5, "/throw")));
  http::ResponseWriterPtr first = keptWriter(0);
  http::ResponseWriterPtr second = keptWriter(1);
  ASSERT_TRUE(first && second);
  first->start(http::HttpResponse(false));
  first->write("half");
  first->abort();
  second->abort();
  FrameReader reader(client.fd());
  bool reset = false;
  bool answered = false;
  bool thrown = false;
  const auto frames = reader.until([&](const Frame& f) {
    if (resets(f, 1)) {
      reset = true;
      EXPECT_EQ(word(f.payload), static_cast<uint32_t>(NGHTTP2_INTERNAL_ERROR));
    }
    EXPECT_FALSE(endsStream(f, 1)) << "a half answer passed off as whole";
    answered = answered || endsStream(f, 3);
    thrown = thrown || endsStream(f, 5);
    return reset && answered && thrown;
  });
  ASSERT_TRUE(reset && answered && thrown);
  EXPECT_EQ(statusOf(frames, 3), 500);
  EXPECT_EQ(statusOf(frames, 5), 500);
}

TEST_P(Http2AsyncTest, ServerDestroyedWhileAnotherThreadHoldsAWriter) {
  for (const int threads : {0, 2}) {
    {
      std::lock_guard<std::mutex> lock(keptMutex_);
      kept_.clear();
    }
    http::HttpServer::Options options;
    options.threads = threads;
    startServer(options);
    BlockingClient client(address_);
    ASSERT_TRUE(client.sendAll(test::prefaceAndSettings() + get(1, "/keep")));
    http::ResponseWriterPtr writer = keptWriter();
    ASSERT_TRUE(writer);
    std::atomic<bool> stop{false};
    std::thread writing([&] {
      writer->start(http::HttpResponse(false));
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
    std::lock_guard<std::mutex> lock(keptMutex_);
    kept_.clear();  // the last owner lets go: nothing to do
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Http2AsyncTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::http2
