#include "tests/net/http/fuzz/ParseTrace.h"

#include <algorithm>
#include <cstring>

namespace libnet::http::fuzz {

namespace {

using Result = HttpParser::Result;

// HttpParser.h documents these as the only statuses parse() reports.
bool isDocumentedStatus(int status) {
  return status == 400 || status == 413 || status == 414 || status == 417 || status == 431 ||
         status == 501 || status == 505;
}

// HttpParser's own bound on a chunk-size line (kMaxChunkSizeLine in
// HttpParser.cc, not part of its interface); only used as an upper bound on
// what the parser may leave unconsumed outside the header section.
constexpr size_t kChunkSizeLineBound = 4096;

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
           return lower(x) == lower(y);
         });
}

ParseTrace::Request snapshot(const HttpRequest& r) {
  return ParseTrace::Request{r.method(), r.version(), r.target(), r.path(),
                             r.query(),  r.headers(), r.body(),   r.keepAlive()};
}

}  // namespace

ParseTrace ParseTrace::run(std::string_view input, std::span<const size_t> pieces,
                           const HttpParser::Limits& limits, Mode mode) {
  ParseTrace trace(limits, mode);
  HttpParser parser(limits);
  parser.setStopAfterHead(mode == Mode::kStreamed);
  std::string carry;
  size_t pos = 0;
  // An empty input still gets one parse() of an empty buffer, so that its
  // end state is checked too.
  const size_t none[] = {0};
  if (pieces.empty()) pieces = none;
  for (const size_t n : pieces) {
    Buffer buf;
    buf.append(carry);
    buf.append(input.substr(pos, n));
    pos += n;
    const bool failed = trace.drain(parser, buf);
    carry.assign(buf.view());
    char* const storage = const_cast<char*>(buf.peek()) - buf.prependableBytes();
    std::memset(storage, 'Z', buf.prependableBytes() + buf.readableBytes());
    if (failed || !trace.violation_.empty()) break;
  }
  if (!trace.error_) trace.leftover_ = std::move(carry);
  return trace;
}

bool ParseTrace::drain(HttpParser& parser, Buffer& buf) {
  while (true) {
    const size_t before = buf.readableBytes();
    const Result result = parser.parse(&buf);
    const size_t after = buf.readableBytes();
    if (after > before) {
      violate("parse() left more bytes than it was given");
      return true;
    }
    consumedSinceReset_ += before - after;
    switch (result) {
      case Result::kHead:
        onHead(parser);
        if (!violation_.empty()) return true;
        break;
      case Result::kPiece:
        onPiece(parser, buf);
        if (!violation_.empty()) return true;
        break;
      case Result::kComplete:
        checkComplete(parser, buf);
        requests_.push_back(snapshot(parser.request()));
        if (mode_ == Mode::kStreamed) requests_.back().body = std::move(streamedBody_);
        streamedBody_.clear();
        parser.reset();
        consumedSinceReset_ = 0;
        if (parser.midRequest() || !parser.inHeaderPhase() || parser.errorStatus() != 0) {
          violate("reset() did not return the parser to its initial state");
        }
        if (!violation_.empty()) return true;
        break;
      case Result::kError:
        error_ = true;
        errorStatus_ = parser.errorStatus();
        errorMessage_.assign(parser.errorMessage());
        checkError(parser, buf);
        return true;
      case Result::kNeedMore:
        checkNeedMore(parser, buf);
        return false;
    }
  }
}

void ParseTrace::onHead(HttpParser& parser) {
  if (mode_ != Mode::kStreamed) violate("kHead without setStopAfterHead()");
  if (!parser.midRequest() || parser.inHeaderPhase()) violate("phase wrong after kHead");
  if (!parser.request().body().empty()) violate("body bytes before the head's end");
  parser.streamBody(limits_.maxBodyBytes);
}

void ParseTrace::onPiece(HttpParser& parser, Buffer& buf) {
  const std::string_view piece = parser.piece(buf);
  if (!parser.streamingBody()) violate("kPiece without streamBody()");
  if (piece.empty() || piece.size() > buf.readableBytes()) violate("piece outside the buffer");
  const uint64_t before = parser.streamedBytes();
  streamedBody_.append(piece);
  parser.takePiece(&buf);
  if (parser.streamedBytes() != before + piece.size()) violate("streamedBytes() off");
  if (streamedBody_.size() > limits_.maxBodyBytes) violate("streamed body over its bound");
}

void ParseTrace::checkComplete(HttpParser& parser, Buffer& buf) {
  // Without this a caller that parses on after every kComplete could loop
  // forever on a buffer the parser never shortens.
  if (consumedSinceReset_ == 0) violate("kComplete without consuming a byte");
  if (parser.midRequest() || parser.inHeaderPhase()) violate("phase wrong after kComplete");
  if (parser.errorStatus() != 0 || !parser.errorMessage().empty()) {
    violate("error status set on kComplete");
  }
  const size_t before = buf.readableBytes();
  if (parser.parse(&buf) != Result::kComplete || buf.readableBytes() != before) {
    violate("parse() after kComplete without reset() changed something");
  }
  checkRequest(parser.request());
}

void ParseTrace::checkRequest(const HttpRequest& r) {
  const std::string& t = r.target();
  if (t.empty()) violate("empty request-target");
  // Visible ASCII only: no SP, no control, no DEL, no raw 8-bit byte.
  for (const char c : t) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) {
      violate("request-target byte outside 0x21-0x7E");
      break;
    }
  }
  // method SP target SP "HTTP/x.y" LF is the shortest the request line can be.
  if (r.methodName().size() + 1 + t.size() + 1 + 8 + 1 > limits_.maxRequestLine) {
    violate("request line longer than maxRequestLine accepted");
  }
  if (r.path().empty()) violate("empty path");
  if (!r.query().empty() && t.find('?') == std::string::npos) violate("query without '?'");
  if (r.headers().size() > limits_.maxHeaderCount) violate("more fields than maxHeaderCount");
  size_t fieldBytes = 0;
  size_t hosts = 0;
  bool connection = false;
  for (const auto& [name, value] : r.headers()) {
    fieldBytes += name.size() + 1 + value.size() + 1;  // at least name ":" value LF
    if (name.empty()) violate("empty field name");
    for (const char c : name) {
      const auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u >= 0x7f || c == ':') {
        violate("field name with a separator, control or 8-bit byte");
        break;
      }
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      violate("CR, LF or NUL in a field value");
    }
    if (!value.empty() && (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' ||
                           value.back() == '\t')) {
      violate("field value not trimmed");
    }
    if (equalsIgnoreCase(name, "host")) ++hosts;
    if (equalsIgnoreCase(name, "connection")) connection = true;
  }
  if (fieldBytes > limits_.maxHeaderBytes) violate("header section over maxHeaderBytes accepted");
  if (hosts > 1 || (r.version() == Version::kHttp11 && hosts == 0)) {
    violate("request accepted with a wrong number of Host fields");
  }
  if (!connection && r.keepAlive() != (r.version() == Version::kHttp11)) {
    violate("keepAlive differs from the version's default without a Connection field");
  }
  if (r.body().size() > limits_.maxBodyBytes) violate("body over maxBodyBytes accepted");
}

void ParseTrace::checkError(HttpParser& parser, Buffer& buf) {
  if (!isDocumentedStatus(parser.errorStatus())) violate("undocumented error status");
  if (parser.errorMessage().empty()) violate("error without a message");
  if (parser.midRequest() || parser.inHeaderPhase()) violate("phase wrong after kError");
  const size_t before = buf.readableBytes();
  const int status = parser.errorStatus();
  if (parser.parse(&buf) != Result::kError || buf.readableBytes() != before ||
      parser.errorStatus() != status) {
    violate("parse() after kError without reset() changed something");
  }
}

void ParseTrace::checkNeedMore(const HttpParser& parser, const Buffer& buf) {
  if (parser.errorStatus() != 0 || !parser.errorMessage().empty()) {
    violate("error status set on kNeedMore");
  }
  const std::string_view left = buf.view();
  // Only an incomplete line (or the CR of a CRLF after chunk data) may wait
  // for more bytes; a whole line left behind would never be parsed.
  if (left.find('\n') != std::string_view::npos) violate("a complete line left unconsumed");
  const size_t bound = parser.inHeaderPhase()
                           ? std::max(limits_.maxRequestLine, limits_.maxHeaderBytes)
                           : std::max(limits_.maxHeaderBytes, kChunkSizeLineBound);
  if (left.size() >= bound) violate("unconsumed bytes beyond every line limit");
  // Anything consumed or pending since reset() means a request has started.
  if (parser.midRequest() != (consumedSinceReset_ > 0 || !left.empty())) {
    violate("midRequest() disagrees with the bytes seen");
  }
}

void ParseTrace::violate(std::string_view what) {
  if (violation_.empty()) violation_.assign(what);
}

std::string ParseTrace::difference(const ParseTrace& a, const ParseTrace& b) {
  if (a.requests_.size() != b.requests_.size()) {
    return "complete requests: " + std::to_string(a.requests_.size()) + " vs " +
           std::to_string(b.requests_.size());
  }
  for (size_t i = 0; i < a.requests_.size(); ++i) {
    const Request& x = a.requests_[i];
    const Request& y = b.requests_[i];
    const std::string which = "request " + std::to_string(i) + ": ";
    if (x.method != y.method) return which + "method differs";
    if (x.version != y.version) return which + "version differs";
    if (x.target != y.target) return which + "target differs";
    if (x.path != y.path) return which + "path differs";
    if (x.query != y.query) return which + "query differs";
    if (x.headers != y.headers) return which + "headers differ";
    if (x.body != y.body) {
      return which + "body differs (" + std::to_string(x.body.size()) + " vs " +
             std::to_string(y.body.size()) + " bytes)";
    }
    if (x.keepAlive != y.keepAlive) return which + "keepAlive differs";
  }
  if (a.error_ != b.error_) {
    return a.error_ ? "error " + std::to_string(a.errorStatus_) + " vs need-more"
                    : "need-more vs error " + std::to_string(b.errorStatus_);
  }
  if (a.errorStatus_ != b.errorStatus_) {
    return "error status " + std::to_string(a.errorStatus_) + " vs " +
           std::to_string(b.errorStatus_);
  }
  if (a.errorMessage_ != b.errorMessage_) {
    return "error message \"" + a.errorMessage_ + "\" vs \"" + b.errorMessage_ + "\"";
  }
  if (a.leftover_ != b.leftover_) {
    return "unconsumed bytes: " + std::to_string(a.leftover_.size()) + " vs " +
           std::to_string(b.leftover_.size());
  }
  return {};
}

}  // namespace libnet::http::fuzz
