#include "base/CurrentThread.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace libnet::CurrentThread::detail {

thread_local pid_t t_cachedTid = 0;

pid_t cacheTid() {
  t_cachedTid = static_cast<pid_t>(::syscall(SYS_gettid));
  return t_cachedTid;
}

}  // namespace libnet::CurrentThread::detail
