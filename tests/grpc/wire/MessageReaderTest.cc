// net/grpc/MessageReader: de-framing in any pieces, the checks made from the
// prefix before any payload is held, gzip messages, and the errors.
#include "net/grpc/MessageReader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/grpc/Gzip.h"
#include "net/grpc/Wire.h"
#include "tests/grpc/wire/GzipBomb.h"

namespace libnet::grpc {
namespace {

using Error = MessageReader::Error;

std::string frame(std::string_view payload, bool compressed = false) {
  std::string out;
  appendFrame(&out, payload, compressed);
  return out;
}

std::string prefix(uint8_t flag, uint32_t length) {
  const char bytes[] = {static_cast<char>(flag), static_cast<char>(length >> 24),
                        static_cast<char>(length >> 16), static_cast<char>(length >> 8),
                        static_cast<char>(length)};
  return std::string(bytes, sizeof bytes);
}

std::vector<std::string> drain(MessageReader& reader) {
  std::vector<std::string> messages;
  while (std::optional<std::string> message = reader.next()) {
    messages.push_back(std::move(*message));
  }
  return messages;
}

TEST(MessageReaderTest, ReadsMessagesFedWhole) {
  MessageReader reader({}, "");
  EXPECT_TRUE(reader.atBoundary());
  EXPECT_EQ(reader.next(), std::nullopt);
  ASSERT_TRUE(reader.feed(frame("one") + frame("") + frame("three")));
  EXPECT_EQ(reader.buffered(), 8u);
  EXPECT_TRUE(reader.atBoundary());
  EXPECT_EQ(drain(reader), (std::vector<std::string>{"one", "", "three"}));
  EXPECT_EQ(reader.buffered(), 0u);
  EXPECT_EQ(reader.error(), Error::kNone);
}

// Each split of a gzip call's stream in two, and every byte alone, give the
// same messages: a prefix or payload may be cut anywhere.
TEST(MessageReaderTest, ReadsMessagesSplitAtEveryOffset) {
  const std::string big(300, 'b');
  const std::string stream =
      frame("first") + frame("") + frame(big) + frame(gzipCompress("zipped"), true) + frame("x");
  const std::vector<std::string> expected = {"first", "", big, "zipped", "x"};
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    MessageReader reader({}, "gzip");
    ASSERT_TRUE(reader.feed(std::string_view(stream).substr(0, cut)));
    ASSERT_TRUE(reader.feed(std::string_view(stream).substr(cut)));
    ASSERT_TRUE(reader.atBoundary());
    ASSERT_EQ(drain(reader), expected) << cut;
  }
  MessageReader reader({}, "gzip");
  std::vector<std::string> seen;
  for (const char c : stream) {
    ASSERT_TRUE(reader.feed(std::string_view(&c, 1)));
    for (std::string& message : drain(reader)) seen.push_back(std::move(message));
    ASSERT_LE(reader.buffered(), big.size() + 5);
  }
  EXPECT_TRUE(reader.atBoundary());
  EXPECT_EQ(seen, expected);
}

// Three pieces, cut at every pair of offsets, in a call without encoding.
TEST(MessageReaderTest, ReadsPlainStreamSplitAtEveryOffset) {
  const std::string stream = frame("first") + frame("") + frame(std::string(70, 'c'));
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    for (size_t cut2 = cut; cut2 <= stream.size(); ++cut2) {
      MessageReader reader({}, "identity");
      ASSERT_TRUE(reader.feed(std::string_view(stream).substr(0, cut)));
      ASSERT_TRUE(reader.feed(std::string_view(stream).substr(cut, cut2 - cut)));
      ASSERT_TRUE(reader.feed(std::string_view(stream).substr(cut2)));
      ASSERT_EQ(drain(reader), (std::vector<std::string>{"first", "", std::string(70, 'c')}));
    }
  }
}

TEST(MessageReaderTest, KnowsWhenItIsMidMessage) {
  MessageReader reader({}, "");
  const std::string stream = frame("abc");
  ASSERT_TRUE(reader.feed(stream.substr(0, 2)));
  EXPECT_FALSE(reader.atBoundary());
  EXPECT_EQ(reader.buffered(), 2u);
  ASSERT_TRUE(reader.feed(stream.substr(2, 4)));
  EXPECT_FALSE(reader.atBoundary());
  EXPECT_EQ(reader.buffered(), 1u);
  EXPECT_EQ(reader.next(), std::nullopt);
  ASSERT_TRUE(reader.feed(stream.substr(6)));
  EXPECT_TRUE(reader.atBoundary());
  EXPECT_EQ(reader.buffered(), 3u);
  EXPECT_EQ(reader.next(), "abc");
}

TEST(MessageReaderTest, RefusesA4GiBPrefixBeforeAnyPayload) {
  MessageReader reader({}, "");
  EXPECT_FALSE(reader.feed(prefix(0, 0xffffffff)));
  EXPECT_EQ(reader.error(), Error::kTooLarge);
  EXPECT_LE(reader.buffered(), 5u);
  // Sticky: nothing more is taken, even a good message.
  EXPECT_FALSE(reader.feed(frame("ok")));
  EXPECT_EQ(reader.next(), std::nullopt);
  EXPECT_EQ(reader.buffered(), 0u);
  EXPECT_EQ(reader.error(), Error::kTooLarge);
  EXPECT_EQ(errorStatus(reader.error()), StatusCode::kResourceExhausted);
}

TEST(MessageReaderTest, TakesTheLimitNotOneByteMore) {
  const size_t limit = 1000;
  for (const size_t size : {limit - 1, limit}) {
    MessageReader reader({.maxMessageBytes = limit}, "");
    ASSERT_TRUE(reader.feed(frame(std::string(size, 'x'))));
    EXPECT_EQ(reader.next(), std::string(size, 'x'));
  }
  MessageReader reader({.maxMessageBytes = limit}, "");
  // The prefix alone is enough to refuse it.
  EXPECT_FALSE(reader.feed(prefix(0, limit + 1)));
  EXPECT_EQ(reader.error(), Error::kTooLarge);
  MessageReader zero({.maxMessageBytes = 0}, "");
  EXPECT_TRUE(zero.feed(frame("")));
  EXPECT_FALSE(zero.feed(frame("x")));
  EXPECT_EQ(zero.next(), "");
}

TEST(MessageReaderTest, TakesTheLargestLimit) {
  MessageReader reader({.maxMessageBytes = SIZE_MAX}, "gzip");
  ASSERT_TRUE(reader.feed(frame(gzipCompress("big limit"), true) + frame("plain")));
  EXPECT_EQ(reader.next(), "big limit");
  EXPECT_EQ(reader.next(), "plain");
}

TEST(MessageReaderTest, KeepsMessagesBeforeAnError) {
  MessageReader reader({.maxMessageBytes = 10}, "");
  EXPECT_FALSE(reader.feed(frame("good") + prefix(0, 11) + "12345678901"));
  EXPECT_EQ(reader.error(), Error::kTooLarge);
  EXPECT_EQ(drain(reader), std::vector<std::string>{"good"});
}

TEST(MessageReaderTest, RefusesACompressedFlagWithoutAnEncoding) {
  for (const char* encoding : {"", "identity", "snappy"}) {
    MessageReader reader({}, encoding);
    EXPECT_FALSE(reader.feed(prefix(1, 3))) << encoding;
    EXPECT_EQ(reader.error(), Error::kCompressedWithoutEncoding) << encoding;
    EXPECT_EQ(errorStatus(reader.error()), StatusCode::kInternal);
  }
}

TEST(MessageReaderTest, RefusesAnUnknownFlag) {
  for (const uint8_t flag : {2, 0x80, 0xff}) {
    MessageReader reader({}, "gzip");
    EXPECT_FALSE(reader.feed(prefix(flag, 0)));
    EXPECT_EQ(reader.error(), Error::kBadFlag);
    EXPECT_EQ(errorStatus(reader.error()), StatusCode::kInternal);
  }
}

TEST(MessageReaderTest, DecompressesGzipMessagesAndPassesPlainOnes) {
  MessageReader reader({}, "gzip");
  const std::string text(5000, 'g');
  ASSERT_TRUE(reader.feed(frame(gzipCompress(text), true) + frame("plain")));
  EXPECT_EQ(reader.buffered(), text.size() + 5);
  EXPECT_EQ(reader.next(), text);
  EXPECT_EQ(reader.next(), "plain");
}

TEST(MessageReaderTest, RefusesCorruptGzip) {
  std::string corrupt = gzipCompress(std::string(1000, 'c'));
  corrupt[corrupt.size() / 2] ^= 0x40;
  const std::string truncated = gzipCompress("abcdef").substr(0, 15);
  for (const std::string& payload : {corrupt, truncated, std::string(), std::string("abc")}) {
    MessageReader reader({}, "gzip");
    EXPECT_FALSE(reader.feed(frame(payload, true)));
    EXPECT_EQ(reader.error(), Error::kBadCompression);
    EXPECT_EQ(errorStatus(reader.error()), StatusCode::kInternal);
    EXPECT_EQ(reader.buffered(), 0u);
  }
}

TEST(MessageReaderTest, TakesADecompressedLimitNotOneByteMore) {
  const size_t limit = 1000;
  for (const size_t size : {limit - 1, limit}) {
    MessageReader reader({.maxMessageBytes = limit}, "gzip");
    ASSERT_TRUE(reader.feed(frame(gzipCompress(std::string(size, 'x')), true)));
    EXPECT_EQ(reader.next(), std::string(size, 'x'));
  }
  MessageReader reader({.maxMessageBytes = limit}, "gzip");
  EXPECT_FALSE(reader.feed(frame(gzipCompress(std::string(limit + 1, 'x')), true)));
  EXPECT_EQ(reader.error(), Error::kDecompressedTooLarge);
  EXPECT_EQ(errorStatus(reader.error()), StatusCode::kResourceExhausted);
}

// 1 GiB of zeros in about a megabyte, under the default 4 MiB limit: it
// passes the prefix check, and inflating stops at the limit.
TEST(MessageReaderTest, StopsAGzipBombAtTheLimit) {
  const std::string bomb = test::gzipBomb(1024);
  const MessageReader::Limits limits;
  ASSERT_LT(bomb.size(), limits.maxMessageBytes);
  const std::string stream = frame(bomb, true);
  MessageReader reader(limits, "gzip");
  bool ok = true;
  for (size_t at = 0; at < stream.size() && ok; at += 16384) {
    ok = reader.feed(std::string_view(stream).substr(at, 16384));
    ASSERT_LE(reader.buffered(), limits.maxMessageBytes + 64 * 1024);
  }
  EXPECT_FALSE(ok);
  EXPECT_EQ(reader.error(), Error::kDecompressedTooLarge);
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(MessageReaderTest, SupportsIdentityAndGzipOnly) {
  EXPECT_TRUE(MessageReader::supportedEncoding(""));
  EXPECT_TRUE(MessageReader::supportedEncoding("identity"));
  EXPECT_TRUE(MessageReader::supportedEncoding("gzip"));
  for (const char* other : {"deflate", "snappy", "GZIP", "gzip ", "x-gzip", "zstd"}) {
    EXPECT_FALSE(MessageReader::supportedEncoding(other)) << other;
  }
}

TEST(MessageReaderTest, NamesEachError) {
  EXPECT_EQ(errorStatus(Error::kNone), StatusCode::kOk);
  EXPECT_EQ(errorText(Error::kNone), "");
  for (const Error error :
       {Error::kTooLarge, Error::kCompressedWithoutEncoding, Error::kBadCompression,
        Error::kDecompressedTooLarge, Error::kBadFlag}) {
    EXPECT_FALSE(errorText(error).empty());
    EXPECT_NE(errorStatus(error), StatusCode::kOk);
  }
  EXPECT_EQ(errorStatus(Error::kDecompressedTooLarge), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace libnet::grpc
