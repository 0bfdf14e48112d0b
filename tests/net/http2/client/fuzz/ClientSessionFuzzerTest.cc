// Runs the HTTP/2 client fuzz target (ClientSessionFuzzer.cc, linked in)
// without libFuzzer: every seed under every mode byte, then deterministic
// mutations of each, go through LLVMFuzzerTestOneInput, so the target's
// checks (an abort on failure) run in the plain, ASan and TSan builds.
//
// Arguments (from BUILD): the corpus files.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<std::string> gCorpus;

void run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ClientSessionFuzzerTest, CorpusIsThere) { EXPECT_GE(gCorpus.size(), 8u); }

TEST(ClientSessionFuzzerTest, EverySeedUnderEveryMode) {
  for (const std::string& path : gCorpus) {
    std::string seed = readFile(path);
    ASSERT_FALSE(seed.empty()) << path;
    for (int mode = 0; mode < 256; ++mode) {
      seed[0] = static_cast<char>(mode);
      run(seed);
    }
  }
}

TEST(ClientSessionFuzzerTest, Mutations) {
  std::mt19937 random(45);
  for (const std::string& path : gCorpus) {
    const std::string seed = readFile(path);
    for (int i = 0; i < 300; ++i) {
      std::string input = seed;
      const int edits = 1 + static_cast<int>(random() % 8);
      for (int e = 0; e < edits && input.size() > 1; ++e) {
        const size_t at = 1 + random() % (input.size() - 1);
        switch (random() % 3) {
          case 0:
            input[at] = static_cast<char>(random());
            break;
          case 1:
            input.erase(at, 1 + random() % 16);
            break;
          default:
            input.insert(at, input.substr(1 + random() % (input.size() - 1), 1 + random() % 32));
            break;
        }
      }
      run(input);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) gCorpus.emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
