#include "net/inspect/CpuProfiler.h"

#include <gperftools/profiler.h>

#include "base/Mutex.h"
#include "base/ThreadAnnotations.h"

namespace libnet::inspect {

namespace {

struct State {
  Mutex mutex;
  std::string path LIBNET_GUARDED_BY(mutex);  // "" while none runs
  std::string owner LIBNET_GUARDED_BY(mutex);
};

State& state() {
  static State* const instance = new State;  // never destroyed: usable at exit
  return *instance;
}

}  // namespace

std::string CpuProfiler::start(const std::string& path, const std::string& owner) {
  State& s = state();
  MutexLock lock(s.mutex);
  if (!s.path.empty()) {
    return "a CPU profile is already being taken (by " + s.owner + ", to " + s.path + ")";
  }
  if (path.empty()) return "no file named for the profile";
  if (ProfilerStart(path.c_str()) == 0) {
    return "the profiler could not start writing to " + path;
  }
  s.path = path;
  s.owner = owner;
  return std::string();
}

bool CpuProfiler::stop(const std::string& path) {
  State& s = state();
  MutexLock lock(s.mutex);
  if (s.path.empty() || s.path != path) return false;
  // Stops the timer and writes what is buffered, then closes the file.
  ProfilerStop();
  s.path.clear();
  s.owner.clear();
  return true;
}

bool CpuProfiler::running() {
  State& s = state();
  MutexLock lock(s.mutex);
  return !s.path.empty();
}

std::string CpuProfiler::currentPath() {
  State& s = state();
  MutexLock lock(s.mutex);
  return s.path;
}

}  // namespace libnet::inspect

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer: libprofiler is not instrumented, and hands its sample
// buffers between its SIGPROF handler and ProfilerStop() with a protocol of
// its own (the handler is disabled before the buffers are flushed), which
// ThreadSanitizer cannot see: it takes the handler's memcpy and the flush's
// write() for races and, halting on the first report, kills the server
// mid-profile. What libprofiler calls is left unchecked; libnet's own code
// is checked as everywhere.
extern "C" const char* __tsan_default_suppressions() { return "called_from_lib:libprofiler.so\n"; }
#endif
