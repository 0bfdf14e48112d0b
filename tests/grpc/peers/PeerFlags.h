// The command line of the grpc++ interop peers, in the form grpc's interop
// clients and servers take: --name=value or --name value, booleans as
// true/false. Unknown flags and malformed values are errors (the peers exit 2).
#pragma once

#include <map>
#include <string>

namespace peers {

class PeerFlags {
 public:
  // `known` maps each accepted flag (without "--") to its default.
  // Throws std::invalid_argument on an unknown flag or a missing value.
  PeerFlags(int argc, char** argv, std::map<std::string, std::string> known);

  const std::string& get(const std::string& name) const;
  int getInt(const std::string& name) const;
  bool getBool(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace peers
