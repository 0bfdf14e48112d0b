#include "net/http2/CoroServe.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string_view>

#include "net/Buffer.h"
#include "net/TcpConnection.h"
#include "net/coro/Cancel.h"
#include "net/coro/Errc.h"
#include "net/coro/Input.h"
#include "net/http/WriterGate.h"

// Every co_await here is a statement or an initializer of its own: GCC 12
// miscompiles some co_await expressions nested in larger ones (a
// withTimeout() compared inside an if condition resumed a garbage frame).

namespace libnet::http2 {

namespace {

using coro::Errc;

// The connection's two deadlines, brought up to date after every change of
// the session (input fed, frames produced). Every wait of the coroutine, a
// read or a write held by back-pressure, runs under the nearer one: the
// session changes only between waits, so the one that fires is the one that
// was nearest.
class Deadlines {
 public:
  enum class Kind { kNone, kHeader, kStall };

  Deadlines(Duration header, Duration idle) : header_(header), idle_(idle) {}

  void update(const ServerSession& session, MonoTime now) {
    if (!session.awaitingHeaders()) {
      headerSince_.reset();
    } else if (!headerSince_) {
      headerSince_ = now;
    }
    // Progress is response bytes produced, at the session's minimum rate
    // over each window, which a client holding its window shut, opening it
    // a byte at a time or not reading falls short of; its PINGs' acks do
    // not count.
    if (idle_ <= Duration::zero() || session.pendingResponses() == 0) {
      stallSince_.reset();
    } else if (!stallSince_) {
      startWindow(session, now);
    }
  }

  // The stall deadline passed: true, and the next window begun, if this one
  // moved what it had to.
  [[nodiscard]] bool renew(const ServerSession& session, MonoTime now) {
    if (session.responseBytes() - mark_ < needed_) return false;
    startWindow(session, now);
    return true;
  }

  // The nearest deadline running (kNone: none), and when it falls in `at`.
  [[nodiscard]] Kind next(MonoTime* at) const {
    Kind kind = Kind::kNone;
    if (headerSince_) {
      *at = *headerSince_ + header_;
      kind = Kind::kHeader;
    }
    if (stallSince_ && (kind == Kind::kNone || *stallSince_ + idle_ < *at)) {
      *at = *stallSince_ + idle_;
      kind = Kind::kStall;
    }
    return kind;
  }

 private:
  const Duration header_;
  const Duration idle_;
  std::optional<MonoTime> headerSince_;
  void startWindow(const ServerSession& session, MonoTime now) {
    stallSince_ = now;
    mark_ = session.responseBytes();
    needed_ = session.progressNeeded(idle_);
  }

  std::optional<MonoTime> stallSince_;
  uint64_t mark_ = 0;    // response bytes when the window began
  uint64_t needed_ = 0;  // what it must move
};

// What ends a wait on the client's input early: an answer written later
// (AsyncHandler) queued frames, or a request body's consumer resumed (the
// session's wake), or the stop request. A stop_source is one-shot: a new one
// for each wait after a wake.
class Waker {
 public:
  void wake() { source_.request_stop(); }
  [[nodiscard]] std::stop_token token() {
    if (source_.stop_requested()) source_ = std::stop_source();
    return source_.get_token();
  }
  [[nodiscard]] bool woken() const { return source_.stop_requested(); }

 private:
  std::stop_source source_;
};

// A gate of the connection's own for the writers it hands out when the
// configuration brings none: closed when the connection is done, so that a
// writer kept by another thread touches nothing after.
class OwnGate {
 public:
  explicit OwnGate(bool needed) : gate_(needed ? std::make_shared<http::WriterGate>() : nullptr) {}
  ~OwnGate() {
    if (gate_) gate_->close();
  }
  OwnGate(const OwnGate&) = delete;
  OwnGate& operator=(const OwnGate&) = delete;
  [[nodiscard]] const std::shared_ptr<http::WriterGate>& get() const { return gate_; }

 private:
  std::shared_ptr<http::WriterGate> gate_;
};

// The configuration, with a gate of the connection's own when answers may
// come later and it has none.
ServerSession::Config withGate(const ServerSession::Config& config,
                               const std::shared_ptr<http::WriterGate>& gate) {
  ServerSession::Config copy = config;
  copy.gate = gate;
  return copy;
}

Duration until(MonoTime at) { return std::max(Duration::zero(), at - MonoClock::now()); }

// Feeds the unread input to the session (or drops it once the session has
// failed); false once the connection is to end.
bool feed(ServerSession* session, Buffer* input, bool ok) {
  if (ok && input->readableBytes() > 0) {
    ok = session->receive(std::string_view(input->peek(), input->readableBytes()));
  }
  input->retrieveAll();
  return ok;
}

// Half-closes once the output is written and waits for the client's close,
// at most `linger`; then closes (a client that does not read would
// otherwise hold the connection).
coro::Task<> end(coro::Stream& stream, Duration linger) {
  stream.shutdown();
  const Errc closed = co_await coro::withTimeout(linger, stream.closed());
  if (closed == Errc::kTimedOut) stream.close();
}

// A deadline passed: GOAWAY (NO_ERROR) if the output has room for it (a
// stalled client is not waited for), then the connection ends: closed at
// once after a stall; after a header timeout, half-closed as after a
// protocol error.
coro::Task<> expire(coro::Stream& stream, ServerSession* session, Deadlines::Kind kind,
                    Duration headerTimeout) {
  const bool stalled = kind == Deadlines::Kind::kStall;
  const char* why = stalled ? "answers too slow: under the minimum rate over the idle timeout"
                            : "preface or header block not complete in time";
  session->terminate(0 /* NO_ERROR */, why);
  Buffer out;
  session->produce(&out, kWriteBudget);
  co_await coro::withTimeout(Duration::zero(), stream.write(&out));
  if (stalled) {
    stream.close();
    co_return;
  }
  co_await end(stream, headerTimeout);
}

// The connection's output is over its limit (a write that timed out left
// its bytes queued): nothing more is produced until it drains, or a client
// that does not read would have a write's worth more queued every window.
bool behind(coro::Stream& stream) {
  const TcpConnectionPtr& conn = stream.connection();
  return conn->maxQueuedOutput() != 0 && conn->queuedOutputBytes() > conn->maxQueuedOutput();
}

// One wait of the connection: the write of `out`, the drain of the output,
// or a read (which also ends at the stop request, through `watch`), under
// the nearer deadline when one runs (`at`).
coro::Task<Errc> waitOnce(coro::Stream& stream, Buffer* out, bool drain, std::optional<MonoTime> at,
                          std::stop_token watch) {
  if (out->readableBytes() > 0 || drain) {
    if (!at) {
      const Errc written = co_await stream.write(out);
      co_return written;
    }
    const Errc written = co_await coro::withTimeout(until(*at), stream.write(out));
    co_return written;
  }
  if (!at) {
    const coro::Input in = co_await coro::withStop(watch, stream.read());
    co_return in.error();
  }
  const coro::Input in =
      co_await coro::withStop(watch, coro::withTimeout(until(*at), stream.read()));
  co_return in.error();
}

}  // namespace

coro::Task<> serveConnection(coro::Stream& stream, const ServerSession::Config& config,
                             Duration headerTimeout, Duration idleTimeout, std::stop_token stop) {
  const bool later = (config.asyncHandler || config.router) && !config.gate;
  const OwnGate gate(later);
  const std::optional<ServerSession::Config> own =
      later ? std::optional(withGate(config, gate.get())) : std::nullopt;
  ServerSession session(own ? *own : config, stream.connection()->name());
  // Writers reach the session on this loop, and find the connection's loop
  // through it; what they queue wakes the wait on input.
  session.setConnection(stream.connection());
  Waker waker;
  session.setWake([&waker] { waker.wake(); });
  Deadlines deadlines(headerTimeout, idleTimeout);
  // This connection's frames of one write. Its own, not one per thread: a
  // write under back-pressure suspends with them handed over.
  Buffer out;
  bool ok = true;
  bool eof = false;  // the client has half-closed: answer what it asked, then end
  bool goingAway = false;
  for (;;) {
    if (!goingAway && stop.stop_requested()) {
      goingAway = true;
      session.goAway();
    }
    ok = feed(&session, &stream.input(), ok);
    const bool drain = behind(stream);
    if (session.wantsWrite() && !drain) session.produce(&out, kWriteBudget);
    deadlines.update(session, MonoClock::now());
    MonoTime at{};
    const Deadlines::Kind kind = deadlines.next(&at);
    const bool bounded = kind != Deadlines::Kind::kNone;
    if (out.readableBytes() == 0 && !drain && (!ok || eof || session.finished())) break;
    // A read waits for a wake, and for the stop request too until it has
    // been acted on; a write goes on, under the stall deadline.
    const std::stop_token watch = waker.token();
    const std::optional<std::stop_callback<std::function<void()>>> forward =
        goingAway ? std::nullopt
                  : std::optional<std::stop_callback<std::function<void()>>>(
                        std::in_place, stop, [&waker] { waker.wake(); });
    const Errc result =
        co_await waitOnce(stream, &out, drain, bounded ? std::optional(at) : std::nullopt, watch);
    if (result == Errc::kTimedOut && bounded) {
      if (kind == Deadlines::Kind::kStall && deadlines.renew(session, MonoClock::now())) continue;
      co_await expire(stream, &session, kind, headerTimeout);
      co_return;
    }
    if (result == Errc::kEof) {
      eof = true;
    } else if (result == Errc::kCancelled && (waker.woken() || stop.stop_requested())) {
      continue;  // the GOAWAY, or what a writer queued, goes out at the top
    } else if (result != Errc::kOk) {
      co_return;  // closed, or a scope of the caller's ended
    }
  }
  co_await end(stream, headerTimeout);
}

}  // namespace libnet::http2
