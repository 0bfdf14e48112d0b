#include "net/poller/DatagramQueue.h"

#include <cstddef>
#include <cstring>

namespace libnet {

namespace {

// An emptied arena larger than this gives its memory back, so that a burst's
// queue does not stay resident for the life of the socket.
constexpr size_t kKeptArena = 256 * 1024;
// Sent datagrams at the front before the queue moves the rest down.
constexpr size_t kCompactAfter = 64;

}  // namespace

bool DatagramQueue::push(const InetAddress* to, std::string_view data) {
  if (!empty() && bytes_ + data.size() > limit_) return false;
  const size_t offset = arena_.size();
  arena_.resize(offset + data.size());
  if (!data.empty()) std::memcpy(arena_.data() + offset, data.data(), data.size());
  entries_.push_back(
      Entry{to != nullptr ? *to : InetAddress(), to != nullptr, offset, data.size()});
  bytes_ += data.size();
  return true;
}

void DatagramQueue::pop(size_t n) {
  for (size_t i = 0; i < n && head_ < entries_.size(); ++i) bytes_ -= entries_[head_++].length;
  if (head_ == entries_.size()) {
    clear();
  } else if (head_ >= kCompactAfter && head_ * 2 >= entries_.size()) {
    compact();
  }
}

void DatagramQueue::compact() {
  // A queue that never empties (a peer that keeps the socket buffer full)
  // would otherwise grow its arena without end behind the bound.
  const size_t from = entries_[head_].offset;
  arena_.erase(arena_.begin(), arena_.begin() + static_cast<std::ptrdiff_t>(from));
  entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(head_));
  head_ = 0;
  for (Entry& e : entries_) e.offset -= from;
}

void DatagramQueue::clear() {
  entries_.clear();
  head_ = 0;
  bytes_ = 0;
  arena_.clear();
  if (arena_.capacity() > kKeptArena) arena_.shrink_to_fit();
}

}  // namespace libnet
