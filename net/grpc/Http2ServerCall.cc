#include "net/grpc/Http2ServerCall.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/grpc/Gzip.h"
#include "net/grpc/Wire.h"

namespace libnet::grpc {

namespace {

constexpr std::string_view kContentType = "application/grpc";
constexpr std::string_view kAcceptEncoding = "identity,gzip";
// Messages shorter than this go out plain even when compression is on: the
// gzip header and trailer alone are 18 bytes.
constexpr size_t kCompressMin = 128;

// Request fields that are the protocol's, not the application's metadata.
bool reservedKey(std::string_view key) {
  return key.starts_with("grpc-") || key.starts_with(":") || key == "content-type" || key == "te" ||
         key == "host" || key == "content-length" || key == "connection";
}

bool listsGzip(std::string_view list) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == "gzip") return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

http::HttpResponse grpcHead() {
  http::HttpResponse head(false);
  head.setStatus(200);
  head.setContentType(kContentType);
  return head;
}

// `metadata` as fields: "-bin" values in base64.
void addMetadata(http::HttpResponse* head, const Metadata& metadata) {
  for (const auto& [key, value] : metadata) {
    head->addHeader(key, isBinaryKey(key) ? base64Encode(value) : value);
  }
}

std::vector<std::pair<std::string, std::string>> statusFields(const Status& status,
                                                              const Metadata& trailing) {
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(trailing.size() + 2);
  fields.emplace_back("grpc-status", std::to_string(static_cast<int>(status.code())));
  if (!status.message().empty())
    fields.emplace_back("grpc-message", percentEncode(status.message()));
  for (const auto& [key, value] : trailing) {
    fields.emplace_back(key, isBinaryKey(key) ? base64Encode(value) : value);
  }
  return fields;
}

// Metadata the application may send: a valid, unreserved key and a value
// that fits it.
bool sendable(std::string_view key, std::string_view value) {
  return validMetadataKey(key) && !reservedKey(key) && validMetadataValue(key, value);
}

}  // namespace

void Http2ServerCall::refuse(const http::ResponseWriterPtr& writer, const Status& status) {
  http::HttpResponse head = grpcHead();
  head.addHeader("grpc-accept-encoding", kAcceptEncoding);
  for (const auto& [key, value] : statusFields(status, {})) head.addHeader(key, value);
  writer->respondTrailersOnly(std::move(head));
}

std::shared_ptr<Http2ServerCall> Http2ServerCall::make(const CallOptions& options,
                                                       const http::HttpRequest& head,
                                                       std::string method,
                                                       http::ResponseWriterPtr writer) {
  auto call = std::make_shared<Http2ServerCall>(options, std::move(method), writer);
  const Status status = call->parseHead(head);
  if (!status.ok()) {
    refuse(writer, status);
    return nullptr;
  }
  call->begin();
  return call;
}

Http2ServerCall::Http2ServerCall(const CallOptions& options, std::string method,
                                 http::ResponseWriterPtr writer)
    : options_(options),
      method_(std::move(method)),
      writer_(std::move(writer)),
      body_(writer_->requestBody()),
      loop_(writer_->loop()),
      compress_(options.compress) {}

Status Http2ServerCall::parseHead(const http::HttpRequest& head) {
  if (const std::optional<SocketAddress> address = head.peerAddress()) {
    if (const std::optional<InetAddress> inet = address->inet()) peer_ = *inet;
  }
  const std::optional<std::string_view> encoding = head.header("grpc-encoding");
  encoding_ = std::string(encoding.value_or(""));
  if (!MessageReader::supportedEncoding(encoding_)) {
    return Status(StatusCode::kUnimplemented, "grpc-encoding " + encoding_ + " is not supported");
  }
  acceptsGzip_ = listsGzip(head.header("grpc-accept-encoding").value_or(""));
  if (const std::optional<std::string_view> timeout = head.header("grpc-timeout")) {
    std::optional<Duration> left = parseTimeout(*timeout);
    if (!left) return Status(StatusCode::kInternal, "malformed grpc-timeout");
    if (options_.maxDeadline > Duration::zero()) left = std::min(*left, options_.maxDeadline);
    deadline_ = MonoClock::now() + *left;
  }
  if (body_ == nullptr) return Status(StatusCode::kInternal, "no request body");
  reader_.emplace(MessageReader::Limits{options_.maxReceiveMessageBytes}, encoding_);
  return parseMetadata(head);
}

Status Http2ServerCall::parseMetadata(const http::HttpRequest& head) {
  for (const auto& [name, value] : head.headers()) {
    std::string key = name;
    std::transform(key.begin(), key.end(), key.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; });
    if (reservedKey(key)) continue;
    if (!validMetadataKey(key)) return Status(StatusCode::kInternal, "malformed metadata key");
    if (isBinaryKey(key)) {
      std::optional<std::string> bytes = base64Decode(value);
      if (!bytes) return Status(StatusCode::kInternal, "malformed -bin metadata value");
      metadata_.emplace_back(std::move(key), std::move(*bytes));
      continue;
    }
    if (!validMetadataValue(key, value)) {
      return Status(StatusCode::kInternal, "malformed metadata value");
    }
    metadata_.emplace_back(std::move(key), value);
  }
  return Status();
}

void Http2ServerCall::begin() {
  const std::weak_ptr<Http2ServerCall> weak = weak_from_this();
  writer_->setClosedCallback([weak] {
    if (const std::shared_ptr<Http2ServerCall> call = weak.lock()) call->cancelInLoop();
  });
  writer_->setWritableCallback([weak] {
    const std::shared_ptr<Http2ServerCall> call = weak.lock();
    if (!call || call->over() || !call->wantWritable_.exchange(false)) return;
    call->runWritable();
  });
  body_->setEndCallback([weak](http::RequestBody::End end) {
    if (const std::shared_ptr<Http2ServerCall> call = weak.lock()) {
      call->onBodyEnd(end == http::RequestBody::End::kComplete);
    }
  });
  body_->setDataCallback([weak](std::string_view piece) {
    if (const std::shared_ptr<Http2ServerCall> call = weak.lock()) call->onData(piece);
  });
  if (deadline_) {
    timer_ = loop_->runAt(*deadline_, [weak] {
      if (const std::shared_ptr<Http2ServerCall> call = weak.lock()) call->onDeadline();
    });
  }
}

ServerCallPtr Http2ServerCall::handle() {
  return ServerCallPtr(this, [self = shared_from_this()](ServerCall*) {
    // A finish() asked for on another thread may still be on its way to the
    // loop, while the last pointer goes here (on the loop: at once).
    if (!self->finishAsked_.load(std::memory_order_acquire) && !self->over()) {
      self->finish(Status(StatusCode::kInternal, "handler dropped the call"));
    }
  });
}

void Http2ServerCall::run(const std::function<void(ServerCallPtr)>& handler) {
  guarded("handler", [&] { handler(handle()); });
}

void Http2ServerCall::guarded(const char* what, const std::function<void()>& callback) {
  if (!callGuarded(what, callback)) failInLoop(Status(StatusCode::kInternal, "the handler failed"));
}

template <class Fn>
void Http2ServerCall::inLoop(Fn&& fn) {
  loop_->runInLoop([self = shared_from_this(), fn = std::forward<Fn>(fn)]() mutable { fn(*self); });
}

// ---- requests.

void Http2ServerCall::onData(std::string_view piece) {
  if (over()) return;
  if (!reader_->feed(piece)) {
    const MessageReader::Error error = reader_->error();
    failInLoop(Status(errorStatus(error), std::string(errorText(error))));
    return;
  }
  while (std::optional<std::string> message = reader_->next()) {
    waiting_.push_back(std::move(*message));
    waitingCompressed_.push_back(reader_->lastCompressed());
  }
  deliver();
}

void Http2ServerCall::onBodyEnd(bool complete) {
  if (over()) return;
  if (!complete) {
    cancelInLoop();
    return;
  }
  if (!reader_->atBoundary()) {
    failInLoop(Status(StatusCode::kInternal, "the request ended inside a message"));
    return;
  }
  bodyEnded_ = true;
  deliver();
}

void Http2ServerCall::deliver() {
  while (!paused_ && !over() && messageCallback_ && !waiting_.empty()) {
    std::string message = std::move(waiting_.front());
    waiting_.pop_front();
    lastCompressed_ = waitingCompressed_.front();
    waitingCompressed_.pop_front();
    const std::function<void(std::string)> callback = messageCallback_;  // it may replace itself
    guarded("message callback", [&] { callback(std::move(message)); });
  }
  if (over()) return;
  if (!waiting_.empty() || paused_) {
    if (!bodyPaused_) body_->pause();
    bodyPaused_ = true;
    return;
  }
  if (bodyPaused_) {
    bodyPaused_ = false;
    body_->resume();
  }
  if (bodyEnded_ && !halfCloseDone_ && halfCloseCallback_) {
    halfCloseDone_ = true;
    // Nothing more comes: the request side's callbacks go.
    const std::function<void()> callback = std::move(halfCloseCallback_);
    messageCallback_ = nullptr;
    guarded("half-close callback", callback);
  }
}

void Http2ServerCall::setMessageCallback(std::function<void(std::string message)> callback) {
  if (over() || halfCloseDone_) return;
  messageCallback_ = std::move(callback);
  loop_->queueInLoop([self = shared_from_this()] { self->deliver(); });
}

void Http2ServerCall::setHalfCloseCallback(std::function<void()> callback) {
  if (over() || halfCloseDone_) return;
  halfCloseCallback_ = std::move(callback);
  loop_->queueInLoop([self = shared_from_this()] { self->deliver(); });
}

void Http2ServerCall::pauseReading() {
  paused_ = true;
  if (!over() && !bodyPaused_) body_->pause();
  bodyPaused_ = true;
}

void Http2ServerCall::resumeReading() {
  paused_ = false;
  // Not from inside the caller (often the message callback itself).
  loop_->queueInLoop([self = shared_from_this()] { self->deliver(); });
}

// ---- the answer.

void Http2ServerCall::addInitialMetadata(std::string key, std::string value) {
  if (!sendable(key, value)) {
    LOG_WARN << "grpc: initial metadata " << key << " dropped (not valid metadata)";
    return;
  }
  inLoop([key = std::move(key), value = std::move(value)](Http2ServerCall& self) mutable {
    if (!self.headSent_ && !self.over())
      self.initial_.emplace_back(std::move(key), std::move(value));
  });
}

void Http2ServerCall::addTrailingMetadata(std::string key, std::string value) {
  if (!sendable(key, value)) {
    LOG_WARN << "grpc: trailing metadata " << key << " dropped (not valid metadata)";
    return;
  }
  inLoop([key = std::move(key), value = std::move(value)](Http2ServerCall& self) mutable {
    if (!self.over()) self.trailing_.emplace_back(std::move(key), std::move(value));
  });
}

void Http2ServerCall::setCompression(bool gzip) {
  compress_.store(gzip, std::memory_order_release);
}

bool Http2ServerCall::write(std::string message) {
  if (over()) return false;
  if (message.size() > options_.maxSendMessageBytes) {
    Status status(StatusCode::kResourceExhausted,
                  "a response message of " + std::to_string(message.size()) +
                      " bytes is past the server's maxSendMessageBytes");
    inLoop([status = std::move(status)](Http2ServerCall& self) mutable {
      self.failInLoop(std::move(status));
    });
    return false;
  }
  const size_t size = message.size() + kFramePrefixBytes;
  inFlight_.fetch_add(size, std::memory_order_relaxed);
  inLoop([message = std::move(message), size](Http2ServerCall& self) mutable {
    self.inFlight_.fetch_sub(size, std::memory_order_relaxed);
    self.writeInLoop(std::move(message));
  });
  if (over()) return false;
  const size_t queued = writer_->queuedBytes() + inFlight_.load(std::memory_order_relaxed);
  if (queued <= options_.highWater) return true;
  wantWritable_.store(true, std::memory_order_release);
  // The writer's writable callback comes once its bytes drain; bytes that
  // were still on their way when it said yes are checked for on the loop.
  inLoop([](Http2ServerCall& self) {
    if (self.over() || self.writer_->queuedBytes() > self.options_.lowWater) return;
    if (self.wantWritable_.exchange(false)) self.runWritable();
  });
  return false;
}

void Http2ServerCall::writeInLoop(std::string message) {
  if (over()) return;
  if (!headSent_) {
    headSent_ = true;
    writer_->start(head());
  }
  std::string frame;
  if (gzipOut_ && message.size() >= kCompressMin && compress_.load(std::memory_order_acquire)) {
    const std::string packed = gzipCompress(message);
    frame.reserve(packed.size() + kFramePrefixBytes);
    appendFrame(&frame, packed, true);
  } else {
    frame.reserve(message.size() + kFramePrefixBytes);
    appendFrame(&frame, message, false);
  }
  if (!writer_->write(std::move(frame))) wantWritable_.store(true, std::memory_order_release);
}

http::HttpResponse Http2ServerCall::head() {
  http::HttpResponse response = grpcHead();
  gzipOut_ = acceptsGzip_ && compress_.load(std::memory_order_acquire);
  if (gzipOut_) response.addHeader("grpc-encoding", "gzip");
  response.addHeader("grpc-accept-encoding", kAcceptEncoding);
  addMetadata(&response, initial_);
  initial_.clear();
  return response;
}

void Http2ServerCall::runWritable() {
  // A copy: the callback may replace itself.
  const std::function<void()> callback = writableCallback_;
  if (callback) guarded("writable callback", callback);
}

void Http2ServerCall::setWritableCallback(std::function<void()> callback) {
  inLoop([callback = std::move(callback)](Http2ServerCall& self) mutable {
    if (!self.over()) self.writableCallback_ = std::move(callback);
  });
}

void Http2ServerCall::finish(Status status) {
  if (finishAsked_.exchange(true, std::memory_order_acq_rel)) return;
  inLoop([status = std::move(status)](Http2ServerCall& self) mutable {
    self.finishInLoop(std::move(status));
  });
}

void Http2ServerCall::finishInLoop(Status status) {
  if (over_.exchange(true, std::memory_order_acq_rel)) return;
  if (!headSent_) {
    headSent_ = true;
    http::HttpResponse response = head();
    for (auto& [key, value] : statusFields(status, trailing_)) response.addHeader(key, value);
    writer_->respondTrailersOnly(std::move(response));
  } else {
    writer_->finish(statusFields(status, trailing_));
  }
  release();
}

// ---- cancellation.

void Http2ServerCall::onDeadline() {
  timer_.reset();
  failInLoop(Status(StatusCode::kDeadlineExceeded, "Deadline Exceeded"));
}

void Http2ServerCall::failInLoop(Status status) {
  if (over()) return;
  // The client is told first; the handler then learns that it may stop.
  const std::function<void()> callback = std::move(cancelCallback_);
  cancelled_.store(true, std::memory_order_release);
  finishInLoop(std::move(status));
  cancelRun_ = true;
  if (callback) callGuarded("cancel callback", callback);
}

void Http2ServerCall::cancelInLoop() {
  if (over_.exchange(true, std::memory_order_acq_rel)) return;
  cancelled_.store(true, std::memory_order_release);
  const std::function<void()> callback = std::move(cancelCallback_);
  release();
  cancelRun_ = true;
  if (callback) callGuarded("cancel callback", callback);
}

void Http2ServerCall::setCancelCallback(std::function<void()> callback) {
  if (cancelRun_) {
    if (callback) callGuarded("cancel callback", callback);
    return;
  }
  if (!over()) cancelCallback_ = std::move(callback);
}

void Http2ServerCall::release() {
  if (timer_) {
    loop_->cancel(*timer_);
    timer_.reset();
  }
  messageCallback_ = nullptr;
  halfCloseCallback_ = nullptr;
  writableCallback_ = nullptr;
  cancelCallback_ = nullptr;
  waiting_.clear();
  waitingCompressed_.clear();
}

}  // namespace libnet::grpc
