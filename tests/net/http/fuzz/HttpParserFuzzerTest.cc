// Runs the HTTP parser fuzz target (HttpParserFuzzer.cc, linked in) without
// libFuzzer: every seed corpus file, then a few thousand deterministic
// mutations of them, go through LLVMFuzzerTestOneInput, so the target's
// checks run under the plain, ASan+UBSan and TSan builds on any machine; a
// failed check aborts the test. Also tests the pieces the target is built
// from (ParseTrace, SplitPlan) and that the seed corpus and dictionary say
// what they are meant to.
//
// Arguments (from BUILD): the dictionary, then every corpus file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "net/http/HttpParser.h"
#include "tests/net/http/fuzz/ParseTrace.h"
#include "tests/net/http/fuzz/SplitPlan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace libnet::http::fuzz {
namespace {

std::string gDictPath;
std::vector<std::string> gCorpusPaths;

int runTarget(std::string_view input) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Seed {
  std::string name;  // the file name, which says what the seed must do
  std::string bytes;
};

std::vector<Seed> loadCorpus() {
  std::vector<Seed> seeds;
  for (const std::string& path : gCorpusPaths) {
    seeds.push_back({std::filesystem::path(path).filename().string(), readFile(path)});
  }
  return seeds;
}

// Parses a libFuzzer dictionary: blank lines, '#' comments, and entries
// [name=]"value" with the escapes \\, \" and \xHH. A line libFuzzer would
// refuse (it then refuses the whole file) is reported as a failure.
std::vector<std::string> loadDictionary(const std::string& path) {
  std::vector<std::string> entries;
  std::istringstream lines(readFile(path));
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t open = line.find('"');
    const bool named = open != first;
    if (open == std::string::npos || line.back() != '"' || open + 1 >= line.size() ||
        (named && line[open - 1] != '=')) {
      ADD_FAILURE() << path << ":" << number << ": not [name=]\"value\": " << line;
      continue;
    }
    const std::string_view quoted = std::string_view(line).substr(open + 1, line.size() - open - 2);
    std::string value;
    bool valid = true;
    for (size_t i = 0; i < quoted.size() && valid; ++i) {
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
        valid = false;
      }
    }
    if (!valid) {
      ADD_FAILURE() << path << ":" << number << ": bad escape: " << line;
      continue;
    }
    entries.push_back(value);
  }
  return entries;
}

// The whole-input verdict under the default limits.
ParseTrace parseWhole(std::string_view input) {
  const size_t all[] = {input.size()};
  return ParseTrace::run(input, all, HttpParser::Limits{});
}

// ---------------------------------------------------------------------------
// The seed corpus and the dictionary

TEST(HttpParserFuzzerTest, EverySeedPassesTheTarget) {
  const std::vector<Seed> seeds = loadCorpus();
  // The repository holds more than twenty; fewer means BUILD lost some.
  ASSERT_GE(seeds.size(), 20u);
  for (const Seed& seed : seeds) {
    SCOPED_TRACE(seed.name);
    EXPECT_FALSE(seed.bytes.empty());
    EXPECT_EQ(runTarget(seed.bytes), 0);
  }
}

// "ok-*" seeds are valid requests, "errNNN-*" seeds are refused with NNN
// (docs/fuzzing.md): a seed that no longer reaches the code it was written
// for is caught here rather than by a slow drop in coverage.
TEST(HttpParserFuzzerTest, SeedVerdictsMatchTheirNames) {
  int ok = 0;
  int refused = 0;
  std::set<int> statuses;
  for (const Seed& seed : loadCorpus()) {
    SCOPED_TRACE(seed.name);
    const ParseTrace trace = parseWhole(seed.bytes);
    EXPECT_EQ(trace.violation(), "");
    if (seed.name.starts_with("ok-")) {
      ++ok;
      EXPECT_FALSE(trace.error()) << trace.errorStatus() << " " << trace.errorMessage();
      EXPECT_FALSE(trace.requests().empty());
      EXPECT_EQ(trace.leftover(), "");
    } else if (seed.name.starts_with("err") && seed.name.size() > 7 && seed.name[6] == '-') {
      ++refused;
      const int expected = std::stoi(seed.name.substr(3, 3));
      EXPECT_TRUE(trace.error());
      EXPECT_EQ(trace.errorStatus(), expected) << trace.errorMessage();
      statuses.insert(trace.errorStatus());
    }
  }
  EXPECT_GE(ok, 10);
  EXPECT_GE(refused, 10);
  EXPECT_EQ(statuses, (std::set<int>{400, 413, 417, 501, 505}));
}

TEST(HttpParserFuzzerTest, PipelinedSeedsGiveEveryRequest) {
  std::map<std::string, size_t> counts;
  for (const Seed& seed : loadCorpus())
    counts[seed.name] = parseWhole(seed.bytes).requests().size();
  EXPECT_EQ(counts["ok-pipelined-keep-alive"], 3u);
  EXPECT_EQ(counts["ok-mixed-pipeline"], 3u);
  EXPECT_EQ(counts["ok-http10-keep-alive"], 2u);
  EXPECT_EQ(counts["ok-absolute-form"], 2u);
}

TEST(HttpParserFuzzerTest, DictionaryParsesAndHasTheFramingTokens) {
  const std::vector<std::string> entries = loadDictionary(gDictPath);
  EXPECT_GE(entries.size(), 40u);
  for (const std::string_view token : {"GET", "CONNECT", "HTTP/1.1", "\r\n", "\r\n\r\n",
                                       "Host:", "Content-Length:", "Transfer-Encoding:", "chunked",
                                       "close", "keep-alive", "0\r\n\r\n", "\xc3\xa9"}) {
    EXPECT_NE(std::find(entries.begin(), entries.end(), token), entries.end())
        << testing::PrintToString(std::string(token));
  }
}

// ---------------------------------------------------------------------------
// Mutations

// One random edit of the kinds libFuzzer makes: a byte changed, inserted or
// erased, a dictionary token inserted or written over, a range duplicated or
// cut, or a splice with another seed.
void mutate(std::string& s, std::mt19937& rng, const std::vector<std::string>& dict,
            const std::vector<Seed>& seeds) {
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const size_t at = pick(s.size() + 1);
  switch (rng() % 8) {
    case 0:
      if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
      break;
    case 1:
      s.insert(at, 1, static_cast<char>(rng()));
      break;
    case 2:
      if (!s.empty()) s.erase(pick(s.size()), 1 + pick(8));
      break;
    case 3:
      s.insert(at, dict[pick(dict.size())]);
      break;
    case 4: {
      const std::string& token = dict[pick(dict.size())];
      s.replace(at, token.size(), token);
      break;
    }
    case 5: {
      const size_t from = pick(s.size() + 1);
      const std::string range = s.substr(from, 1 + pick(64));
      s.insert(pick(s.size() + 1), range);
      break;
    }
    case 6:
      s.resize(at);
      break;
    default: {
      const std::string& other = seeds[pick(seeds.size())].bytes;
      s = s.substr(0, at) + other.substr(pick(other.size() + 1));
      break;
    }
  }
}

TEST(HttpParserFuzzerTest, MutatedSeedsPassTheTarget) {
  const std::vector<Seed> seeds = loadCorpus();
  const std::vector<std::string> dict = loadDictionary(gDictPath);
  ASSERT_FALSE(seeds.empty());
  ASSERT_FALSE(dict.empty());
  std::mt19937 rng(20240610);
  constexpr int kInputs = 4000;
  int completed = 0;
  int waiting = 0;
  std::set<int> statuses;
  for (int i = 0; i < kInputs; ++i) {
    std::string input = seeds[static_cast<size_t>(i) % seeds.size()].bytes;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) mutate(input, rng, dict, seeds);
    ASSERT_EQ(runTarget(input), 0);
    const ParseTrace trace = parseWhole(input);
    if (!trace.requests().empty()) ++completed;
    if (trace.error()) {
      statuses.insert(trace.errorStatus());
    } else {
      ++waiting;
    }
  }
  // The mutations reach the parser's paths rather than only its first error:
  // many inputs still hold complete requests, and each kind of refusal the
  // corpus starts from shows up.
  EXPECT_GT(completed, kInputs / 10);
  EXPECT_GT(waiting, kInputs / 10);
  for (const int status : {400, 413, 501, 505}) EXPECT_TRUE(statuses.contains(status)) << status;
}

// ---------------------------------------------------------------------------
// ParseTrace and SplitPlan, which the target's verdict rests on

TEST(HttpParserFuzzerTest, DifferenceIsEmptyForTheSameStreamAnySplit) {
  const std::string input =
      "POST /a?b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
      "GET /next HTTP/1.1\r\nHost: h\r\nAcc";
  const ParseTrace whole = parseWhole(input);
  const std::vector<size_t> bytes(input.size(), 1);
  const ParseTrace byByte = ParseTrace::run(input, bytes, HttpParser::Limits{});
  EXPECT_EQ(ParseTrace::difference(whole, byByte), "");
  EXPECT_EQ(byByte.violation(), "");
  ASSERT_EQ(whole.requests().size(), 1u);
  EXPECT_EQ(whole.requests()[0].body, "abc");
  EXPECT_FALSE(whole.error());
  EXPECT_EQ(whole.leftover(), "Acc");
}

// Each field of a request, and each part of the end state, must count: a
// difference in any of them is named.
TEST(HttpParserFuzzerTest, DifferenceNamesWhatDiffers) {
  const std::string base = "POST /p?q HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab";
  const ParseTrace a = parseWhole(base);
  ASSERT_EQ(a.requests().size(), 1u);
  const std::pair<std::string, std::string> cases[] = {
      {"PUT /p?q HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab", "method"},
      {"POST /p?q HTTP/1.0\r\nHost: h\r\nContent-Length: 2\r\n\r\nab", "version"},
      {"POST /x?q HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab", "target"},
      {"POST /p?r HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nab", "target"},
      {"POST /p?q HTTP/1.1\r\nHost: i\r\nContent-Length: 2\r\n\r\nab", "headers"},
      {"POST /p?q HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nac", "body"},
      {base + "GET / HTTP/1.1\r\nHost: h\r\n\r\n", "complete requests"},
      {base + "BREW", "unconsumed bytes"},
      {base + "BREW / HTTP/1.1\r\n", "need-more vs error 501"},
  };
  for (const auto& [other, expected] : cases) {
    SCOPED_TRACE(other);
    const std::string diff = ParseTrace::difference(a, parseWhole(other));
    EXPECT_NE(diff.find(expected), std::string::npos) << diff;
  }
  const ParseTrace e400 = parseWhole("GET / HTTP/1.1\r\n\r\n");
  const ParseTrace e501 = parseWhole("BREW / HTTP/1.1\r\n\r\n");
  const ParseTrace e400b = parseWhole("GET / HTTP/1.1\r\nX : y\r\n\r\n");
  EXPECT_NE(ParseTrace::difference(e400, e501).find("error status 400 vs 501"), std::string::npos);
  EXPECT_NE(ParseTrace::difference(e400, e400b).find("error message"), std::string::npos);
}

TEST(HttpParserFuzzerTest, KeepAliveDifferenceIsNamed) {
  // Same fields apart from a Connection token, so only keepAlive and the
  // header value differ; headers are compared first.
  const ParseTrace a = parseWhole("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  const ParseTrace b = parseWhole("GET / HTTP/1.1\r\nHost: h\r\nConnection: clone\r\n\r\n");
  EXPECT_EQ(ParseTrace::difference(a, b), "request 0: headers differ");
  ASSERT_EQ(a.requests().size(), 1u);
  ASSERT_EQ(b.requests().size(), 1u);
  EXPECT_FALSE(a.requests()[0].keepAlive);
  EXPECT_TRUE(b.requests()[0].keepAlive);
}

TEST(HttpParserFuzzerTest, SplitPlanCoversTheInputDeterministically) {
  size_t oneBytePieces = 0;
  size_t longerPieces = 0;
  for (const Seed& seed : loadCorpus()) {
    const std::vector<size_t> pieces = SplitPlan::piecesFor(seed.bytes, 0);
    size_t sum = 0;
    for (const size_t n : pieces) {
      EXPECT_GE(n, 1u);
      sum += n;
      (n == 1 ? oneBytePieces : longerPieces) += 1;
    }
    EXPECT_EQ(sum, seed.bytes.size());
    EXPECT_EQ(SplitPlan::piecesFor(seed.bytes, 0), pieces);
  }
  // Half of the pieces are meant to be single bytes.
  EXPECT_GE(oneBytePieces * 3, oneBytePieces + longerPieces);
  EXPECT_GE(longerPieces * 4, oneBytePieces + longerPieces);
  EXPECT_TRUE(SplitPlan::piecesFor("", 0).empty());

  // The salt and every byte of the input change the plan.
  const std::string input(2000, 'a');
  std::string changed = input;
  changed[1999] = 'b';
  EXPECT_NE(SplitPlan::piecesFor(input, 0), SplitPlan::piecesFor(input, 1));
  EXPECT_NE(SplitPlan::piecesFor(input, 0), SplitPlan::piecesFor(changed, 0));
}

}  // namespace
}  // namespace libnet::http::fuzz

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DICTIONARY CORPUS_FILE...\n", argv[0]);
    return 2;
  }
  libnet::http::fuzz::gDictPath = argv[1];
  libnet::http::fuzz::gCorpusPaths.assign(argv + 2, argv + argc);
  return RUN_ALL_TESTS();
}
