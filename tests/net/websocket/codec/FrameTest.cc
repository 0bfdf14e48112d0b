#include "net/websocket/Frame.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/Buffer.h"

namespace libnet::ws {
namespace {

std::vector<uint8_t> bytesOf(const Buffer& buf) {
  auto* p = reinterpret_cast<const uint8_t*>(buf.peek());
  return {p, p + buf.readableBytes()};
}

// Byte-at-a-time reference masking.
std::string maskedReference(std::string data, uint32_t key, size_t offset) {
  const uint8_t wire[4] = {uint8_t(key >> 24), uint8_t(key >> 16), uint8_t(key >> 8), uint8_t(key)};
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(data[i] ^ wire[(offset + i) % 4]);
  return data;
}

TEST(FrameTest, HeaderLengthClasses) {
  struct Case {
    uint64_t length;
    std::vector<uint8_t> header;
  };
  const std::vector<Case> cases = {
      {0, {0x82, 0x00}},
      {125, {0x82, 125}},
      {126, {0x82, 126, 0x00, 126}},
      {65535, {0x82, 126, 0xff, 0xff}},
      {65536, {0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}},
      {(uint64_t{5} << 30) + 7, {0x82, 127, 0, 0, 0, 1, 0x40, 0, 0, 7}},
  };
  for (const Case& c : cases) {
    Buffer buf;
    appendFrameHeader(&buf, true, false, Opcode::kBinary, c.length, std::nullopt);
    EXPECT_EQ(bytesOf(buf), c.header) << c.length;
  }
}

TEST(FrameTest, HeaderBitsAndMaskKey) {
  Buffer buf;
  appendFrameHeader(&buf, false, true, Opcode::kText, 3, 0x01020304u);
  EXPECT_EQ(bytesOf(buf), (std::vector<uint8_t>{0x41, 0x83, 1, 2, 3, 4}));
  Buffer close;
  appendFrameHeader(&close, true, false, Opcode::kClose, 0, std::nullopt);
  EXPECT_EQ(bytesOf(close), (std::vector<uint8_t>{0x88, 0x00}));
}

TEST(FrameTest, AppendFrameMasksACopy) {
  const std::string payload = "Hello";
  Buffer buf;
  appendFrame(&buf, true, false, Opcode::kText, payload, 0x37fa213du);
  // RFC 6455 5.7: a masked "Hello".
  EXPECT_EQ(bytesOf(buf), (std::vector<uint8_t>{0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f,
                                                0x4d, 0x51, 0x58}));
  EXPECT_EQ(payload, "Hello");
  Buffer plain;
  appendFrame(&plain, true, false, Opcode::kText, payload, std::nullopt);
  EXPECT_EQ(bytesOf(plain), (std::vector<uint8_t>{0x81, 0x05, 'H', 'e', 'l', 'l', 'o'}));
}

TEST(FrameTest, MaskMatchesReferenceForEveryLengthAndOffset) {
  std::string data;
  for (int i = 0; i < 70; ++i) data.push_back(char(i * 37 + 11));
  for (size_t length = 0; length <= data.size(); ++length) {
    for (size_t offset = 0; offset < 9; ++offset) {
      std::string masked = data.substr(0, length);
      maskPayload(masked.data(), masked.size(), 0xa1b2c3d4u, offset);
      ASSERT_EQ(masked, maskedReference(data.substr(0, length), 0xa1b2c3d4u, offset))
          << length << " " << offset;
    }
  }
}

TEST(FrameTest, MaskCopyMatchesMaskInPlace) {
  std::string data;
  for (int i = 0; i < 45; ++i) data.push_back(char(i * 13 + 5));
  for (size_t offset = 0; offset < 5; ++offset) {
    std::string copy(data.size(), '\0');
    maskCopy(copy.data(), data.data(), data.size(), 0x0badf00du, offset);
    EXPECT_EQ(copy, maskedReference(data, 0x0badf00du, offset)) << offset;
  }
}

TEST(FrameTest, MaskingInPiecesEqualsMaskingWhole) {
  std::string data(1000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = char(i);
  std::string whole = data;
  maskPayload(whole.data(), whole.size(), 0xdeadbeefu, 0);
  for (size_t split : {1u, 3u, 4u, 7u, 9u, 500u, 999u}) {
    std::string pieces = data;
    maskPayload(pieces.data(), split, 0xdeadbeefu, 0);
    maskPayload(pieces.data() + split, pieces.size() - split, 0xdeadbeefu, split);
    EXPECT_EQ(pieces, whole) << split;
    maskPayload(pieces.data(), pieces.size(), 0xdeadbeefu, 0);
    EXPECT_EQ(pieces, data) << split;
  }
}

TEST(FrameTest, SendableCloseCodes) {
  for (uint16_t code :
       {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 4000, 4999}) {
    EXPECT_TRUE(isSendableCloseCode(code)) << code;
  }
  for (uint16_t code : {0, 1, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000, 65535}) {
    EXPECT_FALSE(isSendableCloseCode(code)) << code;
  }
}

TEST(FrameTest, ControlOpcodes) {
  EXPECT_TRUE(isControl(Opcode::kClose));
  EXPECT_TRUE(isControl(Opcode::kPing));
  EXPECT_TRUE(isControl(Opcode::kPong));
  EXPECT_FALSE(isControl(Opcode::kText));
  EXPECT_FALSE(isControl(Opcode::kBinary));
  EXPECT_FALSE(isControl(Opcode::kContinuation));
}

}  // namespace
}  // namespace libnet::ws
