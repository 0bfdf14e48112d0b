// drainToken(): how a connection coroutine of serve() hears that its server
// is draining (TcpServer::drain): the token is requested then, on the
// connection's loop, so that the handler can finish its current answer and
// return instead of waiting for the next request:
//
//   Input in = co_await withStop(drainToken(stream), stream.read());
//   if (in.error() == Errc::kCancelled) co_return;  // draining
//
// A handler that ignores it is closed at the drain's deadline. Never
// requested for a stream of connect(), nor for an empty Stream. Loop thread.
// Apart from Coro.h, which it would make longer to compile for every user.
#pragma once

#include <stop_token>

#include "net/coro/Stream.h"

namespace libnet::coro {

[[nodiscard]] std::stop_token drainToken(const Stream& stream);

}  // namespace libnet::coro
