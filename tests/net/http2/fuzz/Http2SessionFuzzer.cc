// libFuzzer target for the HTTP/2 server session (net/http2/ServerSession.h).
//
// The first input byte picks the setup, the rest is what a client sent:
//   bits 0-1  3: the rest is the whole stream, preface and all; otherwise
//             the client preface is put in front (1: followed by an empty
//             SETTINGS frame, so that any frames at all get past it)
//   bit 2     small limits (FuzzHandler.cc), so that short inputs reach the
//             defences: few streams, tiny header and body limits and window,
//             small reset, control-frame and CONTINUATION budgets
//   bit 3     goAway() after one of the pieces (which one: the plan)
//   bits 4-5  the output budgets: 0 small (0 to 64 bytes), 1 unlimited,
//             2 a mix, 3 none until the input ends (a client that never reads)
//   bits 6-7  the pieces the stream is fed in: 0 mixed (half of them 1 byte),
//             1 all at once, 2 frame-header sized (9 bytes), 3 byte by byte
// Piece sizes, budgets and the goAway() point come from a hash of the input,
// so a crash file alone replays the run.
//
// The application behind the session is FuzzHandler.h's.
//
// Checked, each failure a line on stderr and an abort: everything the server
// wrote passes FrameCheck (FrameCheck.h) and ends at a frame boundary after
// every produce(); its DATA adds up to responseBytes(); produce() stays
// within its budget but for one frame, and with no budget adds nothing;
// pendingResponses() never exceeds the streams the input could have opened
// (no underflow); once receive() returned false it keeps returning false, and
// the session then finishes once its output is taken, a GOAWAY written; after
// goAway() a GOAWAY is written and no stream above its last-stream-id is
// answered; with an unlimited budget, produce() leaves nothing it wants to
// write; handlers see HTTP/2 requests within the body limit. Log lines
// below FATAL are off: a handler that throws would log one per input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/http2/ServerSession.h"
#include "tests/net/http2/fuzz/FrameCheck.h"
#include "tests/net/http2/fuzz/FuzzHandler.h"

namespace libnet::http2::fuzz {
namespace {

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr std::string_view kEmptySettings("\0\0\0\x04\0\0\0\0\0", 9);
// One frame past the budget is allowed: a header and a full payload.
constexpr size_t kOvershoot = FrameCheck::kFrameHeader + FrameCheck::kMaxPayload;

struct Setup {
  bool raw = false;
  bool emptySettings = false;
  bool small = false;
  bool goAway = false;
  int budgets = 0;
  int pieces = 0;
};

// What a failure line names.
struct Run {
  bool small = false;
  size_t inputSize = 0;
};

[[noreturn]] void fail(const Run& run, const std::string& what) {
  std::fprintf(stderr, "Http2SessionFuzzer: %s limits, %zu-byte input: %s\n",
               run.small ? "small" : "default", run.inputSize, what.c_str());
  std::abort();
}

// splitmix64: any seed, zero included, gives a well-mixed sequence.
uint64_t nextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t hashOf(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

Setup setupFrom(uint8_t mode) {
  Setup setup;
  setup.raw = (mode & 3) == 3;
  setup.emptySettings = (mode & 3) == 1;
  setup.small = (mode & 4) != 0;
  setup.goAway = (mode & 8) != 0;
  setup.budgets = (mode >> 4) & 3;
  setup.pieces = (mode >> 6) & 3;
  return setup;
}

std::vector<size_t> piecesFor(const Setup& setup, size_t size, uint64_t& state) {
  std::vector<size_t> pieces;
  for (size_t left = size; left > 0;) {
    size_t n = left;
    if (setup.pieces == 0) {
      const uint64_t r = nextRandom(state) % 16;
      n = r < 8 ? 1 : r < 12 ? 2 + r % 7 : r < 15 ? 9 + nextRandom(state) % 56 : 65 + r * 13;
    } else if (setup.pieces == 2) {
      n = FrameCheck::kFrameHeader;
    } else if (setup.pieces == 3) {
      n = 1;
    }
    n = std::min(n, left);
    pieces.push_back(n);
    left -= n;
  }
  return pieces;
}

size_t budgetFor(const Setup& setup, uint64_t& state) {
  switch (setup.budgets) {
    case 0:
      return nextRandom(state) % 65;
    case 1:
      return SIZE_MAX;
    case 2: {
      constexpr size_t kChoices[] = {0, 1, 9, 100, 16 * 1024, 64 * 1024, SIZE_MAX, SIZE_MAX};
      return kChoices[nextRandom(state) % std::size(kChoices)];
    }
    default:
      return 0;
  }
}

// Drives one session through the input and checks it after every step.
class Driver {
 public:
  Driver(const Run& run, const Setup& setup)
      : run_(run), setup_(setup), session_(fuzzConfig(setup.small), "fuzz") {}

  void feed(std::string_view stream, uint64_t& state);
  void produce(size_t budget);
  void finish();

 private:
  void checkPending(size_t streamBytes) const;

  const Run& run_;
  const Setup& setup_;
  ServerSession session_;
  FrameCheck check_;
  bool failed_ = false;
  bool wentAway_ = false;
};

void Driver::feed(std::string_view stream, uint64_t& state) {
  const std::vector<size_t> pieces = piecesFor(setup_, stream.size(), state);
  const size_t goAwayAt = setup_.goAway ? nextRandom(state) % (pieces.size() + 1) : SIZE_MAX;
  size_t offset = 0;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i == goAwayAt) {
      session_.goAway();
      wentAway_ = true;
    }
    const bool ok = session_.receive(stream.substr(offset, pieces[i]));
    offset += pieces[i];
    if (failed_ && ok) fail(run_, "receive() accepted input after refusing some");
    failed_ = failed_ || !ok;
    checkPending(offset);
    produce(budgetFor(setup_, state));
  }
  if (goAwayAt == pieces.size()) {
    session_.goAway();
    wentAway_ = true;
  }
}

void Driver::checkPending(size_t streamBytes) const {
  // Each answered stream took a HEADERS frame, 9 bytes at least.
  if (session_.pendingResponses() > streamBytes / FrameCheck::kFrameHeader) {
    fail(run_, "pendingResponses() " + std::to_string(session_.pendingResponses()) + " after " +
                   std::to_string(streamBytes) + " bytes");
  }
}

void Driver::produce(size_t budget) {
  Buffer out;
  // Sometimes the connection's output already holds bytes.
  const size_t held = budget != SIZE_MAX && budget % 3 == 1 ? budget / 2 : 0;
  out.append(std::string(held, 'x'));
  session_.produce(&out, budget);
  const size_t added = out.readableBytes() - held;
  const size_t room = budget > held ? budget - held : 0;
  if (added > 0 && room == 0) fail(run_, "produce() wrote with its budget spent");
  if (room != SIZE_MAX && added > room + kOvershoot) {
    fail(run_, "produce() wrote " + std::to_string(added) + " bytes for a budget of " +
                   std::to_string(room));
  }
  check_.take(std::string_view(out.peek() + held, added));
  if (!check_.error().empty()) fail(run_, "server output: " + check_.error());
  if (!check_.atFrameBoundary()) fail(run_, "produce() ended inside a frame");
  if (check_.dataBytes() != session_.responseBytes()) {
    fail(run_, "DATA bytes " + std::to_string(check_.dataBytes()) + " but responseBytes() " +
                   std::to_string(session_.responseBytes()));
  }
  if (budget == SIZE_MAX && session_.wantsWrite()) {
    fail(run_, "produce() without a budget left something to write");
  }
}

void Driver::finish() {
  produce(SIZE_MAX);
  if (failed_) {
    if (session_.receive("x")) fail(run_, "receive() accepted input after refusing some");
    if (!check_.lowestGoAwayLast()) fail(run_, "a refused connection without a GOAWAY");
    if (!session_.finished()) fail(run_, "a refused connection not finished once written");
  }
  if (check_.goAwayError().value_or(0) != 0 && !session_.finished()) {
    fail(run_, "not finished after a GOAWAY with an error was written");
  }
  if (wentAway_ && !check_.lowestGoAwayLast()) fail(run_, "goAway() wrote no GOAWAY");
  // A client retries the streams above a GOAWAY's last stream elsewhere.
  if (check_.lowestGoAwayLast() && check_.highestAnswered() > *check_.lowestGoAwayLast()) {
    fail(run_, "stream " + std::to_string(check_.highestAnswered()) +
                   " answered past GOAWAY's last stream " +
                   std::to_string(*check_.lowestGoAwayLast()));
  }
}

}  // namespace
}  // namespace libnet::http2::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace libnet::http2::fuzz;
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Setup setup = setupFrom(data[0]);
  std::string stream;
  if (!setup.raw) {
    stream.append(kPreface);
    if (setup.emptySettings) stream.append(kEmptySettings);
  }
  stream.append(input.substr(1));
  static const bool quiet = [] {
    libnet::Logger::setLevel(libnet::LogLevel::kFatal);
    return true;
  }();
  (void)quiet;
  const Run run{setup.small, size};
  uint64_t state = hashOf(input);
  Driver driver(run, setup);
  driver.feed(stream, state);
  driver.finish();
  return 0;
}
