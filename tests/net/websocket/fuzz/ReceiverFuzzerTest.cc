// Runs the Receiver fuzz target (ReceiverFuzzer.cc, linked in) without
// libFuzzer: every seed corpus file, then a few thousand deterministic
// mutations of them, go through LLVMFuzzerTestOneInput, so the target's
// checks run under the plain, ASan and TSan builds on any machine; a failed
// check aborts the test.
//
// Arguments (from BUILD): every corpus file.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> gCorpusPaths;

void runTarget(std::string_view input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::vector<std::string> loadCorpus() {
  std::vector<std::string> seeds;
  for (const std::string& path : gCorpusPaths) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}

std::string mutate(std::string s, const std::vector<std::string>& seeds, std::mt19937& rng) {
  const auto pick = [&rng](size_t n) { return n == 0 ? 0 : rng() % n; };
  switch (rng() % 6) {
    case 0:  // change a byte
      if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
      break;
    case 1:  // insert a byte
      s.insert(s.begin() + static_cast<long>(pick(s.size() + 1)), static_cast<char>(rng()));
      break;
    case 2:  // erase a range
      if (!s.empty()) {
        const size_t at = pick(s.size());
        s.erase(at, 1 + pick(s.size() - at));
      }
      break;
    case 3:  // duplicate a range
      if (!s.empty()) {
        const size_t at = pick(s.size());
        s.insert(pick(s.size()), s.substr(at, 1 + pick(64)));
      }
      break;
    case 4:  // another mode byte
      if (!s.empty()) s[0] = static_cast<char>(rng());
      break;
    default:  // splice another seed's frames on
      s += seeds[pick(seeds.size())].substr(1);
      break;
  }
  return s;
}

TEST(ReceiverFuzzerTest, CorpusIsThere) {
  const std::vector<std::string> seeds = loadCorpus();
  EXPECT_GE(seeds.size(), 8u);
  for (const std::string& seed : seeds) EXPECT_GE(seed.size(), 3u);
}

TEST(ReceiverFuzzerTest, SeedsPassTheTarget) {
  for (const std::string& seed : loadCorpus()) {
    // Every mode byte with the same frames: both roles, deflate on and off,
    // every piece size.
    for (int mode = 0; mode < 256; ++mode) {
      std::string input = seed;
      input[0] = static_cast<char>(mode);
      runTarget(input);
    }
  }
}

TEST(ReceiverFuzzerTest, MutationsPassTheTarget) {
  const std::vector<std::string> seeds = loadCorpus();
  ASSERT_FALSE(seeds.empty());
  std::mt19937 rng(6455);
  for (int i = 0; i < 4000; ++i) {
    std::string input = seeds[rng() % seeds.size()];
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) input = mutate(input, seeds, rng);
    runTarget(input);
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) gCorpusPaths.emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
