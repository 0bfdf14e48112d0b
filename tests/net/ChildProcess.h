// Helpers for tests that run programs in child processes: spawn one with a
// given environment and capture its output (bounded: killed after a
// timeout), run a server as one while the test talks to it, and find a
// helper binary in the test's runfiles.
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
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
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

// Spawns args[0] (an absolute path) with `envp`, its stdin `in` (/dev/null
// if negative), its stdout `out` and its stderr `err`: the child's pid, or
// -1 with `why` saying why not.
inline pid_t spawnChild(const std::vector<std::string>& args, char* const* envp, int in, int out,
                        int err, std::string* why) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (in < 0) {
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
  }
  posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err, STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    *why = "posix_spawn " + args[0] + ": " + std::strerror(rc);
    return -1;
  }
  return pid;
}

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

  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = spawnChild(args, envp.data(), -1, outWrite.get(), errWrite.get(), &result.err);
  outWrite.reset();
  errWrite.reset();
  if (pid < 0) return result;
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

// A child process a test talks to while it runs (a server): started by
// start(), killed and waited for by stop() or when the object goes. Its
// stdin is a pipe held open until then (a child that reads it ends with the
// test); its stdout and stderr share one pipe, read only by waitFor().
class ServerChild {
 public:
  ServerChild() = default;
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;
  ~ServerChild() { stop(); }

  // Runs args[0] (an absolute path) with this process's environment; false
  // (with output() saying why) if it could not.
  bool start(const std::vector<std::string>& args) {
    stop();
    output_.clear();
    int in[2];
    int out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return fail("pipe2 failed");
    UniqueFd childIn(in[0]);
    inFd_.reset(in[1]);
    if (::pipe2(out, O_CLOEXEC) != 0) return fail("pipe2 failed");
    UniqueFd childOut(out[1]);
    outFd_.reset(out[0]);
    pid_ = spawnChild(args, environ, childIn.get(), childOut.get(), childOut.get(), &output_);
    return pid_ > 0;
  }

  // Reads the child's output until it holds `marker`; false if it ends or
  // `timeout` passes first.
  bool waitFor(const std::string& marker,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return readUntil([&] { return output_.find(marker) != std::string::npos; }, timeout);
  }

  // Reads the child's output until it holds the "port N" line the scripted
  // servers print once bound (a line of its own: stderr shares the pipe);
  // N, or 0 if the child ends or `timeout` passes first.
  uint16_t waitForPort(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    return readUntil([&] { return announcedPort() != 0; }, timeout) ? announcedPort() : 0;
  }

  // The N of a whole "port N" line read so far, or 0.
  [[nodiscard]] uint16_t announcedPort() const {
    for (size_t at = 0; at < output_.size();) {
      const size_t lf = output_.find('\n', at);
      if (lf == std::string::npos) break;
      const std::string_view line(output_.data() + at, lf - at);
      if (line.size() > 5 && line.substr(0, 5) == "port ") {
        return static_cast<uint16_t>(
            std::strtoul(std::string(line.substr(5)).c_str(), nullptr, 10));
      }
      at = lf + 1;
    }
    return 0;
  }
  [[nodiscard]] const std::string& output() const { return output_; }

  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    inFd_.reset();
    outFd_.reset();
  }

 private:
  bool readUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{outFd_.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      char buf[1024];
      const ssize_t got = ::read(outFd_.get(), buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      output_.append(buf, static_cast<size_t>(got));
    }
    return true;
  }

  bool fail(const std::string& why) {
    output_ = why;
    return false;
  }

  pid_t pid_ = -1;
  UniqueFd inFd_;
  UniqueFd outFd_;
  std::string output_;
};

}  // namespace libnet::test
