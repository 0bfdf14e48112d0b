// http2::ClientSession: the client side of one HTTP/2 connection, without
// I/O (the mirror of ServerSession). nghttp2 does the framing, HPACK and flow
// control; this class keeps the streams the application submitted, hands
// each its response (head, data pieces, trailers, close), and holds the
// defences against a hostile server (docs/http2.md, "The client").
// ClientConnection puts it on a TCP or TLS connection; the fuzz target feeds
// it bytes directly.
//
// Bounded by construction:
// - response bodies: a stream's window (Options::streamWindow) is granted
//   again only as its consumer takes the data; a consumer that pauses
//   (pause()) holds at most one window of it. The connection window never
//   holds anything back (each byte received gives its room back at once).
// - response heads: Options::maxHeaderListBytes per header list (past it the
//   stream is reset, ENHANCE_YOUR_CALM); a header block of more than
//   maxHeaderBlockFrames frames or 2 x maxHeaderListBytes on the wire, or one
//   that decodes past 4 x maxHeaderListBytes (HPACK bomb), ends the
//   connection.
// - control frames: SETTINGS, PING and empty DATA frames from the server draw
//   from a token bucket (controlBurst, refilled at controlPerSecond); an
//   empty bucket ends the connection (GOAWAY ENHANCE_YOUR_CALM).
// - streams: the server's SETTINGS_MAX_CONCURRENT_STREAMS is honoured;
//   requests past it wait in nghttp2's queue (sent as streams close), and at
//   most Options::maxStreams requests are open or queued at once (submit()
//   past it returns 0).
// - request bodies written in pieces (write()): the session queues what it
//   is given; queuedBytes() is the caller's back-pressure and the stream's
//   onWritable runs when the queue drains below Options::writeLowWater.
//
// Every submitted stream's onClose runs exactly once: when both sides have
// ended (errorCode 0), when it is reset by either side, when a GOAWAY leaves
// it unprocessed (refused: safe to retry), when the session fails, or when
// it is destroyed (connectionLost). Callbacks run inside receive(),
// produce() and the destructor, on the caller's thread; one thread at a
// time; not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/Duration.h"
#include "base/Timestamp.h"

struct nghttp2_session;

namespace libnet {
class Buffer;
}  // namespace libnet

namespace libnet::http2 {

class ClientSession {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;

  struct Options {
    // SETTINGS_MAX_HEADER_LIST_SIZE told to the server, and the bound on a
    // response's (or trailers') decoded header list: name + value + 32 per
    // field (RFC 7541 4.1).
    size_t maxHeaderListBytes = 64 * 1024;
    uint32_t maxHeaderBlockFrames = 32;
    // SETTINGS_INITIAL_WINDOW_SIZE: the response body bytes a stream may
    // hold before its consumer takes them (each stream's bound).
    uint32_t streamWindow = 256 * 1024;
    // Requests open or waiting for a stream slot at once.
    size_t maxStreams = 1000;
    // A stream's onWritable runs once its queued request body falls below
    // this many bytes (after it was at or above it).
    size_t writeLowWater = 64 * 1024;
    // Control frame flood: SETTINGS, PING and empty DATA frames.
    uint32_t controlBurst = 1000;
    uint32_t controlPerSecond = 100;
  };

  // How a stream ended.
  struct Close {
    uint32_t errorCode = 0;  // RST_STREAM's, GOAWAY's, or 0 when complete
    // The server did not process it (REFUSED_STREAM, above a GOAWAY's last
    // stream id, or never sent): it may be retried on another connection.
    bool refused = false;
    // The connection failed or closed before the stream ended.
    bool connectionLost = false;
  };

  struct StreamCallbacks {
    // The final response head (1xx heads are skipped): :status and the
    // other fields.
    std::function<void(int status, const Fields& fields)> onHead{};
    // A piece of the response body.
    std::function<void(std::string_view data)> onData{};
    // The trailer fields (a HEADERS frame after the body).
    std::function<void(const Fields& trailers)> onTrailers{};
    // Exactly once, last.
    std::function<void(const Close& close)> onClose{};
    // The queued request body fell below Options::writeLowWater.
    std::function<void()> onWritable{};
  };

  // Queues the client preface's SETTINGS.
  explicit ClientSession(std::string name);
  ClientSession(std::string name, Options options);
  // Every stream not yet closed is closed (connectionLost).
  ~ClientSession();
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // A request: `fields` holds the pseudo-headers (:method, :scheme, :path,
  // :authority) first, then the rest, lower case. With `endStream` the
  // request has no body beyond `body`; without it, more comes by write()
  // and endStream(). Returns the stream id, or 0 when the request cannot be
  // made (the session failed or is going away, a GOAWAY came, maxStreams
  // reached): no callback runs then.
  [[nodiscard]] int32_t submit(const Fields& fields, std::string body, bool endStream,
                               StreamCallbacks callbacks);
  // Queues request body bytes of a stream (a no-op once it ended or closed).
  void write(int32_t id, std::string_view data);
  // The request body ends after what is queued.
  void endStream(int32_t id);
  // Request body bytes queued and not yet framed (0 for no such stream).
  [[nodiscard]] size_t queuedBytes(int32_t id) const;
  // RST_STREAM with `errorCode` (CANCEL, ...); the stream's onClose runs at
  // once with that code.
  void reset(int32_t id, uint32_t errorCode);
  // The consumer stops taking the stream's data (and so granting its
  // window), and takes it again: what was held is handed over by the next
  // produce().
  void pause(int32_t id);
  void resume(int32_t id);
  // Response body bytes a stream holds for a paused consumer.
  [[nodiscard]] size_t heldBytes(int32_t id) const;

  // PING; the ping callback runs when its ACK comes.
  void ping();
  // GOAWAY (NO_ERROR) from the client: no new streams; those open finish.
  void goAway();
  // Ends the session now: GOAWAY with `errorCode`; every stream closes
  // (connectionLost).
  void terminate(uint32_t errorCode, std::string_view why);

  // Takes every byte of `data` (the server's). False once the connection
  // is to end (a protocol error or a defence tripped: the GOAWAY saying why
  // is queued, produce() it, then close).
  [[nodiscard]] bool receive(std::string_view data);
  // Appends frames to `out` while it holds less than `budget` bytes (it may
  // pass it by one frame); also hands held data to resumed consumers.
  void produce(Buffer* out, size_t budget);
  [[nodiscard]] bool wantsWrite() const;
  // The connection has nothing more to do (after goAway(), or a GOAWAY from
  // the server, once every stream is closed; or failed).
  [[nodiscard]] bool finished() const;
  [[nodiscard]] bool failed() const { return failed_; }
  // Why it failed ("" while it has not).
  [[nodiscard]] const std::string& failure() const { return failure_; }

  // The server's first SETTINGS has come.
  [[nodiscard]] bool settingsReceived() const { return settingsReceived_; }
  // Streams open or queued.
  [[nodiscard]] size_t streams() const { return streams_.size(); }
  // The server's SETTINGS_MAX_CONCURRENT_STREAMS (100 until it says).
  [[nodiscard]] uint32_t serverMaxConcurrentStreams() const;
  // A GOAWAY from the server: its last stream id and code.
  [[nodiscard]] bool goAwayReceived() const { return goAwayReceived_; }

  void setPingAckCallback(std::function<void()> cb) { pingAck_ = std::move(cb); }
  // The server's GOAWAY (last stream id, error code); the streams above it
  // close refused.
  void setGoAwayCallback(std::function<void(int32_t, uint32_t)> cb) { goAway_ = std::move(cb); }

  struct Stream;  // one request and its response (ClientSession.cc)
  struct Callbacks;

 private:
  // A token bucket, as ServerSession's.
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

  [[nodiscard]] int stopIfFailed() const;
  // A session nghttp2 ended by itself is a failed one.
  void noticeTermination();
  Stream* streamFor(int32_t id) const;
  void fail(std::string why);
  // The stream's onClose (once), and it is forgotten.
  void closeStream(int32_t id, Close close);
  // Hands a stream's held data, trailers and close to a consumer that is
  // not paused.
  void deliver(int32_t id);
  void deliverResumed();
  // After a GOAWAY: the streams above its last stream id close refused.
  void closeAboveGoAway();
  // The session failed or goes: every stream closes (connectionLost).
  void closeAll();

  const std::string name_;
  const Options options_;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, std::unique_ptr<Stream>> streams_;
  std::vector<int32_t> resumed_;   // consumers that resumed: deliver() in produce()
  std::vector<int32_t> writable_;  // streams owed onWritable after the send
  Buffer* out_ = nullptr;          // produce()'s target while it runs
  size_t budget_ = 0;
  size_t unconsumed_ = 0;  // DATA bytes not yet given back to the connection window
  bool headerBlockOpen_ = false;
  uint32_t blockFrames_ = 0;
  size_t blockBytes_ = 0;
  bool settingsReceived_ = false;
  bool goAwayReceived_ = false;
  bool goingAway_ = false;
  int32_t goAwayLast_ = 0;
  bool failed_ = false;
  uint32_t failCode_ = 0;  // the GOAWAY code the session ended with
  std::string failure_;
  bool busy_ = false;  // inside nghttp2: streams close once it returns
  Bucket control_;
  std::function<void()> pingAck_;
  std::function<void(int32_t, uint32_t)> goAway_;
};

}  // namespace libnet::http2
