// Ping-pong client on libevent 2.1, as in the book's libevent test: one
// bufferevent per session whose read callback counts the input and moves it
// to the output. Single-threaded like that test. Connects every session
// first, then starts the clock and sends one block on each.
//
// usage: libevent_pingpong_client <address> <port> 1 <blocksize> <sessions> <time_seconds>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pingpong/floor/PingpongArgs.h"

namespace {

using Clock = std::chrono::steady_clock;

// Everything the callbacks share; lives in main() for the whole run.
struct Run {
  event_base* base = nullptr;
  event* timer = nullptr;
  timeval duration{};
  std::string block;
  std::vector<bufferevent*> sessions;
  int connected = 0;
  bool stopping = false;
  int64_t bytes = 0;
  int64_t messages = 0;
  Clock::time_point start;
  Clock::time_point end;
  std::string error;
};

void readCallback(bufferevent* bev, void* arg) {
  auto* run = static_cast<Run*>(arg);
  evbuffer* input = bufferevent_get_input(bev);
  run->bytes += static_cast<int64_t>(evbuffer_get_length(input));
  ++run->messages;
  evbuffer_add_buffer(bufferevent_get_output(bev), input);
}

void startClock(Run& run) {
  // START/STOP let a runner sample the server's CPU time over the window.
  std::printf("START\n");
  std::fflush(stdout);
  run.start = Clock::now();
  evtimer_add(run.timer, &run.duration);
  for (bufferevent* bev : run.sessions) {
    bufferevent_write(bev, run.block.data(), run.block.size());
  }
}

void eventCallback(bufferevent* bev, short events, void* arg) {
  auto* run = static_cast<Run*>(arg);
  if (events & BEV_EVENT_CONNECTED) {
    const int one = 1;
    ::setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (++run->connected == static_cast<int>(run->sessions.size())) startClock(*run);
    return;
  }
  if ((events & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) && !run->stopping) {
    run->error = (events & BEV_EVENT_EOF) ? std::string("connection closed by the server")
                                          : evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR());
    run->stopping = true;
    event_base_loopbreak(run->base);
  }
}

void timerCallback(evutil_socket_t, short, void* arg) {
  auto* run = static_cast<Run*>(arg);
  run->end = Clock::now();
  std::printf("STOP\n");
  std::fflush(stdout);
  run->stopping = true;
  event_base_loopbreak(run->base);
}

struct BaseDeleter {
  void operator()(event_base* base) const { event_base_free(base); }
};
struct EventDeleter {
  void operator()(event* ev) const { event_free(ev); }
};

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ClientArgs args = pingpong::parseClientArgs(
      argc, argv,
      {"libevent_pingpong_client", 1,
       "threads must be 1: the book's libevent test (bufferevents on one event_base) is "
       "single-threaded."});
  ::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<event_base, BaseDeleter> base(event_base_new());
  if (!base) {
    std::fprintf(stderr, "libevent_pingpong_client: event_base_new failed\n");
    return pingpong::kExitFailure;
  }
  Run run;
  run.base = base.get();
  run.block.resize(args.blocksize);
  for (size_t i = 0; i < args.blocksize; ++i) run.block[i] = static_cast<char>(i % 128);
  const double whole = std::floor(args.time.count());
  run.duration.tv_sec = static_cast<time_t>(whole);
  run.duration.tv_usec = static_cast<suseconds_t>((args.time.count() - whole) * 1e6);
  std::unique_ptr<event, EventDeleter> timer(evtimer_new(base.get(), timerCallback, &run));
  run.timer = timer.get();

  for (int i = 0; i < args.sessions; ++i) {
    bufferevent* bev = bufferevent_socket_new(base.get(), -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == nullptr) {
      std::fprintf(stderr, "libevent_pingpong_client: bufferevent_socket_new failed\n");
      return pingpong::kExitFailure;
    }
    run.sessions.push_back(bev);
    bufferevent_setcb(bev, readCallback, nullptr, eventCallback, &run);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(bev, args.endpoint.sockAddr(),
                                   static_cast<int>(args.endpoint.length)) < 0) {
      run.error = evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR());
      break;
    }
  }

  if (run.error.empty()) event_base_dispatch(base.get());
  for (bufferevent* bev : run.sessions) bufferevent_free(bev);

  if (!run.error.empty()) {
    std::fprintf(stderr, "libevent_pingpong_client: %s %s: %s\n",
                 run.connected < args.sessions ? "connect to" : "connection to",
                 pingpong::formatEndpoint(args.endpoint.address, args.endpoint.port).c_str(),
                 run.error.c_str());
    return pingpong::kExitFailure;
  }
  std::printf("%s\n",
              pingpong::formatResult("libevent", args, run.bytes, run.messages, run.end - run.start)
                  .c_str());
  return 0;
}
