// http2::TokenBucket: the rate limit of the HTTP/2 sessions' defences
// against floods (resets, PINGs, SETTINGS, empty frames): `burst` tokens at
// first, refilled at `perSecond`, one taken per frame counted; none left:
// the flood is refused. Internal to //net/http2; one thread.
#pragma once

#include <cstdint>

#include "base/Duration.h"

namespace libnet::http2 {

class TokenBucket {
 public:
  TokenBucket(uint32_t burst, uint32_t perSecond);
  // One token at `now`; false: none left.
  [[nodiscard]] bool take(MonoTime now);

 private:
  double tokens_;
  double burst_;
  double perSecond_;
  MonoTime last_{};
};

}  // namespace libnet::http2
