// protoc-gen-libnet: protoc runs it as `--plugin=protoc-gen-libnet=PATH
// --libnet_out=DIR`; it reads the request from stdin and answers on stdout.
#include <google/protobuf/compiler/plugin.h>

#include "net/grpc/plugin/LibnetGenerator.h"

int main(int argc, char* argv[]) {
  libnet::grpc::plugin::LibnetGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
