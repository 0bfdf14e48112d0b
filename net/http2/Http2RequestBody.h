// http2::Http2RequestBody: the RequestBody of one HTTP/2 stream whose route
// is HttpServer::Route::kStreamedBody (net/http/RequestBody.h has the
// contract). The session makes it when the stream's request head is
// complete and keeps it with the stream; the stream's writer hands it to the
// handler (ResponseWriter::requestBody()).
//
// DATA payload is held here as it arrives and handed to the data callback
// when the session settles after a read (never from inside nghttp2's
// parsing). The session grants the stream more window only once what is
// held has been delivered to a consumer that is not paused, so what waits
// here is at most one stream window. The body reaches the session through a
// token that dies with it (as Http2Writer does): pause(), resume() and the
// setters of a body kept past its connection touch nothing there.
//
// Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "net/http/RequestBody.h"

namespace libnet::http2 {

class ServerSession;

class Http2RequestBody final : public http::RequestBody {
 public:
  using Anchor = std::weak_ptr<ServerSession*>;

  Http2RequestBody(Anchor session, int32_t stream, int64_t contentLength);
  Http2RequestBody(const Http2RequestBody&) = delete;
  Http2RequestBody& operator=(const Http2RequestBody&) = delete;

  void setDataCallback(DataCallback callback) override;
  // Set after the body has ended, it runs at once with how it ended.
  void setEndCallback(EndCallback callback) override;
  void pause() override { paused_ = true; }
  void resume() override;
  [[nodiscard]] int64_t contentLength() const override { return contentLength_; }
  [[nodiscard]] uint64_t received() const override { return delivered_; }
  [[nodiscard]] bool ended() const override { return ended_; }

  // The session's side.
  // Payload that arrived; held until delivered.
  void append(std::string_view bytes);
  // Bytes that arrived so far, delivered or not.
  [[nodiscard]] uint64_t arrived() const { return delivered_ + held_.size(); }
  [[nodiscard]] size_t held() const { return held_.size(); }
  // A consumer is there and not paused: what arrives is taken at once.
  [[nodiscard]] bool flowing() const { return !ended_ && !paused_ && data_ != nullptr; }
  // Hands what is held to the data callback while the consumer takes it
  // (the callback may pause it); the bytes delivered.
  size_t deliver();
  // The end, once: the callbacks go.
  void end(End end);

 private:
  // Tells the session that the consumer may take what waits.
  void notify();

  const Anchor session_;
  const int32_t stream_;
  const int64_t contentLength_;
  std::string held_;
  uint64_t delivered_ = 0;
  bool paused_ = false;
  bool ended_ = false;
  End how_ = End::kAborted;
  DataCallback data_;
  EndCallback end_;
};

}  // namespace libnet::http2
