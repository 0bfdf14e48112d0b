#include "bench/websocket/FrameReader.h"

#include <algorithm>
#include <cstring>

#include "bench/websocket/WsClientProtocol.h"

namespace wsload {

size_t FrameReader::takeHeader(const uint8_t* data, size_t n) {
  const size_t take = std::min(n, headerNeed_ - headerLength_);
  std::memcpy(header_ + headerLength_, data, take);
  headerLength_ += take;
  if (headerLength_ == 2 && headerNeed_ == 2) {
    const uint8_t length7 = header_[1] & 0x7f;
    if (length7 == 126) headerNeed_ = 4;
    if (length7 == 127) headerNeed_ = 10;
  }
  return take;
}

bool FrameReader::startFrame() {
  fin_ = (header_[0] & 0x80) != 0;
  const bool rsv1 = (header_[0] & 0x40) != 0;
  opcode_ = header_[0] & 0x0f;
  const uint8_t length7 = header_[1] & 0x7f;
  remaining_ = length7;
  if (headerNeed_ > 2) {
    remaining_ = 0;
    for (size_t i = 2; i < headerNeed_; ++i) remaining_ = (remaining_ << 8) | header_[i];
  }
  headerLength_ = 0;
  headerNeed_ = 2;
  inPayload_ = true;
  if ((header_[1] & 0x80) != 0) error_ = "masked frame from the server";
  if ((header_[0] & 0x30) != 0) error_ = "RSV2/RSV3 set";
  if (opcode_ >= 8) {
    if (!fin_ || remaining_ > 125 || rsv1) error_ = "bad control frame";
    if (opcode_ != kOpClose && opcode_ != kOpPing && opcode_ != kOpPong) error_ = "bad opcode";
    return error_.empty();
  }
  if (opcode_ == 0) {
    if (messageOpcode_ == 0) error_ = "continuation frame outside a message";
    if (rsv1) error_ = "RSV1 on a continuation frame";
  } else if (opcode_ != kOpText && opcode_ != kOpBinary) {
    error_ = "bad opcode";
  } else if (messageOpcode_ != 0) {
    error_ = "new message inside a fragmented one";
  } else {
    messageOpcode_ = opcode_;
    messageCompressed_ = rsv1;
    messageBytes_ = 0;
  }
  return error_.empty();
}

bool FrameReader::finishFrame(FrameSink& sink) {
  inPayload_ = false;
  if (opcode_ >= 8) {
    const bool go = sink.onControl(opcode_, control_);
    control_.clear();
    return go;
  }
  if (!fin_) return true;
  const int opcode = messageOpcode_;
  messageOpcode_ = 0;
  const bool go = sink.onMessage(opcode, messageCompressed_, messageBytes_, message_);
  message_.clear();
  return go;
}

bool FrameReader::feed(const uint8_t* data, size_t n, FrameSink& sink) {
  while (n > 0) {
    if (!inPayload_) {
      const size_t taken = takeHeader(data, n);
      data += taken;
      n -= taken;
      if (headerLength_ < headerNeed_) continue;
      if (!startFrame()) return false;
      if (remaining_ == 0 && !finishFrame(sink)) return false;
      continue;
    }
    const size_t take = static_cast<size_t>(std::min<uint64_t>(n, remaining_));
    if (opcode_ >= 8) {
      control_.append(reinterpret_cast<const char*>(data), take);
    } else {
      messageBytes_ += take;
      if (keepPayload_) message_.append(reinterpret_cast<const char*>(data), take);
    }
    data += take;
    n -= take;
    remaining_ -= take;
    if (remaining_ == 0 && !finishFrame(sink)) return false;
  }
  return true;
}

}  // namespace wsload
