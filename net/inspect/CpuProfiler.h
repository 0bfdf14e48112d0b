// CpuProfiler: gperftools' CPU profiler (ProfilerStart / ProfilerStop from
// libprofiler, Debian's libgoogle-perftools-dev) behind a guard, so that the
// process takes one profile at a time: gperftools keeps a single profile
// per process, and a second ProfilerStart() while one runs would fail or
// cut the first short. The inspector's /pprof/profile (Inspector.h) and the
// SIGUSR1 toggle (ProfileSignal.h) share it.
//
// A profile samples the whole process, every thread, at gperftools' rate
// (100 Hz, CPUPROFILE_FREQUENCY in the environment changes it), from a
// SIGPROF timer that runs only while a profile is being taken: not
// profiling costs nothing. The file is what google-pprof reads
// (`google-pprof --text BINARY FILE`).
//
// Any thread; a lock of its own, never held while a profile runs.
#pragma once

#include <string>

namespace libnet::inspect {

class CpuProfiler {
 public:
  CpuProfiler() = delete;

  // Starts a profile written to `path` (created or truncated). Returns ""
  // once it runs, else why not: another profile is being taken (its path
  // and by whom, as given to start()), or gperftools could not open the
  // file. `owner` says who asked, for that message ("the inspector",
  // "SIGUSR1").
  [[nodiscard]] static std::string start(const std::string& path, const std::string& owner);
  // Stops the profile being written to `path` and completes its file.
  // False (nothing done) when no profile runs to that path: one start()
  // never stops another's.
  static bool stop(const std::string& path);
  // Whether a profile runs now, and to where ("" if none).
  [[nodiscard]] static bool running();
  [[nodiscard]] static std::string currentPath();
};

}  // namespace libnet::inspect
