#include "base/Logging.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

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

// Each thread keeps the start of its lines, "YYYYMMDD HH:MM:SS.uuuuuuZ tid ",
// formatted: the date and time change once a second and the tid never, so a
// line writes only its six microsecond digits into it.
constexpr size_t kMicrosAt = 18;  // after "YYYYMMDD HH:MM:SS."
constexpr size_t kTidAt = 26;     // after ".uuuuuuZ "
thread_local int64_t t_headSecond = -1;
thread_local pid_t t_headTid = 0;
thread_local size_t t_headLength = 0;
thread_local char t_head[48];

void refreshHead(int64_t seconds, pid_t tid) {
  if (seconds != t_headSecond) {
    t_headSecond = seconds;
    const time_t t = static_cast<time_t>(seconds);
    struct tm tm;
    ::gmtime_r(&t, &tm);
    char text[72];
    std::snprintf(text, sizeof text, "%4d%02d%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    std::memcpy(t_head, text, 17);
    t_head[17] = '.';
    t_head[24] = 'Z';
    t_head[25] = ' ';
  }
  if (tid != t_headTid || t_headLength == 0) {
    t_headTid = tid;
    auto [end, ec] = std::to_chars(t_head + kTidAt, t_head + sizeof t_head - 1, tid);
    (void)ec;
    *end++ = ' ';
    t_headLength = static_cast<size_t>(end - t_head);
  }
}

// Writes v (< 10^width) as exactly `width` digits.
void putDigits(char* out, int width, uint32_t v) {
  for (int i = width - 1; i >= 0; --i) {
    out[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

constexpr std::string_view kLevelNames[] = {"TRACE ", "DEBUG ", "INFO  ",
                                            "WARN  ", "ERROR ", "FATAL "};

}  // namespace

const char* strerrorTl(int savedErrno) {
  thread_local char buf[128];
  // GNU strerror_r returns a pointer that may or may not be buf.
  return ::strerror_r(savedErrno, buf, sizeof buf);
}

Logger::Logger(std::string_view path, int line, LogLevel level, bool withErrno)
    : Logger(BaseName{path.substr(detail::baseNameOffset(path))}, line, level, withErrno) {}

Logger::Logger(BaseName file, int line, LogLevel level, bool withErrno)
    : file_(file.name), line_(line), logLevel_(level) {
  const int savedErrno = errno;
  const int64_t us = Timestamp::now().microsSinceEpoch();
  const int64_t seconds = us / 1000000;
  const pid_t tid = CurrentThread::tid();
  if (seconds != t_headSecond || tid != t_headTid) [[unlikely]] {
    refreshHead(seconds, tid);
  }
  // By hand: snprintf here was a tenth of a log call's cost.
  putDigits(t_head + kMicrosAt, 6, static_cast<uint32_t>(us % 1000000));
  stream_ << std::string_view(t_head, t_headLength) << kLevelNames[static_cast<int>(level)];
  if (withErrno && savedErrno != 0) {
    stream_ << strerrorTl(savedErrno) << " (errno=" << savedErrno << ") ";
  }
}

Logger::~Logger() {
  // " - File.cc:123\n" by hand, for the same reason.
  char suffix[LogStream::kReserve];
  const std::string_view base = file_.substr(0, 60);
  size_t n = 0;
  suffix[n++] = ' ';
  suffix[n++] = '-';
  suffix[n++] = ' ';
  std::memcpy(suffix + n, base.data(), base.size());
  n += base.size();
  suffix[n++] = ':';
  auto [end, ec] = std::to_chars(suffix + n, suffix + sizeof suffix - 1, line_);
  (void)ec;
  *end++ = '\n';
  stream_.appendSuffix(std::string_view(suffix, static_cast<size_t>(end - suffix)));
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
