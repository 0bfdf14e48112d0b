#include "net/websocket/Sender.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "net/Buffer.h"
#include "net/websocket/Receiver.h"

namespace libnet::ws {
namespace {

struct ParsedFrame {
  uint8_t first;
  bool masked;
  uint32_t key;
  std::string payload;  // unmasked
};

// Splits a sender's output into frames (trusting its lengths).
std::vector<ParsedFrame> frames(std::string_view wire) {
  std::vector<ParsedFrame> out;
  const auto* p = reinterpret_cast<const unsigned char*>(wire.data());
  size_t i = 0;
  while (i < wire.size()) {
    ParsedFrame f{p[i], (p[i + 1] & 0x80) != 0, 0, {}};
    uint64_t length = p[i + 1] & 0x7f;
    i += 2;
    const size_t extended = length == 126 ? 2 : (length == 127 ? 8 : 0);
    if (extended) length = 0;
    for (size_t k = 0; k < extended; ++k) length = (length << 8) | p[i++];
    for (size_t k = 0; f.masked && k < 4; ++k) f.key = (f.key << 8) | p[i++];
    f.payload.assign(wire.substr(i, length));
    if (f.masked) maskPayload(f.payload.data(), f.payload.size(), f.key);
    i += length;
    out.push_back(std::move(f));
  }
  return out;
}

TEST(SenderTest, ServerFramesAreUnmaskedClientFramesMaskedWithFreshKeys) {
  Sender server(Role::kServer);
  Buffer wire;
  server.appendMessage(&wire, MessageType::kText, "hello");
  auto parsed = frames(wire.view());
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].first, 0x81);
  EXPECT_FALSE(parsed[0].masked);
  EXPECT_EQ(parsed[0].payload, "hello");

  Sender client(Role::kClient);
  Buffer clientWire;
  for (int i = 0; i < 100; ++i) client.appendMessage(&clientWire, MessageType::kBinary, "data");
  std::set<uint32_t> keys;
  for (const ParsedFrame& f : frames(clientWire.view())) {
    EXPECT_TRUE(f.masked);
    EXPECT_EQ(f.first, 0x82);
    EXPECT_EQ(f.payload, "data");
    keys.insert(f.key);
  }
  EXPECT_GE(keys.size(), 99u);
}

TEST(SenderTest, FragmentSizeSplitsTheMessage) {
  Sender sender(Role::kServer);
  Buffer wire;
  sender.appendMessage(&wire, MessageType::kText, "abcdefghij", 4);
  auto parsed = frames(wire.view());
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].first, 0x01);
  EXPECT_EQ(parsed[1].first, 0x00);
  EXPECT_EQ(parsed[2].first, 0x80);
  EXPECT_EQ(parsed[0].payload + parsed[1].payload + parsed[2].payload, "abcdefghij");
  Buffer empty;
  sender.appendMessage(&empty, MessageType::kBinary, "", 4);
  EXPECT_EQ(std::string(empty.view()), std::string("\x82\x00", 2));
}

TEST(SenderTest, CompressionSetsRsv1OnTheFirstFrameOnly) {
  DeflateParams params;
  DeflateOptions options;
  options.minMessageSize = 10;
  Sender sender(Role::kServer, params, options);
  Buffer wire;
  const std::string big(3000, 'q');
  sender.appendMessage(&wire, MessageType::kText, big, 4);
  sender.appendMessage(&wire, MessageType::kText, "short");
  auto parsed = frames(wire.view());
  ASSERT_GE(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].first, 0x41);
  for (size_t i = 1; i + 1 < parsed.size(); ++i) EXPECT_EQ(parsed[i].first & 0x70, 0) << i;
  EXPECT_EQ(parsed.back().first, 0x81);  // under minMessageSize: plain
  EXPECT_EQ(parsed.back().payload, "short");
  Receiver receiver(Role::kClient, {}, params);
  ASSERT_EQ(receiver.next(&wire), Receiver::Event::kMessage);
  EXPECT_EQ(receiver.payload(), big);
  ASSERT_EQ(receiver.next(&wire), Receiver::Event::kMessage);
  EXPECT_EQ(receiver.payload(), "short");
}

// Compressed messages are framed in place, behind whatever the buffer
// already holds: every fragment size around the header's length encodings
// (7-bit, 16-bit, 64-bit), both roles (a client's frames masked), against
// the compressed bytes a separate Deflater makes.
TEST(SenderTest, CompressedFramesInPlaceForEveryFragmentSize) {
  std::mt19937 random(43);
  std::string message(200 * 1024, '\0');
  for (char& c : message) c = static_cast<char>(random() % 4 == 0 ? random() : 'a');
  DeflateParams params;
  params.serverNoContextTakeover = true;
  params.clientNoContextTakeover = true;
  std::string compressed;
  Deflater(Role::kServer, params).compress(message, &compressed);
  ASSERT_GT(compressed.size(), 70000u);  // some frames need the 64-bit length
  for (const Role role : {Role::kServer, Role::kClient}) {
    for (const size_t fragment : {0, 1, 2, 3, 7, 125, 126, 127, 1000, 65535, 65536, 70000}) {
      Sender sender(role, params);
      Buffer wire;
      sender.appendMessage(&wire, MessageType::kText, "before");
      sender.appendMessage(&wire, MessageType::kBinary, message, fragment);
      sender.appendMessage(&wire, MessageType::kText, "after");
      const std::vector<ParsedFrame> parsed = frames(wire.view());
      const size_t count = fragment == 0 ? 1 : (compressed.size() + fragment - 1) / fragment;
      ASSERT_EQ(parsed.size(), count + 2) << fragment;
      std::string joined;
      for (size_t i = 1; i <= count; ++i) {
        const uint8_t expected = (i == count ? 0x80 : 0) | (i == 1 ? 0x42 : 0);
        ASSERT_EQ(parsed[i].first, expected) << fragment << " " << i;
        ASSERT_EQ(parsed[i].masked, role == Role::kClient);
        joined += parsed[i].payload;
      }
      ASSERT_TRUE(joined == compressed) << fragment;
      Receiver receiver(role == Role::kServer ? Role::kClient : Role::kServer, {}, params);
      for (const std::string_view text : {"before", "", "after"}) {
        ASSERT_EQ(receiver.next(&wire), Receiver::Event::kMessage) << fragment;
        // (The big message compared whole: a mismatch would print 200 KiB.)
        const bool same = text.empty() ? receiver.payload() == message : receiver.payload() == text;
        EXPECT_TRUE(same) << fragment << " " << text;
      }
    }
  }
}

TEST(SenderTest, StreamedFragments) {
  Sender sender(Role::kClient);
  Buffer wire;
  sender.appendFragment(&wire, MessageType::kBinary, "ab", false);
  EXPECT_TRUE(sender.inFragmentedMessage());
  sender.appendPing(&wire, "between");
  sender.appendFragment(&wire, MessageType::kBinary, "cd", false);
  sender.appendFragment(&wire, MessageType::kBinary, "e", true);
  EXPECT_FALSE(sender.inFragmentedMessage());
  auto parsed = frames(wire.view());
  ASSERT_EQ(parsed.size(), 4u);
  EXPECT_EQ(parsed[0].first, 0x02);
  EXPECT_EQ(parsed[1].first, 0x89);
  EXPECT_EQ(parsed[2].first, 0x00);
  EXPECT_EQ(parsed[3].first, 0x80);
  Receiver receiver(Role::kServer);
  EXPECT_EQ(receiver.next(&wire), Receiver::Event::kPing);
  EXPECT_EQ(receiver.payload(), "between");
  ASSERT_EQ(receiver.next(&wire), Receiver::Event::kMessage);
  EXPECT_EQ(receiver.payload(), "abcde");
}

TEST(SenderTest, ControlPayloadsAreCapped) {
  Sender sender(Role::kServer);
  Buffer wire;
  sender.appendPing(&wire, std::string(200, 'p'));
  sender.appendPong(&wire, "q");
  auto parsed = frames(wire.view());
  ASSERT_EQ(parsed.size(), 2u);
  EXPECT_EQ(parsed[0].payload, std::string(125, 'p'));
  EXPECT_EQ(parsed[1].first, 0x8a);
}

TEST(SenderTest, CloseReasonIsTruncatedOnACodePointBoundary) {
  Sender sender(Role::kServer);
  Buffer wire;
  // 'a' then 2-byte characters: 123 bytes would end inside one.
  std::string reason = "a";
  for (int i = 0; i < 100; ++i) reason += "\xc3\xa9";
  sender.appendClose(&wire, 1001, reason);
  sender.appendClose(&wire, close_code::kNoStatus, "ignored");
  sender.appendClose(&wire, 1000, std::string(123, 'r'));
  auto parsed = frames(wire.view());
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].first, 0x88);
  EXPECT_EQ(parsed[0].payload.size(), 2u + 123u);
  EXPECT_EQ(parsed[0].payload.substr(0, 2), "\x03\xe9");
  EXPECT_EQ(parsed[0].payload.substr(2), reason.substr(0, 123));
  EXPECT_EQ(parsed[1].payload, "");
  EXPECT_EQ(parsed[2].payload.size(), 125u);
  std::string threeByte = "ab";
  for (int i = 0; i < 50; ++i) threeByte += "\xe2\x82\xac";
  Buffer euro;
  sender.appendClose(&euro, 1000, threeByte);
  auto euroFrames = frames(euro.view());
  EXPECT_EQ(euroFrames[0].payload.substr(2), threeByte.substr(0, 122));  // 2 + 40 * 3
  Receiver receiver(Role::kClient);
  ASSERT_EQ(receiver.next(&euro), Receiver::Event::kClose);  // still valid UTF-8
}

TEST(SenderTest, CloseWithADefaultConstructedReasonHasOnlyTheCode) {
  // std::string_view{} has a null data(); under UBSan a memcpy from it aborts.
  Sender sender(Role::kServer);
  Buffer wire;
  sender.appendClose(&wire, 1000, std::string_view{});
  auto parsed = frames(wire.view());
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].payload, std::string("\x03\xe8", 2));
}

}  // namespace
}  // namespace libnet::ws
