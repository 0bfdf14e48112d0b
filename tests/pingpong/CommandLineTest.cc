// pingpong/CommandLine.h: options anywhere on the line, both value forms,
// flags, --help winning over errors, and the problems it must name.
#include "pingpong/CommandLine.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace {

// argv for parseCommandLine(), owning its strings.
class Argv {
 public:
  Argv(std::initializer_list<const char*> args) : strings_(args.begin(), args.end()) {
    for (std::string& s : strings_) pointers_.push_back(s.data());
    pointers_.push_back(nullptr);
  }
  [[nodiscard]] int argc() const { return static_cast<int>(strings_.size()); }
  [[nodiscard]] char* const* argv() const { return pointers_.data(); }

 private:
  std::vector<std::string> strings_;
  std::vector<char*> pointers_;
};

struct Parsed {
  cmdline::CommandLine line;
  std::string backend;
  std::string ca;
  bool coro = false;
};

Parsed parse(const Argv& args) {
  Parsed parsed;
  const cmdline::Option options[] = {
      {"--backend", &parsed.backend}, {"--tls-ca", &parsed.ca}, {"--coro", nullptr, &parsed.coro}};
  parsed.line = cmdline::parseCommandLine(args.argc(), args.argv(), options);
  return parsed;
}

TEST(CommandLineTest, OptionsStandAnywhereInBothForms) {
  const Parsed p =
      parse({"prog", "127.0.0.1", "--backend", "uring", "9000", "--tls-ca=ca.pem", "--coro", "4"});
  EXPECT_TRUE(p.line.error.empty()) << p.line.error;
  EXPECT_FALSE(p.line.help);
  EXPECT_EQ(p.line.positional, (std::vector<std::string>{"127.0.0.1", "9000", "4"}));
  EXPECT_EQ(p.backend, "uring");
  EXPECT_EQ(p.ca, "ca.pem");
  EXPECT_TRUE(p.coro);
}

TEST(CommandLineTest, UnsetOptionsKeepTheirDefaults) {
  const Parsed p = parse({"prog", "a", "b"});
  EXPECT_TRUE(p.line.error.empty());
  EXPECT_EQ(p.backend, "");
  EXPECT_FALSE(p.coro);
  EXPECT_EQ(p.line.positional.size(), 2u);
}

TEST(CommandLineTest, HelpAnywhereWinsOverABadOption) {
  EXPECT_TRUE(parse({"prog", "--bogus", "x", "-h"}).line.help);
  const Parsed p = parse({"prog", "--backend", "--help"});
  EXPECT_TRUE(p.line.help);
  EXPECT_TRUE(p.line.error.empty());
}

TEST(CommandLineTest, NamesEveryBadOption) {
  EXPECT_EQ(parse({"prog", "--bogus"}).line.error, "unknown option '--bogus'");
  EXPECT_EQ(parse({"prog", "--backend"}).line.error, "option --backend needs a value");
  EXPECT_EQ(parse({"prog", "--backend="}).line.error, "option --backend needs a value");
  // A value never starts with "--": the next option is not swallowed.
  EXPECT_EQ(parse({"prog", "--tls-ca", "--coro"}).line.error, "option --tls-ca needs a value");
  EXPECT_EQ(parse({"prog", "--coro=yes"}).line.error, "option --coro takes no value");
  // A longer name that merely starts with a known one is not that option.
  EXPECT_EQ(parse({"prog", "--corot"}).line.error, "unknown option '--corot'");
}

TEST(CommandLineTest, ParseNumberTakesWholeNumbersInRangeOnly) {
  EXPECT_EQ(cmdline::parseNumber("0", 0, 256), 0);
  EXPECT_EQ(cmdline::parseNumber("256", 0, 256), 256);
  EXPECT_FALSE(cmdline::parseNumber("257", 0, 256));
  EXPECT_FALSE(cmdline::parseNumber("-1", 0, 256));
  EXPECT_FALSE(cmdline::parseNumber("12x", 0, 256));
  EXPECT_FALSE(cmdline::parseNumber("", 0, 256));
  EXPECT_FALSE(cmdline::parseNumber("1.5", 0, 256));
}

}  // namespace
