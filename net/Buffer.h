// Buffer: a growable byte buffer for socket I/O, in the muduo layout:
//
//   | prependable | readable (peek()..) | writable (beginWrite()..) |
//   0        readerIndex          writerIndex                  size
//
// The cheap prepend area lets a codec put a length header in front of a
// message without moving it. readFd() reads into the writable space, and
// when that is under 64 KiB, with readv into it plus a 64 KiB stack buffer,
// so one system call can take a large burst without every connection's
// buffer being large.
//
// A Buffer may also *view* bytes it does not own (borrow()): on an io_uring
// loop the message callback is handed the bytes where the kernel received
// them, in a provided buffer, instead of a copy. Reading works as usual;
// anything that writes (append, prepend, ensureWritableBytes, beginWrite,
// swap, readFd, ...) first copies the readable bytes into storage of the
// Buffer's own and hands the viewed memory back. The view is valid for the
// callback it was handed to: to keep bytes past it, copy them (or leave them
// in the buffer, which the connection then copies).
//
// Not thread-safe: owned by one connection and used on its loop thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "net/BufferStorage.h"

namespace libnet {

class Buffer {
 public:
  static constexpr size_t kCheapPrepend = 8;
  static constexpr size_t kInitialSize = 1024;
  static constexpr size_t kExtraReadSize = 65536;

  // Owner of memory a Buffer can view without owning: told once the Buffer
  // no longer needs it.
  class Lender {
   public:
    virtual void release(uint32_t token) = 0;

   protected:
    ~Lender() = default;
  };

  explicit Buffer(size_t initialSize = kInitialSize)
      : buffer_(kCheapPrepend + initialSize),
        data_(buffer_.data()),
        readerIndex_(kCheapPrepend),
        writerIndex_(kCheapPrepend) {}
  ~Buffer() { releaseBorrowed(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  // Moves the storage, or the view, along.
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;

  [[nodiscard]] size_t readableBytes() const { return writerIndex_ - readerIndex_; }
  [[nodiscard]] size_t writableBytes() const {
    // (A moved-from Buffer has no storage at all: nothing writable.)
    return lender_ || buffer_.size() < writerIndex_ ? 0 : buffer_.size() - writerIndex_;
  }
  [[nodiscard]] size_t prependableBytes() const { return lender_ ? 0 : readerIndex_; }
  // Storage of the Buffer's own (a view's bytes are not counted).
  [[nodiscard]] size_t capacity() const { return buffer_.size(); }

  [[nodiscard]] const char* peek() const { return data_ + readerIndex_; }
  [[nodiscard]] std::string_view view() const { return {peek(), readableBytes()}; }

  // Position of the first "\r\n" in the readable bytes at or after `from`, or
  // nullptr.
  [[nodiscard]] const char* findCRLF(const char* from = nullptr) const;
  [[nodiscard]] const char* findEOL(const char* from = nullptr) const;

  void retrieve(size_t len);
  // Hands the pages of mapped storage (BufferStorage::kMapThreshold and up)
  // that hold only bytes already retrieved back to the system, from `from`
  // bytes into the storage: for a large buffer sent bit by bit to a slow
  // peer, whose sent part would otherwise stay resident until the rest is
  // out. Returns how far it released (pass it as `from` next time). No-op
  // for small storage and views.
  size_t releaseSpentPages(size_t from);
  void retrieveUntil(const char* end) { retrieve(static_cast<size_t>(end - peek())); }
  void retrieveAll() {
    if (lender_) {
      readerIndex_ = writerIndex_;  // the view stays valid until released
      return;
    }
    readerIndex_ = kCheapPrepend;
    writerIndex_ = kCheapPrepend;
  }
  [[nodiscard]] std::string retrieveAsString(size_t len);
  [[nodiscard]] std::string retrieveAllAsString() { return retrieveAsString(readableBytes()); }

  void append(std::string_view data);
  void ensureWritableBytes(size_t len) {
    if (lender_) own();
    if (writableBytes() < len) makeSpace(len);
  }
  [[nodiscard]] char* beginWrite() {
    if (lender_) own();
    return data_ + writerIndex_;
  }
  void hasWritten(size_t len) { writerIndex_ += len; }
  void unwrite(size_t len) {
    if (lender_) own();
    writerIndex_ -= len;
  }

  // Puts `data` in front of the readable bytes; it must fit in the
  // prependable area (kCheapPrepend bytes always do).
  void prepend(std::string_view data);

  // Integers in network byte order.
  void appendInt32(int32_t x);
  void prependInt32(int32_t x);
  [[nodiscard]] int32_t peekInt32() const;
  int32_t readInt32();

  // Releases memory beyond the readable bytes plus `reserve`.
  void shrink(size_t reserve);
  // Exchanges contents; a view is turned into owned bytes first, so that it
  // cannot leave the callback it was handed to in another Buffer.
  void swap(Buffer& other) noexcept;

  struct ReadResult {
    ssize_t bytes;  // > 0 read, 0 end of file, < 0 error (see error)
    int error;      // errno when bytes < 0
    bool filled;    // every byte offered was used: more may be waiting
  };
  // One read() or readv() from `fd` into the writable space (and, with less
  // than 64 KiB of it, a stack overflow area).
  [[nodiscard]] ReadResult readFd(int fd);

  // ---- views (the library's own use) ----

  // Makes this empty Buffer view `bytes`, owned by `lender`, which is told
  // release(token) once the Buffer no longer needs them.
  void borrow(std::string_view bytes, Lender* lender, uint32_t token);
  [[nodiscard]] bool borrowed() const { return lender_ != nullptr; }
  // Hands a view back now (its readable bytes are dropped); no-op otherwise.
  void releaseBorrowed();
  // swap() that moves a view along instead of copying it: for handing bytes
  // inside the library (input straight into a connection's send queue).
  void exchange(Buffer& other) noexcept;

 private:
  void makeSpace(size_t len);
  // A view becomes owned storage holding the same readable bytes.
  void own();
  [[nodiscard]] const char* end() const { return data_ + writerIndex_; }

  BufferStorage buffer_;
  char* data_;  // buffer_.data(), or the viewed bytes
  size_t readerIndex_;
  size_t writerIndex_;
  Lender* lender_ = nullptr;  // set while viewing
  uint32_t token_ = 0;
};

}  // namespace libnet
