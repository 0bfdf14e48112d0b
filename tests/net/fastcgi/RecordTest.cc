// The FastCGI records: what RecordEncoder writes RecordDecoder reads back,
// at every boundary (name-value lengths 127/128, content 65535/65536, input
// cut anywhere), and the decoder refuses what breaks the framing.
#include <gtest/gtest.h>

#include <string>

#include "net/fastcgi/RecordDecoder.h"
#include "net/fastcgi/RecordEncoder.h"

namespace libnet::fastcgi {
namespace {

// Every record in `bytes`, fed `step` bytes at a time.
std::vector<std::pair<RecordType, std::string>> decodeAll(const std::string& bytes, size_t step,
                                                          RecordDecoder* decoder) {
  std::vector<std::pair<RecordType, std::string>> out;
  std::string input;
  size_t fed = 0;
  while (fed < bytes.size() || !input.empty()) {
    const size_t n = std::min(step, bytes.size() - fed);
    input.append(bytes, fed, n);
    fed += n;
    while (true) {
      Record record;
      size_t used = 0;
      const RecordDecoder::Status status = decoder->decode(input, &record, &used);
      if (status == RecordDecoder::Status::kError) return out;
      if (status == RecordDecoder::Status::kNeedMore) break;
      EXPECT_EQ(record.requestId, 7);
      out.emplace_back(record.type, std::string(record.content));
      input.erase(0, used);
    }
    if (n == 0) break;
  }
  return out;
}

TEST(RecordTest, RequestRoundTripsAtAnyCut) {
  const RecordEncoder encoder(7);
  ParamList params = {{"SHORT", "v"},
                      {std::string(127, 'n'), std::string(128, 'v')},
                      {std::string(128, 'N'), std::string(70000, 'x')},
                      {"EMPTY", ""}};
  std::string bytes;
  encoder.beginRequest(&bytes, Role::kResponder, true);
  encoder.params(&bytes, params);
  const std::string body(65536 * 2 + 3, 'b');
  encoder.stream(&bytes, RecordType::kStdin, body);
  encoder.endStream(&bytes, RecordType::kStdin);
  EXPECT_EQ(bytes.size() % 8, 0u);  // padded

  for (size_t step : {size_t{1}, size_t{7}, size_t{8}, size_t{4096}, bytes.size()}) {
    RecordDecoder decoder;
    const auto records = decodeAll(bytes, step, &decoder);
    ASSERT_FALSE(decoder.failed()) << decoder.error();
    ASSERT_GE(records.size(), 4u);
    EXPECT_EQ(records.front().first, RecordType::kBeginRequest);
    EXPECT_EQ(records.front().second, std::string("\0\1\1\0\0\0\0\0", 8));
    std::string pairs;
    std::string stdinBytes;
    int emptyParams = 0;
    int emptyStdin = 0;
    for (const auto& [type, content] : records) {
      EXPECT_LE(content.size(), kMaxContentLength);
      if (type == RecordType::kParams) {
        pairs += content;
        emptyParams += content.empty();
      } else if (type == RecordType::kStdin) {
        stdinBytes += content;
        emptyStdin += content.empty();
      }
    }
    EXPECT_EQ(emptyParams, 1);
    EXPECT_EQ(emptyStdin, 1);
    EXPECT_EQ(stdinBytes, body);
    ParamList decoded;
    ASSERT_TRUE(RecordDecoder::decodeNameValues(pairs, &decoded));
    EXPECT_EQ(decoded, params);
  }
}

TEST(RecordTest, NameValueLengthsUseOneOrFourBytes) {
  std::string out;
  RecordEncoder::appendNameValue(&out, std::string(127, 'a'), std::string(128, 'b'));
  ASSERT_EQ(out.size(), 1 + 4 + 127 + 128u);
  EXPECT_EQ(static_cast<uint8_t>(out[0]), 127);
  EXPECT_EQ(static_cast<uint8_t>(out[1]), 0x80);
  EXPECT_EQ(static_cast<uint8_t>(out[4]), 128);
}

TEST(RecordTest, NameValuesRunningPastTheEndAreRefused) {
  ParamList out;
  EXPECT_FALSE(RecordDecoder::decodeNameValues(std::string("\x05\x01"
                                                           "abc",
                                                           5),
                                               &out));
  EXPECT_FALSE(RecordDecoder::decodeNameValues(std::string("\x80\x00\x00", 3), &out));
  EXPECT_FALSE(RecordDecoder::decodeNameValues(std::string("\x01", 1), &out));
  EXPECT_FALSE(RecordDecoder::decodeNameValues(std::string("\xff\xff\xff\xff\x00", 5), &out));
  EXPECT_TRUE(RecordDecoder::decodeNameValues(std::string("\x01\x00"
                                                          "a",
                                                          3),
                                              &out));
}

TEST(RecordTest, EndRequestRoundTrips) {
  std::string bytes;
  RecordEncoder(7).endRequest(&bytes, 0x01020304, ProtocolStatus::kOverloaded);
  RecordDecoder decoder;
  Record record;
  size_t used = 0;
  ASSERT_EQ(decoder.decode(bytes, &record, &used), RecordDecoder::Status::kRecord);
  EXPECT_EQ(used, bytes.size());
  EndRequest end;
  ASSERT_TRUE(RecordDecoder::decodeEndRequest(record.content, &end));
  EXPECT_EQ(end.appStatus, 0x01020304u);
  EXPECT_EQ(end.protocolStatus, ProtocolStatus::kOverloaded);
  EXPECT_FALSE(RecordDecoder::decodeEndRequest(std::string(8, '\0').replace(4, 1, "\x09"), &end));
}

// A header of `type` and `length` with version `version`.
std::string header(uint8_t version, uint8_t type, uint16_t length, uint8_t padding = 0) {
  return std::string{static_cast<char>(version),
                     static_cast<char>(type),
                     0,
                     7,
                     static_cast<char>(length >> 8),
                     static_cast<char>(length & 0xff),
                     static_cast<char>(padding),
                     0};
}

TEST(RecordTest, StrictOnTheHeaderAlone) {
  struct Case {
    std::string bytes;
    const char* what;
  };
  const Case cases[] = {
      {header(0, 6, 0), "version 0"},
      {header(2, 6, 0), "version 2"},
      {header(1, 0, 0), "type 0"},
      {header(1, 12, 0), "type 12"},
      {header(1, 255, 0), "type 255"},
      {header(1, 3, 7), "END_REQUEST of 7"},
      {header(1, 3, 9), "END_REQUEST of 9"},
      {header(1, 1, 0), "BEGIN_REQUEST of 0"},
      {header(1, 2, 1), "ABORT_REQUEST of 1"},
      {header(1, 11, 16), "UNKNOWN_TYPE of 16"},
      {"HTTP/1.1 200 OK\r\n", "HTTP instead"},
  };
  for (const Case& c : cases) {
    RecordDecoder decoder;
    Record record;
    size_t used = 0;
    EXPECT_EQ(decoder.decode(c.bytes, &record, &used), RecordDecoder::Status::kError) << c.what;
    EXPECT_FALSE(decoder.error().empty()) << c.what;
    // Failed for good: a valid record after it is not read.
    std::string good;
    RecordEncoder(7).record(&good, RecordType::kStdout, "x");
    EXPECT_EQ(decoder.decode(good, &record, &used), RecordDecoder::Status::kError) << c.what;
  }
}

TEST(RecordTest, PaddingIsSkippedAndWaitedFor) {
  std::string bytes = header(1, 6, 3, 255) + "abc" + std::string(255, 'p');
  RecordDecoder decoder;
  Record record;
  size_t used = 0;
  EXPECT_EQ(decoder.decode(std::string_view(bytes).substr(0, bytes.size() - 1), &record, &used),
            RecordDecoder::Status::kNeedMore);
  ASSERT_EQ(decoder.decode(bytes, &record, &used), RecordDecoder::Status::kRecord);
  EXPECT_EQ(record.content, "abc");
  EXPECT_EQ(used, bytes.size());
  EXPECT_EQ(decoder.decode(std::string_view(bytes).substr(0, 7), &record, &used),
            RecordDecoder::Status::kNeedMore);
}

}  // namespace
}  // namespace libnet::fastcgi
