#include "net/fastcgi/FastCgiHandler.h"

#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"
#include "net/EventLoop.h"
#include "net/fastcgi/CgiParams.h"
#include "net/fastcgi/Exchange.h"
#include "net/fastcgi/RecordEncoder.h"
#include "net/fastcgi/UpstreamPool.h"

namespace libnet::fastcgi {

// The options, and each loop's pool. A pool belongs to its loop: it is made
// there on the loop's first request and destroyed with the loop (a
// runOnDestroy hook holds it), whether or not the handler is still around;
// the map only finds it.
struct FastCgiHandler::Shared {
  std::shared_ptr<const UpstreamOptions> options;
  Mutex mutex;
  std::unordered_map<EventLoop*, UpstreamPool*> pools LIBNET_GUARDED_BY(mutex);

  UpstreamPool* poolFor(EventLoop* loop, const std::shared_ptr<Shared>& self) {
    {
      MutexLock lock(mutex);
      auto it = pools.find(loop);
      if (it != pools.end()) return it->second;
    }
    auto pool = std::make_shared<UpstreamPool>(loop, options);
    UpstreamPool* raw = pool.get();
    {
      MutexLock lock(mutex);
      pools.emplace(loop, raw);
    }
    std::weak_ptr<Shared> weak = self;
    loop->runOnDestroy([weak, loop, pool]() mutable {
      if (auto shared = weak.lock()) {
        MutexLock lock(shared->mutex);
        shared->pools.erase(loop);
      }
      pool.reset();
    });
    return raw;
  }
};

namespace {

void checkOptions(const UpstreamOptions& o) {
  if (o.poolSize == 0) throw std::invalid_argument("fastcgi: poolSize must be at least 1");
  for (Duration d :
       {o.queueTimeout, o.connectTimeout, o.sendTimeout, o.readTimeout, o.idleTimeout}) {
    if (d <= Duration::zero()) throw std::invalid_argument("fastcgi: every timeout must be > 0");
  }
  if (o.maxHeadBytes == 0) throw std::invalid_argument("fastcgi: maxHeadBytes must be > 0");
  if (o.stdinHighWater == 0) throw std::invalid_argument("fastcgi: stdinHighWater must be > 0");
  if (!o.address.isUnix() && o.address.isWildcard()) {
    throw std::invalid_argument("fastcgi: no application address (" + o.address.toString() + ")");
  }
}

bool idempotent(http::Method method) {
  using http::Method;
  return method == Method::kGet || method == Method::kHead || method == Method::kOptions ||
         method == Method::kTrace || method == Method::kPut || method == Method::kDelete;
}

// `body` null: the body follows, streamed (Exchange::streamBody()).
std::string encodeRequest(const ParamList& params, const std::string* body) {
  const RecordEncoder encoder(1);
  std::string out;
  const size_t size = body != nullptr ? body->size() : 0;
  size_t estimate = 64 + size + size / kMaxContentLength * 16;
  for (const Param& p : params) estimate += p.first.size() + p.second.size() + 8;
  out.reserve(estimate);
  encoder.beginRequest(&out, Role::kResponder, true);
  encoder.params(&out, params);
  if (body != nullptr) {
    encoder.stream(&out, RecordType::kStdin, *body);
    encoder.endStream(&out, RecordType::kStdin);
  }
  return out;
}

}  // namespace

FastCgiHandler::FastCgiHandler(UpstreamOptions options) : shared_(std::make_shared<Shared>()) {
  checkOptions(options);
  while (options.documentRoot.size() > 1 && options.documentRoot.back() == '/') {
    options.documentRoot.pop_back();
  }
  shared_->options = std::make_shared<const UpstreamOptions>(std::move(options));
}

const UpstreamOptions& FastCgiHandler::options() const { return *shared_->options; }

bool FastCgiHandler::matches(std::string_view pattern, std::string_view path) {
  if (pattern.empty()) return false;
  if (pattern.front() == '/') return path.substr(0, pattern.size()) == pattern;
  return path.size() >= pattern.size() && path.substr(path.size() - pattern.size()) == pattern;
}

void FastCgiHandler::operator()(const http::HttpRequest& request,
                                http::ResponseWriterPtr writer) const {
  EventLoop* loop = writer->loop();
  if (loop->isInLoopThread()) {
    handleInLoop(request, std::move(writer));
    return;
  }
  loop->queueInLoop([self = *this, request, writer = std::move(writer)]() mutable {
    self.handleInLoop(request, std::move(writer));
  });
}

void FastCgiHandler::handleInLoop(const http::HttpRequest& request,
                                  http::ResponseWriterPtr writer) const {
  const UpstreamOptions& o = *shared_->options;
  CgiContext context{o.documentRoot, o.scriptFilename,       o.serverName,
                     o.https,        request.localAddress(), request.peerAddress()};
  std::optional<ParamList> params = cgiParams(request, context);
  if (!params) {
    http::HttpResponse page(false);
    page.setStatusPage(400);
    writer->respond(std::move(page));
    return;
  }
  std::string what(request.methodName());
  what += ' ';
  what += std::string_view(request.target()).substr(0, 200);
  // A body the router streams comes in pieces to FCGI_STDIN; the
  // application needs CONTENT_LENGTH before it, so one without a length
  // cannot be streamed (the router reads those whole).
  http::RequestBodyPtr body = writer->requestBody();
  if (body && body->contentLength() < 0) {
    http::HttpResponse page(false);
    page.setStatusPage(411);
    writer->respond(std::move(page));
    return;
  }
  const bool streamed = body && body->contentLength() > 0;
  auto exchange = std::make_shared<Exchange>(
      writer, encodeRequest(*params, streamed ? nullptr : &request.body()), std::move(what),
      idempotent(request.method()), shared_->options);
  exchange->watchClient();
  if (streamed) exchange->streamBody(std::move(body));
  shared_->poolFor(writer->loop(), shared_)->submit(std::move(exchange));
}

}  // namespace libnet::fastcgi
