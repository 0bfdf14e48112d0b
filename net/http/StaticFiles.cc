#include "net/http/StaticFiles.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <system_error>
#include <utility>

namespace libnet::http {

namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int statusForErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
      return 404;
    case EXDEV:  // would leave the root (openat2 RESOLVE_BENEATH)
    case ELOOP:  // a symlink on the fallback walk, or a loop
    case EACCES:
    case EPERM:
      return 403;
    // The server is out of descriptors or memory: nothing wrong with the
    // request, which may well succeed in a moment. A 403 here would tell the
    // client (and its caches) that the file is forbidden.
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOBUFS:
      return 503;
    default:  // EIO and the like: a fault of the server's
      return 500;
  }
}

// Rebuilds the decoded path (which starts with '/') from its segments,
// relative to the root: "" and "." vanish, and the root itself is ".". False
// on a ".." segment, which is refused rather than resolved.
bool relativeFromSegments(std::string_view decoded, std::string* relative) {
  relative->clear();
  relative->reserve(decoded.size());
  size_t start = 1;
  while (start <= decoded.size()) {
    size_t end = decoded.find('/', start);
    if (end == std::string_view::npos) end = decoded.size();
    const std::string_view segment = decoded.substr(start, end - start);
    start = end + 1;
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") return false;
    if (!relative->empty()) relative->push_back('/');
    relative->append(segment);
  }
  if (relative->empty()) relative->assign(".");
  return true;
}

// Set once openat2 turned out to be unavailable here.
std::atomic<bool> noOpenat2{false};

}  // namespace

StaticFiles::StaticFiles(const std::string& root)
    : rootFd_(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (!rootFd_) {
    throw std::system_error(errno, std::generic_category(), "open static root " + root);
  }
}

bool StaticFiles::percentDecode(std::string_view in, std::string* out) {
  out->clear();
  out->reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hexValue(in[i + 1]);
    const int lo = hexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return false;
    out->push_back(c);
    i += 2;
  }
  return true;
}

int StaticFiles::openBeneath(int dirFd, const std::string& relative) {
  const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
  if (!noOpenat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, dirFd, relative.c_str(), &how, sizeof how);
    // ENOSYS: an old kernel; EPERM: a seccomp filter that does not know it.
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
    noOpenat2.store(true, std::memory_order_relaxed);
  }
  // One component at a time, refusing every symlink.
  UniqueFd current(::dup(dirFd));
  if (!current) return -1;
  size_t start = 0;
  while (start <= relative.size()) {
    size_t end = relative.find('/', start);
    if (end == std::string::npos) end = relative.size();
    const std::string component = relative.substr(start, end - start);
    const int fd = ::openat(current.get(), component.c_str(), flags | O_NOFOLLOW);
    if (fd < 0) return -1;
    current.reset(fd);
    start = end + 1;
  }
  return current.release();
}

StaticFiles::File StaticFiles::open(std::string_view rawPath) const {
  std::string decoded;
  if (rawPath.empty() || rawPath.front() != '/' || !percentDecode(rawPath, &decoded)) {
    File file;
    file.status = 400;
    return file;
  }
  std::string relative;
  if (!relativeFromSegments(decoded, &relative)) {
    File file;
    file.status = 403;
    return file;
  }
  return openRelative(relative);
}

StaticFiles::File StaticFiles::openRelative(const std::string& relative) const {
  File file;
  UniqueFd fd(openBeneath(rootFd_.get(), relative));
  if (!fd) {
    file.status = statusForErrno(errno);
    return file;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    file.status = statusForErrno(errno);
    return file;
  }
  std::string_view typePath = relative;
  if (S_ISDIR(st.st_mode)) {
    UniqueFd index(openBeneath(fd.get(), "index.html"));
    if (!index) {
      file.status = errno == ENOENT ? 403 : statusForErrno(errno);  // no listing
      return file;
    }
    fd = std::move(index);
    if (::fstat(fd.get(), &st) != 0) {
      file.status = statusForErrno(errno);
      return file;
    }
    typePath = "index.html";
  }
  if (!S_ISREG(st.st_mode)) {  // a fifo or device under the root: never read it
    file.status = 403;
    return file;
  }
  // Regular files ignore O_NONBLOCK; it only kept open() of a fifo from hanging.
  file.status = 200;
  file.fd = std::move(fd);
  file.size = static_cast<size_t>(st.st_size);
  file.contentType = contentTypeFor(typePath);
  return file;
}

void StaticFiles::serve(const HttpRequest& request, HttpResponse* response) const {
  if (request.method() != Method::kGet && request.method() != Method::kHead) {
    response->setStatusPage(405);
    response->addHeader("Allow", "GET, HEAD");
    return;
  }
  File file = open(request.path());
  if (file.status != 200) {
    response->setStatusPage(file.status);
    // Out of descriptors passes as others finish: worth a retry soon.
    if (file.status == 503) response->addHeader("Retry-After", "1");
    return;
  }
  response->setStatus(200);
  response->setContentType(file.contentType);
  response->setFile(std::move(file.fd), file.size);
}

std::string_view StaticFiles::contentTypeFor(std::string_view path) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 20> kTypes{{
      {"html", "text/html; charset=utf-8"},
      {"htm", "text/html; charset=utf-8"},
      {"css", "text/css; charset=utf-8"},
      {"js", "text/javascript; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"json", "application/json"},
      {"txt", "text/plain; charset=utf-8"},
      {"md", "text/markdown; charset=utf-8"},
      {"xml", "application/xml"},
      {"svg", "image/svg+xml"},
      {"png", "image/png"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},
      {"webp", "image/webp"},
      {"ico", "image/x-icon"},
      {"wasm", "application/wasm"},
      {"pdf", "application/pdf"},
      {"csv", "text/csv; charset=utf-8"},
      {"gz", "application/gzip"},
  }};
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return "application/octet-stream";
  }
  const std::string_view ext = path.substr(dot + 1);
  for (const auto& [candidate, type] : kTypes) {
    if (candidate.size() != ext.size()) continue;
    bool same = true;
    for (size_t i = 0; i < ext.size() && same; ++i) {
      char c = ext[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      same = c == candidate[i];
    }
    if (same) return type;
  }
  return "application/octet-stream";
}

}  // namespace libnet::http
