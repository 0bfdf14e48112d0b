#include "net/http/HttpServer.h"

#include <unistd.h>

#include <algorithm>
#include <any>
#include <cerrno>
#include <exception>

#include "base/Logging.h"
#include "net/Buffer.h"
#include "net/EventLoop.h"
#include "net/TcpConnection.h"
#include "net/http/HttpChars.h"
#include "net/http/HttpDate.h"

namespace libnet::http {

struct HttpServer::ConnectionState {
  explicit ConnectionState(const HttpParser::Limits& limits) : parser(limits) {}

  HttpParser parser;
  MonoTime requestStart{};
  bool closing = false;       // an answer with Connection: close is on its way
  bool continueSent = false;  // "100 Continue" already sent for this request
  bool linger = false;        // the client may still be sending: half-close, read on
  bool paused = false;        // reading stopped until queued output drains
};

namespace {

// The answers of one onMessage call are gathered here, then sent in one
// write. Per thread, so an idle connection holds no output memory.
Buffer& batchBuffer() {
  thread_local Buffer buffer(16 * 1024);
  return buffer;
}

std::string_view currentDate() {
  thread_local HttpDateCache cache;
  return cache.now();
}

// Reads [0, size) of `fd` into `out`; false if the file ended early or failed.
bool appendFileContents(int fd, size_t size, Buffer* out) {
  out->ensureWritableBytes(size);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out->beginWrite() + done, size - done, static_cast<off_t>(done));
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  out->hasWritten(size);
  return true;
}

}  // namespace

HttpServer::HttpServer(EventLoop* loop, const InetAddress& listenAddr, std::string name,
                       Options options)
    : server_(loop, listenAddr, std::move(name)), options_(options) {
  server_.setTcpNoDelay(true);  // a response is one write; never let Nagle hold its tail
  if (options_.idleTimeout > Duration::zero()) {
    // Ticks of a second (a quarter of the timeout if that is shorter) keep
    // the kick within a few percent of the timeout at a tick cost of nothing.
    const Duration tick = std::min<Duration>(std::chrono::seconds(1),
                                             std::max<Duration>(options_.idleTimeout / 4,
                                                                std::chrono::milliseconds(1)));
    server_.setIdleTimeout(options_.idleTimeout, tick);
  }
  server_.setConnectionCallback([this](const TcpConnectionPtr& conn) { onConnection(conn); });
  server_.setMessageCallback([this](const TcpConnectionPtr& conn, Buffer* buf, Timestamp t) {
    onMessage(conn, buf, t);
  });
}

void HttpServer::onConnection(const TcpConnectionPtr& conn) {
  if (conn->connected()) {
    conn->setContext(std::make_shared<ConnectionState>(options_.limits));
  } else {
    conn->setContext(std::any());
  }
}

void HttpServer::appendError(int status, Buffer* out) {
  HttpResponse response(true);
  response.setStatusPage(status);
  response.appendToBuffer(out, currentDate());
}

HttpServer::ConnectionState* HttpServer::stateOf(const TcpConnectionPtr& conn) {
  auto* holder = std::any_cast<std::shared_ptr<ConnectionState>>(conn->getMutableContext());
  return holder != nullptr ? holder->get() : nullptr;
}

void HttpServer::onMessage(const TcpConnectionPtr& conn, Buffer* buf, Timestamp) {
  ConnectionState* state = stateOf(conn);
  if (state == nullptr || state->closing) {  // answered already; drain until the peer goes
    buf->retrieveAll();
    return;
  }
  Buffer& out = batchBuffer();
  HttpParser& parser = state->parser;
  while (!state->closing) {
    if (buf->readableBytes() > 0 && !parser.midRequest() &&
        conn->queuedOutputBytes() + out.readableBytes() > options_.maxQueuedOutput) {
      // Answer no more until the client has read what it has been sent;
      // the unparsed requests stay in the connection's input buffer.
      state->paused = true;
      conn->stopRead();
      conn->setWriteCompleteCallback(resume);
      break;
    }
    const bool fresh = !parser.midRequest();
    const HttpParser::Result result = parser.parse(buf);
    if (result == HttpParser::Result::kNeedMore) {
      if (!parser.midRequest()) break;
      const MonoTime now = MonoClock::now();
      if (fresh) state->requestStart = now;
      if (parser.inHeaderPhase()) {
        if (now - state->requestStart > options_.headerTimeout) {
          LOG_DEBUG << conn->name() << ": headers not complete in time";
          appendError(408, &out);
          state->closing = true;
          state->linger = true;
        }
      } else if (!state->continueSent && parser.request().version() == Version::kHttp11) {
        // The client waits for a go-ahead before sending a large body.
        const auto expect = parser.request().header("Expect");
        if (expect && detail::equalsIgnoreCase(*expect, "100-continue")) {
          out.append("HTTP/1.1 100 Continue\r\n\r\n");
          state->continueSent = true;
        }
      }
      break;
    }
    if (result == HttpParser::Result::kError) {
      LOG_DEBUG << conn->name() << ": bad request, " << parser.errorStatus() << " "
                << parser.errorMessage();
      appendError(parser.errorStatus(), &out);
      state->closing = true;
      state->linger = true;
      break;
    }
    state->closing = !respond(conn, parser.request(), &out);
    state->continueSent = false;
    parser.reset();
  }
  if (out.readableBytes() > 0) conn->send(&out);
  if (state->closing) {
    if (state->linger || buf->readableBytes() > 0) {
      // Closing with unread input would send a reset that can destroy the
      // answer before the client reads it: half-close once it is out, and
      // discard what still comes until the client closes (or idles out).
      buf->retrieveAll();
      conn->shutdown();
    } else {
      conn->closeAfterOutput();  // a clean end: no wait for the client's FIN
    }
  }
}

void HttpServer::resume(const TcpConnectionPtr& conn) {
  ConnectionState* state = stateOf(conn);
  if (state == nullptr || !state->paused) return;
  state->paused = false;
  conn->setWriteCompleteCallback(nullptr);
  conn->startRead();  // delivers the buffered requests first
}

bool HttpServer::respond(const TcpConnectionPtr& conn, const HttpRequest& request, Buffer* out) {
  HttpResponse response(!request.keepAlive());
  if (request.version() == Version::kHttp10 && request.keepAlive()) {
    response.setKeepAliveHeader(true);
  }
  try {
    if (handler_) {
      handler_(request, &response);
    } else {
      response.setStatus(404);
    }
  } catch (const std::exception& e) {
    LOG_ERROR << conn->name() << ": handler threw: " << e.what();
    appendError(500, out);
    return false;
  }
  const bool headOnly = request.method() == Method::kHead;
  const size_t mark = out->readableBytes();
  response.appendToBuffer(out, currentDate(), headOnly);
  if (response.hasFile() && !headOnly) {
    UniqueFd file = response.takeFile();
    const size_t length = response.contentLength();
    if (length <= options_.inlineFileMax) {
      if (!appendFileContents(file.get(), length, out)) {
        LOG_SYSERR << conn->name() << ": reading the response file";
        out->unwrite(out->readableBytes() - mark);  // take back the headers
        appendError(500, out);
        return false;
      }
    } else {
      conn->sendFile(std::move(file), 0, length, out);  // `out` (heads so far) goes first
    }
  }
  return !response.closeConnection();
}

}  // namespace libnet::http
