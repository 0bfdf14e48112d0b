#include "net/websocket/Utf8.h"

#include <cstring>

namespace libnet::ws {

namespace {

// Bjoern Hoehrmann's UTF-8 DFA (http://bjoern.hoehrmann.de/utf-8/decoder/dfa/):
// the first 256 entries map a byte to its class, the rest map state + class
// to the next state. The classes separate exactly the lead and continuation
// ranges that rule out overlongs (E0 A0.., F0 90..), surrogates (ED 80..9F)
// and code points past U+10FFFF (F4 80..8F, F5..FF).
constexpr uint8_t kTable[] = {
    // clang-format off
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,
    7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,
    8,8,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,
    10,3,3,3,3,3,3,3,3,3,3,3,3,4,3,3,11,6,6,6,5,8,8,8,8,8,8,8,8,8,8,8,
    0,12,24,36,60,96,84,12,12,12,48,72,12,12,12,12,12,12,12,12,12,12,12,12,
    12,0,12,12,12,12,12,0,12,0,12,12,12,24,12,12,12,12,12,24,12,24,12,12,
    12,12,12,12,12,12,12,24,12,12,12,12,12,24,12,12,12,12,12,12,12,24,12,12,
    12,12,12,12,12,12,12,36,12,36,12,12,12,36,12,12,12,12,12,36,12,36,12,12,
    12,36,12,12,12,12,12,12,12,12,12,12,
    // clang-format on
};

constexpr uint64_t kHighBits = 0x8080808080808080ULL;

}  // namespace

bool Utf8Validator::feed(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const auto* end = p + bytes.size();
  uint8_t state = state_;
  while (p < end) {
    if (state == kAccept) {
      // Between code points: skip ASCII eight bytes at a time.
      while (end - p >= 8) {
        uint64_t word;
        std::memcpy(&word, p, sizeof word);
        if (word & kHighBits) break;
        p += 8;
      }
      if (p == end) break;
    }
    state = kTable[256 + state + kTable[*p++]];
    if (state == kReject) break;
  }
  state_ = state;
  return state != kReject;
}

bool Utf8Validator::isValid(std::string_view bytes) {
  Utf8Validator validator;
  return validator.feed(bytes) && validator.complete();
}

}  // namespace libnet::ws
