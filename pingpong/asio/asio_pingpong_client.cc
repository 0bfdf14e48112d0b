// Ping-pong client on Boost.Asio 1.74. Connects every session first, then
// starts the clock and sends one block on each; every session echoes what it
// receives until the time is up, and one RESULT line reports the bytes read.
//
// usage: asio_pingpong_client <address> <port> <threads> <blocksize> <sessions> <time_seconds>
#include <boost/asio/ip/tcp.hpp>
#include <memory>

#include "pingpong/asio/ClientThread.h"
#include "pingpong/asio/PingClient.h"
#include "pingpong/asio/PingSession.h"
#include "pingpong/floor/PingpongArgs.h"

namespace {

using boost::asio::ip::tcp;
using Session = pingpong::PingSession<tcp::socket>;
using Client = pingpong::PingClient<pingpong::ClientThread<Session>>;

constexpr const char* kProgram = "asio_pingpong_client";

}  // namespace

int main(int argc, char** argv) {
  const pingpong::ClientArgs args = pingpong::parseClientArgs(argc, argv, {kProgram});
  Client client(kProgram, args);
  if (auto status = client.connectAll([&](int t) {
        return std::make_shared<Session>(tcp::socket(client.context(t)), client.thread(t).stats,
                                         args.blocksize);
      })) {
    return *status;
  }
  return client.runTimed("asio");
}
