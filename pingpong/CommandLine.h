// CommandLine: the one command-line parser of every ping-pong peer program:
// libnet's pingpong_server, coro_pingpong_server and pingpong_client (through
// pingpong/Args.h), and the asio (callbacks, coroutines, TLS), libevent and
// floor peers (through pingpong/floor/PingpongArgs.h). It splits a command
// line into the options a program declares and its positional arguments;
// what the positional arguments mean, and which values are valid, each of
// those two layers checks itself.
//
// Header-only plain C++ with no dependencies, so that any peer's Bazel target
// can use it. Plain functions and aggregates; no state, callable from any
// thread.
#pragma once

#include <charconv>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

// Its own namespace: libnet's peers say `using namespace libnet;`, which
// would make a name in ::pingpong clash with libnet::pingpong.
namespace cmdline {

// One option a program takes: "--name VALUE" or "--name=VALUE" into *value,
// or, with `flag` set instead, a bare "--name" that sets *flag.
struct Option {
  std::string_view name;
  std::string* value = nullptr;
  bool* flag = nullptr;
};

struct CommandLine {
  std::vector<std::string> positional;
  bool help = false;  // --help or -h stood anywhere on the line
  std::string error;  // non-empty: a bad option (the positional ones unchecked)
};

namespace detail {

inline const Option* findOption(std::span<const Option> options, std::string_view name) {
  for (const Option& option : options) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

// Sets the option argv[*i] names, advancing *i past a separate value; returns
// the problem, or an empty string.
inline std::string takeOption(std::span<const Option> options, int argc, char* const* argv,
                              int* i) {
  const std::string_view arg = argv[*i];
  const size_t eq = arg.find('=');
  const std::string_view name = arg.substr(0, eq);
  const Option* option = findOption(options, name);
  if (option == nullptr) return "unknown option '" + std::string(arg) + "'";
  if (option->flag != nullptr) {
    if (eq != std::string_view::npos) return "option " + std::string(name) + " takes no value";
    *option->flag = true;
    return {};
  }
  std::string_view value;
  if (eq != std::string_view::npos) {
    value = arg.substr(eq + 1);
  } else if (*i + 1 < argc && !std::string_view(argv[*i + 1]).starts_with("--")) {
    value = argv[++*i];
  }
  if (value.empty()) return "option " + std::string(name) + " needs a value";
  *option->value = std::string(value);
  return {};
}

}  // namespace detail

// Options may stand before, after or among the positional arguments; an
// option's value never starts with "--". --help or -h anywhere wins over any
// problem. Parsing stops at the first unknown option or missing value.
inline CommandLine parseCommandLine(int argc, char* const* argv, std::span<const Option> options) {
  CommandLine line;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      line.help = true;
      return line;
    }
  }
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with("--")) {
      line.positional.emplace_back(arg);
      continue;
    }
    line.error = detail::takeOption(options, argc, argv, &i);
    if (!line.error.empty()) return line;
  }
  return line;
}

// A whole number in [min, max], or nullopt.
inline std::optional<long> parseNumber(std::string_view text, long min, long max) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace cmdline
