// grpc::ClientCallOptions: how one client call is made (deadline, metadata,
// compression, wait-for-ready). A plain value: copy it, build it inline
//   stub.SayHello(request, {.timeout = 2s, .metadata = {{"x-id", "7"}}});
// (grpc::CallOptions is the server's per-call configuration: another thing.)
#pragma once

#include <optional>
#include <string>

#include "base/Duration.h"
#include "net/grpc/Metadata.h"

namespace libnet::grpc {

struct ClientCallOptions {
  // The call ends DEADLINE_EXCEEDED (and its stream is cancelled) this long
  // after it starts; zero: no timeout. With a deadline too, the earlier.
  Duration timeout = Duration::zero();
  std::optional<MonoTime> deadline{};
  // Custom metadata (Metadata.h's rules: keys lower case, not "grpc-";
  // "-bin" values any bytes). A bad key or value fails the call INTERNAL
  // before anything is sent.
  Metadata metadata{};
  // Send the request messages gzip-compressed (grpc-encoding: gzip).
  bool compress = false;
  // Wait for the channel to be ready (until the deadline) instead of
  // failing UNAVAILABLE when a connection attempt fails.
  bool waitForReady = false;
};

}  // namespace libnet::grpc
