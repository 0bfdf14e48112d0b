// takeListenFds(): the listening sockets a process was started with under
// the socket-activation protocol of systemd (sd_listen_fds(3)), without
// libsystemd: LISTEN_PID names this process, LISTEN_FDS counts the sockets,
// which are fds 3, 4, ..., and LISTEN_FDNAMES optionally names them
// (colon-separated). The same protocol carries sockets from a server to its
// successor on a restart (net/Successor.h), so that the listening sockets,
// and the connections queued in their backlogs, are never closed.
//
// Call it once, early, on any thread, before anything else opens fds that
// could be mistaken for the inherited ones.
#pragma once

#include <string>
#include <vector>

#include "base/UniqueFd.h"

namespace libnet {

// The first inherited fd (SD_LISTEN_FDS_START).
inline constexpr int kListenFdsStart = 3;

struct ListenFds {
  std::vector<UniqueFd> fds;       // fd 3 first
  std::vector<std::string> names;  // as many as fds; "" where LISTEN_FDNAMES names none
};

// The inherited sockets, owned by the caller. None when LISTEN_PID is unset
// or names another process (the variables were meant for a parent), or
// LISTEN_FDS is unset. The three variables are removed from the environment
// either way (so that a child does not take them for its own), and each fd
// returned is FD_CLOEXEC. Throws std::invalid_argument when LISTEN_PID or
// LISTEN_FDS is not a number, and std::system_error when one of the fds is
// not open or not a listening stream socket (SO_ACCEPTCONN); nothing is
// returned then, and the fds are left as they were.
[[nodiscard]] ListenFds takeListenFdsWithNames();
// The same, without the names.
[[nodiscard]] std::vector<UniqueFd> takeListenFds();

}  // namespace libnet
