#include "net/grpc/Status.h"

#include <array>

namespace libnet::grpc {

namespace {

// Indexed by the code's number; the names are gRPC's (doc/statuscodes.md).
constexpr std::array<std::string_view, 17> kNames = {
    "OK",
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
    "UNAUTHENTICATED",
};

}  // namespace

std::string_view statusCodeName(StatusCode code) {
  const auto index = static_cast<size_t>(code);
  // A code read off the wire may be any number; the protocol maps the
  // unknown ones to UNKNOWN.
  return index < kNames.size() ? kNames[index] : kNames[static_cast<size_t>(StatusCode::kUnknown)];
}

std::string Status::toString() const {
  std::string text(statusCodeName(code_));
  if (!message_.empty()) {
    text += ": ";
    text += message_;
  }
  return text;
}

}  // namespace libnet::grpc
