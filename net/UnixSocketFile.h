// UnixSocketFile: the file a Unix listening socket bound to a path makes,
// handled deliberately (docs/sockets.md, "Unix domain sockets"):
//
// - Before bind (clearStale()): a socket file at the path that no server
//   answers on (connect() gets ECONNREFUSED: whoever bound it is gone,
//   typically a server that crashed) is stale, and removed so that bind()
//   can take the path. A live server there (it accepts, or its backlog is
//   full) throws std::system_error (EADDRINUSE) naming the path. Anything
//   that is not a socket (a regular file, a directory, a symbolic link) is
//   never removed: it throws (EEXIST). No program deletes a file it did not
//   create.
// - After bind (bound()): the file's mode is set, if asked, before the
//   socket listens, so no client connects through wider permissions first;
//   and its inode is noted.
// - From before the check to after listen() (listening()), the directory
//   that holds the path is locked (flock(2), exclusive): a socket bound but
//   not yet listening refuses connections exactly as a stale one does, so
//   two servers starting at once on one path could each take the other's
//   fresh socket for a dead one's and remove it (both then run, one where
//   no client can reach it). Under the lock, a server's check never sees
//   another's socket between its bind and its listen. The lock is held for
//   a few system calls; a server finding it taken says so (INFO) and waits
//   up to kLockWait, then throws std::system_error (EWOULDBLOCK). Programs
//   that do not take the lock are not covered, as before: a socket file
//   nobody listens on is taken for stale. A directory that cannot be opened
//   for reading is not locked (the check and bind go on without it).
// - At destruction: the file is removed if it is still the one bound here
//   (a socket, with the same device, inode and creation time): a file that
//   another server has put at the path since is left alone.
//
// A relative path is taken against the working directory at each of these
// steps. Abstract names make no file and need none of this. Owned by an
// Acceptor; used on the thread that owns it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <chrono>
#include <optional>
#include <string>

#include "base/UniqueFd.h"

namespace libnet {

class UnixSocketFile {
 public:
  // Locks the directory, then removes a stale socket file at `path` (see
  // above), or throws.
  explicit UnixSocketFile(std::string path);
  ~UnixSocketFile();
  UnixSocketFile(const UnixSocketFile&) = delete;
  UnixSocketFile& operator=(const UnixSocketFile&) = delete;

  // The socket is bound: sets the mode (throws std::system_error if chmod
  // fails) and notes the file to remove at destruction.
  void bound(std::optional<mode_t> mode);
  // The socket listens: the directory's lock goes (another server's check
  // now finds this one live).
  void listening() { directoryLock_.reset(); }

  // The longest wait for the directory's lock.
  static constexpr std::chrono::seconds kLockWait{10};

 private:
  void lockDirectory();
  void clearStale() const;
  [[nodiscard]] bool isSameFile(const struct stat& st) const;

  const std::string path_;
  UniqueFd directoryLock_;  // held from construction to listening()
  bool bound_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  timespec modified_{};
};

}  // namespace libnet
