// HttpResponseParser: an incremental HTTP/1.x response parser (RFC 9112), one
// per client connection, used on that connection's loop thread only (not
// thread-safe). The response-side twin of HttpParser, with the same buffer
// contract: parse() consumes complete lines and body bytes and leaves an
// incomplete line at the front of the caller's buffer for the next call; the
// buffer may be a different object each time (the parser keeps no pointer
// into it).
//
// Framing (RFC 9112 6.3), decided once the header section is complete:
//   - the answer to a HEAD request, any 1xx, 204 and 304: no body;
//   - Transfer-Encoding "chunked": chunked, trailers checked against the
//     header limits and dropped; any other coding (gzip, "gzip, chunked",
//     chunked twice) is refused, since the body would not be the
//     representation (RFC 9112 6.1: nothing here decodes it), and so is
//     Transfer-Encoding together with Content-Length (a smuggling sign, RFC
//     9112 6.3 point 3);
//   - Content-Length: that many bytes (a list of equal values is one value,
//     different ones are an error);
//   - otherwise the body runs to the end of the connection (finish()).
// A Content-Length or chunk size of 2^64 or more is refused as soon as it is
// read, whatever the body mode (RFC 9112 7.1), never clamped.
// Parsing stops right after a complete response, including a 1xx's header
// section: the bytes that follow (the next response, or a WebSocket stream
// after "101 Switching Protocols") stay in the buffer. Interim responses
// (1xx but 101) of one request are bounded in number and bytes
// (Limits::maxInterimResponses, maxInterimBytes): continueAfterInterim().
//
// Headers are kept as views into one string the parser owns, which keeps its
// capacity from response to response, so a steady stream of responses
// allocates nothing here. The body is kept in memory (bounded by
// Limits::maxBodyBytes), handed piece by piece to a sink straight from the
// caller's buffer, or counted and dropped: see setBodyMode().
//
// Typical use:
//   parser.start(request was HEAD);
//   on input:  switch (parser.parse(buf)) { kNeedMore: wait; kComplete: use
//              status(), header(), body(); kError: errorMessage(), close }
//   on EOF:    parser.finish() (kComplete only for a close-delimited body)
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/Buffer.h"

namespace libnet::http {

class HttpResponseParser {
 public:
  struct Limits {
    // The status line, its line end included.
    size_t maxStatusLine = 8 * 1024;
    // All field lines plus the blank line ending the section; trailers count
    // against the same budget.
    size_t maxHeaderBytes = 64 * 1024;
    // Field lines, trailers included.
    size_t maxHeaderCount = 256;
    // A body kept in memory (BodyMode::kStore): an error as soon as a
    // Content-Length, a chunk size or the bytes received pass it. Streamed
    // and discarded bodies are not bounded.
    size_t maxBodyBytes = 8 * 1024 * 1024;
    // Interim responses (1xx other than 101) before the final one, and the
    // bytes of their status lines and header sections in all. A server
    // sends one 100 Continue and a few 103 Early Hints; without a bound an
    // endless stream of them holds a request open forever.
    size_t maxInterimResponses = 32;
    size_t maxInterimBytes = 64 * 1024;
  };

  enum class Result : uint8_t { kNeedMore, kComplete, kError };
  // Why parsing failed.
  enum class Error : uint8_t {
    kNone,
    kMalformed,   // not HTTP/1.x, or broken framing
    kTooLarge,    // a limit passed: status line, header bytes or count, body
    kTruncated,   // the connection ended inside the response (finish())
    kNoResponse,  // the connection ended before any byte of it (finish())
  };
  enum class BodyMode : uint8_t { kStore, kStream, kDiscard };
  // Called with each piece of the body, straight from the caller's buffer
  // (valid for the call only); the pieces of one response come in order.
  using BodySink = std::function<void(std::string_view)>;

  HttpResponseParser() : HttpResponseParser(Limits{}) {}
  explicit HttpResponseParser(Limits limits);
  HttpResponseParser(const HttpResponseParser&) = delete;
  HttpResponseParser& operator=(const HttpResponseParser&) = delete;

  // Ready for the next response: `headRequest` says whether it answers a
  // HEAD (which has no body whatever its headers say). Keeps the body mode
  // and sink, and the capacity of its strings. A new request: the count of
  // interim responses starts again (continueAfterInterim() goes on after a
  // 1xx of the same request).
  void start(bool headRequest);
  // After an interim response (kComplete with informational(), not 101):
  // ready for the next response to the same request. Unlike start(), the
  // interim responses so far keep counting against their limits, and the
  // response counts as started: a connection that ends now is kTruncated,
  // never kNoResponse (a byte of the answer has arrived).
  void continueAfterInterim();
  // Until changed. kStream hands the body to the sink (setBodySink()).
  void setBodyMode(BodyMode mode) { mode_ = mode; }
  void setBodySink(BodySink sink) { sink_ = std::move(sink); }

  // Consumes bytes from `buf`. kComplete: a whole response (or 1xx header
  // section) was read and nothing after it consumed; later calls return
  // kComplete without consuming until start(). kError: error() and
  // errorMessage() say why; later calls return kError until start().
  [[nodiscard]] Result parse(Buffer* buf);
  // The connection ended (EOF). kComplete when that ends a close-delimited
  // body (or the response was already complete); kError otherwise, with
  // Error::kNoResponse when no byte of this response had arrived.
  [[nodiscard]] Result finish();

  [[nodiscard]] int status() const { return status_; }
  [[nodiscard]] bool informational() const { return status_ >= 100 && status_ < 200; }
  // 0 for HTTP/1.0, 1 for HTTP/1.1 (a higher 1.x minor counts as 1).
  [[nodiscard]] int versionMinor() const { return versionMinor_; }
  [[nodiscard]] std::string_view reason() const;
  // The first field with this name (case-insensitive), trimmed; nullopt if
  // none. Valid until start().
  [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const;
  [[nodiscard]] size_t headerCount() const { return fields_.size(); }
  [[nodiscard]] std::string_view headerName(size_t i) const;
  [[nodiscard]] std::string_view headerValue(size_t i) const;

  // The body kept in memory (BodyMode::kStore).
  [[nodiscard]] const std::string& body() const { return body_; }
  [[nodiscard]] std::string takeBody();
  // Body bytes received so far, whatever the mode.
  [[nodiscard]] size_t bodyBytes() const { return bodyBytes_; }

  // After kComplete: whether the connection may carry another request
  // (HTTP/1.1 without "Connection: close", and a body that did not run to
  // the end of the connection). HTTP/1.0 responses are never kept.
  [[nodiscard]] bool keepAlive() const;
  // Some byte of this response (or of an interim response before it, see
  // continueAfterInterim()) has been consumed.
  [[nodiscard]] bool started() const { return seenBytes_; }
  [[nodiscard]] bool complete() const { return state_ == State::kComplete; }
  // The header section is complete (status() and header() are final).
  [[nodiscard]] bool headersDone() const;
  // The body runs to the end of the connection.
  [[nodiscard]] bool closeDelimited() const { return untilClose_; }

  [[nodiscard]] Error error() const { return error_; }
  [[nodiscard]] std::string_view errorMessage() const { return errorMessage_; }
  [[nodiscard]] const Limits& limits() const { return limits_; }

 private:
  enum class State : uint8_t {
    kStatusLine,
    kHeaders,
    kBody,        // Content-Length payload
    kUntilClose,  // close-delimited payload
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailers,
    kComplete,
    kError,
  };
  enum class Step : uint8_t { kContinue, kNeedMore, kStop };
  struct Field {
    uint32_t nameOffset;
    uint32_t nameLength;
    uint32_t valueOffset;
    uint32_t valueLength;
  };

  Step runState(const char*& p, const char* end);
  Step parseStatusLineState(const char*& p, const char* end);
  Step parseFieldsState(const char*& p, const char* end, bool trailers);
  Step parseBodyState(const char*& p, const char* end);
  Step parseUntilCloseState(const char*& p, const char* end);
  Step parseChunkSizeState(const char*& p, const char* end);
  Step parseChunkDataState(const char*& p, const char* end);
  Step parseChunkDataEndState(const char*& p, const char* end);

  bool parseStatusLine(std::string_view line);
  bool parseFieldLine(std::string_view line, bool trailer);
  bool onFramingField(std::string_view name, std::string_view value);
  void onTransferEncoding(std::string_view value);
  void noteUnsupportedCoding();
  Step finishInterim();
  Step finishHeaders();
  // Hands n body bytes at p to the body mode; false (and an error) past the
  // memory limit.
  bool deliver(const char* p, size_t n);
  Step done();
  Step fail(Error error, std::string message);

  Limits limits_;
  BodyMode mode_ = BodyMode::kStore;
  BodySink sink_;
  State state_ = State::kStatusLine;
  Error error_ = Error::kNone;
  bool headRequest_ = false;
  bool seenBytes_ = false;
  bool hasContentLength_ = false;
  bool hasTransferEncoding_ = false;
  bool chunked_ = false;
  bool unsupportedCoding_ = false;  // a transfer coding other than one chunked
  bool connectionClose_ = false;
  bool untilClose_ = false;  // the body ran (or runs) to the end of the connection
  int status_ = 0;
  int versionMinor_ = 1;
  uint32_t reasonLength_ = 0;  // the reason is the first bytes of text_
  size_t scanned_ = 0;
  size_t statusLineBytes_ = 0;
  size_t headerBytes_ = 0;
  size_t headerCount_ = 0;
  size_t contentLength_ = 0;
  size_t remaining_ = 0;
  size_t bodyBytes_ = 0;
  size_t codingField_ = 0;       // the Transfer-Encoding field with the first coding refused
  size_t interimResponses_ = 0;  // of this request (continueAfterInterim())
  size_t interimBytes_ = 0;
  std::string text_;  // the reason phrase, then every field's name and value
  std::vector<Field> fields_;
  std::string body_;
  std::string errorMessage_;
};

}  // namespace libnet::http
