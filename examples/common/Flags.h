// Flags: the command-line parser of the example programs. Options are
// "--name VALUE" or "--name=VALUE"; each is bound to a variable that holds
// its default, and checked as it is read (a port is 0..65535, a count is in
// its range, a directory exists), so a bad value is reported by name before
// anything starts. --help / -h prints the usage.
//
// Single-threaded use, from main() before anything starts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/InetAddress.h"
#include "net/PollerKind.h"
#include "net/SocketAddress.h"

namespace libnet {

class Flags {
 public:
  static constexpr int kExitUsage = 2;

  // `usage` is printed for --help (to stdout) and after an unknown option
  // (to stderr).
  Flags(std::string program, std::string usage);

  // A numeric IPv4 or IPv6 address (combine it with the port afterwards:
  // InetAddress::parse(*target, port) then always succeeds).
  void addAddress(std::string name, std::string* target);
  void addPort(std::string name, uint16_t* target);
  // A numeric address with its port: "127.0.0.1:53", "[::1]:53".
  void addAddressPort(std::string name, std::optional<InetAddress>* target);
  // A Unix domain socket: a path, or "@name" for an abstract name (checked:
  // not empty, within sun_path's length).
  void addUnixSocket(std::string name, std::optional<SocketAddress>* target);
  void addInt(std::string name, int* target, int min, int max);
  // An existing directory (an empty value is refused).
  void addDirectory(std::string name, std::string* target);
  // An existing regular file (readable by name; opening it is the user's).
  void addFile(std::string name, std::string* target);
  // epoll | uring | auto.
  void addBackend(std::string name, PollerKind* target);
  // A switch: "--name" alone sets *target (no value follows it).
  void addSwitch(std::string name, bool* target);
  // Any other check: `set` returns an error message, or "" when it took the value.
  using Setter = std::function<std::string(std::string_view)>;
  void addCustom(std::string name, Setter set) { add(std::move(name), std::move(set)); }
  // Arguments that are not options ("NAME..."), in order; without this, one
  // is reported as an unknown option.
  void setPositional(std::vector<std::string>* target) { positional_ = target; }
  // Options that cannot be given together ("--unix" names the server instead
  // of "--address"): both given is a usage error naming them.
  void exclude(std::string a, std::string b) {
    exclusive_.emplace_back(std::move(a), std::move(b));
  }

  // nullopt: go on. Otherwise the exit status to return now (0 after --help,
  // kExitUsage after a bad option, with the reason printed to stderr).
  [[nodiscard]] std::optional<int> parse(int argc, char* argv[]);

 private:
  struct Option {
    std::string name;
    Setter set;
    bool isSwitch = false;
  };

  void add(std::string name, Setter set);

  std::string program_;
  std::string usage_;
  std::vector<Option> options_;
  std::vector<std::string>* positional_ = nullptr;
  std::vector<std::pair<std::string, std::string>> exclusive_;
};

}  // namespace libnet
