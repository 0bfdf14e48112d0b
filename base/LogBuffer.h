// LogBuffer: a fixed-capacity block of whole log lines, filled by one logging
// thread and read by the AsyncLogging back end while it is still being filled.
//
// The writer (the one thread whose staging block it is) appends lines and
// publishes each with a release store of the size; the reader (whoever holds
// the sink, see AsyncLogging) may load committed() at any time and write out
// the bytes below it, which the writer never touches again until reset().
// consumed() is how far the reader has written; AsyncLogging changes it and
// reset() only under its lock or while it alone holds the block.
//
// The capacity never grows: a full block is handed to the back end and a spare
// takes its place, so memory is bounded by the number of blocks. The
// constructor touches every page, so that the page faults of a new block are
// paid once, where it is made, and not one per 4 KiB inside later log calls.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace libnet {

class LogBuffer {
 public:
  explicit LogBuffer(size_t capacity)
      : data_(std::make_unique_for_overwrite<char[]>(capacity)), capacity_(capacity) {
    std::memset(data_.get(), 0, capacity_);
  }
  LogBuffer(const LogBuffer&) = delete;
  LogBuffer& operator=(const LogBuffer&) = delete;

  [[nodiscard]] size_t capacity() const { return capacity_; }

  // Writer side. The caller checks available() first; a line is never split
  // across blocks.
  [[nodiscard]] size_t available() const {
    return capacity_ - size_.load(std::memory_order_relaxed);
  }
  // The size is published with a sequentially consistent store so that a
  // writer that then checks AsyncLogging's stopped flag and a stop() that set
  // it and then reads committed() cannot both miss each other.
  void append(std::string_view s) {
    const size_t size = size_.load(std::memory_order_relaxed);
    std::memcpy(data_.get() + size, s.data(), s.size());
    size_.store(size + s.size(), std::memory_order_seq_cst);
  }

  // Reader side.
  [[nodiscard]] size_t committed() const { return size_.load(std::memory_order_seq_cst); }
  [[nodiscard]] std::string_view bytes(size_t from, size_t to) const {
    return {data_.get() + from, to - from};
  }
  [[nodiscard]] size_t consumed() const { return consumed_; }
  void setConsumed(size_t n) { consumed_ = n; }
  // Set while the reader writes from the block outside AsyncLogging's lock:
  // the writer may then neither reset() it nor reuse it in place.
  [[nodiscard]] bool beingRead() const { return beingRead_; }
  void setBeingRead(bool reading) { beingRead_ = reading; }

  // Only when no reader is inside the block (see AsyncLogging).
  void reset() {
    consumed_ = 0;
    size_.store(0, std::memory_order_relaxed);
  }

 private:
  std::unique_ptr<char[]> data_;
  const size_t capacity_;
  std::atomic<size_t> size_{0};
  size_t consumed_ = 0;
  bool beingRead_ = false;
};

}  // namespace libnet
