#include "net/grpc/MessageReader.h"

#include <algorithm>
#include <utility>

#include "net/grpc/GrowWithin.h"
#include "net/grpc/Gzip.h"
#include "net/grpc/Wire.h"

namespace libnet::grpc {

MessageReader::MessageReader(Limits limits, std::string encoding)
    : limits_(limits), gzip_(encoding == "gzip") {}

bool MessageReader::supportedEncoding(std::string_view encoding) {
  return encoding.empty() || encoding == "identity" || encoding == "gzip";
}

bool MessageReader::feed(std::string_view bytes) {
  while (error_ == Error::kNone && !bytes.empty()) {
    const size_t used = inPayload_ ? takePayload(bytes) : takePrefix(bytes);
    bytes.remove_prefix(used);
  }
  return error_ == Error::kNone;
}

size_t MessageReader::takePrefix(std::string_view bytes) {
  const size_t used = std::min(bytes.size(), kFramePrefixBytes - prefixHave_);
  std::copy_n(bytes.begin(), used, prefix_ + prefixHave_);
  prefixHave_ += used;
  if (prefixHave_ < kFramePrefixBytes) return used;
  const unsigned char flag = prefix_[0];
  const size_t length = size_t{prefix_[1]} << 24 | size_t{prefix_[2]} << 16 |
                        size_t{prefix_[3]} << 8 | size_t{prefix_[4]};
  // Every check the prefix allows is made before any of the payload is
  // held: a peer announcing 4 GiB is refused without a byte allocated.
  if (flag > 1) {
    fail(Error::kBadFlag);
  } else if (flag == 1 && !gzip_) {
    fail(Error::kCompressedWithoutEncoding);
  } else if (length > limits_.maxMessageBytes) {
    fail(Error::kTooLarge);
  }
  if (error_ != Error::kNone) return used;
  prefixHave_ = 0;
  inPayload_ = true;
  compressed_ = flag == 1;
  payloadLength_ = length;
  if (length == 0) completeMessage();
  return used;
}

size_t MessageReader::takePayload(std::string_view bytes) {
  const size_t used = std::min(bytes.size(), payloadLength_ - payload_.size());
  appendWithin(&payload_, bytes.substr(0, used), payloadLength_);
  if (payload_.size() == payloadLength_) completeMessage();
  return used;
}

void MessageReader::completeMessage() {
  inPayload_ = false;
  // Moved out, payload_ is left empty and without storage.
  std::string message = std::move(payload_);
  if (compressed_) {
    bool tooLarge = false;
    std::optional<std::string> plain = gzipDecompress(message, limits_.maxMessageBytes, &tooLarge);
    if (!plain) {
      fail(tooLarge ? Error::kDecompressedTooLarge : Error::kBadCompression);
      return;
    }
    message.swap(*plain);  // the compressed bytes are freed with `plain`
  }
  readyBytes_ += message.size();
  ready_.push_back(std::move(message));
  readyCompressed_.push_back(compressed_);
}

void MessageReader::fail(Error error) {
  error_ = error;
  // Nothing more will be taken: the partial message is of no use.
  prefixHave_ = 0;
  inPayload_ = false;
  std::string().swap(payload_);
}

std::optional<std::string> MessageReader::next() {
  if (ready_.empty()) return std::nullopt;
  std::string message = std::move(ready_.front());
  ready_.pop_front();
  lastCompressed_ = readyCompressed_.front();
  readyCompressed_.pop_front();
  readyBytes_ -= message.size();
  return message;
}

size_t MessageReader::buffered() const { return prefixHave_ + payload_.size() + readyBytes_; }

bool MessageReader::atBoundary() const { return prefixHave_ == 0 && !inPayload_; }

StatusCode errorStatus(MessageReader::Error error) {
  switch (error) {
    case MessageReader::Error::kNone:
      return StatusCode::kOk;
    case MessageReader::Error::kTooLarge:
    case MessageReader::Error::kDecompressedTooLarge:
      return StatusCode::kResourceExhausted;
    case MessageReader::Error::kCompressedWithoutEncoding:
    case MessageReader::Error::kBadCompression:
    case MessageReader::Error::kBadFlag:
      return StatusCode::kInternal;
  }
  return StatusCode::kInternal;
}

std::string_view errorText(MessageReader::Error error) {
  switch (error) {
    case MessageReader::Error::kNone:
      return "";
    case MessageReader::Error::kTooLarge:
      return "received message larger than the maximum message size";
    case MessageReader::Error::kCompressedWithoutEncoding:
      return "compressed message received without a grpc-encoding";
    case MessageReader::Error::kBadCompression:
      return "failed to decompress a received message";
    case MessageReader::Error::kDecompressedTooLarge:
      return "received message larger than the maximum message size once decompressed";
    case MessageReader::Error::kBadFlag:
      return "received message with an unknown compressed flag";
  }
  return "unknown message error";
}

}  // namespace libnet::grpc
