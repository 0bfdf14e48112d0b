// AsyncLogging: the asynchronous back end for the LOG_* front end (muduo's
// double buffering). Front ends copy a finished line into the current
// fixed-size LogBuffer under a short lock; a full buffer joins the queue and a
// spare takes its place. One background thread wakes on a full buffer, on
// flush(), on stop() or every flushInterval, takes the whole queue (and the
// partly filled current buffer) under the lock, and writes it to the sink
// outside the lock. Written buffers go back to a small free list, so steady
// state allocates nothing.
//
// Overload: when maxQueuedBuffers buffers are already waiting or being written,
// a newly filled buffer is dropped whole (newest first: what is queued stays in
// order) and the back end writes one notice line with the count. At most
// maxQueuedBuffers + 2 buffers ever exist (see buffersAllocated()).
//
// Ownership and threads: the owner constructs, start()s and stop()s (or
// destroys) it on one thread. append() and flush() may be called from any
// thread, including after stop(), when lines are written synchronously. The
// sink is called only from one thread at a time (the back end, or after
// stop() under the lock), so a LogFile needs no locking of its own.
// installAsDefaultSink() routes LOG_* here; the destructor puts the default
// stderr sink back, so destroy it only after other threads stopped logging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "base/LogBuffer.h"

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
    size_t bufferSize = 4 * 1024 * 1024;
    std::chrono::milliseconds flushInterval{3000};
    // Full buffers waiting or being written beyond which new ones are dropped.
    size_t maxQueuedBuffers = 25;
    // How long flush() (and so LOG_FATAL) waits for the back end.
    std::chrono::milliseconds flushTimeout{5000};
  };

  // A line never spans two buffers, so a buffer must hold the longest line
  // the front end produces (LogStream caps lines at 4000 bytes).
  static constexpr size_t kMinBufferSize = 4096;

  explicit AsyncLogging(Sink sink);
  AsyncLogging(Sink sink, Options options);
  ~AsyncLogging();
  AsyncLogging(const AsyncLogging&) = delete;
  AsyncLogging& operator=(const AsyncLogging&) = delete;

  static Sink fileSink(std::shared_ptr<LogFile> file);

  void start();
  // Drains everything appended before it returns (the partly filled buffer and
  // buffers queued while the writer was mid-write included) and joins the
  // back end. Idempotent.
  void stop();

  // Any thread. A line longer than the buffer is cut to the buffer size.
  void append(std::string_view line);
  // Any thread: returns once everything appended before the call has been
  // written and the sink flushed, or after options.flushTimeout if the back
  // end is stuck. Returns false on timeout.
  bool flush();

  // Logger::setOutput/setFlush to this object: LOG_* lines go through it and
  // LOG_FATAL drains it before abort(). Call before other threads log.
  void installAsDefaultSink();

  [[nodiscard]] uint64_t droppedBuffers() const;
  [[nodiscard]] uint64_t droppedLines() const;
  // Buffers alive right now and the most that were ever alive at once.
  [[nodiscard]] size_t buffersAllocated() const;
  [[nodiscard]] size_t peakBuffersAllocated() const;
  [[nodiscard]] const Options& options() const { return options_; }

 private:
  using BufferPtr = std::unique_ptr<LogBuffer>;
  using BufferVector = std::vector<BufferPtr>;

  enum class State { kIdle, kRunning, kStopping, kStopped };

  // What the back end takes out from under the lock in one go.
  struct Batch {
    BufferVector buffers;
    uint64_t droppedBuffers = 0;
    uint64_t droppedLines = 0;
    uint64_t droppedBytes = 0;
    int64_t firstDropMicros = 0;
  };

  void threadFunc();
  // The *Locked helpers run under mutex_.
  BufferPtr takeFreeBufferLocked();
  void queueCurrentLocked();
  void takeBatchLocked(Batch* batch);
  void recycleLocked(Batch* batch);
  // Called by the one thread allowed in the sink at that moment.
  void writeBatch(const Batch& batch);
  void drainLocked();

  const Sink sink_;
  const Options options_;

  mutable std::mutex mutex_;
  std::condition_variable wakeBackEnd_;
  std::condition_variable batchDone_;
  BufferPtr current_;
  BufferVector full_;
  BufferVector free_;
  size_t writing_ = 0;  // buffers the back end holds outside the lock
  size_t allocated_ = 0;
  size_t peakAllocated_ = 0;
  uint64_t droppedBuffers_ = 0;
  uint64_t droppedLines_ = 0;
  uint64_t droppedBytes_ = 0;
  uint64_t reportedDroppedBuffers_ = 0;
  uint64_t reportedDroppedLines_ = 0;
  uint64_t reportedDroppedBytes_ = 0;
  int64_t firstDropMicros_ = 0;  // first drop not yet reported
  // flush(): a request number and the last one the back end completed.
  uint64_t flushRequested_ = 0;
  uint64_t flushCompleted_ = 0;
  State state_ = State::kIdle;
  bool installed_ = false;
  std::thread thread_;
  std::thread::id backEndId_;
};

}  // namespace libnet
