// ConnectAwaiter: the operation inside connect() (net/coro/Connect.h): the
// client's connect, its callbacks taken over until the connection is up (or
// failed, or the timeout passed), and the Stream made from it. Part of the
// layer's inside. Loop thread of the client.
#pragma once

#include <chrono>
#include <coroutine>
#include <memory>
#include <string>

#include "base/Duration.h"
#include "net/Callbacks.h"
#include "net/TimerId.h"
#include "net/coro/Connect.h"
#include "net/coro/Operation.h"
#include "net/coro/StreamOptions.h"

namespace libnet::coro {

class ConnectAwaiter : public detail::Operation {
 public:
  ConnectAwaiter(TcpClient* client, Duration timeout, const StreamOptions& options)
      : client_(client), timeout_(timeout), options_(options) {}
  ConnectAwaiter(ConnectAwaiter&&) noexcept = default;  // before awaiting
  ConnectAwaiter& operator=(ConnectAwaiter&&) = delete;
  ~ConnectAwaiter();

  [[nodiscard]] bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> awaiting) {
    return suspend(awaiting, awaiting.promise().context());
  }
  ConnectResult await_resume();

  // Shared with the client's callbacks, which outlive the await.
  struct Pending {
    ConnectAwaiter* waiter = nullptr;  // null once the await is over
    TcpConnectionPtr conn;
    int sysError = 0;
    std::string detail;
  };

 private:
  void cancel(Errc why) override;
  bool suspend(std::coroutine_handle<> awaiting, TaskContext* context);
  // Ends the await with `result`: stops the client and the timer.
  void finish(Errc result);

  TcpClient* client_;
  Duration timeout_;
  StreamOptions options_;
  std::shared_ptr<Pending> pending_;
  TimerId timer_;
};

}  // namespace libnet::coro
