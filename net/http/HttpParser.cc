#include "net/http/HttpParser.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "net/http/HttpChars.h"
#include "net/http/HttpSyntax.h"
#include "net/http/RequestTarget.h"

namespace libnet::http {

using detail::allOf;
using detail::equalsLower;
using detail::hasClass;
using detail::isDigit;
using detail::kMaxBodyReserve;
using detail::lineBefore;

HttpParser::HttpParser(Limits limits) : limits_(limits) {}

void HttpParser::reset() {
  request_.clear();
  if (request_.body_.capacity() > kMaxBodyReserve) std::string().swap(request_.body_);
  state_ = State::kRequestLine;
  seenBytes_ = false;
  hasHost_ = false;
  hasContentLength_ = false;
  chunked_ = false;
  connectionClose_ = false;
  connectionKeepAlive_ = false;
  scanned_ = 0;
  headerBytes_ = 0;
  headerCount_ = 0;
  contentLength_ = 0;
  remaining_ = 0;
  streamed_ = false;
  pieceBytes_ = 0;
  streamMax_ = 0;
  streamedBytes_ = 0;
  errorStatus_ = 0;
  errorMessage_ = {};
}

bool HttpParser::midRequest() const {
  switch (state_) {
    case State::kRequestLine:
      return seenBytes_;
    case State::kComplete:
    case State::kError:
      return false;
    default:
      return true;
  }
}

HttpParser::Result HttpParser::parse(Buffer* buf) {
  if (state_ == State::kComplete) return Result::kComplete;
  if (state_ == State::kError) return Result::kError;
  if (state_ == State::kHead) return Result::kHead;

  pieceBytes_ = 0;
  const char* const begin = buf->peek();
  const char* const end = begin + buf->readableBytes();
  const char* p = begin;
  Step step = Step::kContinue;
  while (step == Step::kContinue) {
    switch (state_) {
      case State::kRequestLine:
        step = parseRequestLineState(p, end);
        break;
      case State::kHeaders:
        step = parseHeadersState(p, end);
        break;
      case State::kBody:
        step = parseBodyState(p, end);
        break;
      case State::kChunkSize:
        step = parseChunkSizeState(p, end);
        break;
      case State::kChunkData:
        step = parseChunkDataState(p, end);
        break;
      case State::kChunkDataEnd:
        step = parseChunkDataEndState(p, end);
        break;
      case State::kTrailers:
        step = parseTrailersState(p, end);
        break;
      case State::kHead:
      case State::kComplete:
      case State::kError:
        step = Step::kStop;
        break;
    }
  }
  buf->retrieve(static_cast<size_t>(p - begin));

  if (state_ == State::kComplete) return Result::kComplete;
  if (state_ == State::kError) return Result::kError;
  if (state_ == State::kHead) return Result::kHead;
  return pieceBytes_ > 0 ? Result::kPiece : Result::kNeedMore;
}

HttpParser::Step HttpParser::fail(int status, std::string_view message) {
  state_ = State::kError;
  errorStatus_ = status;
  errorMessage_ = message;
  return Step::kStop;
}

HttpParser::Step HttpParser::complete() {
  state_ = State::kComplete;
  return Step::kStop;
}

// Every length limit below is checked the same way on an incomplete line
// (its bytes so far plus the one byte, '\n', it still needs) as on a complete
// one, and before any syntax check of that line, so the verdict does not
// depend on how the bytes were split across reads.

HttpParser::Step HttpParser::parseRequestLineState(const char*& p, const char* end) {
  while (p != end) {
    seenBytes_ = true;
    const char* lf = detail::findLineEnd(p, end, &scanned_);
    if (lf == nullptr) {
      if (static_cast<size_t>(end - p) + 1 > limits_.maxRequestLine) {
        return fail(414, "request line too long");
      }
      return Step::kNeedMore;
    }
    const std::string_view line = lineBefore(p, lf);
    if (line.empty()) {
      // Empty lines before a request are skipped (RFC 9112 2.2): some clients
      // send a stray CRLF after a POST body.
      p = lf + 1;
      continue;
    }
    if (static_cast<size_t>(lf + 1 - p) > limits_.maxRequestLine) {
      return fail(414, "request line too long");
    }
    p = lf + 1;
    if (!parseRequestLine(line)) return Step::kStop;
    state_ = State::kHeaders;
    return Step::kContinue;
  }
  return Step::kNeedMore;
}

bool HttpParser::parseRequestLine(std::string_view line) {
  // method SP request-target SP HTTP-version, single spaces (RFC 9112 3).
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) {
    fail(400, "malformed request line");
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view rest = line.substr(sp1 + 1);
  const size_t sp2 = rest.find(' ');
  if (sp2 == std::string_view::npos) {
    fail(400, "malformed request line");
    return false;
  }
  const std::string_view target = rest.substr(0, sp2);
  const std::string_view version = rest.substr(sp2 + 1);

  if (!allOf(method, detail::kTokenChar)) {
    fail(400, "invalid method");
    return false;
  }
  if (target.empty() || !allOf(target, detail::kTargetChar)) {
    fail(400, "invalid request target");
    return false;
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !isDigit(version[5]) ||
      version[6] != '.' || !isDigit(version[7])) {
    fail(400, "malformed HTTP version");
    return false;
  }
  // Checked before the method: the method's meaning depends on the version.
  if (version[5] != '1') {
    fail(505, "HTTP version not supported");
    return false;
  }
  // A higher 1.x minor is processed as the highest we support (RFC 9110 2.5).
  request_.version_ = version[7] == '0' ? Version::kHttp10 : Version::kHttp11;
  const std::optional<Method> known = methodFromName(method);
  if (!known) {
    fail(501, "method not implemented");
    return false;
  }
  request_.method_ = *known;
  request_.target_.assign(target);
  return parseTarget();
}

bool HttpParser::parseTarget() {
  const detail::RequestTarget parts =
      detail::splitRequestTarget(request_.target_, request_.method_);
  if (!parts.error.empty()) {
    fail(400, parts.error);
    return false;
  }
  // Views into target_: copied out before anything else changes it.
  request_.path_.assign(parts.path);
  request_.query_.assign(parts.query);
  return true;
}

HttpParser::Step HttpParser::parseHeadersState(const char*& p, const char* end) {
  while (true) {
    const char* lf = detail::findLineEnd(p, end, &scanned_);
    if (lf == nullptr) {
      if (headerBytes_ + static_cast<size_t>(end - p) + 1 > limits_.maxHeaderBytes) {
        return fail(431, "header section too large");
      }
      return Step::kNeedMore;
    }
    headerBytes_ += static_cast<size_t>(lf + 1 - p);
    if (headerBytes_ > limits_.maxHeaderBytes) return fail(431, "header section too large");
    const std::string_view line = lineBefore(p, lf);
    p = lf + 1;
    if (line.empty()) return finishHeaders();
    if (++headerCount_ > limits_.maxHeaderCount) return fail(431, "too many header fields");
    if (!parseFieldLine(line, false)) return Step::kStop;
  }
}

HttpParser::Step HttpParser::parseTrailersState(const char*& p, const char* end) {
  while (true) {
    const char* lf = detail::findLineEnd(p, end, &scanned_);
    if (lf == nullptr) {
      if (headerBytes_ + static_cast<size_t>(end - p) + 1 > limits_.maxHeaderBytes) {
        return fail(431, "trailer section too large");
      }
      return Step::kNeedMore;
    }
    headerBytes_ += static_cast<size_t>(lf + 1 - p);
    if (headerBytes_ > limits_.maxHeaderBytes) return fail(431, "trailer section too large");
    const std::string_view line = lineBefore(p, lf);
    p = lf + 1;
    if (line.empty()) return complete();
    if (++headerCount_ > limits_.maxHeaderCount) return fail(431, "too many trailer fields");
    if (!parseFieldLine(line, true)) return Step::kStop;
  }
}

bool HttpParser::parseFieldLine(std::string_view line, bool trailer) {
  // A field line that starts with whitespace is either obs-fold or, on the
  // first line, whitespace after the start line; RFC 9112 2.2 and 5.2 let a
  // server reject both, and accepting them is a known smuggling vector.
  if (detail::isOws(line.front())) {
    fail(400, "folded or indented field line");
    return false;
  }
  // One pass finds the colon and checks the name: it must be reached through
  // token characters only.
  size_t colon = 0;
  while (colon < line.size() && hasClass(line[colon], detail::kTokenChar)) ++colon;
  if (colon == line.size()) {
    fail(400, "field line without colon");
    return false;
  }
  if (line[colon] != ':') {
    // RFC 9112 5.1: whitespace before the colon must be rejected with 400.
    fail(400, detail::isOws(line[colon]) ? "whitespace before colon" : "invalid field name");
    return false;
  }
  if (colon == 0) {
    fail(400, "empty field name");
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = detail::trimOws(line.substr(colon + 1));
  if (!detail::isFieldValue(value)) {
    fail(400, "invalid character in field value");
    return false;
  }
  // Trailers are checked and dropped: nothing in them may change framing,
  // and the server has no use for them.
  if (trailer) return true;
  return onField(name, value);
}

bool HttpParser::onField(std::string_view name, std::string_view value) {
  request_.addHeader(name, value);
  // Only five names matter to the parser; the length test rejects almost
  // every other field with one comparison.
  switch (name.size()) {
    case 6:
      // RFC 9110 10.1.1: 100-continue is the one expectation there is (the
      // server answers it once the body has room); any other cannot be met.
      if (equalsLower(name, "expect") && !detail::equalsIgnoreCase(value, "100-continue")) {
        fail(417, "unsupported expectation");
        return false;
      }
      break;
    case 4:
      if (equalsLower(name, "host")) {
        if (hasHost_) {
          fail(400, "duplicate Host header");
          return false;
        }
        hasHost_ = true;
      }
      break;
    case 10:
      if (equalsLower(name, "connection")) onConnection(value);
      break;
    case 14:
      if (equalsLower(name, "content-length")) return onContentLength(value);
      break;
    case 17:
      if (equalsLower(name, "transfer-encoding")) return onTransferEncoding(value);
      break;
    default:
      break;
  }
  return true;
}

bool HttpParser::onContentLength(std::string_view value) {
  if (chunked_) {
    fail(400, "both Content-Length and Transfer-Encoding");
    return false;
  }
  // A list of identical values ("42, 42", from a proxy joining duplicates) is
  // one length (RFC 9112 6.3); anything else is a framing error.
  size_t length = 0;
  const detail::NumberParse parsed = detail::parseContentLength(value, &length);
  if (parsed == detail::NumberParse::kOverflow) {
    fail(413, "body too large");  // 2^64 or more: past any limit
    return false;
  }
  if (parsed != detail::NumberParse::kValid) {
    fail(400, "invalid Content-Length");
    return false;
  }
  if (hasContentLength_ && length != contentLength_) {
    fail(400, "conflicting Content-Length");
    return false;
  }
  hasContentLength_ = true;
  contentLength_ = length;
  // Stopping at the head, the limit depends on how the body will be read:
  // judged by readBodyWhole() or streamBody().
  if (!stopAfterHead_ && length > limits_.maxBodyBytes) {
    fail(413, "body too large");
    return false;
  }
  return true;
}

bool HttpParser::onTransferEncoding(std::string_view value) {
  if (hasContentLength_) {
    fail(400, "both Content-Length and Transfer-Encoding");
    return false;
  }
  // RFC 9112 6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
  if (request_.version_ == Version::kHttp10) {
    fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    return false;
  }
  if (value.empty()) {
    fail(400, "empty Transfer-Encoding");
    return false;
  }
  // Only a lone "chunked" is implemented; "gzip, chunked" or a second
  // Transfer-Encoding field would need decoding we do not do.
  if (chunked_ || !equalsLower(value, "chunked")) {
    fail(501, "transfer coding not implemented");
    return false;
  }
  chunked_ = true;
  return true;
}

void HttpParser::onConnection(std::string_view value) {
  detail::forEachListElement(value, [this](std::string_view token) {
    if (equalsLower(token, "close")) {
      connectionClose_ = true;
    } else if (equalsLower(token, "keep-alive")) {
      connectionKeepAlive_ = true;
    }
  });
}

HttpParser::Step HttpParser::finishHeaders() {
  const bool http11 = request_.version_ == Version::kHttp11;
  // RFC 9112 3.2: a server must answer 400 to an HTTP/1.1 request without Host.
  if (http11 && !hasHost_) return fail(400, "missing Host header");
  request_.keepAlive_ = http11 ? !connectionClose_ : connectionKeepAlive_ && !connectionClose_;
  if (stopAfterHead_) {
    state_ = State::kHead;
    return Step::kStop;
  }
  enterBody();
  return Step::kContinue;
}

void HttpParser::enterBody() {
  if (chunked_) {
    state_ = State::kChunkSize;
  } else if (contentLength_ > 0) {
    if (!streamed_) request_.body_.reserve(std::min(contentLength_, kMaxBodyReserve));
    remaining_ = contentLength_;
    state_ = State::kBody;
  } else {
    state_ = State::kComplete;
  }
}

void HttpParser::readBodyWhole() {
  if (state_ != State::kHead) return;
  if (contentLength_ > limits_.maxBodyBytes) {
    fail(413, "body too large");
    return;
  }
  enterBody();
}

void HttpParser::streamBody(uint64_t maxBytes) {
  if (state_ != State::kHead) return;
  streamed_ = true;
  streamMax_ = maxBytes;
  if (maxBytes != 0 && contentLength_ > maxBytes) {
    fail(413, "body too large");
    return;
  }
  enterBody();
}

HttpParser::Step HttpParser::offerPiece(const char* p, const char* end) {
  pieceBytes_ = std::min(remaining_, static_cast<size_t>(end - p));
  return pieceBytes_ > 0 ? Step::kStop : Step::kNeedMore;
}

void HttpParser::takePiece(Buffer* buf) {
  const size_t n = pieceBytes_;
  pieceBytes_ = 0;
  if (n == 0) return;
  buf->retrieve(n);
  remaining_ -= n;
  streamedBytes_ += n;
  if (remaining_ > 0) return;
  if (state_ == State::kBody) {
    state_ = State::kComplete;
  } else if (state_ == State::kChunkData) {
    state_ = State::kChunkDataEnd;
  }
}

HttpParser::Step HttpParser::parseBodyState(const char*& p, const char* end) {
  if (streamed_) return offerPiece(p, end);
  const size_t n = std::min(remaining_, static_cast<size_t>(end - p));
  std::string& body = request_.body_;
  if (body.size() + n > body.capacity()) {
    // Grown by doubling, as append() would, but never past the announced
    // length: otherwise a 600 KB body sits in a 1 MiB string, and the memory
    // a server budgets by Content-Length is not the memory it uses. Not
    // reserve(): libstdc++ doubles the capacity there too. A new string of
    // the exact size costs the same one copy that growing would.
    std::string grown;
    grown.reserve(std::min(contentLength_, std::max(body.size() + n, 2 * body.capacity())));
    grown.append(body);
    body.swap(grown);
  }
  body.append(p, n);
  p += n;
  remaining_ -= n;
  if (remaining_ > 0) return Step::kNeedMore;
  return complete();
}

HttpParser::Step HttpParser::parseChunkSizeState(const char*& p, const char* end) {
  std::string_view line;
  switch (detail::takeChunkSizeLine(p, end, &scanned_, &line)) {
    case detail::ChunkSizeLine::kNeedMore:
      return Step::kNeedMore;
    case detail::ChunkSizeLine::kTooLong:
      return fail(400, "chunk size line too long");
    case detail::ChunkSizeLine::kDone:
      break;
  }
  size_t size = 0;
  const detail::NumberParse parsed = detail::parseChunkSize(line, &size);
  if (parsed == detail::NumberParse::kInvalid) return fail(400, "invalid chunk size");
  const bool tooLarge = streamed_ ? streamMax_ != 0 && size > streamMax_ - streamedBytes_
                                  : size > limits_.maxBodyBytes - request_.body_.size();
  if (parsed == detail::NumberParse::kOverflow || tooLarge) return fail(413, "body too large");
  if (size == 0) {
    state_ = State::kTrailers;
  } else {
    remaining_ = size;
    state_ = State::kChunkData;
  }
  return Step::kContinue;
}

HttpParser::Step HttpParser::parseChunkDataState(const char*& p, const char* end) {
  if (streamed_) return offerPiece(p, end);
  const size_t n = std::min(remaining_, static_cast<size_t>(end - p));
  request_.body_.append(p, n);
  p += n;
  remaining_ -= n;
  if (remaining_ > 0) return Step::kNeedMore;
  state_ = State::kChunkDataEnd;
  return Step::kContinue;
}

HttpParser::Step HttpParser::parseChunkDataEndState(const char*& p, const char* end) {
  switch (detail::consumeChunkEnd(p, end)) {
    case detail::ChunkEnd::kNeedMore:
      return Step::kNeedMore;
    case detail::ChunkEnd::kBad:
      return fail(400, "missing line end after chunk data");
    case detail::ChunkEnd::kDone:
      break;
  }
  state_ = State::kChunkSize;
  return Step::kContinue;
}

}  // namespace libnet::http
