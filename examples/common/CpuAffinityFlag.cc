#include "examples/common/CpuAffinityFlag.h"

#include <stdexcept>
#include <string>
#include <system_error>

#include "base/CpuAffinity.h"

namespace libnet {

void CpuAffinityFlag::addTo(Flags* flags) {
  flags->addCustom("--cpu-affinity", [this](std::string_view value) {
    try {
      std::vector<int> cpus = parseCpuList(value);
      checkCpus("CPU list \"" + std::string(value) + "\"", cpus);
      list_ = std::move(cpus);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  });
}

std::string CpuAffinityFlag::check(int threads) {
  mainLoop_.reset();
  ioLoops_.clear();
  if (list_.empty()) return "";
  const size_t loops = static_cast<size_t>(threads) + 1;
  if (list_.size() > loops) {
    return "--cpu-affinity: " + std::to_string(list_.size()) + " CPUs for " +
           std::to_string(loops) + " loop(s) (--threads " + std::to_string(threads) +
           " and the main loop)";
  }
  if (list_.size() == loops) {
    mainLoop_ = list_.front();
    ioLoops_.assign(list_.begin() + 1, list_.end());
  } else {
    ioLoops_ = list_;
  }
  return "";
}

std::string CpuAffinityFlag::pinMainLoop() const {
  if (mainLoop_) {
    try {
      pinCurrentThread(*mainLoop_);
    } catch (const std::system_error& e) {
      throw std::system_error(
          e.code(), "main loop: pthread_setaffinity_np to CPU " + std::to_string(*mainLoop_));
    }
  }
  if (list_.empty()) return "";
  std::string line = "cpu affinity: main loop ";
  line += mainLoop_ ? "on CPU " + std::to_string(*mainLoop_) : std::string("not pinned");
  if (!ioLoops_.empty()) line += ", I/O loops on CPUs " + formatCpuList(ioLoops_);
  return line;
}

}  // namespace libnet
