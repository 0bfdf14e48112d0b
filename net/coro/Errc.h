// Errc: how an awaited operation of the coroutine layer ended. Every awaitable
// of net/coro/ reports its outcome as a value (never by throwing), so a
// connection coroutine reads as a loop over results; exceptions are for the
// application's own errors.
#pragma once

#include <cstdint>

namespace libnet::coro {

enum class Errc : uint8_t {
  kOk,
  // The peer closed its side (half-close): no more input will come; output
  // may still be sent.
  kEof,
  // The connection is closed (by either side, by an error, or because its
  // server or client went away): nothing more can be sent or received.
  kClosed,
  // A withTimeout() around the operation expired.
  kTimedOut,
  // A stop was requested (std::stop_token given to spawn() or withStop()).
  kCancelled,
  // readUntil(): no delimiter within the limit.
  kTooLong,
  // connect(): the attempt failed; ConnectResult::sysError says why.
  kConnectFailed,
};

// What `error` means, in words (for a log line).
[[nodiscard]] const char* errcName(Errc error);

}  // namespace libnet::coro
