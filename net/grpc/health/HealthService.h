// grpc::HealthService: the gRPC health checking protocol
// (grpc.health.v1.Health, net/grpc/health/health.proto). The program says
// how each of its services is doing with setStatus(); clients ask with
// Check (the status now; NOT_FOUND for a service never set) or follow it
// with Watch (the status now, SERVICE_UNKNOWN for a service never set, then
// one message per change, until they cancel). The server as a whole is the
// service "" and starts SERVING.
//
// setStatus() and clearStatus() may be called from any thread; the calls
// run on their connections' loops, several at once. A watcher that does not
// read is sent only the latest status once it drains (the statuses in
// between are skipped), so each holds at most one message past its
// writer's high-water mark. The object must outlive the server serving it;
// watches still open when it is destroyed are dropped (their clients see
// the call end).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/Mutex.h"
#include "net/grpc/health/health.libnet.h"

namespace libnet::grpc {

enum class ServingStatus { kServing, kNotServing };

class HealthService : public ::grpc::health::v1::Health::Service {
 public:
  using Request = ::grpc::health::v1::HealthCheckRequest;
  using Response = ::grpc::health::v1::HealthCheckResponse;

  HealthService();
  ~HealthService() override;

  // Any thread. Watchers of `service` are told when it changes.
  void setStatus(std::string_view service, ServingStatus status);
  // The service is unknown again: Check answers NOT_FOUND, watchers get
  // SERVICE_UNKNOWN.
  void clearStatus(std::string_view service);

  void Check(ServerStreamPtr<Request, Response> call) override;
  void Watch(ServerStreamPtr<Request, Response> call) override;

 private:
  using Wire = Response::ServingStatus;
  struct Watcher {
    ServerStreamPtr<Request, Response> call;
    std::string service;
    Wire sent;
    bool blocked = false;  // write() said false: wait for the writable callback
  };

  void publish(const std::string& service, std::optional<Wire> status);
  [[nodiscard]] Wire watchedStatus(const std::string& service) const LIBNET_REQUIRES(mutex_);
  void send(Watcher& watcher, Wire status) LIBNET_REQUIRES(mutex_);
  void onWritable(uint64_t id);
  void onCancel(uint64_t id);

  mutable Mutex mutex_;
  std::map<std::string, Wire, std::less<>> statuses_ LIBNET_GUARDED_BY(mutex_);
  std::map<uint64_t, Watcher> watchers_ LIBNET_GUARDED_BY(mutex_);
  uint64_t nextWatcher_ LIBNET_GUARDED_BY(mutex_) = 0;
};

}  // namespace libnet::grpc
