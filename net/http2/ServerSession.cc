#include "net/http2/ServerSession.h"

#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/TcpConnection.h"
#include "net/http/HttpDate.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/http2/Http2RequestBody.h"
#include "net/http2/Http2Writer.h"

namespace libnet::http2 {

using http::HttpRequest;
using http::HttpResponse;

// One request and, once answered, the rest of its body still to send.
struct ServerSession::Stream {
  int32_t id = 0;
  HttpRequest request;
  std::string method;     // :method
  std::string scheme;     // :scheme
  std::string target;     // :path (:authority for CONNECT)
  std::string authority;  // :authority, the Host field unless one came too
  std::string cookies;    // cookie fields joined with "; " (RFC 9113 8.2.3)
  size_t headerBytes = 0;
  size_t headerCount = 0;
  bool sawCookie = false;  // the cookie crumbs, however many, count as one field
  // Content-Length, when sent (UINT64_MAX when too large to read).
  std::optional<uint64_t> declaredLength;
  int refuse = 0;                         // the status answered instead of the handler's, or 0
  bool remoteEnded = false;               // the client's END_STREAM has come
  bool receiving = false;                 // its body is arriving (in receiving_)
  bool overrun = false;                   // the client sent past its window (nghttp2 resets it)
  bool resetAfterAnswer = false;          // answered early: reset once the answer is out
  uint32_t resetCode = NGHTTP2_NO_ERROR;  // the code of that reset
  bool endSent = false;                   // the answer's END_STREAM went out
  bool reset = false;                     // RST_STREAM submitted by the server
  bool answered = false;                  // a response was submitted
  bool open = false;                      // answered and not all of its body sent
  // The request body's share of the server-wide budget: its Content-Length,
  // or what it holds plus the window it may still fill.
  http::BodyBudget::Reservation bodyShare;
  // The body to send: `body`, or `length` bytes of `file`; `scheduled`
  // bytes handed to DATA frames so far, `sent` written out. `fileShare` is
  // the file's place in the server-wide count of open files.
  std::string body;
  UniqueFd file;
  http::BodyBudget::Reservation fileShare;
  size_t length = 0;
  size_t scheduled = 0;
  size_t sent = 0;
  // Answered by the AsyncHandler: its writer (owned by the handler's side);
  // whether a response was submitted; a body that a writer sends as it
  // comes (`length` grows with each write, `finished` at its end), its
  // announced length if any, and the bytes of it already dropped from the
  // front of `body` once sent.
  std::weak_ptr<Http2Writer> writer;
  bool submitted = false;
  bool streaming = false;
  bool finished = false;
  std::optional<size_t> declared;
  size_t erased = 0;
  // Trailer fields sent after the last DATA frame (finish(trailers)).
  std::vector<std::pair<std::string, std::string>> trailers;
  // Which handler answers (HttpServer::Route); with kStreamedBody, the body
  // handed to it in pieces.
  http::HttpServer::Route route = http::HttpServer::Route::kHandler;
  std::shared_ptr<Http2RequestBody> streamedBody;
};

namespace {

// Marks the session busy (inside receive() or produce()) for a scope: a
// writer called from a handler there needs no wake, its caller sends.
class BusyScope {
 public:
  explicit BusyScope(bool* busy) : busy_(busy), was_(*busy) { *busy_ = true; }
  ~BusyScope() { *busy_ = was_; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  bool* busy_;
  bool was_;
};

constexpr size_t kFrameHeader = 9;
// RFC 7541 4.1: each field counts 32 bytes beyond its name and value.
constexpr size_t kFieldOverhead = 32;
// The least a stream's window is topped up by, whatever initialWindowSize
// says (a tiny or zero setting must still let bodies through).
constexpr size_t kMinGrant = 16 * 1024;

ServerSession* self(void* userData) { return static_cast<ServerSession*>(userData); }

std::string_view view(const uint8_t* data, size_t length) {
  return {reinterpret_cast<const char*>(data), length};
}

std::string_view currentDate() {
  thread_local http::HttpDateCache cache;
  return cache.now();
}

// Fields that belong to one HTTP/1.1 connection: RFC 9113 8.2.2 forbids them.
bool connectionSpecific(std::string_view lowerName) {
  return lowerName == "connection" || lowerName == "keep-alive" ||
         lowerName == "proxy-connection" || lowerName == "transfer-encoding" ||
         lowerName == "upgrade";
}

// The request handler, as a log line names it when it throws.
struct HandlerOf {
  const std::string& connection;
};

LogStream& operator<<(LogStream& stream, const HandlerOf& handler) {
  return stream << "request handler on " << handler.connection << " (HTTP/2)";
}

std::string lowered(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Trailer fields as they may go on the wire: names lower-cased (RFC 9113
// 8.2.1), pseudo-fields and connection-specific ones dropped, and CR, LF
// and NUL replaced by spaces as HttpResponse::addHeader() does for a head
// (a client treats a field with them as malformed and resets the stream).
std::vector<std::pair<std::string, std::string>> trailerFields(
    std::vector<std::pair<std::string, std::string>> fields) {
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(fields.size());
  for (auto& [name, value] : fields) {
    std::string lower = lowered(name);
    if (lower.empty() || lower[0] == ':' || connectionSpecific(lower)) continue;
    for (std::string* text : {&lower, &value}) {
      for (char& c : *text) {
        if (c == '\r' || c == '\n' || c == '\0') c = ' ';
      }
    }
    out.emplace_back(std::move(lower), std::move(value));
  }
  return out;
}

// A Content-Length value (nghttp2 has checked it is digits); UINT64_MAX when
// it does not fit.
uint64_t parseLength(std::string_view value) {
  uint64_t length = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), length);
  return error == std::errc() && end == value.data() + value.size() ? length : UINT64_MAX;
}

// An authority in the form it is compared in (RFC 9113 8.3.1, RFC 3986
// 6.2.3): the host in lower case, and without the scheme's default port.
std::string normalizedAuthority(std::string_view authority, std::string_view scheme) {
  std::string out = lowered(authority);
  const std::string_view defaultPort = scheme == "https" ? ":443" : ":80";
  if (std::string_view(out).ends_with(defaultPort)) out.resize(out.size() - defaultPort.size());
  if (std::string_view(out).ends_with(':')) out.pop_back();  // an empty port is the default
  return out;
}

}  // namespace

// nghttp2's callbacks, each a static function that finds its session in
// user_data.
struct ServerSession::Callbacks {
  static ssize_t send(nghttp2_session*, const uint8_t* data, size_t length, int, void* user) {
    ServerSession* s = self(user);
    if (s->out_ == nullptr || s->out_->readableBytes() >= s->budget_) return NGHTTP2_ERR_WOULDBLOCK;
    s->out_->append(view(data, length));
    return static_cast<ssize_t>(length);
  }

  // DATA of a response body, without a copy in nghttp2: the frame head it
  // made, then the bytes straight from the body or the file.
  static int sendData(nghttp2_session*, nghttp2_frame* frame, const uint8_t* head, size_t length,
                      nghttp2_data_source* source, void* user) {
    ServerSession* s = self(user);
    if (s->out_ == nullptr || s->out_->readableBytes() >= s->budget_) return NGHTTP2_ERR_WOULDBLOCK;
    auto* stream = static_cast<Stream*>(source->ptr);
    Buffer* out = s->out_;
    out->append(view(head, kFrameHeader));
    if (frame->data.padlen > 0)
      out->append(std::string(1, static_cast<char>(frame->data.padlen - 1)));
    if (stream->file.valid()) {
      if (!readFile(s, stream, out, length)) {
        out->unwrite(kFrameHeader + (frame->data.padlen > 0 ? 1 : 0));
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
      }
    } else {
      out->append(std::string_view(stream->body).substr(stream->sent - stream->erased, length));
    }
    if (frame->data.padlen > 1) out->append(std::string(frame->data.padlen - 1, '\0'));
    stream->sent += length;
    s->responseBytes_ += length;
    s->unsentBytes_ -= length;
    if (stream->sent == stream->length && stream->open) {
      // All of it is out: the file and the bytes are given back now, not
      // when the stream closes (which waits for the client's END_STREAM).
      // A body written as it comes is "all out" whenever the writer has not
      // written more yet: it opens again with the next write.
      stream->open = false;
      --s->pending_;
      s->releaseAnswer(stream);
    }
    if (stream->streaming) sentStreamed(s, stream);
    return 0;
  }

  // A body written as it comes: what is sent leaves the front of the
  // stream's body (in steps, not a move per frame), and the writer hears how
  // much still waits (its back-pressure).
  static void sentStreamed(ServerSession* s, Stream* stream) {
    constexpr size_t kCompactAt = 64 * 1024;
    const size_t done = stream->sent - stream->erased;
    if (done >= kCompactAt) {
      stream->body.erase(0, done);
      stream->erased += done;
      s->answerBytes_ -= done;
    }
    if (const std::shared_ptr<Http2Writer> writer = stream->writer.lock()) {
      writer->onProgress(stream->length - stream->sent);
    }
  }

  // The data provider of a body written as it comes: deferred while the
  // writer has written nothing new (nghttp2_session_resume_data wakes it).
  static ssize_t readStreamed(nghttp2_session* session, int32_t, uint8_t*, size_t length,
                              uint32_t* flags, nghttp2_data_source* source, void*) {
    auto* stream = static_cast<Stream*>(source->ptr);
    const size_t available = stream->length - stream->scheduled;
    if (available == 0 && !stream->finished) return NGHTTP2_ERR_DEFERRED;
    const size_t n = std::min(length, available);
    if (stream->finished && stream->scheduled + n == stream->length) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      // The trailers end the stream instead (nghttp2 sends their HEADERS
      // after this last DATA frame).
      if (!stream->trailers.empty()) {
        if (!submitTrailers(session, stream)) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      }
    }
    stream->scheduled += n;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    return static_cast<ssize_t>(n);
  }

  static bool submitTrailers(nghttp2_session* session, Stream* stream) {
    std::vector<nghttp2_nv> nv;
    nv.reserve(stream->trailers.size());
    for (auto& [name, value] : stream->trailers) {
      nv.push_back({reinterpret_cast<uint8_t*>(name.data()),
                    reinterpret_cast<uint8_t*>(value.data()), name.size(), value.size(),
                    NGHTTP2_NV_FLAG_NONE});
    }
    // nghttp2 copies the fields.
    const int rv = nghttp2_submit_trailer(session, stream->id, nv.data(), nv.size());
    std::vector<std::pair<std::string, std::string>>().swap(stream->trailers);
    return rv == 0;
  }

  static bool readFile(ServerSession* s, Stream* stream, Buffer* out, size_t length) {
    out->ensureWritableBytes(length);
    size_t done = 0;
    while (done < length) {
      const ssize_t n = ::pread(stream->file.get(), out->beginWrite() + done, length - done,
                                static_cast<off_t>(stream->sent + done));
      if (n > 0) {
        done += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        LOG_SYSERR << s->name_ << ": reading the file of stream " << stream->id;
        return false;
      }
    }
    out->hasWritten(length);
    return true;
  }

  static ssize_t readData(nghttp2_session*, int32_t, uint8_t*, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* stream = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, stream->length - stream->scheduled);
    stream->scheduled += n;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (stream->scheduled == stream->length) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }

  static int beginFrame(nghttp2_session* session, const nghttp2_frame_hd* hd, void* user) {
    ServerSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (hd->type == NGHTTP2_HEADERS) {
      s->blockFrames_ = 0;
      s->blockBytes_ = 0;
      // RFC 9113 5.1.1: a new stream's id must exceed every earlier one's; a
      // HEADERS on a lower id that is no stream nghttp2 knows (one skipped
      // over, or closed and forgotten) is a connection error, which nghttp2
      // itself only ignores.
      if (hd->stream_id <= s->highestRequestStream_ &&
          nghttp2_session_find_stream(session, hd->stream_id) == nullptr) {
        s->terminate(NGHTTP2_PROTOCOL_ERROR, "HEADERS on a stream id below the highest");
      }
    }
    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
      s->headerBlockOpen_ = (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
      ++s->blockFrames_;
      s->blockBytes_ += hd->length;
      if (s->blockFrames_ > s->config_.options.maxHeaderBlockFrames ||
          s->blockBytes_ > 2 * s->config_.limits.maxHeaderBytes) {
        s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header block too long");
      }
    }
    if (hd->type == NGHTTP2_DATA) {
      // A frame larger than the stream's window: nghttp2 resets the stream
      // (FLOW_CONTROL_ERROR) but still hands over the bytes; they are not
      // kept, so that what a stream holds is bounded by what it was granted.
      Stream* stream = s->streamFor(hd->stream_id);
      if (stream != nullptr && hd->length > s->credit(stream)) stream->overrun = true;
    }
    return s->stopIfFailed();
  }

  static int beginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    ServerSession* s = self(user);
    if (s->goingAway_ && frame->hd.stream_id > s->goAwayLast_) {
      // Opened after goAway() but before its GOAWAY went out: the GOAWAY
      // tells the client it was not processed, so it must not be.
      s->highestRequestStream_ = std::max(s->highestRequestStream_, frame->hd.stream_id);
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                NGHTTP2_REFUSED_STREAM);
      return 0;
    }
    auto stream = std::make_unique<Stream>();
    stream->id = frame->hd.stream_id;
    stream->request.setConnection(s->connection_);
    if (s->config_.bodyBudget) {
      stream->bodyShare = http::BodyBudget::Reservation(s->config_.bodyBudget);
    }
    if (s->config_.fileBudget) {
      stream->fileShare = http::BodyBudget::Reservation(s->config_.fileBudget);
    }
    s->highestRequestStream_ = std::max(s->highestRequestStream_, stream->id);
    nghttp2_session_set_stream_user_data(session, stream->id, stream.get());
    s->streams_[stream->id] = std::move(stream);
    return 0;
  }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                    size_t nameLength, const uint8_t* value, size_t valueLength, uint8_t,
                    void* user) {
    ServerSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    Stream* stream = s->streamFor(frame->hd.stream_id);
    if (stream == nullptr) return 0;
    const std::string_view fieldName = view(name, nameLength);
    stream->headerBytes += nameLength + valueLength + kFieldOverhead;
    // A browser sends each cookie as a field of its own (RFC 9113 8.2.3),
    // which HTTP/1.1 would have on one line: the crumbs count as one field.
    // Their bytes count in full against the header section limit.
    if (fieldName != "cookie" || !stream->sawCookie) ++stream->headerCount;
    if (fieldName == "cookie") stream->sawCookie = true;
    const size_t limit = s->config_.limits.maxHeaderBytes;
    if (stream->headerBytes > 4 * limit) {
      // Far past what the client was told (SETTINGS_MAX_HEADER_LIST_SIZE):
      // a small block that decodes huge, an HPACK bomb.
      s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header list far over its limit");
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (stream->headerBytes > limit || stream->headerCount > s->config_.limits.maxHeaderCount) {
      stream->refuse = 431;
    }
    if (stream->refuse != 0 || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    addField(stream, fieldName, view(value, valueLength));
    return 0;
  }

  static void addField(Stream* stream, std::string_view name, std::string_view value) {
    if (name == ":method") {
      stream->method.assign(value);
    } else if (name == ":scheme") {
      stream->scheme.assign(value);
    } else if (name == ":path") {
      stream->target.assign(value);
    } else if (name == ":authority") {
      stream->authority.assign(value);
    } else if (name == "cookie") {
      if (!stream->cookies.empty()) stream->cookies.append("; ");
      stream->cookies.append(value);
    } else if (name.empty() || name[0] != ':') {
      if (name == "content-length") stream->declaredLength = parseLength(value);
      stream->request.appendHeader(name, value);
    }
  }

  static int dataChunk(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t length,
                       void* user) {
    ServerSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    // Every byte received gives its room back to the connection window at
    // once: what a connection holds is bounded by its streams' windows.
    s->unconsumed_ += length;
    Stream* stream = s->streamFor(id);
    if (stream == nullptr || stream->overrun) return 0;
    if (stream->streamedBody) {
      s->appendStreamed(stream, view(data, length));
      return 0;
    }
    if (!stream->receiving) return 0;
    std::string& body = stream->request.body();
    if (body.size() + length > s->config_.limits.maxBodyBytes) {
      s->refuse(stream, 413);
      return 0;
    }
    body.append(view(data, length));
    s->bodyBytes_ += length;
    return 0;
  }

  static int frameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    ServerSession* s = self(user);
    countControlFrame(s, frame);
    if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS) != 0) {
      s->headerBlockOpen_ = false;
    }
    const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    Stream* stream = s->failed_ ? nullptr : s->streamFor(frame->hd.stream_id);
    if (stream == nullptr) return s->stopIfFailed();
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      s->headersDone(stream, ends);
    } else if (ends && (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)) {
      s->requestDone(stream);
    }
    return s->stopIfFailed();
  }

  static void countControlFrame(ServerSession* s, const nghttp2_frame* frame) {
    const MonoTime now = MonoClock::now();
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) break;
        s->prefaceDone_ = true;
        if (!s->control_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "SETTINGS flood");
        break;
      case NGHTTP2_PING:
        // A PING that follows request traffic is free: gRPC clients send
        // one per call to size their window (BDP probes), so a busy client
        // must not spend the bucket; only PINGs with nothing between them
        // are a flood.
        if (s->trafficSincePing_ && (frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
          s->trafficSincePing_ = false;
          break;
        }
        if (!s->control_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "control frame flood");
        break;
      case NGHTTP2_PRIORITY:
        if (!s->control_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "control frame flood");
        break;
      case NGHTTP2_RST_STREAM:
        if (!s->resets_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "stream reset flood");
        break;
      case NGHTTP2_HEADERS:
        s->trafficSincePing_ = true;
        break;
      case NGHTTP2_DATA:
        if (frame->hd.length > 0) s->trafficSincePing_ = true;
        if (frame->hd.length == 0 && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0 &&
            !s->control_.take(now)) {
          s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "empty DATA frame flood");
        }
        break;
      default:
        break;
    }
  }

  // A refusal answered before the request ended (RFC 9113 8.1): once its
  // last frame is out, RST_STREAM NO_ERROR tells the client to stop sending
  // the body.
  static int frameSent(nghttp2_session* session, const nghttp2_frame* frame, void* user) {
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0 ||
        (frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS)) {
      return 0;
    }
    Stream* stream = self(user)->streamFor(frame->hd.stream_id);
    if (stream == nullptr) return 0;
    stream->endSent = true;
    if (stream->resetAfterAnswer && !stream->remoteEnded && !stream->reset) {
      stream->reset = true;
      nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, stream->resetCode);
    }
    return 0;
  }

  static int streamClosed(nghttp2_session*, int32_t id, uint32_t errorCode, void* user) {
    self(user)->closeStream(id, errorCode);
    return 0;
  }
};

namespace {

// nghttp2 copies callbacks and options into the session: made once per
// thread, they are shared by every session made on it.
nghttp2_session_callbacks* sharedCallbacks() {
  struct Holder {
    nghttp2_session_callbacks* callbacks = nullptr;
    Holder() {
      using C = ServerSession::Callbacks;
      if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
      nghttp2_session_callbacks_set_send_callback(callbacks, C::send);
      nghttp2_session_callbacks_set_send_data_callback(callbacks, C::sendData);
      nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, C::beginFrame);
      nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, C::beginHeaders);
      nghttp2_session_callbacks_set_on_header_callback(callbacks, C::header);
      nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, C::dataChunk);
      nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, C::frameReceived);
      nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, C::frameSent);
      nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, C::streamClosed);
    }
    ~Holder() { nghttp2_session_callbacks_del(callbacks); }
  };
  thread_local Holder holder;
  return holder.callbacks;
}

}  // namespace

size_t ServerSession::connectionBodyPool(const Options& options,
                                         const http::HttpParser::Limits& limits) {
  if (options.maxConnectionBodyBytes != 0) return options.maxConnectionBodyBytes;
  return size_t{options.maxConcurrentStreams} * options.initialWindowSize + limits.maxBodyBytes;
}

void ServerSession::validate(const Options& options, const http::HttpParser::Limits& limits) {
  const size_t least =
      size_t{options.maxConcurrentStreams} * options.initialWindowSize + limits.maxBodyBytes;
  if (options.maxConnectionBodyBytes != 0 && options.maxConnectionBodyBytes < least) {
    throw std::invalid_argument(
        "http2::Options::maxConnectionBodyBytes (" +
        std::to_string(options.maxConnectionBodyBytes) + ") is less than maxConcurrentStreams x " +
        "initialWindowSize + limits.maxBodyBytes (" + std::to_string(least) +
        "): with every stream's first window taken, no body could be completed");
  }
}

ServerSession::ServerSession(const Config& config, std::string name)
    : config_(config),
      name_(std::move(name)),
      pool_(connectionBodyPool(config.options, config.limits)),
      streamWindow_(std::max<size_t>(config.options.initialWindowSize, kMinGrant)),
      resets_(config.options.resetBurst, config.options.resetsPerSecond),
      control_(config.options.controlBurst, config.options.controlPerSecond) {
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) throw std::bad_alloc();
  nghttp2_option_set_max_continuations(option, config.options.maxHeaderBlockFrames);
  // Stream windows are granted here, from the connection's body pool, not
  // by nghttp2 as each byte arrives.
  nghttp2_option_set_no_auto_window_update(option, 1);
  const int rv = nghttp2_session_server_new2(&session_, sharedCallbacks(), this, option);
  nghttp2_option_del(option);
  if (rv != 0) throw std::bad_alloc();
  anchor_ = std::make_shared<ServerSession*>(this);
  submitSettings();
}

ServerSession::~ServerSession() {
  // Writers find nothing from here on; those of answers still under way
  // hear that the connection is gone.
  *anchor_ = nullptr;
  for (const auto& [id, stream] : streams_) {
    const std::shared_ptr<Http2Writer> writer = stream->writer.lock();  // as in closeStream()
    if (stream->streamedBody) endStreamedBody(stream.get(), /*complete=*/false);
    if (writer) writer->onStreamClosed();
  }
  nghttp2_session_del(session_);
}

void ServerSession::submitSettings() {
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, config_.options.maxConcurrentStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, config_.options.initialWindowSize},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(std::min<size_t>(config_.limits.maxHeaderBytes, UINT32_MAX))},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  // The connection window never holds bodies back (each byte received gives
  // its room back at once): as large as the pool, so that it never slows
  // what the stream windows allow.
  const size_t window = std::min<size_t>(pool_, NGHTTP2_MAX_WINDOW_SIZE);
  if (window > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<int32_t>(window));
  }
}

bool ServerSession::receive(std::string_view data) {
  if (failed_) return false;
  const BusyScope busy(&busy_);
  const ssize_t rv = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(data.data()), data.size());
  if (rv < 0) {
    LOG_DEBUG << name_ << ": HTTP/2 input refused: " << nghttp2_strerror(static_cast<int>(rv));
    // nghttp2 has queued a GOAWAY for most errors; this one covers the rest
    // (a bad preface; too many acknowledgements queued for a client that
    // does not read them: a flood) and is a no-op after the first.
    nghttp2_session_terminate_session(
        session_, rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR);
    failed_ = true;
  }
  if (failed_) return false;
  if (unconsumed_ > 0) {
    nghttp2_session_consume_connection(session_, unconsumed_);
    unconsumed_ = 0;
  }
  settle();
  return true;
}

void ServerSession::produce(Buffer* out, size_t budget) {
  const BusyScope busy(&busy_);
  out_ = out;
  budget_ = budget;
  // Answers that went out make room for requests waiting for their handler,
  // whose answers go out in the same call.
  int rv = 0;
  do {
    settle();
    rv = nghttp2_session_send(session_);
  } while (rv == 0 && !failed_ && out->readableBytes() < budget && mayServe());
  out_ = nullptr;
  if (rv != 0) {
    LOG_DEBUG << name_ << ": HTTP/2 output failed: " << nghttp2_strerror(rv);
    failed_ = true;
  }
}

bool ServerSession::wantsWrite() const {
  // A body's consumer that came or resumed is served from produce() too.
  return nghttp2_session_want_write(session_) != 0 || mayServe() || bodiesWaiting_;
}

bool ServerSession::finished() const {
  return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

void ServerSession::goAway() {
  if (!goingAway_) goAwayLast_ = nghttp2_session_get_last_proc_stream_id(session_);
  goingAway_ = true;
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, goAwayLast_, NGHTTP2_NO_ERROR, nullptr, 0);
}

void ServerSession::terminate(uint32_t errorCode, std::string_view why) {
  if (failed_) return;
  LOG_DEBUG << name_ << ": HTTP/2 connection ends: " << why;
  nghttp2_session_terminate_session(session_, errorCode);
  failed_ = true;
}

uint64_t ServerSession::progressNeeded(Duration window) const {
  const auto seconds = std::chrono::duration_cast<std::chrono::milliseconds>(window).count();
  const uint64_t byRate = config_.options.minSendRate * static_cast<uint64_t>(seconds) / 1000;
  return std::max<uint64_t>(1, std::min(byRate, unsentBytes_));
}

size_t ServerSession::answersAwaited() const {
  size_t awaited = 0;
  for (const auto& [id, stream] : streams_) {
    const bool whole = stream->submitted && (!stream->streaming || stream->finished);
    if (stream->answered && !whole) ++awaited;
  }
  return awaited;
}

int ServerSession::stopIfFailed() const { return failed_ ? NGHTTP2_ERR_CALLBACK_FAILURE : 0; }

ServerSession::Stream* ServerSession::streamFor(int32_t id) {
  const auto it = streams_.find(id);
  return it != streams_.end() ? it->second.get() : nullptr;
}

void ServerSession::closeStream(int32_t id, uint32_t errorCode) {
  const auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream* stream = it->second.get();
  if (stream->open) {
    --pending_;
    unsentBytes_ -= stream->length - stream->sent;
  }
  if (errorCode != NGHTTP2_NO_ERROR && !stream->answered) {
    LOG_DEBUG << name_ << ": stream " << id << " closed before its answer, code " << errorCode;
  }
  // Held across the body's end: the body's callbacks, which it lets go of,
  // may be the writer's last owners, and its closed callback is still owed.
  const std::shared_ptr<Http2Writer> writer = stream->writer.lock();
  if (stream->streamedBody) endStreamedBody(stream, /*complete=*/false);
  if (writer) writer->onStreamClosed();
  stopReceiving(stream, /*dropBody=*/true);
  releaseAnswer(stream);
  streams_.erase(it);  // its shares of the server-wide budgets go with it
}

// --- Requests and their bodies ---

void ServerSession::headersDone(Stream* stream, bool endStream) {
  if (stream->refuse == 0) stream->refuse = prepare(stream);
  if (stream->refuse == 0) stream->refuse = route(stream);
  stream->remoteEnded = endStream;
  if (stream->refuse != 0) {
    refuse(stream, stream->refuse);
  } else if (stream->route == http::HttpServer::Route::kStreamedBody) {
    beginStreamedBody(stream);
  } else if (endStream) {
    ready_.push_back(stream->id);
  } else {
    beginBody(stream);
  }
}

int ServerSession::prepare(Stream* stream) {
  HttpRequest& request = stream->request;
  const std::optional<http::Method> method = http::methodFromName(stream->method);
  if (!method) return 501;
  const std::string_view target =
      *method == http::Method::kConnect ? stream->authority : stream->target;
  if (const int status = request.assign(*method, http::Version::kHttp2, target); status != 0) {
    return status;
  }
  if (!stream->authority.empty()) {
    // RFC 9113 8.3.1: a Host naming another entity than :authority makes
    // the request malformed; the server answers it 400 rather than pick one.
    if (const std::optional<std::string_view> host = request.header("host")) {
      if (normalizedAuthority(*host, stream->scheme) !=
          normalizedAuthority(stream->authority, stream->scheme)) {
        return 400;
      }
    } else {
      request.appendHeader("host", stream->authority);
    }
  }
  if (!stream->cookies.empty()) request.appendHeader("cookie", stream->cookies);
  return 0;
}

void ServerSession::beginBody(Stream* stream) {
  if (stream->declaredLength && *stream->declaredLength > config_.limits.maxBodyBytes) {
    refuse(stream, 413);  // before a byte of it is sent
    return;
  }
  // The server-wide budget, as HTTP/1.1 draws on it: the whole body when
  // its length is declared, else the window the client may fill now.
  const size_t share = stream->declaredLength ? *stream->declaredLength : credit(stream);
  if (!reserveBody(stream, share)) {
    LOG_DEBUG << name_ << ": no room for the body of stream " << stream->id;
    refuse(stream, 503);
    return;
  }
  stream->receiving = true;
  receiving_.emplace(stream->id, stream);
}

void ServerSession::requestDone(Stream* stream) {
  stream->remoteEnded = true;
  if (stream->streamedBody) {
    bodiesWaiting_ = true;  // its end goes out after what is held
    return;
  }
  if (!stream->receiving) return;  // refused already, or not a request
  stopReceiving(stream, /*dropBody=*/false);
  ready_.push_back(stream->id);
}

void ServerSession::refuse(Stream* stream, int status) {
  stream->refuse = status;
  stopReceiving(stream, /*dropBody=*/true);
  dropBody(stream);
  if (stream->answered) return;
  stream->resetAfterAnswer = !stream->remoteEnded;
  answer(stream);
}

void ServerSession::stopReceiving(Stream* stream, bool dropBody) {
  if (stream->receiving) {
    stream->receiving = false;
    receiving_.erase(stream->id);
  }
  if (dropBody) this->dropBody(stream);
}

void ServerSession::dropBody(Stream* stream) {
  bodyBytes_ -= stream->request.body().size();
  std::string().swap(stream->request.body());
  stream->bodyShare.release();
}

size_t ServerSession::credit(const Stream* stream) const {
  const int32_t window = nghttp2_session_get_stream_local_window_size(session_, stream->id);
  return window > 0 ? static_cast<size_t>(window) : 0;
}

bool ServerSession::reserveBody(Stream* stream, size_t total) {
  return !config_.bodyBudget || stream->bodyShare.cover(total);
}

void ServerSession::grantWindows() {
  if (receiving_.empty()) return;
  // Every stream the client may open comes with a first window: the pool
  // keeps that much for each of maxConcurrentStreams, and what a stream
  // holds beyond it (its body received and not yet handed to its handler,
  // plus the window still open on it) comes out of the rest.
  const size_t first = config_.options.initialWindowSize;
  const size_t kept = size_t{config_.options.maxConcurrentStreams} * first;
  size_t beyond = 0;
  for (const auto& [id, stream] : streams_) {
    const bool streaming = stream->streamedBody && !stream->streamedBody->ended();
    const size_t holds = stream->request.body().size() +
                         (stream->receiving || streaming ? credit(stream.get()) : 0) +
                         (streaming ? stream->streamedBody->held() : 0);
    beyond += holds > first ? holds - first : 0;
  }
  size_t free = pool_ > kept + beyond ? pool_ - kept - beyond : 0;
  // Oldest first, and a stream only out of what is left once every older
  // one could complete: then the oldest always can, and after it the next.
  size_t olderNeeds = 0;
  std::vector<Stream*> blocked;
  for (const auto& [id, stream] : receiving_) {
    const size_t have = credit(stream);
    const size_t received = stream->request.body().size();
    // One byte past the limit, when the length is not declared: it shows
    // the body too large (413), where a window shut at the limit would
    // leave such a client waiting.
    const uint64_t total =
        stream->declaredLength ? *stream->declaredLength : config_.limits.maxBodyBytes + 1;
    const uint64_t remaining = total > received ? total - received : 0;
    size_t need = remaining > have ? static_cast<size_t>(remaining - have) : 0;
    if (need == 0) continue;
    // Topped up a window at a time, once half of it is used (or to finish).
    const size_t topUp = have < streamWindow_ ? streamWindow_ - have : 0;
    size_t grant = have <= streamWindow_ / 2 || need <= topUp ? std::min(need, topUp) : 0;
    grant = std::min(grant, free > olderNeeds ? free - olderNeeds : 0);
    if (grant > 0 && !stream->declaredLength && !reserveBody(stream, received + have + grant)) {
      if (have == 0) blocked.push_back(stream);  // it cannot go on: the server is full
      grant = 0;
    }
    if (grant > 0) {
      nghttp2_submit_window_update(session_, NGHTTP2_FLAG_NONE, stream->id,
                                   static_cast<int32_t>(grant));
      free -= grant;
      need -= grant;
    }
    olderNeeds += need;
  }
  for (Stream* stream : blocked) {
    LOG_DEBUG << name_ << ": no room for more of the body of stream " << stream->id;
    refuse(stream, 503);
  }
}

// --- Answers ---

bool ServerSession::roomForAnswer() const {
  return pending_ == 0 || (openFiles_ < config_.options.maxConnectionFiles &&
                           answerBytes_ < config_.options.maxConnectionResponseBytes);
}

bool ServerSession::mayServe() const { return !failed_ && !ready_.empty() && roomForAnswer(); }

void ServerSession::serveReady() {
  while (mayServe()) {
    Stream* stream = streamFor(ready_.front());
    ready_.pop_front();
    if (stream != nullptr && !stream->answered) answer(stream);  // else reset meanwhile
  }
}

void ServerSession::settle() {
  serveReady();
  deliverBodies();  // to handlers just run, too
  grantWindows();   // the bodies just handed over left the pool
}

void ServerSession::answer(Stream* stream) {
  stream->answered = true;
  if (stream->refuse == 0 && stream->route != http::HttpServer::Route::kHandler) {
    answerLater(stream);
    return;
  }
  stream->submitted = true;
  HttpResponse response(/*close=*/false);
  if (stream->refuse != 0) {
    response.setStatusPage(stream->refuse);
    if (stream->refuse == 503) response.addHeader("Retry-After", "1");
  } else {
    const bool answered = callGuarded(HandlerOf{name_}, [&] {
      if (config_.handler) {
        config_.handler(stream->request, &response);
      } else {
        response.setStatus(404);
      }
    });
    if (!answered) {
      response = HttpResponse(false);
      response.setStatusPage(500);
    }
  }
  // The request is done with: its body leaves the connection's pool and
  // the server's budget.
  dropBody(stream);
  submitResponse(stream, &response);
}

void ServerSession::submitResponse(Stream* stream, HttpResponse* response) {
  // A refused request has no parsed method: the one sent decides (RFC 9110
  // 9.3.2: no body in the answer to a HEAD, whatever its status).
  const bool headOnly = stream->method == "HEAD";
  if (!headOnly) admitFile(stream, response);
  const int status = response->status();
  const bool noLength = status < 200 || status == 204;
  const bool noBody = noLength || status == 304 || headOnly;
  // Announced before the body moves to the stream (a HEAD announces the
  // GET's length).
  const std::optional<size_t> length =
      noLength ? std::nullopt : std::optional<size_t>(response->contentLength());
  takeBody(stream, response, noBody);
  const int rv =
      submitFields(stream, *response, length, stream->length > 0 ? Body::kWhole : Body::kNone);
  if (rv == 0 && stream->length > 0) {
    stream->open = true;
    ++pending_;
    unsentBytes_ += stream->length;
  } else {
    releaseAnswer(stream);
  }
}

void ServerSession::submitStreamed(Stream* stream, HttpResponse* head) {
  const int status = head->status();
  const bool noLength = status < 200 || status == 204;
  const bool noBody = noLength || status == 304 || stream->method == "HEAD";
  if (head->hasLength())
    stream->declared = head->contentLength();  // a body set on the head goes first
  const std::optional<size_t> length =
      noLength || !head->hasLength() ? std::nullopt : std::optional<size_t>(head->contentLength());
  const int rv = submitFields(stream, *head, length, noBody ? Body::kNone : Body::kStreamed);
  if (rv != 0 || noBody) return;  // a writer's bytes are dropped from here on
  stream->streaming = true;
  // A body set on the head goes first.
  if (!head->body().empty()) writerWrite(stream->id, head->takeBody());
}

int ServerSession::submitFields(Stream* stream, const HttpResponse& response,
                                std::optional<size_t> length, Body body) {
  // The strings first, then the field list pointing into them.
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(8);
  fields.emplace_back(":status", std::to_string(response.status()));
  fields.emplace_back("date", std::string(currentDate()));
  if (!response.contentType().empty()) {
    fields.emplace_back("content-type", response.contentType());
  }
  response.forEachHeader([&](std::string_view name, std::string_view value) {
    std::string lower = lowered(name);
    if (!connectionSpecific(lower)) fields.emplace_back(std::move(lower), std::string(value));
  });
  if (length) fields.emplace_back("content-length", std::to_string(*length));
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size());
  for (auto& [name, value] : fields) {
    nv.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()),
                  name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider provider{};
  provider.source.ptr = stream;
  provider.read_callback = body == Body::kStreamed ? Callbacks::readStreamed : Callbacks::readData;
  return nghttp2_submit_response(session_, stream->id, nv.data(), nv.size(),
                                 body == Body::kNone ? nullptr : &provider);
}

void ServerSession::admitFile(Stream* stream, HttpResponse* response) {
  // Each file an answer holds counts against the server's bound on files
  // held by HTTP/2 answers: past it, 503 (the descriptor closes here).
  if (!response->hasFile() || !config_.fileBudget || stream->fileShare.cover(1)) return;
  LOG_DEBUG << name_ << ": too many files held by HTTP/2 answers; stream " << stream->id;
  *response = HttpResponse(false);
  response->setStatusPage(503);
  response->addHeader("Retry-After", "1");
}

void ServerSession::takeBody(Stream* stream, HttpResponse* response, bool noBody) {
  stream->length = 0;
  if (noBody) return;
  if (response->hasFile()) {
    // Read one DATA frame at a time, straight into the output: no copy of
    // it is held, whatever its size.
    stream->length = response->contentLength();
    stream->file = response->takeFile();
    ++openFiles_;
    return;
  }
  stream->body = response->takeBody();
  stream->length = stream->body.size();
  answerBytes_ += stream->body.size();
}

void ServerSession::releaseAnswer(Stream* stream) {
  if (stream->file.valid()) {
    stream->file.reset();
    stream->fileShare.release();
    --openFiles_;
  }
  answerBytes_ -= stream->body.size();
  stream->erased += stream->body.size();
  std::string().swap(stream->body);
}

// --- Answers that come later (Http2Writer) ---

void ServerSession::answerLater(Stream* stream) {
  const std::shared_ptr<const TcpConnection> conn = connection_.lock();
  const int32_t id = stream->id;
  auto writer = std::make_shared<Http2Writer>(config_.gate, conn ? conn->loop() : nullptr, anchor_,
                                              id, config_.writer);
  stream->writer = writer;
  writer->setRequestBody(stream->streamedBody);
  const bool returned = conn && config_.gate && callGuarded(HandlerOf{name_}, [&] {
                          config_.asyncHandler(stream->request, writer);
                        });
  if (!returned) {
    writer->markEnded();
    writerAbort(id);  // a 500 if nothing was sent yet
  }
  // The request is done with (the handler copied what it needs later).
  if (Stream* still = streamFor(id)) dropBody(still);
}

bool ServerSession::writerRespond(int32_t id, HttpResponse response) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->submitted) return false;
  stream->submitted = true;
  submitResponse(stream, &response);
  answerEndsBody(stream);
  wake();
  return true;
}

bool ServerSession::writerRespondHeadersOnly(int32_t id, HttpResponse head) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->submitted) return false;
  stream->submitted = true;
  // No data provider: nghttp2 sets END_STREAM on the HEADERS frame.
  submitFields(stream, head, std::nullopt, Body::kNone);
  answerEndsBody(stream);
  wake();
  return true;
}

bool ServerSession::writerStart(int32_t id, HttpResponse head) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->submitted) return false;
  stream->submitted = true;
  submitStreamed(stream, &head);
  wake();
  return true;
}

size_t ServerSession::writerWrite(int32_t id, std::string data) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || !stream->streaming || stream->finished) return 0;
  if (stream->declared && stream->length + data.size() > *stream->declared) {
    LOG_ERROR << name_ << ": stream " << id << ": more body written than its Content-Length";
    resetStream(stream);
    return 0;
  }
  stream->length += data.size();
  answerBytes_ += data.size();
  unsentBytes_ += data.size();
  stream->body.append(data);
  if (!stream->open) {
    stream->open = true;
    ++pending_;
  }
  nghttp2_session_resume_data(session_, id);
  wake();
  return stream->length - stream->sent;
}

void ServerSession::writerFinish(int32_t id,
                                 std::vector<std::pair<std::string, std::string>> trailers) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || !stream->streaming || stream->finished) return;
  if (stream->declared && stream->length != *stream->declared) {
    LOG_ERROR << name_ << ": stream " << id << " finished short of its Content-Length";
    resetStream(stream);
    return;
  }
  stream->trailers = trailerFields(std::move(trailers));
  stream->finished = true;
  answerEndsBody(stream);
  nghttp2_session_resume_data(session_, id);
  wake();
}

void ServerSession::writerAbort(int32_t id) {
  Stream* stream = streamFor(id);
  if (stream == nullptr) return;
  if (!stream->submitted) {
    HttpResponse failure(false);
    failure.setStatusPage(500);
    writerRespond(id, std::move(failure));
    return;
  }
  resetStream(stream);
}

void ServerSession::writerReset(int32_t id, uint32_t code, bool afterAnswer) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->reset) return;
  if (!afterAnswer) {
    resetStream(stream, code);
    return;
  }
  // The client has ended its request: the answer closes the stream, and
  // there is nothing left to stop.
  if (stream->remoteEnded) return;
  if (!stream->endSent) {
    // Behind the answer's last frame (frameSent()), not before it: a
    // RST_STREAM queued now would overtake what is still to be framed.
    stream->resetAfterAnswer = true;
    stream->resetCode = code;
    return;
  }
  stream->reset = true;
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, code);
  wake();
}

void ServerSession::resetStream(Stream* stream, uint32_t code) {
  // Never a half answer passed off as whole: the client sees the reset.
  stream->finished = true;
  stream->reset = true;
  if (stream->streamedBody) endStreamedBody(stream, /*complete=*/false);
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id, code);
  wake();
}

void ServerSession::wake() {
  if (!busy_ && wake_) wake_();
}

}  // namespace libnet::http2

namespace libnet::http2 {

// --- Request bodies in pieces (Http2RequestBody) ---

int ServerSession::route(Stream* stream) {
  using Route = http::HttpServer::Route;
  if (!config_.router) {
    stream->route = config_.asyncHandler ? Route::kAsync : Route::kHandler;
    return 0;
  }
  const bool chosen =
      callGuarded(HandlerOf{name_}, [&] { stream->route = config_.router(stream->request); });
  if (!chosen) return 500;
  const bool handled =
      stream->route == Route::kHandler ? bool(config_.handler) : bool(config_.asyncHandler);
  return handled ? 0 : 500;
}

void ServerSession::beginStreamedBody(Stream* stream) {
  const uint64_t max = config_.maxStreamedBodyBytes;
  if (max != 0 && stream->declaredLength && *stream->declaredLength > max) {
    refuse(stream, 413);  // before a byte of it is sent
    return;
  }
  // Not held whole: the body budget is not drawn on; the stream's window is.
  stream->bodyShare.release();
  const int64_t length =
      stream->declaredLength
          ? static_cast<int64_t>(std::min<uint64_t>(*stream->declaredLength, INT64_MAX))
          : -1;
  stream->streamedBody = std::make_shared<Http2RequestBody>(anchor_, stream->id, length);
  streamed_.emplace(stream->id, stream);
  bodiesWaiting_ = true;  // an empty body ends at once
  // The handler runs now, not in turn behind complete requests: the body
  // waits for its consumer, and a client resetting the stream right after
  // its head must find one to tell.
  answer(stream);
}

bool ServerSession::appendStreamed(Stream* stream, std::string_view data) {
  Http2RequestBody& body = *stream->streamedBody;
  if (body.ended()) return true;  // the answer is over: the rest is dropped
  const uint64_t max = config_.maxStreamedBodyBytes;
  if (max != 0 && body.arrived() + data.size() > max) {
    LOG_DEBUG << name_ << ": the body of stream " << stream->id << " is past "
              << "maxStreamedBodyBytes";
    endStreamedBody(stream, /*complete=*/false);
    // The answer is cut off with it: the writer hears the stream close.
    stream->finished = true;
    stream->reset = true;
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_CANCEL);
    return false;
  }
  body.append(data);
  if (body.flowing()) bodiesWaiting_ = true;
  return true;
}

void ServerSession::bodyResumed(int32_t id) {
  if (streamed_.count(id) == 0) return;
  bodiesWaiting_ = true;
  wake();
}

void ServerSession::deliverBodies() {
  if (!bodiesWaiting_ || failed_) return;
  bodiesWaiting_ = false;
  // The callbacks may end bodies (and so leave streamed_): by id.
  std::vector<int32_t> ids;
  ids.reserve(streamed_.size());
  for (const auto& [id, stream] : streamed_) ids.push_back(id);
  for (const int32_t id : ids) deliverBody(id);
}

void ServerSession::deliverBody(int32_t id) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || !stream->streamedBody) return;
  const std::shared_ptr<Http2RequestBody> body = stream->streamedBody;  // the callback may end it
  if (body->ended()) return;
  body->deliver();
  if (body->ended()) {
    streamed_.erase(id);
    // Its consumer threw: the answer fails with it, and a client still
    // sending is told to stop once the answer is out.
    if (!stream->finished && !(stream->submitted && !stream->streaming)) {
      if (!stream->remoteEnded) stream->resetAfterAnswer = true;
      // The writer's later calls (its destructor's abort among them) find
      // the answer over.
      if (const std::shared_ptr<Http2Writer> writer = stream->writer.lock()) writer->markEnded();
      writerAbort(id);
    }
    return;
  }
  if (stream->remoteEnded && body->held() == 0) {
    endStreamedBody(stream, /*complete=*/true);
  } else if (body->flowing() && body->held() == 0) {
    grantStreamed(stream);
  }
}

void ServerSession::grantStreamed(Stream* stream) {
  // The client may send up to its Content-Length, or one byte past
  // maxStreamedBodyBytes (which shows the body too large).
  const uint64_t max = config_.maxStreamedBodyBytes;
  const uint64_t total = stream->declaredLength ? *stream->declaredLength
                         : max != 0             ? max + 1
                                                : UINT64_MAX;
  const uint64_t arrived = stream->streamedBody->arrived();
  const uint64_t remaining = total > arrived ? total - arrived : 0;
  const size_t have = credit(stream);
  const uint64_t need = remaining > have ? remaining - have : 0;
  if (need == 0) return;
  // Topped up a window at a time, once half of it is used (or to finish):
  // a consumer that pauses holds at most one window.
  const size_t topUp = have < streamWindow_ ? streamWindow_ - have : 0;
  const size_t grant = have <= streamWindow_ / 2 || need <= topUp
                           ? static_cast<size_t>(std::min<uint64_t>(need, topUp))
                           : 0;
  if (grant > 0) {
    nghttp2_submit_window_update(session_, NGHTTP2_FLAG_NONE, stream->id,
                                 static_cast<int32_t>(grant));
  }
}

void ServerSession::endStreamedBody(Stream* stream, bool complete) {
  streamed_.erase(stream->id);
  const std::shared_ptr<Http2RequestBody> body = stream->streamedBody;
  body->end(complete ? http::RequestBody::End::kComplete : http::RequestBody::End::kAborted);
}

void ServerSession::answerEndsBody(Stream* stream) {
  if (!stream->streamedBody || stream->streamedBody->ended()) return;
  // All of it delivered and ended: that is a complete body, answered after.
  const bool whole = stream->remoteEnded && stream->streamedBody->held() == 0;
  if (!stream->remoteEnded) stream->resetAfterAnswer = true;  // RFC 9113 8.1
  endStreamedBody(stream, whole);
}

}  // namespace libnet::http2
