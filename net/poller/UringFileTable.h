// UringFileTable: one ring's table of registered files. A connection's socket
// sits in a slot while it is open, so its recv/send ops name the slot
// (IOSQE_FIXED_FILE) and skip the kernel's per-op file lookup; the fd stays
// a real fd. The table is sparse and sized once (IoUringOptions::fixedFiles,
// at most RLIMIT_NOFILE); slots are filled and emptied by ops in the
// submission queue, not by system calls of their own. A loop with no table
// (0 slots asked for, or a kernel before 5.19) hands out none.
//
// Owned by the loop's UringContext; loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace libnet {

class UringRing;

class UringFileTable {
 public:
  UringFileTable(UringRing& ring, uint32_t wanted);
  UringFileTable(const UringFileTable&) = delete;
  UringFileTable& operator=(const UringFileTable&) = delete;

  // Puts `fd` in a slot: the slot's index for ops with IOSQE_FIXED_FILE, or
  // -1 (no table, table full): use fd. SQEs are issued in order, so ops
  // prepared after this one find the slot filled.
  [[nodiscard]] int add(int fd);
  // Empties the slot (asynchronously, with the next submit: the socket is
  // released then); the slot is reused once that has completed (removed()).
  void remove(int index);
  // The completion of a remove(): the slot is free.
  void removed(uint32_t index) { freeSlots_.push_back(index); }

  [[nodiscard]] uint32_t slots() const { return slots_; }
  // Slots holding a socket, or one being released.
  [[nodiscard]] size_t used() const { return slotsUsed_ - freeSlots_.size(); }

 private:
  UringRing& ring_;
  uint32_t slots_ = 0;      // size of the table
  uint32_t slotsUsed_ = 0;  // slots ever handed out: [0, used)
  std::vector<uint32_t> freeSlots_;
  // The fd each slot was last given, where its FILES_UPDATE reads it from
  // (sized once: an SQE not yet submitted points into it).
  std::unique_ptr<int[]> slotFds_;
  bool fullLogged_ = false;
};

}  // namespace libnet
