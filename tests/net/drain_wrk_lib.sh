# Shared by the drain tests under wrk (tests/net/http/drain_under_load_test.sh,
# tests/net/coro/coro_http_drain_test.sh); source it after defining fail().
#
# wrk 4.1 counts a reconnect refused once the server's listener is closed as
# a *write* error (its connect is non-blocking), which alone cannot be told
# from a request lost by the drain. So the tests run wrk under
#   strace -f --seccomp-bpf -e trace=write -e status=failed -o STRACE wrk ...
# and check_drained_wrk requires every write error of wrk's to be a write
# that failed with ECONNREFUSED, no read or timeout error, and no non-2xx.

# check_drained_wrk WHAT WRK_OUTPUT STRACE_OUTPUT: fails unless the drain lost
# nothing; prints one "ok:" line with the counts.
check_drained_wrk() {
  local what=$1 out refused other errors="connect 0, read 0, write 0, timeout 0"
  out=$(cat "$2")
  [[ "$out" =~ ([0-9]+)\ requests\ in ]] || fail "$what: no request count from wrk: $out"
  ((BASH_REMATCH[1] > 0)) || fail "$what: wrk made no request"
  [[ "$out" != *"Non-2xx"* ]] || fail "$what: wrk saw non-2xx answers: $out"
  refused=$(grep -c 'write(.* = -1 ECONNREFUSED' "$3" || true)
  other=$(grep -E 'write\(.* = -1 ' "$3" | grep -v ECONNREFUSED || true)
  [[ -z "$other" ]] || fail "$what: wrk's writes failed: $(head -5 <<<"$other")"
  local re='Socket errors: (connect [0-9]+, read ([0-9]+), write ([0-9]+), timeout ([0-9]+))'
  if [[ "$out" =~ $re ]]; then
    errors=${BASH_REMATCH[1]}
    ((BASH_REMATCH[2] == 0 && BASH_REMATCH[4] == 0)) || fail "$what: wrk saw errors: $errors"
    ((BASH_REMATCH[3] == refused)) ||
      fail "$what: $((BASH_REMATCH[3] - refused)) write errors were not refused reconnects: $errors"
  fi
  echo "ok: $what: $(grep -o '[0-9]* requests in' <<<"$out"); wrk: $errors;" \
    "$refused refused reconnects"
}

# await_drained_exit WHAT PROGRAM FD: after the SIGTERM to $server_pid, reads
# the server's output on FD until it reaches end of file (it exited; 15 s
# bound), then requires that PROGRAM said it was draining, exited 0, and that
# wrk ($wrk_pid, output and trace in $work) lost nothing. Clears server_pid
# and wrk_pid (the callers' clean-up skips them then).
await_drained_exit() {
  local what=$1 program=$2 fd=$3 line deadline=$((SECONDS + 15)) exited=0 status=0 drained=0
  while ((SECONDS <= deadline)); do
    if read -t 1 -r line <&"$fd" 2>/dev/null; then
      [[ "$line" == *"$program draining "*" connections"* ]] && drained=1
      continue
    fi
    (($? <= 128)) && exited=1 && break  # above 128 is read's timeout
  done
  ((exited)) || fail "$what: server still running 15 s after SIGTERM"
  exec {fd}<&-
  wait "$server_pid" || status=$?
  server_pid=""
  [[ $status -eq 0 ]] || fail "$what: server exited $status after SIGTERM"
  ((drained)) || fail "$what: server did not say it was draining"
  wait "$wrk_pid" || fail "$what: wrk failed: $(cat "$work/wrk.out")"
  wrk_pid=""
  check_drained_wrk "$what" "$work/wrk.out" "$work/wrk.strace"
}
