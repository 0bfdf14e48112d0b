#!/usr/bin/env bash
# The version is said in three places that must agree: VERSION, net/Version.h
# (what a program tests with #if) and the newest entry of CHANGELOG.md (which
# says what changed in the API).
set -euo pipefail

fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(tr -d '[:space:]' <VERSION)
[[ $version =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || fail "VERSION '$version' is not MAJOR.MINOR.PATCH"
major=${BASH_REMATCH[1]} minor=${BASH_REMATCH[2]} patch=${BASH_REMATCH[3]}
macro() { sed -n "s/^#define LIBNET_VERSION_$1 \([0-9]*\)$/\1/p" net/Version.h; }
header="$(macro MAJOR).$(macro MINOR).$(macro PATCH)"
[[ $header == "$major.$minor.$patch" ]] || fail "net/Version.h says $header, VERSION $version"
newest=$(sed -n 's/^## \([0-9][0-9.]*\)\b.*/\1/p' CHANGELOG.md | head -1)
[[ $newest == "$version" ]] || fail "CHANGELOG.md's newest entry is '$newest', VERSION $version"
echo "ok: version $version in VERSION, net/Version.h and CHANGELOG.md"
