// WebSocket echo server on Boost.Beast 1.74, written the way Beast's own
// websocket_server_async example is: one io_context per thread, a
// websocket::stream<beast::tcp_stream> per session, async_read into a
// flat_buffer, then async_write of the same message with the same type
// (text or binary), then read again. It is the peer that libnet's
// ws_echo_server is measured against in bench/websocket/run_ws_bench.py.
//
// With --threads N each thread runs its own io_context and its own acceptor,
// the acceptors sharing the port through SO_REUSEPORT so that the kernel
// spreads connections over them. --deflate enables permessage-deflate in the
// server role: the server accepts what the client offers (ws_load offers
// both no_context_takeover parameters), and compresses with level 6 and
// memLevel 8, what libnet's server uses (zlib's defaults; Beast's own are 8
// and 4). One difference remains: libnet's server sends messages under 64
// bytes uncompressed (DeflateOptions::minMessageSize), while Beast 1.74 has
// no such threshold and compresses every message.
//
// usage: beast_ws_echo_server --port P [--threads N] [--deflate]
#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/asio/detail/socket_option.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <charconv>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "pingpong/CommandLine.h"

namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
using boost::asio::ip::tcp;

constexpr const char* kProgram = "beast_ws_echo_server";
// Large enough for the biggest message the benchmark sends, with room to spare.
constexpr size_t kReadMessageMax = 16 * 1024 * 1024;

// libnet's permessage-deflate settings (net/websocket/Deflate.h).
constexpr int kDeflateLevel = 6;
constexpr int kDeflateMemLevel = 8;

using ReusePort = boost::asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;

struct Args {
  uint16_t port = 0;
  int threads = 1;
  bool deflate = false;
};

// Echoes every message of one connection until the peer closes or fails.
// Owned by the shared_ptrs its pending handlers hold.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, bool deflate) : ws_(std::move(socket)) {
    ws_.next_layer().socket().set_option(tcp::no_delay(true));
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::server));
    ws_.read_message_max(kReadMessageMax);
    if (deflate) {
      websocket::permessage_deflate pmd;
      pmd.server_enable = true;
      pmd.compLevel = kDeflateLevel;
      pmd.memLevel = kDeflateMemLevel;
      ws_.set_option(pmd);
    }
  }

  void start() {
    ws_.async_accept([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->read();
    });
  }

 private:
  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (!ec) self->write();
    });
  }

  void write() {
    ws_.text(ws_.got_text());
    ws_.async_write(buffer_.data(), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return;
      self->buffer_.consume(self->buffer_.size());
      self->read();
    });
  }

  websocket::stream<beast::tcp_stream> ws_;
  beast::flat_buffer buffer_;
};

// Accepts connections on one io_context and starts a Session for each.
class Listener {
 public:
  Listener(boost::asio::io_context& context, const tcp::endpoint& endpoint, bool reusePort,
           bool deflate)
      : context_(context), acceptor_(context), deflate_(deflate) {
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
    if (reusePort) acceptor_.set_option(ReusePort(true));
    acceptor_.bind(endpoint);
    acceptor_.listen(boost::asio::socket_base::max_listen_connections);
  }

  [[nodiscard]] uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void accept() {
    acceptor_.async_accept(context_, [this](beast::error_code ec, tcp::socket socket) {
      if (ec == boost::asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket), deflate_)->start();
      accept();
    });
  }

 private:
  boost::asio::io_context& context_;
  tcp::acceptor acceptor_;
  bool deflate_;
};

[[noreturn]] void usage(int status) {
  std::fprintf(status == 0 ? stdout : stderr, "usage: %s --port P [--threads N] [--deflate]\n",
               kProgram);
  std::exit(status);
}

template <typename T>
bool parseNumber(const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end;
}

Args parseArgs(int argc, char** argv) {
  std::string port, threads = "1";
  Args args;
  const cmdline::Option options[] = {
      {.name = "--port", .value = &port},
      {.name = "--threads", .value = &threads},
      {.name = "--deflate", .flag = &args.deflate},
  };
  const cmdline::CommandLine line = cmdline::parseCommandLine(argc, argv, options);
  if (line.help) usage(0);
  if (!line.error.empty() || !line.positional.empty() || port.empty()) {
    std::fprintf(stderr, "%s: %s\n", kProgram,
                 !line.error.empty() ? line.error.c_str() : "--port is required");
    usage(2);
  }
  if (!parseNumber(port, &args.port) || !parseNumber(threads, &args.threads) || args.threads < 1) {
    std::fprintf(stderr, "%s: bad --port or --threads\n", kProgram);
    usage(2);
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parseArgs(argc, argv);
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts;
  std::vector<std::unique_ptr<Listener>> listeners;
  try {
    tcp::endpoint endpoint(boost::asio::ip::make_address("127.0.0.1"), args.port);
    for (int i = 0; i < args.threads; ++i) {
      contexts.push_back(std::make_unique<boost::asio::io_context>(1));
      listeners.push_back(
          std::make_unique<Listener>(*contexts.back(), endpoint, args.threads > 1, args.deflate));
      // The first acceptor may have bound port 0; the others join the port it got.
      if (i == 0) endpoint.port(listeners[0]->port());
    }
  } catch (const boost::system::system_error& e) {
    std::fprintf(stderr, "%s: cannot listen on 127.0.0.1:%u: %s\n", kProgram, args.port, e.what());
    return 1;
  }

  boost::asio::signal_set signals(*contexts[0], SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code, int) {
    for (auto& context : contexts) context->stop();
  });
  for (auto& listener : listeners) listener->accept();
  std::printf("%s listening on 127.0.0.1:%u\n", kProgram, listeners[0]->port());
  std::fflush(stdout);

  std::vector<std::thread> threads;
  for (int i = 1; i < args.threads; ++i) {
    threads.emplace_back([&context = *contexts[i]] { context.run(); });
  }
  contexts[0]->run();
  for (auto& thread : threads) thread.join();
  return 0;
}
