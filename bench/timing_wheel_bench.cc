// timing_wheel_bench: what net/TimingWheel costs with many tracked entries,
// printed as a markdown table.
//
//   timing_wheel_bench [--entries N] [--buckets B] [--rounds R]
//
// One wheel on an (idle) epoll loop, timeout = (B - 1) ticks, driven by
// advance() with an hour-long tick so that its own timer stays out of the
// way. The entries are spread evenly over the buckets, as connections that
// arrived over a whole timeout are, so each tick expires about N / B.
//
// - add: one entry, the table already grown to N.
// - touch that moves: the first touch of an entry in a tick (it goes to the
//   newest bucket), over all N, in slot order and in a random order.
// - touch already newest: another touch in the same tick (a busy
//   connection's usual case): one comparison.
// - tick expiring nothing: advance() onto an empty bucket.
// - tick expiring N / B: advance() whose callback only counts (the real one
//   closes the connection; that cost is the connection's, not the wheel's).
// - memory per entry: the tables' layout (a 12-byte link and a 16-byte
//   weak_ptr), the tables' capacity over N, and the process's RSS growth
//   over N while the entries were added.
//
// The stand-in connections are small objects of their own (so every weak_ptr
// has its own control block, as a real connection's has), never
// dereferenced. Times are the median of R rounds.

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "net/EventLoop.h"
#include "net/TimingWheel.h"

namespace {

using Clock = std::chrono::steady_clock;
using libnet::TimingWheel;

// Resident set size in bytes, from /proc/self/statm.
int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0;
  int64_t resident = 0;
  statm >> pages >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

double nanosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

// A connection stand-in: what the wheel holds is a weak_ptr, so all that
// matters is a control block of its own and a non-null pointer.
struct StandIn {
  char bytes[64];
};

bool parseCount(std::string_view text, int64_t lo, int64_t* out) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < lo) {
    return false;
  }
  *out = value;
  return true;
}

struct Options {
  int64_t entries = 100'000;
  int64_t buckets = 61;
  int64_t rounds = 7;
};

// nullopt: go on. Otherwise the exit status to return now: 0 after --help,
// 2 after a bad option (the reason printed).
std::optional<int> parseOptions(int argc, char* argv[], Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: timing_wheel_bench [--entries N] [--buckets B] [--rounds R]\n";
      return 0;
    }
    if (i + 1 >= argc) {
      std::cerr << "timing_wheel_bench: " << arg << " needs a value\n";
      return 2;
    }
    const std::string_view value = argv[++i];
    bool ok = false;
    if (arg == "--entries") {
      ok = parseCount(value, 1, &options->entries);
    } else if (arg == "--buckets") {
      ok = parseCount(value, 2, &options->buckets) && options->buckets <= TimingWheel::kMaxBuckets;
    } else if (arg == "--rounds") {
      ok = parseCount(value, 1, &options->rounds);
    } else {
      std::cerr << "timing_wheel_bench: unknown option " << arg << "\n";
      return 2;
    }
    if (!ok) {
      std::cerr << "timing_wheel_bench: bad value '" << value << "' for " << arg << "\n";
      return 2;
    }
  }
  return std::nullopt;
}

std::vector<std::shared_ptr<libnet::TcpConnection>> makeStandIns(size_t n) {
  std::vector<std::shared_ptr<libnet::TcpConnection>> conns;
  conns.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto owner = std::make_shared<StandIn>();
    // Aliases the stand-in's control block; the wheel never dereferences it.
    conns.emplace_back(owner, reinterpret_cast<libnet::TcpConnection*>(owner.get()));
  }
  return conns;
}

// The samples of every timed operation, in ns.
struct Timings {
  std::vector<double> fullTick, movedSeq, movedRand, newestSeq, newestRand, emptyTick, add;
  uint64_t expiredPerTick = 0;
  bool emptyTicksWereEmpty = true;
};

// Ticks that expire a full bucket each. The callback leaves the entries
// open, so they re-enter the newest bucket and the spread is kept.
void timeFullTicks(TimingWheel& wheel, const uint64_t& expiredCount, int64_t rounds, Timings* t) {
  for (int64_t r = 0; r < rounds; ++r) {
    const uint64_t before = expiredCount;
    const auto start = Clock::now();
    wheel.advance();
    t->fullTick.push_back(nanosSince(start));
    t->expiredPerTick = std::max(t->expiredPerTick, expiredCount - before);
  }
}

// Touch every entry once in a fresh tick (each moves to the newest
// bucket), then once more (each is already there). After that every entry
// is in the newest bucket, so the following ticks find their buckets empty
// until the wheel comes round; those ticks are timed too.
void timeTouches(TimingWheel& wheel, const std::vector<TimingWheel::Entry>& handles,
                 const uint64_t& expiredCount, int64_t rounds, Timings* t) {
  std::vector<TimingWheel::Entry> sequential = handles;
  std::vector<TimingWheel::Entry> shuffled = handles;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(12345));
  auto touchAll = [&](const std::vector<TimingWheel::Entry>& order) {
    const auto start = Clock::now();
    for (const TimingWheel::Entry e : order) wheel.touch(e);
    return nanosSince(start) / static_cast<double>(order.size());
  };
  wheel.advance();
  for (int64_t r = 0; r < rounds; ++r) {
    for (const auto* order : {&sequential, &shuffled}) {
      auto& moved = order == &sequential ? t->movedSeq : t->movedRand;
      auto& newest = order == &sequential ? t->newestSeq : t->newestRand;
      moved.push_back(touchAll(*order));
      newest.push_back(touchAll(*order));
      const uint64_t before = expiredCount;
      const auto start = Clock::now();
      wheel.advance();
      t->emptyTick.push_back(nanosSince(start));
      t->emptyTicksWereEmpty = t->emptyTicksWereEmpty && expiredCount == before;
    }
  }
}

// add, with the tables grown: remove a slice, then time adding it back.
void timeAdds(TimingWheel& wheel, std::vector<TimingWheel::Entry>& handles,
              const std::vector<std::shared_ptr<libnet::TcpConnection>>& conns, int64_t rounds,
              Timings* t) {
  const size_t slice = std::min<size_t>(handles.size(), 10'000);
  for (int64_t r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < slice; ++i) wheel.remove(handles[i]);
    const auto start = Clock::now();
    for (size_t i = 0; i < slice; ++i) handles[i] = wheel.add(conns[i]);
    t->add.push_back(nanosSince(start) / static_cast<double>(slice));
  }
}

void printTable(const Options& options, const TimingWheel& wheel, const Timings& t,
                int64_t rssGrowth) {
  const auto n = static_cast<size_t>(options.entries);
  struct utsname uts;
  ::uname(&uts);
  std::printf("timing_wheel_bench: %zu entries, %lld buckets, %lld rounds (median), %s, %s %s\n\n",
              n, static_cast<long long>(options.buckets), static_cast<long long>(options.rounds),
              cpuModel().c_str(), uts.sysname, uts.release);
  std::printf("| operation | cost |\n|---|---|\n");
  std::printf("| add (tables grown) | %.1f ns |\n", median(t.add));
  std::printf("| touch that moves, sequential order | %.1f ns |\n", median(t.movedSeq));
  std::printf("| touch that moves, random order | %.1f ns |\n", median(t.movedRand));
  std::printf("| touch already newest, sequential order | %.1f ns |\n", median(t.newestSeq));
  std::printf("| touch already newest, random order | %.1f ns |\n", median(t.newestRand));
  std::printf("| tick expiring nothing | %.0f ns%s |\n", median(t.emptyTick),
              t.emptyTicksWereEmpty ? "" : " (some expired entries!)");
  std::printf("| tick expiring %llu entries (N / B) | %.1f us (%.1f ns per entry) |\n",
              static_cast<unsigned long long>(t.expiredPerTick), median(t.fullTick) / 1000.0,
              median(t.fullTick) / static_cast<double>(std::max<uint64_t>(t.expiredPerTick, 1)));
  std::printf("| memory per entry, layout (link + weak_ptr) | %zu B |\n",
              TimingWheel::bytesPerEntry());
  std::printf("| memory per entry, table capacity / entries | %.1f B |\n",
              static_cast<double>(wheel.tableBytes()) / static_cast<double>(n));
  std::printf("| memory per entry, RSS growth while adding / entries | %.1f B |\n",
              static_cast<double>(rssGrowth) / static_cast<double>(n));
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  if (const std::optional<int> exitStatus = parseOptions(argc, argv, &options)) {
    return *exitStatus;
  }
  const auto n = static_cast<size_t>(options.entries);
  const auto buckets = options.buckets;
  const auto perBucket = n / static_cast<size_t>(buckets);

  libnet::EventLoop loop(libnet::PollerKind::kEpoll);
  const std::vector<std::shared_ptr<libnet::TcpConnection>> conns = makeStandIns(n);

  uint64_t expiredCount = 0;
  const std::chrono::hours tick(1);
  TimingWheel wheel(&loop, tick * (buckets - 1), tick,
                    [&](const std::shared_ptr<libnet::TcpConnection>&) { ++expiredCount; });
  if (wheel.bucketCount() != static_cast<size_t>(buckets)) {
    std::cerr << "timing_wheel_bench: got " << wheel.bucketCount() << " buckets\n";
    return 1;
  }

  // Fill: perBucket entries per tick, group g in the g-th bucket, so that
  // the oldest bucket is full and each advance() expires the next group.
  std::vector<TimingWheel::Entry> handles(n);
  const int64_t rssBefore = residentBytes();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && i % perBucket == 0 && i / perBucket < static_cast<size_t>(buckets)) {
      wheel.advance();
    }
    handles[i] = wheel.add(conns[i]);
  }
  const int64_t rssAfter = residentBytes();
  if (expiredCount != 0) {
    std::cerr << "timing_wheel_bench: entries expired while filling\n";
    return 1;
  }

  Timings timings;
  timeFullTicks(wheel, expiredCount, options.rounds, &timings);
  timeTouches(wheel, handles, expiredCount, options.rounds, &timings);
  timeAdds(wheel, handles, conns, options.rounds, &timings);
  printTable(options, wheel, timings, rssAfter - rssBefore);
  return 0;
}
