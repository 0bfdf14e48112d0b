#include "net/metrics/MetricsRegistry.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <utility>

#include "net/EventLoop.h"
#include "net/TcpServer.h"

namespace libnet::metrics {

namespace {

// What one server loop or one loop reads, taken before anything is written
// (every family lists all of them, and a family's samples go together).
struct ConnectionSample {
  std::string server;
  std::string loop;
  TcpServer::LoopStats stats;
};

struct LoopSample {
  std::string server;
  std::string loop;
  EventLoop::Metrics metrics;
};

// A label value, escaped as the format asks (backslash, quote, newline).
void appendEscaped(std::string* out, std::string_view value) {
  for (const char c : value) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '"') {
      *out += "\\\"";
    } else if (c == '\n') {
      *out += "\\n";
    } else {
      *out += c;
    }
  }
}

void appendFamily(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

// name{server="...",loop="..."[,quantile="..."]} value
void appendSample(std::string* out, const char* name, const std::string& server,
                  const std::string& loop, const char* quantile, const char* value) {
  *out += name;
  *out += "{server=\"";
  appendEscaped(out, server);
  *out += "\",loop=\"";
  appendEscaped(out, loop);
  *out += '"';
  if (quantile != nullptr) {
    *out += ",quantile=\"";
    *out += quantile;
    *out += '"';
  }
  *out += "} ";
  *out += value;
  *out += '\n';
}

std::string integer(uint64_t n) { return std::to_string(n); }

std::string seconds(Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", std::chrono::duration<double>(d).count());
  return text;
}

template <class Sample>
using Reading = std::function<std::string(const Sample&)>;

template <class Sample>
void appendSeries(std::string* out, const std::vector<Sample>& samples, const char* name,
                  const char* type, const char* help, const Reading<Sample>& read) {
  if (samples.empty()) return;
  appendFamily(out, name, type, help);
  for (const Sample& s : samples) {
    appendSample(out, name, s.server, s.loop, nullptr, read(s).c_str());
  }
}

void appendConnections(std::string* out, const std::vector<ConnectionSample>& c) {
  using R = Reading<ConnectionSample>;
  appendSeries(out, c, "libnet_connections_open", "gauge", "Connections open now.",
               R([](const ConnectionSample& s) { return integer(s.stats.connections); }));
  appendSeries(out, c, "libnet_connections_accepted_total", "counter",
               "Connections made since the server started.",
               R([](const ConnectionSample& s) { return integer(s.stats.accepted); }));
  appendSeries(out, c, "libnet_connections_closed_total", "counter", "Connections that closed.",
               R([](const ConnectionSample& s) { return integer(s.stats.closed); }));
  appendSeries(out, c, "libnet_connections_refused_total", "counter",
               "Connections accepted and closed at once: over a connection limit.",
               R([](const ConnectionSample& s) { return integer(s.stats.refused); }));
  appendSeries(out, c, "libnet_proxy_protocol_rejected_total", "counter",
               "Connections closed for a missing, malformed or late PROXY protocol header.",
               R([](const ConnectionSample& s) { return integer(s.stats.proxyRejected); }));
  appendSeries(out, c, "libnet_bytes_received_total", "counter",
               "Bytes received from clients (plaintext under TLS).",
               R([](const ConnectionSample& s) { return integer(s.stats.bytesReceived); }));
  appendSeries(out, c, "libnet_bytes_sent_total", "counter",
               "Bytes sent to clients by the application (written or still queued).",
               R([](const ConnectionSample& s) { return integer(s.stats.bytesSent); }));
  appendSeries(out, c, "libnet_output_queued_bytes", "gauge",
               "Bytes queued for clients and not yet written.",
               R([](const ConnectionSample& s) { return integer(s.stats.queuedOutput); }));
}

void appendLag(std::string* out, const std::vector<LoopSample>& loops) {
  const char* name = "libnet_loop_lag_seconds";
  appendFamily(out, name, "summary",
               "Loop lag over the last ~10 s: from the poller's return to the end of the "
               "turn's event handling.");
  for (const LoopSample& s : loops) {
    appendSample(out, name, s.server, s.loop, "0.5", seconds(s.metrics.lag.p50).c_str());
    appendSample(out, name, s.server, s.loop, "0.99", seconds(s.metrics.lag.p99).c_str());
    appendSample(out, "libnet_loop_lag_seconds_count", s.server, s.loop, nullptr,
                 integer(s.metrics.lag.count).c_str());
  }
}

void appendLoops(std::string* out, const std::vector<LoopSample>& l) {
  using R = Reading<LoopSample>;
  appendSeries(out, l, "libnet_loop_turns_total", "counter", "Loop turns (poller returns).",
               R([](const LoopSample& s) { return integer(s.metrics.turns); }));
  appendSeries(out, l, "libnet_loop_busy_seconds_total", "counter",
               "Time the loop spent handling events, timers and queued work (not waiting).",
               R([](const LoopSample& s) { return seconds(s.metrics.busy); }));
  if (!l.empty()) appendLag(out, l);
  appendSeries(out, l, "libnet_loop_lag_max_seconds", "gauge",
               "Largest loop lag over the last ~10 s.",
               R([](const LoopSample& s) { return seconds(s.metrics.lag.max); }));
  appendSeries(out, l, "libnet_timers_armed", "gauge", "Timers waiting to fire.",
               R([](const LoopSample& s) { return integer(s.metrics.timersArmed); }));
  appendSeries(out, l, "libnet_timers_fired_total", "counter", "Timer callbacks run.",
               R([](const LoopSample& s) { return integer(s.metrics.timersFired); }));
  appendSeries(out, l, "libnet_loop_functors_total", "counter",
               "Functors queued to the loop and run.",
               R([](const LoopSample& s) { return integer(s.metrics.functorsRun); }));
  appendSeries(out, l, "libnet_loop_blocking_waits_total", "counter",
               "Times the loop's thread blocked until another loop answered.",
               R([](const LoopSample& s) { return integer(s.metrics.blockingWaits); }));
}

}  // namespace

void MetricsRegistry::addServer(const TcpServer* server) {
  MutexLock lock(mutex_);
  if (std::find(servers_.begin(), servers_.end(), server) == servers_.end()) {
    servers_.push_back(server);
  }
}

void MetricsRegistry::addLoop(const EventLoop* loop, std::string server, std::string name) {
  MutexLock lock(mutex_);
  loops_.push_back({loop, std::move(server), std::move(name)});
}

void MetricsRegistry::remove(const TcpServer* server) {
  MutexLock lock(mutex_);
  std::erase(servers_, server);
}

void MetricsRegistry::remove(const EventLoop* loop) {
  MutexLock lock(mutex_);
  std::erase_if(loops_, [loop](const Loop& l) { return l.loop == loop; });
}

void MetricsRegistry::refresh() const {
  MutexLock lock(mutex_);
  for (const TcpServer* server : servers_) server->refreshQueuedOutput();
}

std::string MetricsRegistry::render() const {
  std::vector<const TcpServer*> servers;
  std::vector<Loop> extraLoops;
  {
    MutexLock lock(mutex_);
    servers = servers_;
    extraLoops = loops_;
  }
  // Nothing here waits for a loop: the counters are atomics that each loop
  // writes for itself, and the queued output is each loop's last sum.
  std::vector<ConnectionSample> connections;
  std::vector<LoopSample> loops;
  for (const TcpServer* server : servers) {
    const std::vector<TcpServer::LoopStats> stats = server->loopStats();
    const std::vector<EventLoop*> ioLoops = server->ioLoops();
    for (size_t i = 0; i < stats.size(); ++i) {
      connections.push_back({server->name(), std::to_string(i), stats[i]});
      if (i < ioLoops.size()) {
        loops.push_back({server->name(), std::to_string(i), ioLoops[i]->metrics()});
      }
    }
  }
  for (const Loop& l : extraLoops) loops.push_back({l.server, l.name, l.loop->metrics()});
  std::string out;
  appendConnections(&out, connections);
  appendLoops(&out, loops);
  return out;
}

}  // namespace libnet::metrics
