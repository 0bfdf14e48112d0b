// grpc::Status: how a gRPC call ended, as the trailers carry it
// (`grpc-status`, `grpc-message`). The codes are gRPC's (doc/statuscodes.md
// of the gRPC project); their numbers are on the wire.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace libnet::grpc {

enum class StatusCode : uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// "OK", "CANCELLED", ... ("UNKNOWN" for a number outside the table).
[[nodiscard]] std::string_view statusCodeName(StatusCode code);

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  [[nodiscard]] bool ok() const { return code_ == StatusCode::kOk; }
  [[nodiscard]] StatusCode code() const { return code_; }
  // The text of grpc-message (any bytes: percent-encoded on the wire).
  [[nodiscard]] const std::string& message() const { return message_; }
  // "DEADLINE_EXCEEDED: Deadline Exceeded", "OK".
  [[nodiscard]] std::string toString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

}  // namespace libnet::grpc
