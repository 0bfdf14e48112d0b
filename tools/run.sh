#!/usr/bin/env bash
# libnet's main job, from nothing: installs what is missing, builds optimized
# binaries and reproduces the muduo book's ping-pong tables (libnet on epoll
# and io_uring vs Boost.Asio vs libevent, plus library-free floors), and the
# coroutine table (libnet's coroutine layer vs its callbacks vs Boost.Asio's
# C++20 coroutines), and the TLS table (libnet's TLS layer vs Boost.Asio's
# ssl::stream over the same OpenSSL).
#
#   tools/run.sh                 quick mode (about 9 minutes)
#   tools/run.sh --mode full     the full tables (10 s cells, 5 runs, 10000 sessions)
#   tools/run.sh --tables backends   epoll vs io_uring server cost
#   tools/run.sh --tables tls    the TLS table alone (about a minute)
#
# Markdown tables on stdout, progress on stderr, CSV and SVG charts in
# ./pingpong-results/. Any other run_tables.py option passes through.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec python3 pingpong/run_tables.py "$@"
