// LogFile: the file the AsyncLogging back end (or a synchronous sink) writes
// to. Files are named <dir>/<basename>.<YYYYmmdd-HHMMSS>.<host>.<pid>.log (UTC
// time of opening; a second file opened within the same second gets a ".N"
// before ".log"). A new file is started when the current one reaches rollSize
// bytes and at the first append of each UTC day; the stdio buffer is flushed
// every flushInterval (and by flush()).
//
// The clock is injectable so tests can cross midnight without waiting.
//
// Write errors (disk full, directory gone, cannot create the file) are
// reported on stderr once per LogFile and never abort: the failed bytes are
// dropped and counted (droppedBytes()), and later appends are retried, so
// logging resumes by itself when the disk has room again; an unopenable file
// is retried at the next roll check (every append, at most once a second).
//
// Not thread-safe: one thread at a time (AsyncLogging guarantees that), which
// is also why it uses fwrite_unlocked.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/Timestamp.h"

namespace libnet {

class LogFile {
 public:
  using Clock = std::function<Timestamp()>;

  struct Options {
    int64_t rollSize = 1024 * 1024 * 1024;
    std::chrono::seconds flushInterval{3};
    Clock clock;  // empty: Timestamp::now
  };

  LogFile(std::string dir, std::string basename);
  LogFile(std::string dir, std::string basename, Options options);
  ~LogFile();
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  void append(std::string_view bytes);
  void flush();

  // The file name (without directory) that a file opened at `when` gets.
  [[nodiscard]] static std::string fileNameFor(std::string_view basename, Timestamp when);

  [[nodiscard]] const std::string& currentPath() const { return path_; }
  [[nodiscard]] uint64_t droppedBytes() const { return dropped_; }
  [[nodiscard]] int filesOpened() const { return filesOpened_; }
  // errno of the last attempt to open a file if it failed, else 0: a program
  // given a log directory it cannot write can refuse to start.
  [[nodiscard]] int openError() const { return openError_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };

  Timestamp now() const { return options_.clock ? options_.clock() : Timestamp::now(); }
  void roll(Timestamp now);
  void reportError(const char* what, int err);

  const std::string dir_;
  const std::string basename_;
  const Options options_;
  // Declared before file_ so that it outlives the FILE that uses it.
  std::unique_ptr<char[]> stdioBuffer_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  std::string path_;
  int64_t written_ = 0;  // bytes in the current file
  uint64_t dropped_ = 0;
  int64_t day_ = -1;             // UTC day of the current file
  int64_t lastOpenSecond_ = -1;  // to keep names unique within a second
  int sameSecondCount_ = 0;
  int64_t lastOpenAttempt_ = -1;
  Timestamp lastFlush_;
  int filesOpened_ = 0;
  int openError_ = 0;
  bool errorReported_ = false;
};

}  // namespace libnet
