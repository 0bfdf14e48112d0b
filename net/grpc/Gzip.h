// gzip (RFC 1952) on zlib, for messages whose grpc-encoding is "gzip". Each
// call is a whole message: no state is kept between calls; any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace libnet::grpc {

// One gzip member holding `data` (zlib's default level).
[[nodiscard]] std::string gzipCompress(std::string_view data);

// The bytes of the gzip data `data` (one member, or several one after the
// other, as RFC 1952 allows), or nullopt: not gzip, corrupt, cut short,
// followed by anything but another member, or larger than `maxOutput`
// bytes. *tooLarge (when not null) is set to whether the size was the
// reason.
//
// Memory: the output string is allocated once, at its final size, never
// grown by copying. A member announcing its true size (in its trailer, as
// every encoder writes it) is inflated in one pass; otherwise the output is
// first counted in a 16 KiB chunk and then inflated again. Inflating stops as
// soon as the output passes `maxOutput`, so a small input that inflates
// hugely (a gzip bomb) costs at most maxOutput bytes (when its trailer tells
// the truth) or one chunk (when it lies), plus zlib's own state (about 40
// KiB), and at most maxOutput bytes of inflating per pass.
[[nodiscard]] std::optional<std::string> gzipDecompress(std::string_view data, size_t maxOutput,
                                                        bool* tooLarge);

}  // namespace libnet::grpc
