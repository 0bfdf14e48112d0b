#!/usr/bin/env bash
# Builds a Go program that a module under tools/ pins, and prints its path.
#
#   tools/go_tool.sh NAME PACKAGE      e.g. tools/go_tool.sh hey github.com/rakyll/hey
#
# tools/NAME/go.mod and go.sum fix the version of PACKAGE and of every
# dependency; the binary goes to .cache/NAME/bin/ (named after PACKAGE's last
# element) and is rebuilt only when go.mod, go.sum or the Go version changes.
# Everything Go writes stays under .cache/NAME: the module cache (writable, so
# `rm -rf .cache` works), the build cache, GOPATH. The first build needs the
# Go module proxy; later ones run offline. tools/setup.sh installs Debian's
# golang-go when there is no go command. Build output goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

die() {
  echo "go_tool.sh: $*" >&2
  exit 2
}

(($# == 2)) || die "usage: tools/go_tool.sh NAME PACKAGE"
name=$1 package=$2
[[ $name =~ ^[A-Za-z0-9_-]+$ && -f tools/$name/go.mod ]] || die "no module tools/$name/go.mod"

# The go command: $GO, on PATH, else the upstream tarball's usual place.
if [[ -n ${GO:-} ]]; then
  go=$GO
elif command -v go >/dev/null 2>&1; then
  go=$(command -v go)
elif [[ -x /usr/local/go/bin/go ]]; then
  go=/usr/local/go/bin/go
else
  die "no go command (tools/setup.sh installs golang-go)"
fi

cache=$root/.cache/$name
binary=$cache/bin/${package##*/}
signature="$("$go" version) $(cat "tools/$name/go.mod" "tools/$name/go.sum" | sha256sum)"
if [[ ! -x $binary || ! -f $binary.signature || $(<"$binary.signature") != "$signature" ]]; then
  echo "go_tool.sh: building $package ($("$go" version))" >&2
  mkdir -p "$cache/bin"
  (
    cd "tools/$name"
    export GOPATH=$cache/gopath GOMODCACHE=$cache/gopath/pkg/mod GOCACHE=$cache/gocache
    export GOFLAGS="-modcacherw -mod=readonly" GOTOOLCHAIN=local GO111MODULE=on
    "$go" build -o "$binary.tmp" "$package"
  ) >&2 || die "building $package failed (log above)"
  mv "$binary.tmp" "$binary"
  echo "$signature" >"$binary.signature"
fi
echo "$binary"
