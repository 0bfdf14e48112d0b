#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/AsyncLogging.h"
#include "base/CountDownLatch.h"
#include "base/LogFile.h"
#include "base/Logging.h"

namespace libnet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string makeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/asynclog.XXXXXX";
  char* dir = ::mkdtemp(pattern.data());
  EXPECT_NE(dir, nullptr);
  return pattern;
}

std::string readDir(const std::string& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  std::string all;
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    all += text.str();
  }
  return all;
}

uint32_t checksum(int thread, int seq) {
  uint32_t h = 2166136261u;
  for (int v : {thread, seq}) {
    for (int i = 0; i < 4; ++i) {
      h ^= static_cast<uint32_t>(v >> (8 * i)) & 0xff;
      h *= 16777619u;
    }
  }
  return h;
}

constexpr std::string_view kPattern =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz";

// "T03 S00001234 Cdeadbeef <pattern>\n": thread, per-thread sequence, a
// checksum of both and a fixed tail, so a torn or interleaved line shows.
std::string makeLine(int thread, int seq) {
  char head[48];
  const int n =
      std::snprintf(head, sizeof head, "T%02d S%08d C%08x ", thread, seq, checksum(thread, seq));
  std::string line(head, static_cast<size_t>(n));
  line += kPattern;
  line += '\n';
  return line;
}

struct Verdict {
  std::vector<int> perThread;  // lines seen per thread
  int badLines = 0;
  int outOfOrder = 0;
  int otherLines = 0;  // not made by makeLine (notices, LOG_* lines)
};

// Checks every test line in `text`; lines of other shapes are counted apart.
Verdict verify(std::string_view text, int threads) {
  Verdict v;
  v.perThread.assign(threads, 0);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      ++v.badLines;  // a line without its newline: torn
      break;
    }
    const std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    if (line.empty() || line[0] != 'T') {
      ++v.otherLines;
      continue;
    }
    int thread = -1, seq = -1;
    unsigned sum = 0;
    char tail[256] = {};
    if (std::sscanf(line.c_str(), "T%d S%d C%x %200s", &thread, &seq, &sum, tail) != 4 ||
        thread < 0 || thread >= threads || sum != checksum(thread, seq) || tail != kPattern) {
      ++v.badLines;
      continue;
    }
    if (seq != v.perThread[thread]) ++v.outOfOrder;
    v.perThread[thread] = seq + 1;
  }
  return v;
}

// Collects what the back end writes; any thread may read it afterwards.
class MemorySink {
 public:
  explicit MemorySink(bool yieldPerWrite = false) : yield_(yieldPerWrite) {}

  AsyncLogging::Sink sink() {
    return {[this](std::string_view bytes) {
              if (yield_) std::this_thread::yield();  // widen the mid-write window
              std::lock_guard lock(mutex_);
              text_ += bytes;
            },
            [this] {
              std::lock_guard lock(mutex_);
              ++flushes_;
            }};
  }
  std::string text() const {
    std::lock_guard lock(mutex_);
    return text_;
  }
  int flushes() const {
    std::lock_guard lock(mutex_);
    return flushes_;
  }

 private:
  const bool yield_;
  mutable std::mutex mutex_;
  std::string text_;
  int flushes_ = 0;
};

// Small blocks and room for every one of them: nothing is dropped, and a
// test's lines fill many blocks.
AsyncLogging::Options smallBlocks(std::chrono::milliseconds flushInterval) {
  AsyncLogging::Options options;
  options.bufferSize = 4096;
  options.maxQueuedBuffers = 100000;
  options.flushInterval = flushInterval;
  return options;
}

void logFromThreads(AsyncLogging* log, int threads, int linesPerThread) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      for (int i = 0; i < linesPerThread; ++i) log->append(makeLine(t, i));
    });
  }
  for (auto& w : workers) w.join();
}

void expectAllLines(const Verdict& v, int threads, int linesPerThread) {
  EXPECT_EQ(v.badLines, 0);
  EXPECT_EQ(v.outOfOrder, 0);
  for (int t = 0; t < threads; ++t) EXPECT_EQ(v.perThread[t], linesPerThread) << "thread " << t;
}

class AsyncLoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    savedLevel_ = Logger::level();
    Logger::setLevel(LogLevel::kInfo);
  }
  void TearDown() override {
    Logger::setOutput({});
    Logger::setFlush({});
    Logger::setLevel(savedLevel_);
  }

 private:
  LogLevel savedLevel_ = LogLevel::kInfo;
};

using AsyncLoggingDeathTest = AsyncLoggingTest;

TEST_F(AsyncLoggingTest, ManyThreadsIntoLogFileLoseNothingAndKeepOrder) {
  const std::string dir = makeTempDir();
  constexpr int kThreads = 4;
  constexpr int kLines = 25000;
  {
    AsyncLogging::Options options;
    options.bufferSize = 64 * 1024;
    options.maxQueuedBuffers = 100000;  // never drop here
    AsyncLogging log(AsyncLogging::fileSink(std::make_shared<LogFile>(dir, "many")), options);
    log.start();
    logFromThreads(&log, kThreads, kLines);
    log.stop();
    EXPECT_EQ(log.droppedBuffers(), 0u);
  }
  const Verdict v = verify(readDir(dir), kThreads);
  expectAllLines(v, kThreads, kLines);
  EXPECT_EQ(v.otherLines, 0);
}

TEST_F(AsyncLoggingTest, RollsBySizeThroughTheBackEndWithoutLoss) {
  const std::string dir = makeTempDir();
  constexpr int kThreads = 2;
  constexpr int kLines = 5000;
  {
    AsyncLogging::Options options;
    options.bufferSize = 8 * 1024;
    options.maxQueuedBuffers = 100000;
    LogFile::Options fileOptions;
    fileOptions.rollSize = 64 * 1024;
    auto file = std::make_shared<LogFile>(dir, "roll", fileOptions);
    AsyncLogging log(AsyncLogging::fileSink(file), options);
    log.start();
    logFromThreads(&log, kThreads, kLines);
    log.stop();
    EXPECT_GE(file->filesOpened(), 10);
  }
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir)) ++files;
  EXPECT_GE(files, 10u);
  // Files are read in name order, which is not necessarily write order, so
  // only completeness and integrity are checked here, not order.
  std::string all = readDir(dir);
  std::vector<std::vector<int>> seen(kThreads, std::vector<int>(kLines, 0));
  std::istringstream lines(all);
  std::string line;
  int bad = 0;
  while (std::getline(lines, line)) {
    int t = -1, s = -1;
    unsigned sum = 0;
    if (std::sscanf(line.c_str(), "T%d S%d C%x", &t, &s, &sum) != 3 || t < 0 || t >= kThreads ||
        s < 0 || s >= kLines || sum != checksum(t, s) || line + "\n" != makeLine(t, s)) {
      ++bad;
      continue;
    }
    ++seen[t][s];
  }
  EXPECT_EQ(bad, 0);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(std::count(seen[t].begin(), seen[t].end(), 1), kLines) << "thread " << t;
  }
}

// muduo's stop() could land while the writer was mid-write and lose the
// partly filled buffer. Many short runs, small buffers, writer made slow.
TEST_F(AsyncLoggingTest, StopNeverLosesTheTail) {
  constexpr int kIterations = 200;
  constexpr int kLines = 300;
  for (int iter = 0; iter < kIterations; ++iter) {
    const int threads = 2 + iter % 3;
    MemorySink memory(/*yieldPerWrite=*/true);
    AsyncLogging log(memory.sink(), smallBlocks(1ms));
    log.start();
    logFromThreads(&log, threads, kLines);
    log.stop();
    const Verdict v = verify(memory.text(), threads);
    ASSERT_EQ(v.badLines, 0) << "iteration " << iter;
    ASSERT_EQ(v.outOfOrder, 0) << "iteration " << iter;
    for (int t = 0; t < threads; ++t) {
      ASSERT_EQ(v.perThread[t], kLines) << "iteration " << iter << " thread " << t;
    }
  }
}

TEST_F(AsyncLoggingTest, StopIntoLogFileNeverLosesTheTail) {
  for (int iter = 0; iter < 20; ++iter) {
    const std::string dir = makeTempDir();
    {
      AsyncLogging::Options options;
      options.bufferSize = 4096;
      options.maxQueuedBuffers = 100000;
      AsyncLogging log(AsyncLogging::fileSink(std::make_shared<LogFile>(dir, "tail")), options);
      log.start();
      logFromThreads(&log, 3, 500);
    }  // the destructor stops and drains
    const Verdict v = verify(readDir(dir), 3);
    expectAllLines(v, 3, 500);
  }
}

// Front ends publish lines with no lock; a line published while stop() runs
// must be drained by stop() or by its own thread, never left in a block.
TEST_F(AsyncLoggingTest, LinesLoggedWhileStopRunsAreNeverLost) {
  constexpr int kThreads = 3;
  for (int iter = 0; iter < 30; ++iter) {
    MemorySink memory;
    AsyncLogging log(memory.sink(), smallBlocks(1ms));
    log.start();
    CountDownLatch started(kThreads);
    CountDownLatch finished(kThreads);
    CountDownLatch release(1);
    std::atomic<bool> done{false};
    std::vector<int> logged(kThreads, 0);
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      workers.emplace_back([&, t] {
        int i = 0;
        for (; i < 100; ++i) log.append(makeLine(t, i));
        started.countDown();
        // Logs across stop() and for a while after it returned.
        while (!done.load()) log.append(makeLine(t, i++));
        logged[t] = i;
        finished.countDown();
        // Alive until checked: a thread's exit hands its block over, which
        // would hide a line left in it.
        EXPECT_TRUE(release.waitFor(30s));
      });
    }
    ASSERT_TRUE(started.waitFor(30s));
    log.stop();
    done.store(true);
    const bool allFinished = finished.waitFor(30s);
    const Verdict v = verify(memory.text(), kThreads);
    release.countDown();
    for (auto& w : workers) w.join();
    ASSERT_TRUE(allFinished);
    ASSERT_EQ(v.badLines, 0) << "iteration " << iter;
    ASSERT_EQ(v.outOfOrder, 0) << "iteration " << iter;
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_EQ(v.perThread[t], logged[t]) << "iteration " << iter << " thread " << t;
    }
  }
}

TEST_F(AsyncLoggingTest, FlushWritesAPartlyFilledBlockInPlaceAndTheThreadKeepsFillingIt) {
  MemorySink memory;
  AsyncLogging::Options options;
  options.flushInterval = 1h;
  AsyncLogging log(memory.sink(), options);
  log.start();
  for (int i = 0; i < 10; ++i) log.append(makeLine(0, i));
  ASSERT_TRUE(log.flush());
  expectAllLines(verify(memory.text(), 1), 1, 10);
  for (int i = 10; i < 20; ++i) log.append(makeLine(0, i));
  ASSERT_TRUE(log.flush());
  // Each line once, in order, from the one block this thread ever had.
  expectAllLines(verify(memory.text(), 1), 1, 20);
  EXPECT_EQ(log.buffersAllocated(), 1u);
  log.stop();
  expectAllLines(verify(memory.text(), 1), 1, 20);
}

// A thread that exits hands its block over, and the next new thread reuses
// its slot: many short-lived threads do not pin a block each.
TEST_F(AsyncLoggingTest, ExitingThreadsHandOverTheirBlocks) {
  constexpr int kThreads = 40;
  constexpr int kLines = 5;
  MemorySink memory;
  AsyncLogging::Options options = smallBlocks(1h);
  options.threadBufferSize = 4096;
  AsyncLogging log(memory.sink(), options);
  log.start();
  for (int t = 0; t < kThreads; ++t) {
    std::thread([&, t] {
      for (int i = 0; i < kLines; ++i) log.append(makeLine(t, i));
    }).join();
  }
  ASSERT_TRUE(log.flush());
  expectAllLines(verify(memory.text(), kThreads), kThreads, kLines);
  // Written blocks are kept as spares up to a small number, the rest freed.
  EXPECT_LE(log.buffersAllocated(), 4u);
  log.stop();
}

// The thread outlives the instance it logged into: its exit must not touch it.
TEST_F(AsyncLoggingTest, ThreadExitingAfterTheInstanceIsGoneIsHarmless) {
  MemorySink memory;
  CountDownLatch logged(1);
  CountDownLatch destroyed(1);
  std::thread worker;
  {
    AsyncLogging log(memory.sink());
    log.start();
    worker = std::thread([&] {
      log.append(makeLine(0, 0));
      logged.countDown();
      EXPECT_TRUE(destroyed.waitFor(30s));
    });
    ASSERT_TRUE(logged.waitFor(30s));
  }
  destroyed.countDown();
  worker.join();
  expectAllLines(verify(memory.text(), 1), 1, 1);
}

TEST_F(AsyncLoggingTest, AppendAfterStopIsWrittenThrough) {
  MemorySink memory;
  AsyncLogging log(memory.sink());
  log.start();
  log.append(makeLine(0, 0));
  log.stop();
  log.append(makeLine(0, 1));
  const Verdict v = verify(memory.text(), 1);
  expectAllLines(v, 1, 2);
}

TEST_F(AsyncLoggingTest, FlushWritesEverythingQueuedBeforeReturning) {
  MemorySink memory;
  // A flush interval of an hour: only flush() can make the back end write.
  AsyncLogging log(memory.sink(), smallBlocks(1h));
  log.start();
  for (int i = 0; i < 100; ++i) log.append(makeLine(0, i));  // several buffers + a partial
  ASSERT_TRUE(log.flush());
  const Verdict v = verify(memory.text(), 1);
  expectAllLines(v, 1, 100);
  EXPECT_GE(memory.flushes(), 1);
  log.stop();
}

TEST_F(AsyncLoggingTest, OverloadDropsWholeBuffersWithBoundedMemoryAndANotice) {
  constexpr size_t kCap = 4;
  constexpr int kLines = 4000;  // about 100 buffers of 4 KB
  CountDownLatch gate(1);
  std::mutex mutex;
  std::string written;
  // The back end blocks in its first write until the front end is done: a
  // writer that is hopelessly behind.
  AsyncLogging::Sink slow{[&](std::string_view bytes) {
                            (void)gate.waitFor(30s);
                            std::lock_guard lock(mutex);
                            written += bytes;
                          },
                          [] {}};
  AsyncLogging::Options options;
  options.bufferSize = 4096;
  options.maxQueuedBuffers = kCap;
  options.flushInterval = 1h;
  AsyncLogging log(slow, options);
  log.start();
  for (int i = 0; i < kLines; ++i) log.append(makeLine(0, i));
  EXPECT_LE(log.peakBuffersAllocated(), kCap + 2);
  gate.countDown();
  log.stop();

  EXPECT_LE(log.peakBuffersAllocated(), kCap + 2);
  EXPECT_GT(log.droppedBuffers(), 0u);
  std::lock_guard lock(mutex);
  // Sum the counts of every notice; they must add up to what was dropped.
  uint64_t noticed = 0, noticedLines = 0;
  int notices = 0, lines = 0, bad = 0;
  std::istringstream in(written);
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find("AsyncLogging dropped ");
    if (at != std::string::npos) {
      unsigned long long buffers = 0, dropped = 0;
      ASSERT_EQ(std::sscanf(line.c_str() + at, "AsyncLogging dropped %llu buffers (%llu lines",
                            &buffers, &dropped),
                2)
          << line;
      noticed += buffers;
      noticedLines += dropped;
      ++notices;
      continue;
    }
    int t = -1, s = -1;
    if (std::sscanf(line.c_str(), "T%d S%d", &t, &s) != 2 || line + "\n" != makeLine(t, s)) {
      ++bad;
    }
    ++lines;
  }
  EXPECT_GE(notices, 1);
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(noticed, log.droppedBuffers());
  EXPECT_EQ(noticedLines, log.droppedLines());
  EXPECT_EQ(static_cast<uint64_t>(lines) + log.droppedLines(), static_cast<uint64_t>(kLines));
}

TEST_F(AsyncLoggingTest, LogMacrosGoThroughItOnceInstalled) {
  MemorySink memory;
  {
    AsyncLogging log(memory.sink());
    log.start();
    log.installAsDefaultSink();
    std::vector<std::thread> workers;
    for (int t = 0; t < 3; ++t) {
      workers.emplace_back([t] {
        for (int i = 0; i < 1000; ++i) LOG_INFO << "front end " << t << ' ' << i;
      });
    }
    for (auto& w : workers) w.join();
  }  // the destructor drains and uninstalls
  const std::string text = memory.text();
  std::istringstream in(text);
  std::string line;
  std::vector<int> next(3, 0);
  int lines = 0;
  while (std::getline(in, line)) {
    const size_t at = line.find("front end ");
    ASSERT_NE(at, std::string::npos) << line;
    int t = -1, i = -1;
    ASSERT_EQ(std::sscanf(line.c_str() + at, "front end %d %d", &t, &i), 2);
    ASSERT_TRUE(t >= 0 && t < 3);
    EXPECT_EQ(i, next[t]++);
    EXPECT_NE(line.find("AsyncLoggingTest.cc:"), std::string::npos);
    ++lines;
  }
  EXPECT_EQ(lines, 3000);
}

TEST_F(AsyncLoggingDeathTest, FatalLineReachesTheFileBeforeAbort) {
  // A fixed name, not mkdtemp: the "threadsafe" death test re-runs this body
  // in the child up to EXPECT_DEATH, and both must agree on the directory.
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base ? base : "/tmp") + "/async_fatal";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_DEATH(
      {
        AsyncLogging log(AsyncLogging::fileSink(std::make_shared<LogFile>(dir, "fatal")));
        log.start();
        log.installAsDefaultSink();
        for (int i = 0; i < 1000; ++i) LOG_INFO << "before fatal " << i;
        LOG_FATAL << "the fatal line";
      },
      "");
  const std::string text = readDir(dir);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_NE(text.find("before fatal " + std::to_string(i) + " "), std::string::npos) << i;
  }
  EXPECT_NE(text.find("FATAL the fatal line"), std::string::npos) << text.substr(0, 300);
}

}  // namespace
}  // namespace libnet
