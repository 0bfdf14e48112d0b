#include "net/websocket/CoroWebSocket.h"

#include <utility>

#include "net/BufferPool.h"
#include "net/EventLoop.h"
#include "net/LoopInternals.h"
#include "net/TcpClient.h"
#include "net/TcpConnection.h"
#include "net/coro/Cancel.h"
#include "net/coro/Connect.h"
#include "net/dns/Resolver.h"
#include "net/http/HttpResponse.h"
#include "net/http/HttpResponseParser.h"
#include "net/websocket/ClientHandshake.h"
#include "net/websocket/Handshake.h"
#include "net/websocket/Receiver.h"
#include "net/websocket/Sender.h"
#include "net/websocket/WebSocketServer.h"

namespace libnet::ws {

using coro::Errc;
using coro::Task;

namespace {

// A control frame, whole.
constexpr size_t kControlFrameBytes = kMaxFrameHeader + kMaxControlPayload;

}  // namespace

CoroWebSocket::CoroWebSocket(coro::Stream stream, Role role, const Options& options,
                             std::optional<DeflateParams> params)
    : stream_(std::move(stream)),
      role_(role),
      options_(options),
      deflate_(params.has_value()),
      receiver_(std::make_unique<Receiver>(
          role, ReceiverLimits{options.maxFrameBytes, options.maxMessageBytes}, params,
          &LoopInternals::bufferPool(*stream_.connection()->loop()))),
      sender_(std::make_unique<Sender>(role, params, options.deflate)) {}

CoroWebSocket::CoroWebSocket() = default;
CoroWebSocket::CoroWebSocket(CoroWebSocket&&) noexcept = default;
CoroWebSocket& CoroWebSocket::operator=(CoroWebSocket&&) noexcept = default;
CoroWebSocket::~CoroWebSocket() = default;

void CoroWebSocket::holdClient(std::unique_ptr<TcpClient> client) { client_ = std::move(client); }

size_t CoroWebSocket::heldMemory() const {
  if (!stream_) return 0;
  return stream_.connection()->bufferCapacity() + out_.capacity() + receiver_->heldMemory() +
         sender_->heldMemory();
}

BufferPool& CoroWebSocket::pool() const {
  return LoopInternals::bufferPool(*stream_.connection()->loop());
}

Buffer* CoroWebSocket::output(size_t bytes) {
  // As WebSocket's: large frames in storage borrowed from the pool, small
  // ones in out_'s own small storage.
  if (bytes > out_.writableBytes() && bytes > BufferPool::kSmallCapacity) pool().lend(&out_);
  return &out_;
}

Task<Errc> CoroWebSocket::flush() {
  if (out_.readableBytes() == 0) co_return Errc::kOk;
  const Errc result = co_await stream_.write(&out_);
  // Handed over (or dropped): large frame storage goes back to the loop's
  // pool, so an idle socket keeps only small storage.
  out_.retrieveAll();
  if (out_.capacity() > BufferPool::kSmallCapacity) pool().reclaim(&out_);
  co_return result;
}

Task<Message> CoroWebSocket::read() {
  for (;;) {
    if (closeReceived_ || receiver_->done()) {
      co_return Message{.closeCode = close_code::kAbnormal};
    }
    switch (receiver_->next(&stream_.input())) {
      case Receiver::Event::kNeedMore: {
        // readMore(): the receiver may leave an incomplete frame header
        // unread, and read() would return it again at once.
        const coro::Input more = co_await stream_.readMore();
        if (more.error() == Errc::kTimedOut || more.error() == Errc::kCancelled) {
          co_return Message{.error = more.error()};
        }
        if (!more) co_return Message{.closeCode = close_code::kAbnormal};
        break;
      }
      case Receiver::Event::kMessage:
        if (!closeSent_) {
          Message message{.type = receiver_->messageType(),
                          .payload = std::string(receiver_->payload())};
          // The caller has its copy, and may not read again for long.
          receiver_->releaseMessage();
          co_return message;
        }
        break;  // after our close, messages are dropped
      case Receiver::Event::kPing:
        if (!closeSent_) {
          sender_->appendPong(output(kControlFrameBytes), receiver_->payload());
          co_await flush();
        }
        break;
      case Receiver::Event::kPong:
        break;
      case Receiver::Event::kClose:
        co_return co_await closing(receiver_->closeCode(), receiver_->closeReason(), true);
      case Receiver::Event::kError:
        co_return co_await closing(receiver_->closeCode(), receiver_->error(), false);
    }
  }
}

Task<Message> CoroWebSocket::closing(uint16_t code, std::string reason, bool peerClosed) {
  closeReceived_ = peerClosed;
  if (!closeSent_) {
    closeSent_ = true;
    // A peer's close is echoed with its code (RFC 6455 5.5.1); an error is
    // answered with the code it calls for and why.
    // An empty reason as a view of "" rather than a null view: the sender
    // copies it with memcpy, which must not be handed a null pointer.
    sender_->appendClose(output(kControlFrameBytes), code,
                         peerClosed ? std::string_view() : std::string_view(reason));
    co_await flush();
  }
  // Half-close once the close frame is out: the connection ends when the
  // peer closes too (or when this object goes).
  stream_.shutdown();
  co_return Message{.closeCode = code, .closeReason = std::move(reason)};
}

Task<Errc> CoroWebSocket::send(MessageType type, std::string_view payload) {
  if (closeSent_) co_return Errc::kClosed;
  sender_->appendMessage(output(framedSize(payload.size(), options_.fragmentSize)), type, payload,
                         options_.fragmentSize);
  co_return co_await flush();
}

Task<Errc> CoroWebSocket::ping(std::string_view payload) {
  if (closeSent_) co_return Errc::kClosed;
  sender_->appendPing(output(kControlFrameBytes), payload);
  co_return co_await flush();
}

Task<uint16_t> CoroWebSocket::close(uint16_t code, std::string_view reason) {
  if (!closeSent_) {
    closeSent_ = true;
    sender_->appendClose(output(kControlFrameBytes), code, reason);
    co_await flush();
  }
  for (;;) {
    Message m = co_await coro::withTimeout(options_.closeTimeout, read());
    if (m.error != Errc::kOk) break;  // the peer did not answer in time
    if (m.isClose()) {
      co_await coro::withTimeout(options_.closeTimeout, stream_.closed());
      co_return *m.closeCode;
    }
  }
  stream_.close();
  co_return close_code::kAbnormal;
}

namespace {

Task<AcceptResult> refuse(coro::Stream stream, const UpgradeCheck& check) {
  http::HttpResponse response(/*close=*/true);
  response.setStatusPage(check.status);
  for (const auto& [name, value] : check.headers) response.addHeader(name, value);
  Buffer out;
  response.appendToBuffer(&out, {});
  // A write that fails means the client is gone: the refusal ends either way.
  (void)co_await stream.write(&out);
  stream.shutdown();
  co_return AcceptResult{.status = check.status};
}

}  // namespace

Task<AcceptResult> accept(coro::Stream stream, const http::HttpRequest& request, Options options) {
  check(options);
  UpgradeCheck upgrade = checkUpgradeRequest(request);
  if (upgrade.status != 0) co_return co_await refuse(std::move(stream), upgrade);
  std::optional<DeflateParams> params;
  std::string extensions;
  if (options.deflate.enabled) {
    params = negotiateOffer(extensionsOf(request), options.deflate, &extensions);
  }
  // The request may not outlive the first suspension: the answer is made first.
  const std::string answer = makeUpgradeResponse(*request.header("Sec-WebSocket-Key"), extensions);
  if (co_await stream.write(answer) != Errc::kOk) co_return AcceptResult{.status = 499};
  co_return AcceptResult{
      .socket = CoroWebSocket(std::move(stream), Role::kServer, options, std::move(params))};
}

Task<AcceptResult> accept(coro::Stream stream, const http::HttpRequest& request) {
  return accept(std::move(stream), request, Options{});
}

namespace {

// Reads the answer to the upgrade request into `parser`; "" or why not.
Task<std::string> readUpgradeResponse(coro::Stream& stream, http::HttpResponseParser* parser,
                                      Duration timeout) {
  const MonoTime deadline = MonoClock::now() + timeout;
  parser->start(/*headRequest=*/false);
  for (;;) {
    const coro::Input in =
        co_await coro::withTimeout(deadline - MonoClock::now(), stream.readMore());
    if (in.error() == Errc::kTimedOut) co_return "the WebSocket handshake timed out";
    if (!in) co_return "the connection closed during the WebSocket handshake";
    const auto result = parser->parse(&*in);
    if (result == http::HttpResponseParser::Result::kComplete) co_return std::string();
    if (result == http::HttpResponseParser::Result::kError) {
      co_return "bad answer to the upgrade request: " + std::string(parser->errorMessage());
    }
  }
}

}  // namespace

Task<CoroConnectResult> connect(EventLoop* loop, std::string url, ClientOptions options) {
  check(options.ws);
  const http::Url target = detail::parseWebSocketUrl(url);
  std::shared_ptr<NameResolver> resolver = options.resolver;
  if (!resolver && !InetAddress::parse(target.host(), target.port())) {
    resolver = std::make_shared<dns::Resolver>(loop);
  }
  auto client = std::make_unique<TcpClient>(
      loop, target.hostPort(), "ws-client",
      TcpClient::Options{.tcpNoDelay = true,
                         .layer = detail::clientLayer(target, options.caFile, options.verifyPeer),
                         .resolver = std::move(resolver)});
  coro::ConnectResult connected = co_await coro::connect(*client, options.connectTimeout);
  if (!connected) {
    if (connected.error == Errc::kConnectFailed) {
      co_return CoroConnectResult{.error = connected.detail.empty()
                                               ? detail::connectError(target, connected.sysError)
                                               : "connect to " + connected.detail};
    }
    co_return CoroConnectResult{.error = "connect to " + target.toString() + ": " +
                                         coro::errcName(connected.error)};
  }
  coro::Stream stream = std::move(connected.stream);
  stream.connection()->setMaxQueuedOutput(options.maxQueuedOutput);
  const std::string key = newClientKey();
  const Errc sent = co_await stream.write(detail::upgradeRequest(target, key, options.ws.deflate));
  if (sent != Errc::kOk) {
    co_return CoroConnectResult{.error = target.toString() +
                                         ": sending the upgrade request: " + coro::errcName(sent)};
  }
  http::HttpResponseParser response;
  std::string problem = co_await readUpgradeResponse(stream, &response, options.handshakeTimeout);
  std::optional<DeflateParams> params;
  if (problem.empty()) {
    problem = detail::checkUpgradeResponse(response, key, options.ws.deflate, &params);
  }
  if (!problem.empty()) co_return CoroConnectResult{.error = target.toString() + ": " + problem};
  CoroConnectResult result{
      .socket = CoroWebSocket(std::move(stream), Role::kClient, options.ws, std::move(params))};
  result.socket.holdClient(std::move(client));
  co_return result;
}

Task<CoroConnectResult> connect(EventLoop* loop, std::string url) {
  return connect(loop, std::move(url), ClientOptions{});
}

}  // namespace libnet::ws
