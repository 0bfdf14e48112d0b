// HttpParser: an incremental HTTP/1.x request parser (RFC 9112), one per
// connection, used on that connection's loop thread only (not thread-safe).
//
// parse() takes whatever bytes have arrived, consumes complete lines and body
// bytes, and leaves an incomplete line in the caller's buffer for the next
// call. The buffer may be a different object on every call (a per-loop
// scratch buffer); the parser keeps no pointer into it and copies what it
// keeps into its HttpRequest, and bodies are moved out of the buffer as they
// arrive, so a request never needs to fit in the buffer at once.
//
// Typical use:
//   switch (parser.parse(buf)) {
//     case Result::kNeedMore: return;                  // wait for bytes
//     case Result::kComplete: handle(parser.request()); parser.reset(); ...parse again
//     case Result::kError: answer errorStatus(), close.
//   }
// Parsing stops right after a complete request, so the bytes of a pipelined
// next request stay in the buffer until reset() and the next parse().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/Buffer.h"
#include "net/http/HttpRequest.h"

namespace libnet::http {

class HttpParser {
 public:
  struct Limits {
    // The request line, its line end included -> 414.
    size_t maxRequestLine = 8 * 1024;
    // All field lines plus the blank line ending the section, line ends
    // included; trailers of a chunked body count against the same budget -> 431.
    size_t maxHeaderBytes = 64 * 1024;
    // Field lines, trailers included -> 431.
    size_t maxHeaderCount = 100;
    // The payload after de-chunking -> 413, as soon as a Content-Length or a
    // chunk size shows it would be exceeded.
    size_t maxBodyBytes = 1024 * 1024;
  };

  enum class Result { kNeedMore, kComplete, kError };

  HttpParser() : HttpParser(Limits{}) {}
  explicit HttpParser(Limits limits);

  HttpParser(const HttpParser&) = delete;
  HttpParser& operator=(const HttpParser&) = delete;

  // Consumes bytes from `buf` (see the file comment). Whatever it leaves
  // unconsumed must come first in the buffer of the next call: the parser
  // remembers how much of an incomplete line it has already searched.
  // kComplete: request() is a whole request and nothing after it was
  // consumed; call reset() before parsing on. Until then, calls return
  // kComplete without consuming.
  // kError: errorStatus() is the status to answer (400, 413, 414, 417, 431,
  // 501 or 505) and the connection should be closed; every later call returns
  // kError until reset().
  [[nodiscard]] Result parse(Buffer* buf);

  [[nodiscard]] const HttpRequest& request() const { return request_; }
  [[nodiscard]] HttpRequest& request() { return request_; }

  // 0 unless the last parse() returned kError.
  [[nodiscard]] int errorStatus() const { return errorStatus_; }
  // A short reason for logs and error pages, e.g. "invalid field name";
  // empty unless in error.
  [[nodiscard]] std::string_view errorMessage() const { return errorMessage_; }

  // Ready for the next request on the same connection. Keeps the request's
  // string capacity, except that a body buffer grown past 64 KiB is freed.
  void reset();

  // Some bytes of a request (blank lines before it included) have been seen
  // and it is not yet complete: the connection is mid-request rather than
  // idle. False after kComplete and after kError.
  [[nodiscard]] bool midRequest() const;
  // The request line or the header section is not yet complete (true for a
  // fresh parser waiting for its first byte).
  [[nodiscard]] bool inHeaderPhase() const {
    return state_ == State::kRequestLine || state_ == State::kHeaders;
  }
  // Body bytes of the current request that the parser holds or has been told
  // to expect: the whole Content-Length once the headers are done; for a
  // chunked body, the chunks announced so far (the one arriving included).
  // What a server has to find room for before the bytes come.
  [[nodiscard]] size_t bodyBytesCommitted() const { return request_.body_.size() + remaining_; }

  [[nodiscard]] const Limits& limits() const { return limits_; }

 private:
  enum class State : uint8_t {
    kRequestLine,
    kHeaders,
    kBody,       // Content-Length payload
    kChunkSize,  // chunk-size [ chunk-ext ] CRLF
    kChunkData,
    kChunkDataEnd,  // the CRLF after a chunk's data
    kTrailers,
    kComplete,
    kError,
  };

  // What a state handler asks parse() to do next.
  enum class Step : uint8_t { kContinue, kNeedMore, kStop };

  Step parseRequestLineState(const char*& p, const char* end);
  Step parseHeadersState(const char*& p, const char* end);
  Step parseBodyState(const char*& p, const char* end);
  Step parseChunkSizeState(const char*& p, const char* end);
  Step parseChunkDataState(const char*& p, const char* end);
  Step parseChunkDataEndState(const char*& p, const char* end);
  Step parseTrailersState(const char*& p, const char* end);

  // The '\n' ending the line that starts at p, or nullptr. Remembers how far
  // an incomplete line was scanned: the caller leaves it at the front of the
  // next buffer, and a line arriving a byte at a time is not rescanned.

  bool parseRequestLine(std::string_view line);
  bool parseTarget();
  bool parseFieldLine(std::string_view line, bool trailer);
  // A header field that passed parseFieldLine (never a trailer): stored, and
  // acted on when it is one the parser itself must read (Host, Expect,
  // Connection, the framing ones).
  bool onField(std::string_view name, std::string_view value);
  bool onContentLength(std::string_view value);
  bool onTransferEncoding(std::string_view value);
  void onConnection(std::string_view value);
  Step finishHeaders();
  Step complete();
  Step fail(int status, std::string_view message);

  Limits limits_;
  HttpRequest request_;
  State state_ = State::kRequestLine;
  bool seenBytes_ = false;
  bool hasHost_ = false;
  bool hasContentLength_ = false;
  bool chunked_ = false;
  bool connectionClose_ = false;
  bool connectionKeepAlive_ = false;
  size_t scanned_ = 0;      // bytes of the incomplete line already searched
  size_t headerBytes_ = 0;  // field section (and trailer) bytes so far
  size_t headerCount_ = 0;  // field lines so far, trailers included
  size_t contentLength_ = 0;
  size_t remaining_ = 0;  // payload bytes still due (Content-Length or chunk)
  int errorStatus_ = 0;
  std::string_view errorMessage_;
};

}  // namespace libnet::http
