#include "net/http2/Http2RequestBody.h"

#include <utility>

#include "base/Guarded.h"
#include "net/http2/ServerSession.h"

namespace libnet::http2 {

Http2RequestBody::Http2RequestBody(Anchor session, int32_t stream, int64_t contentLength)
    : session_(std::move(session)), stream_(stream), contentLength_(contentLength) {}

void Http2RequestBody::setDataCallback(DataCallback callback) {
  if (ended_) return;
  data_ = std::move(callback);
  notify();
}

void Http2RequestBody::setEndCallback(EndCallback callback) {
  if (!ended_) {
    end_ = std::move(callback);
    return;
  }
  if (callback) callGuarded("request body end callback", [&] { callback(how_); });
}

void Http2RequestBody::resume() {
  paused_ = false;
  notify();
}

void Http2RequestBody::notify() {
  if (ended_) return;
  // Delivered when the session next settles (it is woken for that): never
  // from inside the caller, which may be a data callback itself.
  const std::shared_ptr<ServerSession*> held = session_.lock();
  if (held && *held != nullptr) (*held)->bodyResumed(stream_);
}

void Http2RequestBody::append(std::string_view bytes) {
  if (!ended_) held_.append(bytes);
}

size_t Http2RequestBody::deliver() {
  size_t done = 0;
  while (flowing() && !held_.empty()) {
    std::string piece;
    piece.swap(held_);
    delivered_ += piece.size();
    done += piece.size();
    // The callback may replace itself, pause, or end the answer (and so
    // this body): it runs from a copy.
    const DataCallback callback = data_;
    if (!callGuarded("request body data callback", [&] { callback(piece); })) {
      end(End::kAborted);
    }
  }
  return done;
}

void Http2RequestBody::end(End end) {
  if (ended_) return;
  ended_ = true;
  how_ = end;
  std::string().swap(held_);
  data_ = nullptr;
  // The callbacks often hold the writer, which holds this body.
  const EndCallback callback = std::move(end_);
  end_ = nullptr;
  if (callback) callGuarded("request body end callback", [&] { callback(end); });
}

}  // namespace libnet::http2
