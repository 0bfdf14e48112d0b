// without_io_uring: runs a program as on a kernel without io_uring.
//
//   without_io_uring PROGRAM [ARGS...]
//
// Installs a seccomp filter that fails io_uring_setup(2) with ENOSYS (what a
// kernel built without io_uring answers), then executes PROGRAM, which
// inherits the filter, as do its children. tools/test.sh runs the C++ test
// suite under it once (bazel test --run_under), so every test instantiated
// for the io_uring backend must skip with the probe's reason, and the epoll
// half and the kAuto fallback must still pass. Exit 126 if the filter cannot
// be installed, 127 if PROGRAM cannot be executed.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

namespace {

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "without_io_uring: add this architecture's AUDIT_ARCH value"
#endif

bool denyIoUringSetup() {
  sock_filter filter[] = {
      // Another architecture's system call numbers mean other calls: allow.
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  // Lets an unprivileged process install a filter; it cannot gain
  // privileges through exec afterwards, which no test needs.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: without_io_uring PROGRAM [ARGS...]\n");
    return 2;
  }
  if (!denyIoUringSetup()) {
    std::fprintf(stderr, "without_io_uring: seccomp filter: %s\n", std::strerror(errno));
    return 126;
  }
  ::execvp(argv[1], argv + 1);
  std::fprintf(stderr, "without_io_uring: %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
