// DatagramQueue: datagrams waiting to be sent on one datagram socket, each
// with its destination (or none: the connected peer), their bytes copied
// into one growing arena so that queueing costs no allocation per datagram
// once the arena has grown. Bounded by the owner (DatagramIo's
// maxQueuedBytes): push() refuses what would take it past `limit`.
//
// Owned by one datagram strategy (EpollDatagramIo, UringDatagramIo), which
// alone writes and reads it; loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "net/InetAddress.h"

namespace libnet {

class DatagramQueue {
 public:
  struct Entry {
    InetAddress to;
    bool hasTo;
    size_t offset;
    size_t length;
  };

  explicit DatagramQueue(size_t limit) : limit_(limit) {}

  // Copies `data` in; false (nothing queued) if that would take the queued
  // bytes past the limit. An empty queue takes any one datagram, so that a
  // limit below the largest datagram cannot stop the socket for good.
  [[nodiscard]] bool push(const InetAddress* to, std::string_view data);
  [[nodiscard]] bool empty() const { return head_ == entries_.size(); }
  [[nodiscard]] size_t size() const { return entries_.size() - head_; }
  [[nodiscard]] size_t bytes() const { return bytes_; }
  // The i-th datagram still queued, and its bytes (stable until pop or push).
  [[nodiscard]] const Entry& at(size_t i) const { return entries_[head_ + i]; }
  [[nodiscard]] std::string_view data(const Entry& e) const {
    return {arena_.data() + e.offset, e.length};
  }
  [[nodiscard]] char* mutableData(const Entry& e) { return arena_.data() + e.offset; }
  // Drops the first `n` datagrams (sent, or failed).
  void pop(size_t n);
  void clear();

 private:
  void compact();

  size_t limit_;
  size_t bytes_ = 0;
  size_t head_ = 0;
  std::vector<Entry> entries_;
  std::vector<char> arena_;
};

}  // namespace libnet
