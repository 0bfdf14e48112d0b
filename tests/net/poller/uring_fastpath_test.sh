#!/usr/bin/env bash
# The io_uring completion fast path is real: on an io_uring loop a
# connection's bytes move through the ring (multishot recv into provided
# buffers, sends as SQEs), never through read/write/recv/send syscalls.
#
# Runs examples/echo's echo_server under `strace -f -c` with LIBNET_POLLER=uring,
# drives 10 connections x 200 round trips of ~1 KiB with echo_client (not
# traced), stops the server with SIGTERM and checks the syscall counts:
# io_uring_enter in the hundreds, recvfrom/sendto/readv/writev/recvmsg/sendmsg
# zero, and read+write beyond those of an idle server (start-up, signalfd,
# sanitizer runtimes) a handful (eventfd wake-ups, log lines). The same
# run with LIBNET_POLLER=epoll must show the opposite (thousands of byte-moving
# calls, no io_uring_enter), which proves the check can tell the two apart.
#
# Needs strace (tools/setup.sh installs it). Without it the test fails, unless
# LIBNET_ALLOW_NO_STRACE is set (bazel test --test_env=LIBNET_ALLOW_NO_STRACE=1),
# in which case it says why and passes.
set -euo pipefail

readonly CONNECTIONS=10
readonly COUNT=200
readonly MESSAGES=$((CONNECTIONS * COUNT))
readonly STARTUP_TIMEOUT=20  # seconds for the server to print its port
readonly RUN_TIMEOUT=120     # seconds for a whole traced server run

# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"

# ---- tools ----

no_strace() {
  if [[ -n "${LIBNET_ALLOW_NO_STRACE:-}" ]]; then
    echo "SKIP: $* (LIBNET_ALLOW_NO_STRACE is set)"
    exit 0
  fi
  fail "$*; install strace (tools/setup.sh does) or set LIBNET_ALLOW_NO_STRACE=1 to skip"
}

command -v strace >/dev/null 2>&1 || no_strace "strace is not installed"
strace -f -qq -o /dev/null true >/dev/null 2>&1 ||
  no_strace "strace cannot trace here ($(strace -f -qq -o /dev/null true 2>&1 | head -n 1))"

SERVER=$(runfile examples/echo/echo_server)
CLIENT=$(runfile examples/echo/echo_client)
readonly SERVER CLIENT

WORK=${TEST_TMPDIR:-$(mktemp -d)}
readonly WORK

# A 1 KiB message, not all one byte.
MESSAGE=$(printf 'libnet-fastpath-%04d:' $(seq 1 49) | head -c 1024)
readonly MESSAGE
[[ ${#MESSAGE} -eq 1024 ]] || fail "message is ${#MESSAGE} bytes, wanted 1024"

# ---- helpers ----

# Prints the pids of every descendant of $1.
descendants() {
  local pid child
  for pid in "$@"; do
    for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
      echo "$child"
      descendants "$child"
    done
  done
}

# The pid of the echo_server process among the descendants of $1.
server_pid_under() {
  local pid comm
  for pid in $(descendants "$1"); do
    comm=$(cat /proc/"$pid"/comm 2>/dev/null || true)
    if [[ "$comm" == echo_server ]]; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

# Calls of syscall $2 in strace -c summary $1 (0 if absent).
calls() {
  awk -v name="$2" '$NF == name && $1 ~ /^[0-9.]+$/ { n = $4 } END { print n + 0 }' "$1"
}

# Runs one traced server with LIBNET_POLLER=$1 and, if $3 is "traffic", the
# client against it ("idle": start and stop only); leaves the strace summary
# in $WORK/strace.$2.txt.
run_server() {
  local backend=$1 tag=$2 mode=$3
  local summary="$WORK/strace.$tag.txt"
  local fifo="$WORK/server.$tag.fifo"
  local err="$WORK/server.$tag.err"
  rm -f "$summary" "$fifo"
  mkfifo "$fifo"

  # timeout bounds the whole traced run, whatever goes wrong below.
  # LeakSanitizer cannot run under ptrace: off for the traced server (the
  # library's leaks are the gtest binaries' business).
  LIBNET_POLLER=$backend ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    timeout -k 5 "$RUN_TIMEOUT" \
    strace -f -qq -c -o "$summary" \
    -e trace=read,write,readv,writev,recvfrom,sendto,recvmsg,sendmsg,io_uring_enter \
    "$SERVER" --address 127.0.0.1 --port 0 --threads 0 >"$fifo" 2>"$err" &
  local wrapper=$!
  exec 3<"$fifo"

  local line=""
  if ! read -r -t "$STARTUP_TIMEOUT" line <&3; then
    exec 3<&-
    kill "$wrapper" 2>/dev/null || true
    wait "$wrapper" 2>/dev/null || true
    if [[ "$backend" == uring ]] && grep -q "io_uring" "$err"; then
      echo "SKIP: the echo server cannot run on io_uring here:"
      cat "$err"
      exit 0
    fi
    echo "--- server stderr ---" >&2
    cat "$err" >&2
    fail "$backend: echo_server printed no 'listening' line within ${STARTUP_TIMEOUT}s"
  fi
  local port=${line##*:}
  [[ "$line" == "echo_server listening on 127.0.0.1:"* && "$port" =~ ^[0-9]+$ ]] ||
    fail "$backend: unexpected first line from echo_server: '$line'"

  local out="$WORK/client.$tag.out"
  local status=0
  if [[ "$mode" == traffic ]]; then
    "$CLIENT" --address 127.0.0.1 --port "$port" --connections "$CONNECTIONS" --count "$COUNT" \
      --message "$MESSAGE" --timeout 60 >"$out" 2>"$WORK/client.$tag.err" || status=$?
  fi

  local server
  server=$(server_pid_under "$wrapper") || fail "$backend: echo_server process not found"
  kill -TERM "$server"
  local server_status=0
  wait "$wrapper" || server_status=$?
  exec 3<&-

  if [[ "$mode" == traffic ]]; then
    if ((status != 0)); then
      cat "$WORK/client.$tag.err" >&2
      fail "$backend: echo_client exited $status"
    fi
    local ok
    ok=$(grep -c "^echoed $COUNT x 1024 bytes OK$" "$out" || true)
    ((ok == CONNECTIONS)) || fail "$backend: $ok of $CONNECTIONS connections verified their echoes"
  fi
  if ((server_status != 0)); then
    cat "$err" >&2
    fail "$backend: traced echo_server exited $server_status after SIGTERM"
  fi
  [[ -s "$summary" ]] || fail "$backend: strace wrote no summary"
}

report() {
  local summary=$1
  local name
  printf '%s:' "$2"
  for name in io_uring_enter read write readv writev recvfrom sendto recvmsg sendmsg; do
    printf ' %s=%s' "$name" "$(calls "$summary" "$name")"
  done
  printf '\n'
}

# ---- io_uring: no byte-moving syscalls ----

# The idle run (start, SIGTERM) counts the read/write calls that do not
# depend on traffic: start-up, the signalfd, sanitizer runtimes reading /proc.
run_server uring uring-idle idle
report "$WORK/strace.uring-idle.txt" uring-idle
run_server uring uring traffic
U="$WORK/strace.uring.txt"
report "$U" uring
enters=$(calls "$U" io_uring_enter)
((enters >= COUNT)) ||
  fail "uring: only $enters io_uring_enter calls for $MESSAGES echoed messages"
for name in recvfrom sendto readv writev recvmsg sendmsg; do
  n=$(calls "$U" "$name")
  ((n == 0)) || fail "uring: $n $name calls; connection bytes must move through the ring"
done
idle="$WORK/strace.uring-idle.txt"
rw=$(($(calls "$U" read) + $(calls "$U" write) - $(calls "$idle" read) - $(calls "$idle" write)))
((rw < 50)) ||
  fail "uring: $rw read+write calls more than idle for $MESSAGES messages; only eventfd/log I/O expected"

# ---- epoll: the control ----

run_server epoll epoll traffic
E="$WORK/strace.epoll.txt"
report "$E" epoll
n=$(calls "$E" io_uring_enter)
((n == 0)) || fail "epoll: $n io_uring_enter calls"
reads=$(($(calls "$E" readv) + $(calls "$E" recvfrom) + $(calls "$E" recvmsg) + $(calls "$E" read)))
writes=$(($(calls "$E" sendto) + $(calls "$E" writev) + $(calls "$E" sendmsg) + $(calls "$E" write)))
((reads >= MESSAGES)) || fail "epoll: only $reads reading calls for $MESSAGES messages"
((writes >= MESSAGES)) || fail "epoll: only $writes writing calls for $MESSAGES messages"

echo "PASS: io_uring moved $MESSAGES echoes with $enters io_uring_enter calls and no socket I/O syscalls"
