#include "net/http2/CoroServe.h"

#include <algorithm>
#include <optional>
#include <stop_token>
#include <string_view>

#include "net/Buffer.h"
#include "net/TcpConnection.h"
#include "net/coro/Cancel.h"
#include "net/coro/Errc.h"
#include "net/coro/Input.h"

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
    // Progress is response bytes produced, which a client holding its
    // window shut or not reading stops; its PINGs' acks do not count.
    if (idle_ <= Duration::zero() || session.pendingResponses() == 0) {
      stallSince_.reset();
    } else if (!stallSince_ || session.responseBytes() != mark_) {
      stallSince_ = now;
      mark_ = session.responseBytes();
    }
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
  std::optional<MonoTime> stallSince_;
  uint64_t mark_ = 0;
};

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
  const char* why = stalled ? "answers stalled: no byte moved in the idle timeout"
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

}  // namespace

coro::Task<> serveConnection(coro::Stream& stream, const ServerSession::Config& config,
                             Duration headerTimeout, Duration idleTimeout, std::stop_token stop) {
  ServerSession session(config, stream.connection()->name());
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
    if (session.wantsWrite()) session.produce(&out, kWriteBudget);
    deadlines.update(session, MonoClock::now());
    MonoTime at{};
    const Deadlines::Kind kind = deadlines.next(&at);
    const bool bounded = kind != Deadlines::Kind::kNone;
    // A read waits for the stop request too, until it has been acted on (a
    // token that cannot stop costs no registration); a write goes on, under
    // the stall deadline.
    const std::stop_token watch = goingAway ? std::stop_token() : stop;
    Errc result = Errc::kOk;
    if (out.readableBytes() == 0 && (!ok || eof || session.finished())) {
      break;
    } else if (out.readableBytes() > 0 && bounded) {
      result = co_await coro::withTimeout(until(at), stream.write(&out));
    } else if (out.readableBytes() > 0) {
      result = co_await stream.write(&out);
    } else if (bounded) {
      const coro::Input in =
          co_await coro::withStop(watch, coro::withTimeout(until(at), stream.read()));
      result = in.error();
    } else {
      const coro::Input in = co_await coro::withStop(watch, stream.read());
      result = in.error();
    }
    if (result == Errc::kTimedOut && bounded) {
      co_await expire(stream, &session, kind, headerTimeout);
      co_return;
    }
    if (result == Errc::kEof) {
      eof = true;
    } else if (result == Errc::kCancelled && !goingAway && stop.stop_requested()) {
      continue;  // the GOAWAY goes out at the top
    } else if (result != Errc::kOk) {
      co_return;  // closed, or a scope of the caller's ended
    }
  }
  co_await end(stream, headerTimeout);
}

}  // namespace libnet::http2
