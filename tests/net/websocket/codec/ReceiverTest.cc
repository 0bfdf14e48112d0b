#include "net/websocket/Receiver.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/Buffer.h"
#include "net/BufferPool.h"
#include "net/websocket/Sender.h"

namespace libnet::ws {
namespace {

using Event = Receiver::Event;

constexpr uint32_t kKey = 0x11223344u;

// A frame as a client sends it (masked) or a server (unmasked), with the
// first byte given whole: FIN/RSV bits and opcode.
std::string frame(uint8_t first, std::string_view payload, bool masked = true) {
  Buffer buf;
  appendFrameHeader(&buf, (first & 0x80) != 0, (first & 0x40) != 0,
                    static_cast<Opcode>(first & 0x0f), payload.size(),
                    masked ? std::optional<uint32_t>(kKey) : std::nullopt);
  std::string bytes(buf.view());
  bytes[0] = static_cast<char>(first);  // RSV2/RSV3 too
  std::string body(payload);
  if (masked) maskPayload(body.data(), body.size(), kKey);
  return bytes + body;
}

std::string closeBody(uint16_t code, std::string_view reason = {}) {
  std::string body{char(code >> 8), char(code & 0xff)};
  return body.append(reason);
}

// Feeds `bytes` to a server-side receiver and returns the events up to the
// first kNeedMore after the last byte (or kError/kClose).
struct Fed {
  std::vector<Event> events;
  std::vector<std::string> payloads;
  uint16_t code = 0;
  std::string text;
};

Fed feed(Receiver& receiver, const std::string& bytes, size_t pieceSize = 0) {
  Fed fed;
  Buffer input;
  size_t offset = 0;
  do {
    const size_t n = pieceSize ? std::min(pieceSize, bytes.size() - offset) : bytes.size();
    input.append(std::string_view(bytes).substr(offset, n));
    offset += n;
    for (;;) {
      Event event = receiver.next(&input);
      if (event == Event::kNeedMore) break;
      fed.events.push_back(event);
      fed.payloads.emplace_back(receiver.payload());
      if (event == Event::kClose || event == Event::kError) {
        fed.code = receiver.closeCode();
        fed.text = receiver.error();
        return fed;
      }
    }
  } while (offset < bytes.size());
  return fed;
}

Fed serverFeed(const std::string& bytes, ReceiverLimits limits = {},
               std::optional<DeflateParams> deflate = std::nullopt) {
  Receiver receiver(Role::kServer, limits, deflate);
  return feed(receiver, bytes);
}

void expectError(const std::string& bytes, uint16_t code, Role self = Role::kServer,
                 std::optional<DeflateParams> deflate = std::nullopt) {
  Receiver receiver(self, {}, deflate);
  Fed fed = feed(receiver, bytes);
  ASSERT_FALSE(fed.events.empty());
  EXPECT_EQ(fed.events.back(), Event::kError);
  EXPECT_EQ(fed.code, code);
  EXPECT_FALSE(fed.text.empty());
}

TEST(ReceiverTest, EveryLengthClassRoundTrips) {
  for (size_t length : {0u, 1u, 125u, 126u, 127u, 65535u, 65536u, 200000u}) {
    std::string payload(length, 'x');
    for (size_t i = 0; i < length; ++i) payload[i] = char('a' + i % 26);
    for (Role self : {Role::kServer, Role::kClient}) {
      Receiver receiver(self);
      Fed fed = feed(receiver, frame(0x81, payload, self == Role::kServer));
      ASSERT_EQ(fed.events, std::vector<Event>{Event::kMessage}) << length;
      EXPECT_EQ(fed.payloads[0], payload) << length;
      EXPECT_EQ(receiver.messageType(), MessageType::kText);
    }
  }
}

TEST(ReceiverTest, ByteByByteGivesTheSameEvents) {
  const std::string stream = frame(0x01, "frag") + frame(0x89, "ping!") + frame(0x80, "ment") +
                             frame(0x82, std::string(300, 'b')) + frame(0x8a, "") +
                             frame(0x88, closeBody(1000, "bye"));
  for (size_t piece : {0u, 1u, 2u, 3u, 7u}) {
    Receiver receiver(Role::kServer);
    Fed fed = feed(receiver, stream, piece);
    ASSERT_EQ(fed.events, (std::vector<Event>{Event::kPing, Event::kMessage, Event::kMessage,
                                              Event::kPong, Event::kClose}))
        << piece;
    EXPECT_EQ(fed.payloads[0], "ping!");
    EXPECT_EQ(fed.payloads[1], "fragment");
    EXPECT_EQ(fed.payloads[2], std::string(300, 'b'));
    EXPECT_EQ(fed.payloads[3], "");
    EXPECT_EQ(fed.code, 1000);
    EXPECT_EQ(receiver.closeReason(), "bye");
  }
}

TEST(ReceiverTest, MaskingMustMatchTheRole) {
  expectError(frame(0x81, "hi", false), close_code::kProtocolError, Role::kServer);
  expectError(frame(0x81, "hi", true), close_code::kProtocolError, Role::kClient);
}

TEST(ReceiverTest, ReservedOpcodesAndBits) {
  for (uint8_t opcode : {3, 4, 5, 6, 7, 11, 12, 13, 14, 15}) {
    expectError(frame(0x80 | opcode, "x"), close_code::kProtocolError);
  }
  expectError(frame(0xa1, "x"), close_code::kProtocolError);  // RSV2
  expectError(frame(0x91, "x"), close_code::kProtocolError);  // RSV3
  expectError(frame(0xc1, "x"), close_code::kProtocolError);  // RSV1 without deflate
  DeflateParams deflate;
  expectError(frame(0xc9, ""), close_code::kProtocolError, Role::kServer, deflate);
  expectError(frame(0x41, std::string("\xf2\x48", 2)) + frame(0xc0, ""), close_code::kProtocolError,
              Role::kServer, deflate);  // RSV1 on a continuation
}

TEST(ReceiverTest, ControlFrameRules) {
  expectError(frame(0x89, std::string(126, 'p')), close_code::kProtocolError);
  expectError(frame(0x09, "p"), close_code::kProtocolError);  // fragmented ping
  expectError(frame(0x88, "x"), close_code::kProtocolError);  // 1-byte close body
  // ... refused from the header, before the byte arrives.
  expectError(frame(0x88, "x").substr(0, 6), close_code::kProtocolError);
  Fed fed = serverFeed(frame(0x89, std::string(125, 'p')));
  EXPECT_EQ(fed.events, std::vector<Event>{Event::kPing});
}

TEST(ReceiverTest, FragmentationRules) {
  expectError(frame(0x80, "x"), close_code::kProtocolError);  // continuation first
  expectError(frame(0x01, "a") + frame(0x81, "b"), close_code::kProtocolError);
  expectError(frame(0x01, "a") + frame(0x02, "b"), close_code::kProtocolError);
  Fed fed = serverFeed(frame(0x02, "a") + frame(0x00, "") + frame(0x89, "p") + frame(0x80, "b"));
  EXPECT_EQ(fed.events, (std::vector<Event>{Event::kPing, Event::kMessage}));
  EXPECT_EQ(fed.payloads[1], "ab");
}

TEST(ReceiverTest, CloseCodes) {
  for (uint16_t code : {0, 999, 1004, 1005, 1006, 1015, 1016, 2000, 2999, 5000}) {
    expectError(frame(0x88, closeBody(code)), close_code::kProtocolError);
  }
  for (uint16_t code : {1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999}) {
    Fed fed = serverFeed(frame(0x88, closeBody(code, "r")));
    ASSERT_EQ(fed.events, std::vector<Event>{Event::kClose}) << code;
    EXPECT_EQ(fed.code, code);
  }
  Fed empty = serverFeed(frame(0x88, ""));
  ASSERT_EQ(empty.events, std::vector<Event>{Event::kClose});
  EXPECT_EQ(empty.code, close_code::kNoStatus);
  expectError(frame(0x88, closeBody(1000, "\xc3")), close_code::kInvalidPayload);
}

TEST(ReceiverTest, LengthWithTheTopBitSet) {
  std::string bytes = {char(0x82), char(0xff), char(0x80), 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4};
  expectError(bytes, close_code::kProtocolError);
}

TEST(ReceiverTest, OversizedFrameIsRefusedFromItsHeader) {
  ReceiverLimits limits;
  limits.maxFrameBytes = 1000;
  Buffer header;
  appendFrameHeader(&header, true, false, Opcode::kBinary, 1001, kKey);
  Fed fed = serverFeed(std::string(header.view()), limits);
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kError});
  EXPECT_EQ(fed.code, close_code::kMessageTooBig);
  fed = serverFeed(frame(0x82, std::string(1000, 'x')), limits);
  EXPECT_EQ(fed.events, std::vector<Event>{Event::kMessage});
  // A 64-bit length past 4 GiB, under the default 16 MiB limit.
  Buffer huge;
  appendFrameHeader(&huge, true, false, Opcode::kBinary, uint64_t{5} << 30, kKey);
  fed = serverFeed(std::string(huge.view()));
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kError});
  EXPECT_EQ(fed.code, close_code::kMessageTooBig);
}

TEST(ReceiverTest, OversizedMessageAcrossFragments) {
  ReceiverLimits limits;
  limits.maxMessageBytes = 1000;
  Fed fed =
      serverFeed(frame(0x02, std::string(600, 'x')) + frame(0x80, std::string(401, 'y')), limits);
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kError});
  EXPECT_EQ(fed.code, close_code::kMessageTooBig);
}

TEST(ReceiverTest, InvalidUtf8IsReportedByTheFragmentThatProvesIt) {
  Receiver receiver(Role::kServer);
  // The second fragment proves E0 80 invalid; the final one never arrives.
  Fed fed = feed(receiver, frame(0x01, "ok \xe0") + frame(0x00, "\x80 more"));
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kError});
  EXPECT_EQ(fed.code, close_code::kInvalidPayload);
  // A code point split between fragments is fine.
  fed = serverFeed(frame(0x01, "caf\xc3") + frame(0x80, "\xa9"));
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kMessage});
  EXPECT_EQ(fed.payloads[0], "caf\xc3\xa9");
  // Ending inside a sequence is caught at the end.
  expectError(frame(0x81, "caf\xc3"), close_code::kInvalidPayload);
  // Binary messages are not checked.
  EXPECT_EQ(serverFeed(frame(0x82, "\xff")).events, std::vector<Event>{Event::kMessage});
}

TEST(ReceiverTest, DoneAfterErrorOrClose) {
  Receiver receiver(Role::kServer);
  Buffer input;
  input.append(frame(0x88, closeBody(1000)) + frame(0x81, "after"));
  EXPECT_EQ(receiver.next(&input), Event::kClose);
  const size_t left = input.readableBytes();
  EXPECT_EQ(receiver.next(&input), Event::kClose);
  EXPECT_EQ(input.readableBytes(), left);
  EXPECT_TRUE(receiver.done());

  Receiver failed(Role::kServer);
  Buffer bad;
  bad.append(frame(0x83, "x") + frame(0x81, "y"));
  EXPECT_EQ(failed.next(&bad), Event::kError);
  EXPECT_EQ(failed.next(&bad), Event::kError);
  EXPECT_EQ(failed.closeCode(), close_code::kProtocolError);
}

TEST(ReceiverTest, OneFrameIsOneAllocationSizedFromItsHeader) {
  const std::string payload(100000, 'm');
  const std::string bytes = frame(0x82, payload);
  Receiver receiver(Role::kServer);
  Buffer input;
  Event event = Event::kNeedMore;
  for (size_t offset = 0; offset < bytes.size() && event == Event::kNeedMore; offset += 1000) {
    input.append(std::string_view(bytes).substr(offset, 1000));
    event = receiver.next(&input);
  }
  ASSERT_EQ(event, Event::kMessage);
  // Grown piece by piece, the storage would have doubled past the size.
  EXPECT_EQ(receiver.heldMemory(), Buffer::kCheapPrepend + payload.size());
  EXPECT_EQ(receiver.payload(), payload);
}

TEST(ReceiverTest, FragmentsGrowTheMessageWithinTheLimit) {
  // Doubling from the first 600 KiB fragment would reserve 1.2 MiB for a
  // message limited to 1 MiB.
  const std::string piece(600 * 1024, 'f');
  ReceiverLimits limits;
  limits.maxMessageBytes = 1 << 20;
  Receiver receiver(Role::kServer, limits);
  Buffer input;
  input.append(frame(0x02, piece) + frame(0x80, std::string_view(piece).substr(0, 400 * 1024)));
  ASSERT_EQ(receiver.next(&input), Event::kMessage);
  EXPECT_EQ(receiver.payload().size(), 1000u * 1024);
  EXPECT_LE(receiver.heldMemory(), Buffer::kCheapPrepend + limits.maxMessageBytes);
}

TEST(ReceiverTest, MessageStorageComesFromThePoolAndGoesBack) {
  BufferPool pool;
  Receiver receiver(Role::kServer, {}, std::nullopt, &pool);
  Buffer input;
  input.append(frame(0x82, std::string(4000, 'a')));
  ASSERT_EQ(receiver.next(&input), Event::kMessage);
  const char* storage = receiver.payload().data();
  EXPECT_GE(receiver.heldMemory(), 4000u);
  // The next call gives it back: idle, the receiver holds no message.
  ASSERT_EQ(receiver.next(&input), Event::kNeedMore);
  EXPECT_LE(receiver.heldMemory(), BufferPool::kSmallCapacity);
  EXPECT_EQ(pool.spareCount(), 1u);
  // The next message is assembled in the same storage: no allocation.
  input.append(frame(0x82, std::string(3000, 'b')));
  ASSERT_EQ(receiver.next(&input), Event::kMessage);
  EXPECT_EQ(receiver.payload().data(), storage);
  EXPECT_EQ(receiver.payload(), std::string(3000, 'b'));
  EXPECT_EQ(pool.spareCount(), 0u);
  receiver.releaseMessage();  // given back early
  EXPECT_TRUE(receiver.payload().empty());
  EXPECT_EQ(pool.spareCount(), 1u);
  input.append(frame(0x82, "c"));
  ASSERT_EQ(receiver.next(&input), Event::kMessage);
  EXPECT_EQ(receiver.payload(), "c");
}

TEST(ReceiverTest, WithoutAPoolALargeMessageIsFreedOnceDone) {
  Receiver receiver(Role::kServer);
  Buffer input;
  input.append(frame(0x82, std::string(1 << 20, 'a')));
  ASSERT_EQ(receiver.next(&input), Event::kMessage);
  EXPECT_GT(receiver.heldMemory(), 1u << 20);
  ASSERT_EQ(receiver.next(&input), Event::kNeedMore);
  EXPECT_LE(receiver.heldMemory(), BufferPool::kSmallCapacity);
}

TEST(ReceiverTest, CompressedMessagesFromASender) {
  DeflateParams params;
  params.clientNoContextTakeover = true;
  DeflateOptions options;
  options.minMessageSize = 0;
  Sender sender(Role::kClient, params, options);
  Receiver receiver(Role::kServer, {}, params);
  const std::string text = "caf\xc3\xa9 " + std::string(5000, 'z') + " fin";
  Buffer wire;
  sender.appendMessage(&wire, MessageType::kText, text, 10);
  sender.appendMessage(&wire, MessageType::kBinary, "Hello");
  sender.appendPing(&wire, "p");
  sender.appendMessage(&wire, MessageType::kText, text);
  Fed fed = feed(receiver, std::string(wire.view()), 3);
  ASSERT_EQ(fed.events,
            (std::vector<Event>{Event::kMessage, Event::kMessage, Event::kPing, Event::kMessage}));
  EXPECT_EQ(fed.payloads[0], text);
  EXPECT_EQ(fed.payloads[1], "Hello");
  EXPECT_EQ(fed.payloads[3], text);
}

TEST(ReceiverTest, CompressedRfcExampleAndInvalidData) {
  DeflateParams params;
  Fed fed = serverFeed(frame(0xc1, std::string("\xf2\x48\xcd\xc9\xc9\x07\x00", 7)), {}, params);
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kMessage});
  EXPECT_EQ(fed.payloads[0], "Hello");
  expectError(frame(0xc2, "\xff\xff\xff"), close_code::kInvalidPayload, Role::kServer, params);
}

TEST(ReceiverTest, DeflateBombIsTooBig) {
  DeflateParams params;
  Deflater deflater(Role::kClient, params, 9);
  std::string compressed;
  deflater.compress(std::string(10 << 20, '\0'), &compressed);
  ReceiverLimits limits;
  limits.maxMessageBytes = 1 << 20;
  Receiver receiver(Role::kServer, limits, params);
  Fed fed = feed(receiver, frame(0xc2, compressed), 1024);
  ASSERT_EQ(fed.events, std::vector<Event>{Event::kError});
  EXPECT_EQ(fed.code, close_code::kMessageTooBig);
  // The refused message's storage (at most the limit plus one chunk while
  // inflating: DeflateTest) is gone; zlib's state is what is left.
  EXPECT_LE(receiver.heldMemory(), 64u * 1024);
}

TEST(ReceiverTest, InvalidUtf8InsideCompressedText) {
  DeflateParams params;
  Deflater deflater(Role::kClient, params);
  std::string compressed;
  deflater.compress("valid then \xed\xa0\x80 surrogate", &compressed);
  expectError(frame(0xc1, compressed), close_code::kInvalidPayload, Role::kServer, params);
}

}  // namespace
}  // namespace libnet::ws
