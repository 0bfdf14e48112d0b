#include "net/poller/PollerEnvironment.h"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/Logging.h"

namespace libnet {

namespace {

// A number from the environment variable `name`; nullopt if unset or empty,
// and, with a warning, if it is not a number.
std::optional<uint32_t> environmentNumber(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return std::nullopt;
  uint32_t value = 0;
  const std::string_view text(env);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    LOG_WARN << name << "='" << text << "' is not a number; ignored";
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<PollerKind> environmentPollerKind() {
  static const std::optional<PollerKind> kind = []() -> std::optional<PollerKind> {
    const char* env = std::getenv("LIBNET_POLLER");
    if (env == nullptr || *env == '\0') return std::nullopt;
    auto parsed = parsePollerKind(env);
    if (!parsed) {
      LOG_ERROR << "LIBNET_POLLER='" << env
                << "' is not one of epoll, uring, auto; using the program's choice";
    }
    return parsed;
  }();
  return kind;
}

IoUringOptions withEnvironment(IoUringOptions options) {
  if (options.sqPollIdleMs == 0) {
    options.sqPollIdleMs = environmentNumber("LIBNET_URING_SQPOLL_IDLE_MS").value_or(0);
  }
  if (options.fixedFiles == IoUringOptions::kDefaultFixedFiles) {
    options.fixedFiles = environmentNumber("LIBNET_URING_FIXED_FILES").value_or(options.fixedFiles);
  }
  return options;
}

}  // namespace libnet
