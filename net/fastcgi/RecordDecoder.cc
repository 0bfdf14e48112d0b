#include "net/fastcgi/RecordDecoder.h"

#include <utility>

namespace libnet::fastcgi {

namespace {

uint8_t byteAt(std::string_view s, size_t i) { return static_cast<uint8_t>(s[i]); }

// The content length a record of a fixed-size type must have; -1: any.
int fixedLength(RecordType type) {
  switch (type) {
    case RecordType::kBeginRequest:
    case RecordType::kEndRequest:
    case RecordType::kUnknownType:
      return 8;
    case RecordType::kAbortRequest:
      return 0;
    default:
      return -1;
  }
}

// Reads a 1- or 4-byte length at `*pos`; false if it does not fit.
bool readLength(std::string_view s, size_t* pos, size_t* length) {
  if (*pos >= s.size()) return false;
  const uint8_t first = byteAt(s, *pos);
  if ((first & 0x80) == 0) {
    *length = first;
    *pos += 1;
    return true;
  }
  if (s.size() - *pos < 4) return false;
  *length = (size_t{first & 0x7fu} << 24) | (size_t{byteAt(s, *pos + 1)} << 16) |
            (size_t{byteAt(s, *pos + 2)} << 8) | byteAt(s, *pos + 3);
  *pos += 4;
  return true;
}

}  // namespace

RecordDecoder::Status RecordDecoder::fail(std::string message) {
  error_ = std::move(message);
  return Status::kError;
}

RecordDecoder::Status RecordDecoder::decode(std::string_view input, Record* record,
                                            size_t* consumed) {
  if (failed()) return Status::kError;
  if (input.size() < kHeaderLength) return Status::kNeedMore;
  const uint8_t version = byteAt(input, 0);
  if (version != kVersion1) {
    return fail("FastCGI record of version " + std::to_string(version) + " (1 expected)");
  }
  const uint8_t type = byteAt(input, 1);
  if (type == 0 || type > kMaxRecordType) {
    return fail("FastCGI record of unknown type " + std::to_string(type));
  }
  const size_t length = (size_t{byteAt(input, 4)} << 8) | byteAt(input, 5);
  const size_t padding = byteAt(input, 6);
  const int fixed = fixedLength(static_cast<RecordType>(type));
  if (fixed >= 0 && length != static_cast<size_t>(fixed)) {
    return fail("FastCGI record of type " + std::to_string(type) + " with " +
                std::to_string(length) + " content bytes (" + std::to_string(fixed) + " expected)");
  }
  const size_t total = kHeaderLength + length + padding;
  if (input.size() < total) return Status::kNeedMore;
  record->type = static_cast<RecordType>(type);
  record->requestId = static_cast<uint16_t>((byteAt(input, 2) << 8) | byteAt(input, 3));
  record->content = input.substr(kHeaderLength, length);
  *consumed = total;
  return Status::kRecord;
}

bool RecordDecoder::decodeNameValues(std::string_view content, ParamList* out) {
  size_t pos = 0;
  while (pos < content.size()) {
    size_t nameLength = 0;
    size_t valueLength = 0;
    if (!readLength(content, &pos, &nameLength) || !readLength(content, &pos, &valueLength)) {
      return false;
    }
    if (content.size() - pos < nameLength || content.size() - pos - nameLength < valueLength) {
      return false;
    }
    out->emplace_back(std::string(content.substr(pos, nameLength)),
                      std::string(content.substr(pos + nameLength, valueLength)));
    pos += nameLength + valueLength;
  }
  return true;
}

bool RecordDecoder::decodeEndRequest(std::string_view content, EndRequest* out) {
  if (content.size() != 8) return false;
  const uint8_t status = byteAt(content, 4);
  if (status > static_cast<uint8_t>(ProtocolStatus::kUnknownRole)) return false;
  out->appStatus = (uint32_t{byteAt(content, 0)} << 24) | (uint32_t{byteAt(content, 1)} << 16) |
                   (uint32_t{byteAt(content, 2)} << 8) | byteAt(content, 3);
  out->protocolStatus = static_cast<ProtocolStatus>(status);
  return true;
}

}  // namespace libnet::fastcgi
