// EventLoopOptions: what a program may choose about one EventLoop's backend,
// given at construction (EventLoop(const EventLoopOptions&)). Each loop has
// its own: two loops in one process may differ, and the loops an
// EventLoopThreadPool makes for a loop get that loop's options.
//
// The environment variables LIBNET_POLLER, LIBNET_URING_SQPOLL_IDLE_MS and
// LIBNET_URING_FIXED_FILES override what the program leaves at its default
// (net/poller/PollerEnvironment.h), so a deployed binary can be switched
// without a rebuild.
#pragma once

#include <cstdint>

#include "net/PollerKind.h"

namespace libnet {

// Sizes and switches of an io_uring loop's ring; ignored on epoll.
struct IoUringOptions {
  uint32_t sqEntries = 1024;
  uint32_t cqEntries = 16384;
  uint32_t bufferCount = 2048;  // the most provided buffers; power of two
  uint32_t bufferSize = 16384;
  // Buffers provided at first; more as receives find the ring empty (a small
  // ring stays in cache).
  uint32_t initialBufferCount = 64;
  // Incremental buffer consumption where the kernel has it.
  bool incrementalBuffers = true;
  // A connection's multishot recv is told how many bytes it may deliver in
  // all (the room left under the connection's output limit, and while its
  // peer sends faster than the loop takes, a share of the ring), where the
  // kernel can be told (the probe asks); false, or an older kernel: a
  // connection with less than 512 KiB of room under its limit receives
  // single-shot, at most that room at a time; above that a plain multishot
  // recv may read one pass past the limit, and the connection keeps the
  // surplus in its input buffer.
  bool boundedMultishotRecv = true;
  // How often a grown buffer ring is weighed for shrinking (ms): buffers a
  // burst brought in leave circulation, and their pages go back, once
  // demand has stayed low for that long.
  uint32_t bufferCheckMs = 1000;
  // Slots in the ring's table of registered files (at most RLIMIT_NOFILE;
  // 0: none). A connection's socket sits in a slot while it is open, so its
  // recv/send ops skip the per-op file lookup; the fd stays a real fd.
  // Connections beyond the table, or on kernels without sparse tables
  // (before 5.19), use the plain fd; the first one a loop sees beyond the
  // table logs one INFO line. LIBNET_URING_FIXED_FILES sets it where the
  // program leaves the default.
  static constexpr uint32_t kDefaultFixedFiles = 16384;
  uint32_t fixedFiles = kDefaultFixedFiles;
  // Opt-in, off by default: > 0 asks for a kernel thread that polls the
  // submission queue (IORING_SETUP_SQPOLL), sleeping after this many ms
  // without work. Submissions then need no system call, but the thread spins
  // on a CPU of its own while there is traffic: on a machine with few cores
  // it takes CPU from the loops (docs/benchmarks.md, "SQPOLL, opt-in"). A
  // kernel that refuses it gets a warning and a ring without it.
  // LIBNET_URING_SQPOLL_IDLE_MS sets it where the program leaves it 0.
  uint32_t sqPollIdleMs = 0;
};

struct EventLoopOptions {
  // The backend asked for (see PollerKind; kAuto decides per loop).
  PollerKind poller = PollerKind::kAuto;
  IoUringOptions ioUring;
  // EventLoop::metrics()' timings (busy time, loop lag): two clock reads per
  // turn. Off, those read zero; the counters are kept either way.
  bool metrics = true;
};

}  // namespace libnet
