#include "base/Logging.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "base/CurrentThread.h"
#include "base/Timestamp.h"

namespace libnet {

constinit std::atomic<int> Logger::level_{static_cast<int>(LogLevel::kInfo)};

namespace {

void defaultOutput(std::string_view line) {
  // One fwrite per line: stdio's own lock keeps lines from interleaving.
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void defaultFlush() { std::fflush(stderr); }

// Replaced only before concurrent logging starts (see Logging.h).
Logger::OutputFunc g_output = defaultOutput;
Logger::FlushFunc g_flush = defaultFlush;

// Reads LIBNET_LOG_LEVEL once at start-up.
struct LevelFromEnv {
  LevelFromEnv() {
    if (const char* env = std::getenv("LIBNET_LOG_LEVEL")) {
      if (auto level = Logger::parseLevel(env)) Logger::setLevel(*level);
    }
  }
} g_levelFromEnv;

// The "YYYYMMDD HH:MM:SS" part changes once a second; each thread caches it.
thread_local int64_t t_lastSecond = -1;
thread_local char t_timeText[72];

constexpr std::string_view kLevelNames[] = {"TRACE ", "DEBUG ", "INFO  ",
                                            "WARN  ", "ERROR ", "FATAL "};

std::string_view baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

const char* strerrorTl(int savedErrno) {
  thread_local char buf[128];
  // GNU strerror_r returns a pointer that may or may not be buf.
  return ::strerror_r(savedErrno, buf, sizeof buf);
}

Logger::Logger(const char* file, int line, LogLevel level, bool withErrno)
    : file_(file), line_(line), logLevel_(level) {
  const int savedErrno = errno;
  const Timestamp now = Timestamp::now();
  const int64_t us = now.microsSinceEpoch();
  const int64_t seconds = us / 1000000;
  if (seconds != t_lastSecond) {
    t_lastSecond = seconds;
    const time_t t = static_cast<time_t>(seconds);
    struct tm tm;
    ::gmtime_r(&t, &tm);
    std::snprintf(t_timeText, sizeof t_timeText, "%4d%02d%02d %02d:%02d:%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  }
  // ".uuuuuuZ " by hand: snprintf here was a tenth of a log call's cost.
  char micros[10] = {'.', '0', '0', '0', '0', '0', '0', 'Z', ' ', '\0'};
  for (int digit = 6, value = static_cast<int>(us % 1000000); value > 0; value /= 10) {
    micros[digit--] = static_cast<char>('0' + value % 10);
  }
  stream_ << std::string_view(t_timeText, 17) << micros << CurrentThread::tid() << ' '
          << kLevelNames[static_cast<int>(level)];
  if (withErrno && savedErrno != 0) {
    stream_ << strerrorTl(savedErrno) << " (errno=" << savedErrno << ") ";
  }
}

Logger::~Logger() {
  char suffix[LogStream::kReserve];
  const std::string_view base = baseName(file_);
  const int n =
      std::snprintf(suffix, sizeof suffix, " - %.*s:%d\n",
                    static_cast<int>(std::min<size_t>(base.size(), 60)), base.data(), line_);
  stream_.appendSuffix(std::string_view(suffix, static_cast<size_t>(n)));
  g_output(stream_.view());
  if (logLevel_ == LogLevel::kFatal) {
    g_flush();
    std::abort();
  }
}

std::optional<LogLevel> Logger::parseLevel(std::string_view name) {
  static constexpr std::string_view kNames[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
  for (int i = 0; i < 6; ++i) {
    const std::string_view want = kNames[i];
    if (want.size() != name.size()) continue;
    bool same = true;
    for (size_t j = 0; j < want.size() && same; ++j) {
      const char c = name[j];
      same = (c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c) == want[j];
    }
    if (same) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

std::string_view Logger::levelName(LogLevel level) {
  std::string_view name = kLevelNames[static_cast<int>(level)];
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  return name;
}

void Logger::setOutput(OutputFunc out) { g_output = out ? std::move(out) : defaultOutput; }
void Logger::setFlush(FlushFunc flush) { g_flush = flush ? std::move(flush) : defaultFlush; }
void Logger::flush() { g_flush(); }

}  // namespace libnet
