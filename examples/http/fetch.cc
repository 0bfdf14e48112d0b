// fetch: downloads URLs with libnet's HTTP client, one after the other
// through one client, so that URLs of the same origin share a connection.
//
//   fetch [--backend B] [--cacert FILE] [-o FILE] URL...
//
// Bodies go to stdout, or to FILE with -o (several URLs: appended in
// order), as they arrive. Exit status 0 when every URL answered 2xx, 1
// otherwise ("URL: STATUS REASON", or the error, on stderr), 2 for bad
// arguments.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/Logging.h"
#include "examples/common/Flags.h"
#include "net/EventLoop.h"
#include "net/http/HttpClient.h"

namespace {

using libnet::EventLoop;
using libnet::Flags;
using libnet::PollerKind;
using libnet::http::FetchResult;
using libnet::http::HttpClient;
using libnet::http::Request;

constexpr char kUsage[] =
    "usage: fetch [--backend epoll|uring|auto] [--cacert FILE] [-o FILE] URL...\n"
    "  Fetches each URL (http:// or https://) in turn and writes its body to\n"
    "  stdout, or to FILE (-o; several URLs are appended in order). Server\n"
    "  certificates are verified against the system's CAs, or FILE's (--cacert).\n"
    "  Exit status: 0 if every URL answered 2xx, 1 otherwise, 2 for bad arguments.\n";

struct Settings {
  PollerKind backend = PollerKind::kAuto;
  std::string caFile;
  std::string output;
  std::vector<std::string> urls;
};

// Fetches settings.urls[i] and the rest after it; quits the loop after the last.
class Fetcher {
 public:
  Fetcher(EventLoop* loop, const Settings& settings, std::FILE* out)
      : loop_(loop), settings_(settings), out_(out), client_(loop, clientOptions(settings)) {}

  void fetch(size_t i) {
    if (i == settings_.urls.size()) {
      loop_->quit();
      return;
    }
    Request request{.url = settings_.urls[i]};
    request.options.bodySink = [this](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), out_);
    };
    request.options.keepHeaders = false;
    client_.request(std::move(request), [this, i](FetchResult result) {
      report(settings_.urls[i], result);
      fetch(i + 1);
    });
  }

  [[nodiscard]] bool allOk() const { return allOk_; }

 private:
  static HttpClient::Options clientOptions(const Settings& settings) {
    HttpClient::Options options;
    options.caFile = settings.caFile;
    options.userAgent = "libnet-fetch";
    return options;
  }

  void report(const std::string& url, const FetchResult& result) {
    if (!result.ok()) {
      std::cerr << url << ": " << result.errorMessage() << "\n";
      allOk_ = false;
      return;
    }
    const int status = result.response().status;
    if (status < 200 || status > 299) {
      std::cerr << url << ": " << status << " " << result.response().reason << "\n";
      allOk_ = false;
    }
  }

  EventLoop* loop_;
  const Settings& settings_;
  std::FILE* out_;
  HttpClient client_;
  bool allOk_ = true;
};

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  Flags flags("fetch", kUsage);
  flags.addBackend("--backend", &settings.backend);
  flags.addFile("--cacert", &settings.caFile);
  flags.addCustom("-o", [&settings](std::string_view value) {
    if (value.empty()) return std::string("an output file is needed");
    settings.output = value;
    return std::string();
  });
  flags.setPositional(&settings.urls);
  if (const std::optional<int> exitStatus = flags.parse(argc, argv)) return *exitStatus;
  if (settings.urls.empty()) {
    std::cerr << "fetch: no URL given\n" << kUsage;
    return Flags::kExitUsage;
  }
  std::FILE* out = stdout;
  if (!settings.output.empty()) {
    out = std::fopen(settings.output.c_str(), "wb");
    if (out == nullptr) {
      std::perror(settings.output.c_str());
      return 1;
    }
  }
  // Errors are reported per URL; the library's own notices (the backend
  // chosen) would only clutter stderr. A TLS failure's reason is an ERROR.
  libnet::Logger::setLevel(libnet::LogLevel::kError);
  bool ok = false;
  {
    EventLoop loop(settings.backend);
    Fetcher fetcher(&loop, settings, out);
    loop.queueInLoop([&fetcher] { fetcher.fetch(0); });
    loop.loop();
    ok = fetcher.allOk();
  }
  if (std::fclose(out) != 0) ok = false;
  return ok ? 0 : 1;
}
