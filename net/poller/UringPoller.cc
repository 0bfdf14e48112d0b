#include "net/poller/UringPoller.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>

#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Channel.h"
#include "net/EventLoop.h"
#include "net/poller/UringAcceptorIo.h"
#include "net/poller/UringConnectionIo.h"

namespace libnet {

namespace {

constexpr uint32_t kGenerationMask = 0xFFFFFF;  // 24 bits in user_data
constexpr uint16_t kBufferGroup = 0;

std::mutex g_configMutex;
UringPoller::Config g_config;

std::string errnoText(int err) { return std::string(strerrorTl(err)); }

// A probe stage that failed: the errno and why.
struct ProbeFailure {
  int error;
  std::string detail;
};

std::atomic<UringPoller::ProbeStage> g_simulatedFailure{UringPoller::ProbeStage::kNone};

std::optional<ProbeFailure> simulated(UringPoller::ProbeStage stage, std::string_view what) {
  if (g_simulatedFailure.load(std::memory_order_relaxed) != stage) return std::nullopt;
  return ProbeFailure{ENOSYS, std::string(what) + " (simulated)"};
}

std::optional<ProbeFailure> checkOpcodes(io_uring* ring) {
  if (auto failure = simulated(UringPoller::ProbeStage::kOpcodes, "kernel lacks IORING_OP_RECV")) {
    return failure;
  }
  struct Needed {
    int op;
    const char* name;
  };
  const Needed needed[] = {
      {IORING_OP_POLL_ADD, "POLL_ADD"}, {IORING_OP_POLL_REMOVE, "POLL_REMOVE"},
      {IORING_OP_RECV, "RECV"},         {IORING_OP_SEND, "SEND"},
      {IORING_OP_ACCEPT, "ACCEPT"},     {IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"},
  };
  io_uring_probe* probe = io_uring_get_probe_ring(ring);
  if (!probe) return ProbeFailure{ENOSYS, "io_uring_get_probe_ring failed"};
  std::optional<ProbeFailure> failure;
  for (const Needed& n : needed) {
    if (!io_uring_opcode_supported(probe, n.op)) {
      failure = ProbeFailure{ENOSYS, std::string("kernel lacks IORING_OP_") + n.name};
      break;
    }
  }
  io_uring_free_probe(probe);
  return failure;
}

// What the completion path needs beyond opcodes: a buffer ring, and a
// multishot recv selecting from it (6.0+; older kernels answer EINVAL), seen
// to deliver a byte written into a socketpair.
std::optional<ProbeFailure> checkMultishotRecv(io_uring* ring) {
  if (auto failure = simulated(UringPoller::ProbeStage::kBufferRing,
                               "io_uring_register_buf_ring: kernel lacks buffer rings")) {
    return failure;
  }
  std::optional<BufferRing> buffers;
  try {
    buffers.emplace(ring, kBufferGroup, 2, 4096, 2);
  } catch (const std::system_error& e) {
    return ProbeFailure{e.code().value(), e.what()};
  }
  if (auto failure = simulated(UringPoller::ProbeStage::kMultishotRecv,
                               "kernel lacks multishot recv (IORING_RECV_MULTISHOT)")) {
    return failure;
  }
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) != 0) {
    return ProbeFailure{errno, "socketpair: " + errnoText(errno)};
  }
  const UniqueFd ours(pair[0]);
  const UniqueFd theirs(pair[1]);
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  io_uring_prep_recv_multishot(sqe, ours.get(), nullptr, 0, 0);
  sqe->flags |= IOSQE_BUFFER_SELECT;
  sqe->buf_group = kBufferGroup;
  io_uring_sqe_set_data64(sqe, 1);
  if (::write(theirs.get(), "x", 1) != 1) return ProbeFailure{errno, "write: " + errnoText(errno)};
  __kernel_timespec timeout{};
  timeout.tv_sec = 1;
  io_uring_cqe* cqe = nullptr;
  if (const int rc = io_uring_submit_and_wait_timeout(ring, &cqe, 1, &timeout, nullptr);
      rc < 0 || cqe == nullptr) {
    const int err = rc < 0 ? -rc : ETIME;
    return ProbeFailure{err, "multishot recv test: " + errnoText(err)};
  }
  const int res = cqe->res;
  const unsigned flags = cqe->flags;
  io_uring_cqe_seen(ring, cqe);
  if (res == -EINVAL) {
    return ProbeFailure{EINVAL, "kernel lacks multishot recv (IORING_RECV_MULTISHOT)"};
  }
  if (res != 1 || !(flags & IORING_CQE_F_BUFFER)) {
    const int err = res < 0 ? -res : EPROTO;
    return ProbeFailure{err, "multishot recv into a buffer ring returned " + std::to_string(res)};
  }
  return std::nullopt;  // the recv still armed goes with the ring
}

UringPoller::ProbeResult runProbe() {
  UringPoller::ProbeResult result;
  if (auto failure = simulated(UringPoller::ProbeStage::kSetup,
                               "io_uring_queue_init: Function not implemented")) {
    result.error = failure->error;
    result.detail = failure->detail;
    return result;
  }
  // Best first. DEFER_TASKRUN (6.1+) runs completion work only when this
  // thread enters the kernel to wait, which is what a loop wants; it needs
  // SINGLE_ISSUER. Older kernels refuse unknown flags with EINVAL.
  const unsigned candidates[] = {
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
      IORING_SETUP_COOP_TASKRUN,
      0,
  };
  io_uring ring{};
  int rc = -EINVAL;
  unsigned flags = 0;
  for (const unsigned candidate : candidates) {
    io_uring_params params{};
    params.flags = candidate;
    rc = io_uring_queue_init_params(8, &ring, &params);
    flags = candidate;
    if (rc != -EINVAL) break;
  }
  if (rc < 0) {
    result.error = -rc;
    result.detail = "io_uring_queue_init: " + errnoText(-rc);
    return result;
  }
  std::optional<ProbeFailure> failure = checkOpcodes(&ring);
  if (!failure) failure = checkMultishotRecv(&ring);
  io_uring_queue_exit(&ring);
  if (failure) {
    result.error = failure->error;
    result.detail = std::move(failure->detail);
    return result;
  }
  result.ok = true;
  result.setupFlags = flags;
  result.detail = (flags & IORING_SETUP_DEFER_TASKRUN)   ? "SINGLE_ISSUER|DEFER_TASKRUN"
                  : (flags & IORING_SETUP_SINGLE_ISSUER) ? "SINGLE_ISSUER|COOP_TASKRUN"
                  : flags                                ? "COOP_TASKRUN"
                                                         : "no setup flags";
  return result;
}

}  // namespace

void UringPoller::setDefaultConfig(const Config& config) {
  std::lock_guard lock(g_configMutex);
  g_config = config;
}

UringPoller::Config UringPoller::defaultConfig() {
  std::lock_guard lock(g_configMutex);
  return g_config;
}

void UringPoller::simulateProbeFailure(ProbeStage stage) {
  g_simulatedFailure.store(stage, std::memory_order_relaxed);
}

const UringPoller::ProbeResult& UringPoller::probe() {
  // On a thread of its own: once a ring is closed, the kernel's clean-up
  // interrupts every thread that used it (task work with TWA_SIGNAL), and a
  // blocking call with a timeout there (connect or recv under SO_SNDTIMEO /
  // SO_RCVTIMEO) fails with EINTR. The caller's thread must not see that for
  // a ring it never asked for; a thread that has exited is not interrupted.
  static const ProbeResult result = [] {
    ProbeResult probed;
    std::exception_ptr failure;
    try {
      std::thread([&probed, &failure] {
        try {
          probed = runProbe();
        } catch (...) {
          failure = std::current_exception();
        }
      }).join();
    } catch (const std::system_error&) {
      return runProbe();  // no thread to be had: probe here
    }
    if (failure) std::rethrow_exception(failure);
    return probed;
  }();
  return result;
}

UringPoller::UringPoller(EventLoop* loop) : Poller(loop) {
  const ProbeResult& probed = probe();
  if (!probed.ok) {
    throw std::system_error(probed.error, std::system_category(),
                            "io_uring unavailable (" + probed.detail + ")");
  }
  const Config config = defaultConfig();
  const auto init = [&](unsigned flags, uint32_t sqIdleMs) {
    io_uring_params params{};
    params.flags = flags | IORING_SETUP_CQSIZE;
    params.cq_entries = config.cqEntries;
    params.sq_thread_idle = sqIdleMs;
    return io_uring_queue_init_params(config.sqEntries, &ring_, &params);
  };
  unsigned flags = probed.setupFlags;
  int rc = -EINVAL;
  if (const uint32_t idleMs = sqPollIdleMs(config); idleMs > 0) {
    rc = init(IORING_SETUP_SQPOLL, idleMs);
    if (rc == 0) {
      flags = IORING_SETUP_SQPOLL;
    } else {
      LOG_WARN << "io_uring: SQPOLL refused (" << strerrorTl(-rc) << "); running without it";
    }
  }
  if (rc != 0) rc = init(flags, 0);
  if (rc < 0) {
    // The ring's memory counts against RLIMIT_MEMLOCK (per user, for
    // processes without CAP_IPC_LOCK): the usual reason, worth naming.
    throw std::system_error(-rc, std::system_category(),
                            "io_uring_queue_init_params (" + std::to_string(config.sqEntries) +
                                " SQ / " + std::to_string(config.cqEntries) + " CQ entries" +
                                (rc == -ENOMEM ? "; RLIMIT_MEMLOCK too low?)" : ")"));
  }
  setupFlags_ = flags;
  // Saves the fd lookup on every io_uring_enter; optional.
  io_uring_register_ring_fd(&ring_);
  // Saves the file lookup on every recv/send; optional as well.
  if (const uint32_t wanted = fixedFiles(config); wanted > 0) {
    rlimit files{};
    const rlim_t limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 ? files.rlim_cur : 0;
    const auto slots = static_cast<uint32_t>(std::min<rlim_t>(wanted, limit));
    if (slots > 0) {
      if (const int rc = io_uring_register_files_sparse(&ring_, slots); rc == 0) {
        fileSlots_ = slots;
        fileSlotFds_ = std::make_unique<int[]>(slots);
      } else {
        LOG_DEBUG << "io_uring: no registered-file table (" << strerrorTl(-rc)
                  << "); connections use plain fds";
      }
    }
  }
  try {
    buffers_ = std::make_unique<BufferRing>(&ring_, kBufferGroup, config.bufferCount,
                                            config.bufferSize, config.initialBufferCount,
                                            config.incrementalBuffers);
  } catch (...) {
    io_uring_queue_exit(&ring_);
    throw;
  }
  completions_.reserve(1024);
}

UringPoller::~UringPoller() {
  if (!closesUnsubmitted_.empty()) {
    // What is still queued by now is closes and cancels of connections
    // already gone (EventLoop's destructor turned the poller until no op
    // was left in flight): submit it. A refused submit (say, from a thread
    // other than the ring's) submitted nothing: close the fds here.
    if (io_uring_submit(&ring_) < 0) {
      for (const int fd : closesUnsubmitted_) ::close(fd);
    }
  }
  buffers_.reset();
  io_uring_queue_exit(&ring_);
}

uint32_t UringPoller::allocateSlot() {
  if (!freeSlots_.empty()) {
    const uint32_t slot = freeSlots_.back();
    freeSlots_.pop_back();
    return slot;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

void UringPoller::freeSlot(uint32_t slot) {
  Slot& s = slots_[slot];
  s.channel = nullptr;
  s.handler = nullptr;
  s.pollArmed = false;
  s.armedMask = 0;
  // Whatever is still in flight for the old owner now reads as stale.
  s.generation = (s.generation + 1) & kGenerationMask;
  freeSlots_.push_back(slot);
}

namespace {

// A number from the environment variable `name`; nullopt if unset or empty,
// and, with a warning, if it is not a number.
std::optional<uint32_t> environmentNumber(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return std::nullopt;
  uint32_t value = 0;
  const std::string_view text(env);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    LOG_WARN << name << "='" << text << "' is not a number; ignored";
    return std::nullopt;
  }
  return value;
}

}  // namespace

uint32_t UringPoller::sqPollIdleMs(const Config& config) {
  if (config.sqPollIdleMs > 0) return config.sqPollIdleMs;
  return environmentNumber("LIBNET_URING_SQPOLL_IDLE_MS").value_or(0);
}

uint32_t UringPoller::fixedFiles(const Config& config) {
  if (config.fixedFiles != Config::kDefaultFixedFiles) return config.fixedFiles;
  return environmentNumber("LIBNET_URING_FIXED_FILES").value_or(config.fixedFiles);
}

int UringPoller::registerFile(int fd) {
  uint32_t slot;
  if (!freeFileSlots_.empty()) {
    slot = freeFileSlots_.back();
    freeFileSlots_.pop_back();
  } else if (fileSlotsUsed_ < fileSlots_) {
    slot = fileSlotsUsed_++;
  } else {
    if (fileSlots_ > 0 && !fileTableFullLogged_) {
      fileTableFullLogged_ = true;
      LOG_INFO << "io_uring: registered-file table full (" << fileSlots_
               << " slots); this loop's further connections use plain fds"
                  " (LIBNET_URING_FIXED_FILES sets the size)";
    }
    return -1;
  }
  fileSlotFds_[slot] = fd;
  io_uring_sqe* sqe = getSqe();
  io_uring_prep_files_update(sqe, &fileSlotFds_[slot], 1, static_cast<int>(slot));
  io_uring_sqe_set_data64(sqe, userData(UringOp::kFileRegistered, slot));
  return static_cast<int>(slot);
}

void UringPoller::closeFile(UniqueFd fd) {
  if (!fd || (setupFlags_ & IORING_SETUP_SQPOLL)) return;  // closed by ~UniqueFd
  io_uring_sqe* sqe = getSqe();
  const int raw = fd.release();
  io_uring_prep_close(sqe, raw);
  io_uring_sqe_set_data64(sqe, userData(kIgnore, 0));
  closesUnsubmitted_.push_back(raw);
}

void UringPoller::unregisterFile(int index) {
  io_uring_sqe* sqe = getSqe();
  io_uring_prep_close_direct(sqe, static_cast<unsigned>(index));
  io_uring_sqe_set_data64(sqe, userData(UringOp::kFileClosed, static_cast<uint64_t>(index)));
}

io_uring_sqe* UringPoller::getSqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    io_uring_submit(&ring_);
    submitted();
    // With SQPOLL the submit only hands the entries to the kernel's thread:
    // wait until it has taken some.
    if (setupFlags_ & IORING_SETUP_SQPOLL) io_uring_sqring_wait(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) LOG_FATAL << "io_uring submission queue stuck full";
  }
  return sqe;
}

void UringPoller::armPoll(uint32_t slot) {
  Slot& s = slots_[slot];
  io_uring_sqe* sqe = getSqe();
  io_uring_prep_poll_multishot(sqe, s.channel->fd(), s.channel->events());
  io_uring_sqe_set_data64(sqe, userData(kPoll, tokenOf(slot)));
  s.pollArmed = true;
  s.armedMask = s.channel->events();
}

void UringPoller::cancelPoll(uint32_t slot) {
  Slot& s = slots_[slot];
  io_uring_sqe* sqe = getSqe();
  io_uring_prep_poll_remove(sqe, userData(kPoll, tokenOf(slot)));
  io_uring_sqe_set_data64(sqe, userData(kIgnore, 0));
  s.pollArmed = false;
  s.armedMask = 0;
  // The cancelled poll's last completion must not be taken for a new one.
  s.generation = (s.generation + 1) & kGenerationMask;
}

void UringPoller::updateChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) {
    const uint32_t slot = allocateSlot();
    slots_[slot].channel = channel;
    channel->setPollerState(static_cast<int>(slot));
  }
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  Slot& s = slots_[slot];
  if (s.pollArmed && s.armedMask == channel->events()) return;
  if (s.pollArmed) cancelPoll(slot);
  if (!channel->isNoneEvent()) armPoll(slot);
}

void UringPoller::removeChannel(Channel* channel) {
  ownerLoop_->assertInLoopThread();
  if (channel->pollerState() < 0) return;
  const auto slot = static_cast<uint32_t>(channel->pollerState());
  if (slots_[slot].pollArmed) cancelPoll(slot);
  freeSlot(slot);
  channel->setPollerState(-1);
}

uint64_t UringPoller::registerHandler(Handler* handler) {
  ownerLoop_->assertInLoopThread();
  const uint32_t slot = allocateSlot();
  slots_[slot].handler = handler;
  ++handlerCount_;
  return tokenOf(slot);
}

void UringPoller::unregisterHandler(uint64_t token) {
  ownerLoop_->assertInLoopThread();
  const auto slot = static_cast<uint32_t>(token & 0xFFFFFFFF);
  if (slot < slots_.size() && tokenOf(slot) == token) {
    --handlerCount_;
    freeSlot(slot);
  }
}

int64_t UringPoller::liveSlot(uint64_t userData) const {
  const auto slot = static_cast<uint32_t>(userData & 0xFFFFFFFF);
  const auto generation = static_cast<uint32_t>((userData >> 32) & kGenerationMask);
  if (slot >= slots_.size() || slots_[slot].generation != generation) return -1;
  return slot;
}

void UringPoller::dropStale(const Completion& c) {
  // Its owner is gone: give back what the completion holds.
  if (c.flags & IORING_CQE_F_BUFFER) {
    buffers_->finished(buffers_->received(c.flags, c.res).id);
  }
  if (static_cast<Op>(c.userData >> 56) == kAccept && c.res >= 0) ::close(c.res);
}

Timestamp UringPoller::poll(Duration timeout, ChannelList* active) {
  ++turn_;
  // A grown buffer ring is weighed about once a second (BufferRing), also
  // while the loop is otherwise idle, so a burst's memory goes back soon.
  if (buffers_->provided() > buffers_->initial()) timeout = std::min(timeout, kRingCheckInterval);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
  __kernel_timespec ts{};
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  io_uring_cqe* first = nullptr;
  const int rc = io_uring_submit_and_wait_timeout(&ring_, &first, 1, &ts, nullptr);
  submitted();
  if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
    LOG_ERROR << "io_uring_submit_and_wait_timeout: " << strerrorTl(-rc);
  }
  const Timestamp now = Timestamp::now();

  unsigned head = 0;
  unsigned seen = 0;
  uint32_t withBuffer = 0;
  io_uring_cqe* cqe = nullptr;
  io_uring_for_each_cqe(&ring_, head, cqe) {
    ++seen;
    const Completion c{cqe->user_data, cqe->res, cqe->flags};
    if (c.flags & IORING_CQE_F_BUFFER) ++withBuffer;
    const auto op = static_cast<Op>(c.userData >> 56);
    if (op == kIgnore) continue;
    if (op == UringOp::kFileRegistered) {
      // Fails only on a broken invariant (a slot out of range); the
      // connection's ops on the slot then fail with EBADF and close it.
      if (c.res < 0) {
        LOG_ERROR << "io_uring: registering a file in slot " << (c.userData & 0xFFFFFFFF) << ": "
                  << strerrorTl(-c.res);
      }
      continue;
    }
    if (op == UringOp::kFileClosed) {
      // The slot is empty now (or was already: a close_direct fails only on
      // an empty slot), so it can take another socket.
      freeFileSlots_.push_back(static_cast<uint32_t>(c.userData & 0xFFFFFFFF));
      continue;
    }
    if (op != kPoll) {
      completions_.push_back(c);  // checked for staleness when dispatched
      continue;
    }
    const int64_t slot = liveSlot(c.userData);
    if (slot < 0) continue;
    Slot& s = slots_[static_cast<size_t>(slot)];
    if (!(c.flags & IORING_CQE_F_MORE)) {
      s.pollArmed = false;
      rearm_.push_back(static_cast<uint32_t>(slot));
    }
    if (c.res <= 0 || s.channel == nullptr) continue;  // cancelled, or an error
    if (s.activeTurn == turn_) {
      s.channel->setReturnedEvents(s.channel->returnedEvents() | static_cast<uint32_t>(c.res));
    } else {
      s.activeTurn = turn_;
      s.channel->setReturnedEvents(static_cast<uint32_t>(c.res));
      active->push_back(s.channel);
    }
  }
  io_uring_cq_advance(&ring_, seen);
  buffers_->noteDemand(withBuffer);
  if (now - lastRingCheck_ >= kRingCheckInterval) {
    lastRingCheck_ = now;
    // SQPOLL's kernel thread receives concurrently: its pages stay.
    buffers_->shrinkIfQuiet((setupFlags_ & IORING_SETUP_SQPOLL) == 0);
  }

  // A multishot poll ended (CQ overflow, an error): arm a fresh one if the
  // channel still wants events. It goes out with the next submit.
  for (const uint32_t slot : rearm_) {
    Slot& s = slots_[slot];
    if (s.channel && !s.pollArmed && !s.channel->isNoneEvent()) armPoll(slot);
  }
  rearm_.clear();
  return now;
}

void UringPoller::dispatchCompletions() {
  // Handlers may close connections (making later completions of this batch
  // stale) or prepare new SQEs; both are fine while iterating a copy.
  for (size_t i = 0; i < completions_.size(); ++i) {
    const Completion c = completions_[i];
    const int64_t slot = liveSlot(c.userData);
    if (slot < 0 || slots_[static_cast<size_t>(slot)].handler == nullptr) {
      dropStale(c);
      continue;
    }
    try {
      slots_[static_cast<size_t>(slot)].handler->onCompletion(static_cast<Op>(c.userData >> 56),
                                                              c.res, c.flags);
    } catch (const std::exception& e) {
      LOG_ERROR << "exception escaped an io_uring completion handler: " << e.what();
    } catch (...) {
      LOG_ERROR << "unknown exception escaped an io_uring completion handler";
    }
  }
  completions_.clear();
}

std::unique_ptr<ConnectionIo> UringPoller::newConnectionIo(const ConnectionIo::Parts& parts) {
  return std::make_unique<UringConnectionIo>(this, ownerLoop_, parts);
}

std::unique_ptr<AcceptorIo> UringPoller::newAcceptorIo(AcceptorIo::Owner* owner, int listenFd) {
  return std::make_unique<UringAcceptorIo>(this, ownerLoop_, owner, listenFd);
}

}  // namespace libnet
