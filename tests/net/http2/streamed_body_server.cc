// streamed_body_server: an HttpServer speaking HTTP/2 (prior knowledge) whose
// router streams request bodies to the handler in pieces
// (HttpServer::Route::kStreamedBody), for h2_body_test.py:
//   POST /upload   the body hashed as it comes; answered "bytes=N fnv=H"
//                  (FNV-1a 64, hex) at its end, the answer aborted if the
//                  body is
//   POST /paused   the same, with its consumer paused until GET /resume
//   POST /early    answered at once, before its body is read
//   POST /throw    its data callback throws (the answer fails: 500)
//   GET  /resume   resumes every paused body
//   GET  /stats    "handled=H completed=C aborted=A paused_received=R"
//   GET  /later?ms=N  answered by a loop timer N ms later (the body whole)
// and, as a gRPC server answers (for h2_trailers_test.py):
//   POST /grpc/echo    each piece of the body written back as it comes, the
//                      head saying the te, grpc-timeout and x-meta-bin fields
//                      received; at the body's end the trailers grpc-status 0,
//                      grpc-message and x-trailer-bin
//   POST /grpc/unimplemented  a trailers-only answer (grpc-status 12)
//   POST /grpc/deadline  "partial", the trailers grpc-status 4, then
//                      RST_STREAM CANCEL while the client still sends
//   GET  /h1/trailers  a chunked body "abc" with the trailer X-Checksum
// /stats also counts "closed=N", the closed callbacks of /grpc/echo.
// --max-streamed N sets maxStreamedBodyBytes; --idle-ms N the idle timeout.
// One loop: the counters are the loop thread's.
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/http/HttpServer.h"
#include "net/http2/Http2Server.h"

using libnet::http::HttpRequest;
using libnet::http::HttpResponse;
using libnet::http::HttpServer;
using libnet::http::RequestBody;
using libnet::http::RequestBodyPtr;
using libnet::http::ResponseWriterPtr;

namespace {

struct Stats {
  int handled = 0;
  int completed = 0;
  int aborted = 0;
  int closed = 0;
  std::vector<RequestBodyPtr> paused;
};

struct Upload {
  uint64_t bytes = 0;
  uint64_t hash = 14695981039346656037ULL;
  void add(std::string_view piece) {
    bytes += piece.size();
    for (const char c : piece) {
      hash ^= static_cast<unsigned char>(c);
      hash *= 1099511628211ULL;
    }
  }
};

void answer(const ResponseWriterPtr& writer, std::string text, int status = 200) {
  HttpResponse response(false);
  response.setStatus(status);
  response.setContentType("text/plain");
  response.setBody(std::move(text));
  writer->respond(std::move(response));
}

HttpResponse grpcHead() {
  HttpResponse head(false);
  head.setContentType("application/grpc");
  return head;
}

void grpcEcho(const HttpRequest& request, const ResponseWriterPtr& writer, Stats* stats) {
  HttpResponse head = grpcHead();
  for (const char* name : {"te", "grpc-timeout", "x-meta-bin"}) {
    head.addHeader(std::string("x-seen-") + name, request.header(name).value_or("(none)"));
  }
  writer->start(std::move(head));
  writer->setClosedCallback([stats] { ++stats->closed; });
  const RequestBodyPtr body = writer->requestBody();
  body->setEndCallback([writer, stats](RequestBody::End end) {
    if (end == RequestBody::End::kAborted) {
      ++stats->aborted;
      return;
    }
    ++stats->completed;
    writer->finish(
        {{"grpc-status", "0"}, {"grpc-message", "echo%20done"}, {"X-Trailer-Bin", "AAEC"}});
  });
  body->setDataCallback([writer](std::string_view piece) { writer->write(std::string(piece)); });
}

// The ways a gRPC server ends a call without a message.
bool grpcOther(std::string_view path, const ResponseWriterPtr& writer) {
  if (path == "/grpc/unimplemented") {
    HttpResponse head = grpcHead();
    head.addHeader("grpc-status", "12");
    head.addHeader("grpc-message", "unknown%20method");
    writer->respondTrailersOnly(std::move(head));
  } else if (path == "/grpc/deadline") {
    writer->start(grpcHead());
    writer->write("partial");
    writer->finish({{"grpc-status", "4"}, {"grpc-message", "deadline"}});
    writer->reset(0x8);  // CANCEL: the client stops sending
  } else if (path == "/h1/trailers") {
    writer->start(HttpResponse(false));
    writer->write("abc");
    writer->finish({{"X-Checksum", "abc"}});
  } else {
    return false;
  }
  return true;
}

void upload(const ResponseWriterPtr& writer, Stats* stats, bool paused) {
  const RequestBodyPtr body = writer->requestBody();
  if (!body) {
    answer(writer, "no streamed body\n", 500);
    return;
  }
  auto state = std::make_shared<Upload>();
  body->setEndCallback([writer, state, stats](RequestBody::End end) {
    if (end == RequestBody::End::kAborted) {
      ++stats->aborted;
      writer->abort();
      return;
    }
    ++stats->completed;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(state->hash));
    answer(writer, "bytes=" + std::to_string(state->bytes) + " fnv=" + hex + "\n");
  });
  if (paused) {
    body->pause();
    stats->paused.push_back(body);
  }
  body->setDataCallback([state](std::string_view piece) { state->add(piece); });
}

long queryNumber(std::string_view query, std::string_view key, long fallback) {
  const size_t at = query.find(key);
  if (at == std::string_view::npos) return fallback;
  long value = fallback;
  std::from_chars(query.data() + at + key.size(), query.data() + query.size(), value);
  return value;
}

void handle(const HttpRequest& request, const ResponseWriterPtr& writer, Stats* stats) {
  ++stats->handled;
  const std::string_view path = request.path();
  if (path == "/grpc/echo") {
    grpcEcho(request, writer, stats);
  } else if (grpcOther(path, writer)) {
  } else if (path == "/upload" || path == "/paused") {
    upload(writer, stats, path == "/paused");
  } else if (path == "/early") {
    writer->requestBody()->setEndCallback([stats](RequestBody::End end) {
      if (end == RequestBody::End::kAborted) ++stats->aborted;
    });
    answer(writer, "early\n");
  } else if (path == "/throw") {
    // It holds the writer, as a consumer does: the failure, not a writer
    // dropped unanswered, fails the answer.
    writer->requestBody()->setDataCallback(
        [writer](std::string_view) { throw std::runtime_error("the consumer failed"); });
  } else if (path == "/resume") {
    for (const RequestBodyPtr& body : stats->paused) body->resume();
    answer(writer, "resumed " + std::to_string(stats->paused.size()) + "\n");
    stats->paused.clear();
  } else if (path == "/stats") {
    uint64_t received = 0;
    for (const RequestBodyPtr& body : stats->paused) received += body->received();
    answer(writer, "handled=" + std::to_string(stats->handled) +
                       " completed=" + std::to_string(stats->completed) + " aborted=" +
                       std::to_string(stats->aborted) + " closed=" + std::to_string(stats->closed) +
                       " paused_received=" + std::to_string(received) + "\n");
  } else if (path == "/later") {
    const long ms = queryNumber(request.query(), "ms=", 100);
    writer->loop()->runAfter(std::chrono::milliseconds(ms), [writer, ms] {
      answer(writer, "later " + std::to_string(ms) + "\n");
    });
  } else {
    answer(writer, "not found\n", 404);
  }
}

}  // namespace

int main(int argc, char* argv[]) {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
  int maxStreamed = 0;
  int idleMs = 60000;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  libnet::Flags flags("streamed_body_server",
                      "usage: streamed_body_server [--address IP] [--port N] "
                      "[--backend epoll|uring|auto] [--max-streamed N] [--idle-ms N]\n");
  flags.addAddress("--address", &address);
  flags.addPort("--port", &port);
  flags.addBackend("--backend", &backend);
  flags.addInt("--max-streamed", &maxStreamed, 0, 1 << 30);
  flags.addInt("--idle-ms", &idleMs, 1, 1 << 30);
  if (const std::optional<int> exit = flags.parse(argc, argv)) return *exit;

  libnet::EventLoop loop(backend);
  HttpServer::Options options;
  options.idleTimeout = std::chrono::milliseconds(idleMs);
  options.maxStreamedBodyBytes = static_cast<uint64_t>(maxStreamed);
  HttpServer server(&loop, *libnet::InetAddress::parse(address, port), "streamed", options);
  Stats stats;
  server.setRouter([](const HttpRequest& head) {
    const std::string_view path = head.path();
    return path == "/upload" || path == "/paused" || path == "/early" || path == "/throw" ||
                   path == "/grpc/echo" || path == "/grpc/deadline"
               ? HttpServer::Route::kStreamedBody
               : HttpServer::Route::kAsync;
  });
  server.setAsyncHandler([&stats](const HttpRequest& request, ResponseWriterPtr writer) {
    handle(request, writer, &stats);
  });
  const std::shared_ptr<libnet::http2::Service> h2 = libnet::http2::serve(server, {});
  libnet::SignalSet signals(&loop, {SIGINT, SIGTERM}, [&](int) {
    server.drain(std::chrono::seconds(5), [&loop] { loop.quit(); });
  });
  server.start();
  std::printf("streamed_body_server listening on %s\n", server.listenAddress().toIpPort().c_str());
  std::fflush(stdout);
  loop.loop();
}
