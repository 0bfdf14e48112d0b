#!/usr/bin/env bash
# http_server --fastcgi-pass against a php-fpm of its own, end to end, both
# backends (the checks are in http_server_fastcgi_test.py); skipped with a
# message when php-fpm is not installed (tools/setup.sh installs php8.2-fpm).
set -euo pipefail
# shellcheck source=tests/net/test_lib.sh
source "$(dirname "$0")/../test_lib.sh"
SERVER=$(runfile examples/http/http_server)
CERTS=$(runfile tools/make_test_certs.py)
[[ -x /usr/bin/python3 ]] || fail "/usr/bin/python3 is needed (tools/setup.sh installs it)"
command -v openssl >/dev/null || fail "openssl is needed (tools/setup.sh installs it)"
exec timeout -k 5 200 /usr/bin/python3 "$(dirname "$0")/http_server_fastcgi_test.py" "$SERVER" \
  "$CERTS"
