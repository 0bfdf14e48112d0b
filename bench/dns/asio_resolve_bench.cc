// Boost.Asio 1.74's resolver, used the way its documentation shows:
// ip::tcp::resolver::async_resolve(host, service) with a completion handler,
// K lookups in flight at once. asio runs each lookup as a blocking
// getaddrinfo on a private thread of the io_context's resolver service, one
// lookup after another, so K in flight queue there; the benchmark
// (bench/dns/run_dns_bench.py) shows what that costs against libnet's
// loop-driven resolver. The names go to whatever /etc/resolv.conf and
// /etc/nsswitch.conf say; the script points them at its dnsmasq.
//
// usage: asio_resolve_bench --count N --inflight K
//            [--names FILE | --name-pattern P --distinct D]
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdio>
#include <string>

#include "bench/dns/ProcessMeter.h"
#include "bench/dns/ResolveBenchArgs.h"

namespace {

using boost::asio::ip::tcp;

class ResolveLoop {
 public:
  ResolveLoop(boost::asio::io_context& context, const dnsbench::ResolveBenchArgs& args)
      : resolver_(context), args_(args) {}

  void start() {
    for (int i = 0; i < args_.inflight && issued_ < args_.count; ++i) next();
  }

  [[nodiscard]] uint64_t done() const { return done_; }
  [[nodiscard]] uint64_t failed() const { return failed_; }

 private:
  void next() {
    const std::string& name = args_.names[issued_ % args_.names.size()];
    ++issued_;
    // The service is a port number: asio's default would look "80" up in
    // /etc/services too, which none of the other peers do.
    resolver_.async_resolve(name, "80", tcp::resolver::numeric_service,
                            [this, &name](const boost::system::error_code& ec,
                                          const tcp::resolver::results_type& results) {
                              ++done_;
                              if (ec || results.empty()) {
                                if (failed_++ == 0) {
                                  std::fprintf(stderr, "asio_resolve_bench: %s: %s\n", name.c_str(),
                                               ec.message().c_str());
                                }
                              }
                              if (issued_ < args_.count) next();
                            });
  }

  tcp::resolver resolver_;
  const dnsbench::ResolveBenchArgs& args_;
  uint64_t issued_ = 0;
  uint64_t done_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const dnsbench::ResolveBenchArgs args =
      dnsbench::parseResolveBenchArgs(argc, argv, {.program = "asio_resolve_bench"});
  boost::asio::io_context context(1);
  ResolveLoop loop(context, args);
  dnsbench::ProcessMeter meter;
  meter.start();
  loop.start();
  context.run();
  // The resolver's thread is still there: it lives as long as the context.
  meter.finish(loop.done(), loop.failed());
  return 0;
}
