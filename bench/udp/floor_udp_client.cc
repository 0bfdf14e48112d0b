// The library-free UDP load client: one thread, one connected socket per
// flow, datagrams sent with sendmmsg and echoes read with recvmmsg from a
// level-triggered epoll set. bench/udp/run_udp_bench.py drives every server
// with it so that the benchmark measures the servers rather than a client's
// limits; it takes the command line of libnet's examples/udp:udp_echo_client
// and prints the same line:
//
//   floor_udp_client --server ADDR:PORT [--backend B] [--flows N]
//       [--size S | --sizes mixed] [--mode echo|oneway] [--count N | --seconds S]
//       [--window W] [--verify] [--batch B] [--loss-timeout-ms T]
//
//   sent=.. received=.. lost=.. truncated=.. corrupt=.. seconds=..
//       datagrams_per_s=.. round_trips_per_s=..
//
// oneway: every flow sends as fast as the kernel takes datagrams; the server
// (run with --sink) counts what arrives, so received and lost are 0 here and
// datagrams_per_s is the send rate. echo: each flow keeps W datagrams in
// flight; an echo is matched by (flow, seq); a flow that hears nothing for
// the loss timeout counts what it has in flight as lost and sends anew.
// seconds runs from the first send to the last echo (or to the end of
// sending, oneway); datagrams_per_s = sent/seconds and round_trips_per_s =
// received/seconds. --backend is accepted for compatibility and ignored.
// Exit status: 0, 1 if --verify found a truncated or corrupt echo or the
// server is unreachable, 2 for a bad command line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "bench/udp/Payload.h"
#include "bench/udp/ServerArgs.h"
#include "pingpong/CommandLine.h"
#include "pingpong/floor/UniqueFd.h"

namespace {

using Clock = std::chrono::steady_clock;
using pingpong::UniqueFd;

constexpr const char* kProgram = "floor_udp_client";
constexpr size_t kBufferBytes = 65536;

struct ClientArgs {
  sockaddr_storage server{};
  socklen_t serverLength = 0;
  int flows = 1;
  size_t size = 64;  // 0: mixed sizes
  bool oneway = false;
  uint64_t count = 0;  // 0: run for `seconds`
  double seconds = 5;
  int window = 1;
  bool verify = false;
  int batch = 64;
  std::chrono::milliseconds lossTimeout{500};
};

void printUsage(FILE* out) {
  std::fprintf(out,
               "usage: %s --server ADDR:PORT [--backend B] [--flows N] [--size S | --sizes mixed]\n"
               "       [--mode echo|oneway] [--count N | --seconds S] [--window W] [--verify]\n"
               "       [--batch B] [--loss-timeout-ms T]\n"
               "  Sends datagrams to an echo server over N flows (one socket each) and prints\n"
               "  sent= received= lost= truncated= corrupt= seconds= datagrams_per_s=\n"
               "  round_trips_per_s=. Defaults: 1 flow, 64 bytes, echo, 5 seconds, window 1.\n",
               kProgram);
}

[[noreturn]] void usageError(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kProgram, message.c_str());
  printUsage(stderr);
  std::exit(2);
}

bool parseServer(const std::string& text, ClientArgs* args) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const auto port = cmdline::parseNumber(std::string_view(text).substr(colon + 1), 1, 65535);
  return port && udpbench::toSockaddr(host, static_cast<uint16_t>(*port), &args->server,
                                      &args->serverLength);
}

// The number `text` of option `name`, within [lo, hi]; a usage error if not.
long numberOf(const char* name, const std::string& text, long lo, long hi) {
  const auto n = cmdline::parseNumber(text, lo, hi);
  if (!n) usageError(std::string("bad ") + name + ": " + text);
  return *n;
}

ClientArgs parseArgs(int argc, char** argv) {
  std::string server, backend, flows, size, sizes, mode, count, seconds, window, batch, loss;
  bool verify = false;
  const std::vector<cmdline::Option> known = {{"--server", &server}, {"--backend", &backend},
                                              {"--flows", &flows},   {"--size", &size},
                                              {"--sizes", &sizes},   {"--mode", &mode},
                                              {"--count", &count},   {"--seconds", &seconds},
                                              {"--window", &window}, {"--verify", nullptr, &verify},
                                              {"--batch", &batch},   {"--loss-timeout-ms", &loss}};
  const cmdline::CommandLine line = cmdline::parseCommandLine(argc, argv, known);
  if (line.help) {
    printUsage(stdout);
    std::exit(0);
  }
  if (!line.error.empty()) usageError(line.error);
  if (!line.positional.empty()) usageError("unexpected argument " + line.positional[0]);

  ClientArgs args;
  args.verify = verify;
  if (server.empty()) usageError("missing --server");
  if (!parseServer(server, &args)) usageError("bad --server (want ADDR:PORT): " + server);
  if (!flows.empty()) args.flows = static_cast<int>(numberOf("--flows", flows, 1, 10000));
  if (!size.empty() && !sizes.empty()) usageError("--size and --sizes exclude each other");
  if (!size.empty()) {
    const auto n = cmdline::parseNumber(size, udpbench::kHeaderBytes, udpbench::kMaxDatagram);
    if (!n) usageError("bad --size: " + size + " (want 16..65507)");
    args.size = static_cast<size_t>(*n);
  }
  if (!sizes.empty()) {
    if (sizes != "mixed") usageError("bad --sizes: " + sizes + " (want mixed)");
    args.size = 0;
  }
  if (!mode.empty()) {
    if (mode != "echo" && mode != "oneway") usageError("bad --mode: " + mode);
    args.oneway = mode == "oneway";
  }
  if (!count.empty() && !seconds.empty()) usageError("--count and --seconds exclude each other");
  if (!count.empty()) args.count = static_cast<uint64_t>(numberOf("--count", count, 1, 1L << 50));
  if (!seconds.empty()) {
    char* end = nullptr;
    args.seconds = std::strtod(seconds.c_str(), &end);
    if (*end != '\0' || !std::isfinite(args.seconds) || args.seconds <= 0 || args.seconds > 86400) {
      usageError("bad --seconds: " + seconds);
    }
  }
  if (!window.empty()) args.window = static_cast<int>(numberOf("--window", window, 1, 1 << 16));
  if (!batch.empty()) args.batch = static_cast<int>(numberOf("--batch", batch, 1, 1024));
  if (!loss.empty()) {
    args.lossTimeout = std::chrono::milliseconds(numberOf("--loss-timeout-ms", loss, 1, 600000));
  }
  return args;
}

[[noreturn]] void throwErrno(const char* call) {
  throw std::system_error(errno, std::generic_category(), call);
}

struct Flow {
  UniqueFd fd;
  uint32_t id = 0;
  uint64_t nextSeq = 0;
  uint64_t lostBelow = 0;  // echoes of earlier datagrams come too late to count
  int inflight = 0;
  Clock::time_point lastProgress;
};

struct Totals {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t lost = 0;
  uint64_t truncated = 0;
  uint64_t corrupt = 0;
};

class FloorClient {
 public:
  explicit FloorClient(const ClientArgs& args)
      : args_(args),
        sendBuffers_(static_cast<size_t>(args.batch)),
        recvBuffers_(static_cast<size_t>(args.batch)),
        sendIov_(static_cast<size_t>(args.batch)),
        recvIov_(static_cast<size_t>(args.batch)),
        sendHeaders_(static_cast<size_t>(args.batch)),
        recvHeaders_(static_cast<size_t>(args.batch)) {
    epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll_.valid()) throwErrno("epoll_create1");
    flows_.resize(static_cast<size_t>(args.flows));
    for (size_t i = 0; i < flows_.size(); ++i) {
      Flow& flow = flows_[i];
      flow.id = static_cast<uint32_t>(i);
      flow.fd.reset(::socket(args.server.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!flow.fd.valid()) throwErrno("socket");
      if (::connect(flow.fd.get(), reinterpret_cast<const sockaddr*>(&args.server),
                    args.serverLength) < 0) {
        throwErrno("connect");
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u32 = flow.id;
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, flow.fd.get(), &ev) < 0) {
        throwErrno("epoll_ctl");
      }
    }
    for (size_t i = 0; i < sendBuffers_.size(); ++i) {
      sendBuffers_[i].resize(kBufferBytes);
      recvBuffers_[i].resize(kBufferBytes);
      // Without --verify the pattern is written once, not per datagram, so
      // that the client spends its time in the kernel, not on memcpy.
      udpbench::writePattern(sendBuffers_[i], 0);
    }
  }

  Totals run(double* seconds) {
    start_ = Clock::now();
    deadline_ = args_.count != 0 ? Clock::time_point::max()
                                 : start_ + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(args_.seconds));
    Clock::time_point end = args_.oneway ? runOneway() : runEcho();
    *seconds = std::chrono::duration<double>(end - start_).count();
    return totals_;
  }

 private:
  bool sending(Clock::time_point now) const {
    return (args_.count == 0 || totals_.sent < args_.count) && now < deadline_;
  }

  uint64_t budget(uint64_t wanted) const {
    if (args_.count == 0) return wanted;
    return std::min(wanted, args_.count - totals_.sent);
  }

  // Sends up to `n` datagrams on `flow` with one sendmmsg; returns how many
  // the kernel took.
  int sendBatch(Flow& flow, int n) {
    n = std::min(n, args_.batch);
    for (int i = 0; i < n; ++i) {
      const uint64_t seq = flow.nextSeq + static_cast<uint64_t>(i);
      const size_t size = udpbench::datagramSize(args_.size, flow.id, seq);
      std::span<char> datagram(sendBuffers_[i].data(), size);
      udpbench::writeHeader(datagram, {flow.id, seq});
      if (args_.verify) udpbench::writePattern(datagram, seq);
      sendIov_[i] = {datagram.data(), size};
      msghdr& h = sendHeaders_[i].msg_hdr;
      h = {};
      h.msg_iov = &sendIov_[i];
      h.msg_iovlen = 1;
    }
    const int sent = ::sendmmsg(flow.fd.get(), sendHeaders_.data(), n, 0);
    if (sent < 0) {
      if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) return 0;
      throwErrno("sendmmsg");
    }
    flow.nextSeq += static_cast<uint64_t>(sent);
    totals_.sent += static_cast<uint64_t>(sent);
    return sent;
  }

  Clock::time_point runOneway() {
    Clock::time_point now = Clock::now();
    while (sending(now)) {
      for (Flow& flow : flows_) {
        const int n = static_cast<int>(budget(static_cast<uint64_t>(args_.batch)));
        if (n == 0) break;
        sendBatch(flow, n);
      }
      now = Clock::now();
    }
    return now;
  }

  // Keeps `window` datagrams in flight on `flow` while sending lasts.
  void refill(Flow& flow, Clock::time_point now) {
    while (flow.inflight < args_.window && sending(now)) {
      const int want =
          static_cast<int>(budget(static_cast<uint64_t>(args_.window - flow.inflight)));
      const int sent = sendBatch(flow, want);
      if (sent == 0) break;
      if (flow.inflight == 0) flow.lastProgress = now;
      flow.inflight += sent;
    }
  }

  // Reads every echo waiting on `flow`, one recvmmsg batch at a time.
  void receive(Flow& flow, Clock::time_point now) {
    for (;;) {
      for (int i = 0; i < args_.batch; ++i) {
        recvIov_[i] = {recvBuffers_[i].data(), recvBuffers_[i].size()};
        msghdr& h = recvHeaders_[i].msg_hdr;
        h = {};
        h.msg_iov = &recvIov_[i];
        h.msg_iovlen = 1;
      }
      const int n =
          ::recvmmsg(flow.fd.get(), recvHeaders_.data(), args_.batch, MSG_DONTWAIT, nullptr);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) return;
        throwErrno("recvmmsg");
      }
      for (int i = 0; i < n; ++i) {
        check(flow, std::span<const char>(recvBuffers_[i].data(), recvHeaders_[i].msg_len),
              (recvHeaders_[i].msg_hdr.msg_flags & MSG_TRUNC) != 0, now);
      }
      // Fewer than a batch: the queue is empty (a later arrival wakes epoll).
      if (n < args_.batch) return;
    }
  }

  void check(Flow& flow, std::span<const char> datagram, bool truncated, Clock::time_point now) {
    if (truncated) {
      ++totals_.truncated;
      return;
    }
    const auto header = udpbench::readHeader(datagram);
    if (!header || header->flow != flow.id || header->seq >= flow.nextSeq) {
      ++totals_.corrupt;
      return;
    }
    if (header->seq < flow.lostBelow) return;  // already counted as lost
    ++totals_.received;
    --flow.inflight;
    flow.lastProgress = now;
    if (args_.verify &&
        (datagram.size() != udpbench::datagramSize(args_.size, flow.id, header->seq) ||
         !udpbench::patternMatches(datagram, header->seq))) {
      ++totals_.corrupt;
    }
  }

  // A flow that has heard nothing for the loss timeout gives up on what it
  // has in flight.
  void expire(Flow& flow, Clock::time_point now) {
    if (flow.inflight > 0 && now - flow.lastProgress >= args_.lossTimeout) {
      totals_.lost += static_cast<uint64_t>(flow.inflight);
      flow.inflight = 0;
      flow.lostBelow = flow.nextSeq;
    }
  }

  Clock::time_point runEcho() {
    Clock::time_point now = Clock::now();
    for (Flow& flow : flows_) refill(flow, now);
    Clock::time_point lastEcho = now;
    Clock::time_point nextExpiry = now + args_.lossTimeout / 4;
    std::vector<epoll_event> events(flows_.size());
    for (;;) {
      const bool stillSending = sending(now);
      int inflight = 0;
      for (const Flow& flow : flows_) inflight += flow.inflight;
      if (!stillSending && inflight == 0) break;

      auto wait = nextExpiry - now;
      if (stillSending && deadline_ - now < wait) wait = deadline_ - now;
      const int timeoutMs = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(wait).count() + 1));
      const int n =
          ::epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), timeoutMs);
      if (n < 0 && errno != EINTR) throwErrno("epoll_wait");
      now = Clock::now();
      for (int i = 0; i < n; ++i) {
        Flow& flow = flows_[events[i].data.u32];
        const uint64_t before = totals_.received;
        receive(flow, now);
        if (totals_.received != before) lastEcho = now;
        refill(flow, now);
      }
      if (now >= nextExpiry) {
        for (Flow& flow : flows_) {
          expire(flow, now);
          refill(flow, now);
        }
        nextExpiry = now + args_.lossTimeout / 4;
      }
    }
    return std::max(lastEcho, std::min(now, deadline_));
  }

  ClientArgs args_;
  UniqueFd epoll_;
  std::vector<Flow> flows_;
  std::vector<std::vector<char>> sendBuffers_;
  std::vector<std::vector<char>> recvBuffers_;
  std::vector<iovec> sendIov_;
  std::vector<iovec> recvIov_;
  std::vector<mmsghdr> sendHeaders_;
  std::vector<mmsghdr> recvHeaders_;
  Clock::time_point start_;
  Clock::time_point deadline_;
  Totals totals_;
};

}  // namespace

int main(int argc, char** argv) {
  const ClientArgs args = parseArgs(argc, argv);
  try {
    FloorClient client(args);
    double seconds = 0;
    const Totals t = client.run(&seconds);
    const double rate = seconds > 0 ? 1.0 / seconds : 0.0;
    std::printf("sent=%" PRIu64 " received=%" PRIu64 " lost=%" PRIu64 " truncated=%" PRIu64
                " corrupt=%" PRIu64 " seconds=%.3f datagrams_per_s=%.0f round_trips_per_s=%.0f\n",
                t.sent, t.received, t.lost, t.truncated, t.corrupt, seconds,
                static_cast<double>(t.sent) * rate, static_cast<double>(t.received) * rate);
    std::fflush(stdout);
    return args.verify && (t.truncated != 0 || t.corrupt != 0) ? 1 : 0;
  } catch (const std::system_error& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    return 1;
  }
}
