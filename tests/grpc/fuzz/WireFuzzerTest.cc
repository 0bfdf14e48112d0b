// Runs the gRPC wire fuzz target (WireFuzzer.cc, linked in) without
// libFuzzer: every seed corpus file, then deterministic mutations of them
// (bytes flipped, cut, repeated), so the target's checks run under the
// plain, ASan+UBSan and TSan builds; a failed check aborts the test.
//
// Arguments (from BUILD): every corpus file.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> gCorpus;

int run(const std::string& input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

TEST(WireFuzzerTest, SeedsAndTheirMutations) {
  ASSERT_GE(gCorpus.size(), 4u);
  std::mt19937 random(45);
  for (const std::string& seed : gCorpus) {
    EXPECT_EQ(run(seed), 0);
    for (int i = 0; i < 300; ++i) {
      std::string m = seed;
      switch (random() % 3) {
        case 0:
          if (!m.empty()) m[random() % m.size()] = static_cast<char>(random());
          break;
        case 1:
          m.resize(m.empty() ? 0 : random() % m.size());
          break;
        default:
          m += m.substr(0, random() % (m.size() + 1));
          break;
      }
      EXPECT_EQ(run(m), 0);
    }
  }
  EXPECT_EQ(run(""), 0);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    gCorpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return RUN_ALL_TESTS();
}
