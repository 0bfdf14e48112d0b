// SessionStats: the counters that the client sessions of one thread (every
// asio ping-pong client's) add to. Owned by that thread's ClientThread; only
// the thread running its io_context writes it, and the main thread reads it
// after the run.
#pragma once

#include <cstdint>
#include <string>

namespace pingpong {

struct SessionStats {
  int64_t bytes = 0;
  int64_t messages = 0;
  std::string error;  // first connection failure seen during the run
};

}  // namespace pingpong
