// serveMetrics(): puts a MetricsRegistry on an HttpServer handler's path, in
// one line of the handler:
//   server.setHandler([&](const HttpRequest& req, HttpResponse* resp) {
//     if (metrics::serveMetrics(registry, "/metrics", req, resp)) return;
//     ...
//   });
#pragma once

#include <string_view>

#include "net/http/HttpRequest.h"
#include "net/http/HttpResponse.h"
#include "net/metrics/MetricsRegistry.h"

namespace libnet::metrics {

// True when `request` is for `path` and `response` has been filled: the
// rendered text for GET and HEAD (after registry.refresh(): it never waits
// for a loop), 405 (Allow: GET, HEAD) for any other method. False for any
// other path (the response left untouched).
bool serveMetrics(const MetricsRegistry& registry, std::string_view path,
                  const http::HttpRequest& request, http::HttpResponse* response);

}  // namespace libnet::metrics
