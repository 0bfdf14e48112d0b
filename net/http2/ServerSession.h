// http2::ServerSession: the server side of one HTTP/2 connection, without
// I/O. nghttp2 does the framing, HPACK and flow control; this class turns
// each complete request into an HttpRequest, answers it with the
// application's HttpServer::Handler (the same handler HTTP/1.1 uses: a body,
// or a file read one DATA frame at a time into the output), and holds the defences that
// are not nghttp2's (docs/http2.md). The connection glue
// (net/http2/Http2Server.cc), the coroutine server and the fuzz target feed
// it bytes with receive() and take frames with produce().
//
// Back-pressure: produce() stops at the budget it is given (the room under
// the connection's output limit) and resumes where it stopped; a stream
// whose peer does not open its window produces nothing; request bodies are
// bounded per stream and per connection.
//
// Handlers run inside receive(), on the caller's thread; anything they throw
// is caught (a 500 for that stream). One thread at a time; not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/Timestamp.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpServer.h"
#include "net/http2/Options.h"

struct nghttp2_session;

namespace libnet {
class Buffer;
}  // namespace libnet

namespace libnet::http2 {

class ServerSession {
 public:
  // What a session shares with its server: read only once serving starts.
  struct Config {
    Options options{};
    http::HttpParser::Limits limits{};
    http::HttpServer::Handler handler{};
  };

  // `name` names the connection in log lines. Queues the server's SETTINGS.
  ServerSession(const Config& config, std::string name);
  ~ServerSession();
  ServerSession(const ServerSession&) = delete;
  ServerSession& operator=(const ServerSession&) = delete;

  // Takes every byte of `data` (the client's preface first). False once the
  // connection is to end: a protocol error or a defence tripped (the GOAWAY
  // saying why is queued: produce() it, then close).
  [[nodiscard]] bool receive(std::string_view data);
  // Appends frames to `out` while it holds less than `budget` bytes (it may
  // pass it by one frame); more is produced by the next call.
  void produce(Buffer* out, size_t budget);
  [[nodiscard]] bool wantsWrite() const;
  // Nothing more to read or write: the connection may close once the
  // output is out.
  [[nodiscard]] bool finished() const;

  // Ends the connection gracefully: GOAWAY (NO_ERROR) naming the last stream
  // taken; those streams are answered, then finished() turns true.
  void goAway();
  // Ends it now with GOAWAY carrying `errorCode` (an HTTP/2 error code).
  void terminate(uint32_t errorCode, std::string_view why);

  // The preface and the client's first SETTINGS have not arrived yet, or a
  // header block is open: the header deadline runs.
  [[nodiscard]] bool awaitingHeaders() const { return !prefaceDone_ || headerBlockOpen_; }
  // Answers submitted and not yet finished (streams that owe the client
  // bytes), and the response bytes produced so far: no progress for a while
  // with answers pending is a stalled client.
  [[nodiscard]] size_t pendingResponses() const { return pending_; }
  [[nodiscard]] uint64_t responseBytes() const { return responseBytes_; }

  // The connection served, given to every request for its
  // HttpRequest::peerAddress().
  void setConnection(std::weak_ptr<const TcpConnection> connection) {
    connection_ = std::move(connection);
  }

  struct Stream;  // a request and its answer (ServerSession.cc)
  struct Callbacks;

 private:
  // A token bucket: take() is false once the burst is spent faster than
  // the rate refills it.
  class Bucket {
   public:
    Bucket(uint32_t burst, uint32_t perSecond);
    [[nodiscard]] bool take(MonoTime now);

   private:
    double tokens_;
    double burst_;
    double perSecond_;
    MonoTime last_{};
  };

  // What a callback returns: once a defence has ended the connection, a
  // fatal error, so that nghttp2 parses nothing more of this input (its
  // state after its own termination is not meant to be parsed on: an
  // assertion in nghttp2 aborted the process on a bad frame that followed).
  // The GOAWAY already queued still goes out.
  [[nodiscard]] int stopIfFailed() const;
  void submitSettings();
  // The handler's answer (or `status` when the request was refused before
  // it), submitted on `stream`.
  void answer(Stream* stream);
  void submitResponse(Stream* stream, http::HttpResponse* response);
  void refuseOrServe(Stream* stream);
  Stream* streamFor(int32_t id);
  void closeStream(int32_t id, uint32_t errorCode);

  const Config& config_;
  const std::string name_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  Buffer* out_ = nullptr;  // produce()'s target while it runs
  size_t budget_ = 0;
  size_t pending_ = 0;
  uint64_t responseBytes_ = 0;
  size_t bodyBytes_ = 0;  // request bodies buffered over all streams
  // The header block being received: its frames and wire bytes so far.
  bool headerBlockOpen_ = false;
  uint32_t blockFrames_ = 0;
  size_t blockBytes_ = 0;
  bool prefaceDone_ = false;
  int32_t highestRequestStream_ = 0;
  // goAway() was called: streams above goAwayLast_ are refused, not served.
  bool goingAway_ = false;
  int32_t goAwayLast_ = 0;
  bool failed_ = false;
  Bucket resets_;
  Bucket control_;
  std::weak_ptr<const TcpConnection> connection_;
};

}  // namespace libnet::http2
