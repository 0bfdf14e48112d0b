// Helpers for tests that run programs in child processes: spawn one with a
// given environment and capture its output (bounded: killed after a
// timeout), and find a helper binary in the test's runfiles.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/UniqueFd.h"

extern char** environ;

namespace libnet::test {

constexpr auto kChildTimeout = std::chrono::seconds(20);

struct ChildResult {
  bool started = false;
  bool timedOut = false;
  int exitCode = -1;  // -1 unless it exited normally
  std::string out;
  std::string err;

  std::string describe() const {
    std::ostringstream s;
    s << "exit " << exitCode << (timedOut ? " (timed out)" : "") << "\n--- stdout ---\n"
      << out << "--- stderr ---\n"
      << err;
    return s.str();
  }
};

// Runs argv[0] (an absolute path) with `env`, capturing stdout and stderr.
// Bounded: a child still running after `timeout` is killed.
inline ChildResult runChild(const std::vector<std::string>& args,
                            const std::vector<std::string>& env,
                            std::chrono::milliseconds timeout = kChildTimeout) {
  ChildResult result;
  int outPipe[2];
  int errPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0) return result;
  if (::pipe2(errPipe, O_CLOEXEC) != 0) {
    ::close(outPipe[0]);
    ::close(outPipe[1]);
    return result;
  }
  UniqueFd outRead(outPipe[0]);
  UniqueFd outWrite(outPipe[1]);
  UniqueFd errRead(errPipe[0]);
  UniqueFd errWrite(errPipe[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, outWrite.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errWrite.get(), STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  outWrite.reset();
  errWrite.reset();
  if (rc != 0) {
    result.err = std::string("posix_spawn ") + args[0] + ": " + std::strerror(rc);
    return result;
  }
  result.started = true;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remainingMs = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  };
  while (outRead || errRead) {
    pollfd fds[2] = {{outRead.get(), POLLIN, 0}, {errRead.get(), POLLIN, 0}};
    const int n = ::poll(fds, 2, remainingMs());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      result.timedOut = true;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[4096];
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        (i == 0 ? outRead : errRead).reset();
      }
    }
  }
  int status = 0;
  pid_t waited = 0;
  while ((waited = ::waitpid(pid, &status, WNOHANG)) == 0 && !result.timedOut) {
    if (remainingMs() == 0) {
      result.timedOut = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (waited == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  } else if (waited < 0) {
    return result;
  }
  if (!result.timedOut && WIFEXITED(status)) result.exitCode = WEXITSTATUS(status);
  return result;
}

// This process's environment, as runChild() takes it.
inline std::vector<std::string> currentEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  return env;
}

// A helper binary of `package` (tests/net by default), from the test's
// runfiles (or next to this binary when the test is run by hand); empty if
// there is none.
inline std::string testBinary(std::string_view name, std::string_view package = "tests/net") {
  namespace fs = std::filesystem;
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    const fs::path p = fs::path(srcdir) / "libnet" / package / name;
    if (fs::exists(p)) return p.string();
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path p = self.parent_path() / name;
    if (fs::exists(p)) return p.string();
  }
  return {};
}

}  // namespace libnet::test
