# Shared by the shell tests of tests/net: source it from the test's own
# directory in the runfiles tree.

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Prints the path of runfile $1 (a workspace-relative path), or fails.
runfile() {
  local path
  for path in "${TEST_SRCDIR:-}/libnet/$1" "${RUNFILES_DIR:-}/libnet/$1" "$0.runfiles/libnet/$1"; do
    if [[ -x "$path" ]]; then
      echo "$path"
      return 0
    fi
  done
  fail "$1 not found in the runfiles"
}
