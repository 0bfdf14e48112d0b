// The libFuzzer entry point for HttpParser (tools/fuzz.sh builds it with
// clang's -fsanitize=fuzzer; HttpParserFuzzerTest links the same file with
// gcc and replays the seed corpus through it).
//
// The input is one client's byte stream. It is parsed twice, by one parser
// that gets it all in one buffer and by one that gets it in the pieces of a
// SplitPlan, and the two must reach the same verdict (ParseTrace::difference)
// while no invariant ParseTrace checks breaks. That turns every way in which
// the parser's incremental state (the partial line left in the caller's
// buffer, the scanned-so-far offset, a CRLF split after chunk data, a limit
// judged on an incomplete line) could depend on how the bytes arrived into a
// crash, besides the memory errors and undefined behaviour the sanitizers
// catch. Each input runs under the default limits and under small ones that
// short inputs can exceed, so the 413/414/431 paths are reached too.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/http/HttpParser.h"
#include "tests/net/http/fuzz/ParseTrace.h"
#include "tests/net/http/fuzz/SplitPlan.h"

namespace {

using libnet::http::HttpParser;
using libnet::http::fuzz::ParseTrace;
using libnet::http::fuzz::SplitPlan;

struct LimitsCase {
  const char* name;
  HttpParser::Limits limits;
  uint64_t salt;  // so that the cases split the same input differently
  ParseTrace::Mode mode = ParseTrace::Mode::kWhole;
};

HttpParser::Limits smallLimits() {
  HttpParser::Limits l;
  l.maxRequestLine = 64;
  l.maxHeaderBytes = 256;
  l.maxHeaderCount = 8;
  l.maxBodyBytes = 128;
  return l;
}

const LimitsCase kCases[] = {
    {"default limits", HttpParser::Limits{}, 0},
    {"small limits", smallLimits(), 0x5eed},
    // Stopping at each head and streaming the body in pieces (HttpServer's
    // router with Route::kStreamedBody).
    {"streamed bodies", HttpParser::Limits{}, 0x57, ParseTrace::Mode::kStreamed},
    {"streamed, small limits", smallLimits(), 0x5eed57, ParseTrace::Mode::kStreamed},
};

// libFuzzer reports an abort() as a crash and keeps the input; the line on
// stderr says which check failed.
[[noreturn]] void fail(const LimitsCase& c, size_t size, std::string_view what,
                       const std::string& detail) {
  std::fprintf(stderr, "HttpParserFuzzer: %s, %zu-byte input: %.*s: %s\n", c.name, size,
               static_cast<int>(what.size()), what.data(), detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (const LimitsCase& c : kCases) {
    const size_t all[] = {size};
    const ParseTrace whole = ParseTrace::run(input, all, c.limits, c.mode);
    if (!whole.violation().empty()) fail(c, size, "whole input", whole.violation());

    const std::vector<size_t> pieces = SplitPlan::piecesFor(input, c.salt);
    const ParseTrace split = ParseTrace::run(input, pieces, c.limits, c.mode);
    if (!split.violation().empty()) {
      fail(c, size, "split into " + std::to_string(pieces.size()) + " pieces", split.violation());
    }
    const std::string diff = ParseTrace::difference(whole, split);
    if (!diff.empty()) {
      fail(c, size, "whole vs split into " + std::to_string(pieces.size()) + " pieces", diff);
    }
  }
  return 0;
}
