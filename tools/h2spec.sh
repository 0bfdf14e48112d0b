#!/usr/bin/env bash
# Runs h2spec, the HTTP/2 conformance suite, against examples/http's
# http_server: for each backend once over h2c (HTTP/2 with prior knowledge on
# the plain port, --h2c) and once over TLS (ALPN h2), every case of the suite,
# the strict ones (h2spec -S: what a SHOULD asks, such as a GOAWAY before
# closing on a connection error) included.
#
#   tools/h2spec.sh [--backend epoll|uring|both] [--bindir DIR] [-- BAZEL_OPTION...]
#       --backend     the poller backends to run (default: both)
#       --bindir DIR  take DIR/http_server instead of building
#                     //examples/http:http_server (BAZEL_OPTIONs go to that build)
#   tools/h2spec.sh --external h2c:PORT|tls:PORT ...
#       runs the suite against a server already listening on 127.0.0.1:PORT
#       (another HTTP/2 server, to check the suite itself); starts nothing
#
# h2spec is the version tools/h2spec/go.mod pins, built with `go` (tools/setup.sh
# installs Debian's golang-go when there is none) into .cache/h2spec/bin, and
# rebuilt only when go.mod, go.sum or the Go version changes; its module cache
# is .cache/h2spec/gopath. A fresh certificate (tools/make_test_certs.py) is
# made in a temporary directory for the TLS runs.
#
# Prints one line per run ("h2spec uring h2c: 146 tests, 146 passed, 0 skipped,
# 0 failed") followed by every failed case by its h2spec id (h2spec
# http2/4.2/2 ... runs only that one); the full output of each run, its JUnit
# report and the server's output are kept in .cache/h2spec/logs. The servers
# are stopped with SIGTERM and must exit 0. Exits non-zero when a case failed,
# h2spec stopped early, or a server failed to start, crashed or exited
# otherwise than cleanly.
#
# H2SPEC_CASE_TIMEOUT (default 5) is h2spec's wait for each expected frame, in
# seconds; H2SPEC_RUN_TIMEOUT (default 900) bounds a whole run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=$root/.cache/h2spec
logs=$cache/logs
case_timeout=${H2SPEC_CASE_TIMEOUT:-5}
run_timeout=${H2SPEC_RUN_TIMEOUT:-900}
python=/usr/bin/python3
[[ -x $python ]] || python=python3

usage() {
  sed -n '2,32s/^# \{0,1\}//p' "$0"
}

die() {
  echo "h2spec.sh: $*" >&2
  exit 2
}

backends=(epoll uring)
bindir=""
externals=()
bazel_options=()
while (($#)); do
  case $1 in
    --backend)
      (($# >= 2)) || die "--backend needs epoll, uring or both"
      case $2 in
        epoll | uring) backends=("$2") ;;
        both) backends=(epoll uring) ;;
        *) die "--backend '$2': epoll, uring or both" ;;
      esac
      shift 2
      ;;
    --bindir)
      (($# >= 2)) || die "--bindir needs a directory"
      bindir=$2
      shift 2
      ;;
    --external)
      (($# >= 2)) && [[ $2 =~ ^(h2c|tls):[0-9]+$ ]] || die "--external needs h2c:PORT or tls:PORT"
      externals+=("$2")
      shift 2
      ;;
    --)
      shift
      bazel_options=("$@")
      break
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      usage >&2
      die "unknown argument '$1'"
      ;;
  esac
done

# The go command: on PATH, else the upstream tarball's usual place.
find_go() {
  if [[ -n ${GO:-} ]]; then
    echo "$GO"
  elif command -v go >/dev/null 2>&1; then
    command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then
    echo /usr/local/go/bin/go
  else
    return 1
  fi
}

# Builds the pinned h2spec unless the binary there was built from the same
# go.mod, go.sum and Go version. Everything Go writes stays under $cache: the
# module cache (writable, so `rm -rf .cache` works), the build cache, GOPATH.
build_h2spec() {
  local go signature
  go=$(find_go) || die "no go command (tools/setup.sh installs golang-go)"
  signature="$("$go" version) $(cat tools/h2spec/go.mod tools/h2spec/go.sum | sha256sum)"
  h2spec=$cache/bin/h2spec
  if [[ -x $h2spec && -f $h2spec.signature && $(<"$h2spec.signature") == "$signature" ]]; then
    return 0
  fi
  echo "h2spec.sh: building h2spec ($("$go" version))" >&2
  mkdir -p "$cache/bin"
  (
    cd tools/h2spec
    export GOPATH=$cache/gopath GOMODCACHE=$cache/gopath/pkg/mod GOCACHE=$cache/gocache
    export GOFLAGS="-modcacherw -mod=readonly" GOTOOLCHAIN=local GO111MODULE=on
    "$go" build -o "$h2spec.tmp" github.com/summerwind/h2spec/cmd/h2spec
  ) || die "building h2spec failed (log above)"
  mv "$h2spec.tmp" "$h2spec"
  echo "$signature" >"$h2spec.signature"
}

# Sets $server to the http_server binary, built unless --bindir named one.
find_server() {
  if [[ -n $bindir ]]; then
    server=$bindir/http_server
  else
    echo "h2spec.sh: bazel build //examples/http:http_server" >&2
    bazel build "${bazel_options[@]}" //examples/http:http_server >&2 ||
      die "bazel build //examples/http:http_server failed"
    server=$root/bazel-bin/examples/http/http_server
  fi
  [[ -x $server ]] || die "$server is not an executable"
}

tmp=""
server_pid="" # the server running now, not yet waited for
cleanup() {
  [[ -n $server_pid ]] && kill -KILL "$server_pid" 2>/dev/null
  [[ -n $tmp ]] && rm -rf "$tmp"
  return 0
}
trap cleanup EXIT

# Starts http_server with backend $1 in mode $2 (h2c or tls); sets
# $server_pid and $port, or returns 1 when it does not announce its port
# within 20 seconds.
start_server() {
  local backend=$1 mode=$2 out=$logs/server-$1-$2.log args _
  args=(--address 127.0.0.1 --port 0 --backend "$backend")
  if [[ $mode == h2c ]]; then
    args+=(--h2c)
  else
    args+=(--tls-cert "$tmp/certs/server.pem" --tls-key "$tmp/certs/server.key")
  fi
  # Made here: the redirection below happens in the child, maybe after the first look.
  : >"$out"
  "$server" "${args[@]}" >"$out" 2>&1 &
  server_pid=$!
  port=""
  for _ in $(seq 200); do # bounded: 20 s
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out")
    [[ -n $port ]] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "h2spec.sh: http_server ${args[*]} did not start:" >&2
  tail -n 20 "$out" >&2
  return 1
}

# Stops the server with SIGTERM; returns 1 unless it was still running and
# then exited 0 within 20 seconds (what went wrong on stderr).
stop_server() {
  local label=$1 pid=$server_pid status=0
  if ! kill -0 "$pid" 2>/dev/null; then
    server_pid=""
    wait "$pid" || status=$?
    echo "h2spec $label: the server died during the run (exit status $status)" >&2
    return 1
  fi
  kill -TERM "$pid"
  if ! timeout 20 tail --pid="$pid" -f /dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    server_pid=""
    wait "$pid" 2>/dev/null || true
    echo "h2spec $label: the server did not stop within 20 s of SIGTERM" >&2
    return 1
  fi
  server_pid=""
  wait "$pid" || status=$?
  if ((status != 0)); then
    echo "h2spec $label: the server exited with status $status after SIGTERM" >&2
    return 1
  fi
}

# Runs the suite against 127.0.0.1:$2, over TLS when $3 is tls; $1 names the
# run. Prints the summary line and the failed cases; returns 1 if any failed
# or h2spec did not finish.
run_suite() {
  local label=$1 port=$2 mode=$3 name=${1// /-} args status=0
  local log=$logs/h2spec-$name.log report=$logs/h2spec-$name.xml
  args=(-h 127.0.0.1 -p "$port" -o "$case_timeout" -S -P /hello -j "$report")
  [[ $mode == tls ]] && args+=(-t -k)
  rm -f "$report"
  timeout "$run_timeout" "$h2spec" "${args[@]}" >"$log" 2>&1 || status=$?
  if [[ ! -s $report ]]; then
    if ((status == 124)); then
      echo "h2spec $label: stopped after ${run_timeout}s (H2SPEC_RUN_TIMEOUT), log $log"
    else
      echo "h2spec $label: h2spec stopped early (exit status $status), log $log"
    fi
    tail -n 5 "$log" | sed 's/^/  /'
    return 1
  fi
  local summary
  status=0
  summary=$("$python" tools/h2spec/junit_summary.py "$report") || status=$?
  echo "h2spec $label: $summary"
  return $status
}

# Starts the server for backend $1 in mode $2, runs the suite, stops it.
run_backend() {
  local backend=$1 mode=$2 label="$1 $2" status=0
  if ! start_server "$backend" "$mode"; then
    kill -KILL "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
    echo "h2spec $label: the server did not start, log $logs/server-$backend-$mode.log"
    return 1
  fi
  run_suite "$label" "$port" "$mode" || status=1
  if ! stop_server "$label"; then
    echo "h2spec $label: the server did not exit cleanly, log $logs/server-$backend-$mode.log"
    status=1
  fi
  return $status
}

mkdir -p "$logs"
build_h2spec
overall=0
if ((${#externals[@]})); then
  for target in "${externals[@]}"; do
    run_suite "external ${target%%:*}" "${target#*:}" "${target%%:*}" || overall=1
  done
  exit $overall
fi

find_server
tmp=$(mktemp -d "${TMPDIR:-/tmp}/h2spec.XXXXXX")
"$python" tools/make_test_certs.py "$tmp/certs" >&2 || die "making the test certificate failed"
for backend in "${backends[@]}"; do
  for mode in h2c tls; do
    run_backend "$backend" "$mode" || overall=1
  done
done
exit $overall
