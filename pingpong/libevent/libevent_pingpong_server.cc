// Ping-pong echo server on libevent 2.1, as in the book's libevent test:
// bufferevents, and a read callback that moves the whole input buffer to the
// output buffer. Single-threaded like the book's test: libevent's event_base
// is not shared between threads, and the test never ran one per thread.
//
// usage: libevent_pingpong_server <address> <port> 1
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_set>

#include "pingpong/floor/PingpongArgs.h"

namespace {

// Live connections, so that shutdown can free them and exit cleanly.
using ConnectionSet = std::unordered_set<bufferevent*>;

void readCallback(bufferevent* bev, void*) {
  evbuffer_add_buffer(bufferevent_get_output(bev), bufferevent_get_input(bev));
}

void eventCallback(bufferevent* bev, short events, void* arg) {
  if (events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    static_cast<ConnectionSet*>(arg)->erase(bev);
    bufferevent_free(bev);
  }
}

void acceptCallback(evconnlistener* listener, evutil_socket_t fd, sockaddr*, int, void* arg) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  event_base* base = evconnlistener_get_base(listener);
  bufferevent* bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (bev == nullptr) {
    evutil_closesocket(fd);
    return;
  }
  auto* connections = static_cast<ConnectionSet*>(arg);
  bufferevent_setcb(bev, readCallback, nullptr, eventCallback, connections);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
  connections->insert(bev);
}

void signalCallback(evutil_socket_t, short, void* arg) {
  event_base_loopbreak(static_cast<event_base*>(arg));
}

struct BaseDeleter {
  void operator()(event_base* base) const { event_base_free(base); }
};
struct ListenerDeleter {
  void operator()(evconnlistener* listener) const { evconnlistener_free(listener); }
};
struct EventDeleter {
  void operator()(event* ev) const { event_free(ev); }
};

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ServerArgs args = pingpong::parseServerArgs(
      argc, argv,
      {"libevent_pingpong_server", 1,
       "threads must be 1: the book's libevent test (bufferevents on one event_base) is "
       "single-threaded."});
  ::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<event_base, BaseDeleter> base(event_base_new());
  if (!base) {
    std::fprintf(stderr, "libevent_pingpong_server: event_base_new failed\n");
    return pingpong::kExitFailure;
  }
  ConnectionSet connections;
  // libevent's default backlog (-1) is 128, which a burst of 1000 connects
  // overflows; SOMAXCONN is what the other servers use.
  std::unique_ptr<evconnlistener, ListenerDeleter> listener(evconnlistener_new_bind(
      base.get(), acceptCallback, &connections,
      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, SOMAXCONN,
      args.endpoint.sockAddr(), static_cast<int>(args.endpoint.length)));
  if (!listener) {
    std::fprintf(stderr, "libevent_pingpong_server: cannot listen on %s: %s\n",
                 pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(),
                 std::strerror(errno));
    return pingpong::kExitFailure;
  }

  std::unique_ptr<event, EventDeleter> sigint(
      evsignal_new(base.get(), SIGINT, signalCallback, base.get()));
  std::unique_ptr<event, EventDeleter> sigterm(
      evsignal_new(base.get(), SIGTERM, signalCallback, base.get()));
  if (!sigint || !sigterm || evsignal_add(sigint.get(), nullptr) < 0 ||
      evsignal_add(sigterm.get(), nullptr) < 0) {
    std::fprintf(stderr, "libevent_pingpong_server: cannot watch signals\n");
    return pingpong::kExitFailure;
  }

  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(evconnlistener_get_fd(listener.get()), reinterpret_cast<sockaddr*>(&bound), &len);
  const uint16_t port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  std::printf("listening on %s\n", pingpong::formatEndpoint(args.endpoint.address, port).c_str());
  std::fflush(stdout);

  event_base_dispatch(base.get());

  for (bufferevent* bev : connections) bufferevent_free(bev);
  return 0;
}
