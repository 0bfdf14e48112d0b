// takeListenFds(): sd_listen_fds(3) semantics. Each case runs in a forked
// child, which may put what it likes on fds 3, 4, ... (the test process
// itself holds fds there) and set its own environment; the child reports
// through its exit status, 0 for success, else the number of the check that
// failed.
#include "net/ListenFds.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "gtest/gtest.h"

namespace libnet {
namespace {

// A TCP socket on 127.0.0.1, an ephemeral port, listening; -1 on failure.
int listeningSocket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0 ||
      ::listen(fd, 16) < 0) {
    return -1;
  }
  return fd;
}

// Runs body in a forked child (bounded: killed after 10 s): its exit status.
int inChild(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int code = 100;
    try {
      code = body();
    } catch (...) {
      code = 101;
    }
    ::_exit(code);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

// Moves `fd` to `target` (without FD_CLOEXEC, as an exec would leave it). By
// way of an fd above the targets: a new socket may well be on fd 3 itself,
// or on a target that a later placeAt() would overwrite.
bool placeAt(int fd, int target) {
  if (fd < 0) return false;
  const int high = ::fcntl(fd, F_DUPFD, 100);
  ::close(fd);
  const bool placed = high >= 0 && ::dup2(high, target) == target;
  ::close(high);
  return placed;
}

bool variablesGone() {
  return !::getenv("LISTEN_PID") && !::getenv("LISTEN_FDS") && !::getenv("LISTEN_FDNAMES");
}

void setForThisProcess(const std::string& count, const char* names = nullptr) {
  ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
  ::setenv("LISTEN_FDS", count.c_str(), 1);
  if (names) ::setenv("LISTEN_FDNAMES", names, 1);
}

TEST(ListenFdsTest, NoneWithoutTheVariables) {
  EXPECT_EQ(inChild([] {
              ::unsetenv("LISTEN_PID");
              ::unsetenv("LISTEN_FDS");
              return takeListenFds().empty() ? 0 : 1;
            }),
            0);
}

TEST(ListenFdsTest, TakesListeningSocketsWithNames) {
  EXPECT_EQ(inChild([] {
              if (!placeAt(listeningSocket(), 3) || !placeAt(listeningSocket(), 4)) return 1;
              setForThisProcess("2", "web:admin");
              const ListenFds taken = takeListenFdsWithNames();
              if (taken.fds.size() != 2) return 2;
              if (taken.fds[0].get() != 3 || taken.fds[1].get() != 4) return 3;
              if (taken.names != std::vector<std::string>{"web", "admin"}) return 4;
              for (const UniqueFd& fd : taken.fds) {
                if ((::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC) == 0) return 5;
              }
              return variablesGone() ? 0 : 6;
            }),
            0);
}

TEST(ListenFdsTest, NamesMissingAreEmpty) {
  EXPECT_EQ(inChild([] {
              if (!placeAt(listeningSocket(), 3) || !placeAt(listeningSocket(), 4)) return 1;
              setForThisProcess("2");
              const ListenFds taken = takeListenFdsWithNames();
              if (taken.fds.size() != 2) return 2;
              return taken.names == std::vector<std::string>{"", ""} ? 0 : 3;
            }),
            0);
}

TEST(ListenFdsTest, AnotherProcesssVariablesAreIgnoredAndRemoved) {
  EXPECT_EQ(inChild([] {
              if (!placeAt(listeningSocket(), 3)) return 1;
              ::setenv("LISTEN_PID", std::to_string(::getpid() + 1).c_str(), 1);
              ::setenv("LISTEN_FDS", "1", 1);
              if (!takeListenFds().empty()) return 2;
              if (!variablesGone()) return 3;
              // Not ours: left open, and not made close-on-exec.
              return (::fcntl(3, F_GETFD) & FD_CLOEXEC) == 0 ? 0 : 4;
            }),
            0);
}

TEST(ListenFdsTest, ASocketThatDoesNotListenIsRefused) {
  EXPECT_EQ(inChild([] {
              int pair[2];
              if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) < 0) return 1;
              const int pairEnd = ::fcntl(pair[0], F_DUPFD, 100);
              if (!placeAt(listeningSocket(), 3) || !placeAt(pairEnd, 4)) return 1;
              setForThisProcess("2");
              try {
                (void)takeListenFds();
                return 2;
              } catch (const std::system_error& e) {
                if (std::string(e.what()).find("fd 4 is not listening") == std::string::npos) {
                  return 3;
                }
              }
              // Nothing taken: both are still open.
              return ::fcntl(3, F_GETFD) >= 0 && ::fcntl(4, F_GETFD) >= 0 ? 0 : 4;
            }),
            0);
}

TEST(ListenFdsTest, ADatagramSocketIsRefused) {
  EXPECT_EQ(inChild([] {
              if (!placeAt(::socket(AF_INET, SOCK_DGRAM, 0), 3)) return 1;
              setForThisProcess("1");
              try {
                (void)takeListenFds();
                return 2;
              } catch (const std::system_error& e) {
                const bool named =
                    std::string(e.what()).find("not a stream socket") != std::string::npos;
                return named ? 0 : 3;
              }
            }),
            0);
}

TEST(ListenFdsTest, AFileIsRefused) {
  EXPECT_EQ(inChild([] {
              if (!placeAt(::open("/dev/null", O_RDONLY), 3)) return 1;
              setForThisProcess("1");
              try {
                (void)takeListenFds();
                return 2;
              } catch (const std::system_error& e) {
                return e.code().value() == ENOTSOCK ? 0 : 3;
              }
            }),
            0);
}

TEST(ListenFdsTest, AClosedFdIsRefused) {
  EXPECT_EQ(inChild([] {
              ::close(3);
              setForThisProcess("1");
              try {
                (void)takeListenFds();
                return 2;
              } catch (const std::system_error& e) {
                return e.code().value() == EBADF ? 0 : 3;
              }
            }),
            0);
}

TEST(ListenFdsTest, ACountThatIsNotANumberIsRefused) {
  EXPECT_EQ(inChild([] {
              setForThisProcess("two");
              try {
                (void)takeListenFds();
                return 2;
              } catch (const std::invalid_argument&) {
                return variablesGone() ? 0 : 3;
              }
            }),
            0);
}

}  // namespace
}  // namespace libnet
