#include "net/PollerKind.h"

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

}  // namespace libnet
