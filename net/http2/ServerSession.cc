#include "net/http2/ServerSession.h"

#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "base/Guarded.h"
#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/Buffer.h"
#include "net/http/HttpDate.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"

namespace libnet::http2 {

using http::HttpRequest;
using http::HttpResponse;

// One request and, once answered, the rest of its body still to send.
struct ServerSession::Stream {
  int32_t id = 0;
  HttpRequest request;
  std::string method;     // :method
  std::string target;     // :path (:authority for CONNECT)
  std::string authority;  // :authority, the Host field unless one came too
  std::string cookies;    // cookie fields joined with "; " (RFC 9113 8.2.3)
  size_t headerBytes = 0;
  size_t headerCount = 0;
  int refuse = 0;         // the status answered instead of the handler's, or 0
  bool answered = false;  // a response was submitted
  bool open = false;      // answered and not all of its body sent
  // The body to send: `body`, or `length` bytes of `file`; `scheduled`
  // bytes handed to DATA frames so far, `sent` written out.
  std::string body;
  UniqueFd file;
  size_t length = 0;
  size_t scheduled = 0;
  size_t sent = 0;
};

namespace {

constexpr size_t kFrameHeader = 9;
// RFC 7541 4.1: each field counts 32 bytes beyond its name and value.
constexpr size_t kFieldOverhead = 32;

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
          out->unwrite(kFrameHeader + (frame->data.padlen > 0 ? 1 : 0));
          return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
      }
      out->hasWritten(length);
    } else {
      out->append(std::string_view(stream->body).substr(stream->sent, length));
    }
    if (frame->data.padlen > 1) out->append(std::string(frame->data.padlen - 1, '\0'));
    stream->sent += length;
    s->responseBytes_ += length;
    return 0;
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
    stream->headerBytes += nameLength + valueLength + kFieldOverhead;
    ++stream->headerCount;
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
    addField(stream, view(name, nameLength), view(value, valueLength));
    return 0;
  }

  static void addField(Stream* stream, std::string_view name, std::string_view value) {
    if (name == ":method") {
      stream->method.assign(value);
    } else if (name == ":path") {
      stream->target.assign(value);
    } else if (name == ":authority") {
      stream->authority.assign(value);
    } else if (name == "cookie") {
      if (!stream->cookies.empty()) stream->cookies.append("; ");
      stream->cookies.append(value);
    } else if (name.empty() || name[0] != ':') {
      stream->request.appendHeader(name, value);
    }
  }

  static int dataChunk(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t length,
                       void* user) {
    ServerSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    Stream* stream = s->streamFor(id);
    if (stream == nullptr || stream->refuse != 0) return 0;
    std::string& body = stream->request.body();
    if (body.size() + length > s->config_.limits.maxBodyBytes) {
      stream->refuse = 413;
    } else if (s->bodyBytes_ + length > s->config_.options.maxConnectionBodyBytes) {
      stream->refuse = 503;
    } else {
      body.append(view(data, length));
      s->bodyBytes_ += length;
      return 0;
    }
    s->bodyBytes_ -= body.size();
    std::string().swap(body);
    return 0;
  }

  static int frameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    ServerSession* s = self(user);
    const MonoTime now = MonoClock::now();
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) break;
        s->prefaceDone_ = true;
        if (!s->control_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "SETTINGS flood");
        break;
      case NGHTTP2_PING:
      case NGHTTP2_PRIORITY:
        if (!s->control_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "control frame flood");
        break;
      case NGHTTP2_RST_STREAM:
        if (!s->resets_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "stream reset flood");
        break;
      case NGHTTP2_DATA:
        if (frame->hd.length == 0 && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0 &&
            !s->control_.take(now)) {
          s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "empty DATA frame flood");
        }
        break;
      default:
        break;
    }
    if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS) != 0) {
      s->headerBlockOpen_ = false;
    }
    const bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (!s->failed_ && ends &&
        (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA)) {
      if (Stream* stream = s->streamFor(frame->hd.stream_id)) s->refuseOrServe(stream);
    }
    return s->stopIfFailed();
  }

  static int streamClosed(nghttp2_session*, int32_t id, uint32_t errorCode, void* user) {
    self(user)->closeStream(id, errorCode);
    return 0;
  }
};

ServerSession::Bucket::Bucket(uint32_t burst, uint32_t perSecond)
    : tokens_(burst), burst_(burst), perSecond_(perSecond) {}

bool ServerSession::Bucket::take(MonoTime now) {
  if (last_ != MonoTime{}) {
    const double seconds = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + seconds * perSecond_);
  }
  last_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

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
      nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, C::streamClosed);
    }
    ~Holder() { nghttp2_session_callbacks_del(callbacks); }
  };
  thread_local Holder holder;
  return holder.callbacks;
}

}  // namespace

ServerSession::ServerSession(const Config& config, std::string name)
    : config_(config),
      name_(std::move(name)),
      resets_(config.options.resetBurst, config.options.resetsPerSecond),
      control_(config.options.controlBurst, config.options.controlPerSecond) {
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) throw std::bad_alloc();
  nghttp2_option_set_max_continuations(option, config.options.maxHeaderBlockFrames);
  const int rv = nghttp2_session_server_new2(&session_, sharedCallbacks(), this, option);
  nghttp2_option_del(option);
  if (rv != 0) throw std::bad_alloc();
  submitSettings();
}

ServerSession::~ServerSession() { nghttp2_session_del(session_); }

void ServerSession::submitSettings() {
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, config_.options.maxConcurrentStreams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, config_.options.initialWindowSize},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(std::min<size_t>(config_.limits.maxHeaderBytes, UINT32_MAX))},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
}

bool ServerSession::receive(std::string_view data) {
  if (failed_) return false;
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
  return !failed_;
}

void ServerSession::produce(Buffer* out, size_t budget) {
  out_ = out;
  budget_ = budget;
  const int rv = nghttp2_session_send(session_);
  out_ = nullptr;
  if (rv != 0) {
    LOG_DEBUG << name_ << ": HTTP/2 output failed: " << nghttp2_strerror(rv);
    failed_ = true;
  }
}

bool ServerSession::wantsWrite() const { return nghttp2_session_want_write(session_) != 0; }

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

int ServerSession::stopIfFailed() const { return failed_ ? NGHTTP2_ERR_CALLBACK_FAILURE : 0; }

ServerSession::Stream* ServerSession::streamFor(int32_t id) {
  const auto it = streams_.find(id);
  return it != streams_.end() ? it->second.get() : nullptr;
}

void ServerSession::closeStream(int32_t id, uint32_t errorCode) {
  const auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream* stream = it->second.get();
  if (stream->open) --pending_;
  if (errorCode != NGHTTP2_NO_ERROR && !stream->answered) {
    LOG_DEBUG << name_ << ": stream " << id << " closed before its answer, code " << errorCode;
  }
  bodyBytes_ -= stream->request.body().size();
  streams_.erase(it);
}

void ServerSession::refuseOrServe(Stream* stream) {
  if (stream->answered) return;
  stream->answered = true;
  HttpRequest& request = stream->request;
  if (stream->refuse == 0) {
    const std::optional<http::Method> method = http::methodFromName(stream->method);
    if (!method) {
      stream->refuse = 501;
    } else {
      const std::string_view target =
          *method == http::Method::kConnect ? stream->authority : stream->target;
      stream->refuse = request.assign(*method, http::Version::kHttp2, target);
    }
  }
  if (!stream->authority.empty() && !request.header("host")) {
    request.appendHeader("host", stream->authority);
  }
  if (!stream->cookies.empty()) request.appendHeader("cookie", stream->cookies);
  answer(stream);
}

void ServerSession::answer(Stream* stream) {
  HttpResponse response(/*close=*/false);
  if (stream->refuse != 0) {
    response.setStatusPage(stream->refuse);
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
  // The request is done with: its body leaves the connection's count.
  bodyBytes_ -= stream->request.body().size();
  std::string().swap(stream->request.body());
  submitResponse(stream, &response);
}

void ServerSession::submitResponse(Stream* stream, HttpResponse* response) {
  const int status = response->status();
  const bool headOnly = stream->request.method() == http::Method::kHead;
  const bool noLength = status < 200 || status == 204;
  const bool noBody = noLength || status == 304 || headOnly;
  // The strings first, then the field list pointing into them.
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(8);
  fields.emplace_back(":status", std::to_string(status));
  fields.emplace_back("date", std::string(currentDate()));
  if (!response->contentType().empty()) {
    fields.emplace_back("content-type", response->contentType());
  }
  response->forEachHeader([&](std::string_view name, std::string_view value) {
    std::string lower = lowered(name);
    if (!connectionSpecific(lower)) fields.emplace_back(std::move(lower), std::string(value));
  });
  if (!noLength) fields.emplace_back("content-length", std::to_string(response->contentLength()));
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size());
  for (auto& [name, value] : fields) {
    nv.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()),
                  name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  stream->length = noBody ? 0 : response->contentLength();
  // A file is read one DATA frame at a time, straight into the output: no
  // copy of it is held, whatever its size.
  if (!noBody && response->hasFile()) {
    stream->file = response->takeFile();
  } else if (!noBody) {
    stream->body = response->takeBody();
    stream->length = stream->body.size();
  }
  nghttp2_data_provider provider{};
  provider.source.ptr = stream;
  provider.read_callback = Callbacks::readData;
  const int rv = nghttp2_submit_response(session_, stream->id, nv.data(), nv.size(),
                                         stream->length > 0 ? &provider : nullptr);
  if (rv == 0 && stream->length > 0) {
    stream->open = true;
    ++pending_;
  }
}

}  // namespace libnet::http2
