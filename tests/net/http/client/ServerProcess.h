// A server the HTTP client's tests talk to, run as a child process: the
// scripted Python server or nginx. Started by the test, killed (and waited
// for) when the object goes; every wait is bounded.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/UniqueFd.h"

extern char** environ;

namespace libnet::test {

class ServerProcess {
 public:
  ServerProcess() = default;
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { stop(); }

  // Runs `args` (argv[0] an absolute path) and waits up to 10 s for
  // `marker` on its stdout or stderr; false (with output()) if it exits or
  // stays silent.
  bool start(const std::vector<std::string>& args, const std::string& marker) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return false;
    UniqueFd childOut(out[1]);
    outFd_.reset(out[0]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, childOut.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, childOut.get(), STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      output_ = "posix_spawn " + args[0] + " failed";
      return false;
    }
    return readUntil(marker);
  }

  // The scripted server's "port N" line.
  [[nodiscard]] uint16_t scriptedPort() const {
    const size_t at = output_.find("port ");
    return at == std::string::npos ? 0 : static_cast<uint16_t>(std::stoi(output_.substr(at + 5)));
  }
  [[nodiscard]] const std::string& output() const { return output_; }

  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    outFd_.reset();
  }

 private:
  bool readUntil(const std::string& marker) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (output_.find(marker) == std::string::npos) {
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

  pid_t pid_ = -1;
  UniqueFd outFd_;
  std::string output_;
};

}  // namespace libnet::test
