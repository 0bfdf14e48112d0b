// spawn(): runs a Task<> on a loop with no one awaiting it (a detached task).
// The library owns it from then on: its frames are freed when it finishes,
// and, if the loop is destroyed while it is still suspended, there (see
// "Lifetimes" in docs/coroutines.md): every awaitable undoes its
// registration as its frame goes, so nothing leaks and nothing resumes it
// afterwards.
//
// spawn() may be called from any thread. On the loop's thread the task
// starts at once and runs until it first suspends before spawn() returns;
// from another thread it is queued and starts on the loop. Either way it
// runs on that loop only. An exception escaping the task is logged at ERROR.
//
// With a std::stop_token, a stop request (from any thread) cancels the task:
// the operation it is suspended on, and every one it starts afterwards, ends
// with Errc::kCancelled (delivered on the loop, through its queue).
#pragma once

#include <cstddef>
#include <stop_token>

#include "net/coro/Task.h"

namespace libnet {
class EventLoop;
}

namespace libnet::coro {

void spawn(EventLoop* loop, Task<> task);
void spawn(EventLoop* loop, Task<> task, std::stop_token stop);

// Detached tasks of the calling thread's loop that have not finished yet.
[[nodiscard]] size_t detachedTaskCount();

}  // namespace libnet::coro
