// Test peers for http2::ServerSession, without sockets.
//
// Frames: raw HTTP/2 frames built by hand (for the hostile cases) and a
// reader that splits the server's output into frames, so a test can see the
// GOAWAY or RST_STREAM code the server chose. Client: a well-behaved client
// on nghttp2's client session that sends requests and collects each
// stream's status, fields and body.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/Buffer.h"
#include "net/http2/ServerSession.h"

namespace libnet::http2::test {

inline constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct Frame {
  uint8_t type = 0;
  uint8_t flags = 0;
  int32_t stream = 0;
  std::string payload;
};

// One frame's bytes.
std::string frame(uint8_t type, uint8_t flags, int32_t stream, std::string_view payload);
// An empty SETTINGS frame (the client's first) after the preface.
std::string prefaceAndSettings();
// An HPACK block for `fields` made with a fresh nghttp2 deflater (a shared
// one when `deflater` is given, so later blocks may refer to its table).
std::string headerBlock(const std::vector<std::pair<std::string, std::string>>& fields,
                        nghttp2_hd_deflater* deflater = nullptr);
// A GET request's header block for `path`.
std::string getBlock(std::string_view path);

// Splits `bytes` into frames; a trailing partial frame is left out.
std::vector<Frame> parseFrames(std::string_view bytes);
// Everything the session produces now (budget unbounded).
std::string drain(ServerSession& session);
// The error code of the first GOAWAY among `frames`, or -1.
int64_t goAwayCode(const std::vector<Frame>& frames);

// Reads frames off a client socket (its receive timeout bounds each read),
// keeping a partial frame for the next call.
class FrameReader {
 public:
  explicit FrameReader(int fd) : fd_(fd) {}

  // Reads until a frame satisfies `done`, the server closes, or a read
  // times out; returns every frame read.
  template <class Done>
  std::vector<Frame> until(Done&& done) {
    std::vector<Frame> frames;
    for (;;) {
      std::vector<Frame> now = parseFrames(bytes_);
      size_t used = 0;
      for (Frame& f : now) {
        used += 9 + f.payload.size();
        frames.push_back(std::move(f));
        if (done(frames.back())) {
          bytes_.erase(0, used);
          return frames;
        }
      }
      bytes_.erase(0, used);
      if (!readMore()) return frames;
    }
  }

 private:
  bool readMore();

  int fd_;
  std::string bytes_;
};

// Decodes the header blocks of one connection's HEADERS frames, in the
// order they were sent (one HPACK table for the whole connection, as the
// server's encoder keeps). Frames with END_HEADERS only (what the server
// sends: no padding, no priority, no CONTINUATION for small blocks).
class HeaderDecoder {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;
  HeaderDecoder();
  ~HeaderDecoder();
  HeaderDecoder(const HeaderDecoder&) = delete;
  HeaderDecoder& operator=(const HeaderDecoder&) = delete;

  // The fields of a HEADERS frame (each HEADERS frame of the connection
  // must go through here once, in order).
  Fields decode(const Frame& headers);

 private:
  nghttp2_hd_inflater* inflater_ = nullptr;
};

// A compliant client: submit requests, exchange() bytes with the server
// until neither side has anything to say, then read the results.
class Client {
 public:
  struct Response {
    int status = 0;
    std::map<std::string, std::string> fields;
    std::string body;
    bool closed = false;
    uint32_t errorCode = 0;
  };

  // `settings`: the client's SETTINGS (an INITIAL_WINDOW_SIZE of 0 stalls
  // every response body).
  explicit Client(std::vector<nghttp2_settings_entry> settings = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Returns the stream id.
  int32_t request(std::string_view method, std::string_view path, std::string body = {},
                  std::vector<std::pair<std::string, std::string>> extra = {});
  // Moves bytes both ways until quiet (at most `rounds` rounds); `budget`
  // bounds each produce() of the server. Returns whether the server's
  // receive() accepted everything.
  bool exchange(ServerSession& server, size_t budget = SIZE_MAX, int rounds = 1000);
  [[nodiscard]] const Response& response(int32_t stream) { return responses_[stream]; }
  // Whether the server sent GOAWAY, and its last stream id.
  [[nodiscard]] bool goAwayReceived() const { return goAway_; }
  [[nodiscard]] int32_t goAwayLastStream() const { return goAwayLast_; }

  struct Callbacks;

 private:
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Response> responses_;
  std::map<int32_t, std::pair<std::string, size_t>> uploads_;  // body, sent
  bool goAway_ = false;
  int32_t goAwayLast_ = -1;
};

}  // namespace libnet::http2::test
