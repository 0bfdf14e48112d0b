// SplitPlan: the piece sizes in which the HTTP parser fuzzer feeds an input
// to its second parser. The plan is a pure function of the input bytes and a
// salt: a crash file alone reproduces the split that failed, and a mutation
// of the input also explores a different split. Half of the pieces are one
// byte long, since a boundary inside a line end, a chunk size or a field name
// is where an incremental parser goes wrong; the rest range up to 256 bytes,
// so that several lines, or a request and the start of the next, also meet
// in one buffer.
// Pure functions: any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace libnet::http::fuzz {

class SplitPlan {
 public:
  // Sizes, each at least 1, that add up to input.size() (none for an empty
  // input). The same input and salt always give the same plan.
  [[nodiscard]] static std::vector<size_t> piecesFor(std::string_view input, uint64_t salt);

  // FNV-1a over the bytes: cheap, and every byte moves the result.
  [[nodiscard]] static uint64_t hash(std::string_view bytes);
};

}  // namespace libnet::http::fuzz
