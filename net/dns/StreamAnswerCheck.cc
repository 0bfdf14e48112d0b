#include "net/dns/StreamAnswerCheck.h"

#include <algorithm>

namespace libnet::dns {

namespace {

constexpr size_t kLengthSize = 2;
// The flags byte's QR bit: the message is a response.
constexpr unsigned char kResponse = 0x80;

}  // namespace

StreamAnswerCheck::Step StreamAnswerCheck::take(Framing* f, const unsigned char** bytes,
                                                size_t* n) {
  while (*n > 0) {
    if (f->read < kLengthSize) {
      f->length = static_cast<uint16_t>(f->read == 0 ? **bytes << 8 : f->length | **bytes);
      ++*bytes;
      --*n;
      if (++f->read == kLengthSize) return Step::kLength;
      continue;
    }
    const size_t at = f->read - kLengthSize;
    size_t step = std::min(*n, static_cast<size_t>(f->length) - at);
    if (at < sizeof f->head) {
      step = std::min(step, sizeof f->head - at);
      std::copy(*bytes, *bytes + step, f->head + at);
    }
    *bytes += step;
    *n -= step;
    f->read += step;
    if (f->read == kLengthSize + f->length) {
      f->read = 0;
      return Step::kMessage;
    }
  }
  return Step::kMore;
}

void StreamAnswerCheck::sent(const iovec* iov, int count, size_t written) {
  for (int i = 0; i < count && written > 0; ++i) {
    const auto* bytes = static_cast<const unsigned char*>(iov[i].iov_base);
    size_t n = std::min(iov[i].iov_len, written);
    written -= n;
    while (n > 0) {
      const Step step = take(&out_, &bytes, &n);
      if (step == Step::kLength && out_.length == 0) out_.read = 0;
      if (step == Step::kMessage && out_.length >= 2) sent_.push_back(idOf(out_));
    }
  }
}

bool StreamAnswerCheck::received(const unsigned char* bytes, size_t n) {
  while (n > 0 && !malformed_) {
    const Step step = take(&in_, &bytes, &n);
    if (step == Step::kLength && in_.length < kHeaderSize) {
      malformed_ = true;
    } else if (step == Step::kMessage) {
      const bool asked = std::find(sent_.begin(), sent_.end(), idOf(in_)) != sent_.end();
      if ((in_.head[2] & kResponse) == 0 || !asked) malformed_ = true;
    }
  }
  return !malformed_;
}

}  // namespace libnet::dns
