#include "examples/common/Flags.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <system_error>

#include "net/InetAddress.h"

namespace libnet {

Flags::Flags(std::string program, std::string usage)
    : program_(std::move(program)), usage_(std::move(usage)) {}

void Flags::add(std::string name, Setter set) {
  options_.push_back(Option{std::move(name), std::move(set)});
}

void Flags::addAddress(std::string name, std::string* target) {
  add(std::move(name), [target](std::string_view value) {
    if (!InetAddress::parse(value, 0)) {
      return "invalid address '" + std::string(value) +
             "' (expected a numeric IPv4 or IPv6 address)";
    }
    *target = std::string(value);
    return std::string();
  });
}

void Flags::addPort(std::string name, uint16_t* target) {
  add(std::move(name), [target](std::string_view value) {
    const auto port = InetAddress::parsePort(value);
    if (!port) return "invalid port '" + std::string(value) + "' (expected 0..65535)";
    *target = *port;
    return std::string();
  });
}

void Flags::addAddressPort(std::string name, std::optional<InetAddress>* target) {
  add(std::move(name), [target](std::string_view value) {
    const size_t colon = value.rfind(':');
    std::optional<InetAddress> address;
    if (colon != std::string_view::npos) {
      std::string_view host = value.substr(0, colon);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
      } else if (host.find(':') != std::string_view::npos) {
        host = {};  // an IPv6 address takes brackets before its port
      }
      if (const auto port = InetAddress::parsePort(value.substr(colon + 1))) {
        address = InetAddress::parse(host, *port);
      }
    }
    if (!address) {
      return "invalid address '" + std::string(value) +
             "' (expected ADDR:PORT, numeric: 127.0.0.1:53 or [::1]:53)";
    }
    *target = address;
    return std::string();
  });
}

void Flags::addUnixSocket(std::string name, std::optional<SocketAddress>* target) {
  add(std::move(name), [target](std::string_view value) {
    try {
      *target = SocketAddress::unixAddress(value);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  });
}

void Flags::addInt(std::string name, int* target, int min, int max) {
  add(std::move(name), [target, min, max](std::string_view value) {
    int parsed = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || parsed < min ||
        parsed > max) {
      return "invalid value '" + std::string(value) + "' (expected " + std::to_string(min) + ".." +
             std::to_string(max) + ")";
    }
    *target = parsed;
    return std::string();
  });
}

void Flags::addDirectory(std::string name, std::string* target) {
  add(std::move(name), [target](std::string_view value) {
    std::error_code ec;
    if (value.empty() || !std::filesystem::is_directory(std::string(value), ec)) {
      return "'" + std::string(value) + "' is not a directory";
    }
    *target = std::string(value);
    return std::string();
  });
}

void Flags::addFile(std::string name, std::string* target) {
  add(std::move(name), [target](std::string_view value) {
    std::error_code ec;
    if (value.empty() || !std::filesystem::is_regular_file(std::string(value), ec)) {
      return "'" + std::string(value) + "' is not a file";
    }
    *target = std::string(value);
    return std::string();
  });
}

void Flags::addBackend(std::string name, PollerKind* target) {
  add(std::move(name), [target](std::string_view value) {
    const auto kind = parsePollerKind(value);
    if (!kind) return "unknown backend '" + std::string(value) + "' (epoll, uring or auto)";
    *target = *kind;
    return std::string();
  });
}

void Flags::addSwitch(std::string name, bool* target) {
  add(std::move(name), [target](std::string_view value) {
    if (!value.empty()) return std::string("takes no value");
    *target = true;
    return std::string();
  });
  options_.back().isSwitch = true;
}

std::optional<int> Flags::parse(int argc, char* argv[]) {
  std::vector<std::string_view> given;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage_;
      return 0;
    }
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const Option* option = nullptr;
    for (const Option& candidate : options_) {
      if (candidate.name == name) option = &candidate;
    }
    if (option == nullptr && positional_ != nullptr && !arg.starts_with("-")) {
      positional_->emplace_back(arg);
      continue;
    }
    if (option == nullptr) {
      std::cerr << program_ << ": unknown option '" << arg << "'\n" << usage_;
      return kExitUsage;
    }
    if (!value && option->isSwitch) value = std::string_view();
    if (!value) {
      if (i + 1 >= argc) {
        std::cerr << program_ << ": option " << name << " needs a value (see --help)\n";
        return kExitUsage;
      }
      value = argv[++i];
    }
    if (const std::string error = option->set(*value); !error.empty()) {
      std::cerr << program_ << ": " << name << ": " << error << " (see --help)\n";
      return kExitUsage;
    }
    given.push_back(option->name);
  }
  const auto wasGiven = [&given](const std::string& n) {
    return std::find(given.begin(), given.end(), n) != given.end();
  };
  for (const auto& [a, b] : exclusive_) {
    if (wasGiven(a) && wasGiven(b)) {
      std::cerr << program_ << ": " << a << " and " << b
                << " cannot be given together (see --help)\n";
      return kExitUsage;
    }
  }
  return std::nullopt;
}

}  // namespace libnet
