// net/grpc/Status and Metadata: the names of the codes, toString(), and
// findMetadata().
#include "net/grpc/Status.h"

#include <gtest/gtest.h>

#include "net/grpc/Metadata.h"

namespace libnet::grpc {
namespace {

TEST(StatusTest, NamesEveryCodeAsGrpcDoes) {
  const char* names[] = {"OK",
                         "CANCELLED",
                         "UNKNOWN",
                         "INVALID_ARGUMENT",
                         "DEADLINE_EXCEEDED",
                         "NOT_FOUND",
                         "ALREADY_EXISTS",
                         "PERMISSION_DENIED",
                         "RESOURCE_EXHAUSTED",
                         "FAILED_PRECONDITION",
                         "ABORTED",
                         "OUT_OF_RANGE",
                         "UNIMPLEMENTED",
                         "INTERNAL",
                         "UNAVAILABLE",
                         "DATA_LOSS",
                         "UNAUTHENTICATED"};
  for (int code = 0; code < 17; ++code) {
    EXPECT_EQ(statusCodeName(static_cast<StatusCode>(code)), names[code]);
  }
  EXPECT_EQ(statusCodeName(static_cast<StatusCode>(17)), "UNKNOWN");
  EXPECT_EQ(statusCodeName(static_cast<StatusCode>(255)), "UNKNOWN");
}

TEST(StatusTest, ToStringGivesTheNameAndTheMessage) {
  EXPECT_EQ(Status().toString(), "OK");
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status(StatusCode::kDeadlineExceeded, "Deadline Exceeded").toString(),
            "DEADLINE_EXCEEDED: Deadline Exceeded");
  EXPECT_EQ(Status(StatusCode::kInternal, "").toString(), "INTERNAL");
  EXPECT_FALSE(Status(StatusCode::kInternal, "").ok());
}

TEST(StatusTest, FindMetadataGivesTheFirstValue) {
  const Metadata metadata = {{"a", "1"}, {"b-bin", std::string("\0", 1)}, {"a", "2"}};
  ASSERT_NE(findMetadata(metadata, "a"), nullptr);
  EXPECT_EQ(*findMetadata(metadata, "a"), "1");
  EXPECT_EQ(*findMetadata(metadata, "b-bin"), std::string("\0", 1));
  EXPECT_EQ(findMetadata(metadata, "c"), nullptr);
  EXPECT_EQ(findMetadata(metadata, "A"), nullptr);
  EXPECT_EQ(findMetadata({}, "a"), nullptr);
}

}  // namespace
}  // namespace libnet::grpc
