#include "net/ConnectionInput.h"

#include <cassert>

namespace libnet {

void ConnectionInput::settle(BufferPool& pool, Buffer* buffer, InputKind kind, bool keepLeftover) {
  delivering_ = nullptr;
  switch (kind) {
    case InputKind::kConnectionInput:
      if (!keepLeftover) buffer->retrieveAll();
      pool.reclaim(&kept_);  // if nothing is left
      return;
    case InputKind::kTransient:
    case InputKind::kRingView:
      // Usually nothing is left; a partial message moves to our own buffer.
      keep(pool, buffer, keepLeftover && buffer->readableBytes() > 0);
      return;
    case InputKind::kApplication:
      break;
  }
  assert(false && "input is never of the application's own");
}

}  // namespace libnet
