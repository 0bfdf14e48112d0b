#include "net/http2/ClientSession.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <new>
#include <optional>
#include <utility>

#include "base/Logging.h"
#include "net/Buffer.h"

namespace libnet::http2 {

// One request and its response. Found by id in the session's map, never
// through nghttp2's stream user data or a data source pointer: a stream the
// application resets leaves the map at once, while nghttp2 still knows it.
struct ClientSession::Stream {
  int32_t id = 0;
  StreamCallbacks callbacks;
  // The request body: `out` from `outOffset` is still to be framed.
  std::string out;
  size_t outOffset = 0;
  bool outEnded = false;
  bool deferred = false;       // the data provider waits for write() or endStream()
  bool aboveLowWater = false;  // onWritable is owed once the queue drains
  bool sent = false;           // its HEADERS went out: the server may have seen it
  // The header block being received (the head, then the trailers).
  size_t headerBytes = 0;
  int status = 0;
  Fields fields;
  bool tooLarge = false;
  bool headDone = false;
  // The consumer: paused, and what waits for it (in order: data, trailers,
  // the close).
  bool paused = false;
  std::string held;
  std::optional<Fields> trailers;
  std::optional<Close> closing;
  bool overrun = false;  // DATA past the stream's window: not kept
};

namespace {

constexpr size_t kFieldOverhead = 32;  // RFC 7541 4.1
constexpr size_t kCompactAt = 64 * 1024;

ClientSession* self(void* user) { return static_cast<ClientSession*>(user); }

std::string_view view(const uint8_t* data, size_t length) {
  return {reinterpret_cast<const char*>(data), length};
}

int parseStatus(std::string_view value) {
  int status = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), status);
  return error == std::errc() && end == value.data() + value.size() ? status : 0;
}

}  // namespace

// nghttp2's callbacks, each a static function that finds its session in
// user_data.
struct ClientSession::Callbacks {
  static ssize_t send(nghttp2_session*, const uint8_t* data, size_t length, int, void* user) {
    ClientSession* s = self(user);
    if (s->out_ == nullptr || s->out_->readableBytes() >= s->budget_) return NGHTTP2_ERR_WOULDBLOCK;
    s->out_->append(view(data, length));
    return static_cast<ssize_t>(length);
  }

  // The request body's data provider: deferred while nothing new is queued
  // (nghttp2_session_resume_data wakes it).
  static ssize_t readBody(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                          uint32_t* flags, nghttp2_data_source*, void* user) {
    ClientSession* s = self(user);
    Stream* stream = s->streamFor(id);
    if (stream == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    const size_t available = stream->out.size() - stream->outOffset;
    if (available == 0 && !stream->outEnded) {
      stream->deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    const size_t n = std::min(length, available);
    std::memcpy(buf, stream->out.data() + stream->outOffset, n);
    stream->outOffset += n;
    if (stream->outOffset >= kCompactAt) {
      stream->out.erase(0, stream->outOffset);
      stream->outOffset = 0;
    }
    if (stream->outEnded && n == available) *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (stream->aboveLowWater && available - n < s->options_.writeLowWater) {
      stream->aboveLowWater = false;
      s->writable_.push_back(id);  // told after nghttp2_session_send() returns
    }
    return static_cast<ssize_t>(n);
  }

  static int beginFrame(nghttp2_session* session, const nghttp2_frame_hd* hd, void* user) {
    ClientSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    if (hd->type == NGHTTP2_HEADERS) {
      s->blockFrames_ = 0;
      s->blockBytes_ = 0;
    }
    if (hd->type == NGHTTP2_HEADERS || hd->type == NGHTTP2_CONTINUATION) {
      s->headerBlockOpen_ = (hd->flags & NGHTTP2_FLAG_END_HEADERS) == 0;
      ++s->blockFrames_;
      s->blockBytes_ += hd->length;
      if (s->blockFrames_ > s->options_.maxHeaderBlockFrames ||
          s->blockBytes_ > 2 * s->options_.maxHeaderListBytes) {
        s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header block too long");
      }
    }
    if (hd->type == NGHTTP2_DATA) {
      // Past the stream's window: nghttp2 resets the stream
      // (FLOW_CONTROL_ERROR) but still hands over the bytes; they are not
      // kept, so that a stream holds at most what it was granted.
      Stream* stream = s->streamFor(hd->stream_id);
      const int32_t window = nghttp2_session_get_stream_local_window_size(session, hd->stream_id);
      if (stream != nullptr && static_cast<int64_t>(hd->length) > std::max(window, 0)) {
        stream->overrun = true;
      }
    }
    return s->stopIfFailed();
  }

  static int beginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    Stream* stream = self(user)->streamFor(frame->hd.stream_id);
    if (stream != nullptr) {
      stream->headerBytes = 0;
      stream->status = 0;
      stream->fields.clear();
    }
    return 0;
  }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                    size_t nameLength, const uint8_t* value, size_t valueLength, uint8_t,
                    void* user) {
    ClientSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    Stream* stream = s->streamFor(frame->hd.stream_id);
    if (stream == nullptr) return 0;
    stream->headerBytes += nameLength + valueLength + kFieldOverhead;
    const size_t limit = s->options_.maxHeaderListBytes;
    if (stream->headerBytes > 4 * limit) {
      // Far past what the server was told (SETTINGS_MAX_HEADER_LIST_SIZE):
      // a small block that decodes huge, an HPACK bomb.
      s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "response header list far over its limit");
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    if (stream->headerBytes > limit) stream->tooLarge = true;
    if (stream->tooLarge) return 0;
    const std::string_view fieldName = view(name, nameLength);
    if (fieldName == ":status") {
      stream->status = parseStatus(view(value, valueLength));
    } else if (fieldName.empty() || fieldName[0] != ':') {
      stream->fields.emplace_back(fieldName, view(value, valueLength));
    }
    return 0;
  }

  static int dataChunk(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data,
                       size_t length, void* user) {
    ClientSession* s = self(user);
    if (s->failed_) return NGHTTP2_ERR_CALLBACK_FAILURE;
    // The connection window never holds anything back: the streams' windows
    // bound what the connection holds.
    s->unconsumed_ += length;
    Stream* stream = s->streamFor(id);
    if (stream == nullptr || stream->overrun || stream->closing) return 0;
    if (stream->paused || !stream->held.empty()) {
      stream->held.append(view(data, length));
      return 0;
    }
    if (stream->callbacks.onData) stream->callbacks.onData(view(data, length));
    // Taken: the stream's window is given back (nghttp2 sends WINDOW_UPDATE
    // once half of it is consumed).
    nghttp2_session_consume_stream(session, id, length);
    return s->stopIfFailed();
  }

  static int frameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    ClientSession* s = self(user);
    countControlFrame(s, frame);
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        s->headerBlockOpen_ = false;
        if (!s->failed_) headersDone(s, frame);
        break;
      case NGHTTP2_PING:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) != 0 && s->pingAck_) s->pingAck_();
        break;
      case NGHTTP2_GOAWAY:
        s->goAwayReceived_ = true;
        s->goAwayLast_ = frame->goaway.last_stream_id;
        if (s->goAway_) s->goAway_(frame->goaway.last_stream_id, frame->goaway.error_code);
        break;
      default:
        break;
    }
    return s->stopIfFailed();
  }

  static void headersDone(ClientSession* s, const nghttp2_frame* frame) {
    const int32_t id = frame->hd.stream_id;
    Stream* stream = s->streamFor(id);
    if (stream == nullptr || stream->closing) return;
    if (stream->tooLarge) {
      LOG_DEBUG << s->name_ << ": response header list of stream " << id << " too large";
      s->reset(id, NGHTTP2_ENHANCE_YOUR_CALM);
      return;
    }
    if (!stream->headDone) {
      // 1xx heads are interim (RFC 9110 15.2): the final one follows.
      if (stream->status >= 100 && stream->status < 200) return;
      stream->headDone = true;
      if (stream->callbacks.onHead) stream->callbacks.onHead(stream->status, stream->fields);
      return;
    }
    stream->trailers = std::move(stream->fields);
    s->deliver(id);
  }

  static void countControlFrame(ClientSession* s, const nghttp2_frame* frame) {
    const MonoTime now = MonoClock::now();
    const bool ack = (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0;
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if (ack) break;
        s->settingsReceived_ = true;
        if (!s->control_.take(now)) s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "SETTINGS flood");
        break;
      case NGHTTP2_PING:
        if (!ack && !s->control_.take(now)) {
          s->terminate(NGHTTP2_ENHANCE_YOUR_CALM, "PING flood");
        }
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
  }

  static int frameSent(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    if (Stream* stream = self(user)->streamFor(frame->hd.stream_id)) stream->sent = true;
    return 0;
  }

  // A request that never went out (a GOAWAY came first, the session is
  // ending): the server has not seen it.
  static int frameNotSent(nghttp2_session*, const nghttp2_frame* frame, int, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    ClientSession* s = self(user);
    Close close;
    close.errorCode = NGHTTP2_REFUSED_STREAM;
    close.refused = true;
    s->closeStream(frame->hd.stream_id, close);
    return 0;
  }

  static int streamClosed(nghttp2_session*, int32_t id, uint32_t errorCode, void* user) {
    ClientSession* s = self(user);
    Stream* stream = s->streamFor(id);
    if (stream == nullptr || stream->closing) return 0;
    Close close;
    close.errorCode = errorCode;
    close.refused = errorCode == NGHTTP2_REFUSED_STREAM;
    if (errorCode != NGHTTP2_NO_ERROR) {
      s->closeStream(id, close);  // what it held is incomplete: dropped
      return 0;
    }
    // Complete: the close follows what the consumer has not taken yet.
    stream->closing = close;
    s->deliver(id);
    return 0;
  }
};

ClientSession::Bucket::Bucket(uint32_t burst, uint32_t perSecond)
    : tokens_(burst), burst_(burst), perSecond_(perSecond) {}

bool ClientSession::Bucket::take(MonoTime now) {
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

// nghttp2 copies callbacks into the session: made once per thread, shared by
// every session made on it.
nghttp2_session_callbacks* sharedCallbacks() {
  struct Holder {
    nghttp2_session_callbacks* callbacks = nullptr;
    Holder() {
      using C = ClientSession::Callbacks;
      if (nghttp2_session_callbacks_new(&callbacks) != 0) throw std::bad_alloc();
      nghttp2_session_callbacks_set_send_callback(callbacks, C::send);
      nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks, C::beginFrame);
      nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, C::beginHeaders);
      nghttp2_session_callbacks_set_on_header_callback(callbacks, C::header);
      nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, C::dataChunk);
      nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, C::frameReceived);
      nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, C::frameSent);
      nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, C::frameNotSent);
      nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, C::streamClosed);
    }
    ~Holder() { nghttp2_session_callbacks_del(callbacks); }
  };
  thread_local Holder holder;
  return holder.callbacks;
}

}  // namespace

ClientSession::ClientSession(std::string name) : ClientSession(std::move(name), Options()) {}

ClientSession::ClientSession(std::string name, Options options)
    : name_(std::move(name)),
      options_(options),
      control_(options.controlBurst, options.controlPerSecond) {
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) != 0) throw std::bad_alloc();
  nghttp2_option_set_max_continuations(option, options_.maxHeaderBlockFrames);
  // Stream windows are given back as the consumer takes the data, not as
  // nghttp2 receives it.
  nghttp2_option_set_no_auto_window_update(option, 1);
  // Until the server's SETTINGS says otherwise (RFC 9113 6.5.2 recommends at
  // least 100).
  nghttp2_option_set_peer_max_concurrent_streams(option, 100);
  const int rv = nghttp2_session_client_new2(&session_, sharedCallbacks(), this, option);
  nghttp2_option_del(option);
  if (rv != 0) throw std::bad_alloc();
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, options_.streamWindow},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE,
       static_cast<uint32_t>(std::min<size_t>(options_.maxHeaderListBytes, UINT32_MAX))},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  // Each byte received gives its room back to the connection window at
  // once: as large as every stream's window together, so it never slows
  // what they allow.
  const uint64_t window =
      std::min<uint64_t>(uint64_t{options_.streamWindow} * std::max<size_t>(options_.maxStreams, 1),
                         NGHTTP2_MAX_WINDOW_SIZE);
  if (window > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                          static_cast<int32_t>(window));
  }
}

ClientSession::~ClientSession() {
  closeAll();
  nghttp2_session_del(session_);
}

int32_t ClientSession::submit(const Fields& fields, std::string body, bool endStream,
                              StreamCallbacks callbacks) {
  if (failed_ || goingAway_ || goAwayReceived_ || streams_.size() >= options_.maxStreams) {
    return 0;
  }
  std::vector<nghttp2_nv> nv;
  nv.reserve(fields.size());
  for (const auto& [name, value] : fields) {
    nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                  reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                  value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider provider{};
  provider.read_callback = Callbacks::readBody;
  const bool hasBody = !(endStream && body.empty());
  const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                            hasBody ? &provider : nullptr, nullptr);
  if (id <= 0) return 0;
  auto stream = std::make_unique<Stream>();
  stream->id = id;
  stream->callbacks = std::move(callbacks);
  stream->out = std::move(body);
  stream->outEnded = endStream;
  stream->aboveLowWater = stream->out.size() >= options_.writeLowWater;
  streams_[id] = std::move(stream);
  return id;
}

void ClientSession::write(int32_t id, std::string_view data) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->outEnded || stream->closing) return;
  stream->out.append(data);
  if (stream->out.size() - stream->outOffset >= options_.writeLowWater) {
    stream->aboveLowWater = true;
  }
  if (stream->deferred) {
    stream->deferred = false;
    nghttp2_session_resume_data(session_, id);
  }
}

void ClientSession::endStream(int32_t id) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->outEnded || stream->closing) return;
  stream->outEnded = true;
  if (stream->deferred) {
    stream->deferred = false;
    nghttp2_session_resume_data(session_, id);
  }
}

size_t ClientSession::queuedBytes(int32_t id) const {
  const Stream* stream = streamFor(id);
  return stream != nullptr ? stream->out.size() - stream->outOffset : 0;
}

void ClientSession::reset(int32_t id, uint32_t errorCode) {
  Stream* stream = streamFor(id);
  if (stream == nullptr) return;
  if (!stream->closing) nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, errorCode);
  Close close;
  close.errorCode = errorCode;
  close.refused = !stream->sent;
  closeStream(id, close);
}

void ClientSession::pause(int32_t id) {
  if (Stream* stream = streamFor(id)) stream->paused = true;
}

void ClientSession::resume(int32_t id) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || !stream->paused) return;
  stream->paused = false;
  resumed_.push_back(id);
}

size_t ClientSession::heldBytes(int32_t id) const {
  const Stream* stream = streamFor(id);
  return stream != nullptr ? stream->held.size() : 0;
}

void ClientSession::ping() {
  if (!failed_) nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, nullptr);
}

void ClientSession::goAway() {
  if (failed_ || goingAway_) return;
  goingAway_ = true;
  // A client opens no stream for the server to answer: the last one is 0.
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, nullptr, 0);
}

void ClientSession::terminate(uint32_t errorCode, std::string_view why) {
  if (failed_) return;
  nghttp2_session_terminate_session(session_, errorCode);
  failCode_ = errorCode;
  fail(std::string(why));
  if (!busy_) closeAll();
}

void ClientSession::fail(std::string why) {
  if (failed_) return;
  LOG_DEBUG << name_ << ": HTTP/2 connection ends: " << why;
  failed_ = true;
  failure_ = std::move(why);
}

bool ClientSession::receive(std::string_view data) {
  if (failed_) return false;
  busy_ = true;
  const ssize_t rv = nghttp2_session_mem_recv(
      session_, reinterpret_cast<const uint8_t*>(data.data()), data.size());
  busy_ = false;
  if (rv < 0 && !failed_) {
    // nghttp2 has queued a GOAWAY for most errors; this covers the rest and
    // is a no-op after the first.
    const uint32_t code =
        rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR;
    nghttp2_session_terminate_session(session_, code);
    failCode_ = code;
    fail(std::string("HTTP/2 input refused: ") + nghttp2_strerror(static_cast<int>(rv)));
  }
  noticeTermination();
  if (unconsumed_ > 0 && !failed_) {
    nghttp2_session_consume_connection(session_, unconsumed_);
    unconsumed_ = 0;
  }
  if (failed_) {
    closeAll();
    return false;
  }
  if (goAwayReceived_) closeAboveGoAway();
  return true;
}

void ClientSession::produce(Buffer* out, size_t budget) {
  deliverResumed();
  out_ = out;
  budget_ = budget;
  busy_ = true;
  const int rv = nghttp2_session_send(session_);
  busy_ = false;
  out_ = nullptr;
  if (rv != 0 && !failed_) fail(std::string("HTTP/2 output failed: ") + nghttp2_strerror(rv));
  noticeTermination();
  if (failed_) {
    closeAll();
    return;
  }
  std::vector<int32_t> writable;
  writable.swap(writable_);
  for (const int32_t id : writable) {
    Stream* stream = streamFor(id);
    if (stream != nullptr && stream->callbacks.onWritable) stream->callbacks.onWritable();
  }
}

bool ClientSession::wantsWrite() const {
  return nghttp2_session_want_write(session_) != 0 || !resumed_.empty() || !writable_.empty();
}

bool ClientSession::finished() const {
  if (nghttp2_session_want_write(session_) != 0) return false;
  if (failed_ || nghttp2_session_want_read(session_) == 0) return true;
  return (goingAway_ || goAwayReceived_) && streams_.empty();
}

uint32_t ClientSession::serverMaxConcurrentStreams() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

void ClientSession::noticeTermination() {
  // Neither side said GOAWAY, and nghttp2 reads no more: it ended the
  // session itself over a connection error it found (a first frame that is
  // not SETTINGS, a frame on a closed stream), its GOAWAY queued or sent.
  if (!failed_ && !goingAway_ && !goAwayReceived_ && nghttp2_session_want_read(session_) == 0) {
    failCode_ = NGHTTP2_PROTOCOL_ERROR;
    fail("the server broke the HTTP/2 protocol");
  }
}

int ClientSession::stopIfFailed() const { return failed_ ? NGHTTP2_ERR_CALLBACK_FAILURE : 0; }

ClientSession::Stream* ClientSession::streamFor(int32_t id) const {
  const auto it = streams_.find(id);
  return it != streams_.end() ? it->second.get() : nullptr;
}

void ClientSession::closeStream(int32_t id, Close close) {
  const auto it = streams_.find(id);
  if (it == streams_.end()) return;
  // Out of the map first: onClose may submit the next request.
  const std::unique_ptr<Stream> stream = std::move(it->second);
  streams_.erase(it);
  if (stream->callbacks.onClose) stream->callbacks.onClose(close);
}

void ClientSession::deliver(int32_t id) {
  Stream* stream = streamFor(id);
  if (stream == nullptr || stream->paused) return;
  if (!stream->held.empty()) {
    const std::string data = std::move(stream->held);
    stream->held.clear();
    if (stream->callbacks.onData) stream->callbacks.onData(data);
    nghttp2_session_consume_stream(session_, id, data.size());
    stream = streamFor(id);  // the consumer may have reset it
    if (stream == nullptr || stream->paused) return;
  }
  if (stream->trailers) {
    const Fields trailers = std::move(*stream->trailers);
    stream->trailers.reset();
    if (stream->callbacks.onTrailers) stream->callbacks.onTrailers(trailers);
    stream = streamFor(id);
    if (stream == nullptr || stream->paused) return;
  }
  if (stream->closing) closeStream(id, *stream->closing);
}

void ClientSession::deliverResumed() {
  std::vector<int32_t> ids;
  ids.swap(resumed_);
  for (const int32_t id : ids) deliver(id);
}

void ClientSession::closeAboveGoAway() {
  // Above the GOAWAY's last stream id: never processed by the server, so
  // safe to retry elsewhere (RFC 9113 6.8).
  std::vector<int32_t> ids;
  for (auto it = streams_.upper_bound(goAwayLast_); it != streams_.end(); ++it) {
    ids.push_back(it->first);
  }
  for (const int32_t id : ids) {
    if (Stream* stream = streamFor(id); stream != nullptr && !stream->closing) {
      Close close;
      close.errorCode = NGHTTP2_REFUSED_STREAM;
      close.refused = true;
      closeStream(id, close);
    }
  }
}

void ClientSession::closeAll() {
  std::vector<int32_t> ids;
  ids.reserve(streams_.size());
  for (const auto& [id, stream] : streams_) ids.push_back(id);
  for (const int32_t id : ids) {
    Stream* stream = streamFor(id);
    if (stream == nullptr) continue;
    Close close;
    close.errorCode = failCode_;
    close.refused = !stream->sent;
    close.connectionLost = true;
    closeStream(id, close);
  }
}

}  // namespace libnet::http2
