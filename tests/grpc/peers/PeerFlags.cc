#include "tests/grpc/peers/PeerFlags.h"

#include <cstdlib>
#include <stdexcept>
#include <string_view>

namespace peers {

PeerFlags::PeerFlags(int argc, char** argv, std::map<std::string, std::string> known)
    : values_(std::move(known)) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--") {
      throw std::invalid_argument("unexpected argument '" + std::string(arg) + "'");
    }
    arg.remove_prefix(2);
    std::string name, value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      name = arg;
      if (i + 1 >= argc) throw std::invalid_argument("--" + name + " needs a value");
      value = argv[++i];
    }
    auto it = values_.find(name);
    if (it == values_.end()) throw std::invalid_argument("unknown flag --" + name);
    it->second = value;
  }
}

const std::string& PeerFlags::get(const std::string& name) const { return values_.at(name); }

int PeerFlags::getInt(const std::string& name) const {
  const std::string& text = get(name);
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 65535) {
    throw std::invalid_argument("--" + name + " '" + text + "': not a port number");
  }
  return static_cast<int>(value);
}

bool PeerFlags::getBool(const std::string& name) const {
  const std::string& text = get(name);
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0" || text.empty()) return false;
  throw std::invalid_argument("--" + name + " '" + text + "': true or false");
}

}  // namespace peers
