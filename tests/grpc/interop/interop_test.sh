#!/usr/bin/env bash
# The interop matrix of grpc++ 1.51, grpcio 1.51 and libnet's interop server
# (examples/grpc, on each backend): each client against each server, every
# case, plaintext and TLS (interop_matrix.py prints the matrix and fails on
# any failed case or misbehaving server).
set -euo pipefail
here=$(dirname "$0")

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Prints the path of runfile $1 (a workspace-relative path), or fails.
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

# Debian's python3 has python3-grpcio (the PATH one may not).
python=/usr/bin/python3
[[ -x $python ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
$python -c "import grpc" 2>/dev/null || fail "python3-grpcio is needed (tools/setup.sh installs it)"
[[ -x /usr/bin/protoc && -x /usr/bin/grpc_python_plugin ]] ||
  fail "protoc and grpc_python_plugin are needed (tools/setup.sh installs them)"

# The grpc++ peers are not under test: under --config=tsan their own code is
# instrumented but Debian's libgrpc is not, and TSan reports races inside
# grpc core that it cannot see the synchronisation of. Their reports are
# turned off; a libnet peer keeps the test's TSAN_OPTIONS.
peer_env="env TSAN_OPTIONS=report_bugs=0"
cpp_server="$peer_env $(runfile tests/grpc/peers/interop_server)"
cpp_client="$peer_env $(runfile tests/grpc/peers/interop_client)"
libnet_server=$(runfile examples/grpc/interop_server)
peers=$(dirname "$(runfile tests/grpc/peers/py_interop_client.py)")
stubs=${TEST_TMPDIR:-$(mktemp -d)}/stubs
# Generated once here rather than by each of the 72 Python client runs.
$python "$peers/grpc_stubs.py" "$stubs"

exec timeout -k 5 240 $python "$here/interop_matrix.py" \
  --grpc-server c++ "$cpp_server" \
  --grpc-server python "$python $peers/py_interop_server.py --stubs_dir $stubs" \
  --grpc-server libnet-epoll "$libnet_server --backend epoll" \
  --grpc-server libnet-uring "$libnet_server --backend uring" \
  --grpc-client c++ "$cpp_client" \
  --grpc-client python "$python $peers/py_interop_client.py --stubs_dir $stubs" \
  --jobs 4
