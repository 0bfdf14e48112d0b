// The backend factory: Poller::create and Poller::resolve (declared in
// net/Poller.h). The one place outside the backends themselves that names
// them, as muduo's DefaultPoller.cc is.
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include "base/Logging.h"
#include "net/Poller.h"
#include "net/PollerKind.h"
#include "net/poller/EpollPoller.h"
#include "net/poller/UringPoller.h"

namespace libnet {

namespace {

// LIBNET_POLLER, read once; an unknown value is reported once and ignored.
std::optional<PollerKind> environmentKind() {
  static const std::optional<PollerKind> kind = []() -> std::optional<PollerKind> {
    const char* env = std::getenv("LIBNET_POLLER");
    if (env == nullptr || *env == '\0') return std::nullopt;
    auto parsed = parsePollerKind(env);
    if (!parsed) {
      LOG_ERROR << "LIBNET_POLLER='" << env
                << "' is not one of epoll, uring, auto; using the program's choice";
    }
    return parsed;
  }();
  return kind;
}

// Set once a loop asked for kAuto could not build its ring although the
// probe passed (the memory-locking limit is per user, so a small probe ring
// fits where a loop's real ring, or the rings of many loops, do not). From
// then on kAuto means epoll in this process: later loops would most likely
// fail the same way, and trying costs a failed ring setup each time.
std::atomic<bool> g_autoRingFailed{false};

}  // namespace

PollerKind Poller::resolve(PollerKind kind) {
  if (auto env = environmentKind()) kind = *env;
  if (kind != PollerKind::kAuto) return kind;
  const UringPoller::ProbeResult& probe = UringPoller::probe();
  if (!probe.ok) {
    static std::once_flag logged;
    std::call_once(logged, [&] {
      LOG_WARN << "libnet: io_uring unavailable (" << probe.detail << "); using epoll";
    });
    return PollerKind::kEpoll;
  }
  return g_autoRingFailed.load(std::memory_order_acquire) ? PollerKind::kEpoll
                                                          : PollerKind::kIoUring;
}

std::string Poller::unavailableReason(PollerKind kind) {
  if (resolve(kind) != PollerKind::kIoUring) return {};
  const UringPoller::ProbeResult& probe = UringPoller::probe();
  return probe.ok ? std::string() : "io_uring unavailable: " + probe.detail;
}

std::unique_ptr<Poller> Poller::create(EventLoop* loop, PollerKind kind) {
  const PollerKind wanted = environmentKind().value_or(kind);
  const PollerKind resolved = resolve(kind);
  if (resolved == PollerKind::kEpoll) return std::make_unique<EpollPoller>(loop);
  if (wanted == PollerKind::kIoUring) return std::make_unique<UringPoller>(loop);  // may throw
  // kAuto: the probe passed, yet this loop's own ring (of the real size, with
  // its buffer ring) can still fail; then this loop runs on epoll rather
  // than failing the program that asked for nothing in particular.
  try {
    auto poller = std::make_unique<UringPoller>(loop);
    static std::once_flag logged;
    std::call_once(logged, [&] {
      LOG_INFO << "libnet: using io_uring (" << UringPoller::probe().detail << ")";
    });
    return poller;
  } catch (const std::system_error& e) {
    if (!g_autoRingFailed.exchange(true, std::memory_order_acq_rel)) {
      LOG_WARN << "libnet: io_uring unavailable for this loop (" << e.what()
               << "); using epoll for it and every later loop";
    }
    return std::make_unique<EpollPoller>(loop);
  }
}

}  // namespace libnet
