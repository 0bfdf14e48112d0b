#include "net/grpc/Metadata.h"

namespace libnet::grpc {

const std::string* findMetadata(const Metadata& metadata, std::string_view key) {
  for (const auto& [name, value] : metadata) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

}  // namespace libnet::grpc
