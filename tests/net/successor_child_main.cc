// successor_child_main MODE OUTFILE: the successor that SuccessorTest starts.
//   ready    takes its listening sockets (net/ListenFds.h), writes its open
//            fds to OUTFILE ("0 1 2 3 ..."), says READY, then answers one
//            connection on each socket with "child PID\n" and exits 0
//   exit     exits 3 without a word
//   hang     waits until it is killed (SIGTERM kills it)
//   stubborn ignores SIGTERM, waits until it is killed
//   drain    says READY, then exits 7 on SIGTERM (as a server that drains)
//   garbage  writes "NOPE!!\n" to the readiness pipe
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/UniqueFd.h"
#include "net/ListenFds.h"
#include "net/Successor.h"

namespace {

std::set<int> openFds() {
  std::set<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return fds;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') fds.insert(std::atoi(entry->d_name));
  }
  fds.erase(::dirfd(dir));
  ::closedir(dir);
  return fds;
}

// One connection on `listening` (bounded: 10 s), answered with our pid.
bool answerOne(int listening) {
  pollfd p{listening, POLLIN, 0};
  if (::poll(&p, 1, 10000) != 1) return false;
  libnet::UniqueFd conn(::accept4(listening, nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return false;
  const std::string line = "child " + std::to_string(::getpid()) + "\n";
  return ::write(conn.get(), line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

int ready(const char* outFile) {
  {
    const std::set<int> fds = openFds();  // before the file's own fd
    std::ofstream out(outFile);
    bool first = true;
    for (const int fd : fds) {
      out << (first ? "" : " ") << fd;
      first = false;
    }
  }
  const std::vector<libnet::UniqueFd> sockets = libnet::takeListenFds();
  if (sockets.empty()) return 4;
  if (!libnet::Successor::notifyReady()) return 5;
  for (const libnet::UniqueFd& fd : sockets) {
    if (!answerOne(fd.get())) return 6;
  }
  return 0;
}

}  // namespace

// Ready, then exits 7 on SIGTERM, blocked first so that it cannot kill us
// between READY and the wait.
int drain() {
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &term, nullptr);
  if (!libnet::Successor::notifyReady()) return 5;
  int signo = 0;
  ::sigwait(&term, &signo);
  return 7;
}

int main(int argc, char* argv[]) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: successor_child_main ready|exit|hang|stubborn|drain|garbage OUTFILE\n");
    return 2;
  }
  const std::string_view mode = argv[1];
  if (mode == "ready") return ready(argv[2]);
  if (mode == "exit") return 3;
  if (mode == "hang") {
    for (;;) ::pause();
  }
  if (mode == "stubborn") {
    ::signal(SIGTERM, SIG_IGN);
    for (;;) ::pause();
  }
  if (mode == "drain") return drain();
  if (mode == "garbage") {
    const char* fd = std::getenv("LIBNET_READY_FD");
    if (!fd) return 4;
    return ::write(std::atoi(fd), "NOPE!!\n", 7) == 7 ? 0 : 5;
  }
  return 2;
}
