// fastcgi::UpstreamConnection (private to //net/fastcgi): one connection to
// the FastCGI application, made by a TcpClient (Unix socket or TCP), that
// carries one request at a time and stays open after it (FCGI_KEEP_CONN).
// It writes the exchange's records under the connection's flow control (a
// piece at a time, the next when the last has drained), decodes what comes
// back and hands it to the exchange, stops reading while the client is
// slow, and times the application out: connecting, sending (between two
// drained writes) and reading (between two reads, while the client keeps
// up). Anything unexpected closes it: the framing can no longer be trusted.
//
// Owned by its UpstreamPool (shared_ptr), which it tells when it is free
// again or closed; every TcpClient and timer callback holds a weak_ptr.
// Loop thread only.
#pragma once

#include <memory>
#include <string>

#include "base/Duration.h"
#include "net/Callbacks.h"
#include "net/TimerId.h"
#include "net/fastcgi/RecordDecoder.h"
#include "net/fastcgi/UpstreamOptions.h"

namespace libnet {
class Buffer;
class EventLoop;
class TcpClient;
}  // namespace libnet

namespace libnet::fastcgi {

class Exchange;
class UpstreamPool;

class UpstreamConnection : public std::enable_shared_from_this<UpstreamConnection> {
 public:
  enum class State : uint8_t { kConnecting, kBusy, kIdle, kClosed };

  UpstreamConnection(EventLoop* loop, UpstreamPool* pool, const UpstreamOptions& options);
  ~UpstreamConnection();
  UpstreamConnection(const UpstreamConnection&) = delete;
  UpstreamConnection& operator=(const UpstreamConnection&) = delete;

  // Connects, then runs `exchange`.
  void start(std::shared_ptr<Exchange> exchange);
  // An idle connection runs the next exchange.
  void send(std::shared_ptr<Exchange> exchange);
  // The exchange's client left: the application's answer has nowhere to go.
  void abandon();
  // The exchange has FCGI_STDIN of a streamed body to send: sent now if the
  // connection's output is free, else when it has drained.
  void stdinReady();
  // The client can take more: read the application again (from the loop's
  // queue, never inside the writer's callback).
  void resumeReading();
  // Idle, open, and nothing waiting at the socket (an EOF from an application
  // that closed it, a stray byte): fit for the next request.
  [[nodiscard]] bool reusable() const;
  // Closes now; the pool is not told (it is letting go of it).
  void close();

  [[nodiscard]] State state() const { return state_; }

 private:
  void onConnection(const TcpConnectionPtr& conn);
  void onMessage(Buffer* buf);
  void onConnectError(int error);
  void onWriteComplete();
  void run();
  void sendMore();
  bool handleRecord(const Record& record);
  void endExchange();
  void failExchange(int status, const std::string& why);
  void onClosed();
  void armTimer(Duration delay);
  void onTimer();
  [[nodiscard]] Duration timeLeft(MonoTime now) const;

  EventLoop* loop_;
  UpstreamPool* pool_;
  const UpstreamOptions& options_;
  std::unique_ptr<TcpClient> tcp_;
  TcpConnectionPtr conn_;
  std::shared_ptr<Exchange> exchange_;
  RecordDecoder decoder_;
  State state_ = State::kConnecting;
  size_t sent_ = 0;          // bytes of the exchange's request handed to the socket
  bool writing_ = false;     // a piece is queued and has not drained yet
  bool paused_ = false;      // not reading: the client is slow
  bool received_ = false;    // a byte of this exchange's answer came
  bool reused_ = false;      // it carried a request before this one
  MonoTime started_{};       // of the connect
  MonoTime lastProgress_{};  // the last drained write or read
  TimerId timer_;
  MonoTime timerAt_{};  // when timer_ fires
};

}  // namespace libnet::fastcgi
