#!/usr/bin/env bash
# examples/grpc's greeter_server called by grpcio (greeter_test.py): both
# backends, h2c and TLS.
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
server=$(runfile examples/grpc/greeter_server)
stubs=${TEST_TMPDIR:-$(mktemp -d)}/stubs
exec timeout -k 5 120 $python "$here/greeter_test.py" "$server" "$stubs"
