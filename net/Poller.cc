#include "net/Poller.h"

#include "net/PollerKind.h"
#include "net/poller/EpollPoller.h"

namespace libnet {

std::string_view pollerKindName(PollerKind kind) {
  switch (kind) {
    case PollerKind::kEpoll:
      return "epoll";
    case PollerKind::kAuto:
      return "auto";
  }
  return "?";
}

std::optional<PollerKind> parsePollerKind(std::string_view name) {
  if (name == "epoll") return PollerKind::kEpoll;
  if (name == "auto") return PollerKind::kAuto;
  return std::nullopt;
}

std::unique_ptr<Poller> Poller::create(EventLoop* loop, PollerKind kind) {
  switch (kind) {
    case PollerKind::kEpoll:
    case PollerKind::kAuto:
      return std::make_unique<EpollPoller>(loop);
  }
  return std::make_unique<EpollPoller>(loop);
}

}  // namespace libnet
