// PollerKind: which backend an EventLoop runs on.
#pragma once

#include <optional>
#include <string_view>

namespace libnet {

enum class PollerKind {
  kEpoll,    // epoll, edge-triggered
  kIoUring,  // io_uring: multishot poll for channels, completions for TCP
  // io_uring if this machine runs it, else epoll. The rule, from the
  // measurements on kernel 6.18 (docs/benchmarks.md, "Backends table, with
  // the floors and the previous build", and "Idle connections: server
  // memory per connection"): where the probe passes, io_uring costs less
  // server CPU per message than epoll at 1000 connections, where one
  // io_uring_enter carries many messages; at 1-100 connections the two are
  // level within the run-to-run noise; and an idle connection costs about
  // the same on both. Decided per loop: a loop whose own ring cannot be
  // built although the probe passed (say, an unprivileged process under a
  // small RLIMIT_MEMLOCK, or many loops under a larger one) runs on epoll,
  // as do the process's later kAuto loops; one log line says why.
  kAuto,
};

std::string_view pollerKindName(PollerKind kind);
// "epoll", "uring" (or "io_uring"), "auto"; nullopt for anything else.
std::optional<PollerKind> parsePollerKind(std::string_view name);

}  // namespace libnet
