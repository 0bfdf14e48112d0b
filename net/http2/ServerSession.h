// http2::ServerSession: the server side of one HTTP/2 connection, without
// I/O. nghttp2 does the framing, HPACK and flow control; this class turns
// each complete request into an HttpRequest, answers it with the
// application's HttpServer::Handler (the same handler HTTP/1.1 uses: a body,
// or a file read one DATA frame at a time into the output), and holds the defences that
// are not nghttp2's (docs/http2.md). The connection glue
// (net/http2/Http2Server.cc), the coroutine server and the fuzz target feed
// it bytes with receive() and take frames with produce().
//
// Back-pressure, both ways, bounded per connection by construction:
// - answers: produce() stops at the budget it is given (the room under the
//   connection's output limit) and resumes where it stopped; a stream whose
//   peer does not open its window produces nothing. The handler of a
//   complete request waits (in order of arrival) while the connection holds
//   Options::maxConnectionFiles open files or maxConnectionResponseBytes of
//   response bodies in answers not yet sent, so that a client that reads
//   slowly pins a bounded set of files and bytes; the caller's rate check
//   (progressNeeded()) ends one that reads too slowly.
// - request bodies: the server grants stream windows (WINDOW_UPDATE) only
//   out of a per-connection pool (Options::maxConnectionBodyBytes), oldest
//   stream first, each stream only once every older one can still complete
//   (so that some stream always can: no deadlock with every stream
//   half-received); bytes held count against the server-wide body budget
//   (Config::bodyBudget), as HTTP/1.1's do. A body over limits.maxBodyBytes
//   is answered 413 as soon as that is known (Content-Length, or the byte
//   past it), without waiting for the rest; a request the server-wide budget
//   cannot take is answered 503; either way the stream is then reset
//   (RST_STREAM NO_ERROR, RFC 9113 8.1) and its window never reopened.
// - request bodies in pieces (Config::router, Route::kStreamedBody): the
//   handler runs when the head is complete and takes the body through an
//   Http2RequestBody; the stream's window is granted only once what it
//   holds has been delivered to a consumer that is not paused (at most one
//   stream window held per stream), outside the pool and the budget.
//
// Handlers run inside receive() and produce(), on the caller's thread;
// anything they throw is caught (a 500 for that stream). One thread at a
// time; not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/Duration.h"
#include "base/Timestamp.h"
#include "net/http/BodyBudget.h"
#include "net/http/HttpParser.h"
#include "net/http/HttpServer.h"
#include "net/http/ResponseWriter.h"
#include "net/http2/Options.h"
#include "net/http2/TokenBucket.h"

struct nghttp2_session;

namespace libnet {
class Buffer;
}  // namespace libnet

namespace libnet::http2 {

class Http2RequestBody;
class Http2Writer;

class ServerSession {
 public:
  // What a session shares with its server: read only once serving starts.
  struct Config {
    Options options{};
    http::HttpParser::Limits limits{};
    http::HttpServer::Handler handler{};
    // Set: it answers every request instead of `handler`, through an
    // Http2Writer (answers that come later, docs/http-server.md). `gate` is
    // the server's (HttpServer::writerGate()); the writers reach the
    // connection's loop through it.
    http::HttpServer::AsyncHandler asyncHandler{};
    // Set: it picks the handler of each request when its head is complete
    // (HttpServer::Route); kStreamedBody runs the AsyncHandler at once with
    // an Http2RequestBody, bodies past maxStreamedBodyBytes (0: no bound)
    // refused.
    http::HttpServer::Router router{};
    uint64_t maxStreamedBodyBytes = 0;
    std::shared_ptr<http::WriterGate> gate{};
    http::ResponseWriter::Options writer{};
    // The server-wide budget that request bodies being received draw on (the
    // HttpServer's, shared with HTTP/1.1); null: none.
    std::shared_ptr<http::BodyBudget> bodyBudget{};
    // The server-wide count of files held open by answers (a BodyBudget
    // counting files, not bytes: Options::maxServerFiles); null: none.
    std::shared_ptr<http::BodyBudget> fileBudget{};
  };

  // Throws std::invalid_argument for options that cannot work together (a
  // maxConnectionBodyBytes too small for one stream's window per concurrent
  // stream plus one whole body).
  static void validate(const Options& options, const http::HttpParser::Limits& limits);
  // The per-connection body pool these options give (maxConnectionBodyBytes,
  // or what it defaults to).
  [[nodiscard]] static size_t connectionBodyPool(const Options& options,
                                                 const http::HttpParser::Limits& limits);

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
  // bytes), and the response bytes produced so far.
  [[nodiscard]] size_t pendingResponses() const { return pending_; }
  // Streams whose handler still owes the whole of its answer (an
  // AsyncHandler's writer not finished): the connection waits, it is not
  // idle.
  [[nodiscard]] size_t answersAwaited() const;
  [[nodiscard]] uint64_t responseBytes() const { return responseBytes_; }
  // The response bytes a connection with answers pending must produce in
  // the next `window` to count as progressing: Options::minSendRate over
  // the window, or what is left to send if that is less; at least one.
  [[nodiscard]] uint64_t progressNeeded(Duration window) const;
  // Request body bytes held (received and not yet handed to a handler).
  [[nodiscard]] size_t bodyBytes() const { return bodyBytes_; }
  // Open files, and bytes of response bodies held, by answers not sent yet.
  [[nodiscard]] size_t openFiles() const { return openFiles_; }
  [[nodiscard]] size_t responseBodyBytes() const { return answerBytes_; }

  // The connection served, given to every request for its
  // HttpRequest::peerAddress(); its loop is the one writers post to.
  void setConnection(std::weak_ptr<const TcpConnection> connection) {
    connection_ = std::move(connection);
  }
  // Called when a writer (AsyncHandler) queued frames from outside
  // receive() and produce(): the caller's cue to produce() and send them.
  void setWake(std::function<void()> wake) { wake_ = std::move(wake); }

  struct Stream;  // a request and its answer (ServerSession.cc)
  struct Callbacks;

 private:
  friend class Http2Writer;
  friend class Http2RequestBody;
  // The writer's calls, on the loop (Http2Writer.h). A stream gone (closed,
  // reset) makes each a no-op; false: nothing was done.
  bool writerRespond(int32_t id, http::HttpResponse response);
  bool writerStart(int32_t id, http::HttpResponse head);
  // The whole answer as one HEADERS frame with END_STREAM: no body, no
  // content-length (gRPC's trailers-only answer).
  bool writerRespondHeadersOnly(int32_t id, http::HttpResponse head);
  // The bytes of the stream not yet framed, after `data`.
  size_t writerWrite(int32_t id, std::string data);
  // The end of the body; `trailers` (if any) go as a HEADERS frame with
  // END_STREAM after the last DATA frame.
  void writerFinish(int32_t id, std::vector<std::pair<std::string, std::string>> trailers = {});
  // Before the answer started: 500; after: RST_STREAM INTERNAL_ERROR.
  void writerAbort(int32_t id);
  // RST_STREAM `code`: now, or (`afterAnswer`) once the answer's last frame
  // is out, if the client is still sending.
  void writerReset(int32_t id, uint32_t code, bool afterAnswer);
  // The AsyncHandler's turn for a complete request.
  void answerLater(Stream* stream);
  void resetStream(Stream* stream, uint32_t code = 0x2 /* INTERNAL_ERROR */);
  void wake();

  // Request bodies streamed to the handler (Http2RequestBody).
  // Its consumer came or resumed: deliver what waits, and grant more.
  void bodyResumed(int32_t id);
  // The router's choice for a request whose head is complete: a status to
  // refuse it with (500: the router threw, or the route has no handler), or 0.
  int route(Stream* stream);
  void beginStreamedBody(Stream* stream);
  // DATA payload of a streamed body (false: past maxStreamedBodyBytes).
  bool appendStreamed(Stream* stream, std::string_view data);
  // Hands what waits to each consumer that takes it; ends those complete.
  void deliverBodies();
  void deliverBody(int32_t id);
  // The stream's window, topped up for a consumer that has taken all.
  void grantStreamed(Stream* stream);
  // The body ends (once); the stream leaves streamed_.
  void endStreamedBody(Stream* stream, bool complete);
  // The answer is complete before its body: the body ends kAborted, and the
  // client, if still sending, is told to stop once the answer is out.
  void answerEndsBody(Stream* stream);

  // A token bucket: take() is false once the burst is spent faster than
  // the rate refills it.
  // What a callback returns: once a defence has ended the connection, a
  // fatal error, so that nghttp2 parses nothing more of this input (its
  // state after its own termination is not meant to be parsed on: an
  // assertion in nghttp2 aborted the process on a bad frame that followed).
  // The GOAWAY already queued still goes out.
  [[nodiscard]] int stopIfFailed() const;
  void submitSettings();
  Stream* streamFor(int32_t id);
  void closeStream(int32_t id, uint32_t errorCode);

  // A request's header block is complete: refused at once, ready to serve,
  // or its body starts arriving.
  void headersDone(Stream* stream, bool endStream);
  // The method, target and authority checked, Host and Cookie set: a status
  // to refuse with, or 0.
  int prepare(Stream* stream);
  void beginBody(Stream* stream);
  // The client's END_STREAM.
  void requestDone(Stream* stream);
  // Answers `status` now, whatever of the body is still to come, and resets
  // the stream once the answer is out if the client is still sending.
  void refuse(Stream* stream, int status);
  // The stream leaves the streams receiving a body; its body (and its share
  // of the budget) goes when `dropBody`.
  void stopReceiving(Stream* stream, bool dropBody);
  void dropBody(Stream* stream);
  // Stream windows for the bodies being received (see the file comment).
  void grantWindows();
  [[nodiscard]] size_t credit(const Stream* stream) const;
  [[nodiscard]] bool reserveBody(Stream* stream, size_t total);
  // Runs the handlers of complete requests while the connection has room
  // for their answers.
  void serveReady();
  [[nodiscard]] bool roomForAnswer() const;
  // A complete request waits for its handler, and its answer has room.
  [[nodiscard]] bool mayServe() const;
  // serveReady() and grantWindows(), after anything that may have made room.
  void settle();
  // The handler's answer (or the refusal's status page), submitted.
  void answer(Stream* stream);
  void submitResponse(Stream* stream, http::HttpResponse* response);
  // The head of a body that a writer sends as it comes.
  void submitStreamed(Stream* stream, http::HttpResponse* head);
  // The fields of `response` (content-length: `length`, if any), then
  // nghttp2_submit_response with the body's data provider: none, the
  // stream's whole body, or one written as it comes.
  enum class Body { kNone, kWhole, kStreamed };
  int submitFields(Stream* stream, const http::HttpResponse& response, std::optional<size_t> length,
                   Body body);
  // A file answer past the server's bound on open files becomes a 503.
  void admitFile(Stream* stream, http::HttpResponse* response);
  // The body to send moves from the response to the stream.
  void takeBody(Stream* stream, http::HttpResponse* response, bool noBody);
  // The answer's body is all sent, or the stream is gone: its file and its
  // bytes are given back.
  void releaseAnswer(Stream* stream);

  const Config& config_;
  const std::string name_;
  const size_t pool_;          // connectionBodyPool()
  const size_t streamWindow_;  // the window granted a stream at a time
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  // Streams whose body is arriving, by id: oldest first.
  std::map<int32_t, Stream*> receiving_;
  // Streams whose body goes to the handler in pieces, by id.
  std::map<int32_t, Stream*> streamed_;
  bool bodiesWaiting_ = false;  // a consumer came or resumed: deliverBodies()
  // Complete requests waiting for their handler, oldest first.
  std::deque<int32_t> ready_;
  Buffer* out_ = nullptr;  // produce()'s target while it runs
  size_t budget_ = 0;
  size_t pending_ = 0;
  uint64_t responseBytes_ = 0;
  uint64_t unsentBytes_ = 0;  // of the answers pending
  size_t bodyBytes_ = 0;      // request bodies held over all streams
  size_t unconsumed_ = 0;     // DATA bytes not yet given back to the connection window
  size_t answerBytes_ = 0;    // response bodies held by answers pending
  size_t openFiles_ = 0;      // files held by answers pending
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
  TokenBucket resets_;
  TokenBucket control_;
  // A HEADERS or non-empty DATA frame came since the last PING (which is
  // then not charged to control_).
  bool trafficSincePing_ = false;
  std::weak_ptr<const TcpConnection> connection_;
  // What writers find this session by while it exists.
  std::shared_ptr<ServerSession*> anchor_;
  std::function<void()> wake_;
  bool busy_ = false;  // inside receive() or produce(): they send what is made
};

}  // namespace libnet::http2
