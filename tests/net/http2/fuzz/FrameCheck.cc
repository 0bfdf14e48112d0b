#include "tests/net/http2/fuzz/FrameCheck.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <charconv>
#include <new>
#include <utility>

namespace libnet::http2::fuzz {

namespace {

uint32_t bigEndian(std::string_view bytes, size_t at, size_t n) {
  uint32_t value = 0;
  for (size_t i = 0; i < n; ++i) value = (value << 8) | static_cast<uint8_t>(bytes[at + i]);
  return value;
}

constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kAck = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriority = 0x20;

bool connectionSpecific(std::string_view name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade";
}

// The payload without its padding (RFC 9113 6.1, 6.2), or nullopt if the
// pad length passes the end.
std::optional<std::string_view> unpadded(uint8_t flags, std::string_view payload) {
  if ((flags & kPadded) == 0) return payload;
  if (payload.empty()) return std::nullopt;
  const size_t pad = static_cast<uint8_t>(payload[0]);
  if (pad + 1 > payload.size()) return std::nullopt;
  return payload.substr(1, payload.size() - 1 - pad);
}

}  // namespace

FrameCheck::FrameCheck() {
  if (nghttp2_hd_inflate_new(&inflater_) != 0) throw std::bad_alloc();
}

FrameCheck::~FrameCheck() { nghttp2_hd_inflate_del(inflater_); }

void FrameCheck::fail(std::string what) {
  if (error_.empty()) error_ = "frame " + std::to_string(frames_) + ": " + std::move(what);
}

void FrameCheck::take(std::string_view bytes) {
  partial_.append(bytes);
  size_t at = 0;
  while (error_.empty() && partial_.size() - at >= kFrameHeader) {
    const std::string_view rest = std::string_view(partial_).substr(at);
    const Head head{bigEndian(rest, 0, 3), static_cast<uint8_t>(rest[3]),
                    static_cast<uint8_t>(rest[4]), bigEndian(rest, 5, 4) & 0x7fffffffu};
    if (head.length > kMaxPayload) {
      fail("payload of " + std::to_string(head.length) + " bytes");
      break;
    }
    if (rest.size() < kFrameHeader + head.length) break;
    frame(head, rest.substr(kFrameHeader, head.length));
    ++frames_;
    at += kFrameHeader + head.length;
  }
  partial_.erase(0, at);
}

void FrameCheck::frame(const Head& head, std::string_view payload) {
  if (!framing(head)) return;
  if (head.stream == 0) {
    controlFrame(head, payload);
  } else {
    streamFrame(head, payload);
  }
}

// The rules about order: SETTINGS first, a header block unbroken, nothing
// after an error GOAWAY, only the types a server sends.
bool FrameCheck::framing(const Head& head) {
  if (frames_ == 0 && (head.type != NGHTTP2_SETTINGS || (head.flags & kAck) != 0)) {
    fail("the server's first frame is not its SETTINGS");
    return false;
  }
  if (goAwayError_.value_or(NGHTTP2_NO_ERROR) != NGHTTP2_NO_ERROR) {
    fail("a frame after GOAWAY with error " + std::to_string(*goAwayError_));
    return false;
  }
  if (blockStream_ != 0 && (head.type != NGHTTP2_CONTINUATION || head.stream != blockStream_)) {
    fail("a header block on stream " + std::to_string(blockStream_) + " broken by type " +
         std::to_string(head.type));
    return false;
  }
  if (blockStream_ == 0 && head.type == NGHTTP2_CONTINUATION) {
    fail("CONTINUATION without a header block");
    return false;
  }
  switch (head.type) {
    case NGHTTP2_DATA:
    case NGHTTP2_HEADERS:
    case NGHTTP2_RST_STREAM:
    case NGHTTP2_SETTINGS:
    case NGHTTP2_PING:
    case NGHTTP2_GOAWAY:
    case NGHTTP2_WINDOW_UPDATE:
    case NGHTTP2_CONTINUATION:
      return true;
    default:
      fail("frame type " + std::to_string(head.type) + " from a server");
      return false;
  }
}

bool FrameCheck::controlFrame(const Head& head, std::string_view payload) {
  const size_t n = payload.size();
  switch (head.type) {
    case NGHTTP2_SETTINGS:
      if ((head.flags & kAck) != 0 ? n != 0 : n % 6 != 0) fail("SETTINGS of a bad length");
      break;
    case NGHTTP2_PING:
      if (n != 8) fail("PING of a bad length");
      break;
    case NGHTTP2_WINDOW_UPDATE:
      if (n != 4 || (bigEndian(payload, 0, 4) & 0x7fffffffu) == 0) fail("bad WINDOW_UPDATE");
      break;
    case NGHTTP2_GOAWAY: {
      if (n < 8) {
        fail("GOAWAY of a bad length");
        break;
      }
      const uint32_t last = bigEndian(payload, 0, 4) & 0x7fffffffu;
      const uint32_t code = bigEndian(payload, 4, 4);
      // nghttp2 names the last stream it took in the GOAWAY of a connection
      // error, which passes a graceful GOAWAY's when streams arrived before
      // that one was written; those must not have been answered
      // (lowestGoAwayLast()), and a graceful GOAWAY never goes up.
      if (code == NGHTTP2_NO_ERROR && goAwayLowest_ && last > *goAwayLowest_) {
        fail("a graceful GOAWAY's last stream " + std::to_string(last) + " above an earlier " +
             std::to_string(*goAwayLowest_));
      }
      goAwayLowest_ = std::min(last, goAwayLowest_.value_or(last));
      goAwayError_ = code;
      break;
    }
    default:
      fail("type " + std::to_string(head.type) + " on stream 0");
      return false;
  }
  return error_.empty();
}

void FrameCheck::streamFrame(const Head& head, std::string_view payload) {
  if (head.stream % 2 == 0) {
    fail("a frame on even stream " + std::to_string(head.stream) + ", which no client opens");
    return;
  }
  Stream& stream = streams_[head.stream];
  switch (head.type) {
    case NGHTTP2_HEADERS:
      headersFrame(head, payload);
      break;
    case NGHTTP2_CONTINUATION:
      block_.append(payload);
      if ((head.flags & kEndHeaders) != 0) headerBlock();
      break;
    case NGHTTP2_DATA:
      dataFrame(head, payload);
      break;
    case NGHTTP2_RST_STREAM:
      if (payload.size() != 4) fail("RST_STREAM of a bad length");
      stream.ended = true;
      break;
    case NGHTTP2_WINDOW_UPDATE:
      if (payload.size() != 4 || (bigEndian(payload, 0, 4) & 0x7fffffffu) == 0) {
        fail("bad WINDOW_UPDATE");
      }
      break;
    default:
      fail("type " + std::to_string(head.type) + " on a stream");
  }
}

void FrameCheck::headersFrame(const Head& head, std::string_view payload) {
  Stream& stream = streams_[head.stream];
  if (stream.ended) return fail("HEADERS on a stream the server ended");
  if (stream.headers) return fail("a second HEADERS on stream " + std::to_string(head.stream));
  std::optional<std::string_view> fragment = unpadded(head.flags, payload);
  if (!fragment) return fail("HEADERS padding past its end");
  if ((head.flags & kPriority) != 0) {
    if (fragment->size() < 5) return fail("HEADERS too short for its priority");
    fragment->remove_prefix(5);
  }
  stream.headers = true;
  highestAnswered_ = std::max(highestAnswered_, head.stream);
  blockStream_ = head.stream;
  blockEndsStream_ = (head.flags & kEndStream) != 0;
  block_.assign(*fragment);
  if ((head.flags & kEndHeaders) != 0) headerBlock();
}

void FrameCheck::dataFrame(const Head& head, std::string_view payload) {
  Stream& stream = streams_[head.stream];
  if (!stream.headers) return fail("DATA before the response HEADERS");
  if (stream.ended) return fail("DATA on a stream the server ended");
  const std::optional<std::string_view> data = unpadded(head.flags, payload);
  if (!data) return fail("DATA padding past its end");
  stream.data += data->size();
  dataBytes_ += data->size();
  if (stream.contentLength && stream.data > *stream.contentLength) {
    return fail("DATA past the content-length on stream " + std::to_string(head.stream));
  }
  if ((head.flags & kEndStream) != 0) {
    stream.ended = true;
    if (stream.contentLength && stream.data != *stream.contentLength) {
      fail("body of " + std::to_string(stream.data) + " bytes, content-length " +
           std::to_string(*stream.contentLength));
    }
  }
}

// Decodes the finished block with the state the server's encoder left.
void FrameCheck::headerBlock() {
  Stream& stream = streams_[blockStream_];
  const auto* in = reinterpret_cast<const uint8_t*>(block_.data());
  size_t left = block_.size();
  bool first = true;
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
    if (n < 0)
      return fail("a header block that does not decode: " +
                  std::string(nghttp2_strerror(static_cast<int>(n))));
    in += n;
    left -= static_cast<size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      const std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
      const std::string_view value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
      if (!decodeField(name, value, first)) return;
      if (name == "content-length") {
        uint64_t length = 0;
        const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
        if (ec != std::errc() || end != value.data() + value.size()) {
          return fail("content-length " + std::string(value));
        }
        stream.contentLength = length;
      }
      first = false;
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) break;
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) break;
  }
  nghttp2_hd_inflate_end_headers(inflater_);
  if (first) return fail("an empty response header block");
  if (blockEndsStream_) stream.ended = true;
  blockStream_ = 0;
  block_.clear();
}

bool FrameCheck::decodeField(std::string_view name, std::string_view value, bool first) {
  if (first != (name == ":status")) {
    fail(first ? "a response that does not start with :status" : "a second :status");
    return false;
  }
  if (first && (value.size() != 3 || value[0] < '1' || value[0] > '5')) {
    fail(":status " + std::string(value));
    return false;
  }
  for (const char c : name) {
    if (c >= 'A' && c <= 'Z') {
      fail("an upper-case field name " + std::string(name));
      return false;
    }
  }
  if (connectionSpecific(name)) {
    fail("connection-specific field " + std::string(name));
    return false;
  }
  return true;
}

}  // namespace libnet::http2::fuzz
