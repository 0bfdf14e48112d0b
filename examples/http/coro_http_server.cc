// coro_http_server: the HTTP/1.1 example written as one coroutine per
// connection (net/coro/), in the shape of a hand-written io_uring server:
// read, parse, respond, send the file. GET /hello answers "hello world\n";
// every other GET or HEAD is a file under --root (sendfile(2); 404 when
// missing, 403 outside the root). Keep-alive and pipelining (every complete
// request in a read is answered, the answers go out in one write), the
// parser's limits (4xx, then the connection is half-closed and drained so
// the answer is not lost to a reset), a header deadline (408) and an idle
// timeout. GET /ws upgrades to a WebSocket that echoes every message
// (net/websocket/CoroWebSocket.h; with --ws-deflate it accepts
// permessage-deflate). With --h2c a connection that starts with
// the HTTP/2 client preface is served as HTTP/2 with prior knowledge
// (net/http2/CoroServe.h) on the same port, answered by the same handle()
// (WebSocket stays HTTP/1.1). http_server is the same server on callbacks
// (net/http/HttpServer), with more protections (a server-wide body budget);
// the HTTP benchmark compares the two.
//
// SIGINT / SIGTERM drain it as http_server drains (TcpServer::drain): no
// new connection is accepted, an idle HTTP/1.1 connection closes at once
// (one idle for less than kDrainGrace gets until then to send one more
// request), a request in flight is answered with Connection: close, HTTP/2
// connections get GOAWAY and the streams they took are answered, a
// WebSocket is closed with 1001 (going away); what is left after
// --drain-timeout is closed, and so is everything on a second signal. Exit
// status 0 then; 1 if it cannot be set up, 2 for bad arguments.
//
// SIGHUP restarts it in place as http_server does: a successor (the same
// binary and arguments) starts on the listening sockets (LISTEN_FDS,
// net/Successor.h), and once it serves this one drains; one that fails
// leaves this one serving. A SIGTERM during a restart stops both
// (examples/http/ServerLifecycle.h). SIGUSR1 starts a CPU profile to a file
// in --profile-dir, the next one stops it (net/inspect/ProfileSignal.h).

#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "base/Logging.h"
#include "examples/common/CpuAffinityFlag.h"
#include "examples/common/Flags.h"
#include "examples/http/ServerLifecycle.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/ListenFds.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/coro/DrainToken.h"
#include "net/http/HttpDate.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http/StaticFiles.h"
#include "net/http2/CoroServe.h"
#include "net/http2/ServerSession.h"
#include "net/websocket/CoroWebSocket.h"
#include "net/websocket/Handshake.h"

namespace {

using namespace libnet;
using namespace std::chrono_literals;
using http::HttpParser;
using http::HttpRequest;
using http::HttpResponse;

constexpr const char* kUsage =
    "usage: coro_http_server [--address ADDR] [--port N] [--threads N] [--backend B]\n"
    "                        [--root DIR] [--idle-timeout S] [--header-timeout S] [--h2c]\n"
    "                        [--drain-timeout S] [--ws-deflate] [--profile-dir DIR]\n"
    "                        [--cpu-affinity LIST]\n"
    "\n"
    "  --address ADDR      numeric IPv4 or IPv6 address to listen on (default 0.0.0.0)\n"
    "  --port N            TCP port, 0..65535; 0 picks a free one (default 8000)\n"
    "  --threads N         I/O loop threads; 0 serves everything on the main thread (default 0)\n"
    "  --backend B         epoll, uring or auto (default auto)\n"
    "  --root DIR          serve files under DIR (default: none, only /hello)\n"
    "  --idle-timeout S    close keep-alive connections idle for S seconds; 0 never (default 60)\n"
    "  --header-timeout S  a request's line and headers must be complete within S seconds of\n"
    "                      its first byte, or it gets 408 (1 to 86400, default 10); HTTP/2: the\n"
    "                      preface and each header block likewise, or GOAWAY and close\n"
    "  --h2c               also serve HTTP/2 with prior knowledge (a connection that starts\n"
    "                      with the client preface) on the same port; an HTTP/2 connection\n"
    "                      that owes answers and moves none of their bytes for the idle\n"
    "                      timeout is closed\n"
    "  --drain-timeout S   on SIGINT/SIGTERM, connections still open after S seconds of\n"
    "                      draining are closed; 0 closes them at once (default 10)\n"
    "  --ws-deflate        GET /ws accepts permessage-deflate (RFC 7692) when the client\n"
    "                      offers it\n"
    "  --profile-dir DIR   SIGUSR1 starts a CPU profile to DIR/coro_http_server-PID-N.prof,\n"
    "                      the next SIGUSR1 stops it (default: the working directory)\n"
    "  --cpu-affinity LIST pin the loops to CPUs (taskset's list: 0,2-3): with one CPU\n"
    "                      more than --threads, the main loop on the first and I/O loop\n"
    "                      i on the next ones; otherwise I/O loop i on CPU i mod count\n"
    "                      and the main loop unpinned (default: none pinned)\n"
    "  --help              print this help and exit\n"
    "\n"
    "Prints \"coro_http_server listening on IP:PORT\" once ready. SIGINT or SIGTERM drains it:\n"
    "it prints \"coro_http_server draining N connections\", stops accepting, closes idle\n"
    "connections, answers the requests in flight with Connection: close (HTTP/2: GOAWAY, the\n"
    "streams it names are answered), closes WebSockets with 1001, and exits 0 once every\n"
    "connection has closed or --drain-timeout has passed. A second signal closes the rest.\n"
    "\n"
    "SIGHUP starts a new coro_http_server with the same arguments on the same listening\n"
    "sockets (LISTEN_FDS: --address and --port are then ignored); once it serves, this one\n"
    "drains as on SIGTERM; if it fails, this one goes on serving. SIGINT or SIGTERM before\n"
    "this one has exited stops both.\n";

constexpr std::string_view kHello = "hello world\n";

constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Draining, an HTTP/1.1 connection idle for less than this gets until then
// to send one more request: clients such as wrk send the next request the
// moment they have read an answer, and count a close before it as an error
// (HttpServer::Options::drainGrace).
constexpr Duration kDrainGrace = 200ms;

struct Site {
  std::unique_ptr<http::StaticFiles> files;
  Duration headerTimeout = 10s;
  Duration idleTimeout = 60s;
  // --h2c: HTTP/2 with prior knowledge too, answered by handle() through
  // the session configuration's handler.
  bool h2c = false;
  http2::ServerSession::Config http2{};
  // GET /ws (--ws-deflate: deflate.enabled).
  ws::Options webSocket{};
};

std::string_view currentDate() {
  thread_local http::HttpDateCache cache;
  return cache.now();
}

// The application, the same for both protocols: GET /hello, files under
// --root, 404.
void handle(const Site& site, const HttpRequest& request, HttpResponse* response) {
  if (request.path() == "/hello") {
    response->setStatus(200);
    response->setContentType("text/plain");
    response->setBody(std::string(kHello));
  } else if (site.files) {
    site.files->serve(request, response);
  } else {
    response->setStatusPage(404);
  }
}

// Appends the HTTP/1.1 answer to `request` to `out` (a file body: *file and
// its length); returns whether the connection stays open. `last`: the server
// is draining and this is the last request it has (or will take) from the
// connection, answered with Connection: close.
bool respond(const Site& site, const HttpRequest& request, bool last, Buffer* out, UniqueFd* file,
             size_t* fileLength) {
  const bool keepAlive = request.keepAlive() && !last;
  HttpResponse response(!keepAlive);
  if (request.version() == http::Version::kHttp10 && keepAlive) {
    response.setKeepAliveHeader(true);
  }
  handle(site, request, &response);
  const bool headOnly = request.method() == http::Method::kHead;
  response.appendToBuffer(out, currentDate(), headOnly);
  if (response.hasFile() && !headOnly) {
    *fileLength = response.contentLength();
    *file = response.takeFile();
  }
  return !response.closeConnection();
}

// A bad request: answer, half-close, and drop what the client still sends
// until it closes (bounded), so that the answer is not lost to a reset.
coro::Task<> refuse(coro::Stream& stream, Buffer* out, int status) {
  HttpResponse response(/*close=*/true);
  response.setStatusPage(status);
  response.appendToBuffer(out, currentDate());
  co_await stream.write(out);
  stream.shutdown();
  co_await coro::withTimeout(5s, stream.closed());
}

// Closes an idle connection of a draining server: half-closed, then what
// the client still sends is dropped until it closes (the drain's deadline
// bounds the wait), so that a request racing the FIN is not answered with a
// reset.
coro::Task<> closeIdle(coro::Stream& stream) {
  stream.shutdown();
  co_await stream.closed();
}

// Draining, on an idle connection (`drain` requested; idle since `since`):
// whether the client sent more within kDrainGrace of `since`, to be
// answered as the connection's last request.
coro::Task<bool> lastRequestInGrace(coro::Stream& stream, MonoTime since) {
  const Duration left = since + kDrainGrace - MonoClock::now();
  if (left <= Duration::zero()) co_return false;
  const coro::Input in = co_await coro::withTimeout(left, stream.readMore());
  co_return static_cast<bool>(in);
}

// GET /ws: the connection becomes a WebSocket that echoes every message with
// its type until the client closes; draining, it closes with 1001.
coro::Task<> echoWebSocket(coro::Stream stream, const HttpRequest& request,
                           const ws::Options& options) {
  const std::stop_token drain = coro::drainToken(stream);
  ws::AcceptResult accepted = co_await ws::accept(std::move(stream), request, options);
  if (!accepted) co_return;  // answered with the reason and closing
  ws::CoroWebSocket& socket = accepted.socket;
  for (;;) {
    ws::Message message = co_await coro::withStop(drain, socket.read());
    if (message.error == coro::Errc::kCancelled && drain.stop_requested()) {
      co_await socket.close(ws::close_code::kGoingAway, "server going away");
      co_return;
    }
    if (message.isClose() || message.error != coro::Errc::kOk) co_return;
    if (co_await socket.send(message.type, message.payload) != coro::Errc::kOk) co_return;
  }
}

// A request started and not yet complete: waits for more of it. One not yet
// through its headers must be through them by a deadline set when it was
// first seen, however its bytes trickle in (else 408); a body is the
// TcpServer's idle timeout's business. Returns whether to go on. Not under
// the drain token: a request being received is answered.
coro::Task<bool> readMoreOfRequest(coro::Stream& stream, const HttpParser& parser, const Site& site,
                                   Buffer* out, std::optional<MonoTime>* headerDeadline) {
  const bool midHeaders = parser.inHeaderPhase();
  if (!midHeaders) {
    headerDeadline->reset();
  } else if (!*headerDeadline) {
    *headerDeadline = MonoClock::now() + site.headerTimeout;
  }
  const coro::Input in = midHeaders ? co_await coro::withTimeout(
                                          **headerDeadline - MonoClock::now(), stream.readMore())
                                    : co_await stream.readMore();
  if (in.error() == coro::Errc::kTimedOut) {
    co_await refuse(stream, out, 408);
    co_return false;
  }
  co_return static_cast<bool>(in);  // else closed, or the client is done
}

// HTTP/1.1 on `stream`; what it has read and not consumed (bytes the
// preface check looked at) is the start of the first request, whose header
// deadline may have started then.
coro::Task<> serveHttp1(coro::Stream stream, const Site* site,
                        std::optional<MonoTime> headerDeadline) {
  const std::stop_token drain = coro::drainToken(stream);
  HttpParser parser;
  // The answers of one read, sent in one write. The connection's own, not
  // one per thread: a throw between gathering and writing (a failed
  // allocation) must not leave its answers for another connection to send.
  Buffer out;
  for (;;) {
    bool open = true;
    while (open) {
      const HttpParser::Result result = parser.parse(&stream.input());
      if (result == HttpParser::Result::kNeedMore) break;
      if (result == HttpParser::Result::kError) {
        if (out.readableBytes() > 0) co_await stream.write(&out);
        co_await refuse(stream, &out, parser.errorStatus());
        co_return;
      }
      if (parser.request().path() == "/ws" && ws::isUpgradeRequest(parser.request())) {
        // The answers so far go first; what the client sent after the
        // request stays in the stream for the WebSocket.
        if (out.readableBytes() > 0 && co_await stream.write(&out) != coro::Errc::kOk) co_return;
        co_await echoWebSocket(std::move(stream), parser.request(), site->webSocket);
        co_return;
      }
      UniqueFd file;
      size_t fileLength = 0;
      // Draining, the last request of those read is answered with
      // Connection: close (one cut short by the read is answered first).
      const bool last = drain.stop_requested() && stream.input().readableBytes() == 0;
      open = respond(*site, parser.request(), last, &out, &file, &fileLength);
      parser.reset();
      // The heads gathered so far go first, then the file, by sendfile(2).
      if (file &&
          co_await stream.sendFile(std::move(file), 0, fileLength, &out) != coro::Errc::kOk) {
        co_return;
      }
    }
    if (out.readableBytes() > 0 && co_await stream.write(&out) != coro::Errc::kOk) co_return;
    if (!open) co_return;  // the stream goes: closed once the answers are out
    // What is unread is an incomplete request (the parser took every
    // complete one).
    if (parser.midRequest()) {
      if (!co_await readMoreOfRequest(stream, parser, *site, &out, &headerDeadline)) co_return;
      continue;
    }
    // Idle between requests (an idle connection is the TcpServer's idle
    // timeout's business) until the next one, or the drain.
    headerDeadline.reset();
    const MonoTime idleSince = MonoClock::now();
    const coro::Input in = co_await coro::withStop(drain, stream.readMore());
    if (in.error() == coro::Errc::kCancelled && drain.stop_requested()) {
      if (co_await lastRequestInGrace(stream, idleSince)) continue;
      co_await closeIdle(stream);
      co_return;
    }
    if (!in) co_return;  // closed, or the client is done
  }
}

enum class Protocol { kHttp1, kHttp2, kUnknown };

bool prefacePrefix(std::string_view bytes) {
  const size_t n = std::min(bytes.size(), kPreface.size());
  return bytes.substr(0, n) == kPreface.substr(0, n);
}

// What the first bytes of a connection say under --h2c: the client preface
// (kUnknown while it is a part of it), an HTTP/1.x request line (its last
// word "HTTP/..."; kUnknown until the line is complete, HTTP/1.1's to refuse
// past its length limit), or else a broken preface, which HTTP/2 answers
// (GOAWAY PROTOCOL_ERROR, RFC 9113 3.4) rather than HTTP/1.1's 400. As
// http_server (net/http2/Http2Server.cc) tells them apart.
Protocol classify(std::string_view bytes) {
  if (prefacePrefix(bytes))
    return bytes.size() >= kPreface.size() ? Protocol::kHttp2 : Protocol::kUnknown;
  const size_t lf = bytes.find('\n');
  if (lf == std::string_view::npos) {
    return bytes.size() < HttpParser::Limits{}.maxRequestLine ? Protocol::kUnknown
                                                              : Protocol::kHttp1;
  }
  std::string_view line = bytes.substr(0, lf);
  if (line.ends_with('\r')) line.remove_suffix(1);
  const size_t space = line.rfind(' ');
  const bool http1 = space != std::string_view::npos && line.substr(space + 1).starts_with("HTTP/");
  return http1 ? Protocol::kHttp1 : Protocol::kHttp2;
}

// --h2c: reads until classify() knows the protocol (kUnknown: the client went
// first). The header deadline runs from the first byte (the wait for it is
// the idle timeout's business) and is left in *deadline for HTTP/1.1 to go
// on with; a preface still incomplete by then ends the connection, an
// HTTP/1.1 line goes on to its 408.
coro::Task<Protocol> sniff(coro::Stream& stream, const Site& site,
                           std::optional<MonoTime>* deadline) {
  const std::stop_token drain = coro::drainToken(stream);
  const MonoTime since = MonoClock::now();
  for (;;) {
    coro::Errc result = coro::Errc::kOk;
    if (*deadline) {
      const Duration left = std::max(Duration::zero(), **deadline - MonoClock::now());
      const coro::Input in = co_await coro::withTimeout(left, stream.readMore());
      result = in.error();
    } else {
      // Idle until the first byte, as between HTTP/1.1 requests.
      const coro::Input in = co_await coro::withStop(drain, stream.read());
      result = in.error();
      if (result == coro::Errc::kCancelled && drain.stop_requested()) {
        if (!co_await lastRequestInGrace(stream, since)) {
          co_await closeIdle(stream);
          co_return Protocol::kUnknown;
        }
        result = coro::Errc::kOk;
      }
    }
    const Buffer& input = stream.input();
    const std::string_view bytes(input.peek(), input.readableBytes());
    if (result == coro::Errc::kTimedOut && !prefacePrefix(bytes)) co_return Protocol::kHttp1;
    if (result != coro::Errc::kOk) co_return Protocol::kUnknown;
    const Protocol protocol = classify(bytes);
    if (protocol != Protocol::kUnknown) co_return protocol;
    if (!*deadline) *deadline = MonoClock::now() + site.headerTimeout;
  }
}

coro::Task<> serveConnection(coro::Stream stream, const Site* site) {
  std::optional<MonoTime> headerDeadline;
  if (site->h2c) {
    const Protocol protocol = co_await sniff(stream, *site, &headerDeadline);
    if (protocol == Protocol::kUnknown) co_return;
    if (protocol == Protocol::kHttp2) {
      // Draining: GOAWAY, then the streams it names are answered.
      co_await http2::serveConnection(stream, site->http2, site->headerTimeout, site->idleTimeout,
                                      coro::drainToken(stream));
      co_return;
    }
  }
  co_await serveHttp1(std::move(stream), site, headerDeadline);
}

// On the inherited listening sockets when there are any (a predecessor's,
// or systemd's), else bound to `address`.
std::unique_ptr<TcpServer> makeServer(EventLoop* loop, std::vector<UniqueFd> inherited,
                                      const InetAddress& address,
                                      const TcpServer::Options& options) {
  if (inherited.empty()) return std::make_unique<TcpServer>(loop, address, "coro-http", options);
  std::cout << "coro_http_server: serving " << inherited.size()
            << " inherited listening socket(s) (LISTEN_FDS); --address and --port are ignored"
            << std::endl;
  return std::make_unique<TcpServer>(loop, std::move(inherited), "coro-http", options);
}

// The command line, holding the defaults until Flags::parse() overwrites them.
struct Settings {
  std::string address = "0.0.0.0";
  uint16_t port = 8000;
  int threads = 0;
  PollerKind backend = PollerKind::kAuto;
  std::string root;
  int idleTimeout = 60;
  int headerTimeout = 10;
  bool h2c = false;
  int drainTimeout = 10;
  bool wsDeflate = false;
  std::string profileDir = ".";
  CpuAffinityFlag cpuAffinity;
};

// What the lifecycle (signals: drain, restart) needs of the server.
ServerLifecycle::Server lifecycleParts(TcpServer* server) {
  return {
      .listeningFds = [server] { return server->listeningFds(); },
      .connectionCount = [server] { return server->connectionCount(); },
      .drain = [server](Duration deadline,
                        std::function<void()> done) { server->drain(deadline, std::move(done)); }};
}

// Serves until stopped (examples/http/ServerLifecycle.h). Throws what
// setting up throws.
void serve(const Settings& settings, const std::vector<std::string>& argv) {
  // First: nothing else may have opened an fd yet.
  std::vector<UniqueFd> inherited = takeListenFds();
  Site site;
  if (!settings.root.empty()) site.files = std::make_unique<http::StaticFiles>(settings.root);
  site.headerTimeout = std::chrono::seconds(settings.headerTimeout);
  site.idleTimeout = std::chrono::seconds(settings.idleTimeout);
  site.h2c = settings.h2c;
  site.webSocket.deflate.enabled = settings.wsDeflate;
  site.http2.handler = [&site](const HttpRequest& request, HttpResponse* response) {
    handle(site, request, response);
  };

  EventLoop loop(settings.backend);
  // Before the server's threads: a signal from here on is handled (the first
  // SIGINT/SIGTERM drains the started server, a second closes what is left,
  // SIGHUP restarts it).
  ServerLifecycle lifecycle(&loop, {.name = "coro_http_server",
                                    .argv = argv,
                                    .drainTimeout = std::chrono::seconds(settings.drainTimeout),
                                    .profileDir = settings.profileDir});
  const std::unique_ptr<TcpServer> server =
      makeServer(&loop, std::move(inherited), *InetAddress::parse(settings.address, settings.port),
                 {.threads = settings.threads,
                  .cpuAffinity = settings.cpuAffinity.ioLoopCpus(),
                  // HttpServer's limit: what a client that does not read can
                  // make a connection hold (HTTP/2 answers; files sent by
                  // sendfile count as their bytes)
                  .maxQueuedOutput = 1024 * 1024,
                  .idleTimeout = std::chrono::seconds(settings.idleTimeout)});
  coro::serve(*server,
              [&site](coro::Stream stream) { return serveConnection(std::move(stream), &site); });
  server->start();
  if (const std::string pinned = settings.cpuAffinity.pinMainLoop(); !pinned.empty()) {
    std::cout << "coro_http_server: " << pinned << "\n";
  }
  std::cout << "coro_http_server listening on " << server->listenAddress().toIpPort() << std::endl;
  lifecycle.serving(lifecycleParts(server.get()));
  loop.loop();
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  Flags flags("coro_http_server", kUsage);
  flags.addAddress("--address", &settings.address);
  flags.addPort("--port", &settings.port);
  flags.addInt("--threads", &settings.threads, 0, 1024);
  flags.addBackend("--backend", &settings.backend);
  flags.addDirectory("--root", &settings.root);
  flags.addInt("--idle-timeout", &settings.idleTimeout, 0, 86400);
  flags.addInt("--header-timeout", &settings.headerTimeout, 1, 86400);
  flags.addSwitch("--h2c", &settings.h2c);
  flags.addInt("--drain-timeout", &settings.drainTimeout, 0, 86400);
  flags.addSwitch("--ws-deflate", &settings.wsDeflate);
  flags.addDirectory("--profile-dir", &settings.profileDir);
  settings.cpuAffinity.addTo(&flags);
  if (const std::optional<int> exitStatus = flags.parse(argc, argv)) return *exitStatus;
  if (const std::string problem = settings.cpuAffinity.check(settings.threads); !problem.empty()) {
    std::cerr << "coro_http_server: " << problem << " (see --help)\n";
    return Flags::kExitUsage;
  }
  try {
    serve(settings, std::vector<std::string>(argv, argv + argc));
  } catch (const std::system_error& e) {
    std::cerr << "coro_http_server: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {  // a malformed LISTEN_FDS
    std::cerr << "coro_http_server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
