// callGuarded: runs a callback that must not end the caller's work by
// throwing (a timer callback, an idle callback, a callback of the
// application's inside the loop): an exception that escapes it is caught,
// logged at ERROR with `what` (which callback it was) and its what(), and
// reported as `false`. The one helper the library uses to catch and log an
// exception from a callback (a connection coroutine's own body, which must
// await inside its frame, catches in net/coro/Serve.cc); see docs/architecture.md, "Errors": the
// event loop must go on serving every other connection, and the exception's message is kept in the
// log.
//
//   if (!callGuarded("timer callback", timer.callback)) ...
//
// Header-only; any thread.
#pragma once

#include <exception>
#include <utility>

#include "base/Logging.h"

namespace libnet {

// True when `f()` returned; false when it threw (logged). `what` names the
// callback in the log line ("timer callback"): anything a log line takes,
// written only when something was thrown (so a description built of parts,
// a connection's name and a callback's, costs nothing on the way through).
template <class What, class F>
bool callGuarded(const What& what, F&& f) noexcept {
  try {
    std::forward<F>(f)();
    return true;
  } catch (const std::exception& e) {
    LOG_ERROR << "exception escaped a " << what << ": " << e.what();
  } catch (...) {
    // Anything may be thrown (an int, a string); it is lost either way, but
    // the log says where.
    LOG_ERROR << "non-standard exception escaped a " << what;
  }
  return false;
}

}  // namespace libnet
