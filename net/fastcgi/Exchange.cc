#include "net/fastcgi/Exchange.h"

#include <algorithm>
#include <utility>

#include "base/Logging.h"
#include "net/fastcgi/UpstreamConnection.h"
#include "net/fastcgi/UpstreamPool.h"

namespace libnet::fastcgi {

namespace {

// One log line at most this long; php-fpm's own lines are far shorter.
constexpr size_t kMaxStderrLine = 1024;

}  // namespace

Exchange::Exchange(http::ResponseWriterPtr writer, std::string request, std::string what,
                   bool idempotent, std::shared_ptr<const UpstreamOptions> options)
    : writer_(std::move(writer)),
      request_(std::move(request)),
      what_(std::move(what)),
      idempotent_(idempotent),
      options_(std::move(options)),
      parser_(options_->maxHeadBytes) {}

void Exchange::watchClient() {
  std::weak_ptr<Exchange> weak = weak_from_this();
  writer_->setClosedCallback([weak] {
    if (auto self = weak.lock()) self->onClientGone();
  });
  writer_->setWritableCallback([weak] {
    if (auto self = weak.lock()) self->onWritable();
  });
}

void Exchange::streamBody(http::RequestBodyPtr body) {
  body_ = std::move(body);
  stdinEnded_ = false;
  std::weak_ptr<Exchange> weak = weak_from_this();
  body_->setEndCallback([weak](http::RequestBody::End end) {
    if (auto self = weak.lock()) self->onBodyEnd(end);
  });
  body_->setDataCallback([weak](std::string_view piece) {
    if (auto self = weak.lock()) self->onBodyPiece(piece);
  });
}

void Exchange::onBodyPiece(std::string_view piece) {
  if (done_) return;  // answered or failed: the rest has nowhere to go
  RecordEncoder(1).stream(&pendingStdin_, RecordType::kStdin, piece);
  if (pendingStdin_.size() >= options_->stdinHighWater) body_->pause();
  if (connection_ != nullptr) connection_->stdinReady();
}

void Exchange::onBodyEnd(http::RequestBody::End end) {
  // Aborted: the client left or the answer ended (the writer says so).
  body_.reset();
  if (end != http::RequestBody::End::kComplete || done_) return;
  RecordEncoder(1).endStream(&pendingStdin_, RecordType::kStdin);
  stdinEnded_ = true;
  if (connection_ != nullptr) connection_->stdinReady();
}

std::string Exchange::takeStdin() {
  std::string out = std::move(pendingStdin_);
  pendingStdin_.clear();
  if (!out.empty()) stdinTaken_ = true;
  if (body_) body_->resume();
  return out;
}

void Exchange::onClientGone() {
  if (clientGone_) return;
  clientGone_ = true;
  const bool wasDone = done_;
  done_ = true;
  if (wasDone && ended_) return;
  // Nobody to answer: the application's work for this request is wasted;
  // closing its connection is what php-fpm notices (FCGI_ABORT_REQUEST it
  // ignores).
  if (connection_ != nullptr) {
    connection_->abandon();
  } else if (auto pool = pool_.lock()) {
    pool->cancel(this);
  }
}

void Exchange::onWritable() {
  if (connection_ != nullptr && !done_) connection_->resumeReading();
}

bool Exchange::onStdout(std::string_view data) {
  if (done_) return !clientGone_;
  if (!parser_.done()) {
    const CgiResponseParser::Status status = parser_.feed(&data);
    if (status == CgiResponseParser::Status::kError) {
      fail(502, "bad response head from the application: " + parser_.error());
      return false;
    }
    if (status == CgiResponseParser::Status::kNeedMore) return true;
    head_ = parser_.takeHead();
  }
  pendingBody_.append(data);
  return true;
}

void Exchange::onStderr(std::string_view data) {
  while (!data.empty()) {
    const size_t lf = data.find('\n');
    std::string_view line = data.substr(0, lf);
    data.remove_prefix(lf == std::string_view::npos ? data.size() : lf + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (stderrLogged_ >= options_->maxStderrLogBytes) {
      stderrDropped_ += line.size();
      continue;
    }
    line = line.substr(
        0, std::min({line.size(), kMaxStderrLine, options_->maxStderrLogBytes - stderrLogged_}));
    stderrLogged_ += line.size();
    LOG_WARN << "fastcgi stderr (" << what_ << "): " << line;
  }
}

bool Exchange::onEnd(const EndRequest& end) {
  ended_ = true;
  if (stderrDropped_ > 0) {
    LOG_WARN << "fastcgi stderr (" << what_ << "): " << stderrDropped_ << " more bytes not logged";
  }
  if (done_) return !clientGone_;
  if (end.protocolStatus != ProtocolStatus::kRequestComplete) {
    const bool overloaded = end.protocolStatus == ProtocolStatus::kOverloaded;
    fail(overloaded ? 503 : 502, "the application refused the request (protocol status " +
                                     std::to_string(static_cast<int>(end.protocolStatus)) + ")");
    return false;
  }
  if (!parser_.done()) {
    fail(502, "the application ended the request without a complete response head");
    return false;
  }
  return true;
}

bool Exchange::flush() {
  if (done_ || !parser_.done()) return !done_;
  if (!headSent_) {
    headSent_ = true;
    if (ended_) {
      // All of it in one batch: one answer with its length, no chunks.
      head_.setBody(std::move(pendingBody_));
      done_ = true;
      writer_->respond(std::move(head_));
      return true;
    }
    writer_->start(std::move(head_));
  }
  bool more = true;
  if (!pendingBody_.empty()) {
    more = writer_->write(std::move(pendingBody_));
    pendingBody_.clear();
  }
  if (ended_) {
    done_ = true;
    writer_->finish();
  }
  return more && !writer_->closed();
}

void Exchange::fail(int status, std::string_view why) {
  if (done_) return;
  done_ = true;
  LOG_WARN << "fastcgi " << what_ << ": " << why
           << (headSent_ ? " (answer cut off)" : " (" + std::to_string(status) + ")");
  if (headSent_) {
    writer_->abort();
    return;
  }
  http::HttpResponse page(false);
  page.setStatusPage(status);
  writer_->respond(std::move(page));
}

}  // namespace libnet::fastcgi
