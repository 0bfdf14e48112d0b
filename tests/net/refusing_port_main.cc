// refusing_port_main: runs a command against a loopback port that refuses
// connections, for the shell tests of the clients' connect-failure path.
//
//   refusing_port_main PROGRAM [ARG...]
//
// Binds a TCP socket to 127.0.0.1 port 0 and does not listen on it: Linux
// answers a SYN to a bound, non-listening port with a reset, and no other
// socket can take the port while this one holds it, so the refusal is
// certain for the whole run (closing a probe socket and reusing its port
// would race with the rest of the machine). Prints "port N" on stdout, then
// runs PROGRAM with every "{port}" in its arguments replaced by N; the
// socket is close-on-exec, so PROGRAM does not hold it.
//
// Exit status: PROGRAM's, or 128 + the signal that killed it; 2 for bad
// arguments, 3 if the port or the child cannot be set up (stderr says why).

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/UniqueFd.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitSetup = 3;

int setupError(const char* what) {
  std::fprintf(stderr, "refusing_port_main: %s: %s\n", what, std::strerror(errno));
  return kExitSetup;
}

std::string substitutePort(std::string arg, const std::string& port) {
  static constexpr std::string_view kPlaceholder = "{port}";
  for (size_t at = arg.find(kPlaceholder); at != std::string::npos;
       at = arg.find(kPlaceholder, at + port.size())) {
    arg.replace(at, kPlaceholder.size(), port);
  }
  return arg;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: refusing_port_main PROGRAM [ARG...]\n");
    return kExitUsage;
  }
  libnet::UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket) return setupError("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  if (::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return setupError("bind 127.0.0.1:0");
  }
  socklen_t length = sizeof address;
  if (::getsockname(socket.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    return setupError("getsockname");
  }
  const std::string port = std::to_string(ntohs(address.sin_port));
  std::printf("port %s\n", port.c_str());
  // Before the fork: the child must not print a second copy of the buffer.
  std::fflush(stdout);

  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.push_back(substitutePort(argv[i], port));
  std::vector<char*> childArgv;
  for (std::string& arg : args) childArgv.push_back(arg.data());
  childArgv.push_back(nullptr);

  const pid_t child = ::fork();
  if (child < 0) return setupError("fork");
  if (child == 0) {
    ::execvp(childArgv[0], childArgv.data());
    std::fprintf(stderr, "refusing_port_main: exec %s: %s\n", childArgv[0], std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return setupError("waitpid");
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
