// Runs the HTTP/2 session fuzz target (Http2SessionFuzzer.cc, linked in)
// without libFuzzer: every seed under a spread of mode bytes, then a few
// thousand deterministic mutations, go through LLVMFuzzerTestOneInput, so the
// target's checks run under the plain, ASan and TSan builds on any machine; a
// failed check aborts the test. It also checks that each seed does what its
// name says (make_seeds.py), that FrameCheck catches each broken rule it
// claims to, and that the dictionary parses.
//
// Arguments (from BUILD): the dictionary, then every corpus file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "net/Buffer.h"
#include "net/http2/ServerSession.h"
#include "tests/net/http2/fuzz/FrameCheck.h"
#include "tests/net/http2/fuzz/FuzzHandler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace libnet::http2::fuzz {
namespace {

std::string gDictPath;
std::vector<std::string> gCorpusPaths;

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct Seed {
  std::string name;
  std::string bytes;
};

void runTarget(std::string_view input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<Seed> loadCorpus() {
  std::vector<Seed> seeds;
  for (const std::string& path : gCorpusPaths) {
    seeds.push_back({std::filesystem::path(path).filename().string(), readFile(path)});
  }
  return seeds;
}

// The frame header of a payload of `length` bytes.
std::string head(size_t length, uint8_t type, uint8_t flags, uint32_t stream) {
  const char bytes[9] = {static_cast<char>(length >> 16), static_cast<char>(length >> 8),
                         static_cast<char>(length),       static_cast<char>(type),
                         static_cast<char>(flags),        static_cast<char>(stream >> 24),
                         static_cast<char>(stream >> 16), static_cast<char>(stream >> 8),
                         static_cast<char>(stream)};
  return std::string(bytes, sizeof bytes);
}

std::string frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload = {}) {
  return head(payload.size(), type, flags, stream) + std::string(payload);
}

// HPACK literal fields without indexing, no Huffman (RFC 7541 6.2.2).
std::string literals(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string block;
  for (const auto& [name, value] : fields) {
    block += '\0';
    block += static_cast<char>(name.size());
    block += name;
    block += static_cast<char>(value.size());
    block += value;
  }
  return block;
}

// A server's stream: SETTINGS, a 200 with content-length 5, its body.
std::string goodOutput(uint32_t stream = 1) {
  return frame(4, 0, 0) +
         frame(1, 4, stream, literals({{":status", "200"}, {"content-length", "5"}})) +
         frame(0, 1, stream, "hello");
}

std::string checkError(std::string_view output) {
  FrameCheck check;
  check.take(output);
  return check.error();
}

// What a seed's stream does fed whole to a session with its limits.
struct Outcome {
  bool finished = false;
  std::optional<uint32_t> goAwayError;
  uint32_t answered = 0;
  std::string frameError;
};

Outcome outcomeOf(const std::string& seed) {
  const auto mode = static_cast<uint8_t>(seed[0]);
  std::string stream;
  if ((mode & 3) != 3) stream.append(kPreface);
  if ((mode & 3) == 1) stream.append(head(0, 4, 0, 0));
  stream.append(seed, 1);
  ServerSession session(fuzzConfig((mode & 4) != 0), "seed");
  Outcome outcome;
  (void)session.receive(stream);
  Buffer out;
  session.produce(&out, SIZE_MAX);
  outcome.finished = session.finished();
  FrameCheck check;
  check.take(std::string_view(out.peek(), out.readableBytes()));
  outcome.goAwayError = check.goAwayError();
  outcome.answered = check.highestAnswered();
  outcome.frameError = check.error();
  return outcome;
}

// Parses a libFuzzer dictionary: blank lines, '#' comments, and entries
// [name=]"value" with the escapes \\, \" and \xHH. A line libFuzzer would
// refuse (it then refuses the whole file) is reported as a failure.
std::vector<std::string> loadDictionary(const std::string& path) {
  std::vector<std::string> entries;
  std::istringstream lines(readFile(path));
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t open = line.find('"');
    if (open == std::string::npos || line.back() != '"' || open + 1 >= line.size() ||
        (open != first && line[open - 1] != '=')) {
      ADD_FAILURE() << path << ":" << number << ": not [name=]\"value\": " << line;
      continue;
    }
    const std::string_view quoted = std::string_view(line).substr(open + 1, line.size() - open - 2);
    std::string value;
    for (size_t i = 0; i < quoted.size(); ++i) {
      if (quoted[i] != '\\') {
        value.push_back(quoted[i]);
      } else if (i + 1 < quoted.size() && (quoted[i + 1] == '\\' || quoted[i + 1] == '"')) {
        value.push_back(quoted[++i]);
      } else if (i + 3 < quoted.size() && quoted[i + 1] == 'x' &&
                 std::isxdigit(static_cast<unsigned char>(quoted[i + 2])) &&
                 std::isxdigit(static_cast<unsigned char>(quoted[i + 3]))) {
        value.push_back(
            static_cast<char>(std::stoi(std::string(quoted.substr(i + 2, 2)), nullptr, 16)));
        i += 3;
      } else {
        ADD_FAILURE() << path << ":" << number << ": bad escape: " << line;
        break;
      }
    }
    entries.push_back(value);
  }
  return entries;
}

// One random edit of the kinds libFuzzer makes: a byte changed, inserted or
// erased, a dictionary token inserted, a range duplicated or cut, another
// mode byte, or another seed's frames spliced on.
void mutate(std::string& s, std::mt19937& rng, const std::vector<std::string>& dict,
            const std::vector<Seed>& seeds) {
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const size_t at = 1 + pick(s.size());
  switch (rng() % 8) {
    case 0:
      s[pick(s.size())] = static_cast<char>(rng());
      break;
    case 1:
      s.insert(at, 1, static_cast<char>(rng()));
      break;
    case 2:
      if (s.size() > 1) s.erase(at, 1 + pick(16));
      break;
    case 3:
      s.insert(at, dict[pick(dict.size())]);
      break;
    case 4: {
      const std::string range = s.substr(1 + pick(s.size()), 1 + pick(64));
      s.insert(1 + pick(s.size()), range);
      break;
    }
    case 5:
      s.resize(at);
      break;
    case 6:
      s[0] = static_cast<char>(rng());
      break;
    default:
      s += seeds[pick(seeds.size())].bytes.substr(1);
      break;
  }
}

}  // namespace

TEST(Http2SessionFuzzerTest, CorpusIsThereAndNamed) {
  const std::vector<Seed> seeds = loadCorpus();
  EXPECT_GE(seeds.size(), 25u);
  const std::regex name("(ok|goaway[0-9a-f]{2})-[a-z0-9-]+");
  for (const Seed& seed : seeds) {
    EXPECT_TRUE(std::regex_match(seed.name, name)) << seed.name;
    EXPECT_GE(seed.bytes.size(), 2u) << seed.name;
  }
}

TEST(Http2SessionFuzzerTest, SeedsDoWhatTheirNamesSay) {
  for (const Seed& seed : loadCorpus()) {
    SCOPED_TRACE(seed.name);
    const Outcome outcome = outcomeOf(seed.bytes);
    EXPECT_EQ(outcome.frameError, "");
    if (seed.name.starts_with("ok-")) {
      EXPECT_GE(outcome.answered, 1u);
      EXPECT_EQ(outcome.goAwayError.value_or(0), 0u);
    } else {
      const uint32_t code = static_cast<uint32_t>(std::stoul(seed.name.substr(6, 2), nullptr, 16));
      EXPECT_EQ(outcome.goAwayError, code);
      EXPECT_TRUE(outcome.finished);
    }
  }
}

TEST(Http2SessionFuzzerTest, DictionaryParsesAndHasTheFrameTokens) {
  const std::vector<std::string> entries = loadDictionary(gDictPath);
  EXPECT_GE(entries.size(), 40u);
  for (const std::string_view token :
       {std::string_view(kPreface), std::string_view("\xbe"), std::string_view("\x04\x06/hello")}) {
    EXPECT_NE(std::find(entries.begin(), entries.end(), token), entries.end())
        << testing::PrintToString(std::string(token));
  }
}

TEST(Http2SessionFuzzerTest, SeedsPassTheTargetInEveryMode) {
  for (const Seed& seed : loadCorpus()) {
    // Every preface, limit, goAway and budget choice; the four ways of
    // splitting in turn.
    for (int mode = 0; mode < 64; ++mode) {
      std::string input = seed.bytes;
      input[0] = static_cast<char>(mode | ((mode + seed.bytes.size()) % 4) << 6);
      runTarget(input);
    }
  }
}

TEST(Http2SessionFuzzerTest, MutationsPassTheTarget) {
  const std::vector<Seed> seeds = loadCorpus();
  const std::vector<std::string> dict = loadDictionary(gDictPath);
  ASSERT_FALSE(seeds.empty());
  ASSERT_FALSE(dict.empty());
  std::mt19937 rng(34);
  for (int i = 0; i < 4000; ++i) {
    std::string input = seeds[static_cast<size_t>(i) % seeds.size()].bytes;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) mutate(input, rng, dict, seeds);
    runTarget(input);
  }
}

// FrameCheck, which the target's verdict on the output rests on: a good
// server stream passes, and each rule it states can fail.
TEST(Http2SessionFuzzerTest, FrameCheckPassesAGoodStream) {
  FrameCheck check;
  const std::string output = goodOutput() + frame(7, 0, 0, std::string(8, '\0'));
  for (const char c : output) check.take(std::string_view(&c, 1));
  EXPECT_EQ(check.error(), "");
  EXPECT_TRUE(check.atFrameBoundary());
  EXPECT_EQ(check.dataBytes(), 5u);
  EXPECT_EQ(check.highestAnswered(), 1u);
  EXPECT_EQ(check.lowestGoAwayLast(), 0u);
  EXPECT_EQ(check.goAwayError(), 0u);
}

TEST(Http2SessionFuzzerTest, FrameCheckCatchesEachBrokenRule) {
  const std::string settings = frame(4, 0, 0);
  const std::string ok = literals({{":status", "200"}});
  const std::pair<std::string, std::string> cases[] = {
      {head(16385, 0, 0, 1), "payload of 16385"},
      {frame(1, 5, 1, ok), "first frame is not its SETTINGS"},
      {settings + frame(0, 1, 1, "x"), "DATA before the response HEADERS"},
      {settings + frame(1, 4, 2, ok), "even stream"},
      {settings + frame(5, 4, 1, "xxxx"), "frame type 5"},
      {settings + frame(1, 0, 1, ok) + frame(0, 0, 1, "x"), "broken by type 0"},
      {settings + frame(9, 4, 1, ok), "CONTINUATION without"},
      {settings + frame(1, 4, 1, literals({{"content-length", "1"}})), "does not start with"},
      {settings + frame(1, 4, 1, literals({{":status", "2000"}})), ":status 2000"},
      {settings + frame(1, 4, 1, ok + literals({{"connection", "close"}})), "connection-specific"},
      {settings + frame(1, 4, 1, "\xff\xff\xff\xff\xff\xff"), "does not decode"},
      {goodOutput() + frame(0, 0, 1, "x"), "DATA on a stream the server ended"},
      {settings + frame(1, 4, 1, literals({{":status", "200"}, {"content-length", "1"}})) +
           frame(0, 1, 1, "xx"),
       "past the content-length"},
      {settings + frame(1, 4, 1, ok) + frame(1, 4, 1, ok), "a second HEADERS"},
      {settings + frame(7, 0, 0, std::string(7, '\0') + '\x02') + frame(6, 0, 0, "12345678"),
       "after GOAWAY with error 2"},
      {settings + frame(7, 0, 0, std::string(8, '\0')) +
           frame(7, 0, 0, std::string(3, '\0') + '\x03' + std::string(4, '\0')),
       "above an earlier"},
      {settings + frame(6, 0, 0, "1234"), "PING of a bad length"},
  };
  for (const auto& [output, error] : cases) {
    EXPECT_NE(checkError(output).find(error), std::string::npos)
        << "wanted '" << error << "', got '" << checkError(output) << "'";
  }
  FrameCheck partial;
  partial.take(goodOutput().substr(0, 20));
  EXPECT_FALSE(partial.atFrameBoundary());
}

}  // namespace libnet::http2::fuzz

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) libnet::http2::fuzz::gDictPath = argv[1];
  for (int i = 2; i < argc; ++i) libnet::http2::fuzz::gCorpusPaths.emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
