// What gRPC needs of an HTTP/2 answer and request (http::ResponseWriter
// over http2::serve()), checked frame by frame as read off a loopback
// socket, on every backend: trailers after the last DATA frame
// (finish(trailers)), the trailers-only answer in one HEADERS frame
// (respondTrailersOnly()), RST_STREAM with a chosen code before or after
// the answer (reset()), the request fields a gRPC client sends, a request
// ended by trailers, and RST_STREAM CANCEL from the client while the body
// streams in and the answer streams out. The writers are called from the
// test's thread, not the loop's.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <atomic>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "net/EventLoop.h"
#include "net/EventLoopThread.h"
#include "net/InetAddress.h"
#include "net/http/HttpServer.h"
#include "net/http2/Http2Server.h"
#include "tests/net/TestUtil.h"
#include "tests/net/http2/session/H2Peer.h"

namespace libnet::http2 {
namespace {

using libnet::test::BlockingClient;
using libnet::test::runSync;
using libnet::test::waitUntil;
using test::frame;
using test::Frame;
using test::FrameReader;
using Fields = std::vector<std::pair<std::string, std::string>>;

constexpr uint8_t kEndHeaders = NGHTTP2_FLAG_END_HEADERS;
constexpr uint8_t kEndStream = NGHTTP2_FLAG_END_STREAM;

std::string be32(uint32_t v) {
  std::string out;
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((v >> shift) & 0xff));
  return out;
}

uint32_t word(std::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[i]);
  return v;
}

bool endsStream(const Frame& f, int32_t stream) {
  return f.stream == stream && (f.flags & kEndStream) != 0 &&
         (f.type == NGHTTP2_DATA || f.type == NGHTTP2_HEADERS);
}

bool resets(const Frame& f, int32_t stream) {
  return f.stream == stream && f.type == NGHTTP2_RST_STREAM;
}

// The frames of one stream, HEADERS decoded (every HEADERS of the
// connection goes through the decoder, in order).
struct Seen {
  Frame frame;
  Fields fields;
};

std::vector<Seen> streamFrames(const std::vector<Frame>& frames, int32_t stream,
                               test::HeaderDecoder* decoder) {
  std::vector<Seen> out;
  for (const Frame& f : frames) {
    Fields fields;
    if (f.type == NGHTTP2_HEADERS) fields = decoder->decode(f);
    if (f.stream == stream) out.push_back({f, std::move(fields)});
  }
  return out;
}

std::string fieldIn(const Fields& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return v;
  }
  return "";
}

bool hasField(const Fields& fields, std::string_view name) {
  for (const auto& [n, v] : fields) {
    if (n == name) return true;
  }
  return false;
}

std::string requestBlock(std::string_view method, std::string_view path, Fields extra = {}) {
  Fields fields = {{":method", std::string(method)},
                   {":scheme", "http"},
                   {":authority", "localhost"},
                   {":path", std::string(path)}};
  for (auto& field : extra) fields.push_back(std::move(field));
  return test::headerBlock(fields);
}

std::string get(int32_t stream, std::string_view path) {
  return frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, stream, requestBlock("GET", path));
}

// A POST whose body follows (no END_STREAM on its HEADERS).
std::string post(int32_t stream, std::string_view path, Fields extra = {}) {
  return frame(NGHTTP2_HEADERS, kEndHeaders, stream, requestBlock("POST", path, std::move(extra)));
}

// One request as its handler saw it, and the writer answering it.
struct Call {
  http::ResponseWriterPtr writer;
  std::string path;
  std::map<std::string, std::string> fields;  // lower-cased names
  std::mutex mutex;
  std::string body;              // the request's body: whole, or as streamed so far
  std::atomic<int> bodyEnd{-1};  // RequestBody::End once it ended
  std::atomic<int> closed{0};    // closed callbacks run
};

class Http2TrailersTest : public ::testing::TestWithParam<PollerKind> {
 protected:
  void SetUp() override {
    LIBNET_SKIP_IF_BACKEND_UNAVAILABLE(GetParam());
    thread_ = std::make_unique<EventLoopThread>(nullptr, "h2", GetParam());
    loop_ = thread_->startLoop();
    runSync(loop_, [&] {
      server_ = std::make_unique<http::HttpServer>(loop_, InetAddress(0, true), "h2",
                                                   http::HttpServer::Options{});
      // /stream/...: the body in pieces (gRPC's way); the rest whole.
      server_->setRouter([](const http::HttpRequest& head) {
        return head.path().starts_with("/stream/") ? http::HttpServer::Route::kStreamedBody
                                                   : http::HttpServer::Route::kAsync;
      });
      server_->setAsyncHandler(
          [this](const http::HttpRequest& request, http::ResponseWriterPtr writer) {
            keep(request, std::move(writer));
          });
      service_ = serve(*server_, {});
      server_->start();
    });
    const SocketAddress address = runSync(loop_, [&] { return server_->listenAddress(); });
    client_ = std::make_unique<BlockingClient>(address);
    reader_ = std::make_unique<FrameReader>(client_->fd());
  }

  void TearDown() override {
    if (server_) runSync(loop_, [&] { server_.reset(); });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      calls_.clear();
    }
    thread_.reset();
  }

  // On the loop: the handler keeps the request's fields and body, and
  // follows a streamed body.
  void keep(const http::HttpRequest& request, http::ResponseWriterPtr writer) {
    auto call = std::make_shared<Call>();
    for (const http::HttpRequest::Header& field : request.headers()) {
      std::string name = field.first;
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      call->fields[name] = field.second;
    }
    call->body = request.body();
    call->path = request.path();
    std::weak_ptr<Call> weak = call;
    writer->setClosedCallback([weak] {
      if (auto c = weak.lock()) ++c->closed;
    });
    // /stream/held-by-body: only the body's callbacks hold the writer (and
    // the closed callback is still owed when the body ends first).
    const bool heldByBody = request.path() == "/stream/held-by-body";
    if (http::RequestBodyPtr body = writer->requestBody()) {
      body->setDataCallback([weak, held = heldByBody ? writer : nullptr](std::string_view piece) {
        if (auto c = weak.lock()) {
          std::lock_guard<std::mutex> lock(c->mutex);
          c->body.append(piece);
        }
      });
      body->setEndCallback([weak](http::RequestBody::End end) {
        if (auto c = weak.lock()) c->bodyEnd = static_cast<int>(end);
      });
    }
    if (!heldByBody) call->writer = std::move(writer);
    std::lock_guard<std::mutex> lock(mutex_);
    calls_.push_back(std::move(call));
  }

  std::shared_ptr<Call> call(size_t n = 0) {
    std::shared_ptr<Call> found;
    waitUntil([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      if (calls_.size() <= n) return false;
      found = calls_[n];
      return true;
    });
    return found;
  }

  // The call of the request for `path`.
  std::shared_ptr<Call> callFor(std::string_view path) {
    std::shared_ptr<Call> found;
    waitUntil([&] {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const std::shared_ptr<Call>& c : calls_) {
        if (c->path == path) found = c;
      }
      return found != nullptr;
    });
    return found;
  }

  bool send(std::string_view bytes) { return client_->sendAll(bytes); }

  // Frames until the stream ends (END_STREAM or RST_STREAM); the stream's
  // frames, decoded. `alsoReset`: after END_STREAM, read on to a RST_STREAM.
  std::vector<Seen> untilEnd(int32_t stream, bool alsoReset = false) {
    bool ended = false;
    const auto frames = reader_->until([&](const Frame& f) {
      if (resets(f, stream)) return true;
      ended = ended || endsStream(f, stream);
      return ended && !alsoReset;
    });
    return streamFrames(frames, stream, &decoder_);
  }

  std::unique_ptr<EventLoopThread> thread_;
  EventLoop* loop_ = nullptr;
  std::unique_ptr<http::HttpServer> server_;
  std::shared_ptr<Service> service_;
  std::unique_ptr<BlockingClient> client_;
  std::unique_ptr<FrameReader> reader_;
  test::HeaderDecoder decoder_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Call>> calls_;
};

http::HttpResponse grpcHead() {
  http::HttpResponse head(false);
  head.setContentType("application/grpc");
  return head;
}

TEST_P(Http2TrailersTest, TrailersFollowTheLastDataFrameInAHeadersFrameThatEndsTheStream) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + get(1, "/call")));
  const std::shared_ptr<Call> c = call();
  ASSERT_TRUE(c);
  c->writer->start(grpcHead());
  EXPECT_TRUE(c->writer->write("message"));
  c->writer->finish({{"Grpc-Status", "0"},
                     {"grpc-message", "all\r\nfine"},
                     {"connection", "close"},
                     {":status", "500"},
                     {"x-custom-bin", "AAEC"}});
  const std::vector<Seen> frames = untilEnd(1);
  ASSERT_GE(frames.size(), 3U);
  EXPECT_EQ(frames[0].frame.type, NGHTTP2_HEADERS);
  EXPECT_EQ(frames[0].frame.flags & kEndStream, 0);
  EXPECT_EQ(fieldIn(frames[0].fields, ":status"), "200");
  EXPECT_EQ(fieldIn(frames[0].fields, "content-type"), "application/grpc");
  // DATA frames between (an empty last one when the write was framed
  // before finish() reached the loop), none with END_STREAM.
  std::string body;
  for (size_t i = 1; i + 1 < frames.size(); ++i) {
    EXPECT_EQ(frames[i].frame.type, NGHTTP2_DATA);
    EXPECT_EQ(frames[i].frame.flags & kEndStream, 0) << "END_STREAM before the trailers";
    body += frames[i].frame.payload;
  }
  EXPECT_EQ(body, "message");
  const Seen& last = frames.back();
  EXPECT_EQ(last.frame.type, NGHTTP2_HEADERS);
  EXPECT_EQ(last.frame.flags, kEndHeaders | kEndStream);
  // Lower-cased, in order; the connection field and the pseudo-field go.
  const Fields expected = {
      {"grpc-status", "0"}, {"grpc-message", "all  fine"}, {"x-custom-bin", "AAEC"}};
  EXPECT_EQ(last.fields, expected);
  EXPECT_EQ(c->closed.load(), 0);
}

TEST_P(Http2TrailersTest, TrailersOfAnEmptyBodyAndAFinishWithoutTrailers) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + get(1, "/empty") + get(3, "/plain")));
  const std::shared_ptr<Call> empty = call(0);
  const std::shared_ptr<Call> plain = call(1);
  ASSERT_TRUE(empty && plain);
  empty->writer->start(grpcHead());
  empty->writer->finish({{"grpc-status", "5"}});
  std::vector<Seen> frames = untilEnd(1);
  ASSERT_GE(frames.size(), 2U);
  EXPECT_EQ(frames.front().frame.type, NGHTTP2_HEADERS);
  EXPECT_EQ(frames.back().frame.type, NGHTTP2_HEADERS);
  EXPECT_EQ(frames.back().frame.flags, kEndHeaders | kEndStream);
  EXPECT_EQ(frames.back().fields, (Fields{{"grpc-status", "5"}}));
  for (const Seen& s : frames) {
    if (s.frame.type == NGHTTP2_DATA) {
      EXPECT_EQ(s.frame.payload, "");
    }
  }
  // finish() and finish({}) are the plain end: END_STREAM on the last DATA.
  plain->writer->start(grpcHead());
  plain->writer->write("x");
  plain->writer->finish({});
  frames = untilEnd(3);
  ASSERT_GE(frames.size(), 2U);
  EXPECT_EQ(frames[1].frame.payload, "x");
  EXPECT_EQ(frames.back().frame.type, NGHTTP2_DATA);
  EXPECT_EQ(frames.back().frame.flags, kEndStream);
}

TEST_P(Http2TrailersTest, TrailersOnlyIsOneHeadersFrameWithoutContentLength) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + get(1, "/unknown") + get(3, "/whole")));
  const std::shared_ptr<Call> only = call(0);
  const std::shared_ptr<Call> whole = call(1);
  ASSERT_TRUE(only && whole);
  http::HttpResponse head = grpcHead();
  head.addHeader("grpc-status", "12");
  head.addHeader("Grpc-Message", "unknown%20method");
  head.setBody("dropped");
  only->writer->respondTrailersOnly(std::move(head));
  // Nothing follows a trailers-only answer.
  only->writer->write("late");
  only->writer->finish({{"grpc-status", "0"}});
  std::vector<Seen> frames = untilEnd(1);
  ASSERT_EQ(frames.size(), 1U);
  EXPECT_EQ(frames[0].frame.type, NGHTTP2_HEADERS);
  EXPECT_EQ(frames[0].frame.flags, kEndHeaders | kEndStream);
  EXPECT_EQ(fieldIn(frames[0].fields, ":status"), "200");
  EXPECT_EQ(fieldIn(frames[0].fields, "content-type"), "application/grpc");
  EXPECT_EQ(fieldIn(frames[0].fields, "grpc-status"), "12");
  EXPECT_EQ(fieldIn(frames[0].fields, "grpc-message"), "unknown%20method");
  EXPECT_FALSE(hasField(frames[0].fields, "content-length"));
  // respond() with no body is whole too, but says its length.
  whole->writer->respond(grpcHead());
  frames = untilEnd(3);
  ASSERT_EQ(frames.size(), 1U);
  EXPECT_EQ(fieldIn(frames[0].fields, "content-length"), "0");
}

TEST_P(Http2TrailersTest, ResetWithACodeCutsAnAnswerUnderWayOrBeforeItsHead) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + get(1, "/a") + get(3, "/b")));
  const std::shared_ptr<Call> midway = call(0);
  const std::shared_ptr<Call> unstarted = call(1);
  ASSERT_TRUE(midway && unstarted);
  midway->writer->start(grpcHead());
  midway->writer->write("half");
  midway->writer->reset(NGHTTP2_CANCEL);
  midway->writer->finish({{"grpc-status", "0"}});  // too late: nothing
  std::vector<Seen> frames = untilEnd(1);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().frame.type, NGHTTP2_RST_STREAM);
  EXPECT_EQ(word(frames.back().frame.payload), static_cast<uint32_t>(NGHTTP2_CANCEL));
  for (const Seen& s : frames) EXPECT_EQ(s.frame.flags & kEndStream, 0);
  // Before the head: a reset, not a made-up 500.
  unstarted->writer->reset(NGHTTP2_REFUSED_STREAM);
  frames = untilEnd(3);
  ASSERT_EQ(frames.size(), 1U);
  EXPECT_EQ(frames[0].frame.type, NGHTTP2_RST_STREAM);
  EXPECT_EQ(word(frames[0].frame.payload), static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_TRUE(midway->writer->closed());
  EXPECT_EQ(midway->closed.load(), 0);  // the writer's own reset
  EXPECT_EQ(unstarted->closed.load(), 0);
  // The connection serves on.
  ASSERT_TRUE(send(get(5, "/c")));
  const std::shared_ptr<Call> next = call(2);
  ASSERT_TRUE(next);
  next->writer->respondTrailersOnly(grpcHead());
  frames = untilEnd(5);
  ASSERT_EQ(frames.size(), 1U);
  EXPECT_EQ(frames[0].frame.type, NGHTTP2_HEADERS);
}

// gRPC's deadline: the status in trailers, then RST_STREAM CANCEL so that a
// client still sending stops; never the reset before the trailers.
TEST_P(Http2TrailersTest, ResetAfterTrailersFollowsThemWhileTheClientStillSends) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + post(1, "/stream/sending") +
                   frame(NGHTTP2_DATA, 0, 1, "first") + get(3, "/done")));
  const std::shared_ptr<Call> sending = callFor("/stream/sending");
  const std::shared_ptr<Call> done = callFor("/done");
  ASSERT_TRUE(sending && done);
  sending->writer->start(grpcHead());
  sending->writer->write(std::string(100000, 'm'));  // past one window: not all framed at once
  sending->writer->finish({{"grpc-status", "4"}});
  sending->writer->reset(NGHTTP2_CANCEL);
  // Open the windows for the rest.
  ASSERT_TRUE(send(frame(NGHTTP2_WINDOW_UPDATE, 0, 0, be32(1 << 20)) +
                   frame(NGHTTP2_WINDOW_UPDATE, 0, 1, be32(1 << 20))));
  std::vector<Seen> frames = untilEnd(1, /*alsoReset=*/true);
  ASSERT_GE(frames.size(), 3U);
  const Seen& trailers = frames[frames.size() - 2];
  EXPECT_EQ(trailers.frame.type, NGHTTP2_HEADERS);
  EXPECT_EQ(trailers.frame.flags, kEndHeaders | kEndStream);
  EXPECT_EQ(trailers.fields, (Fields{{"grpc-status", "4"}}));
  EXPECT_EQ(frames.back().frame.type, NGHTTP2_RST_STREAM);
  EXPECT_EQ(word(frames.back().frame.payload), static_cast<uint32_t>(NGHTTP2_CANCEL));
  size_t data = 0;
  for (const Seen& s : frames) {
    if (s.frame.type == NGHTTP2_DATA) data += s.frame.payload.size();
  }
  EXPECT_EQ(data, 100000U);
  EXPECT_EQ(sending->closed.load(), 0);
  EXPECT_EQ(sending->bodyEnd.load(), static_cast<int>(http::RequestBody::End::kAborted));
  // The client had ended its request: the answer closes the stream, and no
  // reset follows (the next frame of the connection is stream 5's).
  done->writer->respondTrailersOnly(grpcHead());
  done->writer->reset(NGHTTP2_CANCEL);
  frames = untilEnd(3);
  ASSERT_EQ(frames.size(), 1U);
  ASSERT_TRUE(send(get(5, "/next")));
  const std::shared_ptr<Call> next = call(2);
  ASSERT_TRUE(next);
  next->writer->respondTrailersOnly(grpcHead());
  bool reset3 = false;
  reader_->until([&](const Frame& f) {
    reset3 = reset3 || resets(f, 3);
    return endsStream(f, 5);
  });
  EXPECT_FALSE(reset3);
}

TEST_P(Http2TrailersTest, TheFieldsAGrpcClientSendsPass) {
  const Fields grpc = {{"content-type", "application/grpc+proto"},
                       {"te", "trailers"},
                       {"grpc-timeout", "1S"},
                       {"grpc-encoding", "gzip"},
                       {"grpc-accept-encoding", "identity,deflate,gzip"},
                       {"user-agent", "grpc-c++/1.51.1 grpc-c/29.0.0 (linux; chttp2)"},
                       {"x-user-key", "value"},
                       {"x-trace-bin", "AAECAwQ="}};
  ASSERT_TRUE(send(test::prefaceAndSettings() + post(1, "/pkg.Service/Method", grpc) +
                   frame(NGHTTP2_DATA, kEndStream, 1, std::string("\0\0\0\0\0", 5))));
  const std::shared_ptr<Call> c = call();
  ASSERT_TRUE(c);
  for (const auto& [name, value] : grpc) EXPECT_EQ(c->fields[name], value) << name;
  EXPECT_EQ(c->body, std::string("\0\0\0\0\0", 5));
  c->writer->start(grpcHead());
  c->writer->finish({{"grpc-status", "0"}});
  const std::vector<Seen> frames = untilEnd(1);
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().frame.type, NGHTTP2_HEADERS);
  // te with any other value is still malformed (RFC 9113 8.2.2).
  ASSERT_TRUE(send(post(3, "/pkg.Service/Method", {{"te", "gzip"}})));
  const auto refused = reader_->until([](const Frame& f) { return resets(f, 3); });
  ASSERT_FALSE(refused.empty());
  EXPECT_TRUE(resets(refused.back(), 3));
  EXPECT_EQ(word(refused.back().payload), static_cast<uint32_t>(NGHTTP2_PROTOCOL_ERROR));
}

TEST_P(Http2TrailersTest, RequestTrailersEndTheBodyWholeOrStreamed) {
  const std::string trailers = test::headerBlock({{"x-checksum", "abc"}});
  ASSERT_TRUE(send(test::prefaceAndSettings() + post(1, "/whole") +
                   frame(NGHTTP2_DATA, 0, 1, "hello") +
                   frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 1, trailers) +
                   post(3, "/stream/up") + frame(NGHTTP2_DATA, 0, 3, "stream") +
                   frame(NGHTTP2_HEADERS, kEndHeaders | kEndStream, 3, trailers)));
  // The streamed body's handler runs at its head, the other at its end.
  const std::shared_ptr<Call> whole = callFor("/whole");
  const std::shared_ptr<Call> streamed = callFor("/stream/up");
  ASSERT_TRUE(whole && streamed);
  EXPECT_EQ(whole->body, "hello");  // the handler ran once the trailers ended it
  ASSERT_TRUE(waitUntil([&] { return streamed->bodyEnd.load() >= 0; }));
  EXPECT_EQ(streamed->bodyEnd.load(), static_cast<int>(http::RequestBody::End::kComplete));
  {
    std::lock_guard<std::mutex> lock(streamed->mutex);
    EXPECT_EQ(streamed->body, "stream");
  }
  whole->writer->respondTrailersOnly(grpcHead());
  streamed->writer->respondTrailersOnly(grpcHead());
  std::vector<Seen> frames = untilEnd(1);
  ASSERT_FALSE(frames.empty());
  EXPECT_TRUE(endsStream(frames.back().frame, 1));
  frames = untilEnd(3);
  ASSERT_FALSE(frames.empty());
  EXPECT_TRUE(endsStream(frames.back().frame, 3));
}

// gRPC's bidirectional stream cancelled by the client: the body streaming in
// ends kAborted and the answer streaming out runs its closed callback.
TEST_P(Http2TrailersTest, CancelMidBodyAndMidAnswerReachesBothSides) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + post(1, "/stream/bidi") +
                   frame(NGHTTP2_DATA, 0, 1, "ping")));
  const std::shared_ptr<Call> c = call();
  ASSERT_TRUE(c);
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard<std::mutex> lock(c->mutex);
    return c->body == "ping";
  }));
  c->writer->start(grpcHead());
  EXPECT_TRUE(c->writer->write("pong"));
  const auto first =
      reader_->until([](const Frame& f) { return f.type == NGHTTP2_DATA && f.stream == 1; });
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first.back().payload, "pong");
  ASSERT_TRUE(send(frame(NGHTTP2_RST_STREAM, 0, 1, be32(NGHTTP2_CANCEL))));
  ASSERT_TRUE(waitUntil([&] { return c->closed.load() == 1 && c->bodyEnd.load() >= 0; }));
  EXPECT_EQ(c->bodyEnd.load(), static_cast<int>(http::RequestBody::End::kAborted));
  EXPECT_TRUE(c->writer->closed());
  EXPECT_FALSE(c->writer->write("late"));
  c->writer->finish({{"grpc-status", "1"}});
  c->writer->reset(NGHTTP2_CANCEL);
  // Nothing more for stream 1; the connection serves on.
  ASSERT_TRUE(send(get(3, "/after")));
  const std::shared_ptr<Call> after = call(1);
  ASSERT_TRUE(after);
  after->writer->respondTrailersOnly(grpcHead());
  const auto rest = reader_->until([](const Frame& f) { return endsStream(f, 3); });
  for (const Frame& f : rest) EXPECT_NE(f.stream, 1) << "frame type " << int{f.type};
  EXPECT_EQ(c->closed.load(), 1);
}

// The same when nothing but the body's callbacks holds the writer, as a
// call object held by its own callbacks does: the body ends first and lets
// go of them, and the closed callback still runs.
TEST_P(Http2TrailersTest, CancelReachesAWriterHeldOnlyByTheBodysCallbacks) {
  ASSERT_TRUE(send(test::prefaceAndSettings() + post(1, "/stream/held-by-body") +
                   frame(NGHTTP2_DATA, 0, 1, "ping")));
  const std::shared_ptr<Call> c = call();
  ASSERT_TRUE(c);
  ASSERT_TRUE(waitUntil([&] {
    std::lock_guard<std::mutex> lock(c->mutex);
    return c->body == "ping";
  }));
  ASSERT_TRUE(send(frame(NGHTTP2_RST_STREAM, 0, 1, be32(NGHTTP2_CANCEL))));
  ASSERT_TRUE(waitUntil([&] { return c->closed.load() == 1 && c->bodyEnd.load() >= 0; }));
  EXPECT_EQ(c->bodyEnd.load(), static_cast<int>(http::RequestBody::End::kAborted));
}

INSTANTIATE_TEST_SUITE_P(Backends, Http2TrailersTest,
                         ::testing::Values(PollerKind::kEpoll, PollerKind::kIoUring),
                         libnet::test::pollerName);

}  // namespace
}  // namespace libnet::http2
