#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "base/LogFile.h"
#include "tests/base/StderrCapture.h"

namespace libnet {
namespace {

namespace fs = std::filesystem;

std::string makeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/logfile.XXXXXX";
  char* dir = ::mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr);
  return pattern;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<fs::path> filesIn(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// A 100-byte line carrying its sequence number.
std::string numberedLine(int i) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "line %06d ", i);
  std::string line = buf;
  line.resize(99, 'x');
  line += '\n';
  return line;
}

using test::StderrCapture;

size_t countOf(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++count;
  }
  return count;
}

TEST(LogFileTest, FileNameHasTimeHostAndPid) {
  const std::string name = LogFile::fileNameFor("app", Timestamp::fromUnixSeconds(1700000000));
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(app\.20231114-221320\..+\.[0-9]+\.log)")))
      << name;
  EXPECT_NE(name.find("." + std::to_string(::getpid()) + ".log"), std::string::npos);
}

TEST(LogFileTest, RollsBySizeWithNothingLostAcrossTheBoundary) {
  const std::string dir = makeTempDir();
  constexpr int kLines = 1000;
  constexpr int64_t kRollSize = 10000;
  int files = 0;
  {
    LogFile::Options options;
    options.rollSize = kRollSize;
    // A frozen clock: every roll lands in the same second, so names must
    // still be distinct.
    options.clock = [] { return Timestamp::fromUnixSeconds(1700000000); };
    LogFile file(dir, "size", options);
    for (int i = 0; i < kLines; ++i) file.append(numberedLine(i));
    files = file.filesOpened();
  }
  const std::vector<fs::path> paths = filesIn(dir);
  ASSERT_EQ(static_cast<int>(paths.size()), files);
  EXPECT_EQ(files, kLines * 100 / kRollSize);

  std::vector<int> seen(kLines, 0);
  for (const fs::path& path : paths) {
    const std::string text = readFile(path);
    ASSERT_FALSE(text.empty()) << path;
    EXPECT_LE(static_cast<int64_t>(text.size()), kRollSize + 100) << path;
    ASSERT_EQ(text.back(), '\n') << path;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      int n = -1;
      ASSERT_EQ(std::sscanf(line.c_str(), "line %d", &n), 1) << line;
      ASSERT_TRUE(n >= 0 && n < kLines);
      EXPECT_EQ(line + "\n", numberedLine(n));
      ++seen[n];
    }
  }
  for (int i = 0; i < kLines; ++i) EXPECT_EQ(seen[i], 1) << "line " << i;
}

TEST(LogFileTest, RollsAtTheStartOfEachUtcDay) {
  const std::string dir = makeTempDir();
  // 2024-01-01 23:59:58 UTC.
  const Timestamp beforeMidnight = Timestamp::fromUnixSeconds(1704153598);
  const Timestamp afterMidnight = Timestamp::fromUnixSeconds(1704153601);
  Timestamp now = beforeMidnight;
  {
    LogFile::Options options;
    options.clock = [&now] { return now; };
    LogFile file(dir, "day", options);
    file.append("first day 1\n");
    now = beforeMidnight + std::chrono::seconds(1);
    file.append("first day 2\n");
    now = afterMidnight;
    file.append("second day\n");
    EXPECT_EQ(file.filesOpened(), 2);
  }
  ASSERT_EQ(filesIn(dir).size(), 2u);
  EXPECT_EQ(readFile(fs::path(dir) / LogFile::fileNameFor("day", beforeMidnight)),
            "first day 1\nfirst day 2\n");
  const std::string second = LogFile::fileNameFor("day", afterMidnight);
  EXPECT_NE(second.find(".20240102-000001."), std::string::npos) << second;
  EXPECT_EQ(readFile(fs::path(dir) / second), "second day\n");
}

TEST(LogFileTest, FlushesOnTheInterval) {
  const std::string dir = makeTempDir();
  Timestamp now = Timestamp::fromUnixSeconds(1700000000);
  LogFile::Options options;
  options.clock = [&now] { return now; };
  options.flushInterval = std::chrono::seconds(3);
  LogFile file(dir, "flush", options);
  file.append("buffered\n");
  EXPECT_EQ(readFile(file.currentPath()), "");
  now = now + std::chrono::seconds(3);
  file.append("flushed\n");
  EXPECT_EQ(readFile(file.currentPath()), "buffered\nflushed\n");
}

TEST(LogFileTest, WriteErrorIsReportedOnceAndDoesNotCrash) {
  const std::string dir = makeTempDir();
  const Timestamp when = Timestamp::fromUnixSeconds(1700000000);
  // The file LogFile will open is /dev/full: every write fails with ENOSPC.
  fs::create_symlink("/dev/full", fs::path(dir) / LogFile::fileNameFor("full", when));
  LogFile::Options options;
  options.clock = [when] { return when; };
  StderrCapture capture;
  {
    LogFile file(dir, "full", options);
    const std::string big(512 * 1024, 'x');
    file.append(big);
    file.append(big);
    file.flush();
    file.append("more\n");
    file.flush();
    EXPECT_GT(file.droppedBytes(), 0u);
  }
  const std::string err = capture.finish();
  EXPECT_EQ(countOf(err, "LogFile:"), 1u) << err;
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
}

TEST(LogFileTest, MissingDirectoryIsReportedOnceAndOutputDropped) {
  const std::string dir = makeTempDir() + "/does/not/exist";
  StderrCapture capture;
  {
    LogFile file(dir, "gone");
    file.append("a\n");
    file.append("b\n");
    file.flush();
    EXPECT_EQ(file.droppedBytes(), 4u);
    EXPECT_EQ(file.filesOpened(), 0);
  }
  const std::string err = capture.finish();
  EXPECT_EQ(countOf(err, "LogFile:"), 1u) << err;
  EXPECT_NE(err.find("No such file or directory"), std::string::npos) << err;
}

}  // namespace
}  // namespace libnet
