// CurrentThread: the calling thread's kernel thread id (gettid), cached per
// thread so that hot paths (log lines, loop-thread checks) make no syscall.
#pragma once

#include <sys/types.h>

namespace libnet::CurrentThread {

namespace detail {
extern thread_local pid_t t_cachedTid;
pid_t cacheTid();
}  // namespace detail

inline pid_t tid() {
  if (__builtin_expect(detail::t_cachedTid == 0, 0)) return detail::cacheTid();
  return detail::t_cachedTid;
}

}  // namespace libnet::CurrentThread
