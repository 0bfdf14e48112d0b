// Logging front end: LOG_INFO << "x=" << x; builds one line in a stack buffer
// (LogStream, no heap allocation) and hands it to the output sink when the
// statement ends.
//
// - The level is process-wide, set with Logger::setLevel() at run time or from
//   the LIBNET_LOG_LEVEL environment variable (TRACE, DEBUG, INFO, WARN, ERROR,
//   FATAL) read at start-up. Statements below the level cost one relaxed
//   atomic load and build nothing.
// - The sink is a function the application can replace (Logger::setOutput),
//   e.g. to write through AsyncLogging; the default writes to stderr. Replace
//   the sink before other threads start logging: calls into the sink are not
//   synchronised with its replacement.
// - LOG_SYSERR / LOG_SYSFATAL add strerror(errno). LOG_FATAL flushes the sink
//   and aborts.
//
// Any thread may log; the sink must be thread-safe (the default is).
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string_view>
#include <type_traits>

#include "base/LogStream.h"

namespace libnet {

namespace detail {
// Where the base name starts in a path; the LOG_ macros evaluate it at compile
// time, so a log call does not search __FILE__ for its last '/'.
constexpr size_t baseNameOffset(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? 0 : slash + 1;
}
}  // namespace detail

enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kFatal };

class Logger {
 public:
  using OutputFunc = std::function<void(std::string_view line)>;
  using FlushFunc = std::function<void()>;

  // A source file's base name, already cut out of the path (the LOG_ macros
  // do that at compile time).
  struct BaseName {
    std::string_view name;
  };

  Logger(BaseName file, int line, LogLevel level, bool withErrno = false);
  // `path` is cut to its base name here.
  Logger(std::string_view path, int line, LogLevel level, bool withErrno = false);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  LogStream& stream() { return stream_; }

  static LogLevel level() { return static_cast<LogLevel>(level_.load(std::memory_order_relaxed)); }
  static void setLevel(LogLevel level) {
    level_.store(static_cast<int>(level), std::memory_order_relaxed);
  }
  // "INFO", "warn", ... (case-insensitive); nullopt for anything else.
  static std::optional<LogLevel> parseLevel(std::string_view name);
  static std::string_view levelName(LogLevel level);

  // An empty function restores the default (stderr).
  static void setOutput(OutputFunc out);
  static void setFlush(FlushFunc flush);
  static void flush();

 private:
  static constinit std::atomic<int> level_;

  LogStream stream_;
  std::string_view file_;
  int line_;
  LogLevel logLevel_;
};

// Turns the stream expression into void for the LOG_ macros' conditional.
struct LogVoidify {
  void operator&(LogStream&) {}
};

// strerror_r wrapper that always returns a readable message.
const char* strerrorTl(int savedErrno);

}  // namespace libnet

// `cond ? (void)0 : voidify & stream << ...`: the whole statement is one
// expression, so `if (x) LOG_INFO << y; else ...` binds as written, and when
// the level filters it out nothing after LOG_xxx is evaluated. `&` binds
// looser than `<<`, so it applies to the finished stream.
#define LIBNET_LOG_FILE                                                         \
  (::libnet::Logger::BaseName{::std::string_view(__FILE__).substr(              \
      ::std::integral_constant<::std::size_t, ::libnet::detail::baseNameOffset( \
                                                  ::std::string_view(__FILE__))>::value)})
#define LIBNET_LOG_AT(lvl, withErrno)                                                       \
  !(::libnet::Logger::level() <= ::libnet::LogLevel::lvl)                                   \
      ? (void)0                                                                             \
      : ::libnet::LogVoidify() &                                                            \
            ::libnet::Logger(LIBNET_LOG_FILE, __LINE__, ::libnet::LogLevel::lvl, withErrno) \
                .stream()
#define LIBNET_LOG_IF(lvl) LIBNET_LOG_AT(lvl, false)

#define LOG_TRACE LIBNET_LOG_IF(kTrace)
#define LOG_DEBUG LIBNET_LOG_IF(kDebug)
#define LOG_INFO LIBNET_LOG_IF(kInfo)
#define LOG_WARN LIBNET_LOG_IF(kWarn)
#define LOG_ERROR LIBNET_LOG_IF(kError)
#define LOG_FATAL ::libnet::Logger(LIBNET_LOG_FILE, __LINE__, ::libnet::LogLevel::kFatal).stream()
#define LOG_SYSERR LIBNET_LOG_AT(kError, true)
#define LOG_SYSFATAL \
  ::libnet::Logger(LIBNET_LOG_FILE, __LINE__, ::libnet::LogLevel::kFatal, true).stream()
