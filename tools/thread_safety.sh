#!/usr/bin/env bash
# Checks the library's locking rules at compile time with Clang's
# thread-safety analysis: every member marked LIBNET_GUARDED_BY is touched
# only with its Mutex held, every LIBNET_REQUIRES helper is called with it
# held, no LIBNET_EXCLUDES function is called with it held, and every
# MutexLock is released (base/ThreadAnnotations.h, base/Mutex.h). GCC builds
# the library and ignores the annotations, so this is the only place they are
# enforced.
#
#   tools/thread_safety.sh        exits non-zero if any file fails
#
# What it compiles, found afresh on every run: every .cc under base/ and net/
# (net/poller, net/http, net/coro and net/tls included), and every .h there
# with no .cc of the same name beside it. A header-only class (CountDownLatch)
# is otherwise compiled in no file of the library; a header with a .cc is
# checked through it.
#
# -fsyntax-only is enough: the analysis is part of Clang's semantic checks,
# run on each function body (templates as they are instantiated) while the
# file is parsed, before any code would be generated. Skipping code
# generation makes the whole tree a matter of seconds per core, and no Bazel
# toolchain switch is needed (see tools/fuzz.sh for why that is costly).
#
# Prints one line per failing file (its first error) and a summary. For a
# file's full diagnostics, run the command the summary shows on it (on a
# header: -x c++ -include FILE /dev/null). CLANG_CXX picks the compiler
# (default clang++, which tools/setup.sh installs).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

CXX=${CLANG_CXX:-clang++}
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "thread_safety.sh: $CXX not found (Debian: apt-get install clang, or tools/setup.sh)" >&2
  exit 1
fi

# -fsized-deallocation: GCC has it on from C++14 on, Clang 14 not by
# default, and net/coro/Task.h calls the sized ::operator delete.
# -Wthread-safety-beta adds checks still marked experimental (e.g. on
# capabilities named through accessors); the tree passes them, so they are on.
# liburing and OpenSSL headers come from /usr/include, Clang's default.
FLAGS=(-std=c++20 -fsized-deallocation -fsyntax-only -Wthread-safety -Wthread-safety-beta
       -Werror "-I$root")

# Headers generated from .proto files under net/ (libnet_proto_library:
# net/grpc/health, net/grpc/reflection) are included by their repository
# paths, as Bazel's output tree has them: build those, and search it too.
if [[ -n $(find net -name '*.proto' -print -quit) ]]; then
  generators=$(bazel query 'kind(genrule, attr(generator_function, libnet_proto_library, //net/...))' \
    2>/dev/null) || { echo "thread_safety.sh: bazel query for the .proto targets failed" >&2; exit 1; }
  # shellcheck disable=SC2086
  bazel build $generators >/dev/null 2>&1 ||
    { echo "thread_safety.sh: bazel build of $generators failed" >&2; exit 1; }
  FLAGS+=("-I$(bazel info bazel-bin 2>/dev/null)")
fi

files=()
while IFS= read -r -d '' file; do
  case $file in
    *.cc) files+=("$file") ;;
    *.h) [[ -e ${file%.h}.cc ]] || files+=("$file") ;;
  esac
done < <(find base net -type f \( -name '*.cc' -o -name '*.h' \) -print0 | sort -z)
if ((${#files[@]} == 0)); then
  echo "thread_safety.sh: no source files found under base/ and net/" >&2
  exit 1
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# One compiler per file, as many at once as there are cores. Each prints
# "ok FILE" or "FAIL FILE: first error"; a file is checked exactly once, and a
# file with no line at all (a worker that died) counts as failed below.
# Arguments: LOGDIR COMPILER FLAGS... FILE.
check_one() {
  local logdir=$1 cxx=$2 file=${!#} first
  local flags=("${@:3:$#-3}") source=("$file")
  local log
  log="$logdir/$(tr / _ <<<"$file").log"
  # A header is compiled as the only thing in an empty file, so that its
  # inline functions are analysed like those of a .cc.
  [[ $file == *.h ]] && source=(-x c++ -include "$file" /dev/null)
  if "$cxx" "${flags[@]}" "${source[@]}" >"$log" 2>&1; then
    echo "ok $file"
  else
    first=$(grep -m1 'error:' "$log" || tail -n1 "$log")
    echo "FAIL $file: ${first:-$cxx failed with no message}"
  fi
}
export -f check_one

# A worker that dies leaves no line, which the loop below counts as a
# failure, so xargs's own status adds nothing.
results=$(printf '%s\0' "${files[@]}" |
  xargs -0 -n1 -P"$(nproc)" bash -c 'check_one "$@"' _ "$logs" "$CXX" "${FLAGS[@]}") || true

failed=0
for file in "${files[@]}"; do
  if grep -qxF "ok $file" <<<"$results"; then
    continue
  fi
  failed=$((failed + 1))
  line=$(grep -m1 -F "FAIL $file: " <<<"$results" || true)
  echo "${line:-FAIL $file: no result (the compiler did not run)}"
done

echo "thread_safety: ${#files[@]} files checked, $failed failed ($CXX ${FLAGS[*]})"
((failed == 0))
