#!/usr/bin/env bash
# log_bench writes into a directory of its own inside --dir (or the temporary
# directory) and removes only that: a file the user keeps in --dir survives,
# nothing of the benchmark's is left behind, and a --dir that did not exist
# is gone again afterwards with any missing ancestors it made; a run stopped
# by SIGTERM exits 0 and leaves only the user's files too.
set -euo pipefail

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

bench=""
for path in "${TEST_SRCDIR:-}/libnet/bench/log_bench" "${RUNFILES_DIR:-}/libnet/bench/log_bench"; do
  [[ -x "$path" ]] && bench=$path && break
done
[[ -n "$bench" ]] || fail "bench/log_bench not found in the runfiles"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
small=(--lines 2000 --threads 1 --loggers libnet,sync --reps 1 --no-load-check)

# A directory of the user's, holding a file of the user's.
mkdir "$scratch/mine"
echo "keep me" >"$scratch/mine/notes.txt"
"$bench" "${small[@]}" --dir "$scratch/mine" >"$scratch/out.txt" ||
  fail "log_bench --dir exited $?: $(cat "$scratch/out.txt")"
grep -q 'libnet AsyncLogging' "$scratch/out.txt" || fail "no result row: $(cat "$scratch/out.txt")"
[[ -d "$scratch/mine" ]] || fail "the user's directory was removed"
[[ "$(cat "$scratch/mine/notes.txt" 2>/dev/null)" == "keep me" ]] || fail "the user's file was removed"
left=$(ls -A "$scratch/mine")
[[ "$left" == "notes.txt" ]] || fail "left behind in --dir: $left"

# A --dir that does not exist yet, two levels of it: made for the run, both
# gone afterwards.
"$bench" "${small[@]}" --dir "$scratch/new/deeper/" >/dev/null ||
  fail "log_bench --dir NEW/DEEPER exited $?"
[[ ! -e "$scratch/new" ]] || fail "the directories it made are still there: $(find "$scratch/new")"

# A --dir inside one of the user's with a file: only what it made goes.
mkdir "$scratch/part"
echo "keep me" >"$scratch/part/notes.txt"
"$bench" "${small[@]}" --dir "$scratch/part/new" >/dev/null ||
  fail "log_bench --dir PART/NEW exited $?"
left=$(ls -A "$scratch/part")
[[ "$left" == "notes.txt" ]] || fail "left in the user's directory above --dir: $left"

# Stopped by SIGTERM mid-run: exit 0, and what it wrote is gone too.
"$bench" --lines 50000000 --threads 1 --loggers libnet --reps 1 --no-load-check \
  --dir "$scratch/mine" >/dev/null &
pid=$!
for ((i = 0; i < 200; i++)); do
  compgen -G "$scratch/mine/log_bench.*/*" >/dev/null && break
  sleep 0.05
done
compgen -G "$scratch/mine/log_bench.*/*" >/dev/null || fail "the long run wrote nothing within 10 s"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[[ $status -eq 0 ]] || fail "log_bench exited $status after SIGTERM, want 0"
left=$(ls -A "$scratch/mine")
[[ "$left" == "notes.txt" ]] || fail "left behind after SIGTERM: $left"

# No --dir: the temporary directory, left as it was.
mkdir "$scratch/tmp"
TMPDIR="$scratch/tmp" "$bench" "${small[@]}" >/dev/null || fail "log_bench exited $?"
left=$(ls -A "$scratch/tmp")
[[ -z "$left" ]] || fail "left behind in TMPDIR: $left"
echo PASS
