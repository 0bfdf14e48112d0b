#include "net/grpc/ClientCall.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "net/EventLoop.h"
#include "net/grpc/Channel.h"
#include "net/grpc/Gzip.h"
#include "net/grpc/Wire.h"

namespace libnet::grpc {

namespace {

// HTTP/2 error codes (RFC 9113 section 7).
constexpr uint32_t kRefusedStream = 0x7;
constexpr uint32_t kCancel = 0x8;
constexpr uint32_t kEnhanceYourCalm = 0xb;

// What the output of a call may hold for a transparent retry (a stream the
// server refused unprocessed): enough for any unary request of usual size.
constexpr size_t kReplayBytes = 64 * 1024;

// gRPC's doc/http-grpc-status-mapping.md.
StatusCode fromHttpStatus(int status) {
  switch (status) {
    case 400:
      return StatusCode::kInternal;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kUnknown;
  }
}

Status fromReset(const http2::ClientSession::Close& close) {
  if (close.connectionLost) {
    return Status(StatusCode::kUnavailable, "the connection to the server was lost");
  }
  switch (close.errorCode) {
    case kCancel:
      return Status(StatusCode::kCancelled, "the server cancelled the stream");
    case kRefusedStream:
      return Status(StatusCode::kUnavailable, "the server refused the stream");
    case kEnhanceYourCalm:
      return Status(StatusCode::kResourceExhausted,
                    "the server reset the stream: ENHANCE_YOUR_CALM");
    default:
      return Status(StatusCode::kInternal, "the server reset the stream (HTTP/2 error " +
                                               std::to_string(close.errorCode) + ")");
  }
}

const std::string* field(const http2::ClientSession::Fields& fields, std::string_view name) {
  for (const auto& [key, value] : fields) {
    if (key == name) return &value;
  }
  return nullptr;
}

// The custom metadata of a header list: the protocol's own fields left out,
// "-bin" values decoded (one that is not base64 is dropped).
Metadata customMetadata(const http2::ClientSession::Fields& fields) {
  Metadata metadata;
  for (const auto& [key, value] : fields) {
    if (key.starts_with(':') || key.starts_with("grpc-") || key == "content-type" ||
        key == "content-length" || key == "te") {
      continue;
    }
    if (isBinaryKey(key)) {
      if (auto bytes = base64Decode(value)) metadata.emplace_back(key, std::move(*bytes));
      continue;
    }
    metadata.emplace_back(key, value);
  }
  return metadata;
}

// grpc-status and grpc-message of a trailer list (or a trailers-only head).
Status statusOf(const std::string& code, const std::string* message) {
  unsigned value = 0;
  const auto [end, error] = std::from_chars(code.data(), code.data() + code.size(), value);
  std::string text = message != nullptr ? percentDecode(*message) : std::string();
  if (error != std::errc() || end != code.data() + code.size()) {
    return Status(StatusCode::kUnknown, "malformed grpc-status \"" + code + "\"");
  }
  if (value > static_cast<unsigned>(StatusCode::kUnauthenticated)) {
    return Status(StatusCode::kUnknown, std::move(text));
  }
  return Status(static_cast<StatusCode>(value), std::move(text));
}

bool reservedKey(std::string_view key) {
  return key.starts_with("grpc-") || key == "content-type" || key == "te" || key == "user-agent";
}

}  // namespace

std::shared_ptr<ClientCall> ClientCall::start(std::shared_ptr<Channel> channel, std::string path,
                                              ClientCallOptions options, Callbacks callbacks) {
  std::shared_ptr<ClientCall> call(new ClientCall(std::move(channel), std::move(path),
                                                  std::move(options), std::move(callbacks)));
  call->inLoop([](ClientCall& self) { self.startInLoop(); });
  return call;
}

ClientCall::ClientCall(std::shared_ptr<Channel> channel, std::string path,
                       ClientCallOptions options, Callbacks callbacks)
    : channel_(std::move(channel)),
      path_(std::move(path)),
      options_(std::move(options)),
      callbacks_(std::move(callbacks)) {
  // The clock starts when the call is made, not when the loop gets to it.
  if (options_.timeout > Duration::zero()) deadline_ = MonoClock::now() + options_.timeout;
  if (options_.deadline && (!deadline_ || *options_.deadline < *deadline_)) {
    deadline_ = options_.deadline;
  }
}

ClientCall::~ClientCall() {
  if (deadlineTimer_.valid()) channel_->loop()->cancel(deadlineTimer_);
}

template <class F>
void ClientCall::inLoop(F&& fn) {
  channel_->loop()->runInLoop(
      [self = shared_from_this(), fn = std::forward<F>(fn)]() mutable { fn(*self); });
}

void ClientCall::startInLoop() {
  for (const auto& [key, value] : options_.metadata) {
    if (!validMetadataKey(key) || reservedKey(key) || !validMetadataValue(key, value)) {
      finishWith(Status(StatusCode::kInternal, "invalid metadata \"" + key + "\""), {});
      return;
    }
  }
  if (deadline_) {
    deadlineTimer_ = channel_->loop()->runAt(*deadline_, [weak = weak_from_this()] {
      if (const auto self = weak.lock()) {
        self->deadlineTimer_ = TimerId();
        self->finishWith(Status(StatusCode::kDeadlineExceeded, "Deadline Exceeded"), {});
      }
    });
  }
  if (!done_) channel_->startCall(shared_from_this());
}

http2::ClientSession::Fields ClientCall::requestFields() const {
  http2::ClientSession::Fields fields = {
      {":method", "POST"},
      {":scheme", channel_->tls() ? "https" : "http"},
      {":path", path_},
      {":authority", channel_->authority()},
      {"te", "trailers"},
      {"content-type", "application/grpc"},
      {"user-agent", channel_->options().userAgent},
      {"grpc-accept-encoding", "identity,gzip"},
  };
  if (options_.compress) fields.emplace_back("grpc-encoding", "gzip");
  if (deadline_) fields.emplace_back("grpc-timeout", formatTimeout(*deadline_ - MonoClock::now()));
  for (const auto& [key, value] : options_.metadata) {
    fields.emplace_back(key, isBinaryKey(key) ? base64Encode(value) : value);
  }
  return fields;
}

void ClientCall::attach(const std::shared_ptr<http2::ClientConnection>& conn) {
  if (done_) return;
  if (deadline_ && *deadline_ <= MonoClock::now()) {
    finishWith(Status(StatusCode::kDeadlineExceeded, "Deadline Exceeded"), {});
    return;
  }
  conn_ = conn;
  replayable_ = pendingOutput_.size() <= kReplayBytes;
  if (replayable_) replay_ = pendingOutput_;
  key_ = conn_->submit(requestFields(), std::move(pendingOutput_), halfClosed_, streamCallbacks());
  pendingOutput_.clear();
  if (paused_) conn_->pause(key_);
  updateQueued();
}

http2::ClientSession::StreamCallbacks ClientCall::streamCallbacks() {
  // Each callback holds the call on its stack: a reset from inside one (a
  // limit, a parse failure) closes the stream at once, and the session then
  // drops the callbacks, their captures included, while one still runs.
  const std::shared_ptr<ClientCall> self = shared_from_this();
  return {
      .onHead =
          [self](int status, const http2::ClientSession::Fields& fields) {
            const std::shared_ptr<ClientCall> hold = self;
            hold->onHead(status, fields);
          },
      .onData =
          [self](std::string_view data) {
            const std::shared_ptr<ClientCall> hold = self;
            hold->onData(data);
          },
      .onTrailers =
          [self](const http2::ClientSession::Fields& fields) {
            const std::shared_ptr<ClientCall> hold = self;
            hold->onTrailers(fields);
          },
      .onClose =
          [self](const http2::ClientSession::Close& close) {
            const std::shared_ptr<ClientCall> hold = self;
            hold->onClose(close);
          },
      .onWritable =
          [self] {
            const std::shared_ptr<ClientCall> hold = self;
            hold->onStreamWritable();
          },
  };
}

bool ClientCall::write(std::string message, bool noCompression) {
  if (done_.load(std::memory_order_acquire)) return false;
  const size_t bytes = message.size();
  const size_t before = inTransit_.fetch_add(bytes) + queued_.load();
  const bool below = before + bytes < channel_->options().writeHighWater;
  // Set before the loop can see the message, so that the loop's check after
  // taking it cannot miss the wait.
  if (!below) wantWritable_ = true;
  inLoop([message = std::move(message), noCompression](ClientCall& self) mutable {
    self.writeInLoop(std::move(message), noCompression);
  });
  return below;
}

std::optional<std::string> ClientCall::frame(std::string message, bool compress) {
  if (message.size() > channel_->options().maxSendMessageBytes) return std::nullopt;
  std::string framed;
  if (compress) {
    const std::string packed = gzipCompress(message);
    framed.reserve(kFramePrefixBytes + packed.size());
    appendFrame(&framed, packed, true);
  } else {
    framed.reserve(kFramePrefixBytes + message.size());
    appendFrame(&framed, message, false);
  }
  return framed;
}

void ClientCall::writeInLoop(std::string message, bool noCompression) {
  inTransit_ -= message.size();
  if (done_ || halfClosed_) return;
  const size_t bytes = message.size();
  std::optional<std::string> framed =
      frame(std::move(message), options_.compress && !noCompression);
  if (!framed) {
    finishWith(Status(StatusCode::kResourceExhausted,
                      "a request message of " + std::to_string(bytes) + " bytes is over the limit"),
               {});
    return;
  }
  if (!conn_) {
    pendingOutput_ += *framed;
  } else {
    if (replayable_) {
      replayable_ = replay_.size() + framed->size() <= kReplayBytes;
      if (replayable_) replay_ += *framed;
    }
    conn_->write(key_, std::move(*framed));
  }
  updateQueued();
}

void ClientCall::halfClose() {
  inLoop([](ClientCall& self) { self.halfCloseInLoop(); });
}

void ClientCall::halfCloseInLoop() {
  if (done_ || halfClosed_) return;
  halfClosed_ = true;
  if (conn_) conn_->endStream(key_);
}

void ClientCall::cancel() {
  inLoop([](ClientCall& self) { self.cancelInLoop(Status(StatusCode::kCancelled, "Cancelled")); });
}

void ClientCall::cancel(Status status) {
  inLoop([status = std::move(status)](ClientCall& self) mutable {
    self.cancelInLoop(std::move(status));
  });
}

void ClientCall::cancelInLoop(Status status) { finishWith(std::move(status), {}); }

void ClientCall::pause() {
  inLoop([](ClientCall& self) { self.pauseInLoop(); });
}

void ClientCall::pauseInLoop() {
  if (paused_) return;
  paused_ = true;
  if (conn_ && !streamClosed_) conn_->pause(key_);
}

void ClientCall::resume() {
  inLoop([](ClientCall& self) { self.resumeInLoop(); });
}

void ClientCall::resumeInLoop() {
  if (!paused_) return;
  paused_ = false;
  if (conn_ && !streamClosed_) conn_->resume(key_);
  deliver();
}

void ClientCall::updateQueued() {
  queued_ = conn_ ? conn_->queuedBytes(key_) : pendingOutput_.size();
  // A request body handed over with the stream is the session's, not its
  // write queue's: without this check a writer waiting on it would wait for
  // a drain that is never reported.
  if (done_ || !wantWritable_) return;
  if (inTransit_.load() + queued_.load() >= channel_->options().writeHighWater) return;
  wantWritable_ = false;
  if (callbacks_.onWritable) callbacks_.onWritable();
}

void ClientCall::onStreamWritable() { updateQueued(); }

void ClientCall::onHead(int status, const http2::ClientSession::Fields& fields) {
  if (done_) return;
  sawHead_ = true;
  replay_.clear();
  replayable_ = false;
  httpStatus_ = status;
  if (field(fields, "grpc-status") != nullptr) {
    // Trailers-only: the head is the end of the call.
    onTrailers(fields);
    return;
  }
  if (status != 200) return;  // the status comes from :status at the end
  const std::string* type = field(fields, "content-type");
  if (type == nullptr || !type->starts_with("application/grpc")) {
    finishWith(
        Status(StatusCode::kUnknown, "the response's content-type is not application/grpc: \"" +
                                         (type != nullptr ? *type : std::string()) + "\""),
        {});
    return;
  }
  const std::string* encoding = field(fields, "grpc-encoding");
  const std::string name = encoding != nullptr ? *encoding : std::string();
  if (!MessageReader::supportedEncoding(name)) {
    finishWith(Status(StatusCode::kInternal,
                      "the response's grpc-encoding \"" + name + "\" is not supported"),
               {});
    return;
  }
  reader_.emplace(MessageReader::Limits{channel_->options().maxReceiveMessageBytes}, name);
  if (callbacks_.onInitialMetadata) callbacks_.onInitialMetadata(customMetadata(fields));
}

void ClientCall::onData(std::string_view data) {
  if (done_ || !reader_ || finalStatus_) return;
  if (!reader_->feed(data)) {
    const MessageReader::Error error = reader_->error();
    finishWith(Status(errorStatus(error), std::string(errorText(error))), {});
    return;
  }
  while (std::optional<std::string> message = reader_->next()) {
    messages_.push_back(std::move(*message));
  }
  deliver();
}

void ClientCall::onTrailers(const http2::ClientSession::Fields& fields) {
  if (done_ || finalStatus_) return;
  const std::string* code = field(fields, "grpc-status");
  if (reader_ && !reader_->atBoundary()) {
    finalStatus_ = Status(StatusCode::kInternal, "the response ended in the middle of a message");
  } else if (code == nullptr) {
    finalStatus_ =
        httpStatus_ != 200
            ? Status(fromHttpStatus(httpStatus_), "HTTP status " + std::to_string(httpStatus_))
            : Status(StatusCode::kUnknown, "the response has no grpc-status");
  } else {
    finalStatus_ = statusOf(*code, field(fields, "grpc-message"));
  }
  trailers_ = customMetadata(fields);
  deliver();
}

void ClientCall::onClose(const http2::ClientSession::Close& close) {
  streamClosed_ = true;
  const http2::ClientConnection* const was = conn_.get();
  // Not let go inside the connection's own callback.
  channel_->loop()->queueInLoop([conn = std::move(conn_)] {});
  if (done_) return;
  if (close.refused && !sawHead_ && !retried_ && replayable_) {
    // The server never saw it: once more, on a new connection.
    retried_ = true;
    channel_->connectionRefusing(close.connectionLost ? nullptr : was);
    pendingOutput_ = std::move(replay_);
    replay_.clear();
    key_ = 0;
    streamClosed_ = false;
    channel_->startCall(shared_from_this());
    return;
  }
  if (!finalStatus_) {
    if (close.errorCode != 0 || close.connectionLost) {
      finishWith(fromReset(close), {});
      return;
    }
    // Ended without trailers.
    onTrailers({});
  }
  deliver();
}

void ClientCall::deliver() {
  if (delivering_) return;
  delivering_ = true;
  while (!done_ && !paused_ && !messages_.empty()) {
    std::string message = std::move(messages_.front());
    messages_.pop_front();
    if (callbacks_.onMessage) callbacks_.onMessage(std::move(message));
  }
  delivering_ = false;
  // The end waits for the messages before it, and for the stream's close
  // (a reset after the trailers changes nothing, but is seen).
  if (!done_ && finalStatus_ && messages_.empty() && streamClosed_) {
    finishWith(std::move(*finalStatus_), std::move(trailers_));
  }
}

void ClientCall::finishWith(Status status, Metadata trailers) {
  if (done_) return;
  done_ = true;
  if (deadlineTimer_.valid()) channel_->loop()->cancel(deadlineTimer_);
  deadlineTimer_ = TimerId();
  channel_->forgetCall(this);
  messages_.clear();
  if (conn_ && !streamClosed_) conn_->reset(key_, kCancel);
  Callbacks callbacks = std::move(callbacks_);
  callbacks_ = Callbacks();
  if (callbacks.onFinish) callbacks.onFinish(status, trailers);
}

}  // namespace libnet::grpc
