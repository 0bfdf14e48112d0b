#!/usr/bin/env bash
# bazel_consumer_test: depends on libnet from a new Bazel workspace outside the
# repository, exactly as the README tells a user to: a WORKSPACE with
# local_repository + libnet_dependencies(), a .bazelrc with the README's lines
# (C++20), a BUILD with one cc_binary on @libnet//:libnet, and plain `bazel`
# (Debian's wrapper, which runs bazel-4 when the workspace has no
# .bazelversion). Builds tests/consumers/echo_roundtrip.cc there with
# downloads disabled, checks that Bazel set up only local repositories, and
# runs the program (it must print OK and exit 0). The same for
# tls_roundtrip.cc on @libnet//:libnet_tls, with certificates made by
# tools/make_test_certs.py, for dns_roundtrip.cc on @libnet//:libnet_dns
# and @libnet//net/dns:coro (c-ares from the system, as -lcares), for
# http_fetch_roundtrip.cc on @libnet//:libnet_http_client, for
# ws_roundtrip.cc on @libnet//:libnet_websocket (zlib from the system) and
# for http2_roundtrip.cc on @libnet//:libnet_http2 and @libnet//net/http2:coro
# (nghttp2 from the system), for server_roundtrip.cc on
# @libnet//:libnet_server_coro and @libnet//:libnet_fastcgi and for
# inspect_roundtrip.cc on @libnet//:libnet_inspect (gperftools' libprofiler
# from the system), and for grpc_roundtrip.cc on the code generated from
# grpc_roundtrip.proto by @libnet//net/grpc:proto.bzl (the system protoc and
# libnet's plugin, built from @libnet) in the workspace's own package.
#
# The workspace and its Bazel output base live in one temporary directory,
# with a Bazel server of their own; both are removed at the end, whatever
# happens. Prints one "ok: ..." line on success.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd -P)
started=$SECONDS

fail() {
  echo "FAIL: bazel_consumer_test: $*" >&2
  exit 1
}

command -v bazel >/dev/null ||
  fail "no 'bazel' on PATH (Debian 12: apt-get install bazel-bootstrap)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/libnet-bazel-consumer.XXXXXX")
tmp=$(cd "$tmp" && pwd -P)
workspace=$tmp/workspace
output_base=$tmp/output_base
log=$tmp/bazel.log
# The server shuts itself down if this script is killed before its trap runs.
# The user's ~/.bazelrc is skipped, so that the test checks the lines the README
# gives; the system one stays (Debian's sets Bazel's install base).
startup=(--output_base="$output_base" --max_idle_secs=60 --nohome_rc)

cleanup() {
  if [[ -d "$workspace" ]]; then
    (cd "$workspace" && timeout 60 bazel "${startup[@]}" shutdown) >/dev/null 2>&1 || true
  fi
  # Bazel leaves its output base read-only.
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

case "$tmp/" in
  "$repo"/*) fail "the temporary directory $tmp is inside the repository; set TMPDIR elsewhere" ;;
esac

mkdir "$workspace"
cp "$repo/tests/consumers/echo_roundtrip.cc" "$repo/tests/consumers/tls_roundtrip.cc" \
  "$repo/tests/consumers/dns_roundtrip.cc" "$repo/tests/consumers/http_fetch_roundtrip.cc" \
  "$repo/tests/consumers/ws_roundtrip.cc" "$repo/tests/consumers/http2_roundtrip.cc" \
  "$repo/tests/consumers/server_roundtrip.cc" "$repo/tests/consumers/inspect_roundtrip.cc" \
  "$repo/tests/consumers/grpc_roundtrip.cc" "$workspace/"
# The .proto in a package of the workspace, at the path grpc_roundtrip.cc
# includes its generated header by.
mkdir -p "$workspace/tests/consumers"
cp "$repo/tests/consumers/grpc_roundtrip.proto" "$workspace/tests/consumers/"
cat >"$workspace/tests/consumers/BUILD" <<'EOF'
load("@libnet//net/grpc:proto.bzl", "libnet_proto_library")

libnet_proto_library(
    name = "grpc_roundtrip_proto",
    srcs = ["grpc_roundtrip.proto"],
    visibility = ["//visibility:public"],
)
EOF
cat >"$workspace/WORKSPACE" <<EOF
local_repository(
    name = "libnet",
    path = "$repo",
)

load("@libnet//:deps.bzl", "libnet_dependencies")

libnet_dependencies()
EOF
cat >"$workspace/.bazelrc" <<'EOF'
# libnet's headers need C++20; Bazel's auto-configured toolchain says -std=c++0x.
build --cxxopt=-std=c++20
# Debian's /etc/bazel/bazelrc turns on --sandbox_debug, which prints the
# sandbox's trace for every action that writes to stderr (a warning, an error).
build --nosandbox_debug
EOF
cat >"$workspace/BUILD" <<'EOF'
cc_binary(
    name = "echo_roundtrip",
    srcs = ["echo_roundtrip.cc"],
    deps = ["@libnet//:libnet", "@libnet//:libnet_coro"],
)

cc_binary(
    name = "tls_roundtrip",
    srcs = ["tls_roundtrip.cc"],
    deps = ["@libnet//:libnet", "@libnet//:libnet_tls"],
)

cc_binary(
    name = "dns_roundtrip",
    srcs = ["dns_roundtrip.cc"],
    deps = [
        "@libnet//:libnet",
        "@libnet//:libnet_coro",
        "@libnet//:libnet_dns",
        "@libnet//net/dns:coro",
    ],
)

cc_binary(
    name = "http_fetch_roundtrip",
    srcs = ["http_fetch_roundtrip.cc"],
    deps = ["@libnet//:libnet", "@libnet//:libnet_http_client"],
)

cc_binary(
    name = "ws_roundtrip",
    srcs = ["ws_roundtrip.cc"],
    deps = ["@libnet//:libnet", "@libnet//:libnet_websocket"],
)

cc_binary(
    name = "http2_roundtrip",
    srcs = ["http2_roundtrip.cc"],
    deps = [
        "@libnet//:libnet",
        "@libnet//:libnet_coro",
        "@libnet//:libnet_http2",
        "@libnet//net/http2:coro",
    ],
)

cc_binary(
    name = "server_roundtrip",
    srcs = ["server_roundtrip.cc"],
    deps = [
        "@libnet//:libnet",
        "@libnet//:libnet_coro",
        "@libnet//:libnet_fastcgi",
        "@libnet//:libnet_server_coro",
    ],
)

cc_binary(
    name = "inspect_roundtrip",
    srcs = ["inspect_roundtrip.cc"],
    deps = ["@libnet//:libnet", "@libnet//:libnet_inspect"],
)

cc_binary(
    name = "grpc_roundtrip",
    srcs = ["grpc_roundtrip.cc"],
    deps = [
        "//tests/consumers:grpc_roundtrip_proto",
        "@libnet//:libnet",
        "@libnet//net/grpc",
    ],
)
EOF

# --experimental_repository_disable_download makes any download fail, network
# or not, and an empty repository cache of its own means that nothing fetched
# earlier on this machine can stand in for one.
cd "$workspace"
if ! timeout 900 bazel "${startup[@]}" build \
  --experimental_repository_disable_download \
  --repository_cache="$tmp/repository_cache" \
  //:echo_roundtrip //:tls_roundtrip //:dns_roundtrip //:http_fetch_roundtrip //:ws_roundtrip \
  //:http2_roundtrip //:server_roundtrip //:inspect_roundtrip //:grpc_roundtrip \
  >"$log" 2>&1; then
  grep -m 20 -E '^ERROR|error:' "$log" >&2 || true
  tail -n 5 "$log" >&2
  fail "bazel build of the round trips failed in a workspace that depends on @libnet (log above)"
fi

# What Bazel set up under external/: the built-in tools, the auto-configured
# toolchain and platform (made on this machine), libnet itself, and libnet's
# stand-ins, which must be links into this checkout.
allowed=" bazel_tools platforms local_config_cc local_config_cc_toolchains local_config_platform local_config_sh libnet rules_cc rules_java "
for entry in "$output_base"/external/*; do
  name=${entry##*/}
  [[ "$name" == *.marker ]] && continue
  [[ "$allowed" == *" $name "* ]] || fail "the build set up external/$name, which is not a local repository"
done
for name in rules_cc rules_java; do
  target=$(readlink -f "$output_base/external/$name/WORKSPACE" || true)
  [[ "$target" == "$repo/third_party/$name/WORKSPACE" ]] ||
    fail "@$name is not libnet's stand-in (external/$name/WORKSPACE -> '${target}')"
done

binary="$workspace/bazel-bin/echo_roundtrip"
status=0
output=$(timeout 30 "$binary" 2>&1) || status=$?
if ((status != 0)) || [[ "$output" != *"echo_roundtrip: OK"* ]]; then
  printf '%s\n' "$output" >&2
  fail "echo_roundtrip built in the consumer workspace exited $status without printing OK"
fi

certs=$tmp/certs
python3 "$repo/tools/make_test_certs.py" "$certs" || fail "could not make test certificates"
status=0
output=$(timeout 30 "$workspace/bazel-bin/tls_roundtrip" "$certs/server.pem" "$certs/server.key" \
  "$certs/ca.pem" 2>&1) || status=$?
if ((status != 0)) || [[ "$output" != *"tls_roundtrip: OK"* ]]; then
  printf '%s\n' "$output" >&2
  fail "tls_roundtrip built in the consumer workspace exited $status without printing OK"
fi

status=0
output=$(timeout 30 "$workspace/bazel-bin/dns_roundtrip" 2>&1) || status=$?
if ((status != 0)) || [[ "$output" != *"dns_roundtrip: OK"* ]]; then
  printf '%s\n' "$output" >&2
  fail "dns_roundtrip built in the consumer workspace exited $status without printing OK"
fi

for program in http_fetch_roundtrip ws_roundtrip http2_roundtrip server_roundtrip inspect_roundtrip \
  grpc_roundtrip; do
  status=0
  output=$(timeout 30 "$workspace/bazel-bin/$program" 2>&1) || status=$?
  if ((status != 0)) || [[ "$output" != *"$program: OK"* ]]; then
    printf '%s\n' "$output" >&2
    fail "$program built in the consumer workspace exited $status without printing OK"
  fi
done

echo "ok: a workspace outside the repository built and ran echo_roundtrip, tls_roundtrip," \
  "dns_roundtrip, http_fetch_roundtrip, ws_roundtrip, http2_roundtrip, server_roundtrip," \
  "inspect_roundtrip and grpc_roundtrip (libnet_proto_library) against @libnet" \
  "with downloads disabled ($((SECONDS - started)) s)"
