// ProfileSignal: CPU profiles of a running server on a signal, for servers
// without the inspector (Inspector.h): the first SIGUSR1 starts a profile
// to DIR/PROGRAM-PID-N.prof (N counts this process's profiles from 1), the
// next one stops it; each logged at INFO with the file's path. The file is
// the operator's: it stays after the profile (google-pprof --text BINARY
// FILE reads it). A start that fails (another profile runs, say the
// inspector's; the file cannot be made) is logged at WARN and the next
// signal tries again.
//
// The signal is read on the loop (a SignalSet), so everything here runs on
// the loop's thread: construct and destroy it there, before the server's
// threads start (as any SignalSet). Destroying it stops a profile it
// started (the file complete).
#pragma once

#include <signal.h>

#include <string>

#include "net/SignalSet.h"

namespace libnet {
class EventLoop;
}

namespace libnet::inspect {

class ProfileSignal {
 public:
  struct Options {
    // Where the files go: an existing directory.
    std::string directory = ".";
    // The files' PROGRAM: say "http_server". Empty: the process's short
    // name (program_invocation_short_name).
    std::string program{};
    int signal = SIGUSR1;
  };

  // Throws std::invalid_argument if the directory is not one (or the
  // signal cannot be taken, as SignalSet throws).
  ProfileSignal(EventLoop* loop, Options options);
  ~ProfileSignal();
  ProfileSignal(const ProfileSignal&) = delete;
  ProfileSignal& operator=(const ProfileSignal&) = delete;

  // The file being written, "" when no profile of ours runs. Loop thread.
  [[nodiscard]] const std::string& currentFile() const { return file_; }

 private:
  void toggle();

  const Options options_;
  int profiles_ = 0;  // started so far
  std::string file_;
  SignalSet signals_;
};

}  // namespace libnet::inspect
