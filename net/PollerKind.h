// PollerKind: which readiness backend an EventLoop runs on.
#pragma once

#include <optional>
#include <string_view>

namespace libnet {

enum class PollerKind {
  kEpoll,    // epoll, edge-triggered
  kIoUring,  // io_uring: multishot poll for channels, completions for TCP
  kAuto,     // io_uring if this machine runs it, else epoll
};

std::string_view pollerKindName(PollerKind kind);
// "epoll", "uring" (or "io_uring"), "auto"; nullopt for anything else.
std::optional<PollerKind> parsePollerKind(std::string_view name);

}  // namespace libnet
