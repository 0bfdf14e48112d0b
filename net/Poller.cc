#include "net/Poller.h"

#include <cstdlib>
#include <mutex>

#include "base/Logging.h"
#include "net/PollerKind.h"
#include "net/poller/EpollPoller.h"
#include "net/poller/UringPoller.h"

namespace libnet {

std::string_view pollerKindName(PollerKind kind) {
  switch (kind) {
    case PollerKind::kEpoll:
      return "epoll";
    case PollerKind::kIoUring:
      return "uring";
    case PollerKind::kAuto:
      return "auto";
  }
  return "?";
}

std::optional<PollerKind> parsePollerKind(std::string_view name) {
  if (name == "epoll") return PollerKind::kEpoll;
  if (name == "uring" || name == "io_uring") return PollerKind::kIoUring;
  if (name == "auto") return PollerKind::kAuto;
  return std::nullopt;
}

namespace {

// LIBNET_POLLER, read once; an unknown value is reported once and ignored.
std::optional<PollerKind> environmentKind() {
  static const std::optional<PollerKind> kind = []() -> std::optional<PollerKind> {
    const char* env = std::getenv("LIBNET_POLLER");
    if (env == nullptr || *env == '\0') return std::nullopt;
    auto parsed = parsePollerKind(env);
    if (!parsed) {
      LOG_ERROR << "LIBNET_POLLER='" << env
                << "' is not one of epoll, uring, auto; using the program's choice";
    }
    return parsed;
  }();
  return kind;
}

}  // namespace

PollerKind Poller::resolve(PollerKind kind) {
  if (auto env = environmentKind()) kind = *env;
  if (kind != PollerKind::kAuto) return kind;
  const UringPoller::ProbeResult& probe = UringPoller::probe();
  static std::once_flag logged;
  std::call_once(logged, [&] {
    if (probe.ok) {
      LOG_INFO << "libnet: using io_uring (" << probe.detail << ")";
    } else {
      LOG_WARN << "libnet: io_uring unavailable (" << probe.detail << "); using epoll";
    }
  });
  return probe.ok ? PollerKind::kIoUring : PollerKind::kEpoll;
}

std::unique_ptr<Poller> Poller::create(EventLoop* loop, PollerKind kind) {
  if (resolve(kind) == PollerKind::kIoUring) return std::make_unique<UringPoller>(loop);
  return std::make_unique<EpollPoller>(loop);
}

}  // namespace libnet
