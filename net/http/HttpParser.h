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
//
// A server that decides per request how its body is read (HttpServer's
// router) sets setStopAfterHead(true): parse() then returns kHead once the
// request's head is complete, before any body byte, and waits there until
// readBodyWhole() (the body goes into request().body(), under
// Limits::maxBodyBytes, as without the stop) or streamBody() (the body is
// handed out in pieces): in that mode parse() returns kPiece with piece() a
// run of payload bytes (de-chunked) at the front of the buffer, which stays
// there until takePiece() consumes it; a caller that cannot take it yet
// leaves it, and the next parse() returns it again (with whatever arrived
// behind it). The body is never copied by the parser in that mode.
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

  // kHead and kPiece only in the modes above (setStopAfterHead, streamBody).
  enum class Result { kNeedMore, kComplete, kError, kHead, kPiece };

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

  // Stop at every request's head (kHead); kept across reset().
  void setStopAfterHead(bool on) { stopAfterHead_ = on; }
  // After kHead: the body is read whole into request().body(); a
  // Content-Length over Limits::maxBodyBytes makes the next parse() kError
  // (413), as it would have been without the stop.
  void readBodyWhole();
  // After kHead: the body comes as pieces (kPiece). `maxBytes` (0: none)
  // bounds it instead of Limits::maxBodyBytes: a Content-Length over it makes
  // the next parse() kError (413), and so does a chunk that would take the
  // body past it.
  void streamBody(uint64_t maxBytes);
  // After kPiece: the payload bytes at the front of the buffer parse() was
  // given (valid until that buffer changes).
  [[nodiscard]] std::string_view piece(const Buffer& buf) const {
    return std::string_view(buf.peek(), pieceBytes_);
  }
  // Consumes the piece from `buf`, which must be the buffer (or hold the
  // same bytes at its front) that parse() returned kPiece for.
  void takePiece(Buffer* buf);
  [[nodiscard]] bool streamingBody() const { return streamed_; }
  // Payload bytes taken with takePiece() for this request.
  [[nodiscard]] uint64_t streamedBytes() const { return streamedBytes_; }
  // After the head: the Content-Length (0 when there is none and no body),
  // or -1 for a chunked body.
  [[nodiscard]] int64_t announcedLength() const {
    return chunked_ ? -1 : static_cast<int64_t>(contentLength_);
  }

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
    kHead,       // the head is complete; waiting for readBodyWhole() or streamBody()
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
  // The head is complete and the body's mode chosen: read on.
  void enterBody();
  // kBody and kChunkData in streamBody() mode: a piece of [p, end).
  Step offerPiece(const char* p, const char* end);
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
  bool stopAfterHead_ = false;
  bool streamed_ = false;
  size_t scanned_ = 0;      // bytes of the incomplete line already searched
  size_t headerBytes_ = 0;  // field section (and trailer) bytes so far
  size_t headerCount_ = 0;  // field lines so far, trailers included
  size_t contentLength_ = 0;
  size_t remaining_ = 0;   // payload bytes still due (Content-Length or chunk)
  size_t pieceBytes_ = 0;  // the piece the last kPiece offered
  uint64_t streamMax_ = 0;
  uint64_t streamedBytes_ = 0;
  int errorStatus_ = 0;
  std::string_view errorMessage_;
};

}  // namespace libnet::http
