#!/usr/bin/env bash
# Builds echo_roundtrip.cc against an installed libnet with pkg-config, as a
# Makefile would, three ways:
#   $(pkg-config --cflags --libs libnet)            -lnet: the linker takes
#                                                   libnet.so (run with an RPATH)
#   -static $(pkg-config --cflags --libs --static libnet)
#                                                   everything static: proves
#                                                   Libs.private/Requires.private
#   -std=c++20 -IPREFIX/include PREFIX/lib/libnet.a -luring -pthread
#                                                   the archive named, system
#                                                   libraries shared (no pkg-config)
# and runs each; the .pc files state the licence (License: MIT) and pass
# pkg-config --validate. The components the same way: tls_roundtrip.cc with
# libnet_tls, dns_roundtrip.cc with libnet_dns (shared, and from the archives
# with -lcares), http_fetch_roundtrip.cc with libnet_http_client,
# ws_roundtrip.cc with libnet_websocket, http2_roundtrip.cc with
# libnet_http2, server_roundtrip.cc (the coroutine handlers and FastCGI, in
# libnet itself) with libnet and inspect_roundtrip.cc with libnet_inspect
# (shared, and from the archives that pkg-config --static names). Needs
# pkg-config (pkgconf) and g++; prints "ok: ..." and exits 0, or says what
# failed.
source "$(dirname "${BASH_SOURCE[0]}")/consumer_test_lib.sh"

command -v pkg-config >/dev/null || fail "pkg-config is not installed (apt-get install pkgconf)"
version=$(tr -d '[:space:]' <"$repo/VERSION")
soversion=$(soversion_of "$version")
prefix=$tmp/prefix
# A copy, so that no header can come from the checkout next to the source.
cp "$repo/tests/consumers/echo_roundtrip.cc" .
source_file=echo_roundtrip.cc

install_libnet --prefix "$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig

installed=$(pkg-config --modversion libnet) || fail "pkg-config does not find libnet in $PKG_CONFIG_PATH"
[[ $installed == "$version" ]] || fail "pkg-config says libnet $installed, VERSION says $version"
# pkgconf before 1.9 has no License field: it must skip it, not reject the file.
for pc in libnet libnet_tls libnet_dns libnet_http_client libnet_websocket libnet_http2 \
  libnet_inspect; do
  grep -qx 'License: MIT' "$prefix/lib/pkgconfig/$pc.pc" || fail "$pc.pc has no 'License: MIT'"
  bounded 30 "pkg-config --validate $pc" pkg-config --validate "$pc"
done
read -r -a flags <<<"$(pkg-config --cflags --libs libnet)"
read -r -a static_flags <<<"$(pkg-config --cflags --libs --static libnet)"

bounded 300 "g++ with pkg-config --libs libnet" \
  g++ "$source_file" "${flags[@]}" -Wl,-rpath,"$prefix/lib" -o echo_shared
needs_library echo_shared "libnet\.so\.${soversion}" ||
  fail "echo_shared does not need libnet.so.${soversion}"
run_echo ./echo_shared

# glibc warns that getaddrinfo (InetAddress::resolve) in a static program
# needs glibc's shared NSS modules at run time; this program resolves nothing.
bounded 300 "g++ -static with pkg-config --libs --static libnet" \
  g++ -static "$source_file" "${static_flags[@]}" -o echo_static
dynamic=$(readelf -d echo_static 2>&1) || true
grep -q 'no dynamic section' <<<"$dynamic" || fail "echo_static is not static: $dynamic"
run_echo ./echo_static

# A program written for 0.1: the deprecated names still compile, each with a
# warning that names its replacement, and the program works.
cp "$repo/tests/consumers/api_0_1_roundtrip.cc" .
bounded 300 "g++ of a program written for 0.1" \
  g++ api_0_1_roundtrip.cc "${flags[@]}" -Wl,-rpath,"$prefix/lib" -o api_0_1_roundtrip
for name in setThreadNum setTcpNoDelay enableRetry getLoop getContext; do
  grep -q "warning: .*$name.* is deprecated" "$tmp/log" ||
    fail "no deprecation warning for $name: $(cat "$tmp/log")"
done
bounded 30 "running api_0_1_roundtrip" ./api_0_1_roundtrip
grep -q '^api_0_1_roundtrip: OK' "$tmp/log" || fail "api_0_1_roundtrip did not print OK"

bounded 300 "g++ with libnet.a named" \
  g++ -std=c++20 -I"$prefix/include" "$source_file" "$prefix/lib/libnet.a" -luring -pthread \
  -o echo_archive
needs_library echo_archive 'libnet\.so.*' && fail "echo_archive needs libnet.so"
run_echo ./echo_archive

# TLS: libnet_tls.pc brings libnet and OpenSSL.
cp "$repo/tests/consumers/tls_roundtrip.cc" .
make_certs "$tmp/certs"
read -r -a tls_flags <<<"$(pkg-config --cflags --libs libnet_tls)" ||
  fail "pkg-config does not find libnet_tls"
bounded 300 "g++ with pkg-config --libs libnet_tls" \
  g++ tls_roundtrip.cc "${tls_flags[@]}" -Wl,-rpath,"$prefix/lib" -o tls_shared
needs_library tls_shared "libnet_tls\.so\.${soversion}" || fail "tls_shared does not need libnet_tls.so"
run_tls ./tls_shared "$tmp/certs"
bounded 300 "g++ with libnet_tls.a and libnet.a named" \
  g++ -std=c++20 -I"$prefix/include" tls_roundtrip.cc "$prefix/lib/libnet_tls.a" \
  "$prefix/lib/libnet.a" -lssl -lcrypto -luring -pthread -o tls_archive
run_tls ./tls_archive "$tmp/certs"
needs_library echo_shared 'libssl\.so.*' && fail "echo_shared links OpenSSL without using TLS"

# The resolver: libnet_dns.pc brings libnet and c-ares.
cp "$repo/tests/consumers/dns_roundtrip.cc" .
read -r -a dns_flags <<<"$(pkg-config --cflags --libs libnet_dns)" ||
  fail "pkg-config does not find libnet_dns"
bounded 300 "g++ with pkg-config --libs libnet_dns" \
  g++ dns_roundtrip.cc "${dns_flags[@]}" -Wl,-rpath,"$prefix/lib" -o dns_shared
needs_library dns_shared "libnet_dns\.so\.${soversion}" || fail "dns_shared does not need libnet_dns.so"
run_dns ./dns_shared
read -r -a dns_static_flags <<<"$(pkg-config --libs --static libnet_dns)"
[[ " ${dns_static_flags[*]} " == *" -lcares "* ]] ||
  fail "pkg-config --libs --static libnet_dns does not give -lcares: ${dns_static_flags[*]}"
bounded 300 "g++ with libnet_dns.a and libnet.a named" \
  g++ -std=c++20 -I"$prefix/include" dns_roundtrip.cc "$prefix/lib/libnet_dns.a" \
  "$prefix/lib/libnet.a" -lcares -luring -pthread -o dns_archive
needs_library dns_archive 'libnet\(_dns\)\?\.so.*' && fail "dns_archive needs a libnet shared library"
run_dns ./dns_archive
needs_library echo_shared 'libcares\.so.*' && fail "echo_shared links c-ares without using the resolver"

# The HTTP client, WebSocket, HTTP/2 and the inspector: their .pc files
# bring the libraries below; the coroutine handlers and FastCGI are libnet's.
# From the archives, the libraries come from pkg-config --static with the
# archives named instead of -lnet*, so that its order is the one tested.
archives_for() {
  local flag
  for flag in $(pkg-config --libs --static "$1"); do
    case "$flag" in
      -lnet*) echo "$prefix/lib/lib${flag#-l}.a" ;;
      -L*) ;;
      *) echo "$flag" ;;
    esac
  done
}
cp "$repo/tests/consumers/http_fetch_roundtrip.cc" "$repo/tests/consumers/ws_roundtrip.cc" \
  "$repo/tests/consumers/http2_roundtrip.cc" "$repo/tests/consumers/server_roundtrip.cc" \
  "$repo/tests/consumers/inspect_roundtrip.cc" .
for program in http_fetch_roundtrip:libnet_http_client ws_roundtrip:libnet_websocket \
  http2_roundtrip:libnet_http2 server_roundtrip:libnet inspect_roundtrip:libnet_inspect; do
  pc=${program#*:} program=${program%:*}
  read -r -a component_flags <<<"$(pkg-config --cflags --libs "$pc")" ||
    fail "pkg-config does not find $pc"
  bounded 300 "g++ with pkg-config --libs $pc" \
    g++ "$program.cc" "${component_flags[@]}" -Wl,-rpath,"$prefix/lib" -o "${program}_shared"
  needs_library "${program}_shared" "${pc}\.so\.${soversion}" ||
    fail "${program}_shared does not need $pc.so"
  mapfile -t archive_flags < <(archives_for "$pc")
  bounded 300 "g++ with the archives of $pc named" \
    g++ -std=c++20 -I"$prefix/include" "$program.cc" "${archive_flags[@]}" -o "${program}_archive"
  needs_library "${program}_archive" 'libnet\(_[a-z_]*\)\?\.so.*' &&
    fail "${program}_archive needs a libnet shared library"
done
run_http ./http_fetch_roundtrip_shared
run_http ./http_fetch_roundtrip_archive
run_ws ./ws_roundtrip_shared
run_ws ./ws_roundtrip_archive
needs_library ws_roundtrip_archive 'libz\.so.*' || fail "ws_roundtrip_archive does not need libz.so"
needs_library echo_shared 'libz\.so.*' && fail "echo_shared links zlib without using WebSocket"
run_h2 ./http2_roundtrip_shared
run_h2 ./http2_roundtrip_archive
read -r -a h2_static_flags <<<"$(pkg-config --libs --static libnet_http2)"
[[ " ${h2_static_flags[*]} " == *" -lnghttp2 "* ]] ||
  fail "pkg-config --libs --static libnet_http2 does not give -lnghttp2: ${h2_static_flags[*]}"
needs_library http2_roundtrip_archive 'libnghttp2\.so.*' ||
  fail "http2_roundtrip_archive does not need libnghttp2.so"
needs_library echo_shared 'libnghttp2\.so.*' && fail "echo_shared links nghttp2 without using HTTP/2"
run_server ./server_roundtrip_shared
run_server ./server_roundtrip_archive
run_inspect ./inspect_roundtrip_shared
run_inspect ./inspect_roundtrip_archive
read -r -a inspect_static_flags <<<"$(pkg-config --libs --static libnet_inspect)"
[[ " ${inspect_static_flags[*]} " == *" -lprofiler "* ]] ||
  fail "pkg-config --libs --static libnet_inspect does not give -lprofiler: ${inspect_static_flags[*]}"
needs_library inspect_roundtrip_archive 'libprofiler\.so.*' ||
  fail "inspect_roundtrip_archive does not need libprofiler.so"
needs_library echo_shared 'libprofiler\.so.*' &&
  fail "echo_shared links libprofiler without using the inspector"

echo "ok: pkg-config consumer: libnet $version linked shared (-lnet), fully static (--static)" \
  "and from libnet.a, each echoed; a program of 0.1 built with deprecation warnings and echoed; libnet_tls shared and from the archives, echoed over" \
  "TLS; libnet_dns shared and from the archives, resolved and echoed; libnet_http_client," \
  "libnet_websocket and libnet_http2 shared and from the archives, fetched, echoed and" \
  "answered over h2c; libnet's coroutine handler and FastCGI and libnet_inspect shared and" \
  "from the archives, answered ($(elapsed) s)"
