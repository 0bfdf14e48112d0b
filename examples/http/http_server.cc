// http_server: the HTTP example on libnet. GET /hello answers a fixed
// "hello world\n", POST /echo the request's body; every other GET or HEAD is a file under --root
// (MIME type by extension, sendfile(2) on epoll for large files; 404 when missing, 403 for anything
// that would leave the root). Keep-alive, pipelining, and the request limits of HttpServer (4xx and
// a close on bad requests, 503 when the bodies being uploaded would pass --max-body-memory). HTTP/2
// (net/http2/) with the same handler: over TLS when the client picks "h2" by ALPN, and on plain TCP
// with prior knowledge under --h2c. GET /client-address answers the client's "IP:PORT\n" as the
// server sees it: behind a load balancer speaking the PROXY protocol (--proxy-protocol), the
// client the balancer names. With --fastcgi-pass, paths matching --fastcgi-match go to a
// FastCGI application (php-fpm) instead (net/fastcgi/, docs/fastcgi.md).
//
// SIGINT / SIGTERM stop it cleanly (exit 0): HTTP/2 connections get GOAWAY
// and their streams in flight are answered first (at most --header-timeout
// seconds); a second signal stops at once. Exit status 1 if it cannot be
// set up (port in use, root unreadable), 2 for bad arguments.
//
// Restart: started with listening sockets (LISTEN_FDS, systemd's socket
// activation: net/ListenFds.h) it serves those instead of binding. SIGHUP
// starts a successor (the same binary and arguments) on its listening
// sockets (net/Successor.h); once that serves, this one drains; if it fails
// or is not ready within 10 s (it is then stopped with SIGTERM), this one
// goes on serving. A SIGTERM during a restart stops both generations
// gracefully. What each signal means when: examples/http/ServerLifecycle.h.
// SIGUSR1 starts a CPU profile to a file in --profile-dir, the next one
// stops it (net/inspect/ProfileSignal.h).

#include <charconv>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "base/Logging.h"
#include "examples/common/CpuAffinityFlag.h"
#include "examples/common/Flags.h"
#include "examples/common/ServerTls.h"
#include "examples/http/ServerLifecycle.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/ListenFds.h"
#include "net/ProxyProtocol.h"
#include "net/TcpServer.h"
#include "net/fastcgi/FastCgiHandler.h"
#include "net/http/HttpServer.h"
#include "net/http/StaticFiles.h"
#include "net/http2/Http2Server.h"
#include "net/inspect/Inspector.h"
#include "net/metrics/MetricsHandler.h"
#include "net/metrics/MetricsRegistry.h"
#include "net/tls/TlsContext.h"

namespace {

using libnet::EventLoop;
using libnet::Flags;
using libnet::InetAddress;
using libnet::PollerKind;
using libnet::ServerLifecycle;
using libnet::TcpServer;
using libnet::http::HttpRequest;
using libnet::http::HttpResponse;
using libnet::http::HttpServer;
using libnet::http::StaticFiles;
using libnet::inspect::Inspector;

constexpr int kExitSetupError = 1;

constexpr const char* kUsage =
    "usage: http_server [--address ADDR] [--port N] [--threads N] [--backend B] [--root DIR]\n"
    "                   [--idle-timeout S] [--header-timeout S] [--max-body BYTES]\n"
    "                   [--max-body-memory BYTES] [--accept MODE] [--defer-accept S]\n"
    "                   [--loop-stats 0|1] [--tls-cert FILE --tls-key FILE] [--h2c]\n"
    "                   [--proxy-protocol] [--trusted-proxy ADDR[/BITS],...]\n"
    "                   [--max-connections N] [--max-connections-per-client N]\n"
    "                   [--metrics-path PATH] [--drain-timeout S] [--drain-grace MS]\n"
    "                   [--h2-min-send-rate BYTES] [--h2-files-per-connection N]\n"
    "                   [--h2-response-memory BYTES] [--h2-max-files N] [--ready-delay MS]\n"
    "                   [--hand-over POLICY] [--cpu-affinity LIST]\n"
    "                   [--profile-dir DIR] [--inspect-path PATH [--inspect-allow-remote]]\n"
    "                   [--fastcgi-pass unix:PATH|HOST:PORT [--fastcgi-match PATTERN]...\n"
    "                    [--fastcgi-root DIR] [--fastcgi-pool N] [--fastcgi-queue N]\n"
    "                    [--fastcgi-connect-timeout S] [--fastcgi-timeout S]]\n"
    "\n"
    "  --address ADDR        numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N              TCP port, 0..65535; 0 picks a free one (default 8000)\n"
    "  --threads N           I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --backend B           epoll, uring or auto (default auto: io_uring if it works here)\n"
    "  --accept MODE         with --threads: per-loop (a SO_REUSEPORT listening socket per I/O\n"
    "                        loop, each accepting its own), hand-over (the main loop accepts\n"
    "                        and hands connections to the I/O loops round-robin: ring to ring\n"
    "                        where both loops run on io_uring, else through the loop's queue)\n"
    "                        or hand-over-queue (the same, always through the queue)\n"
    "                        (default per-loop)\n"
    "  --hand-over POLICY    with --accept hand-over: round-robin, or least-connections (the\n"
    "                        I/O loop with the fewest live connections) (default round-robin)\n"
    "  --cpu-affinity LIST   pin the loops to CPUs (taskset's list: 0,2-3): with one CPU\n"
    "                        more than --threads, the main loop on the first and I/O loop\n"
    "                        i on the next ones; otherwise I/O loop i on CPU i mod count\n"
    "                        and the main loop unpinned (default: none pinned)\n"
    "  --loop-stats 0|1      1: at exit, print how many connections each loop took (and how\n"
    "                        many of them came ring to ring) (default 0)\n"
    "  --defer-accept S      TCP_DEFER_ACCEPT: take a connection only once its request has\n"
    "                        started to arrive, or after about S seconds; 0 off (default 0)\n"
    "  --root DIR            serve files under DIR (default: none, only /hello)\n"
    "  --idle-timeout S      close keep-alive connections idle for S seconds; 0 never (default "
    "60)\n"
    "  --header-timeout S    a request's line and headers must be complete within S seconds of\n"
    "                        its first byte, or it gets 408; 1 to 86400, it cannot be turned\n"
    "                        off: clients that never finish their headers would hold\n"
    "                        connections for ever (default 10)\n"
    "  --max-body BYTES      larger request bodies are refused with 413 (default 1048576)\n"
    "  --max-body-memory BYTES\n"
    "                        request bodies still arriving, over all connections, may take at\n"
    "                        most BYTES; a body that does not fit gets 503; 0 no bound\n"
    "                        (default 67108864)\n"
    "  --max-upload BYTES    a body streamed to the FastCGI application (a request with a\n"
    "                        Content-Length; --max-body does not apply) may be at most BYTES,\n"
    "                        else 413; 0 no bound (default 1073741824)\n"
    "  --tls-cert FILE       serve HTTPS (TLS 1.2/1.3, ALPN h2 and http/1.1) with this PEM\n"
    "                        certificate chain\n"
    "  --tls-key FILE        ... and this PEM private key (both or neither)\n"
    "  --h2c                 also serve HTTP/2 with prior knowledge on plain TCP\n"
    "  --h2-min-send-rate BYTES\n"
    "                        an HTTP/2 connection that owes answers must send BYTES a second,\n"
    "                        over each --idle-timeout, or what is left of them; else it is\n"
    "                        closed (a client that opens its window a byte at a time, or\n"
    "                        reads a trickle); 0: one byte per --idle-timeout (default 1024)\n"
    "  --h2-files-per-connection N\n"
    "                        answers not yet sent hold at most N open files on one HTTP/2\n"
    "                        connection; later requests wait for them (default 16)\n"
    "  --h2-response-memory BYTES\n"
    "                        ... and at most BYTES of response bodies (default 1048576)\n"
    "  --h2-max-files N      open files held by HTTP/2 answers over the whole server; past it\n"
    "                        a file is answered 503; 0: a quarter of the open file limit\n"
    "                        (ulimit -n) (default 0)\n"
    "  --proxy-protocol      every connection starts with a PROXY protocol header (v1 or v2,\n"
    "                        as haproxy's send-proxy / send-proxy-v2 send) naming the client;\n"
    "                        one missing, malformed or not complete within 5 s is closed\n"
    "  --trusted-proxy ADDR[/BITS],...\n"
    "                        implies --proxy-protocol, and only connections from these\n"
    "                        addresses or prefixes must send the header; any other client is\n"
    "                        served directly and a header it sends is not believed\n"
    "                        (repeatable)\n"
    "  --max-connections N   at most N connections open at once; one more gets 503 with\n"
    "                        Retry-After (over TLS: a close); 0 no limit (default 0)\n"
    "  --max-connections-per-client N\n"
    "                        the same, per client IP address (default 0)\n"
    "  --metrics-path PATH   GET PATH answers the server's metrics in the Prometheus text\n"
    "                        format (default: off)\n"
    "  --drain-timeout S     on SIGINT/SIGTERM, connections still open after S seconds of\n"
    "                        draining are closed; 0 closes them at once (default 10)\n"
    "  --drain-grace MS      draining, a keep-alive connection idle for less than MS ms is\n"
    "                        given until then to send one more request (answered with\n"
    "                        Connection: close) before it is closed (default 200)\n"
    "  --ready-delay MS      started by a predecessor's SIGHUP, tell it we serve only MS ms\n"
    "                        after we do (a warm-up: both serve meanwhile); 0 at once\n"
    "                        (default 0; under 10000, the predecessor's wait)\n"
    "  --inspect-path PATH   the inspector under PATH (say /debug): PATH/loops,\n"
    "                        PATH/connections, PATH/pprof/profile?seconds=N (a CPU profile\n"
    "                        for google-pprof, 1..300 s, default 30), to loopback\n"
    "                        clients only (others get 403) (default: off)\n"
    "  --inspect-allow-remote\n"
    "                        the inspector answers every client, not only loopback ones\n"
    "  --profile-dir DIR     SIGUSR1 starts a CPU profile to DIR/http_server-PID-N.prof, the\n"
    "                        next SIGUSR1 stops it (google-pprof --text BINARY FILE reads it)\n"
    "                        (default: the working directory)\n"
    "  --fastcgi-pass unix:PATH|HOST:PORT\n"
    "                        pass matching requests to this FastCGI application (php-fpm), as\n"
    "                        nginx's fastcgi_pass does (docs/fastcgi.md); 502 when it refuses,\n"
    "                        dies or answers garbage, 504 when it times out\n"
    "  --fastcgi-match PATTERN\n"
    "                        which paths go there: PATTERN starting with '/' is a prefix\n"
    "                        (/app/), anything else a suffix (.php); repeatable (default .php)\n"
    "  --fastcgi-root DIR    DOCUMENT_ROOT; SCRIPT_FILENAME is DIR + the path (default --root)\n"
    "  --fastcgi-pool N      connections to the application per I/O loop, kept open between\n"
    "                        requests; keep loops x N <= php-fpm's pm.max_children (default 4)\n"
    "  --fastcgi-queue N     requests of a loop that wait for a connection when all N are\n"
    "                        busy (at most 10 s); one more is answered 503 (default 256)\n"
    "  --fastcgi-connect-timeout S\n"
    "                        connecting to the application (default 5)\n"
    "  --fastcgi-timeout S   between two writes to it, or two reads from it (default 60)\n"
    "  --help                print this help and exit\n"
    "\n"
    "GET /hello answers \"hello world\\n\", POST /echo the request body, GET /client-address\n"
    "the client's \"IP:PORT\\n\". Prints \"http_server listening on IP:PORT\" once ready.\n"
    "SIGINT or SIGTERM drains it: it stops\n"
    "accepting, closes idle keep-alive connections, answers the requests in flight (and any\n"
    "that arrive) with Connection: close, sends GOAWAY to HTTP/2 connections, and exits 0 once\n"
    "every connection has closed, or when --drain-timeout has passed (the rest closed). A\n"
    "second signal closes what is left at once (still exit 0).\n"
    "\n"
    "Restart: with LISTEN_PID and LISTEN_FDS set (systemd socket activation), it serves the\n"
    "inherited listening sockets (--address and --port are ignored). SIGHUP starts a new\n"
    "http_server with the same arguments on the same listening sockets; once it serves, this\n"
    "one drains as on SIGTERM; if it fails, this one goes on serving. SIGINT or SIGTERM\n"
    "before this one has exited stops both: each drains, and this one exits 0 once the\n"
    "successor has exited too.\n";

constexpr std::string_view kHello = "hello world\n";

// --metrics-path: how often every loop sums the output queued on its
// connections (libnet_output_queued_bytes).
constexpr libnet::Duration kMetricsRefresh = std::chrono::seconds(1);

// The command line, holding the defaults until Flags::parse() overwrites them.
struct Settings {
  std::string address = "0.0.0.0";
  uint16_t port = 8000;
  int threads = 0;
  PollerKind backend = PollerKind::kAuto;
  std::string root;
  int idleTimeout = 60;
  int headerTimeout = 10;
  int deferAccept = 0;
  int maxBody = 1024 * 1024;
  size_t maxBodyMemory = HttpServer::Options().maxBufferedBodyBytes;
  size_t maxUpload = HttpServer::Options().maxStreamedBodyBytes;
  TcpServer::AcceptMode acceptMode = TcpServer::AcceptMode::kPerLoop;
  bool ringHandOver = true;  // false: --accept hand-over-queue
  TcpServer::HandOver handOver = TcpServer::HandOver::kRoundRobin;
  libnet::CpuAffinityFlag cpuAffinity;
  int loopStats = 0;
  bool h2c = false;
  libnet::http2::Options h2{};
  libnet::ServerTls tls;
  // PROXY protocol (--proxy-protocol, --trusted-proxy).
  bool proxyProtocol = false;
  std::vector<libnet::ProxyProtocol::TrustedSource> trustedProxies;
  // Connection limits and metrics.
  int maxConnections = 0;
  int maxConnectionsPerClient = 0;
  std::string metricsPath;  // empty: no metrics
  // Graceful drain.
  int drainTimeout = 10;
  int drainGraceMs = 200;
  int readyDelayMs = 0;
  std::string profileDir = ".";  // SIGUSR1's CPU profiles
  // The inspector (--inspect-path): empty, off.
  std::string inspectPath;
  bool inspectAllowRemote = false;
  // FastCGI (--fastcgi-*).
  std::optional<libnet::SocketAddress> fastcgiPass;
  std::vector<std::string> fastcgiMatch;
  std::string fastcgiRoot;
  int fastcgiPool = 4;
  int fastcgiQueue = 256;
  int fastcgiConnectTimeout = 5;
  int fastcgiTimeout = 60;
  bool fastcgiFlagSeen = false;  // any --fastcgi-* flag but --fastcgi-pass
};

std::string parseAcceptMode(std::string_view value, Settings* settings) {
  settings->ringHandOver = true;
  if (value == "per-loop") {
    settings->acceptMode = TcpServer::AcceptMode::kPerLoop;
  } else if (value == "hand-over") {
    settings->acceptMode = TcpServer::AcceptMode::kHandOver;
  } else if (value == "hand-over-queue") {
    settings->acceptMode = TcpServer::AcceptMode::kHandOver;
    settings->ringHandOver = false;
  } else {
    return "invalid value '" + std::string(value) +
           "' (expected per-loop or hand-over or hand-over-queue)";
  }
  return std::string();
}

// After parsing: "" when --hand-over and --cpu-affinity fit --accept and
// --threads, else why not.
std::string checkLoops(Settings* settings) {
  if (settings->handOver != TcpServer::HandOver::kRoundRobin &&
      settings->acceptMode != TcpServer::AcceptMode::kHandOver) {
    return "--hand-over: only with --accept hand-over or hand-over-queue (per-loop listeners "
           "leave the choice to the kernel)";
  }
  return settings->cpuAffinity.check(settings->threads);
}

// --trusted-proxy: comma-separated addresses or CIDR prefixes, added to
// those of earlier occurrences.
std::string parseTrustedProxies(std::string_view value, Settings* settings) {
  while (true) {
    const size_t comma = value.find(',');
    const std::string_view item = value.substr(0, comma);
    const auto source = libnet::ProxyProtocol::TrustedSource::parse(item);
    if (!source) {
      return "invalid value '" + std::string(item) +
             "' (expected a numeric IPv4 or IPv6 address, optionally /BITS)";
    }
    settings->trustedProxies.push_back(*source);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  settings->proxyProtocol = true;
  return std::string();
}

// A byte count, not an int: a budget of several GiB is reasonable.
std::string parseByteCount(std::string_view value, size_t* bytes) {
  size_t parsed = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    return "invalid value '" + std::string(value) + "' (expected a byte count, 0 for no bound)";
  }
  *bytes = parsed;
  return std::string();
}

// The HTTP/2 bounds on slow readers (net/http2/Options.h).
void addHttp2Flags(Flags* flags, libnet::http2::Options* h2) {
  flags->addCustom("--h2-min-send-rate", [h2](std::string_view value) {
    return parseByteCount(value, &h2->minSendRate);
  });
  flags->addCustom("--h2-files-per-connection", [h2](std::string_view value) {
    std::string error = parseByteCount(value, &h2->maxConnectionFiles);
    if (error.empty() && h2->maxConnectionFiles == 0) error = "invalid value '0' (at least 1)";
    return error;
  });
  flags->addCustom("--h2-response-memory", [h2](std::string_view value) {
    return parseByteCount(value, &h2->maxConnectionResponseBytes);
  });
  flags->addCustom("--h2-max-files", [h2](std::string_view value) {
    return parseByteCount(value, &h2->maxServerFiles);
  });
}

// --fastcgi-pass: "unix:PATH", a numeric "IP:PORT", or "HOST:PORT" looked up
// once, here.
std::string parseFastcgiPass(std::string_view value, Settings* settings) {
  std::optional<libnet::SocketAddress> address = libnet::SocketAddress::parse(value);
  if (!address) {
    if (const auto hostPort = InetAddress::splitHostPort(value)) {
      if (const auto resolved = InetAddress::resolve(hostPort->first, hostPort->second)) {
        address = *resolved;
      }
    }
  }
  if (!address || (!address->isUnix() && address->port() == 0)) {
    return "invalid value '" + std::string(value) + "' (expected unix:PATH or HOST:PORT)";
  }
  settings->fastcgiPass = address;
  return std::string();
}

void addFastcgiFlags(Flags* flags, Settings* settings) {
  flags->addCustom("--fastcgi-pass", [settings](std::string_view value) {
    return parseFastcgiPass(value, settings);
  });
  flags->addCustom("--fastcgi-match", [settings](std::string_view value) {
    settings->fastcgiFlagSeen = true;
    if (value.empty()) return std::string("invalid value '' (expected a suffix or a /prefix)");
    settings->fastcgiMatch.emplace_back(value);
    return std::string();
  });
  flags->addCustom("--fastcgi-root", [settings](std::string_view value) {
    settings->fastcgiFlagSeen = true;
    if (value.empty() || value.front() != '/') {
      return "invalid value '" + std::string(value) + "' (expected an absolute directory)";
    }
    settings->fastcgiRoot = std::string(value);
    return std::string();
  });
  const auto counted = [settings, flags](const char* name, int* target, int min, int max) {
    flags->addCustom(name, [settings, target, min, max](std::string_view value) {
      settings->fastcgiFlagSeen = true;
      int n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size() || n < min ||
          n > max) {
        return "invalid value '" + std::string(value) + "' (expected " + std::to_string(min) +
               ".." + std::to_string(max) + ")";
      }
      *target = n;
      return std::string();
    });
  };
  counted("--fastcgi-pool", &settings->fastcgiPool, 1, 4096);
  counted("--fastcgi-queue", &settings->fastcgiQueue, 0, 1 << 20);
  counted("--fastcgi-connect-timeout", &settings->fastcgiConnectTimeout, 1, 3600);
  counted("--fastcgi-timeout", &settings->fastcgiTimeout, 1, 86400);
}

// What the flags cannot check one at a time; empty if all is well.
std::string checkFastcgi(Settings* settings) {
  if (!settings->fastcgiPass) {
    return settings->fastcgiFlagSeen ? "--fastcgi-match, --fastcgi-root, --fastcgi-pool, "
                                       "--fastcgi-queue and the timeouts need --fastcgi-pass"
                                     : "";
  }
  if (settings->fastcgiRoot.empty()) settings->fastcgiRoot = settings->root;
  if (settings->fastcgiRoot.empty()) return "--fastcgi-pass needs --fastcgi-root or --root";
  if (settings->fastcgiMatch.empty()) settings->fastcgiMatch.emplace_back(".php");
  return "";
}

// --profile-dir and the inspector (--inspect-*).
void addInspectFlags(Flags* flags, Settings* settings) {
  flags->addDirectory("--profile-dir", &settings->profileDir);
  flags->addCustom("--inspect-path", [settings](std::string_view value) {
    if (value.size() < 2 || value.front() != '/' || value.back() == '/') {
      return "invalid value '" + std::string(value) +
             "' (expected a path starting with / and not ending with it, say /debug)";
    }
    settings->inspectPath = std::string(value);
    return std::string();
  });
  flags->addSwitch("--inspect-allow-remote", &settings->inspectAllowRemote);
}

void addFlags(Flags* flags, Settings* settings) {
  flags->addAddress("--address", &settings->address);
  flags->addPort("--port", &settings->port);
  flags->addInt("--threads", &settings->threads, 0, 1024);
  flags->addBackend("--backend", &settings->backend);
  flags->addDirectory("--root", &settings->root);
  flags->addInt("--idle-timeout", &settings->idleTimeout, 0, 86400);
  flags->addInt("--header-timeout", &settings->headerTimeout, 1, 86400);
  flags->addInt("--defer-accept", &settings->deferAccept, 0, 3600);
  flags->addInt("--max-body", &settings->maxBody, 0, 1 << 30);
  flags->addInt("--loop-stats", &settings->loopStats, 0, 1);
  flags->addCustom("--accept",
                   [settings](std::string_view value) { return parseAcceptMode(value, settings); });
  flags->addCustom("--hand-over", [settings](std::string_view value) {
    if (value == "round-robin") {
      settings->handOver = TcpServer::HandOver::kRoundRobin;
    } else if (value == "least-connections") {
      settings->handOver = TcpServer::HandOver::kLeastConnections;
    } else {
      return "invalid value '" + std::string(value) +
             "' (expected round-robin or least-connections)";
    }
    return std::string();
  });
  settings->cpuAffinity.addTo(flags);
  flags->addCustom("--max-body-memory", [settings](std::string_view value) {
    return parseByteCount(value, &settings->maxBodyMemory);
  });
  flags->addCustom("--max-upload", [settings](std::string_view value) {
    return parseByteCount(value, &settings->maxUpload);
  });
  flags->addSwitch("--h2c", &settings->h2c);
  addHttp2Flags(flags, &settings->h2);
  settings->tls.addTo(flags);
  // PROXY protocol.
  flags->addSwitch("--proxy-protocol", &settings->proxyProtocol);
  flags->addCustom("--trusted-proxy", [settings](std::string_view value) {
    return parseTrustedProxies(value, settings);
  });
  // Connection limits and metrics.
  flags->addInt("--max-connections", &settings->maxConnections, 0, 1 << 30);
  flags->addInt("--max-connections-per-client", &settings->maxConnectionsPerClient, 0, 1 << 30);
  flags->addCustom("--metrics-path", [settings](std::string_view value) {
    if (value.empty() || value.front() != '/') {
      return "invalid value '" + std::string(value) + "' (expected a path starting with /)";
    }
    settings->metricsPath = std::string(value);
    return std::string();
  });
  // Graceful drain.
  flags->addInt("--drain-timeout", &settings->drainTimeout, 0, 86400);
  flags->addInt("--drain-grace", &settings->drainGraceMs, 0, 60000);
  flags->addInt("--ready-delay", &settings->readyDelayMs, 0, 9999);
  addInspectFlags(flags, settings);
  addFastcgiFlags(flags, settings);
}

HttpServer::Options serverOptions(const Settings& settings) {
  HttpServer::Options options;
  options.idleTimeout = std::chrono::seconds(settings.idleTimeout);
  options.headerTimeout = std::chrono::seconds(settings.headerTimeout);
  options.limits.maxBodyBytes = static_cast<size_t>(settings.maxBody);
  options.maxBufferedBodyBytes = settings.maxBodyMemory;
  options.maxStreamedBodyBytes = settings.maxUpload;
  options.threads = settings.threads;
  options.acceptMode = settings.acceptMode;
  options.ringHandOver = settings.ringHandOver;
  options.handOver = settings.handOver;
  options.cpuAffinity = settings.cpuAffinity.ioLoopCpus();
  options.deferAccept = std::chrono::seconds(settings.deferAccept);
  options.layer = settings.tls.layer({"h2", "http/1.1"});
  // PROXY protocol.
  options.proxyProtocol.enabled = settings.proxyProtocol;
  options.proxyProtocol.trusted = settings.trustedProxies;
  // Connection limits.
  options.maxConnections = static_cast<size_t>(settings.maxConnections);
  options.maxConnectionsPerPeer = static_cast<size_t>(settings.maxConnectionsPerClient);
  // Graceful drain.
  options.drainGrace = std::chrono::milliseconds(settings.drainGraceMs);
  return options;
}

// `files` is null without --root.
void handleRequest(const StaticFiles* files, const HttpRequest& request, HttpResponse* response) {
  if (request.path() == "/echo" && request.method() == libnet::http::Method::kPost) {
    response->setStatus(200);
    response->setContentType("application/octet-stream");
    response->setBody(request.body());
  } else if (request.path() == "/client-address") {
    const std::optional<libnet::SocketAddress> peer = request.peerAddress();
    response->setStatus(200);
    response->setContentType("text/plain");
    response->setBody((peer ? peer->toIpPort() : std::string("unknown")) + "\n");
  } else if (request.path() == "/hello") {
    response->setStatus(200);
    response->setContentType("text/plain");
    response->setBody(std::string(kHello));
  } else if (files) {
    files->serve(request, response);
  } else {
    response->setStatusPage(404);
  }
}

// --fastcgi-*: the upstream's options.
libnet::fastcgi::UpstreamOptions fastcgiOptions(const Settings& settings) {
  libnet::fastcgi::UpstreamOptions options;
  options.address = *settings.fastcgiPass;
  options.documentRoot = settings.fastcgiRoot;
  options.https = settings.tls.enabled();
  options.poolSize = static_cast<size_t>(settings.fastcgiPool);
  options.queueLength = static_cast<size_t>(settings.fastcgiQueue);
  options.connectTimeout = std::chrono::seconds(settings.fastcgiConnectTimeout);
  options.sendTimeout = std::chrono::seconds(settings.fastcgiTimeout);
  options.readTimeout = std::chrono::seconds(settings.fastcgiTimeout);
  return options;
}

// Which handler answers (HTTP/1.1): the inspector's paths the asynchronous
// one, FastCGI's too, with the body streamed to the application when it has
// a Content-Length (the application needs CONTENT_LENGTH first; a chunked
// body is read whole, up to --max-body); the rest, nearly every request,
// the synchronous handler, with no writer made for it.
HttpServer::Router router(const Settings& settings) {
  return [inspect = settings.inspectPath, patterns = settings.fastcgiMatch,
          php = settings.fastcgiPass.has_value()](const HttpRequest& head) {
    const std::string& path = head.path();
    if (!inspect.empty() && path.compare(0, inspect.size(), inspect) == 0 &&
        (path.size() == inspect.size() || path[inspect.size()] == '/')) {
      return HttpServer::Route::kAsync;
    }
    if (php) {
      for (const std::string& pattern : patterns) {
        if (!libnet::fastcgi::FastCgiHandler::matches(pattern, path)) continue;
        return head.header("Content-Length") ? HttpServer::Route::kStreamedBody
                                             : HttpServer::Route::kAsync;
      }
    }
    return HttpServer::Route::kHandler;
  };
}

// The handler: --metrics-path, then handleRequest(). With --inspect-path or
// --fastcgi-pass, an asynchronous handler in front of it gives the inspector
// its paths and the FastCGI application the paths that match (both answer
// later), and answers the rest with it at once, on HTTP/1.1 and HTTP/2
// alike; without either, requests never take the asynchronous path.
void setHandlers(HttpServer* server, const Settings& settings, const StaticFiles* files,
                 const libnet::metrics::MetricsRegistry& registry, Inspector* inspector) {
  HttpServer::Handler handler = [files, &registry, &settings](const HttpRequest& request,
                                                              HttpResponse* response) {
    if (!settings.metricsPath.empty() &&
        libnet::metrics::serveMetrics(registry, settings.metricsPath, request, response)) {
      return;
    }
    handleRequest(files, request, response);
  };
  server->setHandler(handler);
  if (inspector == nullptr && !settings.fastcgiPass) return;
  std::optional<libnet::fastcgi::FastCgiHandler> php;
  if (settings.fastcgiPass) php.emplace(fastcgiOptions(settings));
  server->setRouter(router(settings));
  server->setAsyncHandler(
      [inspector, php = std::move(php), patterns = settings.fastcgiMatch, handler](
          const HttpRequest& request, libnet::http::ResponseWriterPtr writer) {
        if (inspector != nullptr && inspector->serve(request, writer)) return;
        if (php) {
          for (const std::string& pattern : patterns) {
            if (libnet::fastcgi::FastCgiHandler::matches(pattern, request.path())) {
              (*php)(request, std::move(writer));
              return;
            }
          }
        }
        HttpResponse response(false);
        handler(request, &response);
        writer->respond(std::move(response));
      });
}

// --- Restart: inherited listening sockets, and a successor on SIGHUP. ---

// On the inherited sockets when there are any, else bound to --address and
// --port.
HttpServer makeServer(EventLoop* loop, const Settings& settings,
                      std::vector<libnet::UniqueFd> inherited) {
  if (inherited.empty()) {
    const InetAddress listenAddr = *InetAddress::parse(settings.address, settings.port);
    return HttpServer(loop, listenAddr, "http", serverOptions(settings));
  }
  std::cout << "http_server: serving " << inherited.size()
            << " inherited listening socket(s) (LISTEN_FDS); --address and --port are ignored"
            << std::endl;
  return HttpServer(loop, std::move(inherited), "http", serverOptions(settings));
}

// --loop-stats 1, at exit: how many connections each loop took.
void printLoopStats(const TcpServer& server) {
  const std::vector<TcpServer::LoopStats> stats = server.loopStats();
  for (size_t i = 0; i < stats.size(); ++i) {
    std::cout << "http_server loop " << i << ": " << stats[i].accepted << " connections, "
              << stats[i].ringHandOvers << " handed over ring to ring\n";
  }
  std::cout << std::flush;
}

// Serves until stopped (examples/http/ServerLifecycle.h: SIGINT, SIGTERM,
// or a successor that serves). Throws what setting up throws.
void serve(const Settings& settings, const std::vector<std::string>& argv) {
  // First: nothing else may have opened an fd yet.
  std::vector<libnet::UniqueFd> inherited = libnet::takeListenFds();
  std::unique_ptr<StaticFiles> files;
  if (!settings.root.empty()) files = std::make_unique<StaticFiles>(settings.root);

  EventLoop loop(settings.backend);
  std::shared_ptr<libnet::http2::Service> h2;
  // Before the server's threads: a signal from here on is handled.
  ServerLifecycle lifecycle(&loop, {.name = "http_server",
                                    .argv = argv,
                                    .drainTimeout = std::chrono::seconds(settings.drainTimeout),
                                    .readyDelay = std::chrono::milliseconds(settings.readyDelayMs),
                                    .profileDir = settings.profileDir});
  // Before the server, which it outlives: the handler may render it until
  // the server's loops have stopped.
  libnet::metrics::MetricsRegistry registry;
  std::unique_ptr<Inspector> inspector;
  if (!settings.inspectPath.empty()) {
    inspector = std::make_unique<Inspector>(Inspector::Options{
        .path = settings.inspectPath, .allowRemote = settings.inspectAllowRemote});
  }
  HttpServer server = makeServer(&loop, settings, std::move(inherited));
  setHandlers(&server, settings, files.get(), registry, inspector.get());
  if (settings.h2c || settings.tls.enabled()) {
    libnet::http2::Options h2Options = settings.h2;
    h2Options.priorKnowledge = settings.h2c;
    h2 = libnet::http2::serve(server, h2Options);
  }
  server.start();
  if (const std::string pinned = settings.cpuAffinity.pinMainLoop(); !pinned.empty()) {
    std::cout << "http_server: " << pinned << "\n";
  }
  registry.addServer(&server.tcpServer());
  if (inspector) inspector->addServer(&server.tcpServer());
  if (settings.threads > 0) registry.addLoop(&loop, "http", "main");
  // The queued-output gauge, summed by each loop from its queue: at most
  // about a second old at a scrape, whatever the scrape interval.
  if (!settings.metricsPath.empty())
    loop.runEvery(kMetricsRefresh, [&registry] { registry.refresh(); });
  if (settings.tls.enabled()) {
    std::cout << "http_server: " << libnet::ServerTls::kernelTlsNote() << "\n";
  }
  std::cout << "http_server listening on " << server.listenAddress().toIpPort() << std::endl;
  lifecycle.serving({.listeningFds = [&server] { return server.tcpServer().listeningFds(); },
                     .connectionCount = [&server] { return server.tcpServer().connectionCount(); },
                     .drain =
                         [&server](libnet::Duration deadline, std::function<void()> done) {
                           server.drain(deadline, std::move(done));
                         }});
  loop.loop();
  if (settings.loopStats != 0) printLoopStats(server.tcpServer());
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  Flags flags("http_server", kUsage);
  addFlags(&flags, &settings);
  if (const std::optional<int> exitStatus = flags.parse(argc, argv)) return *exitStatus;
  if (const std::string problem = checkFastcgi(&settings); !problem.empty()) {
    std::cerr << "http_server: " << problem << "\n" << kUsage;
    return Flags::kExitUsage;
  }
  if (const std::string problem = settings.tls.check(); !problem.empty()) {
    std::cerr << "http_server: " << problem << "\n" << kUsage;
    return Flags::kExitUsage;
  }
  if (const std::string problem = checkLoops(&settings); !problem.empty()) {
    std::cerr << "http_server: " << problem << " (see --help)\n";
    return Flags::kExitUsage;
  }
  if (settings.inspectAllowRemote && settings.inspectPath.empty()) {
    std::cerr << "http_server: --inspect-allow-remote needs --inspect-path\n" << kUsage;
    return Flags::kExitUsage;
  }
  try {
    serve(settings, std::vector<std::string>(argv, argv + argc));
  } catch (const std::system_error& e) {
    std::cerr << "http_server: " << e.what() << "\n";
    return kExitSetupError;
  } catch (const std::invalid_argument& e) {  // a bad option value
    std::cerr << "http_server: " << e.what() << "\n";
    return kExitSetupError;
  } catch (const libnet::tls::Error& e) {
    std::cerr << "http_server: " << e.what() << "\n";
    return kExitSetupError;
  }
  return 0;
}
