#include "tests/net/http2/session/H2Peer.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace libnet::http2::test {

namespace {

std::string_view view(const uint8_t* data, size_t length) {
  return {reinterpret_cast<const char*>(data), length};
}

std::vector<nghttp2_nv> toNv(std::vector<std::pair<std::string, std::string>>& fields) {
  std::vector<nghttp2_nv> nv;
  for (auto& [name, value] : fields) {
    nv.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()),
                  name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  return nv;
}

}  // namespace

std::string frame(uint8_t type, uint8_t flags, int32_t stream, std::string_view payload) {
  std::string out;
  const size_t length = payload.size();
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
  out.push_back(static_cast<char>(type));
  out.push_back(static_cast<char>(flags));
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((static_cast<uint32_t>(stream) >> shift) & 0xff));
  }
  out.append(payload);
  return out;
}

std::string prefaceAndSettings() {
  return std::string(kPreface) + frame(NGHTTP2_SETTINGS, 0, 0, {});
}

std::string headerBlock(const std::vector<std::pair<std::string, std::string>>& fields,
                        nghttp2_hd_deflater* deflater) {
  nghttp2_hd_deflater* own = nullptr;
  if (deflater == nullptr) {
    if (nghttp2_hd_deflate_new(&own, 4096) != 0) throw std::runtime_error("deflater");
    deflater = own;
  }
  auto copy = fields;
  std::vector<nghttp2_nv> nv = toNv(copy);
  std::string out(nghttp2_hd_deflate_bound(deflater, nv.data(), nv.size()), '\0');
  const ssize_t n = nghttp2_hd_deflate_hd(deflater, reinterpret_cast<uint8_t*>(out.data()),
                                          out.size(), nv.data(), nv.size());
  if (own != nullptr) nghttp2_hd_deflate_del(own);
  if (n < 0) throw std::runtime_error("deflate");
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string getBlock(std::string_view path) {
  return headerBlock({{":method", "GET"},
                      {":scheme", "http"},
                      {":authority", "localhost"},
                      {":path", std::string(path)}});
}

std::vector<Frame> parseFrames(std::string_view bytes) {
  std::vector<Frame> frames;
  while (bytes.size() >= 9) {
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    const size_t length = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
    if (bytes.size() < 9 + length) break;
    Frame f;
    f.type = p[3];
    f.flags = p[4];
    f.stream = static_cast<int32_t>(
        ((uint32_t{p[5]} << 24) | (uint32_t{p[6]} << 16) | (uint32_t{p[7]} << 8) | p[8]) &
        0x7fffffff);
    f.payload.assign(bytes.substr(9, length));
    frames.push_back(std::move(f));
    bytes.remove_prefix(9 + length);
  }
  return frames;
}

std::string drain(ServerSession& session) {
  Buffer out;
  session.produce(&out, SIZE_MAX);
  return out.retrieveAllAsString();
}

int64_t goAwayCode(const std::vector<Frame>& frames) {
  for (const Frame& f : frames) {
    if (f.type != NGHTTP2_GOAWAY || f.payload.size() < 8) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(f.payload.data()) + 4;
    return (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
  }
  return -1;
}

bool FrameReader::readMore() {
  char buf[65536];
  ssize_t n;
  do {
    n = ::recv(fd_, buf, sizeof buf, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  bytes_.append(buf, static_cast<size_t>(n));
  return true;
}

HeaderDecoder::HeaderDecoder() {
  if (nghttp2_hd_inflate_new(&inflater_) != 0) throw std::runtime_error("inflater");
}

HeaderDecoder::~HeaderDecoder() { nghttp2_hd_inflate_del(inflater_); }

HeaderDecoder::Fields HeaderDecoder::decode(const Frame& headers) {
  Fields fields;
  auto* in = reinterpret_cast<const uint8_t*>(headers.payload.data());
  size_t left = headers.payload.size();
  for (;;) {
    nghttp2_nv nv;
    int flags = 0;
    const ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
    if (n < 0) throw std::runtime_error("HPACK decoding failed");
    in += n;
    left -= static_cast<size_t>(n);
    if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
      fields.emplace_back(std::string(view(nv.name, nv.namelen)),
                          std::string(view(nv.value, nv.valuelen)));
    }
    if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
      nghttp2_hd_inflate_end_headers(inflater_);
      return fields;
    }
    if (n == 0 && left == 0) return fields;
  }
}

struct Client::Callbacks {
  static Client* self(void* user) { return static_cast<Client*>(user); }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                    size_t nameLength, const uint8_t* value, size_t valueLength, uint8_t,
                    void* user) {
    Response& r = self(user)->responses_[frame->hd.stream_id];
    const std::string_view n = view(name, nameLength);
    if (n == ":status") {
      r.status = std::stoi(std::string(view(value, valueLength)));
    } else {
      r.fields[std::string(n)] = std::string(view(value, valueLength));
    }
    return 0;
  }

  static int data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t length,
                  void* user) {
    self(user)->responses_[id].body.append(view(data, length));
    return 0;
  }

  static int closed(nghttp2_session*, int32_t id, uint32_t errorCode, void* user) {
    Response& r = self(user)->responses_[id];
    r.closed = true;
    r.errorCode = errorCode;
    return 0;
  }

  static int frameReceived(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      self(user)->goAway_ = true;
      self(user)->goAwayLast_ = frame->goaway.last_stream_id;
    }
    return 0;
  }

  static ssize_t upload(nghttp2_session*, int32_t id, uint8_t* buf, size_t length, uint32_t* flags,
                        nghttp2_data_source*, void* user) {
    auto& [body, sent] = self(user)->uploads_[id];
    const size_t n = std::min(length, body.size() - sent);
    std::memcpy(buf, body.data() + sent, n);
    sent += n;
    if (sent == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
};

Client::Client(std::vector<nghttp2_settings_entry> settings) {
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, Callbacks::header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, Callbacks::data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, Callbacks::closed);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, Callbacks::frameReceived);
  nghttp2_session_client_new(&session_, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
}

Client::~Client() { nghttp2_session_del(session_); }

int32_t Client::request(std::string_view method, std::string_view path, std::string body,
                        std::vector<std::pair<std::string, std::string>> extra) {
  std::vector<std::pair<std::string, std::string>> fields = {{":method", std::string(method)},
                                                             {":scheme", "http"},
                                                             {":authority", "localhost"},
                                                             {":path", std::string(path)}};
  for (auto& field : extra) fields.push_back(std::move(field));
  std::vector<nghttp2_nv> nv = toNv(fields);
  nghttp2_data_provider provider{};
  provider.read_callback = Callbacks::upload;
  const bool hasBody = !body.empty();
  const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(),
                                            hasBody ? &provider : nullptr, nullptr);
  if (hasBody) uploads_[id] = {std::move(body), 0};
  return id;
}

bool Client::exchange(ServerSession& server, size_t budget, int rounds) {
  bool accepted = true;
  for (int i = 0; i < rounds; ++i) {
    const uint8_t* data = nullptr;
    std::string toServer;
    for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;) {
      toServer.append(view(data, static_cast<size_t>(n)));
    }
    if (!toServer.empty() && !server.receive(toServer)) accepted = false;
    Buffer out;
    server.produce(&out, budget);
    const std::string fromServer = out.retrieveAllAsString();
    if (!fromServer.empty()) {
      nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(fromServer.data()),
                               fromServer.size());
    }
    if (toServer.empty() && fromServer.empty()) break;
  }
  return accepted;
}

}  // namespace libnet::http2::test
