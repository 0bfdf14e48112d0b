#include "base/AsyncLogging.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <utility>

#include "base/LogFile.h"
#include "base/Logging.h"
#include "base/Mutex.h"
#include "base/SignalMask.h"
#include "base/ThreadAnnotations.h"
#include "base/Timestamp.h"

namespace libnet {

namespace {

AsyncLogging::Options sanitized(AsyncLogging::Options options) {
  options.bufferSize = std::max(options.bufferSize, AsyncLogging::kMinBufferSize);
  options.threadBufferSize =
      std::clamp(options.threadBufferSize, AsyncLogging::kMinBufferSize, options.bufferSize);
  options.maxQueuedBuffers = std::max<size_t>(options.maxQueuedBuffers, 1);
  if (options.flushInterval <= std::chrono::milliseconds::zero()) {
    options.flushInterval = std::chrono::milliseconds(1);
  }
  return options;
}

std::atomic<uint64_t> g_nextId{1};

// Live instances by id, so that a thread that exits can hand its block to an
// instance that still exists and skip one that is gone. Never destroyed:
// threads may exit after static destructors ran.
struct Registry {
  Mutex mutex;
  std::unordered_map<uint64_t, AsyncLogging*> live LIBNET_GUARDED_BY(mutex);
};

Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

}  // namespace

// Lock order: the registry's mutex, then an instance's mutex_.
struct AsyncLoggingThreadExit {
  std::vector<std::pair<uint64_t, AsyncLogging::Producer*>> entries;

  ~AsyncLoggingThreadExit() {
    Registry& r = registry();
    MutexLock lock(r.mutex);
    for (const auto& [id, producer] : entries) {
      if (auto it = r.live.find(id); it != r.live.end()) it->second->retire(producer);
    }
  }

  // Forgets instances that were destroyed (a long-lived thread that logged
  // into many short-lived ones).
  void prune() {
    Registry& r = registry();
    MutexLock lock(r.mutex);
    std::erase_if(entries, [&](const auto& entry) LIBNET_REQUIRES(r.mutex) -> bool {
      return !r.live.contains(entry.first);
    });
  }
};

namespace {

// The hot path's lookup: trivially destructible, so it is a plain TLS access.
struct ThreadCache {
  uint64_t id = 0;
  void* producer = nullptr;
};
thread_local ThreadCache t_cache;
// Has a destructor, so it is touched only when a thread registers.
thread_local AsyncLoggingThreadExit t_exit;

}  // namespace

AsyncLogging::AsyncLogging(Sink sink) : AsyncLogging(std::move(sink), Options{}) {}

AsyncLogging::AsyncLogging(Sink sink, Options options)
    : sink_(std::move(sink)),
      options_(sanitized(options)),
      blockSize_(options_.threadBufferSize),
      maxQueuedBytes_(options_.maxQueuedBuffers * options_.bufferSize),
      // Enough spares for the blocks of one wake-up and those filled while
      // it is written, so that steady state neither allocates nor frees.
      maxFreeBuffers_(std::max<size_t>(4, 2 * options_.bufferSize / blockSize_)),
      id_(g_nextId.fetch_add(1, std::memory_order_relaxed)) {
  full_.reserve(maxQueuedBytes_ / blockSize_ + 2);
  Registry& r = registry();
  MutexLock lock(r.mutex);
  r.live.emplace(id_, this);
}

AsyncLogging::~AsyncLogging() {
  {
    // From here on exiting threads leave their blocks alone; stop() drains them.
    Registry& r = registry();
    MutexLock lock(r.mutex);
    r.live.erase(id_);
  }
  stop();
  if (installed_) {
    Logger::setOutput({});
    Logger::setFlush({});
  }
}

AsyncLogging::Sink AsyncLogging::fileSink(std::shared_ptr<LogFile> file) {
  return Sink{[file](std::string_view bytes) { file->append(bytes); }, [file] { file->flush(); }};
}

void AsyncLogging::start() {
  MutexLock lock(mutex_);
  if (state_ != State::kIdle) return;
  state_ = State::kRunning;
  {
    // The writer never takes a process signal (base/SignalMask.h).
    BlockAsyncSignals blocked;
    thread_ = std::thread([this] { threadFunc(); });
  }
  backEndId_ = thread_.get_id();
}

void AsyncLogging::stop() {
  {
    MutexLock lock(mutex_);
    if (state_ == State::kStopped) return;
    if (state_ == State::kRunning) {
      state_ = State::kStopping;
      wakeBackEnd_.notify_one();
    }
  }
  if (thread_.joinable()) thread_.join();
  // The back end's last batch was taken when it saw kStopping; whatever was
  // appended after that (muduo loses exactly this when stop() lands while the
  // writer is mid-write) is still pending here. The back end is gone, so this
  // thread may use the sink.
  MutexLock lock(mutex_);
  state_ = State::kStopped;
  // Before the drain reads the blocks' sizes: a front end that published a
  // line the drain does not see is bound to see this and drain it itself.
  stopped_.store(true, std::memory_order_seq_cst);
  drainLocked(/*flushSink=*/true);
  batchDone_.notify_all();
}

AsyncLogging::Producer* AsyncLogging::producer() {
  const ThreadCache& cache = t_cache;
  if (cache.id == id_) [[likely]] {
    return static_cast<Producer*>(cache.producer);
  }
  return registerThread();
}

AsyncLogging::Producer* AsyncLogging::registerThread() {
  for (const auto& [id, producer] : t_exit.entries) {
    if (id == id_) {
      t_cache = {id_, producer};
      return producer;
    }
  }
  Producer* p = nullptr;
  {
    MutexLock lock(mutex_);
    for (auto& candidate : producers_) {
      if (candidate->retired) {
        p = candidate.get();
        p->retired = false;
        break;
      }
    }
    if (p == nullptr) p = producers_.emplace_back(std::make_unique<Producer>()).get();
  }
  t_exit.prune();
  t_exit.entries.emplace_back(id_, p);
  t_cache = {id_, p};
  return p;
}

void AsyncLogging::append(std::string_view line) {
  if (line.size() > blockSize_) line = line.substr(0, blockSize_);
  Producer* p = producer();
  LogBuffer* buffer = p->current.get();
  if (buffer == nullptr || buffer->available() < line.size()) [[unlikely]] {
    buffer = handOff(p, line);
    if (buffer == nullptr) return;
  }
  buffer->append(line);
  if (stopped_.load(std::memory_order_seq_cst)) [[unlikely]] {
    appendAfterStop();
  }
}

LogBuffer* AsyncLogging::handOff(Producer* p, std::string_view line) {
  MutexLock lock(mutex_);
  // No back end any more: write what is pending, which frees the block.
  if (state_ == State::kStopped) drainLocked(/*flushSink=*/false);
  if (LogBuffer* buffer = p->current.get()) {
    if (!buffer->beingRead() && buffer->consumed() == buffer->committed()) {
      buffer->reset();  // all of it written already (the interval or a flush)
      return buffer;
    }
    if (queuedBytes_ + writingBytes_ + buffer->capacity() > maxQueuedBytes_) {
      if (buffer->beingRead()) {
        // The back end is writing its head right now, so the block cannot be
        // emptied in place: this line goes instead.
        dropLocked(line, /*wholeBuffer=*/false);
        return nullptr;
      }
      // Drop the newest block, so that what is queued stays a contiguous
      // prefix of this thread's lines; the back end reports the count.
      dropLocked(buffer->bytes(buffer->consumed(), buffer->committed()), /*wholeBuffer=*/true);
      buffer->reset();
      return buffer;
    }
    queuedBytes_ += buffer->capacity();
    full_.push_back(std::move(p->current));
    // One wake-up per bufferSize bytes, not per block: a futex wake inside a
    // log call is microseconds of someone's latency.
    if (queuedBytes_ >= options_.bufferSize && state_ == State::kRunning) {
      wakeBackEnd_.notify_one();
    }
  }
  if (!free_.empty()) {
    p->current = std::move(free_.back());
    free_.pop_back();
    return p->current.get();
  }
  // A new block is made (and its pages touched) outside the lock.
  ++allocated_;
  peakAllocated_ = std::max(peakAllocated_, allocated_);
  lock.unlock();
  auto fresh = std::make_unique<LogBuffer>(blockSize_);
  lock.lock();
  p->current = std::move(fresh);
  return p->current.get();
}

void AsyncLogging::retire(Producer* p) {
  MutexLock lock(mutex_);
  if (BufferPtr buffer = std::move(p->current)) {
    if (buffer->beingRead() || buffer->consumed() != buffer->committed()) {
      queuedBytes_ += buffer->capacity();
      full_.push_back(std::move(buffer));
      if (state_ == State::kRunning) wakeBackEnd_.notify_one();
    } else {
      recycleLocked(std::move(buffer));
    }
  }
  p->retired = true;
  if (state_ == State::kStopped) drainLocked(/*flushSink=*/false);
}

void AsyncLogging::appendAfterStop() {
  // Written through, serialised by the lock, like every line after stop().
  MutexLock lock(mutex_);
  drainLocked(/*flushSink=*/false);
}

bool AsyncLogging::flush() {
  MutexLock lock(mutex_);
  if (state_ == State::kIdle || state_ == State::kStopped) {
    drainLocked(/*flushSink=*/true);
    return true;
  }
  // The back end waiting for itself would deadlock (a sink that logs FATAL).
  if (std::this_thread::get_id() == backEndId_) return false;
  const uint64_t request = ++flushRequested_;
  wakeBackEnd_.notify_one();
  return lock.waitFor(batchDone_, options_.flushTimeout, [&]() LIBNET_REQUIRES(mutex_) {
    return flushCompleted_ >= request || state_ == State::kStopped;
  });
}

void AsyncLogging::installAsDefaultSink() {
  Logger::setOutput([this](std::string_view line) { append(line); });
  Logger::setFlush([this] { flush(); });
  installed_ = true;
}

uint64_t AsyncLogging::droppedBuffers() const {
  MutexLock lock(mutex_);
  return droppedBuffers_;
}

uint64_t AsyncLogging::droppedLines() const {
  MutexLock lock(mutex_);
  return droppedLines_;
}

size_t AsyncLogging::buffersAllocated() const {
  MutexLock lock(mutex_);
  return allocated_;
}

size_t AsyncLogging::peakBuffersAllocated() const {
  MutexLock lock(mutex_);
  return peakAllocated_;
}

void AsyncLogging::recycleLocked(BufferPtr buffer) {
  if (free_.size() < maxFreeBuffers_) {
    buffer->reset();
    free_.push_back(std::move(buffer));
  } else {
    --allocated_;
  }
}

void AsyncLogging::dropLocked(std::string_view bytes, bool wholeBuffer) {
  if (droppedBuffers_ == reportedDroppedBuffers_ && droppedLines_ == reportedDroppedLines_) {
    firstDropMicros_ = Timestamp::now().microsSinceEpoch();
  }
  if (wholeBuffer) ++droppedBuffers_;
  droppedLines_ += static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
  droppedBytes_ += bytes.size();
}

void AsyncLogging::takeBatchLocked(Batch* batch, bool withPartials) {
  batch->buffers.swap(full_);  // batch->buffers is empty: full_ keeps a capacity
  batch->bytes = queuedBytes_;
  writingBytes_ = queuedBytes_;
  queuedBytes_ = 0;
  if (withPartials) {
    for (const auto& producer : producers_) {
      LogBuffer* buffer = producer->current.get();
      if (buffer == nullptr) continue;
      const size_t to = buffer->committed();
      if (to == buffer->consumed()) continue;
      batch->partials.push_back({buffer, buffer->consumed(), to});
      buffer->setBeingRead(true);
    }
  }
  batch->droppedBuffers = droppedBuffers_ - reportedDroppedBuffers_;
  batch->droppedLines = droppedLines_ - reportedDroppedLines_;
  batch->droppedBytes = droppedBytes_ - reportedDroppedBytes_;
  batch->firstDropMicros = firstDropMicros_;
  reportedDroppedBuffers_ = droppedBuffers_;
  reportedDroppedLines_ = droppedLines_;
  reportedDroppedBytes_ = droppedBytes_;
}

void AsyncLogging::finishBatchLocked(Batch* batch) {
  // A block read in place may have been queued since (it filled up or its
  // thread exited); the next batch writes it from here on.
  for (const Partial& partial : batch->partials) {
    partial.buffer->setConsumed(partial.to);
    partial.buffer->setBeingRead(false);
  }
  batch->partials.clear();
  for (BufferPtr& buffer : batch->buffers) recycleLocked(std::move(buffer));
  batch->buffers.clear();
  writingBytes_ = 0;
}

void AsyncLogging::writeBatch(const Batch& batch) {
  if (batch.droppedBytes > 0) {
    const std::string since =
        Timestamp(Timestamp::Micros(batch.firstDropMicros)).toFormattedString();
    const std::string now = Timestamp::now().toFormattedString();
    char notice[256];
    const int n =
        std::snprintf(notice, sizeof notice,
                      "%sZ AsyncLogging dropped %llu buffers (%llu lines, %llu bytes) since %sZ: "
                      "the writer fell behind\n",
                      now.c_str(), static_cast<unsigned long long>(batch.droppedBuffers),
                      static_cast<unsigned long long>(batch.droppedLines),
                      static_cast<unsigned long long>(batch.droppedBytes), since.c_str());
    if (n > 0) {
      sink_.write(std::string_view(notice, std::min(static_cast<size_t>(n), sizeof notice - 1)));
    }
  }
  // A thread's queued blocks are older than what its current block holds.
  for (const BufferPtr& buffer : batch.buffers) {
    const size_t from = buffer->consumed();
    const size_t to = buffer->committed();
    if (to > from) sink_.write(buffer->bytes(from, to));
  }
  for (const Partial& partial : batch.partials) {
    sink_.write(partial.buffer->bytes(partial.from, partial.to));
  }
}

void AsyncLogging::drainLocked(bool flushSink) {
  Batch batch;
  takeBatchLocked(&batch, /*withPartials=*/true);
  writeBatch(batch);
  if (flushSink && sink_.flush) sink_.flush();
  finishBatchLocked(&batch);
}

void AsyncLogging::threadFunc() {
  Batch batch;
  {
    // Under the lock: a thread that logs before start() returns may be
    // growing full_ right now.
    MutexLock lock(mutex_);
    batch.buffers.reserve(full_.capacity());
  }
  for (;;) {
    uint64_t flushRequest = 0;
    bool exiting = false;
    {
      MutexLock lock(mutex_);
      const bool woken =
          lock.waitFor(wakeBackEnd_, options_.flushInterval, [this]() LIBNET_REQUIRES(mutex_) {
            return queuedBytes_ >= options_.bufferSize || state_ != State::kRunning ||
                   flushRequested_ != flushCompleted_;
          });
      flushRequest = flushRequested_;
      exiting = state_ != State::kRunning;
      // Woken only because enough is queued: the blocks still filling wait
      // for the interval, a flush or stop.
      const bool withPartials = !woken || exiting || flushRequest != flushCompleted_;
      takeBatchLocked(&batch, withPartials);
    }
    // Outside the lock: front ends keep appending while this thread writes.
    writeBatch(batch);
    if (sink_.flush) sink_.flush();
    {
      MutexLock lock(mutex_);
      finishBatchLocked(&batch);
      flushCompleted_ = flushRequest;
      batchDone_.notify_all();
    }
    if (exiting) return;
  }
}

}  // namespace libnet
