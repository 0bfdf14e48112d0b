// Command-line handling shared by pingpong_server and pingpong_client:
// "[--backend epoll|uring|auto] [--log-dir DIR] [--coro] [--tls-cert FILE
// --tls-key FILE | --tls-ca FILE] POSITIONAL..." with --help.
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
  std::string logDir;  // empty: log to stderr
  bool coro = false;   // --coro: the coroutine layer instead of callbacks
  // TLS: a server's certificate chain and key, a client's CA file (each
  // turns TLS on); empty: plain TCP.
  std::string tlsCert;
  std::string tlsKey;
  std::string tlsCa;
  std::vector<std::string> positional;
  bool help = false;
  std::string error;  // non-empty: bad command line
};

// "--name VALUE" or "--name=VALUE": returns true and sets *value when `arg`
// is option `name` (advancing *i past a separate value).
inline bool takeOption(std::string_view arg, std::string_view name, int* i, int argc, char* argv[],
                       std::string_view* value, std::string* error) {
  if (!arg.starts_with(name)) return false;
  if (arg.size() > name.size() && arg[name.size()] == '=') {
    *value = arg.substr(name.size() + 1);
  } else if (arg.size() == name.size() && *i + 1 < argc) {
    *value = argv[++*i];
  } else if (arg.size() == name.size()) {
    *error = "option " + std::string(name) + " needs a value";
  } else {
    return false;  // a longer option that merely starts with `name`
  }
  if (error->empty() && value->empty()) *error = "option " + std::string(name) + " needs a value";
  return true;
}

// acceptsLogDir / acceptsCoro: whether --log-dir / --coro is an option of
// this program. Every program takes the TLS options; which of them a program
// uses (and needs together) it checks itself.
inline Args parseArgs(int argc, char* argv[], size_t positionalCount, bool acceptsLogDir = false,
                      bool acceptsCoro = false) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      args.help = true;
      return args;
    }
    std::string_view value;
    if (takeOption(arg, "--backend", &i, argc, argv, &value, &args.error)) {
      if (!args.error.empty()) return args;
      auto kind = parsePollerKind(value);
      if (!kind) {
        args.error = "unknown backend '" + std::string(value) + "' (epoll, uring or auto)";
        return args;
      }
      args.backend = *kind;
      continue;
    }
    if (acceptsLogDir && takeOption(arg, "--log-dir", &i, argc, argv, &value, &args.error)) {
      if (!args.error.empty()) return args;
      args.logDir = std::string(value);
      continue;
    }
    std::string* tlsFile = nullptr;
    if (takeOption(arg, "--tls-cert", &i, argc, argv, &value, &args.error))
      tlsFile = &args.tlsCert;
    else if (takeOption(arg, "--tls-key", &i, argc, argv, &value, &args.error))
      tlsFile = &args.tlsKey;
    else if (takeOption(arg, "--tls-ca", &i, argc, argv, &value, &args.error))
      tlsFile = &args.tlsCa;
    if (tlsFile) {
      if (!args.error.empty()) return args;
      *tlsFile = std::string(value);
      continue;
    }
    if (acceptsCoro && arg == "--coro") {
      args.coro = true;
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
