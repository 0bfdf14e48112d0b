// MessageReader::lastCompressed(): each message's compressed flag is kept
// with it through the reader's queue, as the interop cases
// client_compressed_unary and client_compressed_streaming need the server to
// see it (ServerCall::lastMessageCompressed()).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "net/grpc/Gzip.h"
#include "net/grpc/MessageReader.h"
#include "net/grpc/Wire.h"

namespace libnet::grpc {
namespace {

TEST(CompressedFlagTest, EachMessageKeepsItsFlagThroughTheQueue) {
  const std::string plain(200, 'p');
  const std::string packed(300, 'z');
  std::string wire;
  appendFrame(&wire, plain, false);
  appendFrame(&wire, gzipCompress(packed), true);
  appendFrame(&wire, plain, false);
  appendFrame(&wire, gzipCompress(packed), true);
  MessageReader reader(MessageReader::Limits{}, "gzip");
  // All four are queued before the first is taken: the flag must be each
  // message's own, not the last one read off the wire.
  ASSERT_TRUE(reader.feed(wire));
  for (int i = 0; i < 2; ++i) {
    std::optional<std::string> first = reader.next();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(*first, plain);
    EXPECT_FALSE(reader.lastCompressed());
    std::optional<std::string> second = reader.next();
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(*second, packed);
    EXPECT_TRUE(reader.lastCompressed());
  }
  EXPECT_FALSE(reader.next().has_value());
}

TEST(CompressedFlagTest, PlainOnAnIdentityCall) {
  std::string wire;
  appendFrame(&wire, "hello", false);
  MessageReader reader(MessageReader::Limits{}, "");
  ASSERT_TRUE(reader.feed(wire));
  ASSERT_TRUE(reader.next().has_value());
  EXPECT_FALSE(reader.lastCompressed());
}

}  // namespace
}  // namespace libnet::grpc
