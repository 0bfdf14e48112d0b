// ParseTrace: what one HttpParser made of one byte stream, fed in pieces of
// given sizes the way a connection feeds it: every complete request recorded,
// then reset() and parse on; the run stops at the first error or when the
// input is used up. Two traces of the same input fed in different pieces must
// be equal (difference() says where they are not); that is the property the
// HTTP parser fuzzer checks.
//
// While feeding, the trace also checks invariants that need no second parse
// to judge (parse() never consumes more than it was given, an error status is
// one of the documented ones, a complete request is not re-consumed, ...) and
// keeps the first one broken in violation().
//
// In kStreamed mode the parser stops at every head (setStopAfterHead) and
// streams each body (streamBody, bounded by limits.maxBodyBytes); the trace
// takes every piece at once and records the pieces joined as the body, so
// the two modes of one input are the same requests.
//
// A plain value built by run(); any thread, no shared state.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/Buffer.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpRequest.h"

namespace libnet::http::fuzz {

class ParseTrace {
 public:
  // Everything a parsed request exposes, as a comparable value.
  struct Request {
    Method method = Method::kGet;
    Version version = Version::kHttp11;
    std::string target;
    std::string path;
    std::string query;
    std::vector<HttpRequest::Header> headers;
    std::string body;
    bool keepAlive = false;

    bool operator==(const Request&) const = default;
  };

  enum class Mode { kWhole, kStreamed };

  // Feeds `input` to a fresh parser with these limits. The piece sizes must
  // add up to input.size(). Each piece goes into a new Buffer behind the bytes
  // the previous parse() left unconsumed (as HttpParser.h requires), and the
  // old buffer is overwritten before it is freed, so a parser that kept a
  // pointer into it reads garbage even without ASan.
  [[nodiscard]] static ParseTrace run(std::string_view input, std::span<const size_t> pieces,
                                      const HttpParser::Limits& limits, Mode mode = Mode::kWhole);

  // Empty when the two traces are the same verdict: the same requests, field
  // by field, and the same end (the same error, or both waiting for more with
  // the same unconsumed bytes). Otherwise a short description of the first
  // difference found.
  [[nodiscard]] static std::string difference(const ParseTrace& a, const ParseTrace& b);

  [[nodiscard]] const std::vector<Request>& requests() const { return requests_; }
  // Whether the run ended in kError; otherwise the last parse() said kNeedMore.
  [[nodiscard]] bool error() const { return error_; }
  [[nodiscard]] int errorStatus() const { return errorStatus_; }
  [[nodiscard]] const std::string& errorMessage() const { return errorMessage_; }
  // The bytes still unconsumed when the input ran out (without an error).
  [[nodiscard]] const std::string& leftover() const { return leftover_; }
  // The first invariant found broken, or empty.
  [[nodiscard]] const std::string& violation() const { return violation_; }

 private:
  ParseTrace(const HttpParser::Limits& limits, Mode mode) : limits_(limits), mode_(mode) {}

  // parse() until the parser needs more bytes or fails; true on failure.
  bool drain(HttpParser& parser, Buffer& buf);
  void checkComplete(HttpParser& parser, Buffer& buf);
  // kHead and kPiece (kStreamed mode).
  void onHead(HttpParser& parser);
  void onPiece(HttpParser& parser, Buffer& buf);
  void checkRequest(const HttpRequest& request);
  void checkError(HttpParser& parser, Buffer& buf);
  void checkNeedMore(const HttpParser& parser, const Buffer& buf);
  void violate(std::string_view what);

  HttpParser::Limits limits_;
  Mode mode_;
  std::string streamedBody_;  // the pieces of the request being parsed
  std::vector<Request> requests_;
  bool error_ = false;
  int errorStatus_ = 0;
  std::string errorMessage_;
  std::string leftover_;
  std::string violation_;
  size_t consumedSinceReset_ = 0;
};

}  // namespace libnet::http::fuzz
