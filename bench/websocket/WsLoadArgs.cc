#include "bench/websocket/WsLoadArgs.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace wsload {
namespace {

constexpr const char* kUsage =
    "usage: ws_load --server IP:PORT -c CONNS -d SECS --size BYTES [--text] [--deflate]\n"
    "               [--verify] [--warmup SECS]\n";

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "ws_load: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

long wholeNumber(std::string_view option, std::string_view text, long min, long max) {
  long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < min ||
      value > max) {
    fail(std::string(option) + ": bad value '" + std::string(text) + "'");
  }
  return value;
}

double seconds(std::string_view option, const std::string& text, double min) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= min) || value > 86400) {
    fail(std::string(option) + ": bad value '" + text + "'");
  }
  return value;
}

void setServer(const std::string& text, WsLoadArgs* args) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) fail("--server needs IP:PORT");
  args->host = text.substr(0, colon);
  in_addr addr{};
  if (inet_pton(AF_INET, args->host.c_str(), &addr) != 1) {
    fail("--server: '" + args->host + "' is not a numeric IPv4 address");
  }
  args->port = static_cast<uint16_t>(
      wholeNumber("--server", std::string_view(text).substr(colon + 1), 1, 65535));
}

// Applies option `name` with `value`; false if the option is unknown.
bool setValue(std::string_view name, const std::string& value, WsLoadArgs* args) {
  if (name == "--server") {
    setServer(value, args);
  } else if (name == "-c" || name == "--conns") {
    args->conns = static_cast<int>(wholeNumber(name, value, 1, 100000));
  } else if (name == "-d" || name == "--seconds") {
    args->seconds = seconds(name, value, 0.001);
  } else if (name == "--warmup") {
    args->warmup = seconds(name, value, 0);
  } else if (name == "--size") {
    args->size = static_cast<size_t>(wholeNumber(name, value, 1, 8 << 20));
  } else {
    return false;
  }
  return true;
}

bool setFlag(std::string_view name, WsLoadArgs* args) {
  bool* flag = name == "--text"      ? &args->text
               : name == "--deflate" ? &args->deflate
               : name == "--verify"  ? &args->verify
                                     : nullptr;
  if (flag == nullptr) return false;
  *flag = true;
  return true;
}

}  // namespace

WsLoadArgs parseWsLoadArgs(int argc, char** argv) {
  WsLoadArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (setFlag(arg, &args)) continue;
    if (i + 1 >= argc) fail("unknown option or missing value: '" + std::string(arg) + "'");
    if (!setValue(arg, argv[i + 1], &args)) fail("unknown option '" + std::string(arg) + "'");
    ++i;
  }
  if (args.host.empty()) fail("--server is required");
  return args;
}

}  // namespace wsload
