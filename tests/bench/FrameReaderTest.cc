// ws_load's FrameReader (bench/websocket): messages whole, fragmented, fed a
// byte at a time, with each length encoding; control frames between
// fragments; protocol errors named.
#include "bench/websocket/FrameReader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "bench/websocket/WsClientProtocol.h"

namespace wsload {
namespace {

struct Seen {
  int opcode;
  bool compressed;
  uint64_t wireBytes;
  std::string payload;
};

class Recorder : public FrameSink {
 public:
  bool onMessage(int opcode, bool compressed, uint64_t wireBytes,
                 const std::string& payload) override {
    messages.push_back({opcode, compressed, wireBytes, payload});
    return true;
  }
  bool onControl(int opcode, const std::string& payload) override {
    controls.push_back({opcode, false, payload.size(), payload});
    return true;
  }
  std::vector<Seen> messages;
  std::vector<Seen> controls;
};

// An unmasked server frame.
std::string frame(int opcode, bool fin, std::string_view payload, bool rsv1 = false) {
  std::string out;
  out.push_back(static_cast<char>((fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode));
  const uint64_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(n));
  } else if (n <= 0xffff) {
    out.push_back(126);
    for (int shift = 8; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  } else {
    out.push_back(127);
    for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  }
  return out + std::string(payload);
}

bool feedAll(FrameReader& reader, const std::string& bytes, Recorder& sink, size_t step) {
  for (size_t i = 0; i < bytes.size(); i += step) {
    const size_t n = std::min(step, bytes.size() - i);
    if (!reader.feed(reinterpret_cast<const uint8_t*>(bytes.data() + i), n, sink)) return false;
  }
  return true;
}

TEST(FrameReaderTest, EveryLengthEncodingWholeAndByteByByte) {
  const std::string small = makePayload(125), medium = makePayload(65535),
                    large = makePayload(70000);
  const std::string stream = frame(kOpBinary, true, small) + frame(kOpText, true, medium) +
                             frame(kOpBinary, true, large) + frame(kOpBinary, true, "");
  for (size_t step : {stream.size(), size_t{1}, size_t{7}}) {
    FrameReader reader(true);
    Recorder sink;
    ASSERT_TRUE(feedAll(reader, stream, sink, step)) << reader.error();
    ASSERT_EQ(sink.messages.size(), 4u);
    EXPECT_EQ(sink.messages[0].payload, small);
    EXPECT_EQ(sink.messages[1].opcode, kOpText);
    EXPECT_EQ(sink.messages[1].payload, medium);
    EXPECT_EQ(sink.messages[2].payload, large);
    EXPECT_EQ(sink.messages[2].wireBytes, 70000u);
    EXPECT_EQ(sink.messages[3].wireBytes, 0u);
  }
}

TEST(FrameReaderTest, FragmentsJoinAroundAPing) {
  const std::string stream = frame(kOpText, false, "hel", true) + frame(kOpPing, true, "p") +
                             frame(0, false, "lo ") + frame(0, true, "world");
  FrameReader reader(true);
  Recorder sink;
  ASSERT_TRUE(feedAll(reader, stream, sink, 2)) << reader.error();
  ASSERT_EQ(sink.messages.size(), 1u);
  EXPECT_EQ(sink.messages[0].opcode, kOpText);
  EXPECT_TRUE(sink.messages[0].compressed);
  EXPECT_EQ(sink.messages[0].payload, "hello world");
  ASSERT_EQ(sink.controls.size(), 1u);
  EXPECT_EQ(sink.controls[0].opcode, kOpPing);
  EXPECT_EQ(sink.controls[0].payload, "p");
}

TEST(FrameReaderTest, WithoutKeepPayloadCountsOnly) {
  FrameReader reader(false);
  Recorder sink;
  ASSERT_TRUE(feedAll(reader, frame(kOpBinary, false, "abc") + frame(0, true, "de"), sink, 64));
  ASSERT_EQ(sink.messages.size(), 1u);
  EXPECT_EQ(sink.messages[0].wireBytes, 5u);
  EXPECT_EQ(sink.messages[0].payload, "");
}

TEST(FrameReaderTest, ProtocolErrorsAreNamed) {
  std::string masked = frame(kOpBinary, true, "x");
  masked[1] = static_cast<char>(masked[1] | 0x80);
  const std::pair<std::string, std::string> cases[] = {
      {masked, "masked frame from the server"},
      {frame(0, true, "x"), "continuation frame outside a message"},
      {frame(kOpText, false, "a") + frame(kOpText, true, "b"),
       "new message inside a fragmented one"},
      {frame(kOpPing, false, "x"), "bad control frame"},
      {frame(3, true, "x"), "bad opcode"},
  };
  for (const auto& [bytes, why] : cases) {
    FrameReader reader(true);
    Recorder sink;
    EXPECT_FALSE(feedAll(reader, bytes, sink, bytes.size())) << why;
    EXPECT_EQ(reader.error(), why);
  }
}

}  // namespace
}  // namespace wsload
