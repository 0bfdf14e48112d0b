// connect(): a coroutine connect on a TcpClient, with a timeout.
//
//   ConnectResult r = co_await coro::connect(client, 2s);
//   if (!r) LOG_WARN << errcName(r.error) << " " << strerror(r.sysError);
//   Stream stream = std::move(r.stream);
//
// Starts client.connect() and resumes with a Stream of the connection once
// it is established; or with kConnectFailed and the errno of the first failed
// attempt (ECONNREFUSED, ...: no retry); or with kTimedOut when `timeout`
// passes first (the client is then stopped). A scope around it (withStop())
// cancels it the same way. It takes over the client's connection, message
// and connect-error callbacks.
//
// Loop thread of the client. The client must outlive the await and the
// Stream: destroying the client closes its connection (pending operations
// end with kClosed).
#pragma once

#include <coroutine>
#include <memory>

#include "base/Timestamp.h"
#include "net/TimerId.h"
#include "net/coro/Operation.h"
#include "net/coro/Stream.h"

namespace libnet {
class TcpClient;
}

namespace libnet::coro {

struct ConnectResult {
  Stream stream;
  Errc error = Errc::kOk;
  int sysError = 0;  // kConnectFailed: the errno
  [[nodiscard]] explicit operator bool() const { return error == Errc::kOk; }
};

class ConnectAwaiter : public Operation {
 public:
  ConnectAwaiter(TcpClient* client, Duration timeout) : client_(client), timeout_(timeout) {}
  ConnectAwaiter(ConnectAwaiter&& other) noexcept
      : client_(other.client_), timeout_(other.timeout_) {}  // before awaiting
  ConnectAwaiter& operator=(ConnectAwaiter&&) = delete;
  ~ConnectAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  ConnectResult await_resume();

  void cancel(Errc why) override;

  // Shared with the client's callbacks, which outlive the await.
  struct Pending {
    ConnectAwaiter* waiter = nullptr;  // null once the await is over
    TcpConnectionPtr conn;
    int sysError = 0;
  };

 private:
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);
  // Ends the await with `result`: stops the client and the timer.
  void finish(Errc result);

  TcpClient* client_;
  Duration timeout_;
  std::shared_ptr<Pending> pending_;
  TimerId timer_;
};

[[nodiscard]] inline ConnectAwaiter connect(TcpClient& client, Duration timeout) {
  return ConnectAwaiter(&client, timeout);
}

}  // namespace libnet::coro
