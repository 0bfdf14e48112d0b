#include "net/http/HttpResponseParser.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "net/http/HttpChars.h"
#include "net/http/HttpSyntax.h"

namespace libnet::http {

using detail::equalsLower;
using detail::hasClass;
using detail::isDigit;
using detail::kMaxBodyReserve;
using detail::lineBefore;

HttpResponseParser::HttpResponseParser(Limits limits) : limits_(limits) {}

void HttpResponseParser::start(bool headRequest) {
  state_ = State::kStatusLine;
  error_ = Error::kNone;
  headRequest_ = headRequest;
  seenBytes_ = false;
  hasContentLength_ = false;
  hasTransferEncoding_ = false;
  chunked_ = false;
  unsupportedCoding_ = false;
  connectionClose_ = false;
  untilClose_ = false;
  status_ = 0;
  versionMinor_ = 1;
  reasonLength_ = 0;
  scanned_ = 0;
  statusLineBytes_ = 0;
  headerBytes_ = 0;
  headerCount_ = 0;
  contentLength_ = 0;
  remaining_ = 0;
  bodyBytes_ = 0;
  codingField_ = 0;
  interimResponses_ = 0;
  interimBytes_ = 0;
  text_.clear();
  fields_.clear();
  body_.clear();
  if (body_.capacity() > kMaxBodyReserve) std::string().swap(body_);
  errorMessage_.clear();
}

void HttpResponseParser::continueAfterInterim() {
  const size_t responses = interimResponses_;
  const size_t bytes = interimBytes_;
  start(headRequest_);
  interimResponses_ = responses;
  interimBytes_ = bytes;
  // The answer has begun: a connection that ends now ended inside it.
  seenBytes_ = true;
}

std::string HttpResponseParser::takeBody() {
  std::string out;
  out.swap(body_);
  return out;
}

bool HttpResponseParser::headersDone() const {
  return state_ != State::kStatusLine && state_ != State::kHeaders &&
         (state_ != State::kError || status_ != 0);
}

bool HttpResponseParser::keepAlive() const {
  return state_ == State::kComplete && versionMinor_ >= 1 && !connectionClose_ && !untilClose_;
}

std::string_view HttpResponseParser::reason() const {
  return std::string_view(text_).substr(0, reasonLength_);
}

std::optional<std::string_view> HttpResponseParser::header(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (detail::equalsIgnoreCase(headerName(i), name)) return headerValue(i);
  }
  return std::nullopt;
}

std::string_view HttpResponseParser::headerName(size_t i) const {
  return std::string_view(text_).substr(fields_[i].nameOffset, fields_[i].nameLength);
}

std::string_view HttpResponseParser::headerValue(size_t i) const {
  return std::string_view(text_).substr(fields_[i].valueOffset, fields_[i].valueLength);
}

HttpResponseParser::Result HttpResponseParser::parse(Buffer* buf) {
  if (state_ == State::kComplete) return Result::kComplete;
  if (state_ == State::kError) return Result::kError;
  const char* const begin = buf->peek();
  const char* const end = begin + buf->readableBytes();
  const char* p = begin;
  if (p != end) seenBytes_ = true;
  Step step = Step::kContinue;
  while (step == Step::kContinue) step = runState(p, end);
  buf->retrieve(static_cast<size_t>(p - begin));
  if (state_ == State::kComplete) return Result::kComplete;
  if (state_ == State::kError) return Result::kError;
  return Result::kNeedMore;
}

HttpResponseParser::Step HttpResponseParser::runState(const char*& p, const char* end) {
  switch (state_) {
    case State::kStatusLine:
      return parseStatusLineState(p, end);
    case State::kHeaders:
      return parseFieldsState(p, end, false);
    case State::kBody:
      return parseBodyState(p, end);
    case State::kUntilClose:
      return parseUntilCloseState(p, end);
    case State::kChunkSize:
      return parseChunkSizeState(p, end);
    case State::kChunkData:
      return parseChunkDataState(p, end);
    case State::kChunkDataEnd:
      return parseChunkDataEndState(p, end);
    case State::kTrailers:
      return parseFieldsState(p, end, true);
    case State::kComplete:
    case State::kError:
      break;
  }
  return Step::kStop;
}

HttpResponseParser::Result HttpResponseParser::finish() {
  switch (state_) {
    case State::kComplete:
      return Result::kComplete;
    case State::kError:
      return Result::kError;
    case State::kUntilClose:
      done();
      return Result::kComplete;
    case State::kStatusLine:
      if (!seenBytes_) {
        fail(Error::kNoResponse, "connection closed before any byte of the response");
        return Result::kError;
      }
      if (interimResponses_ > 0) {
        fail(Error::kTruncated, "connection closed after " + std::to_string(interimResponses_) +
                                    " interim (1xx) response(s), before the final response");
        return Result::kError;
      }
      [[fallthrough]];
    case State::kHeaders:
      fail(Error::kTruncated, "connection closed inside the response's header section");
      return Result::kError;
    default:
      break;
  }
  std::string why = "connection closed inside the body after " + std::to_string(bodyBytes_);
  why += hasContentLength_ ? " of " + std::to_string(contentLength_) + " bytes" : " bytes";
  if (chunked_) why += " (chunked, before the last chunk)";
  fail(Error::kTruncated, std::move(why));
  return Result::kError;
}

HttpResponseParser::Step HttpResponseParser::fail(Error error, std::string message) {
  state_ = State::kError;
  error_ = error;
  errorMessage_ = std::move(message);
  return Step::kStop;
}

HttpResponseParser::Step HttpResponseParser::done() {
  state_ = State::kComplete;
  return Step::kStop;
}

// As in HttpParser, each length limit is checked the same way on an
// incomplete line as on a complete one, so the verdict does not depend on how
// the bytes were split across reads.

HttpResponseParser::Step HttpResponseParser::parseStatusLineState(const char*& p, const char* end) {
  const char* lf = detail::findLineEnd(p, end, &scanned_);
  if (lf == nullptr) {
    if (static_cast<size_t>(end - p) + 1 > limits_.maxStatusLine) {
      return fail(Error::kTooLarge, "status line too long");
    }
    return Step::kNeedMore;
  }
  statusLineBytes_ = static_cast<size_t>(lf + 1 - p);
  if (statusLineBytes_ > limits_.maxStatusLine) {
    return fail(Error::kTooLarge, "status line too long");
  }
  const std::string_view line = lineBefore(p, lf);
  p = lf + 1;
  if (!parseStatusLine(line)) return Step::kStop;
  state_ = State::kHeaders;
  return Step::kContinue;
}

bool HttpResponseParser::parseStatusLine(std::string_view line) {
  // HTTP-version SP 3DIGIT SP [ reason-phrase ] (RFC 9112 4); a missing SP
  // before an empty reason is tolerated, as every browser does.
  if (line.size() < 12 || line.substr(0, 5) != "HTTP/" || !isDigit(line[5]) || line[6] != '.' ||
      !isDigit(line[7]) || line[8] != ' ') {
    fail(Error::kMalformed, "malformed status line (not an HTTP/1.x response)");
    return false;
  }
  if (line[5] != '1') {
    fail(Error::kMalformed, "unsupported HTTP version in the status line");
    return false;
  }
  versionMinor_ = line[7] == '0' ? 0 : 1;
  const std::string_view code = line.substr(9, 3);
  if (!isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) || code[0] == '0') {
    fail(Error::kMalformed, "malformed status code");
    return false;
  }
  if (line.size() > 12 && line[12] != ' ') {
    fail(Error::kMalformed, "malformed status code");
    return false;
  }
  const std::string_view reason = line.size() > 13 ? line.substr(13) : std::string_view();
  if (!detail::isFieldValue(reason)) {
    fail(Error::kMalformed, "invalid character in the reason phrase");
    return false;
  }
  status_ = (code[0] - '0') * 100 + (code[1] - '0') * 10 + (code[2] - '0');
  text_.assign(reason);
  reasonLength_ = static_cast<uint32_t>(reason.size());
  return true;
}

HttpResponseParser::Step HttpResponseParser::parseFieldsState(const char*& p, const char* end,
                                                              bool trailers) {
  while (true) {
    const char* lf = detail::findLineEnd(p, end, &scanned_);
    if (lf == nullptr) {
      if (headerBytes_ + static_cast<size_t>(end - p) + 1 > limits_.maxHeaderBytes) {
        return fail(Error::kTooLarge, "header section too large");
      }
      return Step::kNeedMore;
    }
    headerBytes_ += static_cast<size_t>(lf + 1 - p);
    if (headerBytes_ > limits_.maxHeaderBytes) {
      return fail(Error::kTooLarge, "header section too large");
    }
    const std::string_view line = lineBefore(p, lf);
    p = lf + 1;
    if (line.empty()) return trailers ? done() : finishHeaders();
    if (++headerCount_ > limits_.maxHeaderCount) {
      return fail(Error::kTooLarge,
                  "too many header fields (limit " + std::to_string(limits_.maxHeaderCount) + ")");
    }
    if (!parseFieldLine(line, trailers)) return Step::kStop;
  }
}

bool HttpResponseParser::parseFieldLine(std::string_view line, bool trailer) {
  // obs-fold is refused: RFC 9112 5.2 lets a user agent replace it, but a
  // folded line is also how a response gets split.
  if (detail::isOws(line.front())) {
    fail(Error::kMalformed, "folded or indented field line");
    return false;
  }
  size_t colon = 0;
  while (colon < line.size() && hasClass(line[colon], detail::kTokenChar)) ++colon;
  if (colon == 0 || colon == line.size() || line[colon] != ':') {
    fail(Error::kMalformed, "malformed field line");
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = detail::trimOws(line.substr(colon + 1));
  if (!detail::isFieldValue(value)) {
    fail(Error::kMalformed, "invalid character in field value");
    return false;
  }
  if (trailer) return true;
  Field field{};
  field.nameOffset = static_cast<uint32_t>(text_.size());
  field.nameLength = static_cast<uint32_t>(name.size());
  text_.append(name);
  field.valueOffset = static_cast<uint32_t>(text_.size());
  field.valueLength = static_cast<uint32_t>(value.size());
  text_.append(value);
  fields_.push_back(field);
  return onFramingField(name, value);
}

bool HttpResponseParser::onFramingField(std::string_view name, std::string_view value) {
  switch (name.size()) {
    case 10:
      if (equalsLower(name, "connection")) {
        detail::forEachListElement(value, [this](std::string_view token) {
          if (equalsLower(token, "close")) connectionClose_ = true;
        });
      }
      return true;
    case 14:
      if (equalsLower(name, "content-length")) {
        size_t length = 0;
        const detail::NumberParse parsed = detail::parseContentLength(value, &length);
        if (parsed != detail::NumberParse::kValid) {
          fail(Error::kMalformed, parsed == detail::NumberParse::kOverflow
                                      ? "Content-Length of 2^64 or more"
                                      : "invalid Content-Length");
          return false;
        }
        if (hasContentLength_ && length != contentLength_) {
          fail(Error::kMalformed, "conflicting Content-Length values");
          return false;
        }
        hasContentLength_ = true;
        contentLength_ = length;
      }
      return true;
    case 17:
      if (equalsLower(name, "transfer-encoding")) onTransferEncoding(value);
      return true;
    default:
      return true;
  }
}

// Several Transfer-Encoding fields make one list, and its last coding
// decides the framing (RFC 9112 6.3). Only chunked is decoded, and only as
// the one coding: a body under any other coding (gzip, or chunked and gzip)
// is not the representation, and must not be handed over as if it were
// (RFC 9112 6.1); an empty list names no coding at all.
void HttpResponseParser::onTransferEncoding(std::string_view value) {
  bool any = false;
  detail::forEachListElement(value, [this, &any](std::string_view coding) {
    any = true;
    const bool chunked = equalsLower(coding, "chunked");
    if (!chunked || chunked_) noteUnsupportedCoding();
    chunked_ = chunked;
  });
  if (!any) noteUnsupportedCoding();
  hasTransferEncoding_ = true;
}

void HttpResponseParser::noteUnsupportedCoding() {
  if (unsupportedCoding_) return;
  unsupportedCoding_ = true;
  codingField_ = fields_.size() - 1;  // the field being parsed, already kept
}

HttpResponseParser::Step HttpResponseParser::finishInterim() {
  // 101 ends the HTTP/1.1 exchange (the protocol changes): not interim.
  if (status_ == 101) return done();
  ++interimResponses_;
  interimBytes_ += statusLineBytes_ + headerBytes_;
  if (interimResponses_ > limits_.maxInterimResponses) {
    return fail(Error::kTooLarge, "too many interim (1xx) responses (limit " +
                                      std::to_string(limits_.maxInterimResponses) + ")");
  }
  if (interimBytes_ > limits_.maxInterimBytes) {
    return fail(Error::kTooLarge, "interim (1xx) responses too large (limit " +
                                      std::to_string(limits_.maxInterimBytes) + " bytes in all)");
  }
  return done();
}

HttpResponseParser::Step HttpResponseParser::finishHeaders() {
  if (informational()) return finishInterim();
  if (headRequest_ || status_ == 204 || status_ == 304) return done();
  if (hasTransferEncoding_ && hasContentLength_) {
    return fail(Error::kMalformed, "both Transfer-Encoding and Content-Length");
  }
  if (hasTransferEncoding_ && versionMinor_ == 0) {
    return fail(Error::kMalformed, "Transfer-Encoding in an HTTP/1.0 response");
  }
  if (unsupportedCoding_) {
    constexpr size_t kShown = 64;
    return fail(Error::kMalformed, "unsupported transfer coding (Transfer-Encoding: " +
                                       std::string(headerValue(codingField_).substr(0, kShown)) +
                                       "); only chunked is decoded");
  }
  if (chunked_) {
    state_ = State::kChunkSize;
    return Step::kContinue;
  }
  if (hasContentLength_) {
    if (mode_ == BodyMode::kStore && contentLength_ > limits_.maxBodyBytes) {
      return fail(Error::kTooLarge, "body too large (Content-Length " +
                                        std::to_string(contentLength_) + " > limit " +
                                        std::to_string(limits_.maxBodyBytes) + ")");
    }
    if (contentLength_ == 0) return done();
    if (mode_ == BodyMode::kStore) body_.reserve(std::min(contentLength_, kMaxBodyReserve));
    remaining_ = contentLength_;
    state_ = State::kBody;
    return Step::kContinue;
  }
  untilClose_ = true;
  state_ = State::kUntilClose;
  return Step::kContinue;
}

bool HttpResponseParser::deliver(const char* p, size_t n) {
  bodyBytes_ += n;
  switch (mode_) {
    case BodyMode::kStore:
      if (body_.size() + n > limits_.maxBodyBytes) {
        fail(Error::kTooLarge,
             "body too large (limit " + std::to_string(limits_.maxBodyBytes) + " bytes)");
        return false;
      }
      body_.append(p, n);
      return true;
    case BodyMode::kStream:
      if (n > 0 && sink_) sink_(std::string_view(p, n));
      return true;
    case BodyMode::kDiscard:
      return true;
  }
  return true;
}

HttpResponseParser::Step HttpResponseParser::parseBodyState(const char*& p, const char* end) {
  const size_t n = std::min(remaining_, static_cast<size_t>(end - p));
  remaining_ -= n;
  p += n;
  if (!deliver(p - n, n)) return Step::kStop;
  if (remaining_ > 0) return Step::kNeedMore;
  return done();
}

HttpResponseParser::Step HttpResponseParser::parseUntilCloseState(const char*& p, const char* end) {
  const auto n = static_cast<size_t>(end - p);
  p = end;
  if (!deliver(p - n, n)) return Step::kStop;
  return Step::kNeedMore;
}

HttpResponseParser::Step HttpResponseParser::parseChunkSizeState(const char*& p, const char* end) {
  std::string_view line;
  switch (detail::takeChunkSizeLine(p, end, &scanned_, &line)) {
    case detail::ChunkSizeLine::kNeedMore:
      return Step::kNeedMore;
    case detail::ChunkSizeLine::kTooLong:
      return fail(Error::kMalformed, "chunk size line too long");
    case detail::ChunkSizeLine::kDone:
      break;
  }
  size_t size = 0;
  switch (detail::parseChunkSize(line, &size)) {
    case detail::NumberParse::kInvalid:
      return fail(Error::kMalformed, "invalid chunk size");
    case detail::NumberParse::kOverflow:
      return fail(Error::kMalformed, "chunk size of 2^64 or more");
    case detail::NumberParse::kValid:
      break;
  }
  if (mode_ == BodyMode::kStore && size > limits_.maxBodyBytes - body_.size()) {
    return fail(Error::kTooLarge,
                "body too large (limit " + std::to_string(limits_.maxBodyBytes) + " bytes)");
  }
  if (size == 0) {
    state_ = State::kTrailers;
  } else {
    remaining_ = size;
    state_ = State::kChunkData;
  }
  return Step::kContinue;
}

HttpResponseParser::Step HttpResponseParser::parseChunkDataState(const char*& p, const char* end) {
  const size_t n = std::min(remaining_, static_cast<size_t>(end - p));
  remaining_ -= n;
  p += n;
  if (!deliver(p - n, n)) return Step::kStop;
  if (remaining_ > 0) return Step::kNeedMore;
  state_ = State::kChunkDataEnd;
  return Step::kContinue;
}

HttpResponseParser::Step HttpResponseParser::parseChunkDataEndState(const char*& p,
                                                                    const char* end) {
  switch (detail::consumeChunkEnd(p, end)) {
    case detail::ChunkEnd::kNeedMore:
      return Step::kNeedMore;
    case detail::ChunkEnd::kBad:
      return fail(Error::kMalformed, "missing line end after chunk data");
    case detail::ChunkEnd::kDone:
      break;
  }
  state_ = State::kChunkSize;
  return Step::kContinue;
}

}  // namespace libnet::http
