// appendWithin(): appends to a message string, growing its storage
// geometrically (amortised O(1) per byte for a message that comes in many
// pieces) but never past a cap when the cap is enough: a message that may
// reach the limit must not leave its string holding up to twice the limit,
// as std::string's own doubling would. Internal to //net/grpc:wire.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace libnet::grpc {

// Appends `more` to *out, whose storage then holds at most
// max(`cap`, out->size()) bytes. The old storage is freed.
inline void appendWithin(std::string* out, std::string_view more, size_t cap) {
  const size_t needed = out->size() + more.size();
  if (needed > out->capacity()) {
    // A fresh string: reserve() on *out itself would round a request under
    // twice its capacity up to twice its capacity, past the cap.
    std::string grown;
    grown.reserve(std::max(needed, std::min(2 * out->capacity(), cap)));
    grown.append(*out);
    out->swap(grown);
  }
  out->append(more);
}

}  // namespace libnet::grpc
