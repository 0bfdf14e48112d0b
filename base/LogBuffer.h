// LogBuffer: a fixed-capacity byte buffer that AsyncLogging fills with whole log
// lines and hands to its back end. The capacity is fixed at construction and
// never grows: a full buffer is swapped for an empty one instead, so memory is
// bounded by the number of buffers, not by how far the writer lags.
// Not thread-safe: AsyncLogging moves a buffer between threads under its lock
// and only one thread touches it at a time.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

namespace libnet {

class LogBuffer {
 public:
  explicit LogBuffer(size_t capacity)
      : data_(std::make_unique_for_overwrite<char[]>(capacity)), capacity_(capacity) {}
  LogBuffer(const LogBuffer&) = delete;
  LogBuffer& operator=(const LogBuffer&) = delete;

  [[nodiscard]] size_t capacity() const { return capacity_; }
  [[nodiscard]] size_t size() const { return size_; }
  [[nodiscard]] size_t available() const { return capacity_ - size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::string_view view() const { return {data_.get(), size_}; }

  // The caller checks available() first; a line is never split across buffers.
  void append(std::string_view s) {
    std::memcpy(data_.get() + size_, s.data(), s.size());
    size_ += s.size();
  }
  void reset() { size_ = 0; }

 private:
  std::unique_ptr<char[]> data_;
  size_t capacity_;
  size_t size_ = 0;
};

}  // namespace libnet
