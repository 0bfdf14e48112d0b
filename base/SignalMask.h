// Signal masks of the threads the library starts. A signal sent to the
// process (kill, Ctrl-C, a service manager's SIGTERM) goes to one thread
// that does not block it, chosen by the kernel. The library's threads (event
// loop threads, the asynchronous log writer, the io_uring probe) block every
// asynchronous signal, so such a signal only ever reaches the application's
// own threads, the main thread normally, where a handler or a SignalSet
// (net/SignalSet.h) takes it. The set is blocked from a thread's first
// instruction: its creator blocks it around std::thread's constructor
// (BlockAsyncSignals), and the new thread inherits the mask.
//
// Left unblocked: the synchronous signals, which a fault in the thread
// itself raises and which a blocked mask would turn into a silent kill
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS), and SIGPIPE,
// which a thread raises on itself by writing to a closed pipe or socket (so
// blocking it would redirect nothing, and the sendfile path's own handling
// of it, net/poller/SendFile.cc, stays as cheap as it is).
// SIGPROF too: a CPU profiler's timer (setitimer(ITIMER_PROF), as
// gperftools' ProfilerStart() arms it) sends it to the thread whose CPU time
// ran the interval out, and the sample is that thread's stack; blocked in
// the loop threads, it would go to an idle thread and the profile would
// show the main thread waiting instead of the loops' work (net/inspect/).
// Without a profiler running nothing sends it.
#pragma once

#include <signal.h>

namespace libnet {

// Whether `signo` is raised by the thread itself on a fault (see above).
[[nodiscard]] bool isSynchronousSignal(int signo);

// Every signal but the synchronous ones, SIGPIPE and SIGPROF.
[[nodiscard]] sigset_t asyncSignals();

// Blocks asyncSignals() in the calling thread, for good. For a thread of
// the application's that should leave process signals to the others.
// Throws std::system_error if pthread_sigmask fails.
void blockAsyncSignalsInThisThread();

// Blocks asyncSignals() in the calling thread for its scope and restores the
// mask it had: a thread started inside the scope starts with them blocked.
// Never throws (pthread_sigmask fails only for a bad argument).
class BlockAsyncSignals {
 public:
  BlockAsyncSignals();
  ~BlockAsyncSignals();
  BlockAsyncSignals(const BlockAsyncSignals&) = delete;
  BlockAsyncSignals& operator=(const BlockAsyncSignals&) = delete;

 private:
  sigset_t saved_;
};

}  // namespace libnet
