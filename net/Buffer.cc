#include "net/Buffer.h"

#include <arpa/inet.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>

namespace libnet {

namespace {
constexpr char kCRLF[] = "\r\n";
}

Buffer::Buffer(Buffer&& other) noexcept
    : buffer_(std::move(other.buffer_)),
      // Owned storage may have moved (an inline block): take its address anew.
      data_(other.lender_ ? other.data_ : buffer_.data()),
      readerIndex_(other.readerIndex_),
      writerIndex_(other.writerIndex_),
      lender_(other.lender_),
      token_(other.token_) {
  other.lender_ = nullptr;
  other.data_ = other.buffer_.data();
  other.readerIndex_ = kCheapPrepend;
  other.writerIndex_ = kCheapPrepend;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    releaseBorrowed();
    Buffer moved(std::move(other));
    exchange(moved);
  }
  return *this;
}

const char* Buffer::findCRLF(const char* from) const {
  const char* start = from ? from : peek();
  assert(start >= peek() && start <= end());
  const char* crlf = std::search(start, end(), kCRLF, kCRLF + 2);
  return crlf == end() ? nullptr : crlf;
}

const char* Buffer::findEOL(const char* from) const {
  const char* start = from ? from : peek();
  assert(start >= peek() && start <= end());
  const void* eol = std::memchr(start, '\n', static_cast<size_t>(end() - start));
  return static_cast<const char*>(eol);
}

void Buffer::retrieve(size_t len) {
  assert(len <= readableBytes());
  if (len < readableBytes()) {
    readerIndex_ += len;
  } else {
    retrieveAll();
  }
}

std::string Buffer::retrieveAsString(size_t len) {
  assert(len <= readableBytes());
  std::string result(peek(), len);
  retrieve(len);
  return result;
}

void Buffer::append(std::string_view data) {
  ensureWritableBytes(data.size());
  if (!data.empty()) std::memcpy(data_ + writerIndex_, data.data(), data.size());
  hasWritten(data.size());
}

void Buffer::prepend(std::string_view data) {
  if (lender_) own();
  assert(data.size() <= prependableBytes());
  readerIndex_ -= data.size();
  if (!data.empty()) std::memcpy(data_ + readerIndex_, data.data(), data.size());
}

void Buffer::appendInt32(int32_t x) {
  const uint32_t be = htonl(static_cast<uint32_t>(x));
  append(std::string_view(reinterpret_cast<const char*>(&be), sizeof be));
}

void Buffer::prependInt32(int32_t x) {
  const uint32_t be = htonl(static_cast<uint32_t>(x));
  prepend(std::string_view(reinterpret_cast<const char*>(&be), sizeof be));
}

int32_t Buffer::peekInt32() const {
  assert(readableBytes() >= sizeof(int32_t));
  uint32_t be = 0;
  std::memcpy(&be, peek(), sizeof be);
  return static_cast<int32_t>(ntohl(be));
}

int32_t Buffer::readInt32() {
  const int32_t x = peekInt32();
  retrieve(sizeof x);
  return x;
}

void Buffer::shrink(size_t reserve) {
  Buffer other(readableBytes() + reserve);
  other.append(view());
  swap(other);
}

void Buffer::swap(Buffer& other) noexcept {
  if (lender_) own();
  if (other.lender_) other.own();
  exchange(other);
}

void Buffer::exchange(Buffer& other) noexcept {
  buffer_.swap(other.buffer_);
  std::swap(data_, other.data_);
  std::swap(readerIndex_, other.readerIndex_);
  std::swap(writerIndex_, other.writerIndex_);
  std::swap(lender_, other.lender_);
  std::swap(token_, other.token_);
  // An inline block (BufferStorage) changes address when swapped.
  if (!lender_) data_ = buffer_.data();
  if (!other.lender_) other.data_ = other.buffer_.data();
}

void Buffer::borrow(std::string_view bytes, Lender* lender, uint32_t token) {
  assert(readableBytes() == 0);
  releaseBorrowed();
  // Viewed bytes are never written through: every writer calls own() first.
  data_ = const_cast<char*>(bytes.data());
  readerIndex_ = 0;
  writerIndex_ = bytes.size();
  lender_ = lender;
  token_ = token;
}

void Buffer::releaseBorrowed() {
  if (!lender_) return;
  Lender* lender = lender_;
  lender_ = nullptr;
  data_ = buffer_.data();
  readerIndex_ = kCheapPrepend;
  writerIndex_ = kCheapPrepend;
  lender->release(token_);
}

void Buffer::own() {
  const std::string_view bytes = view();
  Lender* lender = lender_;
  lender_ = nullptr;
  data_ = buffer_.data();
  readerIndex_ = kCheapPrepend;
  writerIndex_ = kCheapPrepend;
  append(bytes);  // the view is still intact: released only now
  lender->release(token_);
}

size_t Buffer::releaseSpentPages(size_t from) {
  if (lender_ || !buffer_.mapped()) return from;
  // The cheap-prepend area in front of the readable bytes stays.
  const size_t spent = readerIndex_ > kCheapPrepend ? readerIndex_ - kCheapPrepend : 0;
  if (spent <= from) return from;
  buffer_.releasePages(from, spent);
  return spent;
}

void Buffer::makeSpace(size_t len) {
  if (writableBytes() + prependableBytes() < len + kCheapPrepend) {
    // Grow geometrically so a stream of appends costs amortised O(1).
    const size_t needed = writerIndex_ + len;
    buffer_.grow(std::max(needed, buffer_.size() * 2), writerIndex_);
    data_ = buffer_.data();
  } else {
    // Enough room in total: slide the readable bytes to the front.
    const size_t readable = readableBytes();
    std::memmove(data_ + kCheapPrepend, peek(), readable);
    readerIndex_ = kCheapPrepend;
    writerIndex_ = readerIndex_ + readable;
  }
}

Buffer::ReadResult Buffer::readFd(int fd) {
  if (lender_) own();
  const size_t room = writableBytes();
  if (room >= kExtraReadSize) {
    // Plenty of room (e.g. the loop's scratch buffer): a plain read(). readv
    // copies and verifies its iovec array in the kernel on every call, which
    // showed up in the profile of an echo server with one connection
    // (docs/benchmarks.md, "Figures formerly quoted in code comments").
    const ssize_t n = ::read(fd, data_ + writerIndex_, room);
    if (n < 0) return {n, errno, false};
    writerIndex_ += static_cast<size_t>(n);
    return {n, 0, static_cast<size_t>(n) == room};
  }
  // Less room than a burst: the rest goes to a stack buffer, copied in
  // after, so one call still takes up to 64 KiB more.
  char extra[kExtraReadSize];
  struct iovec vec[2];
  vec[0].iov_base = data_ + writerIndex_;
  vec[0].iov_len = room;
  vec[1].iov_base = extra;
  vec[1].iov_len = sizeof extra;
  const ssize_t n = ::readv(fd, vec, 2);
  if (n < 0) return {n, errno, false};
  const auto got = static_cast<size_t>(n);
  if (got <= room) {
    writerIndex_ += got;
  } else {
    writerIndex_ = buffer_.size();
    append(std::string_view(extra, got - room));
  }
  return {n, 0, got == room + sizeof extra};
}

}  // namespace libnet
