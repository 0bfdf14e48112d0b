// Utf8Validator: an incremental UTF-8 validator (RFC 3629) for text
// messages that arrive in fragments. The decoding state is carried across
// feed() calls, so a code point split between two frames is accepted, and an
// invalid sequence is reported by the first feed() whose bytes prove it
// (a truncated sequence only by complete()). Overlong forms, surrogates
// (U+D800..U+DFFF) and code points above U+10FFFF are invalid. Runs of ASCII
// are checked eight bytes at a time.
// One per message stream; not thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace libnet::ws {

class Utf8Validator {
 public:
  // Checks the next bytes. false once the input so far cannot be the start
  // of valid UTF-8; it stays false until reset().
  [[nodiscard]] bool feed(std::string_view bytes);
  // Whether everything fed so far is valid UTF-8 that ends on a code point
  // boundary.
  [[nodiscard]] bool complete() const { return state_ == kAccept; }
  [[nodiscard]] bool failed() const { return state_ == kReject; }
  void reset() { state_ = kAccept; }

  // One-shot check of a whole string.
  [[nodiscard]] static bool isValid(std::string_view bytes);

  // DFA states (Hoehrmann's decoder): kAccept between code points, kReject
  // for good; others are inside a sequence.
  static constexpr uint8_t kAccept = 0;
  static constexpr uint8_t kReject = 12;

 private:
  uint8_t state_ = kAccept;
};

}  // namespace libnet::ws
