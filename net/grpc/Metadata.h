// grpc::Metadata: the custom key/value pairs of a call, in order, as sent.
// Keys are lower case ASCII (`[0-9a-z_.-]`), not starting with "grpc-" (the
// protocol's own) nor ":"; values of keys ending in "-bin" are any bytes
// (base64 on the wire, decoded here), other values printable ASCII.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace libnet::grpc {

using Metadata = std::vector<std::pair<std::string, std::string>>;

// The first value of `key`, or null.
[[nodiscard]] const std::string* findMetadata(const Metadata& metadata, std::string_view key);

}  // namespace libnet::grpc
