#include "base/Guarded.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/Logging.h"

namespace libnet {
namespace {

// Captures every log line, and puts the process-wide logger back afterwards.
class GuardedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    savedLevel_ = Logger::level();
    Logger::setLevel(LogLevel::kInfo);
    Logger::setOutput([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    Logger::setOutput({});
    Logger::setLevel(savedLevel_);
  }

  std::vector<std::string> lines_;

 private:
  LogLevel savedLevel_ = LogLevel::kInfo;
};

TEST_F(GuardedTest, ReturnsTrueAndLogsNothingWhenTheCallbackReturns) {
  int calls = 0;
  EXPECT_TRUE(callGuarded("test callback", [&] { ++calls; }));
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(lines_.empty());
}

TEST_F(GuardedTest, StandardExceptionIsLoggedAtErrorWithWhatAndItsMessage) {
  EXPECT_FALSE(callGuarded("timer callback", [] { throw std::runtime_error("disk on fire"); }));
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("ERROR"), std::string::npos) << lines_[0];
  EXPECT_NE(lines_[0].find("timer callback"), std::string::npos) << lines_[0];
  EXPECT_NE(lines_[0].find("disk on fire"), std::string::npos) << lines_[0];
}

TEST_F(GuardedTest, NonStandardExceptionIsCaughtAndLogged) {
  EXPECT_FALSE(callGuarded("idle callback", [] { throw 42; }));
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find("ERROR"), std::string::npos) << lines_[0];
  EXPECT_NE(lines_[0].find("idle callback"), std::string::npos) << lines_[0];
}

TEST_F(GuardedTest, CallsAnLvalueCallableInPlace) {
  struct Counter {
    int calls = 0;
    void operator()() { ++calls; }
  } counter;
  EXPECT_TRUE(callGuarded("counter", counter));
  EXPECT_EQ(counter.calls, 1);  // not a copy
  static_assert(noexcept(callGuarded("x", counter)));
}

}  // namespace
}  // namespace libnet
