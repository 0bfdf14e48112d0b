// Command-line handling shared by pingpong_server and pingpong_client:
// "[--backend epoll|uring|auto] POSITIONAL..." with --help.
#pragma once

#include <charconv>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net/PollerKind.h"

namespace libnet::pingpong {

struct Args {
  PollerKind backend = PollerKind::kAuto;
  std::vector<std::string> positional;
  bool help = false;
  std::string error;  // non-empty: bad command line
};

inline Args parseArgs(int argc, char* argv[], size_t positionalCount) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
      return args;
    }
    if (arg.starts_with("--backend")) {
      std::string_view value;
      if (arg.size() > 9 && arg[9] == '=') {
        value = arg.substr(10);
      } else if (arg.size() == 9 && i + 1 < argc) {
        value = argv[++i];
      } else {
        args.error = "option --backend needs a value (epoll, uring or auto)";
        return args;
      }
      auto kind = parsePollerKind(value);
      if (!kind) {
        args.error = "unknown backend '" + std::string(value) + "' (epoll, uring or auto)";
        return args;
      }
      args.backend = *kind;
      continue;
    }
    if (arg.starts_with("--")) {
      args.error = "unknown option '" + std::string(arg) + "'";
      return args;
    }
    args.positional.emplace_back(arg);
  }
  if (args.positional.size() != positionalCount) {
    args.error = "expected " + std::to_string(positionalCount) + " arguments, got " +
                 std::to_string(args.positional.size());
  }
  return args;
}

// A whole number in [min, max] from text.
inline std::optional<long> parseNumber(std::string_view text, long min, long max) {
  long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace libnet::pingpong
