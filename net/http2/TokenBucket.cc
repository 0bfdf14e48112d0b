#include "net/http2/TokenBucket.h"

#include <algorithm>
#include <chrono>

namespace libnet::http2 {

TokenBucket::TokenBucket(uint32_t burst, uint32_t perSecond)
    : tokens_(burst), burst_(burst), perSecond_(perSecond) {}

bool TokenBucket::take(MonoTime now) {
  if (last_ != MonoTime{}) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + seconds * perSecond_);
  }
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace libnet::http2
