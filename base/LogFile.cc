#include "base/LogFile.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/Logging.h"

namespace libnet {

namespace {

// Big enough that the per-line writes of a synchronous sink become one
// write(2) per 256 KB; AsyncLogging hands over whole staging blocks (256 KiB
// by default) or large parts of them, which mostly bypass it.
constexpr size_t kStdioBufferSize = 256 * 1024;
constexpr int64_t kSecondsPerDay = 24 * 60 * 60;

std::string hostName() {
  char buf[256];
  if (::gethostname(buf, sizeof buf) != 0) return "unknownhost";
  buf[sizeof buf - 1] = '\0';
  return buf;
}

int64_t dayOf(Timestamp t) {
  const int64_t s = t.secondsSinceEpoch();
  return s >= 0 ? s / kSecondsPerDay : (s - kSecondsPerDay + 1) / kSecondsPerDay;
}

}  // namespace

LogFile::LogFile(std::string dir, std::string basename)
    : LogFile(std::move(dir), std::move(basename), Options{}) {}

LogFile::LogFile(std::string dir, std::string basename, Options options)
    : dir_(dir.empty() ? "." : std::move(dir)),
      basename_(std::move(basename)),
      options_(std::move(options)),
      stdioBuffer_(std::make_unique_for_overwrite<char[]>(kStdioBufferSize)) {
  const Timestamp t = now();
  roll(t);
  lastFlush_ = t;
}

LogFile::~LogFile() { flush(); }

std::string LogFile::fileNameFor(std::string_view basename, Timestamp when) {
  const time_t seconds = static_cast<time_t>(when.secondsSinceEpoch());
  struct tm tm;
  ::gmtime_r(&seconds, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, ".%Y%m%d-%H%M%S.", &tm);
  std::string name(basename);
  name += stamp;
  name += hostName();
  name += '.';
  name += std::to_string(::getpid());
  name += ".log";
  return name;
}

void LogFile::append(std::string_view bytes) {
  const Timestamp t = now();
  // Rolling lazily, before a write, never leaves an empty file behind.
  if (dayOf(t) != day_ || written_ >= options_.rollSize ||
      (!file_ && t.secondsSinceEpoch() != lastOpenAttempt_)) {
    roll(t);
  }
  if (!file_) {
    dropped_ += bytes.size();
    return;
  }
  const size_t n = ::fwrite_unlocked(bytes.data(), 1, bytes.size(), file_.get());
  written_ += static_cast<int64_t>(n);
  if (n != bytes.size()) {
    dropped_ += bytes.size() - n;
    reportError("write", errno);
    // Clear the error so that the next append retries instead of failing
    // forever on a sticky stdio error flag.
    ::clearerr_unlocked(file_.get());
  }
  if (t - lastFlush_ >= options_.flushInterval) {
    flush();
    lastFlush_ = t;
  }
}

void LogFile::flush() {
  if (!file_) return;
  if (::fflush_unlocked(file_.get()) != 0) {
    reportError("flush", errno);
    ::clearerr_unlocked(file_.get());
  }
}

void LogFile::roll(Timestamp t) {
  const int64_t second = t.secondsSinceEpoch();
  lastOpenAttempt_ = second;
  if (file_) {
    flush();
    file_.reset();
  }
  std::string name = fileNameFor(basename_, t);
  if (second == lastOpenSecond_) {
    // Same second as the previous file: keep the names distinct so that a
    // size roll never reopens (and appends to) the file it just closed.
    name.insert(name.size() - 4, "." + std::to_string(++sameSecondCount_));
  } else {
    lastOpenSecond_ = second;
    sameSecondCount_ = 0;
  }
  path_ = dir_ + "/" + name;
  day_ = dayOf(t);
  written_ = 0;
  // "e": O_CLOEXEC, so children of the server do not inherit the log.
  file_.reset(std::fopen(path_.c_str(), "ae"));
  if (!file_) {
    openError_ = errno;
    reportError("open", openError_);
    return;
  }
  openError_ = 0;
  ++filesOpened_;
  std::setvbuf(file_.get(), stdioBuffer_.get(), _IOFBF, kStdioBufferSize);
}

void LogFile::reportError(const char* what, int err) {
  if (errorReported_) return;
  errorReported_ = true;
  // Straight to stderr, not LOG_*: the log may be what is failing.
  std::fprintf(stderr,
               "LogFile: %s of %s failed: %s; failed output is dropped and later writes are "
               "retried (reported once)\n",
               what, path_.c_str(), strerrorTl(err));
}

}  // namespace libnet
