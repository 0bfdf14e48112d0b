#!/usr/bin/env bash
# libnet's interop client (examples/grpc/interop_client, each backend)
# against the grpc++ 1.51 and grpcio 1.51 interop servers: every case of the
# interop matrix, plaintext and TLS (tests/grpc/interop/interop_matrix.py).
set -euo pipefail

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

# The grpc++ server's libgrpc is not instrumented: TSan's reports are off for
# it only (as tests/grpc/interop does); libnet's client keeps the test's.
cpp_server="env TSAN_OPTIONS=report_bugs=0 $(runfile tests/grpc/peers/interop_server)"
client=$(runfile examples/grpc/interop_client)
peers=$(dirname "$(runfile tests/grpc/peers/py_interop_server.py)")
stubs=${TEST_TMPDIR:-$(mktemp -d)}/stubs
$python "$peers/grpc_stubs.py" "$stubs"

exec timeout -k 5 280 $python "$(runfile tests/grpc/interop/interop_matrix.py)" \
  --grpc-server c++ "$cpp_server" \
  --grpc-server python "$python $peers/py_interop_server.py --stubs_dir $stubs" \
  --grpc-server libnet "$(runfile examples/grpc/interop_server) --backend epoll" \
  --grpc-client libnet-epoll "$client --backend epoll" \
  --grpc-client libnet-uring "$client --backend uring" \
  --jobs 4
