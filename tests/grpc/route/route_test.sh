#!/usr/bin/env bash
# examples/grpc/route's route_server called by grpcio (route_test.py): both
# backends, one loop and two I/O loops, h2c and TLS.
set -euo pipefail
here=$(dirname "$0")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

runfile() {
  local path
  for path in "${TEST_SRCDIR:-}/libnet/$1" "${RUNFILES_DIR:-}/libnet/$1" "$0.runfiles/libnet/$1"; do
    if [[ -e "$path" ]]; then
      echo "$path"
      return 0
    fi
  done
  fail "$1 not found in the runfiles"
}

python=/usr/bin/python3
[[ -x $python ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
$python -c "import grpc" 2>/dev/null || fail "python3-grpcio is needed (tools/setup.sh installs it)"
[[ -x /usr/bin/protoc && -x /usr/bin/grpc_python_plugin ]] ||
  fail "protoc and grpc_python_plugin are needed (tools/setup.sh installs them)"
server=$(runfile examples/grpc/route/route_server)
proto=$(runfile examples/grpc/route/route_guide.proto)
stubs=${TEST_TMPDIR:-$(mktemp -d)}/stubs
exec timeout -k 5 150 $python "$here/route_test.py" "$server" "$proto" "$stubs"
