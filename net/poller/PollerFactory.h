// PollerFactory: makes a loop's backend, the one place outside the backends
// that names them (the job muduo gives its DefaultPoller.cc). The header
// names none: EventLoop.cc (//net) includes it, and no other file of net/ or
// net/http/ may (tests/net:backend_boundary_test).
//
// Any thread; newPoller() on the thread of the loop it is for.
#pragma once

#include <memory>
#include <string>

#include "net/EventLoopOptions.h"
#include "net/Poller.h"
#include "net/PollerKind.h"

namespace libnet {

class EventLoopBase;

// The backend for `options` (LIBNET_POLLER and the LIBNET_URING_* variables
// applied, net/poller/PollerEnvironment.h). kAuto picks io_uring if the
// probe passes and this loop's ring can be built, else epoll, with one log
// line saying why (the first time); kIoUring where io_uring cannot run
// throws std::system_error naming the failed call.
[[nodiscard]] std::unique_ptr<Poller> newPoller(EventLoopBase* loop,
                                                const EventLoopOptions& options);
// The kind newPoller() would try first for `kind` (environment applied,
// kAuto resolved by the probe and by earlier loops' ring failures).
[[nodiscard]] PollerKind resolvePoller(PollerKind kind);
// Why a loop asked for `kind` cannot run here ("io_uring unavailable: ..."
// with the probe's reason), or "" if it can as far as the probe can tell
// (kEpoll and kAuto always can; environment applied as in resolvePoller()).
[[nodiscard]] std::string pollerUnavailableReason(PollerKind kind);

}  // namespace libnet
