// udp_echo_server: a UDP echo server on libnet. Every datagram goes back to
// its sender unchanged (--sink: counted, not echoed). With --threads N, N
// sockets share the port (SO_REUSEPORT), one per loop thread, and the
// kernel spreads the senders over them; with 0 (the default) one socket on
// the main thread.
//
// SIGINT / SIGTERM stop it: it prints
//   received=N bytes=M echoed=K dropped=D
// (summed over its sockets) and exits 0. Exit status 1 if the socket cannot
// be set up (port in use), 2 for bad command-line arguments.

#include <csignal>
#include <cstdint>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/EventLoopThreadPool.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/udp/UdpSocket.h"

namespace {

using libnet::EventLoop;
using libnet::InetAddress;
using libnet::udp::DatagramFlags;
using libnet::udp::SendResult;
using libnet::udp::UdpSocket;

constexpr int kExitSetupError = 1;
constexpr int kMaxThreads = 256;
// Room for bursts from many flows before the kernel drops (capped by
// net.core.rmem_max / wmem_max).
constexpr int kSocketBuffer = 4 * 1024 * 1024;

constexpr std::string_view kUsage =
    "usage: udp_echo_server [--address ADDR] [--port N] [--threads N] [--backend B] [--sink]\n"
    "                       [--gro]\n"
    "\n"
    "  --address ADDR  numeric IPv4 or IPv6 address to bind (default 0.0.0.0)\n"
    "  --port N        UDP port, 0..65535; 0 picks a free one (default 2007)\n"
    "  --threads N     loop threads, one SO_REUSEPORT socket each; 0 serves on the main\n"
    "                  thread (default 0)\n"
    "  --backend B     epoll, uring or auto (default auto); LIBNET_POLLER overrides it\n"
    "  --sink          count datagrams, do not echo them\n"
    "  --gro           receive with UDP_GRO: a flow's datagrams may come coalesced (each\n"
    "                  still counted and echoed on its own)\n"
    "  --help          print this help and exit\n"
    "\n"
    "Prints \"udp_echo_server listening on IP:PORT\" once ready. SIGINT or SIGTERM stops it\n"
    "and prints \"received=N bytes=M echoed=K dropped=D\".\n";

struct Options {
  std::string address = "0.0.0.0";
  uint16_t port = 2007;
  int threads = 0;
  bool sink = false;
  bool gro = false;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
};

std::optional<int> parseArgs(int argc, char* argv[], Options* options) {
  libnet::Flags flags("udp_echo_server", std::string(kUsage));
  flags.addAddress("--address", &options->address);
  flags.addPort("--port", &options->port);
  flags.addInt("--threads", &options->threads, 0, kMaxThreads);
  flags.addBackend("--backend", &options->backend);
  flags.addSwitch("--sink", &options->sink);
  flags.addSwitch("--gro", &options->gro);
  return flags.parse(argc, argv);
}

struct Totals {
  uint64_t received = 0;
  uint64_t bytes = 0;
  uint64_t echoed = 0;
  uint64_t dropped = 0;
};

// One socket and its counts, living on one loop.
class EchoSocket {
 public:
  EchoSocket(EventLoop* loop, const InetAddress& addr, bool reusePort, bool sink, bool gro)
      : socket_(loop, {.bind = addr,
                       .reusePort = reusePort,
                       .receiveBufferSize = kSocketBuffer,
                       .sendBufferSize = kSocketBuffer,
                       .gro = gro}) {
    socket_.setReceiveCallback(
        [this, sink](const InetAddress& from, std::string_view data, DatagramFlags) {
          if (sink) return;
          const SendResult r = socket_.sendTo(from, data);
          if (r == SendResult::kSent || r == SendResult::kQueued) ++echoed_;
        });
    socket_.start();
  }
  [[nodiscard]] InetAddress localAddress() const { return socket_.localAddress(); }
  void addTo(Totals* t) const {
    t->received += socket_.receivedDatagrams();
    t->bytes += socket_.receivedBytes();
    t->echoed += echoed_;
    t->dropped += socket_.droppedDatagrams();
  }

 private:
  UdpSocket socket_;
  uint64_t echoed_ = 0;
};

// Runs `fn` on `loop` and waits for it.
template <class F>
void runOn(EventLoop* loop, F fn) {
  std::promise<void> done;
  loop->runInLoop([&] {
    try {
      fn();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
  });
  done.get_future().get();
}

int serve(const Options& options, const InetAddress& addr) {
  EventLoop loop(options.backend);
  // Before the pool starts, so that a stop signal is already ours while the
  // sockets are made.
  libnet::SignalSet stop(&loop, {SIGINT, SIGTERM}, [&loop](int) { loop.quit(); });
  libnet::EventLoopThreadPool pool(&loop, "udp", options.threads);
  pool.start();
  const std::vector<EventLoop*> loops = pool.allLoops();
  std::vector<std::unique_ptr<EchoSocket>> sockets(loops.size());
  InetAddress bound = addr;
  for (size_t i = 0; i < loops.size(); ++i) {
    // The first socket picks the port (port 0), the others share it.
    runOn(loops[i], [&] {
      sockets[i] = std::make_unique<EchoSocket>(loops[i], bound, options.threads > 0, options.sink,
                                                options.gro);
    });
    bound = sockets[0]->localAddress();
  }
  std::cout << "udp_echo_server listening on " << bound.toIpPort() << std::endl;
  loop.loop();
  Totals totals;
  for (size_t i = 0; i < loops.size(); ++i) {
    runOn(loops[i], [&] {
      sockets[i]->addTo(&totals);
      sockets[i].reset();
    });
  }
  std::cout << "received=" << totals.received << " bytes=" << totals.bytes
            << " echoed=" << totals.echoed << " dropped=" << totals.dropped << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseArgs(argc, argv, &options)) return *exitStatus;
  const std::optional<InetAddress> addr = InetAddress::parse(options.address, options.port);
  try {
    return serve(options, *addr);
  } catch (const std::system_error& e) {
    std::cerr << "udp_echo_server: " << e.what() << "\n";
  } catch (const std::invalid_argument& e) {
    std::cerr << "udp_echo_server: " << e.what() << "\n";
  }
  return kExitSetupError;
}
