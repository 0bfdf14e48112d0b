// The name servers the resolver's tests talk to, each a child process on a
// loopback port of its own: dnsmasq with fixed records, and
// scripted_dns_server.py for the servers that misbehave. Started by the
// test, killed (and waited for) when the object goes; every wait for one is
// bounded.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/UniqueFd.h"
#include "net/InetAddress.h"
#include "tests/net/ChildProcess.h"
#include "tests/net/TestUtil.h"

namespace libnet::test {

class DnsServerProcess {
 public:
  DnsServerProcess() = default;
  DnsServerProcess(const DnsServerProcess&) = delete;
  DnsServerProcess& operator=(const DnsServerProcess&) = delete;
  ~DnsServerProcess() { stop(); }

  // dnsmasq answering from its own records only: both.dns.test (A 10.0.0.1,
  // AAAA fd00::1), v4only.dns.test (A 10.0.0.2), any *.bench.test (A
  // 10.9.9.9, AAAA fd00::9), loopback.dns.test (127.0.0.1 and ::1), all with a TTL of 60 s; other
  // names under test. are NXDOMAIN, names elsewhere REFUSED (no upstream). False (with why()) if it
  // did not start.
  bool startDnsmasq() {
    for (int attempt = 0; attempt < 20; ++attempt) {
      const std::optional<uint16_t> port = freeUdpPort();
      if (!port) break;
      const std::vector<std::string> args = {"/usr/sbin/dnsmasq",
                                             "--no-daemon",
                                             "--no-resolv",
                                             "--no-hosts",
                                             "--conf-file=/dev/null",
                                             "--pid-file=",
                                             "--log-facility=-",
                                             "--user=root",
                                             "--port=" + std::to_string(*port),
                                             "--listen-address=127.0.0.1",
                                             "--bind-interfaces",
                                             "--local=/test/",
                                             "--host-record=both.dns.test,10.0.0.1,fd00::1",
                                             "--host-record=v4only.dns.test,10.0.0.2",
                                             "--host-record=loopback.dns.test,127.0.0.1,::1",
                                             "--address=/bench.test/10.9.9.9",
                                             "--address=/bench.test/fd00::9",
                                             "--local-ttl=60",
                                             "--cache-size=0"};
      if (!spawn(args)) return false;
      // dnsmasq logs "started" once its sockets are bound, or exits.
      if (readUntil(errFd_, "started, version")) {
        address_ = InetAddress("127.0.0.1", *port);
        return true;
      }
      stop();  // the port was taken meanwhile: another one
    }
    why_ = "dnsmasq did not start: " + output_;
    return false;
  }

  // scripted_dns_server.py in `mode` (see its docstring).
  bool startScripted(const std::string& mode, int delayMs = 500) {
    const std::string script = testBinary("scripted_dns_server.py", "tests/net/dns");
    if (script.empty()) {
      why_ = "scripted_dns_server.py not found";
      return false;
    }
    if (!spawn({"/usr/bin/python3", script, mode, "--delay-ms", std::to_string(delayMs)})) {
      return false;
    }
    if (!readUntil(outFd_, "\n")) {
      why_ = "scripted server did not start: " + output_;
      return false;
    }
    const size_t at = output_.find("port ");
    if (at == std::string::npos) return false;
    address_ = InetAddress("127.0.0.1", static_cast<uint16_t>(std::stoi(output_.substr(at + 5))));
    return true;
  }

  [[nodiscard]] const InetAddress& address() const { return address_; }
  [[nodiscard]] const std::string& why() const { return why_; }

  // A UDP port of 127.0.0.1 that nothing listens on at the moment.
  static std::optional<uint16_t> freeUdpPort() {
    UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    const InetAddress any("127.0.0.1", 0);
    if (!fd || ::bind(fd.get(), any.sockAddr(), any.sockLen()) != 0) return std::nullopt;
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &len) != 0) {
      return std::nullopt;
    }
    return ntohs(bound.sin_port);
  }

  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    inFd_.reset();
    outFd_.reset();
    errFd_.reset();
  }

 private:
  bool spawn(const std::vector<std::string>& args) {
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
        ::pipe2(err, O_CLOEXEC) != 0) {
      why_ = "pipe2 failed";
      return false;
    }
    inFd_.reset(in[1]);
    outFd_.reset(out[0]);
    errFd_.reset(err[0]);
    UniqueFd childIn(in[0]), childOut(out[1]), childErr(err[1]);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, childIn.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, childOut.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, childErr.get(), STDERR_FILENO);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      why_ = "posix_spawn " + args[0] + " failed";
      return false;
    }
    output_.clear();
    return true;
  }

  // Reads `fd` into output_ until it holds `marker`; false on end of file or
  // after 10 s.
  bool readUntil(const UniqueFd& fd, const std::string& marker) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (output_.find(marker) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd.get(), POLLIN, 0};
      const int n = ::poll(&p, 1, static_cast<int>(left.count()));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      char buf[1024];
      const ssize_t got = ::read(fd.get(), buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      output_.append(buf, static_cast<size_t>(got));
    }
    return true;
  }

  pid_t pid_ = -1;
  UniqueFd inFd_;   // the child's stdin: the scripted server ends when it closes
  UniqueFd outFd_;  // its stdout and stderr, read until it is ready only
  UniqueFd errFd_;
  std::string output_;
  std::string why_;
  InetAddress address_;
};

// A suite of tests on both backends sharing one dnsmasq, started before its
// first test and stopped after its last; each test fails at once if it did
// not start.
class DnsmasqSuite : public LoopTest {
 protected:
  static void SetUpTestSuite() {
    dnsmasq_ = new DnsServerProcess;
    started_ = dnsmasq_->startDnsmasq();
  }
  static void TearDownTestSuite() {
    delete dnsmasq_;
    dnsmasq_ = nullptr;
  }
  void SetUp() override {
    LoopTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_TRUE(started_) << dnsmasq_->why();
  }

  static InetAddress dnsmasq() { return dnsmasq_->address(); }

 private:
  inline static DnsServerProcess* dnsmasq_ = nullptr;
  inline static bool started_ = false;
};

}  // namespace libnet::test
