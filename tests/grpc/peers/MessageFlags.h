// Whether the last message a grpc++ call received came compressed: the
// per-message flag the compression cases of grpc's interop descriptions check.
// grpc++ exposes it only through grpc core's test-only accessor (exported by
// libgrpc 1.51, declared in a header grpc does not install), which grpc's own
// interop peers use as well.
#pragma once

#include <grpc/grpc.h>

#include <cstdint>

uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);

namespace peers {

inline bool lastMessageWasCompressed(grpc_call* call) {
  // Core marks a received message whose gRPC frame had the compressed flag
  // with GRPC_WRITE_INTERNAL_COMPRESS (1u << 31); newer cores also set the
  // "was compressed" bit (1u << 30) after decompressing it.
  constexpr uint32_t kInternalCompress = 0x80000000u;
  constexpr uint32_t kWasCompressed = 0x40000000u;
  return (grpc_call_test_only_get_message_flags(call) & (kInternalCompress | kWasCompressed)) != 0;
}

}  // namespace peers
