#include "tests/net/http2/fuzz/FuzzHandler.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "base/UniqueFd.h"
#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"

namespace libnet::http2::fuzz {

namespace {

// The file /file answers with: made once, unlinked at once (nothing is left
// behind), each response reads a duplicate of the descriptor.
int responseFile() {
  static const int fd = [] {
    char path[] = "/tmp/http2-fuzz-XXXXXX";
    const int made = ::mkstemp(path);
    if (made < 0) std::abort();
    ::unlink(path);
    std::string content(kFileSize, '\0');
    for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>('a' + i % 26);
    if (::write(made, content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
      std::abort();
    }
    return made;
  }();
  return fd;
}

void respond(const http::HttpRequest& request, http::HttpResponse* response) {
  const std::string& path = request.path();
  if (path == "/hello") {
    response->setContentType("text/plain");
    response->setBody("hello world\n");
  } else if (path == "/echo") {
    response->setBody(request.body());
  } else if (path == "/big") {
    response->setBody(std::string(kBigBody, 'b'));
  } else if (path == "/file") {
    response->setFile(UniqueFd(::fcntl(responseFile(), F_DUPFD_CLOEXEC, 0)), kFileSize);
  } else if (path == "/long-header") {
    response->addHeader("X-Long", std::string(20000, 'h'));
    response->setBody("long\n");
  } else if (path == "/204" || path == "/304") {
    response->setStatus(path == "/204" ? 204 : 304);
  } else if (path == "/connection") {
    response->addHeader("Connection", "close");
    response->addHeader("Keep-Alive", "timeout=5");
    response->setBody("dropped\n");
  } else if (path == "/throw") {
    throw std::runtime_error("the fuzz handler throws");
  } else {
    response->setStatusPage(404);
  }
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "Http2SessionFuzzer: handler: %s\n", what);
  std::abort();
}

void handle(const http::HttpRequest& request, http::HttpResponse* response, size_t maxBody) {
  if (request.version() != http::Version::kHttp2) fail("a request that is not HTTP/2");
  if (request.body().size() > maxBody) fail("a request body over the limit reached the handler");
  respond(request, response);
}

}  // namespace

const ServerSession::Config& fuzzConfig(bool small) {
  static const ServerSession::Config normal = [] {
    ServerSession::Config config;
    config.handler = [max = config.limits.maxBodyBytes](const http::HttpRequest& request,
                                                        http::HttpResponse* response) {
      handle(request, response, max);
    };
    return config;
  }();
  static const ServerSession::Config tiny = [] {
    ServerSession::Config config;
    config.limits.maxHeaderBytes = 256;
    config.limits.maxHeaderCount = 8;
    config.limits.maxBodyBytes = 128;
    config.handler = [](const http::HttpRequest& request, http::HttpResponse* response) {
      handle(request, response, 128);
    };
    config.options.maxConcurrentStreams = 3;
    config.options.initialWindowSize = 100;
    config.options.resetBurst = 4;
    config.options.resetsPerSecond = 1;
    config.options.controlBurst = 8;
    config.options.controlPerSecond = 1;
    config.options.maxHeaderBlockFrames = 3;
    config.options.maxConnectionBodyBytes = 450;  // 3 streams x 100 + 128, and a little
    return config;
  }();
  return small ? tiny : normal;
}

}  // namespace libnet::http2::fuzz
