// connect(): a coroutine connect on a TcpClient, with a timeout.
//
//   ConnectResult r = co_await coro::connect(client, 2s);
//   if (!r) LOG_WARN << errcName(r.error) << " " << strerror(r.sysError);
//   Stream stream = std::move(r.stream);
//
// Starts client.connect() and resumes with a Stream of the connection once
// it is established; or with kConnectFailed and the errno of the first failed
// attempt (ECONNREFUSED, ...: no retry; by name, the first Happy Eyeballs
// round, every error of it in `detail`); or with kTimedOut when `timeout`
// passes first (the client is then stopped). A scope around it (withStop())
// cancels it the same way. It takes over the client's connection, message
// and connect-error/-failure callbacks. The Stream is bounded by `options`.
//
// Loop thread of the client. The client must outlive the await and the
// Stream: destroying the client closes its connection (pending operations
// end with kClosed). One coroutine frame per connect.
#pragma once

#include <chrono>
#include <string>

#include "base/Duration.h"
#include "net/coro/Errc.h"
#include "net/coro/Stream.h"
#include "net/coro/StreamOptions.h"
#include "net/coro/Task.h"

namespace libnet {
class TcpClient;
}

namespace libnet::coro {

struct ConnectResult {
  Stream stream;
  Errc error = Errc::kOk;
  int sysError = 0;    // kConnectFailed: the errno
  std::string detail;  // kConnectFailed by name, or by TLS: ConnectFailure::message()
  [[nodiscard]] explicit operator bool() const { return error == Errc::kOk; }
};

[[nodiscard]] Task<ConnectResult> connect(TcpClient& client, Duration timeout,
                                          StreamOptions options = {});

}  // namespace libnet::coro
