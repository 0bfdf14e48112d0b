#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/CurrentThread.h"
#include "base/Logging.h"
#include "tests/base/StderrCapture.h"

namespace libnet {
namespace {

// Captures every line into lines_ and puts the process-wide logger back the
// way it was afterwards, so tests do not leak their level or sink.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    savedLevel_ = Logger::level();
    Logger::setOutput([this](std::string_view line) { lines_.emplace_back(line); });
  }
  void TearDown() override {
    Logger::setOutput({});
    Logger::setFlush({});
    Logger::setLevel(savedLevel_);
  }

  std::vector<std::string> lines_;

 private:
  LogLevel savedLevel_ = LogLevel::kInfo;
};

using LoggingDeathTest = LoggingTest;

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string suffixFor(int line) { return " - LoggingTest.cc:" + std::to_string(line) + "\n"; }

using test::StderrCapture;

TEST_F(LoggingTest, LineFormat) {
  Logger::setLevel(LogLevel::kInfo);
  const int line = __LINE__ + 1;
  LOG_WARN << "answer=" << 42;
  ASSERT_EQ(lines_.size(), 1u);
  const std::string expected =
      "^[0-9]{8} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z " + std::to_string(CurrentThread::tid()) +
      " WARN  answer=42 - LoggingTest\\.cc:" + std::to_string(line) + "\n$";
  EXPECT_TRUE(std::regex_search(lines_[0], std::regex(expected))) << lines_[0];
}

TEST_F(LoggingTest, FormatsValuesOfEveryKind) {
  Logger::setLevel(LogLevel::kInfo);
  const void* p = reinterpret_cast<const void*>(uintptr_t{0xbeef});
  LOG_INFO << INT64_MIN << ' ' << UINT64_MAX << ' ' << 2.5 << ' ' << true << ' ' << p << ' '
           << std::string("s") << ' ' << std::string_view("v");
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find(" INFO  -9223372036854775808 18446744073709551615 2.5 true 0xbeef s v"),
            std::string::npos)
      << lines_[0];
}

TEST_F(LoggingTest, LevelFilteringSkipsArgumentEvaluation) {
  Logger::setLevel(LogLevel::kWarn);
  int evaluated = 0;
  auto touch = [&evaluated] {
    ++evaluated;
    return evaluated;
  };

  LOG_TRACE << "trace " << touch();
  LOG_DEBUG << "debug " << touch();
  LOG_INFO << "info " << touch();
  EXPECT_EQ(evaluated, 0);
  EXPECT_TRUE(lines_.empty());

  LOG_WARN << "warn " << touch();
  EXPECT_EQ(evaluated, 1);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_NE(lines_[0].find(" WARN  warn 1"), std::string::npos) << lines_[0];

  LOG_ERROR << "error " << touch();
  EXPECT_EQ(evaluated, 2);
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_NE(lines_[1].find(" ERROR error 2"), std::string::npos) << lines_[1];
}

TEST_F(LoggingTest, LowerLevelEnablesMore) {
  Logger::setLevel(LogLevel::kTrace);
  EXPECT_EQ(Logger::level(), LogLevel::kTrace);
  LOG_TRACE << "t";
  LOG_DEBUG << "d";
  LOG_INFO << "i";
  ASSERT_EQ(lines_.size(), 3u);
  EXPECT_NE(lines_[0].find(" TRACE t - "), std::string::npos);
  EXPECT_NE(lines_[1].find(" DEBUG d - "), std::string::npos);
  EXPECT_NE(lines_[2].find(" INFO  i - "), std::string::npos);
}

// Logging.h: "Statements below the level cost one relaxed atomic load and
// build nothing." With the level at FATAL, an ERROR statement is below it.
TEST_F(LoggingTest, ErrorIsFilteredWhenLevelIsFatal) {
  Logger::setLevel(LogLevel::kFatal);
  int evaluated = 0;
  auto touch = [&evaluated] { return ++evaluated; };
  LOG_ERROR << "error " << touch();
  errno = ENOENT;
  LOG_SYSERR << "syserr " << touch();
  EXPECT_EQ(evaluated, 0);
  EXPECT_TRUE(lines_.empty()) << lines_.front();
}

TEST_F(LoggingTest, OverlongLineIsTruncatedButKeepsItsSuffix) {
  Logger::setLevel(LogLevel::kInfo);
  const std::string big(3 * LogStream::kCapacity, 'y');
  const int line = __LINE__ + 1;
  LOG_WARN << "start " << big << " never seen";
  ASSERT_EQ(lines_.size(), 1u);
  const std::string& text = lines_[0];
  EXPECT_LE(text.size(), LogStream::kCapacity);
  EXPECT_GT(text.size(), LogStream::kCapacity - LogStream::kReserve);
  EXPECT_TRUE(endsWith(text, "yyy..." + suffixFor(line))) << text.substr(text.size() - 40);
  EXPECT_EQ(text.find("never seen"), std::string::npos);
  EXPECT_NE(text.find(" WARN  start yyy"), std::string::npos);
}

TEST_F(LoggingTest, SuffixUsesBaseNameOfFile) {
  Logger("some/dir/Other.cc", 7, LogLevel::kWarn).stream() << "m";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_TRUE(endsWith(lines_[0], " WARN  m - Other.cc:7\n")) << lines_[0];

  // An absurdly long file name is cut so the suffix still fits.
  const std::string longName = "dir/" + std::string(200, 'f') + ".cc";
  Logger(longName.c_str(), 9, LogLevel::kWarn).stream() << std::string(5000, 'z');
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_TRUE(endsWith(lines_[1], "... - " + std::string(60, 'f') + ":9\n"))
      << lines_[1].substr(lines_[1].size() - 80);
}

TEST_F(LoggingTest, SysErrIncludesStrerror) {
  Logger::setLevel(LogLevel::kInfo);
  errno = ENOENT;
  const int line = __LINE__ + 1;
  LOG_SYSERR << "open(/nonexistent)";
  ASSERT_EQ(lines_.size(), 1u);
  const std::string& text = lines_[0];
  EXPECT_NE(text.find(" ERROR "), std::string::npos) << text;
  EXPECT_NE(text.find(std::strerror(ENOENT)), std::string::npos) << text;
  EXPECT_NE(text.find("No such file or directory"), std::string::npos) << text;
  EXPECT_NE(text.find("(errno=" + std::to_string(ENOENT) + ")"), std::string::npos) << text;
  EXPECT_NE(text.find("open(/nonexistent)"), std::string::npos) << text;
  EXPECT_TRUE(endsWith(text, suffixFor(line))) << text;
}

TEST_F(LoggingTest, SysErrWithoutErrnoAddsNothing) {
  errno = 0;
  LOG_SYSERR << "no error";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].find("errno="), std::string::npos) << lines_[0];
}

TEST_F(LoggingTest, PlainErrorIgnoresErrno) {
  errno = ENOENT;
  LOG_ERROR << "plain";
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].find("errno="), std::string::npos) << lines_[0];
}

TEST_F(LoggingTest, SetOutputEmptyRestoresDefaultSink) {
  Logger::setOutput({});
  std::string written;
  {
    StderrCapture capture;
    LOG_WARN << "to stderr " << 7;
    written = capture.finish();
  }
  EXPECT_TRUE(lines_.empty());  // the capturing sink is no longer called
  EXPECT_NE(written.find(" WARN  to stderr 7 - LoggingTest.cc:"), std::string::npos) << written;

  std::vector<std::string> other;
  Logger::setOutput([&other](std::string_view line) { other.emplace_back(line); });
  {
    StderrCapture capture;
    LOG_WARN << "captured";
    written = capture.finish();
  }
  ASSERT_EQ(other.size(), 1u);
  EXPECT_NE(other[0].find("captured"), std::string::npos);
  EXPECT_TRUE(lines_.empty());
  EXPECT_EQ(written, "");  // a replaced sink means nothing goes to stderr
}

TEST_F(LoggingTest, FlushCallsTheFlushFunction) {
  int flushed = 0;
  Logger::setFlush([&flushed] { ++flushed; });
  Logger::flush();
  EXPECT_EQ(flushed, 1);
  Logger::setFlush({});
  Logger::flush();  // the default flushes stderr
  EXPECT_EQ(flushed, 1);
}

TEST_F(LoggingTest, ParseLevelIsCaseInsensitive) {
  EXPECT_EQ(Logger::parseLevel("TRACE"), LogLevel::kTrace);
  EXPECT_EQ(Logger::parseLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(Logger::parseLevel("Info"), LogLevel::kInfo);
  EXPECT_EQ(Logger::parseLevel("wArN"), LogLevel::kWarn);
  EXPECT_EQ(Logger::parseLevel("error"), LogLevel::kError);
  EXPECT_EQ(Logger::parseLevel("FATAL"), LogLevel::kFatal);
}

TEST_F(LoggingTest, ParseLevelRejectsGarbage) {
  for (std::string_view bad :
       {"", "I", "INF", "INFOO", "INFO ", " INFO", "warning", "3", "err", "trace\n", "F@TAL"}) {
    EXPECT_EQ(Logger::parseLevel(bad), std::nullopt) << "'" << bad << "'";
  }
  EXPECT_EQ(Logger::parseLevel(std::string_view("INFO\0", 5)), std::nullopt);
}

TEST_F(LoggingTest, LevelNamesRoundTrip) {
  for (LogLevel level : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn,
                         LogLevel::kError, LogLevel::kFatal}) {
    const std::string_view name = Logger::levelName(level);
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name.back(), ' ');
    EXPECT_EQ(Logger::parseLevel(name), level) << name;
  }
  EXPECT_EQ(Logger::levelName(LogLevel::kWarn), "WARN");
}

TEST_F(LoggingDeathTest, FatalAbortsAfterWritingToStderr) {
  EXPECT_DEATH(
      {
        Logger::setOutput({});
        Logger::setFlush({});
        LOG_FATAL << "fatal failure " << 42;
      },
      " FATAL fatal failure 42 - LoggingTest\\.cc:[0-9]+");
}

TEST_F(LoggingDeathTest, FatalFlushesTheSinkBeforeAborting) {
  EXPECT_DEATH(
      {
        Logger::setOutput({});
        Logger::setFlush([] {
          std::fputs("<flushed>", stderr);
          std::fflush(stderr);
        });
        LOG_FATAL << "bye";
      },
      "FATAL bye - LoggingTest\\.cc:[0-9]+.*<flushed>");
}

TEST_F(LoggingDeathTest, FatalIsNotFilteredByLevel) {
  EXPECT_DEATH(
      {
        Logger::setOutput({});
        Logger::setLevel(LogLevel::kFatal);
        LOG_FATAL << "still fatal";
      },
      "FATAL still fatal");
}

TEST_F(LoggingDeathTest, SysFatalIncludesStrerror) {
  EXPECT_DEATH(
      {
        Logger::setOutput({});
        errno = ENOENT;
        LOG_SYSFATAL << "cannot go on";
      },
      "FATAL No such file or directory \\(errno=2\\) cannot go on");
}

}  // namespace
}  // namespace libnet
