// PollerKind: which readiness backend an EventLoop runs on.
#pragma once

#include <optional>
#include <string_view>

namespace libnet {

enum class PollerKind {
  kEpoll,    // epoll, edge-triggered
  kIoUring,  // io_uring: multishot poll for channels, completions for TCP
  // io_uring if this machine runs it, else epoll. The rule, from the
  // measurements in docs/benchmarks.md ("io_uring without the receive copy",
  // kernel 6.18): where the probe passes, io_uring costs 1-20% less server
  // CPU per message than epoll at 1000 connections, is level at 1-100
  // (single cells within the run-to-run noise, up to 20% either way), and an
  // idle connection costs about the same on both. Decided per loop: a loop
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
