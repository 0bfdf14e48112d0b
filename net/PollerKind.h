// PollerKind: which readiness backend an EventLoop runs on.
#pragma once

#include <optional>
#include <string_view>

namespace libnet {

enum class PollerKind {
  kEpoll,    // epoll, edge-triggered
  kIoUring,  // io_uring: multishot poll for channels, completions for TCP
  // io_uring if this machine runs it, else epoll. Decided per loop: a loop
  // whose own ring cannot be built although the probe passed (say, an
  // unprivileged process under a small RLIMIT_MEMLOCK, or many loops under
  // a larger one) runs on epoll, as do the process's later kAuto loops; one
  // log line says why.
  kAuto,
};

std::string_view pollerKindName(PollerKind kind);
// "epoll", "uring" (or "io_uring"), "auto"; nullopt for anything else.
std::optional<PollerKind> parsePollerKind(std::string_view name);

}  // namespace libnet
