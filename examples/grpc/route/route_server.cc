// route_server: routeguide.RouteGuide (route_guide.proto) on libnet in
// coroutine style, the streaming example: GetFeature (unary), ListFeatures
// (server streaming), RecordRoute (client streaming) and RouteChat
// (bidirectional streaming). The map is a 5 x 5 grid of features 0.01
// degrees apart from (40.00, -74.00) ("Feature R-C"); RouteChat's notes are
// shared by every connection and loop.
//
//   route_server [--address IP] [--port N] [--backend epoll|uring|auto]
//                [--threads N] [--tls-cert FILE --tls-key FILE] [--h2c]
//
// Plain TCP serves HTTP/2 with prior knowledge (h2c); TLS chooses h2 by
// ALPN. Prints "route_server listening on IP:PORT" once it serves; SIGINT or
// SIGTERM drain it (calls in flight finish, at most 5 s). Bad flags: exit 2.
//
// Each handler is a coroutine on its call's loop: co_await read() gives the
// client's next message (nullopt at its end or when the call is cancelled),
// co_await write() waits while the client is slow to take the answers, and
// the Status returned ends the call.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "examples/common/Flags.h"
#include "examples/common/ServerTls.h"
#include "examples/grpc/route/route_guide.libnet.h"
#include "net/EventLoop.h"
#include "net/InetAddress.h"
#include "net/SignalSet.h"
#include "net/grpc/CoroStream.h"
#include "net/grpc/Server.h"
#include "net/http/HttpServer.h"
#include "net/tls/TlsContext.h"

namespace {

using libnet::coro::Task;
using libnet::grpc::CoroStream;
using libnet::grpc::Status;
using libnet::grpc::StatusCode;
using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteNote;
using routeguide::RouteSummary;

constexpr int kGrid = 5;
constexpr int32_t kOriginLatitude = 400000000;    // 40.00 degrees
constexpr int32_t kOriginLongitude = -740000000;  // -74.00 degrees
constexpr int32_t kStep = 100000;                 // 0.01 degrees

std::vector<Feature> makeMap() {
  std::vector<Feature> features;
  for (int row = 0; row < kGrid; ++row) {
    for (int column = 0; column < kGrid; ++column) {
      Feature feature;
      feature.set_name("Feature " + std::to_string(row) + "-" + std::to_string(column));
      feature.mutable_location()->set_latitude(kOriginLatitude + row * kStep);
      feature.mutable_location()->set_longitude(kOriginLongitude + column * kStep);
      features.push_back(std::move(feature));
    }
  }
  return features;
}

bool between(int32_t value, int32_t a, int32_t b) {
  return value >= std::min(a, b) && value <= std::max(a, b);
}

bool inside(const Point& point, const Rectangle& rectangle) {
  return between(point.latitude(), rectangle.lo().latitude(), rectangle.hi().latitude()) &&
         between(point.longitude(), rectangle.lo().longitude(), rectangle.hi().longitude());
}

// Meters between two points along the earth's surface (haversine).
double distance(const Point& from, const Point& to) {
  constexpr double kRadians = 3.14159265358979323846 / 180 / 1e7;
  constexpr double kEarthMeters = 6371000;
  const double lat1 = from.latitude() * kRadians;
  const double lat2 = to.latitude() * kRadians;
  const double dLat = lat2 - lat1;
  const double dLon = (to.longitude() - from.longitude()) * kRadians;
  const double a = std::sin(dLat / 2) * std::sin(dLat / 2) +
                   std::cos(lat1) * std::cos(lat2) * std::sin(dLon / 2) * std::sin(dLon / 2);
  return kEarthMeters * 2 * std::atan2(std::sqrt(a), std::sqrt(1 - a));
}

class RouteGuideImpl : public routeguide::RouteGuide::CoroService {
 public:
  Task<Status> GetFeature(CoroStream<Point, Feature>& call) override {
    Feature feature;
    *feature.mutable_location() = call.request();
    if (const Feature* found = find(call.request())) feature = *found;
    co_await call.write(feature);
    co_return Status();
  }

  Task<Status> ListFeatures(CoroStream<Rectangle, Feature>& call) override {
    for (const Feature& feature : features_) {
      if (!inside(feature.location(), call.request())) continue;
      if (!co_await call.write(feature)) co_return Status(StatusCode::kCancelled, "call over");
    }
    co_return Status();
  }

  Task<Status> RecordRoute(CoroStream<Point, RouteSummary>& call) override {
    RouteSummary summary;
    std::optional<Point> previous;
    double meters = 0;
    while (std::optional<Point> point = co_await call.read()) {
      summary.set_point_count(summary.point_count() + 1);
      if (find(*point) != nullptr) summary.set_feature_count(summary.feature_count() + 1);
      if (previous) meters += distance(*previous, *point);
      previous = std::move(point);
    }
    if (call.call().cancelled()) co_return Status(StatusCode::kCancelled, "call over");
    summary.set_distance(static_cast<int32_t>(std::lround(meters)));
    co_await call.write(summary);
    co_return Status();
  }

  Task<Status> RouteChat(CoroStream<RouteNote, RouteNote>& call) override {
    while (std::optional<RouteNote> note = co_await call.read()) {
      for (const RouteNote& earlier : leaveNote(*note)) {
        if (!co_await call.write(earlier)) co_return Status(StatusCode::kCancelled, "call over");
      }
    }
    co_return Status();
  }

 private:
  const Feature* find(const Point& point) const {
    for (const Feature& feature : features_) {
      if (feature.location().latitude() == point.latitude() &&
          feature.location().longitude() == point.longitude()) {
        return &feature;
      }
    }
    return nullptr;
  }

  // The notes left at `note`'s place before it; then keeps it. Any loop.
  std::vector<RouteNote> leaveNote(const RouteNote& note) {
    const std::lock_guard<std::mutex> lock(notesMutex_);
    std::vector<RouteNote>& here =
        notes_[{note.location().latitude(), note.location().longitude()}];
    std::vector<RouteNote> earlier = here;
    here.push_back(note);
    return earlier;
  }

  const std::vector<Feature> features_ = makeMap();
  std::mutex notesMutex_;
  std::map<std::pair<int32_t, int32_t>, std::vector<RouteNote>> notes_;
};

struct Settings {
  std::string address = "127.0.0.1";
  uint16_t port = 50052;
  int threads = 0;
  bool h2c = false;
  libnet::PollerKind backend = libnet::PollerKind::kAuto;
  libnet::ServerTls tls;
};

const char kUsage[] =
    "usage: route_server [--address IP] [--port N] [--backend epoll|uring|auto]\n"
    "                    [--threads N] [--tls-cert FILE --tls-key FILE] [--h2c]\n"
    "  --address IP     listen on this numeric address (default 127.0.0.1)\n"
    "  --port N         TCP port (default 50052; 0 picks one)\n"
    "  --backend B      poller: epoll, uring or auto (default)\n"
    "  --threads N      I/O loops besides the accepting one (default 0: one loop)\n"
    "  --h2c            HTTP/2 with prior knowledge on plain TCP (the default\n"
    "                   without TLS)\n";

// nullopt: go on; otherwise the exit status.
std::optional<int> parseFlags(int argc, char* argv[], Settings* settings) {
  libnet::Flags flags("route_server", std::string(kUsage) + libnet::ServerTls::kUsage);
  flags.addAddress("--address", &settings->address);
  flags.addPort("--port", &settings->port);
  flags.addBackend("--backend", &settings->backend);
  flags.addInt("--threads", &settings->threads, 0, 64);
  flags.addSwitch("--h2c", &settings->h2c);
  settings->tls.addTo(&flags);
  if (std::optional<int> exit = flags.parse(argc, argv)) return exit;
  if (std::string problem = settings->tls.check(); !problem.empty()) {
    std::fprintf(stderr, "route_server: %s\n", problem.c_str());
    return libnet::Flags::kExitUsage;
  }
  if (settings->h2c && settings->tls.enabled()) {
    std::fprintf(stderr, "route_server: --h2c is for plain TCP, not with --tls-cert\n");
    return libnet::Flags::kExitUsage;
  }
  return std::nullopt;
}

int serve(const Settings& settings) {
  libnet::EventLoop loop(settings.backend);
  libnet::http::HttpServer::Options options;
  options.threads = settings.threads;
  options.layer = settings.tls.layer({"h2"});
  libnet::http::HttpServer http(&loop, *libnet::InetAddress::parse(settings.address, settings.port),
                                "route", options);
  libnet::grpc::Server server(http, {});
  RouteGuideImpl guide;
  server.addService(&guide);
  libnet::SignalSet signals(&loop, {SIGINT, SIGTERM}, [&](int) {
    http.drain(std::chrono::seconds(5), [&loop] { loop.quit(); });
  });
  http.start();
  std::printf("route_server listening on %s\n", http.listenAddress().toIpPort().c_str());
  std::fflush(stdout);
  loop.loop();
  return 0;
}

}  // namespace

int main(int argc, char* argv[]) {
  Settings settings;
  if (std::optional<int> exit = parseFlags(argc, argv, &settings)) return *exit;
  try {
    return serve(settings);
  } catch (const libnet::tls::Error& e) {
    std::fprintf(stderr, "route_server: TLS: %s\n", e.what());
    return 1;
  }
}
