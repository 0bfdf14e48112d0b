// The libFuzzer entry point for what a FastCGI application sends back
// (tools/fuzz.sh builds it with clang's -fsanitize=fuzzer; RecordFuzzerTest
// links the same file with gcc and replays the seed corpus through it).
//
// The input is the application's byte stream. RecordDecoder reads it twice,
// all at once and in pieces of 1..64 bytes (the first byte picks the size),
// and both must see the same records and the same verdict. Every record
// re-encoded by RecordEncoder must decode to itself; FCGI_PARAMS content that
// decodes as name-value pairs must encode back to the same bytes; the
// FCGI_STDOUT stream goes through CgiResponseParser whole and byte by byte,
// with the same outcome.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/fastcgi/CgiResponseParser.h"
#include "net/fastcgi/RecordDecoder.h"
#include "net/fastcgi/RecordEncoder.h"

namespace {

using libnet::fastcgi::CgiResponseParser;
using libnet::fastcgi::EndRequest;
using libnet::fastcgi::ParamList;
using libnet::fastcgi::Record;
using libnet::fastcgi::RecordDecoder;
using libnet::fastcgi::RecordEncoder;
using libnet::fastcgi::RecordType;

struct Decoded {
  RecordType type;
  uint16_t requestId;
  std::string content;
  bool operator==(const Decoded&) const = default;
};

struct Trace {
  std::vector<Decoded> records;
  bool failed = false;
  bool operator==(const Trace&) const = default;
};

void check(bool ok) {
  if (!ok) std::abort();
}

Trace decodeStream(std::string_view input, size_t step) {
  Trace trace;
  RecordDecoder decoder;
  std::string buffer;
  size_t fed = 0;
  while (true) {
    Record record;
    size_t used = 0;
    const RecordDecoder::Status status = decoder.decode(buffer, &record, &used);
    if (status == RecordDecoder::Status::kError) {
      check(!decoder.error().empty());
      trace.failed = true;
      return trace;
    }
    if (status == RecordDecoder::Status::kRecord) {
      check(used >= libnet::fastcgi::kHeaderLength + record.content.size() &&
            used <= buffer.size());
      trace.records.push_back({record.type, record.requestId, std::string(record.content)});
      buffer.erase(0, used);
      continue;
    }
    if (fed == input.size()) return trace;
    const size_t n = std::min(step, input.size() - fed);
    buffer.append(input.substr(fed, n));
    fed += n;
  }
}

void checkRecordRoundTrip(const Decoded& d) {
  std::string bytes;
  RecordEncoder(d.requestId).record(&bytes, d.type, d.content);
  check(bytes.size() % 8 == 0);
  Trace again = decodeStream(bytes, bytes.size());
  check(!again.failed && again.records.size() == 1 && again.records[0] == d);
}

void checkParams(const std::string& content) {
  ParamList pairs;
  if (!RecordDecoder::decodeNameValues(content, &pairs)) return;
  std::string encoded;
  for (const auto& [name, value] : pairs) RecordEncoder::appendNameValue(&encoded, name, value);
  ParamList again;
  check(RecordDecoder::decodeNameValues(encoded, &again) && again == pairs);
}

struct HeadOutcome {
  CgiResponseParser::Status status = CgiResponseParser::Status::kNeedMore;
  int code = 0;
  std::string body;
};

HeadOutcome parseHead(std::string_view stdoutBytes, size_t step) {
  CgiResponseParser parser(4096);
  HeadOutcome out;
  while (!stdoutBytes.empty()) {
    std::string_view piece = stdoutBytes.substr(0, step);
    stdoutBytes.remove_prefix(piece.size());
    out.status = parser.feed(&piece);
    if (out.status == CgiResponseParser::Status::kError) return out;
    if (out.status == CgiResponseParser::Status::kDone) {
      const libnet::http::HttpResponse head = parser.takeHead();
      out.code = head.status();
      check(out.code >= 200 && out.code <= 599);
      out.body = std::string(piece) + std::string(stdoutBytes);
      return out;
    }
    check(piece.empty());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t step = size == 0 ? 1 : data[0] % 64 + 1;
  const Trace whole = decodeStream(input, input.size() == 0 ? 1 : input.size());
  check(whole == decodeStream(input, step));
  std::string stdoutBytes;
  std::string params;
  for (const Decoded& d : whole.records) {
    checkRecordRoundTrip(d);
    if (d.type == RecordType::kStdout) stdoutBytes += d.content;
    if (d.type == RecordType::kParams) params += d.content;
    if (d.type == RecordType::kEndRequest) {
      EndRequest end;
      (void)RecordDecoder::decodeEndRequest(d.content, &end);
    }
  }
  checkParams(params);
  const HeadOutcome a = parseHead(stdoutBytes, stdoutBytes.size() + 1);
  const HeadOutcome b = parseHead(stdoutBytes, 1);
  check(a.status == b.status && a.code == b.code && a.body == b.body);
  return 0;
}
