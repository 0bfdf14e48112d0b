#include "net/http2/LargeFieldFilter.h"

#include <algorithm>
#include <utility>

namespace libnet::http2 {

namespace {

constexpr size_t kFrameHeader = 9;
constexpr uint8_t kHeaders = 0x1;
constexpr uint8_t kContinuation = 0x9;
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr uint8_t kPriority = 0x20;
// SETTINGS_MAX_FRAME_SIZE as the server leaves it: a larger frame is
// nghttp2's to refuse.
constexpr size_t kMaxFrame = 16384;
// A stand-in for a literal the encoder put into the dynamic table: larger
// than any table the server allows (4096), so that adding it empties the
// table, as adding the original did.
constexpr size_t kEvictingString = 4096;
// Static table indexes of :path (RFC 7541 appendix A), whose stand-in
// value must still be a path.
constexpr uint64_t kPathIndex = 4;
constexpr uint64_t kPathIndexHtml = 5;
// A literal with a new name of 2^32 - 1 bytes: nghttp2 refuses its length.
constexpr std::string_view kMalformed("\x00\x7f\xff\xff\xff\x0f", 6);
// Literal names are kept up to this length, to tell a :path.
constexpr size_t kShortName = 16;

std::string frameHeader(size_t length, uint8_t type, uint8_t flags, int32_t stream) {
  const auto id = static_cast<uint32_t>(stream);
  return {
      static_cast<char>(length >> 16), static_cast<char>(length >> 8), static_cast<char>(length),
      static_cast<char>(type),         static_cast<char>(flags),       static_cast<char>(id >> 24),
      static_cast<char>(id >> 16),     static_cast<char>(id >> 8),     static_cast<char>(id)};
}

// An HPACK string literal (RFC 7541 5.2), not Huffman-coded.
void appendString(std::string* out, std::string_view text) {
  size_t length = text.size();
  if (length < 127) {
    out->push_back(static_cast<char>(length));
  } else {
    out->push_back(static_cast<char>(127));
    length -= 127;
    while (length >= 128) {
      out->push_back(static_cast<char>(0x80 | (length & 0x7f)));
      length >>= 7;
    }
    out->push_back(static_cast<char>(length));
  }
  out->append(text);
}

}  // namespace

LargeFieldFilter::LargeFieldFilter(size_t maxString, size_t maxBlock,
                                   std::function<void(int32_t)> onLarge,
                                   std::function<void()> onTooLong)
    : maxString_(maxString),
      maxBlock_(maxBlock),
      onLarge_(std::move(onLarge)),
      onTooLong_(std::move(onTooLong)) {}

void LargeFieldFilter::passOn(std::string_view bytes, std::vector<std::string_view>* out) {
  if (bytes.empty()) return;
  if (!out->empty() && out->back().data() + out->back().size() == bytes.data()) {
    out->back() = std::string_view(out->back().data(), out->back().size() + bytes.size());
  } else {
    out->push_back(bytes);
  }
}

void LargeFieldFilter::filter(std::string_view in, std::vector<std::string_view>* out) {
  built_.clear();
  size_t pos = 0;
  while (pos < in.size()) {
    if (bypass_) {
      passOn(in.substr(pos), out);
      return;
    }
    if (preface_ > 0 || skip_ > 0) {  // bytes that pass as they are
      size_t& left = preface_ > 0 ? preface_ : skip_;
      const size_t n = std::min(left, in.size() - pos);
      passOn(in.substr(pos, n), out);
      pos += n;
      left -= n;
      continue;
    }
    const size_t start = pos;
    const bool fresh = head_.empty();
    if (!takeFrameHeader(in, &pos)) return;
    const uint8_t type = static_cast<uint8_t>(head_[3]);
    if ((type != kHeaders && type != kContinuation) || frameLength_ > kMaxFrame) {
      if (fresh) {
        passOn(in.substr(start, kFrameHeader), out);
      } else {
        out->push_back(built_.emplace_back(head_));
      }
      bypass_ = bypass_ || frameLength_ > kMaxFrame;
      skip_ = frameLength_;
      head_.clear();
      continue;
    }
    if (fresh && frame_.empty() && in.size() - pos >= frameLength_) {
      headerFrame(in.substr(start, kFrameHeader + frameLength_), out);
      pos += frameLength_;
      head_.clear();
      continue;
    }
    // A header frame split across reads: gathered until whole.
    if (frame_.empty()) frame_ = head_;
    const size_t n = std::min(kFrameHeader + frameLength_ - frame_.size(), in.size() - pos);
    frame_.append(in.substr(pos, n));
    pos += n;
    if (frame_.size() < kFrameHeader + frameLength_) return;
    headerFrame(built_.emplace_back(std::move(frame_)), out);
    frame_.clear();
    head_.clear();
  }
}

bool LargeFieldFilter::takeFrameHeader(std::string_view in, size_t* pos) {
  if (!frame_.empty()) return true;  // a header frame's payload is being gathered
  const size_t n = std::min(kFrameHeader - head_.size(), in.size() - *pos);
  head_.append(in.substr(*pos, n));
  *pos += n;
  if (head_.size() < kFrameHeader) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(head_.data());
  frameLength_ = (size_t{p[0]} << 16) | (size_t{p[1]} << 8) | p[2];
  return true;
}

bool LargeFieldFilter::fragmentOf(std::string_view frame, std::string_view* fragment) {
  const auto flags = static_cast<uint8_t>(frame[4]);
  std::string_view payload = frame.substr(kFrameHeader);
  size_t padding = 0;
  if ((flags & kPadded) != 0) {
    if (payload.empty()) return false;
    padding = static_cast<uint8_t>(payload[0]);
    payload.remove_prefix(1);
  }
  priority_.clear();
  if ((flags & kPriority) != 0) {
    if (payload.size() < 5) return false;
    priority_.assign(payload.substr(0, 5));
    payload.remove_prefix(5);
  }
  if (padding > payload.size()) return false;
  *fragment = payload.substr(0, payload.size() - padding);
  return true;
}

void LargeFieldFilter::headerFrame(std::string_view frame, std::vector<std::string_view>* out) {
  const auto type = static_cast<uint8_t>(frame[3]);
  const auto flags = static_cast<uint8_t>(frame[4]);
  const auto* p = reinterpret_cast<const uint8_t*>(frame.data()) + 5;
  const auto stream = static_cast<int32_t>(
      ((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]) &
      0x7fffffff);
  std::string_view fragment;
  const bool understood = type == kHeaders ? !inBlock_ && fragmentOf(frame, &fragment)
                                           : inBlock_ && stream == blockStream_;
  if (!understood) {  // a protocol error nghttp2 will name
    bypass_ = true;
    passOn(frame, out);
    return;
  }
  if (type == kHeaders) {
    inBlock_ = true;
    blockStream_ = stream;
    blockBytes_ = 0;
    firstFrame_ = true;
    headersFlags_ = flags & (kEndStream | kPriority);
    largeReported_ = false;
    step_ = Step::kRepresentation;
    pending_.clear();
  } else {
    fragment = frame.substr(kFrameHeader);
  }
  blockBytes_ += frame.size() - kFrameHeader;
  if (blockBytes_ > maxBlock_) {
    onTooLong_();
    bypass_ = true;
    emit(pending_.size(), false, out);
    passOn(frame, out);
    return;
  }
  const bool endHeaders = (flags & kEndHeaders) != 0;
  const bool heldBefore = !pending_.empty();
  bool changed = walk(fragment);
  if (endHeaders && dropping_) {
    // The block ends inside the string it cut: it was malformed, which
    // nghttp2 must still see. The length of a name it cannot take is a
    // compression error (GOAWAY COMPRESSION_ERROR), as the original was.
    pending_.append(kMalformed);
    changed = true;
  }
  const bool holding = step_ == Step::kInteger && integer_ == Integer::kStringLength;
  const size_t end = endHeaders || !holding ? pending_.size() : lengthStart_;
  if (!changed && !heldBefore && end == pending_.size()) {
    // Nothing changed or held back: the frame as it came.
    passOn(frame, out);
    pending_.clear();
    firstFrame_ = false;
  } else {
    emit(end, endHeaders, out);
  }
  if (endHeaders) inBlock_ = false;
}

void LargeFieldFilter::emit(size_t end, bool endHeaders, std::vector<std::string_view>* out) {
  std::string_view rest(pending_.data(), end);
  do {
    const bool headers = firstFrame_;
    const std::string_view prefix = headers ? std::string_view(priority_) : std::string_view();
    const std::string_view chunk = rest.substr(0, kMaxFrame - prefix.size());
    rest.remove_prefix(chunk.size());
    const uint8_t flags = static_cast<uint8_t>((headers ? headersFlags_ : 0) |
                                               (rest.empty() && endHeaders ? kEndHeaders : 0));
    std::string frame = frameHeader(prefix.size() + chunk.size(),
                                    headers ? kHeaders : kContinuation, flags, blockStream_);
    frame.append(prefix);
    frame.append(chunk);
    out->push_back(built_.emplace_back(std::move(frame)));
    firstFrame_ = false;
  } while (!rest.empty());
  pending_.erase(0, end);
  lengthStart_ = lengthStart_ >= end ? lengthStart_ - end : 0;
}

bool LargeFieldFilter::walk(std::string_view fragment) {
  changed_ = false;
  size_t i = 0;
  while (i < fragment.size() && !bypass_) {
    if (step_ == Step::kString) {  // the bytes of a string, in bulk
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left_, fragment.size() - i));
      if (dropping_) {
        changed_ = true;
      } else {
        pending_.append(fragment.substr(i, n));
      }
      if (onName_ && nameKnown_) {  // a short name, kept to know a :path
        nameKnown_ = name_.size() + n <= kShortName;
        if (nameKnown_) name_.append(fragment.substr(i, n));
      }
      i += n;
      left_ -= n;
      if (left_ == 0) {
        dropping_ = false;
        step_ = onName_ ? Step::kStringLength : Step::kRepresentation;
        onName_ = false;
      }
      continue;
    }
    walkByte(static_cast<uint8_t>(fragment[i++]));
  }
  return changed_;
}

void LargeFieldFilter::walkByte(uint8_t byte) {
  pending_.push_back(static_cast<char>(byte));
  switch (step_) {
    case Step::kRepresentation:  // RFC 7541 6
      if ((byte & 0x80) != 0) {
        startInteger(Integer::kIndexed, byte, 7);
      } else if ((byte & 0x40) != 0) {
        indexing_ = true;
        startInteger(Integer::kLiteralIndex, byte, 6);
      } else if ((byte & 0x20) != 0) {
        startInteger(Integer::kTableSize, byte, 5);
      } else {
        indexing_ = false;
        startInteger(Integer::kLiteralIndex, byte, 4);
      }
      break;
    case Step::kStringLength:
      lengthStart_ = pending_.size() - 1;
      if (onName_) nameKnown_ = (byte & 0x80) == 0;  // not Huffman-coded
      startInteger(Integer::kStringLength, byte, 7);
      break;
    case Step::kInteger:
      // More than 32 bits: nghttp2 refuses the block; a string that long is
      // too long here.
      if (shift_ > 28) {
        if (integer_ != Integer::kStringLength) bypass_ = true;
        value_ = UINT64_MAX;
        integerDone();
        break;
      }
      value_ += uint64_t{byte & 0x7fu} << shift_;
      shift_ += 7;
      if ((byte & 0x80) == 0) integerDone();
      break;
    case Step::kString:
      break;  // walk() takes string bytes in bulk
  }
}

void LargeFieldFilter::startInteger(Integer kind, uint8_t byte, int prefixBits) {
  const uint64_t mask = (uint64_t{1} << prefixBits) - 1;
  integer_ = kind;
  value_ = byte & mask;
  shift_ = 0;
  step_ = Step::kInteger;
  if (value_ < mask) integerDone();
}

void LargeFieldFilter::integerDone() {
  switch (integer_) {
    case Integer::kIndexed:
    case Integer::kTableSize:
      step_ = Step::kRepresentation;
      break;
    case Integer::kLiteralIndex:
      nameIndex_ = value_;
      literalName_ = value_ == 0;
      name_.clear();
      onName_ = literalName_;
      step_ = Step::kStringLength;
      break;
    case Integer::kStringLength:
      if (value_ > maxString_) {
        stringTooLong();
        break;
      }
      left_ = value_;
      step_ = Step::kString;
      if (left_ == 0) {
        step_ = onName_ ? Step::kStringLength : Step::kRepresentation;
        onName_ = false;
      }
      break;
  }
}

void LargeFieldFilter::stringTooLong() {
  changed_ = true;
  if (!largeReported_) {
    largeReported_ = true;
    onLarge_(blockStream_);
  }
  pending_.resize(lengthStart_);
  const size_t size = indexing_ ? kEvictingString : 1;
  std::string standIn(size, 'x');
  const bool path =
      !onName_ && (literalName_ ? nameKnown_ && name_ == ":path"
                                : nameIndex_ == kPathIndex || nameIndex_ == kPathIndexHtml);
  if (path) standIn[0] = '/';
  appendString(&pending_, standIn);
  left_ = value_;
  dropping_ = true;
  step_ = Step::kString;
}

}  // namespace libnet::http2
