// async_server: HttpServer with answers that come later
// (HttpServer::setAsyncHandler, docs/http-server.md). The handler returns at
// once; a pool of worker threads (the stand-in for a database or another
// service) answers:
//   GET /hello           at once, on the loop (respond() inside the handler)
//   GET /later?ms=N      from a worker, N milliseconds later (default 100)
//   GET /stream?n=N      N lines streamed from a worker, chunked, under
//                        back-pressure: the worker stops when write() says
//                        false and goes on from the writable callback
//
// With --h2c the same handler answers HTTP/2 with prior knowledge too.
//
//   async_server --port 8080 --workers 4 --h2c
//   curl -N 'http://127.0.0.1:8080/stream?n=100000' | tail -1
//   curl --http2-prior-knowledge 'http://127.0.0.1:8080/later?ms=500'
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/Logging.h"
#include "base/SignalMask.h"
#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/http/HttpServer.h"
#include "net/http2/Http2Server.h"

using libnet::http::HttpRequest;
using libnet::http::HttpResponse;
using libnet::http::ResponseWriterPtr;

namespace {

// Worker threads that run what they are posted, in no particular order.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        // Process signals are the main thread's (its SignalSet).
        libnet::blockAsyncSignalsInThisThread();
        run();
      });
    }
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cond_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cond_.notify_one();
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
  std::vector<std::thread> threads_;
};

// The number after "name=" in a query string, or `fallback`.
long queryNumber(std::string_view query, std::string_view name, long fallback) {
  const std::string key = std::string(name) + "=";
  const size_t at = query.find(key);
  if (at == std::string_view::npos || (at > 0 && query[at - 1] != '&')) return fallback;
  long value = fallback;
  const char* begin = query.data() + at + key.size();
  std::from_chars(begin, query.data() + query.size(), value);
  return value;
}

// One /stream answer: writes lines until the writer says stop, then waits
// for the writable callback to post it again. The writer's callbacks hold
// it (and it holds the writer) until the answer ends; ending, it lets them
// go, which breaks that cycle.
class LineStreamer : public std::enable_shared_from_this<LineStreamer> {
 public:
  LineStreamer(ResponseWriterPtr writer, long lines, WorkerPool* pool)
      : writer_(std::move(writer)), lines_(lines), pool_(pool) {}

  void begin() {
    auto self = shared_from_this();
    writer_->setWritableCallback([self] { self->pool_->post([self] { self->run(); }); });
    writer_->setClosedCallback([self] { self->release(); });
    HttpResponse head(false);
    head.setContentType("text/plain");
    writer_->start(std::move(head));  // no length: chunked
    run();
  }

 private:
  void run() {
    while (next_ < lines_) {
      if (writer_->closed()) return;
      // Lines go out in pieces of about 16 KiB: a write per line would be a
      // chunk (or a DATA frame) per line.
      std::string piece;
      while (next_ < lines_ && piece.size() < 16 * 1024) {
        piece += "line " + std::to_string(next_++) + "\n";
      }
      if (!writer_->write(std::move(piece))) return;
    }
    writer_->finish();
    release();
  }
  void release() {
    writer_->setWritableCallback(nullptr);
    writer_->setClosedCallback(nullptr);
  }

  const ResponseWriterPtr writer_;
  const long lines_;
  long next_ = 0;  // one worker at a time runs it: the callback posts it once
  WorkerPool* const pool_;
};

void route(const HttpRequest& request, const ResponseWriterPtr& writer, WorkerPool* pool) {
  if (request.path() == "/hello") {
    HttpResponse response(false);
    response.setContentType("text/plain");
    response.setBody("hello world\n");
    writer->respond(std::move(response));
  } else if (request.path() == "/later") {
    const long ms = queryNumber(request.query(), "ms", 100);
    pool->post([writer, ms] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));  // the "database"
      HttpResponse response(false);
      response.setContentType("text/plain");
      response.setBody("answered " + std::to_string(ms) + " ms later\n");
      writer->respond(std::move(response));
    });
  } else if (request.path() == "/stream") {
    const long lines = queryNumber(request.query(), "n", 10);
    auto streamer = std::make_shared<LineStreamer>(writer, lines, pool);
    pool->post([streamer] { streamer->begin(); });
  } else {
    HttpResponse response(false);
    response.setStatusPage(404);
    writer->respond(std::move(response));
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string address = "0.0.0.0";
  uint16_t port = 8080;
  int threads = 0;
  int workers = 4;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  bool h2c = false;
  libnet::Flags flags("async_server",
                      "usage: async_server [--address IP] [--port N] [--threads N] [--workers N] "
                      "[--backend epoll|uring|auto] [--h2c]\n"
                      "GET /hello, /later?ms=N (a worker answers), /stream?n=N (N lines "
                      "streamed by a worker)\n");
  flags.addAddress("--address", &address);
  flags.addPort("--port", &port);
  flags.addInt("--threads", &threads, 0, 256);
  flags.addInt("--workers", &workers, 1, 256);
  flags.addBackend("--backend", &backend);
  flags.addSwitch("--h2c", &h2c);
  if (const std::optional<int> exit = flags.parse(argc, argv)) return *exit;

  WorkerPool pool(workers);
  libnet::EventLoop loop(backend);
  libnet::http::HttpServer server(&loop, *libnet::InetAddress::parse(address, port), "async",
                                  {.threads = threads});
  server.setAsyncHandler([&pool](const HttpRequest& request, ResponseWriterPtr writer) {
    route(request, writer, &pool);
  });
  std::shared_ptr<libnet::http2::Service> h2;
  if (h2c) h2 = libnet::http2::serve(server, {});
  // SIGINT / SIGTERM: answers under way are finished (5 s at most).
  libnet::SignalSet signals(&loop, {SIGINT, SIGTERM}, [&](int) {
    server.drain(std::chrono::seconds(5), [&loop] { loop.quit(); });
  });
  server.start();
  std::printf("async_server listening on %s\n", server.listenAddress().toIpPort().c_str());
  std::fflush(stdout);
  loop.loop();
}
