#include "net/UnixSocketFile.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <thread>

#include "base/Logging.h"
#include "base/UniqueFd.h"
#include "net/SocketAddress.h"

namespace libnet {

namespace {

[[noreturn]] void fail(int err, const std::string& what) {
  throw std::system_error(err, std::system_category(), what);
}

// connect()'s answer at `address`: 0 (a server accepted), or its errno.
int probe(const SocketAddress& address) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) fail(errno, "socket");
  return ::connect(fd.get(), address.sockAddr(), address.sockLen()) == 0 ? 0 : errno;
}

// The directory that holds `path`, as the path names it.
std::string directoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

UnixSocketFile::UnixSocketFile(std::string path) : path_(std::move(path)) {
  lockDirectory();
  clearStale();
}

void UnixSocketFile::lockDirectory() {
  const std::string directory = directoryOf(path_);
  UniqueFd fd(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    LOG_DEBUG << "unix:" << path_ << ": " << directory << " not locked (" << strerrorTl(errno)
              << ")";
    return;
  }
  // Polled, not a blocking flock(): a process that holds the lock for good
  // must not hang this one for good. A server that starts holds it for
  // microseconds, so the first polls are close together.
  const auto deadline = std::chrono::steady_clock::now() + kLockWait;
  auto pause = std::chrono::microseconds(50);
  for (bool said = false; ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0; said = true) {
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      LOG_DEBUG << "unix:" << path_ << ": flock " << directory << ": " << strerrorTl(errno);
      return;
    }
    if (!said) {
      LOG_INFO << "unix:" << path_ << ": waiting for the lock on " << directory
               << " (another server is starting there)";
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      fail(EWOULDBLOCK, "bind unix:" + path_ + ": " + directory + " stayed locked for " +
                            std::to_string(kLockWait.count()) + " s");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(20000));
  }
  directoryLock_ = std::move(fd);
}

UnixSocketFile::~UnixSocketFile() {
  if (!bound_) return;
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0 || !isSameFile(st)) return;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
    LOG_SYSERR << "unlink " << path_;
  }
}

void UnixSocketFile::clearStale() const {
  struct stat before {};
  if (::lstat(path_.c_str(), &before) != 0) return;  // nothing there (or bind will say why)
  const std::string where = "unix:" + path_;
  if (!S_ISSOCK(before.st_mode)) {
    fail(EEXIST, "bind " + where + ": the path exists and is not a socket (left untouched)");
  }
  const int err = probe(SocketAddress::unixPath(path_));
  if (err == 0 || err == EAGAIN) {
    // EAGAIN: a live server whose backlog is full.
    fail(EADDRINUSE, "bind " + where + ": a server is listening there");
  }
  if (err == ENOENT) return;  // removed meanwhile
  if (err != ECONNREFUSED) {
    // EPROTOTYPE: a datagram socket lives there; EACCES: no right to ask.
    fail(err, "bind " + where + ": cannot tell whether the socket there is in use");
  }
  // Nobody listens: a server that died without removing it. Removed only if
  // it is still the file probed (not one a new server has just made).
  struct stat now {};
  if (::lstat(path_.c_str(), &now) != 0) return;
  if (now.st_dev != before.st_dev || now.st_ino != before.st_ino) {
    fail(EADDRINUSE, "bind " + where + ": replaced while it was checked");
  }
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT) fail(errno, "unlink stale " + where);
  LOG_INFO << "removed the stale socket file " << path_ << " (nothing listened on it)";
}

void UnixSocketFile::bound(std::optional<mode_t> mode) {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) fail(errno, "stat unix:" + path_);
  device_ = st.st_dev;
  inode_ = st.st_ino;
  modified_ = st.st_mtim;
  bound_ = true;
  if (mode && ::chmod(path_.c_str(), *mode) != 0) fail(errno, "chmod unix:" + path_);
}

bool UnixSocketFile::isSameFile(const struct stat& st) const {
  // The inode number alone could be one reused by a file made since (tmpfs
  // reuses them at once); a socket's mtime is its creation time (chmod and
  // traffic leave it alone).
  return S_ISSOCK(st.st_mode) && st.st_dev == device_ && st.st_ino == inode_ &&
         st.st_mtim.tv_sec == modified_.tv_sec && st.st_mtim.tv_nsec == modified_.tv_nsec;
}

}  // namespace libnet
