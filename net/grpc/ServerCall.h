// grpc::ServerCall: one gRPC call as the server sees it, untyped: messages
// are serialized protobuf bytes. The typed handlers of generated services
// (Service.h: ServerStream<Req, Resp>, CoroStream<Req, Resp>) wrap it; a
// program rarely needs it directly.
//
// A call is one HTTP/2 stream (docs/grpc.md). Its request side runs on the
// connection's loop: messages from the client are delivered in order to the
// message callback, de-framed and decompressed, each at most the server's
// maxReceiveMessageBytes; the half-close callback runs when the client has
// sent its last one (END_STREAM). Delivery starts when the message callback
// is set and stops while paused: the stream's flow-control window is granted
// only as messages are taken, so a call whose handler does not read holds
// at most one window of the client's bytes.
//
// The answer side may be used from any thread, in call order (as
// http::ResponseWriter, which carries it): initial metadata goes out with
// the first message (or with the trailers of a call that sends none),
// write() frames one message, finish() sends the status and trailing
// metadata and ends the call. A call dropped unfinished is finished with
// INTERNAL ("handler dropped the call").
//
// Cancellation: the client resetting the stream, the connection closing, or
// the deadline (grpc-timeout) passing ends the call once: the cancel
// callback runs on the loop (also when set afterwards), cancelled() turns
// true, writes are dropped and finish() does nothing. A passed deadline
// answers DEADLINE_EXCEEDED to the client itself.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/Duration.h"
#include "net/InetAddress.h"
#include "net/grpc/Metadata.h"
#include "net/grpc/Status.h"

namespace libnet {
class EventLoop;
}

namespace libnet::grpc {

class ServerCall {
 public:
  virtual ~ServerCall() = default;

  // ---- the request: fixed when the handler runs; any thread.
  // "/package.Service/Method".
  [[nodiscard]] virtual const std::string& method() const = 0;
  // The client's custom metadata ("-bin" values decoded).
  [[nodiscard]] virtual const Metadata& clientMetadata() const = 0;
  // When the client's grpc-timeout runs out (the server's maxDeadline caps
  // it), or nullopt: none.
  [[nodiscard]] virtual std::optional<MonoTime> deadline() const = 0;
  [[nodiscard]] virtual const InetAddress& peer() const = 0;
  // The connection's loop: every callback runs there.
  [[nodiscard]] virtual EventLoop* loop() const = 0;

  // ---- messages from the client; loop thread.
  virtual void setMessageCallback(std::function<void(std::string message)> callback) = 0;
  virtual void setHalfCloseCallback(std::function<void()> callback) = 0;
  virtual void pauseReading() = 0;
  virtual void resumeReading() = 0;
  // Whether the message being delivered to the message callback (the last
  // one delivered) came compressed on the wire: its flag byte was 1. gRPC's
  // interop tests check a client's per-message compression with it.
  [[nodiscard]] virtual bool lastMessageCompressed() const { return false; }

  // ---- the answer; any thread.
  // Before the first write (later ones are dropped).
  virtual void addInitialMetadata(std::string key, std::string value) = 0;
  // Before finish().
  virtual void addTrailingMetadata(std::string key, std::string value) = 0;
  // Compress the messages written from now on with gzip, when the client
  // accepts it (grpc-accept-encoding); messages under 128 bytes stay plain.
  virtual void setCompression(bool gzip) = 0;
  // One message. False: more than the writer's highWater waits for this
  // client (wait for the writable callback), or the call is over.
  virtual bool write(std::string message) = 0;
  virtual void setWritableCallback(std::function<void()> callback) = 0;
  // The status (and trailing metadata); once.
  virtual void finish(Status status) = 0;

  // ---- cancellation.
  [[nodiscard]] virtual bool cancelled() const = 0;                    // any thread
  virtual void setCancelCallback(std::function<void()> callback) = 0;  // loop thread
};

using ServerCallPtr = std::shared_ptr<ServerCall>;

}  // namespace libnet::grpc
