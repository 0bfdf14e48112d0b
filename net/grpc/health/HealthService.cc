#include "net/grpc/health/HealthService.h"

#include <utility>
#include <vector>

namespace libnet::grpc {

namespace {

HealthService::Response::ServingStatus toWire(ServingStatus status) {
  return status == ServingStatus::kServing ? HealthService::Response::SERVING
                                           : HealthService::Response::NOT_SERVING;
}

}  // namespace

HealthService::HealthService() { setStatus("", ServingStatus::kServing); }

HealthService::~HealthService() {
  std::map<uint64_t, Watcher> watchers;
  {
    MutexLock lock(mutex_);
    watchers.swap(watchers_);
  }
  // Outside the lock: finishing (or dropping) a call may run the runtime's
  // code, which must not find this object's mutex held.
  for (auto& [id, watcher] : watchers) {
    watcher.call->finish(Status(StatusCode::kUnavailable, "health service stopped"));
  }
}

void HealthService::setStatus(std::string_view service, ServingStatus status) {
  publish(std::string(service), toWire(status));
}

void HealthService::clearStatus(std::string_view service) {
  publish(std::string(service), std::nullopt);
}

void HealthService::publish(const std::string& service, std::optional<Wire> status) {
  MutexLock lock(mutex_);
  if (status) {
    statuses_[service] = *status;
  } else {
    statuses_.erase(service);
  }
  const Wire now = watchedStatus(service);
  for (auto& [id, watcher] : watchers_) {
    // A blocked watcher gets the latest status when it drains.
    if (watcher.service == service && !watcher.blocked && watcher.sent != now) send(watcher, now);
  }
}

HealthService::Wire HealthService::watchedStatus(const std::string& service) const {
  auto it = statuses_.find(service);
  return it == statuses_.end() ? Response::SERVICE_UNKNOWN : it->second;
}

// Under the lock, so that two changes racing from two threads reach each
// watcher in the order they were made; write() only queues the message.
void HealthService::send(Watcher& watcher, Wire status) {
  Response response;
  response.set_status(status);
  watcher.sent = status;
  if (!watcher.call->write(response)) watcher.blocked = true;
}

void HealthService::Check(ServerStreamPtr<Request, Response> call) {
  std::optional<Wire> status;
  {
    MutexLock lock(mutex_);
    auto it = statuses_.find(call->request().service());
    if (it != statuses_.end()) status = it->second;
  }
  if (!status) {
    call->finish(Status(StatusCode::kNotFound, "unknown service"));
    return;
  }
  Response response;
  response.set_status(*status);
  call->finish(response);
}

void HealthService::Watch(ServerStreamPtr<Request, Response> call) {
  uint64_t id = 0;
  {
    MutexLock lock(mutex_);
    id = nextWatcher_++;
    Watcher& watcher =
        watchers_.emplace(id, Watcher{call, call->request().service(), Response::UNKNOWN})
            .first->second;
    send(watcher, watchedStatus(watcher.service));
  }
  // The callbacks name the watcher, not the call: the call holds them, and
  // a reference back to it would keep it alive for ever.
  call->onWritable([this, id] { onWritable(id); });
  call->onCancel([this, id] { onCancel(id); });
}

void HealthService::onWritable(uint64_t id) {
  MutexLock lock(mutex_);
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return;
  Watcher& watcher = it->second;
  watcher.blocked = false;
  const Wire now = watchedStatus(watcher.service);
  if (watcher.sent != now) send(watcher, now);
}

void HealthService::onCancel(uint64_t id) {
  std::map<uint64_t, Watcher>::node_type gone;
  {
    MutexLock lock(mutex_);
    gone = watchers_.extract(id);
  }
}

}  // namespace libnet::grpc
