#!/usr/bin/env bash
# A CMake project outside the repository builds echo_roundtrip.cc against an
# installed libnet with find_package(libnet 0.5) and nothing else: no C++
# standard of its own, so the build only works if libnet::libnet carries
# cxx_std_20. Checks both targets (libnet::libnet, the static library, and
# libnet::libnet_shared), that the installed tree still works after it is
# moved (the package computes its paths from its own location), and which
# find_package version requests the installed version satisfies. The TLS
# component: tls_roundtrip.cc with find_package(... COMPONENTS tls), linked
# with libnet::tls and libnet::tls_shared, echoes over TLS; echo_roundtrip,
# without TLS, does not need OpenSSL. The resolver component: dns_roundtrip.cc
# with COMPONENTS dns, linked with libnet::dns and libnet::dns_shared, looks
# up localhost and echoes; echo_roundtrip does not need c-ares. The HTTP
# client component: http_fetch_roundtrip.cc with COMPONENTS http_client,
# linked with libnet::http_client and libnet::http_client_shared (which bring
# tls and dns themselves), fetches a body. The WebSocket component:
# ws_roundtrip.cc with COMPONENTS websocket, linked with libnet::websocket
# and libnet::websocket_shared, echoes over a WebSocket; echo_roundtrip does
# not need zlib. The HTTP/2 component: http2_roundtrip.cc with COMPONENTS
# http2, linked with libnet::http2 and libnet::http2_shared, is answered over
# h2c; echo_roundtrip does not need nghttp2. The HTTP server's coroutine
# handlers and FastCGI, which are in libnet itself: server_roundtrip.cc,
# linked with libnet::libnet and libnet::libnet_shared, answers from a
# coroutine and (502) from a FastCgiHandler. The inspector component:
# inspect_roundtrip.cc with COMPONENTS inspect, linked with libnet::inspect
# and libnet::inspect_shared, answers /debug/loops; echo_roundtrip does not
# need libprofiler. The gRPC component: grpc_roundtrip.proto compiled by
# protoc with the installed plugin (libnet_PROTOC_PLUGIN) in an
# add_custom_command, grpc_roundtrip.cc with COMPONENTS grpc, linked with
# libnet::grpc and libnet::grpc_shared, runs the generated service;
# echo_roundtrip does not need protobuf. The package sets libnet_LICENSE
# (MIT).
#
# Needs cmake and g++; prints "ok: ..." and exits 0, or says what failed.
source "$(dirname "${BASH_SOURCE[0]}")/consumer_test_lib.sh"

command -v cmake >/dev/null || fail "cmake is not installed (apt-get install cmake)"
version=$(tr -d '[:space:]' <"$repo/VERSION")
soversion=$(soversion_of "$version")

install_libnet --prefix "$tmp/prefix"

# A copy, so that no header can come from the checkout next to the source.
mkdir project
cp "$repo/tests/consumers/echo_roundtrip.cc" "$repo/tests/consumers/tls_roundtrip.cc" \
  "$repo/tests/consumers/dns_roundtrip.cc" "$repo/tests/consumers/http_fetch_roundtrip.cc" \
  "$repo/tests/consumers/ws_roundtrip.cc" "$repo/tests/consumers/http2_roundtrip.cc" \
  "$repo/tests/consumers/server_roundtrip.cc" "$repo/tests/consumers/inspect_roundtrip.cc" project/
# The .proto at the path its generated header is included by.
mkdir -p project/tests/consumers
cp "$repo/tests/consumers/grpc_roundtrip.cc" project/
cp "$repo/tests/consumers/grpc_roundtrip.proto" project/tests/consumers/
cat >project/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(libnet_consumer CXX)
find_package(libnet 0.5 REQUIRED COMPONENTS tls dns http_client websocket http2 inspect grpc)
if(NOT libnet_LICENSE STREQUAL "MIT")
  message(FATAL_ERROR "libnet_LICENSE is '${libnet_LICENSE}', expected MIT")
endif()
add_executable(echo_roundtrip echo_roundtrip.cc)
target_link_libraries(echo_roundtrip PRIVATE libnet::libnet)
add_executable(echo_roundtrip_shared echo_roundtrip.cc)
target_link_libraries(echo_roundtrip_shared PRIVATE libnet::libnet_shared)
add_executable(tls_roundtrip tls_roundtrip.cc)
target_link_libraries(tls_roundtrip PRIVATE libnet::tls)
add_executable(tls_roundtrip_shared tls_roundtrip.cc)
target_link_libraries(tls_roundtrip_shared PRIVATE libnet::tls_shared)
add_executable(dns_roundtrip dns_roundtrip.cc)
target_link_libraries(dns_roundtrip PRIVATE libnet::dns)
add_executable(dns_roundtrip_shared dns_roundtrip.cc)
target_link_libraries(dns_roundtrip_shared PRIVATE libnet::dns_shared)
add_executable(http_fetch_roundtrip http_fetch_roundtrip.cc)
target_link_libraries(http_fetch_roundtrip PRIVATE libnet::http_client)
add_executable(http_fetch_roundtrip_shared http_fetch_roundtrip.cc)
target_link_libraries(http_fetch_roundtrip_shared PRIVATE libnet::http_client_shared)
add_executable(ws_roundtrip ws_roundtrip.cc)
target_link_libraries(ws_roundtrip PRIVATE libnet::websocket)
add_executable(ws_roundtrip_shared ws_roundtrip.cc)
target_link_libraries(ws_roundtrip_shared PRIVATE libnet::websocket_shared)
add_executable(http2_roundtrip http2_roundtrip.cc)
target_link_libraries(http2_roundtrip PRIVATE libnet::http2)
add_executable(http2_roundtrip_shared http2_roundtrip.cc)
target_link_libraries(http2_roundtrip_shared PRIVATE libnet::http2_shared)
add_executable(server_roundtrip server_roundtrip.cc)
target_link_libraries(server_roundtrip PRIVATE libnet::libnet)
add_executable(server_roundtrip_shared server_roundtrip.cc)
target_link_libraries(server_roundtrip_shared PRIVATE libnet::libnet_shared)
add_executable(inspect_roundtrip inspect_roundtrip.cc)
target_link_libraries(inspect_roundtrip PRIVATE libnet::inspect)
add_executable(inspect_roundtrip_shared inspect_roundtrip.cc)
target_link_libraries(inspect_roundtrip_shared PRIVATE libnet::inspect_shared)
find_program(PROTOC protoc REQUIRED)
set(GEN ${CMAKE_CURRENT_BINARY_DIR}/gen)
set(PROTO tests/consumers/grpc_roundtrip)
add_custom_command(
  OUTPUT ${GEN}/${PROTO}.pb.cc ${GEN}/${PROTO}.pb.h ${GEN}/${PROTO}.libnet.cc ${GEN}/${PROTO}.libnet.h
  COMMAND ${CMAKE_COMMAND} -E make_directory ${GEN}
  COMMAND ${PROTOC} -I${CMAKE_CURRENT_SOURCE_DIR} -I/usr/include --cpp_out=${GEN} --libnet_out=${GEN}
          --plugin=protoc-gen-libnet=${libnet_PROTOC_PLUGIN} ${CMAKE_CURRENT_SOURCE_DIR}/${PROTO}.proto
  DEPENDS ${PROTO}.proto)
foreach(target grpc_roundtrip grpc_roundtrip_shared)
  add_executable(${target} grpc_roundtrip.cc ${GEN}/${PROTO}.pb.cc ${GEN}/${PROTO}.libnet.cc)
  target_include_directories(${target} PRIVATE ${GEN})
endforeach()
target_link_libraries(grpc_roundtrip PRIVATE libnet::grpc)
target_link_libraries(grpc_roundtrip_shared PRIVATE libnet::grpc_shared)
EOF
make_certs "$tmp/certs"

# $1: the build directory, $2: the prefix CMake is told about; then the
# targets to build (default: all).
build_project() {
  local dir=$1 prefix=$2
  shift 2
  bounded 120 "cmake configure ($prefix)" cmake -S project -B "$dir" -DCMAKE_PREFIX_PATH="$prefix"
  # Twenty-two programs on a shared two-core machine.
  bounded 420 "cmake build ($prefix)" cmake --build "$dir" --parallel 2 ${1:+--target "$@"}
}

build_project build "$tmp/prefix"
grep -q -- '-std=gnu++20\|-std=c++20' build/CMakeFiles/echo_roundtrip.dir/flags.make ||
  fail "the consumer was not compiled as C++20 (libnet::libnet's cxx_std_20 did not reach it)"
run_echo build/echo_roundtrip
run_echo build/echo_roundtrip_shared
run_tls build/tls_roundtrip "$tmp/certs"
run_tls build/tls_roundtrip_shared "$tmp/certs"
needs_library build/tls_roundtrip_shared "libnet_tls\.so\.${soversion}" ||
  fail "tls_roundtrip_shared (libnet::tls_shared) does not need libnet_tls.so.${soversion}"
needs_library build/echo_roundtrip_shared 'libssl\.so.*' &&
  fail "echo_roundtrip_shared links OpenSSL without using TLS"
run_dns build/dns_roundtrip
run_dns build/dns_roundtrip_shared
needs_library build/dns_roundtrip_shared "libnet_dns\.so\.${soversion}" ||
  fail "dns_roundtrip_shared (libnet::dns_shared) does not need libnet_dns.so.${soversion}"
needs_library build/dns_roundtrip 'libnet\(_dns\)\?\.so.*' &&
  fail "dns_roundtrip (libnet::dns) needs a libnet shared library; the archives were expected"
needs_library build/dns_roundtrip 'libcares\.so.*' ||
  fail "dns_roundtrip (libnet::dns) does not need libcares.so"
needs_library build/echo_roundtrip_shared 'libcares\.so.*' &&
  fail "echo_roundtrip_shared links c-ares without using the resolver"
run_http build/http_fetch_roundtrip
run_http build/http_fetch_roundtrip_shared
needs_library build/http_fetch_roundtrip_shared "libnet_http_client\.so\.${soversion}" ||
  fail "http_fetch_roundtrip_shared (libnet::http_client_shared) does not need libnet_http_client.so"
needs_library build/http_fetch_roundtrip 'libnet\(_[a-z_]*\)\?\.so.*' &&
  fail "http_fetch_roundtrip (libnet::http_client) needs a libnet shared library"
run_ws build/ws_roundtrip
run_ws build/ws_roundtrip_shared
needs_library build/ws_roundtrip_shared "libnet_websocket\.so\.${soversion}" ||
  fail "ws_roundtrip_shared (libnet::websocket_shared) does not need libnet_websocket.so"
needs_library build/ws_roundtrip 'libnet\(_[a-z_]*\)\?\.so.*' &&
  fail "ws_roundtrip (libnet::websocket) needs a libnet shared library; the archives were expected"
needs_library build/ws_roundtrip 'libz\.so.*' || fail "ws_roundtrip (libnet::websocket) does not need libz.so"
needs_library build/echo_roundtrip_shared 'libz\.so.*' &&
  fail "echo_roundtrip_shared links zlib without using WebSocket"
run_h2 build/http2_roundtrip
run_h2 build/http2_roundtrip_shared
needs_library build/http2_roundtrip_shared "libnet_http2\.so\.${soversion}" ||
  fail "http2_roundtrip_shared (libnet::http2_shared) does not need libnet_http2.so"
needs_library build/http2_roundtrip 'libnet\(_[a-z_0-9]*\)\?\.so.*' &&
  fail "http2_roundtrip (libnet::http2) needs a libnet shared library; the archives were expected"
needs_library build/http2_roundtrip 'libnghttp2\.so.*' ||
  fail "http2_roundtrip (libnet::http2) does not need libnghttp2.so"
needs_library build/echo_roundtrip_shared 'libnghttp2\.so.*' &&
  fail "echo_roundtrip_shared links nghttp2 without using HTTP/2"
run_server build/server_roundtrip
run_server build/server_roundtrip_shared
needs_library build/server_roundtrip 'libnet\(_[a-z_0-9]*\)\?\.so.*' &&
  fail "server_roundtrip (libnet::libnet) needs a libnet shared library; the archive was expected"
needs_library build/server_roundtrip_shared "libnet\.so\.${soversion}" ||
  fail "server_roundtrip_shared (libnet::libnet_shared) does not need libnet.so.${soversion}"
run_inspect build/inspect_roundtrip
run_inspect build/inspect_roundtrip_shared
needs_library build/inspect_roundtrip_shared "libnet_inspect\.so\.${soversion}" ||
  fail "inspect_roundtrip_shared (libnet::inspect_shared) does not need libnet_inspect.so"
needs_library build/inspect_roundtrip 'libnet\(_[a-z_0-9]*\)\?\.so.*' &&
  fail "inspect_roundtrip (libnet::inspect) needs a libnet shared library; the archives were expected"
needs_library build/inspect_roundtrip 'libprofiler\.so.*' ||
  fail "inspect_roundtrip (libnet::inspect) does not need libprofiler.so"
needs_library build/echo_roundtrip_shared 'libprofiler\.so.*' &&
  fail "echo_roundtrip_shared links libprofiler without using the inspector"
run_grpc build/grpc_roundtrip
run_grpc build/grpc_roundtrip_shared
needs_library build/grpc_roundtrip_shared "libnet_grpc\.so\.${soversion}" ||
  fail "grpc_roundtrip_shared (libnet::grpc_shared) does not need libnet_grpc.so"
needs_library build/grpc_roundtrip 'libnet\(_[a-z_0-9]*\)\?\.so.*' &&
  fail "grpc_roundtrip (libnet::grpc) needs a libnet shared library; the archives were expected"
needs_library build/grpc_roundtrip 'libprotobuf\.so.*' ||
  fail "grpc_roundtrip (libnet::grpc) does not need libprotobuf.so"
needs_library build/echo_roundtrip_shared 'libprotobuf\.so.*' &&
  fail "echo_roundtrip_shared links protobuf without using gRPC"
needs_library build/echo_roundtrip 'libnet\.so.*' &&
  fail "echo_roundtrip (libnet::libnet) needs libnet.so; the static library was expected"
needs_library build/echo_roundtrip_shared "libnet\.so\.${soversion}" ||
  fail "echo_roundtrip_shared (libnet::libnet_shared) does not need libnet.so.${soversion}"

# Moved: nothing in the installed package may name the old prefix.
mv prefix moved-prefix
# Only what is run below: the configure step finds every component there.
build_project build-moved "$tmp/moved-prefix" echo_roundtrip echo_roundtrip_shared
run_echo build-moved/echo_roundtrip
run_echo build-moved/echo_roundtrip_shared
grep -q "$tmp/moved-prefix/lib/libnet.a" build-moved/CMakeFiles/echo_roundtrip.dir/link.txt ||
  fail "after the move, echo_roundtrip did not link $tmp/moved-prefix/lib/libnet.a"

# Version requests: the same API (MAJOR.MINOR before 1.0) and not newer than
# installed (0.5.0); a request of MAJOR alone takes any MINOR.
mkdir versions
cat >versions/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.19)
project(libnet_versions CXX)
foreach(request IN LISTS ACCEPT REJECT)
  unset(libnet_DIR CACHE)
  find_package(libnet ${request} QUIET)
  if(request IN_LIST ACCEPT AND NOT libnet_FOUND)
    message(SEND_ERROR "find_package(libnet ${request}) did not accept ${libnet_VERSION}")
  elseif(request IN_LIST REJECT AND libnet_FOUND)
    message(SEND_ERROR "find_package(libnet ${request}) accepted ${libnet_VERSION}")
  endif()
endforeach()
EOF
[[ $version == 0.5.0 ]] || fail "update the version requests here for VERSION $version"
bounded 120 "find_package version requests" cmake -S versions -B build-versions \
  -DCMAKE_PREFIX_PATH="$tmp/moved-prefix" \
  "-DACCEPT=0;0.5;0.5.0;0.1...<1;0...0.5.0;0.5...<0.6" \
  "-DREJECT=0.1;0.4;0.4.0;0.0.9;0.5.1;0.6;1;1.0;0.6...<1;1...<2;0.0.1...<0.5"

echo "ok: cmake consumer: find_package(libnet 0.5 COMPONENTS tls dns http_client websocket" \
  "http2 inspect grpc), grpc_roundtrip generated with the installed protoc-gen-libnet, libnet::libnet(_shared) (echo, coroutine handler, FastCGI)," \
  "libnet::tls(_shared), libnet::dns(_shared), libnet::http_client(_shared)," \
  "libnet::websocket(_shared), libnet::http2(_shared) and libnet::inspect(_shared) built" \
  "and ran, also from a" \
  "moved prefix; version checks hold ($(elapsed) s)"
