#include "net/inspect/Inspector.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "base/Logging.h"
#include "net/EventLoop.h"
#include "net/SocketAddress.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/inspect/CpuProfiler.h"
#include "net/inspect/LoopGather.h"

namespace libnet::inspect {

using http::HttpRequest;
using http::HttpResponse;
using http::ResponseWriterPtr;

struct Inspector::Target {
  const TcpServer* server;
  size_t index;  // in server->ioLoops()
  EventLoop* loop;
};

// Shared by the answer's timer, the writer's closed callback and the
// inspector's destructor: whichever comes first ends it (`ended`).
struct Inspector::ProfileRun {
  ResponseWriterPtr writer;  // reset when ended: the writer holds a callback holding this
  std::string dir;
  std::string file;
  EventLoop* loop = nullptr;
  TimerId timer;
  std::atomic<bool> ended{false};
};

namespace {

// A profile file is a few MiB at most (gperftools merges equal stacks);
// this only bounds what a broken one could make the answer hold.
constexpr size_t kMaxProfileBytes = 64 * 1024 * 1024;

void respondText(const ResponseWriterPtr& writer, int status, std::string text, bool head) {
  HttpResponse response(false);
  response.setStatus(status);
  response.setContentType("text/plain; charset=utf-8");
  // Every answer is a new reading.
  response.addHeader("Cache-Control", "no-store");
  if (head) {
    response.setContentLength(text.size());
  } else {
    response.setBody(std::move(text));
  }
  writer->respond(std::move(response));
}

std::string seconds(Duration d, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, std::chrono::duration<double>(d).count());
  return text;
}

std::string millis(Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", std::chrono::duration<double, std::milli>(d).count());
  return text;
}

// One line for one loop, read on that loop.
std::string readLoop(const TcpServer& server, size_t index, const EventLoop& loop) {
  size_t queued = 0;
  server.forEachConnection(index,
                           [&queued](const TcpConnection& c) { queued += c.queuedOutputBytes(); });
  const TcpServer::LoopStats stats = server.loopStats().at(index);
  const EventLoop::Metrics m = loop.metrics();
  std::ostringstream line;
  line << server.name() << " loop " << index << ": thread " << loop.threadId() << ", backend "
       << pollerKindName(loop.pollerKind()) << ", connections " << stats.connections
       << ", queued output " << queued << " B, accepted " << stats.accepted << ", closed "
       << stats.closed << ", bytes in " << stats.bytesReceived << ", bytes out " << stats.bytesSent
       << ", turns " << m.turns << ", busy " << seconds(m.busy, 3) << " s, lag p50 "
       << millis(m.lag.p50) << " ms p99 " << millis(m.lag.p99) << " ms max " << millis(m.lag.max)
       << " ms, timers " << m.timersArmed << ", functors run " << m.functorsRun
       << ", blocking waits " << m.blockingWaits << "\n";
  return line.str();
}

// The loop's connections, read on that loop: its count on the first line,
// then at most `cap` of them, one a line.
std::string readConnections(const TcpServer& server, size_t index, size_t cap) {
  const MonoTime now = MonoClock::now();
  size_t count = 0;
  std::string out;
  std::string lines;
  server.forEachConnection(index, [&](const TcpConnection& c) {
    if (count++ >= cap) return;
    lines += c.peerAddress().toString();
    lines += ' ' +
             std::to_string(
                 std::chrono::duration_cast<std::chrono::seconds>(now - c.establishedAt()).count());
    lines += ' ' + std::to_string(c.bytesReceived());
    lines += ' ' + std::to_string(c.bytesSent());
    lines += ' ' + std::to_string(c.queuedOutputBytes());
    lines += ' ' + server.name() + '/' + std::to_string(index);
    lines += ' ' + c.name() + '\n';
  });
  out = std::to_string(count) + '\n';
  out += lines;
  return out;
}

std::string notAnswered(const Inspector::Options& options) {
  return "(did not answer within " + seconds(options.gatherTimeout, 1) +
         " s: busy, or stuck in a callback)\n";
}

// The value of `key` in a query string ("a=1&seconds=5"), if present.
std::optional<std::string_view> queryValue(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

// ?seconds=N, checked: the duration, or why not (in `error`).
std::optional<Duration> profileSeconds(const Inspector::Options& options, std::string_view query,
                                       std::string* error) {
  const std::optional<std::string_view> value = queryValue(query, "seconds");
  if (!value) return options.defaultProfile;
  const long longest = static_cast<long>(
      std::chrono::duration_cast<std::chrono::seconds>(options.maxProfile).count());
  long n = 0;
  const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
  if (value->empty() || ec != std::errc() || end != value->data() + value->size() || n < 1 ||
      n > longest) {
    *error = "seconds must be a whole number from 1 to " + std::to_string(longest) + ", not '" +
             std::string(*value) + "'\n";
    return std::nullopt;
  }
  return std::chrono::seconds(n);
}

// A directory only this user can enter, for one profile's file.
std::string makePrivateDir(std::string* error) {
  const char* tmp = ::getenv("TMPDIR");
  std::string pattern = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  pattern += "/libnet-profile-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    *error = "cannot make a directory for the profile (" + pattern +
             "): " + std::system_category().message(errno) + "\n";
    return std::string();
  }
  return pattern;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    data.append(chunk, static_cast<size_t>(in.gcount()));
    if (data.size() > kMaxProfileBytes) return std::nullopt;
  }
  return data;
}

// Ends a profile, once, from whichever of its three ends comes first:
// `answer` says whether the client still waits for it. The files are gone
// before the answer leaves.
void endProfile(const std::shared_ptr<Inspector::ProfileRun>& run, bool answer) {
  if (run->ended.exchange(true)) return;
  CpuProfiler::stop(run->file);
  const ResponseWriterPtr writer = std::move(run->writer);
  run->writer = nullptr;
  std::optional<std::string> data;
  if (answer) data = readFile(run->file);
  ::unlink(run->file.c_str());
  ::rmdir(run->dir.c_str());
  LOG_INFO << "inspector: CPU profile " << run->file << (answer ? " sent" : " abandoned")
           << ", removed";
  if (!answer) {
    if (writer) writer->abort();
    return;
  }
  if (!data) {
    respondText(writer, 500, "the profile could not be read back from " + run->file + "\n", false);
    return;
  }
  HttpResponse response(false);
  response.setStatus(200);
  response.setContentType("application/octet-stream");
  response.addHeader("Content-Disposition", "attachment; filename=\"cpu.prof\"");
  response.addHeader("Cache-Control", "no-store");
  response.setBody(std::move(*data));
  writer->respond(std::move(response));
}

}  // namespace

namespace {

Inspector::Options checked(Inspector::Options options) {
  const std::string& p = options.path;
  if (p.empty() || p.front() != '/' || (p.size() > 1 && p.back() == '/')) {
    throw std::invalid_argument("Inspector::Options::path must start with '/' and not end with it");
  }
  if (options.maxConnectionsListed == 0) {
    throw std::invalid_argument("Inspector::Options::maxConnectionsListed must be at least 1");
  }
  if (options.maxProfile < std::chrono::seconds(1) ||
      options.defaultProfile < std::chrono::seconds(1) ||
      options.defaultProfile > options.maxProfile) {
    throw std::invalid_argument(
        "Inspector::Options: defaultProfile and maxProfile must be at least 1 s, "
        "defaultProfile at most maxProfile");
  }
  if (options.gatherTimeout <= Duration::zero()) {
    throw std::invalid_argument("Inspector::Options::gatherTimeout must be positive");
  }
  return options;
}

}  // namespace

Inspector::Inspector(Options options) : options_(checked(std::move(options))) {}

Inspector::~Inspector() {
  std::shared_ptr<ProfileRun> run;
  {
    MutexLock lock(mutex_);
    run = profile_.lock();
  }
  if (run) {
    run->loop->cancel(run->timer);
    endProfile(run, false);
  }
}

std::vector<ProxyProtocol::TrustedSource> Inspector::loopback() {
  return {*ProxyProtocol::TrustedSource::parse("127.0.0.0/8"),
          *ProxyProtocol::TrustedSource::parse("::1/128")};
}

bool Inspector::allowed(const Options& options, const SocketAddress& peer) {
  if (options.allowRemote || peer.isUnix()) return true;
  return std::any_of(options.allowedPeers.begin(), options.allowedPeers.end(),
                     [&peer](const ProxyProtocol::TrustedSource& s) { return s.contains(peer); });
}

void Inspector::addServer(const TcpServer* server) {
  MutexLock lock(mutex_);
  if (std::find(servers_.begin(), servers_.end(), server) == servers_.end()) {
    servers_.push_back(server);
  }
}

std::vector<Inspector::Target> Inspector::targets() const {
  std::vector<const TcpServer*> servers;
  {
    MutexLock lock(mutex_);
    servers = servers_;
  }
  std::vector<Target> result;
  for (const TcpServer* server : servers) {
    const std::vector<EventLoop*> loops = server->ioLoops();
    for (size_t i = 0; i < loops.size(); ++i) result.push_back({server, i, loops[i]});
  }
  return result;
}

bool Inspector::serve(const HttpRequest& request, const ResponseWriterPtr& writer) {
  const std::string& path = request.path();
  const std::string& prefix = options_.path;
  if (path.compare(0, prefix.size(), prefix) != 0) return false;
  std::string_view rest = std::string_view(path).substr(prefix.size());
  if (!rest.empty() && rest.front() != '/') return false;  // "/debugger" is not ours
  const std::optional<SocketAddress> peer = request.peerAddress();
  if (!peer || !allowed(options_, *peer)) {
    LOG_WARN << "inspector: " << path << " refused to "
             << (peer ? peer->toString() : std::string("a peer that has gone"));
    respondText(writer, 403, "the inspector answers only local peers\n", false);
    return true;
  }
  const http::Method method = request.method();
  const bool head = method == http::Method::kHead;
  if (method != http::Method::kGet && !(head && rest != "/pprof/profile")) {
    HttpResponse response(false);
    response.setStatusPage(405);
    response.addHeader("Allow", rest == "/pprof/profile" ? "GET" : "GET, HEAD");
    writer->respond(std::move(response));
    return true;
  }
  if (rest == "/loops") {
    serveLoops(writer, head);
  } else if (rest == "/connections") {
    serveConnections(writer, head);
  } else if (rest == "/pprof/profile") {
    serveProfile(request, writer);
  } else if (rest.empty() || rest == "/") {
    serveIndex(writer, head);
  } else {
    HttpResponse response(false);
    response.setStatusPage(404);
    writer->respond(std::move(response));
  }
  return true;
}

void Inspector::serveIndex(const ResponseWriterPtr& writer, bool head) const {
  const std::string& p = options_.path;
  respondText(writer, 200,
              p + "/loops             the I/O loops: thread, backend, connections, load\n" + p +
                  "/connections       the connections: peer, age, bytes in and out, queued "
                  "output, loop (the first " +
                  std::to_string(options_.maxConnectionsListed) + ")\n" + p +
                  "/pprof/profile?seconds=N   a CPU profile for google-pprof (default " +
                  seconds(options_.defaultProfile, 0) + ", at most " +
                  seconds(options_.maxProfile, 0) + ")\n",
              head);
}

void Inspector::serveLoops(const ResponseWriterPtr& writer, bool head) const {
  std::vector<Target> all = targets();
  std::vector<EventLoop*> loops;
  for (const Target& t : all) loops.push_back(t.loop);
  auto read = [all](size_t i) { return readLoop(*all[i].server, all[i].index, *all[i].loop); };
  auto done = [all, writer, head,
               missing = notAnswered(options_)](std::vector<std::optional<std::string>> pieces) {
    std::string text = std::to_string(pieces.size()) + " loops\n";
    for (size_t i = 0; i < pieces.size(); ++i) {
      text += pieces[i] ? *pieces[i]
                        : all[i].server->name() + " loop " + std::to_string(all[i].index) + ": " +
                              missing;
    }
    respondText(writer, 200, std::move(text), head);
  };
  LoopGather::start(loops, std::move(read), writer->loop(), options_.gatherTimeout,
                    std::move(done));
}

namespace {

// The loops' pieces of /connections in one answer, at most `cap` lines.
std::string mergeConnections(const std::vector<std::optional<std::string>>& pieces, size_t cap,
                             const std::string& missing) {
  size_t total = 0;
  size_t listed = 0;
  std::string lines;
  std::string unanswered;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!pieces[i]) {
      unanswered += "loop " + std::to_string(i) + " " + missing;
      continue;
    }
    std::string_view piece = *pieces[i];
    const size_t eol = piece.find('\n');
    total += std::strtoull(std::string(piece.substr(0, eol)).c_str(), nullptr, 10);
    piece.remove_prefix(eol + 1);
    while (!piece.empty() && listed < cap) {
      const size_t end = piece.find('\n');
      lines.append(piece.substr(0, end + 1));
      piece.remove_prefix(end + 1);
      ++listed;
    }
  }
  std::string text = std::to_string(total) + " connections, " + std::to_string(listed) +
                     " listed (at most " + std::to_string(cap) + " are)\n";
  text += unanswered;
  text += "peer age_s bytes_in bytes_out queued_out loop name\n";
  text += lines;
  return text;
}

}  // namespace

void Inspector::serveConnections(const ResponseWriterPtr& writer, bool head) const {
  std::vector<Target> all = targets();
  std::vector<EventLoop*> loops;
  for (const Target& t : all) loops.push_back(t.loop);
  const size_t cap = options_.maxConnectionsListed;
  auto read = [all, cap](size_t i) { return readConnections(*all[i].server, all[i].index, cap); };
  auto done = [writer, head, cap,
               missing = notAnswered(options_)](std::vector<std::optional<std::string>> pieces) {
    respondText(writer, 200, mergeConnections(pieces, cap, missing), head);
  };
  LoopGather::start(loops, std::move(read), writer->loop(), options_.gatherTimeout,
                    std::move(done));
}

void Inspector::serveProfile(const HttpRequest& request, const ResponseWriterPtr& writer) {
  std::string error;
  const std::optional<Duration> length = profileSeconds(options_, request.query(), &error);
  if (!length) {
    respondText(writer, 400, std::move(error), false);
    return;
  }
  const std::string dir = makePrivateDir(&error);
  if (dir.empty()) {
    respondText(writer, 500, std::move(error), false);
    return;
  }
  auto run = std::make_shared<ProfileRun>();
  run->dir = dir;
  run->file = dir + "/cpu.prof";
  const std::optional<SocketAddress> peer = request.peerAddress();
  const std::string who = peer ? peer->toString() : std::string("?");
  if (std::string why = CpuProfiler::start(run->file, "the inspector, for " + who); !why.empty()) {
    ::rmdir(dir.c_str());
    respondText(writer, 409, why + "; one profile at a time\n", false);
    return;
  }
  LOG_INFO << "inspector: CPU profile for " << seconds(*length, 0) << " s to " << run->file
           << ", for " << who;
  run->writer = writer;
  run->loop = writer->loop();
  // Both on the writer's loop (this thread): the timer's end and the
  // client's leaving. Set before the run is published to the destructor.
  run->timer = run->loop->runAfter(*length, [run] { endProfile(run, true); });
  writer->setClosedCallback([run] {
    run->loop->cancel(run->timer);
    endProfile(run, false);
  });
  MutexLock lock(mutex_);
  profile_ = run;
}

}  // namespace libnet::inspect
