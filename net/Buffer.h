// Buffer: a growable byte buffer for socket I/O, in the muduo layout:
//
//   | prependable | readable (peek()..) | writable (beginWrite()..) |
//   0        readerIndex          writerIndex                  size
//
// The cheap prepend area lets a codec put a length header in front of a
// message without moving it. readFd() reads with readv into the writable
// space plus a 64 KiB stack buffer, so one system call can take a large burst
// without every connection's buffer being large.
// Not thread-safe: owned by one connection and used on its loop thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace libnet {

class Buffer {
 public:
  static constexpr size_t kCheapPrepend = 8;
  static constexpr size_t kInitialSize = 1024;
  static constexpr size_t kExtraReadSize = 65536;

  explicit Buffer(size_t initialSize = kInitialSize)
      : buffer_(kCheapPrepend + initialSize),
        readerIndex_(kCheapPrepend),
        writerIndex_(kCheapPrepend) {}

  [[nodiscard]] size_t readableBytes() const { return writerIndex_ - readerIndex_; }
  [[nodiscard]] size_t writableBytes() const { return buffer_.size() - writerIndex_; }
  [[nodiscard]] size_t prependableBytes() const { return readerIndex_; }
  [[nodiscard]] size_t capacity() const { return buffer_.size(); }

  [[nodiscard]] const char* peek() const { return begin() + readerIndex_; }
  [[nodiscard]] std::string_view view() const { return {peek(), readableBytes()}; }

  // Position of the first "\r\n" in the readable bytes at or after `from`, or
  // nullptr.
  [[nodiscard]] const char* findCRLF(const char* from = nullptr) const;
  [[nodiscard]] const char* findEOL(const char* from = nullptr) const;

  void retrieve(size_t len);
  void retrieveUntil(const char* end) { retrieve(static_cast<size_t>(end - peek())); }
  void retrieveAll() {
    readerIndex_ = kCheapPrepend;
    writerIndex_ = kCheapPrepend;
  }
  [[nodiscard]] std::string retrieveAsString(size_t len);
  [[nodiscard]] std::string retrieveAllAsString() { return retrieveAsString(readableBytes()); }

  void append(std::string_view data);
  void ensureWritableBytes(size_t len) {
    if (writableBytes() < len) makeSpace(len);
  }
  [[nodiscard]] char* beginWrite() { return begin() + writerIndex_; }
  [[nodiscard]] const char* beginWrite() const { return begin() + writerIndex_; }
  void hasWritten(size_t len) { writerIndex_ += len; }
  void unwrite(size_t len) { writerIndex_ -= len; }

  // Puts `data` in front of the readable bytes; it must fit in the
  // prependable area.
  void prepend(std::string_view data);

  // Integers in network byte order.
  void appendInt32(int32_t x);
  void prependInt32(int32_t x);
  [[nodiscard]] int32_t peekInt32() const;
  int32_t readInt32();

  // Releases memory beyond the readable bytes plus `reserve`.
  void shrink(size_t reserve);
  void swap(Buffer& other) noexcept;

  struct ReadResult {
    ssize_t bytes;  // > 0 read, 0 end of file, < 0 error (see error)
    int error;      // errno when bytes < 0
    bool filled;    // every byte offered was used: more may be waiting
  };
  // One readv() from `fd` into the writable space and the stack overflow.
  [[nodiscard]] ReadResult readFd(int fd);

 private:
  [[nodiscard]] char* begin() { return buffer_.data(); }
  [[nodiscard]] const char* begin() const { return buffer_.data(); }
  void makeSpace(size_t len);

  std::vector<char> buffer_;
  size_t readerIndex_;
  size_t writerIndex_;
};

}  // namespace libnet
