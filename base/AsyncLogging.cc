#include "base/AsyncLogging.h"

#include <algorithm>
#include <cstdio>

#include "base/LogFile.h"
#include "base/Logging.h"
#include "base/Timestamp.h"

namespace libnet {

namespace {

// Spare buffers kept after a batch is written. Enough for the usual one or two
// buffers per batch; a burst beyond that allocates, and the extra buffers are
// freed again afterwards rather than pinning maxQueuedBuffers x bufferSize.
constexpr size_t kMaxFreeBuffers = 4;

AsyncLogging::Options sanitized(AsyncLogging::Options options) {
  options.bufferSize = std::max(options.bufferSize, AsyncLogging::kMinBufferSize);
  options.maxQueuedBuffers = std::max<size_t>(options.maxQueuedBuffers, 1);
  if (options.flushInterval <= std::chrono::milliseconds::zero()) {
    options.flushInterval = std::chrono::milliseconds(1);
  }
  return options;
}

}  // namespace

AsyncLogging::AsyncLogging(Sink sink) : AsyncLogging(std::move(sink), Options{}) {}

AsyncLogging::AsyncLogging(Sink sink, Options options)
    : sink_(std::move(sink)), options_(sanitized(options)) {
  std::lock_guard lock(mutex_);
  current_ = takeFreeBufferLocked();
  full_.reserve(options_.maxQueuedBuffers + 2);
}

AsyncLogging::~AsyncLogging() {
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
  std::lock_guard lock(mutex_);
  if (state_ != State::kIdle) return;
  state_ = State::kRunning;
  thread_ = std::thread([this] { threadFunc(); });
  backEndId_ = thread_.get_id();
}

void AsyncLogging::stop() {
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::kStopped) return;
    if (state_ == State::kRunning) {
      state_ = State::kStopping;
      wakeBackEnd_.notify_one();
    }
  }
  if (thread_.joinable()) thread_.join();
  // The back end's last batch was taken when it saw kStopping; whatever was
  // appended after that (muduo loses exactly this when stop() lands while the
  // writer is mid-write) is still queued here. The back end is gone, so this
  // thread may use the sink.
  std::lock_guard lock(mutex_);
  drainLocked();
  state_ = State::kStopped;
  batchDone_.notify_all();
}

void AsyncLogging::append(std::string_view line) {
  if (line.size() > options_.bufferSize) line = line.substr(0, options_.bufferSize);
  std::lock_guard lock(mutex_);
  if (state_ == State::kStopped) {
    // No back end any more: write through, serialised by the lock.
    sink_.write(line);
    return;
  }
  if (current_->available() < line.size()) queueCurrentLocked();
  current_->append(line);
}

bool AsyncLogging::flush() {
  std::unique_lock lock(mutex_);
  if (state_ == State::kIdle || state_ == State::kStopped) {
    drainLocked();
    return true;
  }
  // The back end waiting for itself would deadlock (a sink that logs FATAL).
  if (std::this_thread::get_id() == backEndId_) return false;
  const uint64_t request = ++flushRequested_;
  wakeBackEnd_.notify_one();
  return batchDone_.wait_for(lock, options_.flushTimeout, [&] {
    return flushCompleted_ >= request || state_ == State::kStopped;
  });
}

void AsyncLogging::installAsDefaultSink() {
  Logger::setOutput([this](std::string_view line) { append(line); });
  Logger::setFlush([this] { flush(); });
  installed_ = true;
}

uint64_t AsyncLogging::droppedBuffers() const {
  std::lock_guard lock(mutex_);
  return droppedBuffers_;
}

uint64_t AsyncLogging::droppedLines() const {
  std::lock_guard lock(mutex_);
  return droppedLines_;
}

size_t AsyncLogging::buffersAllocated() const {
  std::lock_guard lock(mutex_);
  return allocated_;
}

size_t AsyncLogging::peakBuffersAllocated() const {
  std::lock_guard lock(mutex_);
  return peakAllocated_;
}

AsyncLogging::BufferPtr AsyncLogging::takeFreeBufferLocked() {
  if (!free_.empty()) {
    BufferPtr buffer = std::move(free_.back());
    free_.pop_back();
    return buffer;
  }
  ++allocated_;
  peakAllocated_ = std::max(peakAllocated_, allocated_);
  return std::make_unique<LogBuffer>(options_.bufferSize);
}

void AsyncLogging::queueCurrentLocked() {
  // Queued plus in the writer's hands: with the current buffer and one
  // replacement that bounds the buffers alive at maxQueuedBuffers + 2.
  if (full_.size() + writing_ >= options_.maxQueuedBuffers) {
    // Drop the newest buffer, so that what is queued stays a contiguous
    // prefix of the log; the back end reports the count.
    if (droppedBuffers_ == reportedDroppedBuffers_) {
      firstDropMicros_ = Timestamp::now().microsSinceEpoch();
    }
    const std::string_view bytes = current_->view();
    ++droppedBuffers_;
    droppedLines_ += static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
    droppedBytes_ += bytes.size();
    current_->reset();
    return;
  }
  full_.push_back(std::move(current_));
  current_ = takeFreeBufferLocked();
  wakeBackEnd_.notify_one();
}

void AsyncLogging::takeBatchLocked(Batch* batch) {
  batch->buffers.swap(full_);  // batch->buffers is empty: full_ keeps its capacity
  if (!current_->empty()) {
    batch->buffers.push_back(std::move(current_));
    current_ = takeFreeBufferLocked();
  }
  writing_ = batch->buffers.size();
  batch->droppedBuffers = droppedBuffers_ - reportedDroppedBuffers_;
  batch->droppedLines = droppedLines_ - reportedDroppedLines_;
  batch->droppedBytes = droppedBytes_ - reportedDroppedBytes_;
  batch->firstDropMicros = firstDropMicros_;
  reportedDroppedBuffers_ = droppedBuffers_;
  reportedDroppedLines_ = droppedLines_;
  reportedDroppedBytes_ = droppedBytes_;
}

void AsyncLogging::recycleLocked(Batch* batch) {
  for (BufferPtr& buffer : batch->buffers) {
    if (free_.size() < kMaxFreeBuffers) {
      buffer->reset();
      free_.push_back(std::move(buffer));
    } else {
      --allocated_;
    }
  }
  batch->buffers.clear();
  writing_ = 0;
}

void AsyncLogging::writeBatch(const Batch& batch) {
  if (batch.droppedBuffers > 0) {
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
  for (const BufferPtr& buffer : batch.buffers) sink_.write(buffer->view());
}

void AsyncLogging::drainLocked() {
  Batch batch;
  takeBatchLocked(&batch);
  writeBatch(batch);
  if (sink_.flush) sink_.flush();
  recycleLocked(&batch);
}

void AsyncLogging::threadFunc() {
  Batch batch;
  batch.buffers.reserve(options_.maxQueuedBuffers + 2);
  for (;;) {
    uint64_t flushRequest = 0;
    bool exiting = false;
    {
      std::unique_lock lock(mutex_);
      wakeBackEnd_.wait_for(lock, options_.flushInterval, [this] {
        return !full_.empty() || state_ != State::kRunning || flushRequested_ != flushCompleted_;
      });
      takeBatchLocked(&batch);
      flushRequest = flushRequested_;
      exiting = state_ != State::kRunning;
    }
    // Outside the lock: front ends keep appending while this thread writes.
    writeBatch(batch);
    if (sink_.flush) sink_.flush();
    {
      std::lock_guard lock(mutex_);
      recycleLocked(&batch);
      flushCompleted_ = flushRequest;
      batchDone_.notify_all();
    }
    if (exiting) return;
  }
}

}  // namespace libnet
