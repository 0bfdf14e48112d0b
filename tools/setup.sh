#!/usr/bin/env bash
# Installs the Debian 12 packages libnet needs, if any is missing. Idempotent:
# when everything is present it changes nothing and needs no network.
set -euo pipefail

PACKAGES=(
  bazel-bootstrap  # Bazel 4.2.3 (/usr/bin/bazel), WORKSPACE mode
  g++              # GCC 12, C++20
  libgtest-dev     # GoogleTest 1.12 (static libraries)
  liburing-dev     # liburing 2.3
  libssl-dev       # OpenSSL 3.0, for the TLS layer (//net/tls) and the asio ssl peer
  openssl          # the openssl command: s_client in the TLS tests, s_time in the benchmark
  curl             # a real HTTPS client in the TLS tests
  libevent-dev     # libevent 2.1, for the ping-pong peer
  libboost-dev     # Boost.Asio 1.74 (header-only), for the ping-pong peer
  procps           # ps/pgrep used by the scripts
  strace           # the io_uring fast-path test counts system calls with it
  util-linux       # setpriv/prlimit/taskset: fallback test, pinned benchmarks
  python3          # pingpong/run_tables.py
  libspdlog-dev    # spdlog 1.10 (+ libfmt), compared against in bench/log_bench
  nginx-light      # nginx 1.22, the peer of bench/http/run_http_bench.py
  wrk              # wrk 4.1, the HTTP load generator of bench/http
  apache2-utils    # ab (ApacheBench 2.3), the short-connection load of bench/http/run_ab_bench.py
  clang            # clang++ 14: the libFuzzer target (tools/fuzz.sh), tools/thread_safety.sh
  clang-format     # clang-format 14, the layout tools/format_check.sh checks
  libclang-rt-14-dev  # libclang_rt.fuzzer/asan/ubsan for clang 14 (only recommended by clang)
  llvm             # llvm-symbolizer, for readable stacks in fuzzer crash reports
  cmake            # the CMake consumer test (tests/consumers/cmake_consumer_test.sh)
  pkgconf          # pkg-config, for the pkg-config consumer test
  dpkg-dev         # dpkg-shlibdeps, for tools/install.sh --deb (install_staging_test.sh)
  libc-ares-dev    # c-ares 1.18, the DNS resolver of //net/dns
  dnsmasq-base     # dnsmasq, the real DNS server of the resolver tests and benchmark
  python3-dnslib   # dnslib, the scripted DNS servers of the resolver tests
  zlib1g-dev       # zlib, permessage-deflate of //net/websocket
  python3-websockets  # websockets 10.4, the independent WebSocket peer of the tests
  libnghttp2-dev   # nghttp2 1.52: HTTP/2 framing and HPACK of //net/http2
  nghttp2-client   # nghttp and h2load, HTTP/2 clients of the tests and the benchmark
  python3-h2       # h2 4.1 (hyper-h2) and hpack, the hostile HTTP/2 peers of the tests
  haproxy          # haproxy 2.6, the PROXY protocol v1/v2 sender of the operations tests
  python3-prometheus-client  # its text parser reads the /metrics exposition in the tests
  libgoogle-perftools-dev  # gperftools' CPU profiler (libprofiler) of //net/inspect:profiler
  google-perftools  # google-pprof, which reads the inspector's and SIGUSR1's CPU profiles
  php8.2-fpm       # php-fpm, the FastCGI application of the net/fastcgi tests and benchmark
  libprotobuf-dev  # protobuf 3.21, the messages of //net/grpc
  libprotoc-dev    # libprotoc 3.21, for libnet's protoc plugin (//net/grpc/plugin)
  protobuf-compiler  # protoc 3.21, run by the Bazel rule of //net/grpc:proto.bzl
  libgrpc++-dev    # grpc++ 1.51, the independent gRPC peer of the interop tests and benchmark
  protobuf-compiler-grpc  # grpc_cpp_plugin and grpc_python_plugin, for those peers
  python3-grpcio   # grpcio 1.51, the Python gRPC peer of the interop tests
  python3-protobuf  # protobuf 3.21 for Python, the messages of that peer
)

# Go builds the pinned h2spec of tools/h2spec.sh, and through tools/go_tool.sh
# hey, ghz and the grpc-go greeter of the benchmarks (tools/hey, tools/ghz,
# tools/grpc_go_greeter); an upstream Go in /usr/local/go (Go's own tarball)
# serves as well as Debian's 1.19 for h2spec and hey. ghz needs Go 1.21 or
# later and the grpc-go greeter (grpc-go 1.81) Go 1.25 or later.
if ! command -v go >/dev/null 2>&1 && [[ ! -x /usr/local/go/bin/go ]]; then
  PACKAGES+=(golang-go)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "libnet setup: installing ${missing[*]}" >&2
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    SUDO=(sudo)
  else
    echo "libnet setup: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "libnet setup: done" >&2
