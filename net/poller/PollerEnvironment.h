// PollerEnvironment: the environment variables that override a program's
// backend settings, so that a deployed binary can be switched without a
// rebuild (README, "Architecture in a few lines"):
//
//   LIBNET_POLLER=epoll|uring|auto      the backend of every loop
//   LIBNET_URING_SQPOLL_IDLE_MS=MS      IoUringOptions::sqPollIdleMs, where
//                                       the program leaves it 0
//   LIBNET_URING_FIXED_FILES=N          IoUringOptions::fixedFiles, where the
//                                       program leaves the default
//
// A value that cannot be used is reported (one log line) and ignored. The
// environment is read, never written. Any thread.
#pragma once

#include <optional>

#include "net/EventLoopOptions.h"
#include "net/PollerKind.h"

namespace libnet {

// LIBNET_POLLER, read once per process; nullopt if unset, empty or unknown.
[[nodiscard]] std::optional<PollerKind> environmentPollerKind();
// `options` with the LIBNET_URING_* overrides applied (read each time).
[[nodiscard]] IoUringOptions withEnvironment(IoUringOptions options);

}  // namespace libnet
