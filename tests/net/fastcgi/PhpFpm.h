// A php-fpm of a test's own (Debian's php8.2-fpm): its configuration, Unix
// socket, log and scripts in a fresh directory under /tmp (TEST_TMPDIR paths
// can be longer than sun_path holds), no php.ini (-n), pm static, in the
// foreground in a process group of its own so that kill() takes the master
// and its children together. Never touches /etc/php or the system service.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/net/TestUtil.h"

namespace libnet::test {

class PhpFpm {
 public:
  static constexpr const char* kBinary = "/usr/sbin/php-fpm8.2";

  static bool installed() { return ::access(kBinary, X_OK) == 0; }

  PhpFpm() {
    char dir[] = "/tmp/libnet-fpm-XXXXXX";
    if (::mkdtemp(dir) != nullptr) dir_ = dir;
  }
  ~PhpFpm() {
    kill();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  PhpFpm(const PhpFpm&) = delete;
  PhpFpm& operator=(const PhpFpm&) = delete;

  [[nodiscard]] const std::string& dir() const { return dir_; }
  [[nodiscard]] std::string socketPath() const { return dir_ + "/fpm.sock"; }

  void writeScript(const std::string& name, const std::string& code) const {
    std::ofstream(dir_ + "/" + name) << code;
  }

  // Starts it with `children` workers and waits (bounded) until its socket
  // takes connections.
  bool start(int children) {
    std::ofstream conf(dir_ + "/fpm.conf");
    conf << "[global]\nerror_log = " << dir_ << "/fpm.log\ndaemonize = no\n"
         << "[www]\nlisten = " << socketPath() << "\npm = static\npm.max_children = " << children
         << "\ncatch_workers_output = yes\ndecorate_workers_output = no\n"
         << "php_admin_value[post_max_size] = 64M\nphp_admin_value[output_buffering] = 0\n"
         << "php_admin_value[max_execution_time] = 60\n";
    if (::geteuid() == 0) conf << "user = root\ngroup = root\n";
    conf.close();
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      ::setpgid(0, 0);
      const std::string config = dir_ + "/fpm.conf";
      ::execl(kBinary, kBinary, "-n", "-R", "-F", "-y", config.c_str(),
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);
    return waitUntil([&] { return accepting(); });
  }

  // SIGKILL to the master and every child.
  void kill() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  [[nodiscard]] std::string log() const {
    std::ifstream in(dir_ + "/fpm.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  [[nodiscard]] bool accepting() const {
    const SocketAddress address = SocketAddress::unixPath(socketPath());
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return fd && ::connect(fd.get(), address.sockAddr(), address.sockLen()) == 0;
  }

  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace libnet::test
