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
// bytes. The output grows a bounded chunk at a time and inflating stops as
// soon as it would pass `maxOutput`, so a small input that inflates hugely
// (a gzip bomb) never costs more than maxOutput plus one chunk. *tooLarge
// (when not null) is set to whether the size was the reason.
[[nodiscard]] std::optional<std::string> gzipDecompress(std::string_view data, size_t maxOutput,
                                                        bool* tooLarge);

}  // namespace libnet::grpc
