#include "net/poller/PollerFactory.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>

#include "base/Logging.h"
#include "net/Poller.h"
#include "net/PollerKind.h"
#include "net/poller/EpollAcceptorIo.h"
#include "net/poller/EpollConnectionIo.h"
#include "net/poller/EpollDatagramIo.h"
#include "net/poller/EpollPoller.h"
#include "net/poller/PollerEnvironment.h"
#include "net/poller/UringAcceptorIo.h"
#include "net/poller/UringConnectionIo.h"
#include "net/poller/UringContext.h"
#include "net/poller/UringDatagramIo.h"
#include "net/poller/UringPoller.h"
#include "net/poller/UringProbe.h"

namespace libnet {

namespace {

// Set once a loop asked for kAuto could not build its ring although the
// probe passed (the memory-locking limit is per user, so a small probe ring
// fits where a loop's real ring, or the rings of many loops, do not). From
// then on kAuto means epoll in this process: later loops would most likely
// fail the same way, and trying costs a failed ring setup each time.
std::atomic<bool> g_autoRingFailed{false};

// Each backend's strategies, made here rather than by its poller, so that a
// poller and its strategies do not know each other (the strategies reach
// what they share with the poller through the loop or, on io_uring, the
// poller's UringContext).
class EpollIoFactory final : public Poller::IoFactory {
 public:
  explicit EpollIoFactory(EventLoopBase* loop) : loop_(loop) {}

  ConnectionIo::Ptr newConnectionIo(const ConnectionIo::Parts& parts) override {
    static_assert(sizeof(EpollConnectionIo) <= ConnectionIo::Room::kConnectionRoom,
                  "a connection and its strategy are one allocation");
    return ConnectionIo::make<EpollConnectionIo>(parts.room, loop_, parts);
  }
  std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner, int listenFd) override {
    return std::make_unique<EpollAcceptorIo>(loop_, owner, listenFd);
  }
  std::unique_ptr<DatagramIo> newDatagramIo(DatagramIo::Params params) override {
    return std::make_unique<EpollDatagramIo>(loop_, std::move(params));
  }

 private:
  EventLoopBase* const loop_;
};

class UringIoFactory final : public Poller::IoFactory {
 public:
  UringIoFactory(EventLoopBase* loop, UringContext* context) : loop_(loop), context_(context) {}

  ConnectionIo::Ptr newConnectionIo(const ConnectionIo::Parts& parts) override {
    static_assert(sizeof(UringConnectionIo) <= ConnectionIo::Room::kConnectionRoom,
                  "a connection and its strategy are one allocation");
    return ConnectionIo::make<UringConnectionIo>(parts.room, context_, loop_, parts);
  }
  std::unique_ptr<AcceptorIo> newAcceptorIo(AcceptorIo::Owner* owner, int listenFd) override {
    return std::make_unique<UringAcceptorIo>(context_, loop_, owner, listenFd);
  }
  std::unique_ptr<DatagramIo> newDatagramIo(DatagramIo::Params params) override {
    return std::make_unique<UringDatagramIo>(context_, loop_, std::move(params));
  }

 private:
  EventLoopBase* const loop_;
  UringContext* const context_;  // the poller's, which owns this factory
};

std::unique_ptr<Poller> newEpoll(EventLoopBase* loop) {
  auto poller = std::make_unique<EpollPoller>(loop);
  poller->setIoFactory(std::make_unique<EpollIoFactory>(loop));
  return poller;
}

// Throws std::system_error as UringPoller's constructor does.
std::unique_ptr<Poller> newUring(EventLoopBase* loop, const IoUringOptions& options) {
  auto poller = std::make_unique<UringPoller>(loop, options);
  poller->setIoFactory(std::make_unique<UringIoFactory>(loop, &poller->context()));
  return poller;
}

}  // namespace

PollerKind resolvePoller(PollerKind kind) {
  if (auto env = environmentPollerKind()) kind = *env;
  if (kind != PollerKind::kAuto) return kind;
  const UringProbe::Result& probe = UringProbe::result();
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

std::string pollerUnavailableReason(PollerKind kind) {
  if (resolvePoller(kind) != PollerKind::kIoUring) return {};
  const UringProbe::Result& probe = UringProbe::result();
  return probe.ok ? std::string() : "io_uring unavailable: " + probe.detail;
}

std::unique_ptr<Poller> newPoller(EventLoopBase* loop, const EventLoopOptions& options) {
  const PollerKind wanted = environmentPollerKind().value_or(options.poller);
  const PollerKind resolved = resolvePoller(options.poller);
  if (resolved == PollerKind::kEpoll) return newEpoll(loop);
  const IoUringOptions ring = withEnvironment(options.ioUring);
  if (wanted == PollerKind::kIoUring) return newUring(loop, ring);  // may throw
  // kAuto: the probe passed, yet this loop's own ring (of the real size, with
  // its buffer ring) can still fail; then this loop runs on epoll rather
  // than failing the program that asked for nothing in particular.
  try {
    auto poller = newUring(loop, ring);
    static std::once_flag logged;
    std::call_once(logged, [&] {
      LOG_INFO << "libnet: using io_uring (" << UringProbe::result().detail << ")";
    });
    return poller;
  } catch (const std::system_error& e) {
    if (!g_autoRingFailed.exchange(true, std::memory_order_acq_rel)) {
      LOG_WARN << "libnet: io_uring unavailable for this loop (" << e.what()
               << "); using epoll for it and every later loop";
    }
    return newEpoll(loop);
  }
}

}  // namespace libnet
