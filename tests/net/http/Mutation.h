// Random damage for the HTTP parsers' mutation tests: a valid message with a
// few bytes replaced, inserted or dropped (and, optionally, cut short), so
// that a test can check the parser's verdict does not depend on how the
// bytes are split. Deterministic for a given generator state.
#pragma once

#include <cstddef>
#include <random>
#include <string>
#include <string_view>

namespace libnet::test {

// `input` after one to three edits at random places: a byte replaced by one
// of `alphabet`, one of `alphabet` inserted, a byte dropped, or (where `cut`)
// everything from a byte on cut off. Stops early once nothing is left.
inline std::string mutated(std::string input, std::string_view alphabet, bool cut,
                           std::mt19937& random) {
  const unsigned kinds = cut ? 4 : 3;
  for (int edits = 1 + static_cast<int>(random() % 3); edits > 0 && !input.empty(); --edits) {
    const size_t at = random() % input.size();
    const char c = alphabet[random() % alphabet.size()];
    switch (random() % kinds) {
      case 0:
        input[at] = c;
        break;
      case 1:
        input.insert(at, 1, c);
        break;
      case 2:
        input.erase(at, 1);
        break;
      default:
        input.resize(at);
        break;
    }
  }
  return input;
}

}  // namespace libnet::test
