#!/usr/bin/env bash
# Builds the fuzz targets with clang's libFuzzer (plus ASan and UBSan) and
# runs each for a while, starting from its seed corpus: http (the HttpParser),
# tls (the TLS input path, TlsSession as a server), websocket (the WebSocket
# Receiver, both roles, with and without permessage-deflate) and http2 (the
# HTTP/2 server session on nghttp2, net/http2/ServerSession), h2client (the
# HTTP/2 client session, net/http2/ClientSession, fed a server's bytes), fastcgi (what a
# FastCGI application sends back: net/fastcgi's RecordDecoder and
# CgiResponseParser) and grpc_wire (gRPC's message framer and gzip
# decompressor, net/grpc's MessageReader and gzipDecompress).
#
#   tools/fuzz.sh [SECONDS [TARGET...]]   each TARGET for SECONDS (default: 60, all)
#
# Everything it writes is under $LIBNET_FUZZ_DIR (default .cache/fuzz in the
# repository, which git ignores): build/ the binary, corpus.XXXXXX/ the
# working corpus (a fresh copy of the seeds in a directory made for the run
# and removed after it, so neither the repository's corpus nor anything else
# in $LIBNET_FUZZ_DIR is touched), artifacts/ crash, leak and timeout inputs,
# fuzz-TARGET.log.
# Exits non-zero if clang++ or its libFuzzer runtime is missing, or if the run
# found anything; the input that failed is named in the last lines printed.
# See docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds == 0)); then
  echo "usage: tools/fuzz.sh [SECONDS [http|tls|websocket|http2|h2client|fastcgi|grpc_wire ...]]" >&2
  exit 2
fi
shift || true
targets=("$@")
((${#targets[@]})) || targets=(http tls websocket http2 h2client fastcgi grpc_wire)

# Not built through Bazel: Bazel 4 has no libFuzzer support of its own (that
# is rules_fuzzing, which would have to be downloaded), and pointing it at
# clang means CC=clang, which re-runs the C++ toolchain auto-configuration and
# gives every C++ action a new command line. The gcc outputs in bazel-out are
# then rebuilt on every switch between the two, for the whole tree, on a
# machine where the other configurations are built all day. The target needs
# a handful of source files; clang compiles them directly in seconds.
CXX=${CLANG_CXX:-clang++}
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "fuzz.sh: $CXX not found (Debian: apt-get install clang libclang-rt-14-dev, or tools/setup.sh)" >&2
  exit 1
fi
runtime="$("$CXX" -print-runtime-dir)/libclang_rt.fuzzer-x86_64.a"
if [[ ! -f $runtime ]]; then
  echo "fuzz.sh: libFuzzer runtime $runtime missing (Debian: libclang-rt-14-dev)" >&2
  exit 1
fi

work=${LIBNET_FUZZ_DIR:-$root/.cache/fuzz}
build=$work/build
artifacts=$work/artifacts
mkdir -p "$build" "$artifacts"

# -fno-sanitize-recover: a UBSan report stops the run like an ASan one does,
# instead of scrolling past while libFuzzer goes on.
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -Wall -Wextra -I"$root")

symbolizer=$(command -v llvm-symbolizer || true)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
[[ -n $symbolizer ]] && export ASAN_SYMBOLIZER_PATH=$symbolizer

# What each target is made of and how it runs: sources, headers (for
# staleness), libraries, seed corpus and libFuzzer options.
target_spec() {
  case $1 in
    http)
      sources=(tests/net/http/fuzz/HttpParserFuzzer.cc tests/net/http/fuzz/ParseTrace.cc
        tests/net/http/fuzz/SplitPlan.cc net/http/HttpParser.cc net/http/RequestTarget.cc
        net/http/HttpRequest.cc
        net/Buffer.cc net/BufferStorage.cc)
      headers=(tests/net/http/fuzz/ParseTrace.h tests/net/http/fuzz/SplitPlan.h
        net/http/HttpChars.h net/http/HttpSyntax.h net/http/HttpParser.h net/http/HttpRequest.h
        net/http/RequestTarget.h net/Buffer.h
        net/BufferStorage.h)
      libs=()
      seeds_dir=tests/net/http/fuzz/corpus
      # -max_len 8192 lets an input reach the default 8 KiB request-line
      # limit; the small limits the target also runs under cover the rest.
      options=(-dict=tests/net/http/fuzz/http.dict -max_len=8192)
      ;;
    tls)
      sources=(tests/net/tls/fuzz/TlsInputFuzzer.cc tests/net/tls/TestPki.cc
        net/tls/TlsSession.cc net/tls/TlsContext.cc net/Buffer.cc net/BufferStorage.cc)
      headers=(tests/net/tls/TestPki.h net/tls/TlsSession.h net/tls/TlsContext.h net/Buffer.h
        net/BufferStorage.h)
      libs=(-lssl -lcrypto)
      seeds_dir=tests/net/tls/fuzz/corpus
      # Two records' worth: a ClientHello, a few records after the handshake.
      options=(-max_len=40000)
      ;;
    websocket)
      sources=(tests/net/websocket/fuzz/ReceiverFuzzer.cc net/websocket/Receiver.cc
        net/websocket/Sender.cc net/websocket/Deflate.cc net/websocket/Frame.cc
        net/websocket/Utf8.cc net/Buffer.cc net/BufferPool.cc net/BufferStorage.cc)
      headers=(net/websocket/Receiver.h net/websocket/Sender.h net/websocket/Deflate.h
        net/websocket/Frame.h net/websocket/GrowWithin.h net/websocket/Utf8.h net/Buffer.h
        net/BufferPool.h net/BufferStorage.h)
      libs=(-lz)
      seeds_dir=tests/net/websocket/fuzz/corpus
      # A few dozen frames; small-limit mode (bit 2 of the first byte) covers
      # the too-big paths with short inputs.
      options=(-max_len=16384)
      ;;
    http2)
      sources=(tests/net/http2/fuzz/Http2SessionFuzzer.cc tests/net/http2/fuzz/FrameCheck.cc
        tests/net/http2/fuzz/FuzzHandler.cc net/http2/ServerSession.cc net/http2/Http2Writer.cc
        net/http2/Http2RequestBody.cc net/http2/TokenBucket.cc
        net/http/WriterGate.cc net/EventLoopBase.cc net/BufferPool.cc net/http/HttpRequest.cc
        net/http/BodyBudget.cc net/http/HttpResponse.cc net/http/HttpDate.cc net/http/RequestTarget.cc net/Buffer.cc
        net/BufferStorage.cc base/Logging.cc base/LogStream.cc base/Timestamp.cc
        base/CurrentThread.cc)
      headers=(tests/net/http2/fuzz/FrameCheck.h tests/net/http2/fuzz/FuzzHandler.h
        net/http2/ServerSession.h net/http2/Http2Writer.h net/http2/Http2RequestBody.h
        net/http2/TokenBucket.h
        net/http/WriterGate.h net/http/RequestBody.h
        net/http/ResponseWriter.h net/http2/Options.h net/http/HttpRequest.h
        net/http/BodyBudget.h net/http/HttpResponse.h net/http/HttpDate.h net/http/HttpParser.h net/http/HttpServer.h
        net/Buffer.h net/BufferStorage.h base/Logging.h base/Guarded.h)
      # nghttp2 itself is the system library, not instrumented: the coverage
      # counts libnet's side (callbacks, defences, the DATA path).
      libs=(-lnghttp2)
      seeds_dir=tests/net/http2/fuzz/corpus
      # Room for the 210 streams of the rapid-reset seed and a few hundred
      # frames of any other kind.
      options=(-dict=tests/net/http2/fuzz/http2.dict -max_len=16384)
      ;;
    h2client)
      sources=(tests/net/http2/client/fuzz/ClientSessionFuzzer.cc net/http2/ClientSession.cc
        net/http2/TokenBucket.cc
        net/Buffer.cc net/BufferStorage.cc base/Logging.cc base/LogStream.cc base/Timestamp.cc
        base/CurrentThread.cc)
      headers=(net/http2/ClientSession.h net/http2/TokenBucket.h net/Buffer.h net/BufferStorage.h base/Logging.h)
      libs=(-lnghttp2)
      seeds_dir=tests/net/http2/client/fuzz/corpus
      # The three streams' answers and a few hundred frames besides.
      options=(-max_len=16384)
      ;;
    fastcgi)
      sources=(tests/net/fastcgi/fuzz/RecordFuzzer.cc net/fastcgi/RecordDecoder.cc
        net/fastcgi/RecordEncoder.cc net/fastcgi/CgiResponseParser.cc net/http/HttpResponse.cc
        net/Buffer.cc net/BufferStorage.cc)
      headers=(net/fastcgi/Protocol.h net/fastcgi/RecordDecoder.h net/fastcgi/RecordEncoder.h
        net/fastcgi/CgiResponseParser.h net/http/HttpResponse.h net/Buffer.h net/BufferStorage.h)
      libs=()
      seeds_dir=tests/net/fastcgi/fuzz/corpus
      # A few records of a full answer; longer inputs only repeat them.
      options=(-max_len=8192)
      ;;
    grpc_wire)
      sources=(tests/grpc/fuzz/WireFuzzer.cc net/grpc/MessageReader.cc net/grpc/Gzip.cc
        net/grpc/Wire.cc)
      headers=(net/grpc/MessageReader.h net/grpc/Gzip.h net/grpc/GrowWithin.h net/grpc/Wire.h
        net/grpc/Status.h)
      libs=(-lz)
      seeds_dir=tests/grpc/fuzz/corpus
      # A few dozen messages; the limit the input picks (up to 64 KiB) covers
      # the too-large paths with short inputs.
      options=(-max_len=16384)
      ;;
    *)
      echo "fuzz.sh: unknown target '$1' (http, tls, websocket, http2, h2client, fastcgi, grpc_wire)" >&2
      exit 2
      ;;
  esac
}

# Rebuilds the binary of target $1 when a source or header is newer than it
# or the compiler or flags changed.
build_target() {
  local binary=$build/$1_fuzzer signature stale=0 f
  signature="$("$CXX" --version | head -n1) ${flags[*]} ${libs[*]}"
  if [[ ! -x $binary || ! -f $binary.signature || $(<"$binary.signature") != "$signature" ]]; then
    stale=1
  else
    for f in "${sources[@]}" "${headers[@]}"; do
      [[ $f -nt $binary ]] && stale=1 && break
    done
  fi
  if ((stale)); then
    echo "fuzz.sh: building $binary" >&2
    "$CXX" "${flags[@]}" "${sources[@]}" "${libs[@]}" -o "$binary.tmp"
    mv "$binary.tmp" "$binary"
    echo "$signature" >"$binary.signature"
  fi
}

# -timeout and -rss_limit_mb turn a target that hangs or hoards memory into
# a failure.
run_target() {
  local name=$1 binary=$build/$1_fuzzer log=$work/fuzz-$1.log corpus seeds status=0
  corpus=$(mktemp -d "$work/corpus.XXXXXX")
  cp "$seeds_dir"/* "$corpus/"
  seeds=$(find "$corpus" -type f | wc -l)
  echo "fuzz.sh: fuzzing $name for ${seconds}s from $seeds seeds" >&2
  "$binary" \
    -max_total_time="$seconds" \
    "${options[@]}" \
    -timeout=10 \
    -rss_limit_mb=2048 \
    -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" \
    "$corpus" >"$log" 2>&1 || status=$?
  grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|Dictionary:|stat::)' "$log" >&2 || true
  local execs files failed f
  execs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n1)
  files=$(find "$corpus" -type f | wc -l)
  rm -rf "$corpus"
  echo "fuzz $name: ${execs:-?} executions in ${seconds}s, corpus $seeds -> $files files, log $log"
  if ((status != 0)); then
    tail -n 40 "$log" >&2
    failed=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log")
    echo "fuzz $name: FAILED (libFuzzer exit status $status)"
    for f in $failed; do
      echo "fuzz $name: failing input: $f"
      echo "fuzz $name: reproduce with: $binary $f"
    done
    return "$status"
  fi
  echo "fuzz $name: no failure"
}

overall=0
for target in "${targets[@]}"; do
  target_spec "$target"
  build_target "$target"
  run_target "$target" || overall=$?
done
exit "$overall"
