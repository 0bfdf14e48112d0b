// LoopGather: asks several loops for one piece of text each, made on the
// loop itself (a functor in its queue, so that it reads the loop's own
// state without a lock), and hands the pieces over once every loop has
// answered or a deadline has passed, whichever comes first. Nothing blocks:
// neither the loop that asks nor the loops that answer wait for one another
// (docs/operations.md, "The inspector"). The inspector's listings use it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/Duration.h"

namespace libnet {
class EventLoop;
}

namespace libnet::inspect {

class LoopGather {
 public:
  // Runs on the thread of loops[index]; may run on several loops at once
  // (each with its own index).
  using Read = std::function<std::string(size_t index)>;
  // Runs once: on the thread of the last loop to answer, or on `timerLoop`
  // at the deadline. pieces[i] is loops[i]'s text, nullopt for a loop that
  // had not answered by then (its answer, if it comes, is dropped).
  using Done = std::function<void(std::vector<std::optional<std::string>> pieces)>;

  LoopGather() = delete;

  // Any thread. No loops: `done` runs at once, on the calling thread.
  static void start(const std::vector<EventLoop*>& loops, Read read, EventLoop* timerLoop,
                    Duration deadline, Done done);
};

}  // namespace libnet::inspect
