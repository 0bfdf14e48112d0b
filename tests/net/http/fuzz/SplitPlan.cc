#include "tests/net/http/fuzz/SplitPlan.h"

#include <algorithm>

namespace libnet::http::fuzz {

namespace {

// splitmix64: every seed, zero included, gives a well-mixed sequence, which
// a plain LCG seeded with a hash does not.
uint64_t nextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// In [lo, hi]; the modulo bias is irrelevant here.
size_t between(uint64_t& state, size_t lo, size_t hi) {
  return lo + static_cast<size_t>(nextRandom(state) % (hi - lo + 1));
}

}  // namespace

uint64_t SplitPlan::hash(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::vector<size_t> SplitPlan::piecesFor(std::string_view input, uint64_t salt) {
  uint64_t state = hash(input) ^ salt;
  std::vector<size_t> pieces;
  // One plan in sixteen is byte by byte throughout: every boundary is tried.
  const bool byteByByte = nextRandom(state) % 16 == 0;
  for (size_t left = input.size(); left > 0;) {
    size_t n = 1;
    if (!byteByByte) {
      const uint64_t r = nextRandom(state) % 16;
      if (r < 8) {
        n = 1;
      } else if (r < 12) {
        n = between(state, 2, 8);
      } else if (r < 15) {
        n = between(state, 9, 64);
      } else {
        n = between(state, 65, 256);
      }
    }
    n = std::min(n, left);
    pieces.push_back(n);
    left -= n;
  }
  return pieces;
}

}  // namespace libnet::http::fuzz
