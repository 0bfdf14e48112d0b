// The name servers the resolver's tests talk to, each a child process on a
// loopback port of its own: dnsmasq with fixed records, and
// scripted_dns_server.py for the servers that misbehave. Started by the
// test, killed (and waited for) when the object goes; every wait for one is
// bounded.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
      if (!child_.start(args)) {
        why_ = child_.output();
        return false;
      }
      // dnsmasq logs "started" once its sockets are bound, or exits.
      if (child_.waitFor("started, version")) {
        address_ = InetAddress("127.0.0.1", *port);
        return true;
      }
      stop();  // the port was taken meanwhile: another one
    }
    why_ = "dnsmasq did not start: " + child_.output();
    return false;
  }

  // scripted_dns_server.py in `mode` (see its docstring).
  bool startScripted(const std::string& mode, int delayMs = 500) {
    const std::string script = testBinary("scripted_dns_server.py", "tests/net/dns");
    if (script.empty()) {
      why_ = "scripted_dns_server.py not found";
      return false;
    }
    const uint16_t port =
        child_.start({"/usr/bin/python3", script, mode, "--delay-ms", std::to_string(delayMs)})
            ? child_.waitForPort()
            : 0;
    if (port == 0) {
      why_ = "scripted server did not start: " + child_.output();
      return false;
    }
    address_ = InetAddress("127.0.0.1", port);
    return true;
  }

  [[nodiscard]] const InetAddress& address() const { return address_; }
  [[nodiscard]] const std::string& why() const { return why_; }

  // A UDP port of 127.0.0.1 that nothing listens on at the moment.
  static std::optional<uint16_t> freeUdpPort() { return freeLoopbackPort(SOCK_DGRAM); }

  void stop() { child_.stop(); }

 private:
  // The scripted server serves until its stdin (held by child_) closes.
  ServerChild child_;
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
