#!/usr/bin/env bash
# tools/function_lengths.py on generated sources whose function lengths are
# known: the report names exactly the functions over --max, with their first
# line and length, and the exit status says whether there was any.
set -euo pipefail

tool=$(pwd)/tools/function_lengths.py
work=${TEST_TMPDIR:-$(mktemp -d)}/src
mkdir -p "$work/cc" "$work/py" "$work/skip"
cd "$work"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# `n` filler lines.
filler() { for ((i = 0; i < $1; i++)); do echo "  x += $i;"; done; }

{
  echo '#include <string>'
  echo '#define BRACES { {'
  echo 'namespace demo {'
  echo 'class Widget {'
  echo ' public:'
  echo '  int size() const { return 1; }'
  echo '};'
  # long_one: 1 + 2 + 55 + 2 + 1 = 61 lines, braces hidden in literals and comments.
  echo 'int long_one(int x) {'
  echo '  const char* s = "}}"; char c = '"'}'"'; // }'
  echo '  auto f = [&](int y) { return y + 1; };  /* } */'
  filler 55
  echo '  const char* r = R"(})";'
  echo '  return f(x) + 1'"'"'000;'
  echo '}'
  # exactly_sixty: 1 + 58 + 1 = 60 lines, under the budget.
  echo 'int exactly_sixty(int x) {'
  filler 58
  echo '}'
  # A constructor with an initializer list, 1 + 1 + 59 + 1 = 62 lines.
  echo 'Widget::Widget(int a)'
  echo '    : a_(a), b_{a} {'
  filler 59
  echo '}'
  echo '}  // namespace demo'
} >cc/Demo.cc

{
  echo 'import os'
  echo ''
  echo ''
  echo 'def short():'
  echo '    return 1'
  echo ''
  echo ''
  echo 'def long_py():'
  for ((i = 0; i < 62; i++)); do echo "    x = $i"; done
  echo '    return x'
} >py/demo.py

cp cc/Demo.cc skip/Skipped.cc

status=0
out=$(python3 "$tool" cc py skip --exclude skip) || status=$?
expected="cc/Demo.cc:8: long_one is 61 lines
cc/Demo.cc:129: Widget::Widget is 62 lines
py/demo.py:8: long_py is 64 lines"
[[ $status -eq 1 ]] || fail "exit status $status with long functions, wanted 1"
[[ $out == "$expected" ]] || fail "report:
$out
wanted:
$expected"

status=0
out=$(python3 "$tool" --max 64 cc py --exclude skip) || status=$?
[[ $status -eq 0 && -z $out ]] || fail "--max 64: status $status, output '$out'"

status=0
out=$(python3 "$tool" --max 63 py) || status=$?
[[ $status -eq 1 && $out == "py/demo.py:8: long_py is 64 lines" ]] ||
  fail "--max 63 on py: status $status, output '$out'"

status=0
python3 "$tool" --max 0 cc >/dev/null 2>&1 || status=$?
[[ $status -eq 2 ]] || fail "--max 0: status $status, wanted 2"

if ((failures)); then
  exit 1
fi
echo "PASS"
