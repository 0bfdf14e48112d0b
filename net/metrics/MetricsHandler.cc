#include "net/metrics/MetricsHandler.h"

namespace libnet::metrics {

bool serveMetrics(const MetricsRegistry& registry, std::string_view path,
                  const http::HttpRequest& request, http::HttpResponse* response) {
  if (request.path() != path) return false;
  const http::Method method = request.method();
  if (method != http::Method::kGet && method != http::Method::kHead) {
    response->setStatusPage(405);
    response->addHeader("Allow", "GET, HEAD");
    return true;
  }
  response->setStatus(200);
  response->setContentType(MetricsRegistry::kContentType);
  // Never cached: every scrape is a new reading.
  response->addHeader("Cache-Control", "no-store");
  // The loops' queued output as each last summed it (this loop's now); the
  // request for new sums serves the next scrape. Nothing waits.
  registry.refresh();
  response->setBody(registry.render());
  return true;
}

}  // namespace libnet::metrics
