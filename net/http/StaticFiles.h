// StaticFiles: maps a request path to a regular file under one root
// directory, and never to anything outside it.
//
// The path is percent-decoded, split on '/', and any ".." segment is refused
// outright (403) instead of being resolved: there is no legitimate reason for
// a client to climb. What remains is opened relative to the root's directory
// fd with openat2(RESOLVE_BENEATH), so a symlink (or a race that swaps a
// directory for one) cannot lead out of the root either: the kernel refuses
// any resolution step that would leave it. On kernels without openat2 the
// walk is done one component at a time with O_NOFOLLOW (symlinks refused).
//
// Immutable after construction: any thread may call open() concurrently.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "base/UniqueFd.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"

namespace libnet::http {

class StaticFiles {
 public:
  struct File {
    // 200, or the error status to answer: 400, 403, 404; 503 when the
    // process is out of descriptors or memory (EMFILE, ENFILE, ENOMEM), 500
    // for another error of the server's (EIO).
    int status = 404;
    UniqueFd fd;  // open for reading when status is 200
    size_t size = 0;
    std::string_view contentType;
  };

  // Throws std::system_error if `root` cannot be opened as a directory.
  explicit StaticFiles(const std::string& root);

  // `rawPath` is the request path as sent (before '?', still percent-encoded).
  // A directory is served by its index.html.
  [[nodiscard]] File open(std::string_view rawPath) const;

  // Answers a GET or HEAD of request.path(): the file with its type, or a
  // short error page (400 / 403 / 404 / 500; 503 with Retry-After: 1 when
  // out of descriptors; 405 for any other method).
  void serve(const HttpRequest& request, HttpResponse* response) const;

  // MIME type by file extension; application/octet-stream when unknown.
  [[nodiscard]] static std::string_view contentTypeFor(std::string_view path);
  // Decodes %XX escapes; false on a malformed escape or an encoded NUL.
  [[nodiscard]] static bool percentDecode(std::string_view in, std::string* out);

 private:
  // openat relative to `dirFd`, never leaving it; -1 with errno set on error.
  [[nodiscard]] static int openBeneath(int dirFd, const std::string& relative);
  // open() once the path is known to stay under the root: the file, or a
  // directory's index.html, if it is a regular file.
  [[nodiscard]] File openRelative(const std::string& relative) const;

  UniqueFd rootFd_;
};

}  // namespace libnet::http
