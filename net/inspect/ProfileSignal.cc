#include "net/inspect/ProfileSignal.h"

#include <errno.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <utility>

#include "base/Logging.h"
#include "net/inspect/CpuProfiler.h"

namespace libnet::inspect {

namespace {

ProfileSignal::Options checked(ProfileSignal::Options options) {
  std::error_code ec;
  if (options.directory.empty() || !std::filesystem::is_directory(options.directory, ec)) {
    throw std::invalid_argument("ProfileSignal: '" + options.directory + "' is not a directory");
  }
  if (options.program.empty()) options.program = program_invocation_short_name;
  return options;
}

}  // namespace

ProfileSignal::ProfileSignal(EventLoop* loop, Options options)
    : options_(checked(std::move(options))),
      signals_(loop, {options_.signal}, [this](int) { toggle(); }) {}

ProfileSignal::~ProfileSignal() {
  if (!file_.empty() && CpuProfiler::stop(file_)) {
    LOG_INFO << "CPU profile stopped (shutting down): " << file_;
  }
}

void ProfileSignal::toggle() {
  const char* name = ::sigabbrev_np(options_.signal);
  if (!file_.empty()) {
    CpuProfiler::stop(file_);
    LOG_INFO << "SIG" << name << ": CPU profile written to " << file_;
    file_.clear();
    return;
  }
  const std::string file = options_.directory + "/" + options_.program + "-" +
                           std::to_string(::getpid()) + "-" + std::to_string(profiles_ + 1) +
                           ".prof";
  if (std::string why = CpuProfiler::start(file, std::string("SIG") + name); !why.empty()) {
    LOG_WARN << "SIG" << name << ": no CPU profile: " << why;
    return;
  }
  ++profiles_;
  file_ = file;
  LOG_INFO << "SIG" << name << ": CPU profile started, to " << file_ << " (SIG" << name
           << " again stops it)";
}

}  // namespace libnet::inspect
