#include "net/coro/Connect.h"

#include "base/Duration.h"
#include "net/EventLoop.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/coro/ConnectAwaiter.h"
#include "net/coro/StreamState.h"
#include "net/coro/TaskContext.h"

namespace libnet::coro {

ConnectAwaiter::~ConnectAwaiter() {
  if (!suspended()) return;
  forgetInTask();
  if (pending_ && pending_->waiter == this) {
    // Destroyed while waiting (its loop went away).
    pending_->waiter = nullptr;
    if (timer_.valid()) context_->loop()->cancel(timer_);
  }
}

bool ConnectAwaiter::suspend(std::coroutine_handle<> awaiting, TaskContext* context) {
  client_->loop()->assertInLoopThread();
  if (!prepareSuspend(awaiting, context)) return false;
  pending_ = std::make_shared<Pending>();
  pending_->waiter = this;
  // The outcome is reported from the loop's queue, not from inside the
  // client's callbacks: the resumed coroutine may call connect() on the same
  // client again, which replaces those callbacks.
  client_->setConnectionCallback(
      [pending = pending_, options = options_](const TcpConnectionPtr& conn) {
        if (!conn->connected()) return;  // down: the StreamState ends what is pending
        if (pending->waiter == nullptr) {
          conn->forceClose();  // too late: the await timed out or was cancelled
          return;
        }
        StreamState::attach(conn, options);  // before its first byte arrives
        pending->conn = conn;
        conn->loop()->queueInLoop([pending] {
          if (pending->waiter != nullptr) pending->waiter->finish(Errc::kOk);
        });
      });
  client_->setMessageCallback(defaultMessageCallback);
  client_->setConnectErrorCallback([pending = pending_, loop = client_->loop()](int err) {
    if (pending->waiter == nullptr || pending->sysError != 0) return;
    pending->sysError = err;
    loop->queueInLoop([pending] {
      if (pending->waiter != nullptr) pending->waiter->finish(Errc::kConnectFailed);
    });
  });
  // By name, it comes just before the errno, which ends the await.
  client_->setConnectFailureCallback([pending = pending_](const ConnectFailure& failure) {
    if (pending->waiter != nullptr && pending->sysError == 0) pending->detail = failure.message();
  });
  timer_ = context->loop()->runAfter(timeout_, [this] {
    timer_ = TimerId();
    finish(Errc::kTimedOut);
  });
  client_->connect();
  return true;
}

void ConnectAwaiter::finish(Errc result) {
  pending_->waiter = nullptr;
  if (timer_.valid()) context_->loop()->cancel(timer_);
  timer_ = TimerId();
  if (result != Errc::kOk) client_->stop();
  resumeWith(result);
}

void ConnectAwaiter::cancel(Errc why) { finish(why); }

ConnectResult ConnectAwaiter::await_resume() {
  ConnectResult result;
  result.error = result_;
  if (pending_) {
    result.sysError = result_ == Errc::kConnectFailed ? pending_->sysError : 0;
    if (result_ == Errc::kConnectFailed) result.detail = std::move(pending_->detail);
    if (result_ == Errc::kOk) {
      result.stream = Stream(std::move(pending_->conn), options_);
    } else if (pending_->conn) {
      pending_->conn->forceClose();
    }
    pending_->conn.reset();
  }
  return result;
}

Task<ConnectResult> connect(TcpClient& client, Duration timeout, StreamOptions options) {
  co_return co_await ConnectAwaiter(&client, timeout, options);
}

}  // namespace libnet::coro
