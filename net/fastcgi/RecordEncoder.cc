#include "net/fastcgi/RecordEncoder.h"

#include <algorithm>
#include <cassert>

namespace libnet::fastcgi {

namespace {

void appendLength(std::string* out, size_t length) {
  if (length < 128) {
    out->push_back(static_cast<char>(length));
    return;
  }
  const auto n = static_cast<uint32_t>(length);
  out->push_back(static_cast<char>(((n >> 24) & 0x7f) | 0x80));
  out->push_back(static_cast<char>((n >> 16) & 0xff));
  out->push_back(static_cast<char>((n >> 8) & 0xff));
  out->push_back(static_cast<char>(n & 0xff));
}

}  // namespace

void RecordEncoder::record(std::string* out, RecordType type, std::string_view content) const {
  assert(content.size() <= kMaxContentLength);
  const size_t padding = (8 - content.size() % 8) % 8;
  const char header[kHeaderLength] = {
      static_cast<char>(kVersion1),
      static_cast<char>(type),
      static_cast<char>(requestId_ >> 8),
      static_cast<char>(requestId_ & 0xff),
      static_cast<char>(content.size() >> 8),
      static_cast<char>(content.size() & 0xff),
      static_cast<char>(padding),
      0,
  };
  out->append(header, kHeaderLength);
  out->append(content);
  out->append(padding, '\0');
}

void RecordEncoder::beginRequest(std::string* out, Role role, bool keepConn) const {
  const auto r = static_cast<uint16_t>(role);
  const char body[8] = {static_cast<char>(r >> 8), static_cast<char>(r & 0xff),
                        static_cast<char>(keepConn ? kKeepConn : 0)};
  record(out, RecordType::kBeginRequest, std::string_view(body, sizeof body));
}

void RecordEncoder::params(std::string* out, const ParamList& params) const {
  std::string pairs;
  for (const Param& p : params) appendNameValue(&pairs, p.first, p.second);
  stream(out, RecordType::kParams, pairs);
  endStream(out, RecordType::kParams);
}

void RecordEncoder::stream(std::string* out, RecordType type, std::string_view data) const {
  // Cut at a multiple of 8 below the limit, so that no record but the last
  // needs padding.
  constexpr size_t kPiece = kMaxContentLength & ~size_t{7};
  while (!data.empty()) {
    const size_t n = std::min(data.size(), kPiece);
    record(out, type, data.substr(0, n));
    data.remove_prefix(n);
  }
}

void RecordEncoder::endStream(std::string* out, RecordType type) const { record(out, type, {}); }

void RecordEncoder::endRequest(std::string* out, uint32_t appStatus, ProtocolStatus status) const {
  const char body[8] = {static_cast<char>(appStatus >> 24),
                        static_cast<char>((appStatus >> 16) & 0xff),
                        static_cast<char>((appStatus >> 8) & 0xff),
                        static_cast<char>(appStatus & 0xff), static_cast<char>(status)};
  record(out, RecordType::kEndRequest, std::string_view(body, sizeof body));
}

void RecordEncoder::abortRequest(std::string* out) const {
  record(out, RecordType::kAbortRequest, {});
}

void RecordEncoder::appendNameValue(std::string* out, std::string_view name,
                                    std::string_view value) {
  appendLength(out, name.size());
  appendLength(out, value.size());
  out->append(name);
  out->append(value);
}

}  // namespace libnet::fastcgi
