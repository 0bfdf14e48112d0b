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

#include <optional>
#include <string>

namespace libnet {

class UnixSocketFile {
 public:
  // Removes a stale socket file at `path` (see above), or throws.
  explicit UnixSocketFile(std::string path);
  ~UnixSocketFile();
  UnixSocketFile(const UnixSocketFile&) = delete;
  UnixSocketFile& operator=(const UnixSocketFile&) = delete;

  // The socket is bound: sets the mode (throws std::system_error if chmod
  // fails) and notes the file to remove at destruction.
  void bound(std::optional<mode_t> mode);

 private:
  void clearStale() const;
  [[nodiscard]] bool isSameFile(const struct stat& st) const;

  const std::string path_;
  bool bound_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  timespec modified_{};
};

}  // namespace libnet
