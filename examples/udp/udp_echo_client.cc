// udp_echo_client: drives a UDP echo server (udp_echo_server, or any other)
// for tests and benchmarks. --flows N sockets, each connected to the server.
//
// echo mode: each flow keeps up to --window datagrams in flight; an echo
// is matched to what was sent by the sequence number and flow at the start
// of every datagram (12 bytes, cut short in smaller datagrams, where size
// and prefix match it); with --verify its every byte is checked. A
// datagram not back within --timeout-ms is overdue: its slot in the window
// is reused, and it is still awaited (late if it comes; at most
// kMaxOverdue per flow, the oldest beyond that counted lost). Lost is what
// never came: with --count, once everything is sent and back or overdue,
// the run waits while echoes keep arriving and ends when none has come for
// --linger-ms, the overdue then counted lost; so a slow machine makes
// echoes late, not lost. With --seconds, the run ends on time and what is
// overdue then is lost. oneway mode: the flows send as fast as the sockets
// take datagrams, the server's echoes (if any) only counted.
//
// Sizes: --size S for all, or --sizes mixed: a deterministic spread from 1
// to 65,507 bytes (mostly small, every 1000th the largest), the same for
// every run.
//
// Prints one line:
//   sent=.. received=.. lost=.. late=.. truncated=.. corrupt=.. seconds=..
//   datagrams_per_s=.. round_trips_per_s=..
// (received counts late echoes too; datagrams_per_s counts the datagrams
// sent, round_trips_per_s the echoes received). Exit 0 if nothing came back
// truncated or corrupt (and, with --verify, nothing was lost); 1 otherwise,
// or if the socket cannot be set up; 2 for bad arguments.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <iomanip>
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
#include "net/InetAddress.h"
#include "net/udp/UdpSocket.h"

namespace {

using libnet::EventLoop;
using libnet::InetAddress;
using libnet::udp::DatagramFlags;
using libnet::udp::SendResult;
using libnet::udp::UdpSocket;
using Clock = std::chrono::steady_clock;

constexpr int kExitFailed = 1;
constexpr size_t kMaxDatagram = 65507;
constexpr size_t kHeader = 12;  // sequence number (8 bytes), flow (4), little-endian
constexpr int kSocketBuffer = 4 * 1024 * 1024;

constexpr std::string_view kUsage =
    "usage: udp_echo_client --server ADDR:PORT [--backend B] [--flows N]\n"
    "                       [--size S | --sizes mixed] [--mode echo|oneway]\n"
    "                       [--count N | --seconds S] [--window W] [--timeout-ms T]\n"
    "                       [--linger-ms L] [--verify] [--gso N]\n"
    "\n"
    "  --server ADDR:PORT  the echo server (numeric IPv4 or [IPv6])\n"
    "  --backend B         epoll, uring or auto (default auto)\n"
    "  --flows N           sockets, each its own flow (default 1)\n"
    "  --size S            datagram size, 1..65507 (default 64)\n"
    "  --sizes mixed       sizes spread from 1 to 65507 instead\n"
    "  --mode M            echo (default) or oneway\n"
    "  --count N           datagrams to send in all (default 100000)\n"
    "  --seconds S         run for S seconds instead of a count\n"
    "  --window W          datagrams in flight per flow in echo mode (default 8); datagrams\n"
    "                      per flow per loop turn in oneway mode\n"
    "  --timeout-ms T      an echo not back after T ms is overdue (late if it comes), its\n"
    "                      slot in the window reused (default 1000)\n"
    "  --linger-ms L       with --count: once all is sent, what is still awaited is lost\n"
    "                      when no echo has come for L ms (default 5000)\n"
    "  --verify            check every echoed byte; any loss fails the run\n"
    "  --gso N             oneway with one --size: N datagrams per send, segmented by the\n"
    "                      kernel (UDP_SEGMENT); 1..64, default 1 (off)\n";

struct Options {
  std::string server;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  int flows = 1;
  int size = 64;
  bool mixed = false;
  bool oneway = false;
  int64_t count = 100000;
  int seconds = 0;
  int window = 8;
  int timeoutMs = 1000;
  int lingerMs = 5000;
  bool verify = false;
  int gso = 1;  // datagrams per send (UDP_SEGMENT) when > 1
};

std::optional<int> parseArgs(int argc, char* argv[], Options* o) {
  libnet::Flags flags("udp_echo_client", std::string(kUsage));
  flags.addCustom("--server", [o](std::string_view v) -> std::string {
    if (!InetAddress::parseHostPort(v)) return "expected ADDR:PORT with a numeric address";
    o->server = std::string(v);
    return "";
  });
  flags.addBackend("--backend", &o->backend);
  flags.addInt("--flows", &o->flows, 1, 4096);
  flags.addInt("--size", &o->size, 1, static_cast<int>(kMaxDatagram));
  flags.addCustom("--sizes", [o](std::string_view v) -> std::string {
    if (v != "mixed") return "only 'mixed' is known";
    o->mixed = true;
    return "";
  });
  flags.addCustom("--mode", [o](std::string_view v) -> std::string {
    if (v != "echo" && v != "oneway") return "expected echo or oneway";
    o->oneway = v == "oneway";
    return "";
  });
  flags.addCustom("--count", [o](std::string_view v) -> std::string {
    try {
      size_t end = 0;
      o->count = std::stoll(std::string(v), &end);
      if (end != v.size() || o->count < 1) return "expected a positive count";
    } catch (const std::exception&) {
      return "expected a positive count";
    }
    return "";
  });
  flags.addInt("--seconds", &o->seconds, 0, 86400);
  flags.addInt("--window", &o->window, 1, 65536);
  flags.addInt("--timeout-ms", &o->timeoutMs, 1, 600000);
  flags.addInt("--linger-ms", &o->lingerMs, 1, 600000);
  flags.addSwitch("--verify", &o->verify);
  flags.addInt("--gso", &o->gso, 1, 64);
  if (auto status = flags.parse(argc, argv)) return status;
  if (o->server.empty()) {
    std::cerr << "udp_echo_client: --server is required\n" << kUsage;
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// --sizes mixed: nine in ten up to 512 bytes, most of the rest up to 9000,
// one in a hundred up to the largest; every 1000th exactly 1 and 65,507.
size_t mixedSize(uint64_t seq) {
  if (seq % 1000 == 0) return 1;
  if (seq % 1000 == 1) return kMaxDatagram;
  const uint64_t h = mix(seq);
  const uint64_t bucket = h % 100;
  if (bucket < 90) return 1 + (h >> 8) % 512;
  if (bucket < 99) return 513 + (h >> 8) % (9000 - 512);
  return 9001 + (h >> 8) % (kMaxDatagram - 9000);
}

// The pattern after the header: byte i is kPattern[i] plus a per-datagram
// offset (a loop the compiler vectorises).
const std::vector<uint8_t>& pattern() {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> p(kMaxDatagram);
    for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 31);
    return p;
  }();
  return bytes;
}

// The content of datagram `seq` of `flow`: the header, then a pattern.
void fill(std::string* out, uint32_t flow, uint64_t seq, size_t size) {
  out->resize(size);
  const uint8_t* base = pattern().data();
  const auto offset = static_cast<uint8_t>(seq * 17 + flow);
  auto* bytes = reinterpret_cast<uint8_t*>(out->data());
  for (size_t i = kHeader; i < size; ++i) bytes[i] = static_cast<uint8_t>(base[i] + offset);
  char header[kHeader];
  for (int i = 0; i < 8; ++i) header[i] = static_cast<char>(seq >> (8 * i));
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<char>(flow >> (8 * i));
  std::memcpy(out->data(), header, std::min(size, kHeader));
}

struct Counts {
  uint64_t sent = 0;
  uint64_t received = 0;  // late ones included
  uint64_t lost = 0;
  uint64_t late = 0;  // back after --timeout-ms
  uint64_t truncated = 0;
  uint64_t corrupt = 0;
  uint64_t stray = 0;  // an echo of nothing awaited: a duplicate, or one counted lost
  uint64_t errors = 0;
};

// Overdue datagrams a flow awaits at most; beyond, the oldest is lost.
constexpr size_t kMaxOverdue = 4096;

class Client;

// One socket and the datagrams it has in flight.
class Flow {
 public:
  Flow(Client* client, uint32_t id, EventLoop* loop, const InetAddress& server);
  // Sends until the window is full (echo) or `burst` datagrams went (oneway).
  void send(size_t burst);
  // Makes overdue what has waited longer than `timeout` (its slot goes to
  // a new datagram).
  void expire(Clock::time_point now, Clock::duration timeout);
  // Counts what is overdue as lost: no echo is coming any more.
  void giveUpOverdue();
  // Nothing in flight (all back or overdue).
  [[nodiscard]] bool idle() const { return inFlight_.empty(); }
  [[nodiscard]] bool awaitsNothing() const { return inFlight_.empty() && overdue_.empty(); }

 private:
  struct InFlight {
    uint64_t seq;
    size_t size;
    Clock::time_point sent;
  };
  void onEcho(std::string_view data, DatagramFlags flags);
  // The datagram of `list` that `data` echoes, or list.size().
  size_t match(const std::vector<InFlight>& list, std::string_view data, size_t size) const;
  void received(const InFlight& f, std::string_view data);
  // oneway with --gso: `burst` datagrams in sends of --gso each.
  void sendSegmented(size_t burst);

  Client* client_;
  uint32_t id_;
  UdpSocket socket_;
  uint64_t nextSeq_ = 0;
  std::vector<InFlight> inFlight_;
  std::vector<InFlight> overdue_;  // past the timeout, still awaited; oldest first
  std::string scratch_;
  std::string batch_;  // --gso: the datagrams of one send, back to back
};

class Client {
 public:
  Client(EventLoop* loop, const Options& options, const InetAddress& server);
  void run();
  [[nodiscard]] int exitStatus() const;

  // For the flows.
  const Options& options() const { return options_; }
  Counts& counts() { return counts_; }
  size_t sizeOf(uint64_t seq) const {
    return options_.mixed ? mixedSize(seq) : static_cast<size_t>(options_.size);
  }
  // Takes one datagram from the budget; false when the run is over.
  bool take() {
    if (stopping_ || (options_.seconds == 0 && budget_ == 0)) return false;
    if (options_.seconds == 0) --budget_;
    return true;
  }
  void echoed() { lastEcho_ = Clock::now(); }
  void maybeFinish();

 private:
  void tick();
  void onewayStep();
  void finish();

  EventLoop* loop_;
  Options options_;
  Counts counts_;
  int64_t budget_;
  bool stopping_ = false;
  bool finished_ = false;
  Clock::time_point start_;
  Clock::time_point stop_;
  Clock::time_point lastEcho_;  // progress: the wait for the overdue ends without it
  std::vector<std::unique_ptr<Flow>> flows_;
};

Flow::Flow(Client* client, uint32_t id, EventLoop* loop, const InetAddress& server)
    : client_(client),
      id_(id),
      socket_(loop, {.bind = InetAddress(0, false, server.family() == AF_INET6),
                     .receiveBufferSize = kSocketBuffer,
                     .sendBufferSize = kSocketBuffer,
                     .gsoSegmentSize = static_cast<uint16_t>(
                         client->options().gso > 1 ? client->options().size : 0)}) {
  socket_.setReceiveCallback([this](const InetAddress&, std::string_view data,
                                    DatagramFlags flags) { onEcho(data, flags); });
  socket_.setErrorCallback([this](std::string_view, int) { ++client_->counts().errors; });
  socket_.start();
  socket_.connect(server);
}

void Flow::send(size_t burst) {
  if (client_->options().gso > 1) return sendSegmented(burst);
  const bool echo = !client_->options().oneway;
  for (size_t n = 0;
       echo ? inFlight_.size() < static_cast<size_t>(client_->options().window) : n < burst; ++n) {
    if (!client_->take()) return;
    const uint64_t seq = nextSeq_++;
    const size_t size = client_->sizeOf(seq);
    fill(&scratch_, id_, seq, size);
    const SendResult r = socket_.send(scratch_);
    if (r == SendResult::kDropped || r == SendResult::kError) {
      // Not sent: the sequence number goes back for the next try.
      --nextSeq_;
      client_->counts().errors += r == SendResult::kError;
      return;
    }
    ++client_->counts().sent;
    if (echo) inFlight_.push_back({seq, size, Clock::now()});
  }
}

void Flow::sendSegmented(size_t burst) {
  const auto perSend = static_cast<size_t>(client_->options().gso);
  const auto size = static_cast<size_t>(client_->options().size);
  for (size_t n = 0; n < burst; n += perSend) {
    size_t taken = 0;
    while (taken < perSend && client_->take()) ++taken;
    if (taken == 0) return;
    batch_.clear();
    for (size_t i = 0; i < taken; ++i) {
      fill(&scratch_, id_, nextSeq_ + i, size);
      batch_ += scratch_;
    }
    const SendResult r = socket_.send(batch_);
    if (r == SendResult::kDropped || r == SendResult::kError) {
      client_->counts().errors += r == SendResult::kError;
      return;
    }
    nextSeq_ += taken;
    client_->counts().sent += taken;
  }
}

size_t Flow::match(const std::vector<InFlight>& list, std::string_view data, size_t size) const {
  char header[kHeader];
  for (size_t i = 0; i < list.size(); ++i) {
    const InFlight& f = list[i];
    if (f.size != size) continue;
    for (int b = 0; b < 8; ++b) header[b] = static_cast<char>(f.seq >> (8 * b));
    for (int b = 0; b < 4; ++b) header[8 + b] = static_cast<char>(id_ >> (8 * b));
    if (std::memcmp(data.data(), header, std::min(data.size(), kHeader)) == 0) return i;
  }
  return list.size();
}

void Flow::received(const InFlight& f, std::string_view data) {
  Counts& c = client_->counts();
  if (client_->options().verify) {
    fill(&scratch_, id_, f.seq, f.size);
    if (data != scratch_) ++c.corrupt;
  }
  ++c.received;
  client_->echoed();
}

void Flow::onEcho(std::string_view data, DatagramFlags flags) {
  Counts& c = client_->counts();
  if (flags.truncated) ++c.truncated;
  if (client_->options().oneway) {
    ++c.received;
    return;
  }
  if (const size_t i = match(inFlight_, data, flags.size); i < inFlight_.size()) {
    received(inFlight_[i], data);
    inFlight_[i] = inFlight_.back();
    inFlight_.pop_back();
    send(0);
    client_->maybeFinish();
    return;
  }
  if (const size_t i = match(overdue_, data, flags.size); i < overdue_.size()) {
    ++c.late;
    received(overdue_[i], data);
    overdue_.erase(overdue_.begin() + static_cast<ptrdiff_t>(i));
    client_->maybeFinish();
    return;
  }
  // Nothing awaited matches: a duplicate, one already counted lost, or
  // bytes this client never sent.
  uint64_t seq = 0;
  if (data.size() >= 8) {
    for (int b = 0; b < 8; ++b)
      seq |= static_cast<uint64_t>(static_cast<uint8_t>(data[b])) << (8 * b);
  }
  if (data.size() >= 8 && seq >= nextSeq_) {
    ++c.corrupt;
  } else {
    ++c.stray;
  }
}

void Flow::expire(Clock::time_point now, Clock::duration timeout) {
  for (size_t i = 0; i < inFlight_.size();) {
    if (now - inFlight_[i].sent > timeout) {
      overdue_.push_back(inFlight_[i]);
      inFlight_[i] = inFlight_.back();
      inFlight_.pop_back();
    } else {
      ++i;
    }
  }
  if (overdue_.size() > kMaxOverdue) {
    const size_t over = overdue_.size() - kMaxOverdue;
    client_->counts().lost += over;
    overdue_.erase(overdue_.begin(), overdue_.begin() + static_cast<ptrdiff_t>(over));
  }
  if (!client_->options().oneway) send(0);
}

void Flow::giveUpOverdue() {
  client_->counts().lost += overdue_.size();
  overdue_.clear();
}

Client::Client(EventLoop* loop, const Options& options, const InetAddress& server)
    : loop_(loop), options_(options), budget_(options.count) {
  for (int i = 0; i < options.flows; ++i) {
    flows_.push_back(std::make_unique<Flow>(this, static_cast<uint32_t>(i), loop, server));
  }
}

void Client::run() {
  start_ = Clock::now();
  lastEcho_ = start_;
  if (options_.seconds > 0) {
    loop_->runAfter(std::chrono::seconds(options_.seconds), [this] {
      stopping_ = true;
      stop_ = Clock::now();
      finish();
    });
  }
  loop_->runEvery(std::chrono::milliseconds(10), [this] { tick(); });
  if (options_.oneway) {
    loop_->queueInLoop([this] { onewayStep(); });
  } else {
    for (auto& flow : flows_) flow->send(0);
  }
  loop_->loop();
}

void Client::onewayStep() {
  if (finished_) return;
  for (auto& flow : flows_) flow->send(static_cast<size_t>(options_.window));
  if (!stopping_ && (options_.seconds > 0 || budget_ > 0)) {
    // Again after this turn's I/O.
    loop_->queueInLoop([this] { onewayStep(); });
  } else {
    maybeFinish();
  }
}

void Client::tick() {
  const Clock::time_point now = Clock::now();
  const auto timeout = std::chrono::milliseconds(options_.timeoutMs);
  for (auto& flow : flows_) flow->expire(now, timeout);
  // Everything sent, nothing in flight, and no echo for --linger-ms: what
  // is still overdue is not coming.
  if (!finished_ && options_.seconds == 0 && budget_ == 0 &&
      now - lastEcho_ > std::chrono::milliseconds(options_.lingerMs)) {
    bool inFlight = false;
    for (const auto& flow : flows_) inFlight = inFlight || !flow->idle();
    if (!inFlight) {
      for (auto& flow : flows_) flow->giveUpOverdue();
    }
  }
  maybeFinish();
}

void Client::maybeFinish() {
  if (finished_ || options_.seconds > 0 || budget_ > 0) return;
  for (const auto& flow : flows_) {
    if (!flow->awaitsNothing()) return;
  }
  stop_ = Clock::now();
  finish();
}

void Client::finish() {
  if (finished_) return;
  finished_ = true;
  // On time (--seconds): what is overdue now is lost; what is in flight,
  // younger than the timeout, is neither.
  for (auto& flow : flows_) flow->giveUpOverdue();
  const double seconds = std::chrono::duration<double>(stop_ - start_).count();
  const Counts& c = counts_;
  std::cout << "sent=" << c.sent << " received=" << c.received << " lost=" << c.lost
            << " late=" << c.late << " truncated=" << c.truncated << " corrupt=" << c.corrupt
            << " seconds=" << std::fixed << std::setprecision(3) << seconds << std::setprecision(0)
            << " datagrams_per_s=" << (seconds > 0 ? c.sent / seconds : 0)
            << " round_trips_per_s=" << (seconds > 0 && !options_.oneway ? c.received / seconds : 0)
            << std::endl;
  if (c.stray > 0 || c.errors > 0) {
    std::cerr << "udp_echo_client: stray=" << c.stray << " errors=" << c.errors << "\n";
  }
  loop_->quit();
}

int Client::exitStatus() const {
  const Counts& c = counts_;
  const bool ok = c.corrupt == 0 && c.truncated == 0 && (!options_.verify || c.lost == 0);
  return ok ? 0 : kExitFailed;
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseArgs(argc, argv, &options)) return *exitStatus;
  if (options.gso > 1 &&
      (!options.oneway || options.mixed ||
       static_cast<size_t>(options.gso) * static_cast<size_t>(options.size) > kMaxDatagram)) {
    std::cerr << "udp_echo_client: --gso needs --mode oneway, one --size, and N x size <= "
              << kMaxDatagram << "\n";
    return libnet::Flags::kExitUsage;
  }
  const InetAddress server = *InetAddress::parseHostPort(options.server);
  try {
    EventLoop loop(options.backend);
    Client client(&loop, options, server);
    client.run();
    return client.exitStatus();
  } catch (const std::system_error& e) {
    std::cerr << "udp_echo_client: " << e.what() << "\n";
  } catch (const std::invalid_argument& e) {
    std::cerr << "udp_echo_client: " << e.what() << "\n";
  }
  return kExitFailed;
}
