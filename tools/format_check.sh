#!/usr/bin/env bash
# Checks that every tracked C++ file (*.h, *.cc; third_party/ aside) is laid
# out as the repository's .clang-format says.
#
#   tools/format_check.sh         list the files clang-format would change;
#                                 exits 1 if there is any
#   tools/format_check.sh --fix   reformat those files in place
#
# CLANG_FORMAT names the binary (default clang-format). The layout is the one
# of clang-format 14, Debian 12's (tools/setup.sh installs it): other major
# versions break some lines differently, so their verdict is only a hint.
set -euo pipefail

usage() {
  sed -n '2,11s/^# \{0,1\}//p' "$0"
}

fix=false
case "${1:-}" in
  "") ;;
  --fix) fix=true ;;
  -h | --help) usage; exit 0 ;;
  *) usage >&2; echo "format_check.sh: unknown argument '$1'" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
  echo "format_check.sh: no $clang_format (tools/setup.sh installs it)" >&2
  exit 2
fi
version=$("$clang_format" --version)
if [[ ! $version =~ version\ 14\. ]]; then
  echo "format_check.sh: $version is not clang-format 14; its layout may differ" >&2
fi

files=()
while IFS= read -r -d '' file; do
  files+=("$file")
done < <(git ls-files -z -- '*.h' '*.cc' ':!:third_party/**')

# A file is unformatted when clang-format reports a violation in it; any other
# failure (a broken .clang-format, an unreadable file) stops the check, as a
# verdict on the layout would be a guess.
unformatted=()
for file in "${files[@]}"; do
  if ! messages=$("$clang_format" --dry-run --Werror --ferror-limit=1 -- "$file" 2>&1); then
    if [[ $messages != *"[-Wclang-format-violations]"* ]]; then
      printf '%s\n' "$messages" >&2
      echo "format_check.sh: $clang_format failed on $file" >&2
      exit 2
    fi
    unformatted+=("$file")
  fi
done

if ((${#unformatted[@]} == 0)); then
  echo "format_check.sh: all ${#files[@]} files are formatted"
  exit 0
fi

if $fix; then
  "$clang_format" -i -- "${unformatted[@]}"
  printf 'reformatted: %s\n' "${unformatted[@]}"
  echo "format_check.sh: reformatted ${#unformatted[@]} of ${#files[@]} files"
  exit 0
fi

printf 'not formatted: %s\n' "${unformatted[@]}"
echo "format_check.sh: ${#unformatted[@]} of ${#files[@]} files are not formatted;" \
  "'tools/format_check.sh --fix' reformats them (or: clang-format -i FILE)" >&2
exit 1
