// grpc::CallOptions: what every call of one grpc::Server is configured with
// (Server::Options, resolved), shared by its calls; read only once serving
// starts.
#pragma once

#include <cstddef>

#include "base/Duration.h"

namespace libnet::grpc {

struct CallOptions {
  size_t maxReceiveMessageBytes = 4 * 1024 * 1024;
  size_t maxSendMessageBytes = 4 * 1024 * 1024;
  // Zero: the client's grpc-timeout is not capped.
  Duration maxDeadline = Duration::zero();
  bool compress = false;
  // write()'s back-pressure: the writer's marks (HttpServer::Options::writer).
  size_t highWater = 256 * 1024;
  size_t lowWater = 64 * 1024;
};

}  // namespace libnet::grpc
