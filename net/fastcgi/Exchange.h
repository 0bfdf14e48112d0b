// fastcgi::Exchange (private to //net/fastcgi): one HTTP request on its way
// to the application and its answer on the way back. It holds the encoded
// request records, the client's ResponseWriter and the CGI head parser; a
// connection (UpstreamConnection) feeds it what the application writes and
// it decides what the client sees: the whole answer at once when it came in
// one batch (Content-Length), otherwise the head and then the body as it
// arrives, under the writer's back-pressure; on failure a status page while
// nothing was sent, abort() after (never a cut answer passed off as whole).
//
// A request body streamed to the application (streamBody()) is not in the
// request: its pieces are encoded as FCGI_STDIN as they come and wait here
// for the connection (takeStdin()); past UpstreamOptions::stdinHighWater of
// them the client's body is paused, and it resumes when the connection takes
// them.
//
// Owned by shared_ptr: by its pool's queue while it waits, by its
// connection while it runs. Loop thread only (its writer's loop).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "net/fastcgi/CgiResponseParser.h"
#include "net/fastcgi/RecordDecoder.h"
#include "net/fastcgi/RecordEncoder.h"
#include "net/fastcgi/UpstreamOptions.h"
#include "net/http/ResponseWriter.h"

namespace libnet::fastcgi {

class UpstreamConnection;
class UpstreamPool;

class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  // `request`: every record of the request (BEGIN, PARAMS, STDIN). `what`
  // names it in log lines ("GET /index.php").
  Exchange(http::ResponseWriterPtr writer, std::string request, std::string what, bool idempotent,
           std::shared_ptr<const UpstreamOptions> options);
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  // Hooks the writer's closed and writable callbacks to this exchange.
  void watchClient();
  // The request's FCGI_STDIN comes from `body` (request() ends with the
  // params), as it arrives.
  void streamBody(http::RequestBodyPtr body);
  // The FCGI_STDIN records ready to go (the end of the stream once the body
  // is complete); the body reads on.
  [[nodiscard]] std::string takeStdin();
  // Every record of the request has been taken (always, for a body sent
  // whole): a connection that ends the exchange otherwise is mid-request.
  [[nodiscard]] bool stdinComplete() const { return stdinEnded_ && pendingStdin_.empty(); }
  // The body's next piece is the client's to send: the application is not
  // the one that is late.
  [[nodiscard]] bool awaitingClient() const {
    return body_ != nullptr && !stdinEnded_ && pendingStdin_.empty();
  }

  [[nodiscard]] const std::string& request() const { return request_; }
  [[nodiscard]] const std::string& what() const { return what_; }
  // False too once a streamed body has been taken: it cannot be sent twice.
  [[nodiscard]] bool idempotent() const { return idempotent_ && !stdinTaken_; }
  // Something went to the client, or the client left, or it is over: no
  // second try on another connection.
  [[nodiscard]] bool done() const { return done_; }
  [[nodiscard]] bool clientGone() const { return clientGone_; }
  [[nodiscard]] bool retried() const { return retried_; }
  void setRetried() { retried_ = true; }

  void setPool(std::weak_ptr<UpstreamPool> pool) { pool_ = std::move(pool); }
  void setConnection(UpstreamConnection* connection) { connection_ = connection; }

  // What the application wrote. false: the answer is broken (already
  // failed: a 502 went out or the answer was aborted).
  bool onStdout(std::string_view data);
  void onStderr(std::string_view data);
  bool onEnd(const EndRequest& end);
  // The end of one batch of input: hands the client what came. false: stop
  // reading the application until the writable callback (back-pressure).
  bool flush();
  [[nodiscard]] bool ended() const { return ended_; }

  // A status page while nothing was sent, abort() after; logged once.
  void fail(int status, std::string_view why);

 private:
  void onClientGone();
  void onWritable();
  void onBodyPiece(std::string_view piece);
  void onBodyEnd(http::RequestBody::End end);

  http::ResponseWriterPtr writer_;
  std::string request_;
  std::string what_;
  bool idempotent_;
  std::shared_ptr<const UpstreamOptions> options_;
  CgiResponseParser parser_;
  http::HttpResponse head_{false};
  std::string pendingBody_;  // what came in this batch, not yet written
  bool headSent_ = false;
  bool ended_ = false;  // FCGI_END_REQUEST read
  bool done_ = false;   // answered, failed, or the client left
  bool clientGone_ = false;
  bool retried_ = false;
  size_t stderrLogged_ = 0;
  size_t stderrDropped_ = 0;
  std::weak_ptr<UpstreamPool> pool_;
  UpstreamConnection* connection_ = nullptr;
  http::RequestBodyPtr body_;  // a streamed body, until it ends
  std::string pendingStdin_;   // its FCGI_STDIN records not yet taken
  bool stdinEnded_ = true;     // the end of the stream is in pendingStdin_ (or sent)
  bool stdinTaken_ = false;
};

}  // namespace libnet::fastcgi
