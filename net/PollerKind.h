// PollerKind: which readiness backend an EventLoop runs on.
#pragma once

#include <optional>
#include <string_view>

namespace libnet {

enum class PollerKind {
  kEpoll,  // epoll, edge-triggered
  kAuto,   // the best backend available on this machine
};

std::string_view pollerKindName(PollerKind kind);
// "epoll", "auto"; nullopt for anything else.
std::optional<PollerKind> parsePollerKind(std::string_view name);

}  // namespace libnet
