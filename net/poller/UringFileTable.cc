#include "net/poller/UringFileTable.h"

#include <liburing.h>
#include <sys/resource.h>

#include <algorithm>

#include "base/Logging.h"
#include "net/poller/UringRing.h"
#include "net/poller/UringUserData.h"

namespace libnet {

UringFileTable::UringFileTable(UringRing& ring, uint32_t wanted) : ring_(ring) {
  if (wanted == 0) return;
  rlimit files{};
  const rlim_t limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 ? files.rlim_cur : 0;
  const auto slots = static_cast<uint32_t>(std::min<rlim_t>(wanted, limit));
  if (slots == 0) return;
  if (const int rc = io_uring_register_files_sparse(ring_.get(), slots); rc != 0) {
    LOG_DEBUG << "io_uring: no registered-file table (" << strerrorTl(-rc)
              << "); connections use plain fds";
    return;
  }
  slots_ = slots;
  slotFds_ = std::make_unique<int[]>(slots);
}

int UringFileTable::add(int fd) {
  uint32_t slot;
  if (!freeSlots_.empty()) {
    slot = freeSlots_.back();
    freeSlots_.pop_back();
  } else if (slotsUsed_ < slots_) {
    slot = slotsUsed_++;
  } else {
    if (slots_ > 0 && !fullLogged_) {
      fullLogged_ = true;
      LOG_INFO << "io_uring: registered-file table full (" << slots_
               << " slots); this loop's further connections use plain fds"
                  " (LIBNET_URING_FIXED_FILES sets the size)";
    }
    return -1;
  }
  slotFds_[slot] = fd;
  io_uring_sqe* sqe = ring_.getSqe();
  io_uring_prep_files_update(sqe, &slotFds_[slot], 1, static_cast<int>(slot));
  io_uring_sqe_set_data64(sqe, completionUserData(UringOp::kFileRegistered, slot));
  return static_cast<int>(slot);
}

void UringFileTable::remove(int index) {
  io_uring_sqe* sqe = ring_.getSqe();
  io_uring_prep_close_direct(sqe, static_cast<unsigned>(index));
  io_uring_sqe_set_data64(sqe,
                          completionUserData(UringOp::kFileClosed, static_cast<uint64_t>(index)));
}

}  // namespace libnet
