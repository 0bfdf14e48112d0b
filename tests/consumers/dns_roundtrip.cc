// dns_roundtrip: the resolver program the consumer tests build against an
// installed or imported libnet_dns, the way an application would. An echo
// TcpServer listens on an ephemeral port of 127.0.0.1; a dns::Resolver looks
// up "localhost" (answered by /etc/hosts) with callbacks, dns::resolve()
// looks up the numeric "127.0.0.1" in a coroutine, both must give
// 127.0.0.1 with the server's port, and a TcpClient sends one message to
// that address and checks that exactly those bytes come back. Uses the
// public headers only; no packet leaves the host (the resolver's only name
// server is a loopback port where nothing listens).
//
// Exit status: 0 on a verified echo, 1 on a failed or unexpected lookup, a
// mismatch, a failed connect or a 10 s timeout (the reason on stderr).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/NameResolver.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/TcpServer.h"
#include "net/coro/Coro.h"
#include "net/dns/CoroResolve.h"
#include "net/dns/Resolver.h"

namespace {

using libnet::InetAddress;
using libnet::NameResolver;
using libnet::ResolveResult;

// Empty if `result` is exactly `expected`, else what is wrong with it.
std::string mismatch(const char* host, const ResolveResult& result, const InetAddress& expected) {
  if (!result.ok()) return std::string(host) + ": lookup failed: " + result.error.message;
  if (result.addresses.empty()) return std::string(host) + ": no address";
  for (const InetAddress& address : result.addresses) {
    if (!(address == expected)) {
      return std::string(host) + " gave " + address.toIpPort() + ", expected " +
             expected.toIpPort();
    }
  }
  return {};
}

libnet::coro::Task<> resolveNumeric(libnet::dns::Resolver& resolver, uint16_t port,
                                    std::optional<ResolveResult>* out, std::function<void()> then) {
  *out = co_await libnet::dns::resolve(resolver, "127.0.0.1", port, NameResolver::Family::kIPv4);
  then();
}

}  // namespace

int main() {
  using namespace libnet;
  int status = 1;
  try {
    EventLoop loop;
    TcpServer server(&loop, InetAddress(0, /*loopbackOnly=*/true), "consumer-dns");
    server.setMessageCallback(
        [](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) { conn->send(buffer); });
    server.start();
    const uint16_t port = server.listenAddress().port();
    const InetAddress expected("127.0.0.1", port);

    // Should /etc/hosts not know "localhost", the query goes to a loopback
    // port with no server behind it and fails at once, instead of asking the
    // system's name servers.
    dns::Resolver::Options options;
    options.servers = {InetAddress("127.0.0.1", 1)};
    options.timeout = std::chrono::seconds(1);
    options.tries = 1;
    options.searchDomains = std::vector<std::string>{};
    dns::Resolver resolver(&loop, options);

    auto fail = [&](const std::string& why) {
      std::fprintf(stderr, "dns_roundtrip: %s\n", why.c_str());
      loop.quit();
    };

    const std::string message = "hello from a program that links libnet_dns";
    std::string received;
    std::unique_ptr<TcpClient> client;
    auto echoTo = [&](const InetAddress& address) {
      client = std::make_unique<TcpClient>(&loop, address, "consumer-dns-client");
      client->setConnectErrorCallback([&](int error) {
        client->stop();
        fail("connect to " + address.toIpPort() + " failed: errno " + std::to_string(error));
      });
      client->setConnectionCallback([&](const TcpConnectionPtr& conn) {
        if (conn->connected()) conn->send(message);
      });
      client->setMessageCallback([&](const TcpConnectionPtr& conn, Buffer* buffer, Timestamp) {
        received += buffer->retrieveAllAsString();
        if (received.size() < message.size()) return;
        status = received == message ? 0 : 1;
        if (status != 0) std::fprintf(stderr, "dns_roundtrip: got '%s'\n", received.c_str());
        conn->shutdown();
        loop.quit();
      });
      client->connect();
    };

    std::optional<ResolveResult> byName;
    std::optional<ResolveResult> byNumber;
    NameResolver::QueryPtr query =
        resolver.lookup("localhost", port, NameResolver::Family::kIPv4, [&](ResolveResult result) {
          byName = std::move(result);
          if (std::string why = mismatch("localhost", *byName, expected); !why.empty()) {
            return fail(why);
          }
          coro::spawn(&loop, resolveNumeric(resolver, port, &byNumber, [&] {
            std::string why = mismatch("127.0.0.1", *byNumber, expected);
            if (!why.empty()) return fail(why);
            echoTo(byName->addresses.front());
          }));
        });

    loop.runAfter(std::chrono::seconds(10), [&] { fail("no echo within 10 s"); });
    loop.loop();
    if (status == 0) {
      std::printf("dns_roundtrip: OK (localhost -> %s, %zu bytes)\n",
                  byName->addresses.front().toIpPort().c_str(), received.size());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dns_roundtrip: %s\n", e.what());
    return 1;
  }
  return status;
}
