// The command line, the names to look up and the result line that the
// resolver benchmark's programs share (asio_resolve_bench,
// getaddrinfo_pool_bench, and libnet's resolve_bench), so that
// bench/dns/run_dns_bench.py drives all of them alike:
//
//   PROGRAM --count N --inflight K [--names FILE | --name-pattern P --distinct D]
//           [--threads T] [--server ADDR:PORT] [--backend B]
//
// and each prints one line when done (ProcessMeter.h):
//
//   lookups=N failed=F seconds=S lookups_per_s=X cpu_s=C threads=T
//
// Plain functions and aggregates; no state, callable from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dnsbench {

struct ResolveBenchArgs {
  uint64_t count = 10000;
  int inflight = 1;
  // Lookup i asks for names[i % names.size()].
  std::vector<std::string> names;
  int threads = 4;      // --threads (getaddrinfo_pool_bench)
  std::string server;   // --server (libnet's resolve_bench)
  std::string backend;  // --backend (libnet's resolve_bench)
};

// Which options a program takes besides the common ones.
struct ResolveBenchOptions {
  std::string_view program;
  bool threads = false;
  bool server = false;  // --server and --backend
};

// Exits 0 after printing usage for --help; exits 2 with a message for a bad
// or missing option or an unreadable or empty --names file. Without --names
// the pattern defaults to "host%d.bench.test" and --distinct to --count (at
// most 1,000,000), so that every lookup asks for a name of its own and no
// cache can answer it.
[[nodiscard]] ResolveBenchArgs parseResolveBenchArgs(int argc, char** argv,
                                                     const ResolveBenchOptions& options);

}  // namespace dnsbench
