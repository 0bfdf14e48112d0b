#include "net/ListenFds.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace libnet {

namespace {

// A decimal number that fills the whole of `text`, or invalid_argument.
long parseNumber(const char* variable, std::string_view text) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0) {
    throw std::invalid_argument(std::string(variable) + " is not a number: '" + std::string(text) +
                                "'");
  }
  return value;
}

std::string getenvOrEmpty(const char* name) {
  const char* value = ::getenv(name);
  return value ? std::string(value) : std::string();
}

void unsetAll() {
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
}

int getIntOption(int fd, int level, int option, const char* what) {
  int value = 0;
  socklen_t len = sizeof value;
  if (::getsockopt(fd, level, option, &value, &len) < 0) {
    throw std::system_error(errno, std::system_category(),
                            "LISTEN_FDS: fd " + std::to_string(fd) + " " + what);
  }
  return value;
}

// Throws unless fd is a stream socket that listens.
void checkListening(int fd) {
  if (::fcntl(fd, F_GETFD) < 0) {
    throw std::system_error(errno, std::system_category(),
                            "LISTEN_FDS: fd " + std::to_string(fd) + " is not open");
  }
  if (getIntOption(fd, SOL_SOCKET, SO_TYPE, "SO_TYPE") != SOCK_STREAM) {
    throw std::system_error(EINVAL, std::system_category(),
                            "LISTEN_FDS: fd " + std::to_string(fd) + " is not a stream socket");
  }
  if (getIntOption(fd, SOL_SOCKET, SO_ACCEPTCONN, "SO_ACCEPTCONN") == 0) {
    throw std::system_error(EINVAL, std::system_category(),
                            "LISTEN_FDS: fd " + std::to_string(fd) + " is not listening");
  }
}

std::vector<std::string> splitNames(std::string_view names, size_t count) {
  std::vector<std::string> result;
  while (!names.empty() && result.size() < count) {
    const size_t colon = names.find(':');
    result.emplace_back(names.substr(0, colon));
    names = colon == std::string_view::npos ? std::string_view() : names.substr(colon + 1);
  }
  result.resize(count);
  return result;
}

}  // namespace

ListenFds takeListenFdsWithNames() {
  const std::string pid = getenvOrEmpty("LISTEN_PID");
  const std::string count = getenvOrEmpty("LISTEN_FDS");
  const std::string names = getenvOrEmpty("LISTEN_FDNAMES");
  unsetAll();
  if (pid.empty() || count.empty()) return {};
  if (parseNumber("LISTEN_PID", pid) != ::getpid()) return {};
  const long n = parseNumber("LISTEN_FDS", count);
  if (n > 4096) throw std::invalid_argument("LISTEN_FDS is out of range: " + count);
  // Checked, all of them, before any is owned: a bad one leaves the rest open
  // as they were instead of closing fds that are not ours.
  for (int fd = kListenFdsStart; fd < kListenFdsStart + n; ++fd) checkListening(fd);
  ListenFds result;
  for (int fd = kListenFdsStart; fd < kListenFdsStart + n; ++fd) {
    // Not to be passed on to children (a successor is given them explicitly).
    ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    result.fds.emplace_back(fd);
  }
  result.names = splitNames(names, result.fds.size());
  return result;
}

std::vector<UniqueFd> takeListenFds() { return std::move(takeListenFdsWithNames().fds); }

}  // namespace libnet
