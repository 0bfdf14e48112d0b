# Sourced by the consumer tests (tests/consumers/*_test.sh), which check
# libnet the way a program outside this repository uses it: installed by
# tools/install.sh into a temporary prefix, then built from a temporary
# directory with CMake, pkg-config or a plain compiler command line.
#
# Gives them: $repo (the checkout), $tmp (their scratch directory, outside
# the checkout, removed on exit, and the current directory), fail MESSAGE,
# bounded SECONDS WHAT COMMAND... (runs COMMAND with a time limit, its output
# in $tmp/log, shown when it fails), install_libnet ARGS... (tools/install.sh
# under a limit), run_echo PROGRAM (runs an echo_roundtrip build, checks it
# says OK; run_tls, run_dns, run_http, run_ws, run_h2, run_server,
# run_inspect and run_grpc the same for the other programs), needs_library
# PROGRAM REGEX (whether PROGRAM's dynamic section has a NEEDED entry
# matching REGEX) and elapsed (seconds since the test
# started).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
test_name=$(basename "$0" .sh)
started=$SECONDS

fail() {
  echo "FAIL: $test_name: $*" >&2
  exit 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/libnet-$test_name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
case "$(realpath "$tmp")/" in
  "$(realpath "$repo")"/*) fail "the scratch directory $tmp is inside the checkout; set TMPDIR elsewhere" ;;
esac
cd "$tmp"

bounded() {
  local seconds=$1 what=$2 status=0
  shift 2
  timeout --kill-after=10 "$seconds" "$@" >"$tmp/log" 2>&1 || status=$?
  if ((status != 0)); then
    tail -n 40 "$tmp/log" >&2
    if ((status == 124 || status == 137)); then
      fail "$what: no result within ${seconds}s"
    fi
    fail "$what: exit status $status (output above)"
  fi
}

# The first install on a fresh machine starts Bazel and compiles libnet with
# --config=opt: minutes on two cores. Later ones take seconds.
install_libnet() {
  bounded "${LIBNET_INSTALL_TIMEOUT:-1200}" "tools/install.sh $*" "$repo/tools/install.sh" "$@"
}

# echo_roundtrip stops itself after 10 s without an echo.
run_echo() {
  bounded 30 "running $1" "$1"
  grep -q '^echo_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'echo_roundtrip: OK'"
}

# soversion_of VERSION: the version in the libraries' sonames (tools/install.sh):
# MAJOR.MINOR before 1.0 (libnet.so.0.5), MAJOR from 1.0 on.
soversion_of() {
  local major=${1%%.*} rest=${1#*.}
  if ((major == 0)); then echo "0.${rest%%.*}"; else echo "$major"; fi
}

needs_library() {
  local dynamic
  dynamic=$(readelf -d "$1" 2>&1) || fail "readelf -d $1: $dynamic"
  grep -q "(NEEDED).*\[$2\]" <<<"$dynamic"
}

elapsed() {
  echo $((SECONDS - started))
}

# make_certs DIR: a CA and a server certificate it signs (for 127.0.0.1), for
# tls_roundtrip (tools/make_test_certs.py, with the openssl command).
make_certs() {
  bounded 60 "tools/make_test_certs.py" python3 "$repo/tools/make_test_certs.py" "$1"
}

# run_tls PROGRAM CERTDIR: a tls_roundtrip build echoed over TLS.
run_tls() {
  bounded 30 "running $1" "$1" "$2/server.pem" "$2/server.key" "$2/ca.pem"
  grep -q '^tls_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'tls_roundtrip: OK'"
}

# run_dns PROGRAM: a dns_roundtrip build resolved localhost and echoed.
run_dns() {
  bounded 30 "running $1" "$1"
  grep -q '^dns_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'dns_roundtrip: OK'"
}

# run_http PROGRAM: an http_fetch_roundtrip build fetched its body.
run_http() {
  bounded 30 "running $1" "$1"
  grep -q '^http_fetch_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'http_fetch_roundtrip: OK'"
}

# run_ws PROGRAM: a ws_roundtrip build echoed over a WebSocket.
run_ws() {
  bounded 30 "running $1" "$1"
  grep -q '^ws_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'ws_roundtrip: OK'"
}

# run_h2 PROGRAM: an http2_roundtrip build was answered over h2c.
run_h2() {
  bounded 30 "running $1" "$1"
  grep -q '^http2_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'http2_roundtrip: OK'"
}

# run_server PROGRAM: a server_roundtrip build answered from a coroutine and
# from FastCGI (502).
run_server() {
  bounded 30 "running $1" "$1"
  grep -q '^server_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'server_roundtrip: OK'"
}

# run_grpc PROGRAM: a grpc_roundtrip build ran its generated service.
run_grpc() {
  bounded 30 "running $1" "$1"
  grep -q '^grpc_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'grpc_roundtrip: OK'"
}

# run_inspect PROGRAM: an inspect_roundtrip build answered /debug/loops.
run_inspect() {
  bounded 30 "running $1" "$1"
  grep -q '^inspect_roundtrip: OK' "$tmp/log" || fail "$1 did not print 'inspect_roundtrip: OK'"
}
