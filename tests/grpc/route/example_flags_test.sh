#!/usr/bin/env bash
# examples/grpc's interop_server and route_server refuse bad flags with exit
# status 2 and a message naming the problem, before anything starts.
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

interop=$(runfile examples/grpc/interop_server)
route=$(runfile examples/grpc/route/route_server)
file=$(mktemp)  # an existing file, where a certificate's path is wanted

# expect_usage WORD PROGRAM ARGS...: exit 2 with WORD in the message.
expect_usage() {
  local word=$1 status=0 output
  shift
  output=$(timeout 10 "$@" 2>&1 </dev/null) || status=$?
  [[ $status -eq 2 ]] || fail "'$*' exited $status, not 2: $output"
  grep -q -- "$word" <<<"$output" || fail "'$*' did not name '$word': $output"
}

for server in "$interop" "$route"; do
  expect_usage --backend "$server" --backend kqueue
  expect_usage --port "$server" --port 70000
  expect_usage --threads "$server" --threads -1
  expect_usage --nope "$server" --nope
  expect_usage --tls-key "$server" --tls-cert "$file"
  expect_usage --h2c "$server" --h2c --tls-cert "$file" --tls-key "$file"
done
expect_usage --use_tls "$interop" --use_tls maybe
expect_usage --use_tls "$interop" --use_tls true
expect_usage --use_tls "$interop" --use_tls false --tls_cert "$file" --tls_key "$file"
expect_usage --tls_cert "$interop" --tls_cert /nonexistent/cert.pem
rm -f "$file"
echo "example flags: ok"
