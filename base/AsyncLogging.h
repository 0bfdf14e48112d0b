// AsyncLogging: the asynchronous back end for the LOG_* front end.
//
// Every logging thread copies its finished lines into a staging block of its
// own (LogBuffer, options.threadBufferSize) with no lock: a memcpy and one
// store that publishes the new size. Only a full block costs a lock: it joins
// the queue and a spare takes its place. One background thread wakes when
// about options.bufferSize bytes are queued, on flush(), on stop() or every
// flushInterval; it takes the queue under the lock and writes it to the sink
// outside the lock. On flush(), stop() and the interval it also writes what
// the threads' blocks hold so far, in place, while they keep filling them.
// Written blocks go back to a free list, so steady state allocates nothing.
//
// Order: each thread's lines reach the sink in the order it logged them and
// are never torn or interleaved; lines of different threads interleave in
// runs (a block, or what a block gained since the last write), not line by
// line, so the file is not sorted by time across threads.
//
// Overload: when maxQueuedBuffers x bufferSize bytes of full blocks are
// already waiting or being written, a newly filled block is dropped whole
// (newest first: what is queued stays in order) and the back end writes one
// notice line with the counts. Blocks alive: at most that queue, one per
// logging thread, and a few spares (see buffersAllocated()).
//
// Ownership and threads: the owner constructs, start()s and stop()s (or
// destroys) it on one thread. append() and flush() may be called from any
// thread, including after stop(), when lines are written synchronously. The
// sink is called only from one thread at a time (the back end, or with the
// back end gone under the lock), so a LogFile needs no locking of its own.
// A thread that exits hands its block to the queue. installAsDefaultSink()
// routes LOG_* here; the destructor puts the default stderr sink back, so
// destroy it only after other threads stopped logging.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "base/LogBuffer.h"
#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"

namespace libnet {

class LogFile;

class AsyncLogging {
 public:
  // Where the back end writes. Injectable so tests can use a slow or in-memory
  // sink; fileSink() adapts a LogFile.
  struct Sink {
    std::function<void(std::string_view bytes)> write;
    std::function<void()> flush;
  };

  struct Options {
    // How many queued bytes wake the back end, and the unit of the overload
    // limit below.
    size_t bufferSize = 4 * 1024 * 1024;
    // Each logging thread's staging block (at most bufferSize). A full block
    // costs one lock and, every bufferSize bytes, one wake-up of the back end.
    size_t threadBufferSize = 256 * 1024;
    std::chrono::milliseconds flushInterval{3000};
    // maxQueuedBuffers x bufferSize bytes of full blocks waiting or being
    // written: beyond that, newly filled blocks are dropped.
    size_t maxQueuedBuffers = 25;
    // How long flush() (and so LOG_FATAL) waits for the back end.
    std::chrono::milliseconds flushTimeout{5000};
  };

  // A line never spans two blocks, so a block must hold the longest line the
  // front end produces (LogStream caps lines at 4000 bytes).
  static constexpr size_t kMinBufferSize = 4096;

  explicit AsyncLogging(Sink sink);
  AsyncLogging(Sink sink, Options options);
  ~AsyncLogging();
  AsyncLogging(const AsyncLogging&) = delete;
  AsyncLogging& operator=(const AsyncLogging&) = delete;

  static Sink fileSink(std::shared_ptr<LogFile> file);

  void start() LIBNET_EXCLUDES(mutex_);
  // Joins the back end and drains everything appended before it returns
  // (every thread's partly filled block and blocks queued while the writer
  // was mid-write included). Idempotent.
  void stop() LIBNET_EXCLUDES(mutex_);

  // Any thread. A line longer than threadBufferSize is cut to that size.
  void append(std::string_view line) LIBNET_EXCLUDES(mutex_);
  // Any thread: returns once everything appended before the call has been
  // written and the sink flushed, or after options.flushTimeout if the back
  // end is stuck. Returns false on timeout.
  bool flush() LIBNET_EXCLUDES(mutex_);

  // Logger::setOutput/setFlush to this object: LOG_* lines go through it and
  // LOG_FATAL drains it before abort(). Call before other threads log.
  void installAsDefaultSink();

  [[nodiscard]] uint64_t droppedBuffers() const LIBNET_EXCLUDES(mutex_);
  [[nodiscard]] uint64_t droppedLines() const LIBNET_EXCLUDES(mutex_);
  // Blocks alive right now and the most that were ever alive at once.
  [[nodiscard]] size_t buffersAllocated() const LIBNET_EXCLUDES(mutex_);
  [[nodiscard]] size_t peakBuffersAllocated() const LIBNET_EXCLUDES(mutex_);
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  using BufferPtr = std::unique_ptr<LogBuffer>;
  using BufferVector = std::vector<BufferPtr>;

  enum class State { kIdle, kRunning, kStopping, kStopped };

  // One per thread that has logged here. current is replaced only by the
  // owning thread and only under mutex_; the back end reads it under mutex_.
  struct Producer {
    BufferPtr current;
    bool retired = false;  // its thread exited; reused by the next new thread
  };

  // Bytes of a thread's block that the reader writes in place.
  struct Partial {
    LogBuffer* buffer;
    size_t from;
    size_t to;
  };

  // What the reader takes out from under the lock in one go.
  struct Batch {
    BufferVector buffers;
    std::vector<Partial> partials;
    size_t bytes = 0;  // capacity of buffers, counted in writingBytes_
    uint64_t droppedBuffers = 0;
    uint64_t droppedLines = 0;
    uint64_t droppedBytes = 0;
    int64_t firstDropMicros = 0;
  };

  friend struct AsyncLoggingThreadExit;

  // The calling thread's Producer: a thread-local cache hit, or registerThread().
  Producer* producer();
  Producer* registerThread() LIBNET_EXCLUDES(mutex_);
  // The caller's block is full (or it has none): queue it, or drop it on
  // overload, and return the block to write `line` into, or nullptr when
  // `line` itself is dropped.
  LogBuffer* handOff(Producer* p, std::string_view line) LIBNET_EXCLUDES(mutex_);
  // The thread that owns `p` exits: its block goes to the queue.
  void retire(Producer* p) LIBNET_EXCLUDES(mutex_);
  void appendAfterStop() LIBNET_EXCLUDES(mutex_);

  void threadFunc() LIBNET_EXCLUDES(mutex_);
  // The *Locked helpers run under mutex_.
  void recycleLocked(BufferPtr buffer) LIBNET_REQUIRES(mutex_);
  void dropLocked(std::string_view bytes, bool wholeBuffer) LIBNET_REQUIRES(mutex_);
  void takeBatchLocked(Batch* batch, bool withPartials) LIBNET_REQUIRES(mutex_);
  void finishBatchLocked(Batch* batch) LIBNET_REQUIRES(mutex_);
  // Called by the one thread allowed in the sink at that moment.
  void writeBatch(const Batch& batch);
  // With no back end: writes everything pending from this thread.
  void drainLocked(bool flushSink) LIBNET_REQUIRES(mutex_);

  const Sink sink_;
  const Options options_;
  const size_t blockSize_;
  const size_t maxQueuedBytes_;
  const size_t maxFreeBuffers_;
  const uint64_t id_;  // never reused, unlike the address

  // Set (sequentially consistent) once stop() has taken the back end's place;
  // a front end that sees it after publishing a line drains it itself.
  std::atomic<bool> stopped_{false};

  mutable Mutex mutex_;
  std::condition_variable wakeBackEnd_;
  std::condition_variable batchDone_;
  std::vector<std::unique_ptr<Producer>> producers_ LIBNET_GUARDED_BY(mutex_);
  BufferVector full_ LIBNET_GUARDED_BY(mutex_);
  BufferVector free_ LIBNET_GUARDED_BY(mutex_);
  size_t queuedBytes_ LIBNET_GUARDED_BY(mutex_) = 0;  // capacity of full_
  // Capacity of the blocks the back end holds outside the lock.
  size_t writingBytes_ LIBNET_GUARDED_BY(mutex_) = 0;
  size_t allocated_ LIBNET_GUARDED_BY(mutex_) = 0;
  size_t peakAllocated_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t droppedBuffers_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t droppedLines_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t droppedBytes_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t reportedDroppedBuffers_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t reportedDroppedLines_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t reportedDroppedBytes_ LIBNET_GUARDED_BY(mutex_) = 0;
  int64_t firstDropMicros_ LIBNET_GUARDED_BY(mutex_) = 0;  // first drop not yet reported
  // flush(): a request number and the last one the back end completed.
  uint64_t flushRequested_ LIBNET_GUARDED_BY(mutex_) = 0;
  uint64_t flushCompleted_ LIBNET_GUARDED_BY(mutex_) = 0;
  State state_ LIBNET_GUARDED_BY(mutex_) = State::kIdle;
  bool installed_ = false;  // the owner's thread only
  // The owner's thread starts and joins it; stop() joins without the lock,
  // which the back end needs to finish its last batch.
  std::thread thread_;
  std::thread::id backEndId_ LIBNET_GUARDED_BY(mutex_);
};

}  // namespace libnet
