// growWithin(): room for more bytes in a message Buffer of the codec, grown
// as Buffer grows itself (geometrically, so that a message arriving in many
// pieces costs amortised O(1) per byte) but never past a cap when the cap is
// enough: a message that may reach the limit must not leave its buffer
// holding up to twice the limit, as plain doubling would. Internal to the
// codec (Receiver, Inflater).
#pragma once

#include <algorithm>
#include <cstddef>

#include "net/Buffer.h"

namespace libnet::ws {

// Makes `more` bytes writable in `buffer` (its readable bytes kept), with
// room for at most max(`cap`, readable + more) bytes in all. The old
// storage is freed.
inline void growWithin(Buffer* buffer, size_t more, size_t cap) {
  if (buffer->writableBytes() >= more) return;
  const size_t used = buffer->readableBytes();
  const size_t needed = used + more;
  const size_t size = std::max(needed, std::min(2 * buffer->capacity(), cap));
  Buffer grown(size);
  grown.append(buffer->view());
  buffer->swap(grown);
}

}  // namespace libnet::ws
