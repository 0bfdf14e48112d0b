#!/usr/bin/env bash
# tools/install.sh as a packager uses it: DESTDIR staging with prefix /usr
# (the tree, what it must and must not contain, the installed files naming
# /usr rather than the staging directory), installing twice, uninstalling
# (exactly the installed files and the directories the install created go;
# a file and a directory that were there before stay), refusals, the
# Debian package (inspected with dpkg-deb, not installed), and that none of
# it leaves a file in the checkout.
#
# Prints "ok: ..." and exits 0, or says what failed.
source "$(dirname "${BASH_SOURCE[0]}")/consumer_test_lib.sh"

version=$(tr -d '[:space:]' <"$repo/VERSION")
soversion=$(soversion_of "$version")
checkout_before=$(git -C "$repo" status --porcelain --ignored=no)

# Something of someone else's in the staging root, which must survive.
stage=$tmp/stage
mkdir -p "$stage/usr/include" "$stage/usr/lib"
echo '/* not libnet */' >"$stage/usr/include/other.h"

DESTDIR=$stage install_libnet --prefix /usr
root=$stage/usr

# --- the tree ---
for file in include/net/EventLoop.h include/net/TcpServer.h include/net/TcpClient.h \
  include/net/http/HttpServer.h include/net/coro/Coro.h include/base/Timestamp.h \
  include/base/Logging.h include/net/SocketAddress.h include/net/SignalSet.h \
  include/net/HappyEyeballs.h include/net/NameResolver.h include/net/ConnectFailure.h \
  include/net/ConnectAttempt.h include/net/coro/Signal.h include/net/tls/TlsLayer.h \
  include/net/dns/Resolver.h include/net/dns/CoroResolve.h \
  include/net/http/HttpClient.h include/net/http/CoroFetch.h include/net/http/Url.h \
  include/net/websocket/WebSocket.h include/net/websocket/WebSocketServer.h \
  include/net/websocket/WebSocketClient.h include/net/websocket/CoroWebSocket.h \
  include/net/http2/Http2Server.h include/net/http2/Options.h include/net/http2/ServerSession.h \
  include/net/http2/CoroServe.h include/net/http2/Http2RequestBody.h \
  include/net/http/CoroHandler.h include/net/http/RequestBodyReader.h \
  include/net/http/ResponseWriteAwaiter.h include/net/fastcgi/FastCgiHandler.h \
  include/net/fastcgi/UpstreamOptions.h include/net/inspect/Inspector.h \
  include/net/inspect/CpuProfiler.h include/net/inspect/ProfileSignal.h \
  include/net/grpc/Server.h include/net/grpc/Service.h include/net/grpc/CoroStream.h \
  include/net/grpc/Status.h \
  lib/libnet.a "lib/libnet.so.$version" lib/pkgconfig/libnet.pc \
  lib/libnet_tls.a "lib/libnet_tls.so.$version" lib/pkgconfig/libnet_tls.pc \
  lib/libnet_dns.a "lib/libnet_dns.so.$version" lib/pkgconfig/libnet_dns.pc \
  lib/libnet_http_client.a "lib/libnet_http_client.so.$version" \
  lib/pkgconfig/libnet_http_client.pc lib/libnet_websocket.a \
  "lib/libnet_websocket.so.$version" lib/pkgconfig/libnet_websocket.pc \
  lib/libnet_http2.a "lib/libnet_http2.so.$version" lib/pkgconfig/libnet_http2.pc \
  lib/libnet_inspect.a "lib/libnet_inspect.so.$version" lib/pkgconfig/libnet_inspect.pc \
  lib/libnet_grpc.a "lib/libnet_grpc.so.$version" lib/pkgconfig/libnet_grpc.pc \
  bin/protoc-gen-libnet \
  lib/cmake/libnet/libnetConfig.cmake lib/cmake/libnet/libnetConfigVersion.cmake \
  share/licenses/libnet/LICENSE share/libnet/install_manifest.txt; do
  [[ -f $root/$file ]] || fail "$file was not installed"
done
cmp -s "$repo/LICENSE" "$root/share/licenses/libnet/LICENSE" ||
  fail "share/licenses/libnet/LICENSE is not the checkout's LICENSE"
[[ $(readlink "$root/lib/libnet.so.$soversion") == "libnet.so.$version" ]] ||
  fail "lib/libnet.so.$soversion is not a link to libnet.so.$version"
[[ $(readlink "$root/lib/libnet.so") == "libnet.so.$soversion" ]] ||
  fail "lib/libnet.so is not a link to libnet.so.$soversion"
[[ ! -e $root/include/net/poller ]] || fail "net/poller/ headers were installed"
# Headers that are sources of their library (its inside), never public.
for file in net/dns/AddressCache.h net/UnixSocketFile.h net/ConnectionInput.h \
  net/ConnectionSocket.h net/TcpConnectionImpl.h net/coro/TaskContext.h net/coro/StreamState.h \
  net/fastcgi/Exchange.h net/fastcgi/UpstreamPool.h net/fastcgi/UpstreamConnection.h; do
  [[ -f $repo/$file ]] || fail "$file is not in the checkout: update this list"
  [[ ! -e $root/include/$file ]] || fail "the private header $file was installed"
done
[[ -x $root/bin/protoc-gen-libnet ]] || fail "bin/protoc-gen-libnet is not executable"
for component in tls dns http_client websocket http2 inspect grpc; do
  # The libraries below a component are found beside it, whatever the prefix.
  readelf -d "$root/lib/libnet_$component.so.$version" | grep -q '(RUNPATH).*\[\$ORIGIN\]' ||
    fail "libnet_$component.so has no RUNPATH \$ORIGIN"
  [[ $(readlink "$root/lib/libnet_$component.so.$soversion") == "libnet_$component.so.$version" ]] ||
    fail "lib/libnet_$component.so.$soversion is not a link to libnet_$component.so.$version"
  [[ $(readlink "$root/lib/libnet_$component.so") == "libnet_$component.so.$soversion" ]] ||
    fail "lib/libnet_$component.so is not a link to libnet_$component.so.$soversion"
done
unexpected=$(find "$root/include" -type f ! -name '*.h' ! -path "$root/include/other.h")
[[ -z $unexpected ]] || fail "not headers: $unexpected"
if grep -rlE '#[[:space:]]*include[[:space:]]*[<"](net/poller/|liburing)' "$root/include"; then
  fail "an installed header (above) includes a backend header or liburing"
fi

members=$(ar t "$root/lib/libnet.a")
# The HTTP server's coroutine handlers and FastCGI need nothing of the system
# of their own: they are in libnet.
for member in Timestamp.o EventLoop.o PollerFactory.o UringPoller.o TcpServer.o HttpServer.o \
  CoroHandler.o RequestBodyReader.o ResponseWriteAwaiter.o FastCgiHandler.o UpstreamPool.o \
  RecordDecoder.o; do
  grep -qx "$member" <<<"$members" || fail "libnet.a has no $member"
done
soname=$(readelf -d "$root/lib/libnet.so.$version")
grep -q "(SONAME).*\[libnet\.so\.$soversion\]" <<<"$soname" || fail "libnet.so's soname is not libnet.so.$soversion"
# The resolver is in libnet_dns alone, with c-ares: libnet stays without it.
dns_members=$(ar t "$root/lib/libnet_dns.a")
[[ $(sort <<<"$dns_members" | tr '\n' ' ') == "AddressCache.o CoroResolve.o Resolver.o StreamAnswerCheck.o " ]] ||
  fail "libnet_dns.a holds: $(tr '\n' ' ' <<<"$dns_members")"
grep -qx 'Resolver.o' <<<"$members" && fail "libnet.a holds the resolver"
dns_dynamic=$(readelf -d "$root/lib/libnet_dns.so.$version")
grep -q "(SONAME).*\[libnet_dns\.so\.$soversion\]" <<<"$dns_dynamic" ||
  fail "libnet_dns.so's soname is not libnet_dns.so.$soversion"
grep -q "(NEEDED).*\[libcares\.so\.2\]" <<<"$dns_dynamic" || fail "libnet_dns.so does not need libcares.so.2"
grep -q "(NEEDED).*\[libnet\.so\.$soversion\]" <<<"$dns_dynamic" ||
  fail "libnet_dns.so does not need libnet.so.$soversion"
dns_symbols=$(nm -DC --defined-only "$root/lib/libnet_dns.so.$version")
grep -qF 'libnet::dns::Resolver::lookup(' <<<"$dns_symbols" ||
  fail "libnet_dns.so does not define libnet::dns::Resolver::lookup"
needs_library "$root/lib/libnet.so.$version" 'libcares\.so.*' && fail "libnet.so needs c-ares"
grep -q '^Requires.private: libcares' "$root/lib/pkgconfig/libnet_dns.pc" ||
  fail "libnet_dns.pc does not require libcares"
# The HTTP client and WebSocket: each archive holds its own objects only
# (none of a library below it), each shared library needs the ones below.
client_members=$(ar t "$root/lib/libnet_http_client.a" | sort | tr '\n' ' ')
for member in HttpClient.o Url.o HttpResponseParser.o CoroFetch.o; do
  grep -qw "$member" <<<"$client_members" || fail "libnet_http_client.a has no $member"
done
ws_members=$(ar t "$root/lib/libnet_websocket.a" | sort | tr '\n' ' ')
for member in Frame.o Deflate.o WebSocket.o WebSocketServer.o WebSocketClient.o CoroWebSocket.o; do
  grep -qw "$member" <<<"$ws_members" || fail "libnet_websocket.a has no $member"
done
for member in $client_members $ws_members; do
  grep -qx "$member" <<<"$members$(printf '\n%s' $dns_members)" &&
    fail "$member is in libnet.a or libnet_dns.a and in a component above them"
done
for member in $ws_members; do
  grep -qw "$member" <<<"$client_members" && fail "$member is in libnet_http_client.a and libnet_websocket.a"
done
grep -qx 'TlsLayer.o' <<<"$(ar t "$root/lib/libnet_tls.a")" || fail "libnet_tls.a has no TlsLayer.o"
grep -qw 'TlsLayer.o' <<<"$client_members $ws_members" && fail "a component above libnet_tls holds TlsLayer.o"
client_dynamic=$(readelf -d "$root/lib/libnet_http_client.so.$version")
for needed in "libnet\.so\.$soversion" "libnet_tls\.so\.$soversion" "libnet_dns\.so\.$soversion"; do
  grep -q "(NEEDED).*\[$needed\]" <<<"$client_dynamic" || fail "libnet_http_client.so does not need $needed"
done
ws_dynamic=$(readelf -d "$root/lib/libnet_websocket.so.$version")
for needed in "libnet_http_client\.so\.$soversion" 'libz\.so\.1' 'libcrypto\.so\.3'; do
  grep -q "(NEEDED).*\[$needed\]" <<<"$ws_dynamic" || fail "libnet_websocket.so does not need $needed"
done
grep -qF 'libnet::http::HttpClient::request(' <<<"$(nm -DC --defined-only \
  "$root/lib/libnet_http_client.so.$version")" || fail "libnet_http_client.so does not define HttpClient::request"
grep -qF 'libnet::ws::connect(' <<<"$(nm -DC --defined-only "$root/lib/libnet_websocket.so.$version")" ||
  fail "libnet_websocket.so does not define ws::connect"
for library in libnet libnet_tls libnet_dns libnet_http_client; do
  needs_library "$root/lib/$library.so.$version" 'libz\.so.*' && fail "$library.so needs zlib"
done
grep -q '^Requires.private: zlib' "$root/lib/pkgconfig/libnet_websocket.pc" ||
  fail "libnet_websocket.pc does not require zlib"
# HTTP/2: its own objects only, on libnet.so alone, the only library with
# nghttp2.
h2_members=$(ar t "$root/lib/libnet_http2.a")
[[ $(sort <<<"$h2_members" | tr '\n' ' ') == "ClientConnection.o ClientSession.o CoroServe.o Http2RequestBody.o Http2Server.o Http2Writer.o ServerSession.o TokenBucket.o " ]] ||
  fail "libnet_http2.a holds: $(tr '\n' ' ' <<<"$h2_members")"
h2_dynamic=$(readelf -d "$root/lib/libnet_http2.so.$version")
for needed in "libnet\.so\.$soversion" 'libnghttp2\.so\.14'; do
  grep -q "(NEEDED).*\[$needed\]" <<<"$h2_dynamic" || fail "libnet_http2.so does not need $needed"
done
grep -q '(NEEDED).*\[libnet_\(tls\|dns\|http_client\|websocket\)\.so' <<<"$h2_dynamic" &&
  fail "libnet_http2.so needs a component it does not use"
h2_symbols=$(nm -DC --defined-only "$root/lib/libnet_http2.so.$version")
for symbol in 'libnet::http2::serve(' 'libnet::http2::serveConnection('; do
  grep -qF "$symbol" <<<"$h2_symbols" || fail "libnet_http2.so does not define $symbol"
done
for library in libnet libnet_tls libnet_dns libnet_http_client libnet_websocket libnet_inspect; do
  needs_library "$root/lib/$library.so.$version" 'libnghttp2\.so.*' && fail "$library.so needs nghttp2"
done
grep -q '^Requires.private: libnghttp2' "$root/lib/pkgconfig/libnet_http2.pc" ||
  fail "libnet_http2.pc does not require libnghttp2"
# The inspector: its own objects only, on libnet.so alone, the only library
# with gperftools' libprofiler.
inspect_members=$(ar t "$root/lib/libnet_inspect.a")
[[ $(sort <<<"$inspect_members" | tr '\n' ' ') == "CpuProfiler.o Inspector.o LoopGather.o ProfileSignal.o " ]] ||
  fail "libnet_inspect.a holds: $(tr '\n' ' ' <<<"$inspect_members")"
inspect_dynamic=$(readelf -d "$root/lib/libnet_inspect.so.$version")
for needed in "libnet\.so\.$soversion" 'libprofiler\.so\.0'; do
  grep -q "(NEEDED).*\[$needed\]" <<<"$inspect_dynamic" || fail "libnet_inspect.so does not need $needed"
done
grep -q '(NEEDED).*\[libnet_\(tls\|dns\|http_client\|websocket\|http2\)\.so' <<<"$inspect_dynamic" &&
  fail "libnet_inspect.so needs a component it does not use"
inspect_symbols=$(nm -DC --defined-only "$root/lib/libnet_inspect.so.$version")
for symbol in 'libnet::inspect::Inspector::serve(' 'libnet::inspect::CpuProfiler::' \
  'libnet::inspect::ProfileSignal::'; do
  grep -qF "$symbol" <<<"$inspect_symbols" || fail "libnet_inspect.so does not define $symbol"
done
for library in libnet libnet_tls libnet_dns libnet_http_client libnet_websocket libnet_http2; do
  needs_library "$root/lib/$library.so.$version" 'libprofiler\.so.*' && fail "$library.so needs libprofiler"
done
grep -q '^Requires.private: libprofiler' "$root/lib/pkgconfig/libnet_inspect.pc" ||
  fail "libnet_inspect.pc does not require libprofiler"
# gRPC: on libnet_http2, the only library with protobuf; the plugin runs.
grpc_members=$(ar t "$root/lib/libnet_grpc.a" | sort | tr '\n' ' ')
for member in Server.o Service.o Http2ServerCall.o CoroStream.o Wire.o MessageReader.o Gzip.o \
  Channel.o ClientCall.o CoroClient.o; do
  grep -qw "$member" <<<"$grpc_members" || fail "libnet_grpc.a has no $member"
done
for member in Http2Server.o HttpServer.o ClientSession.o TlsContext.o Resolver.o; do
  grep -qw "$member" <<<"$grpc_members" && fail "libnet_grpc.a holds $member"
done
grpc_dynamic=$(readelf -d "$root/lib/libnet_grpc.so.$version")
for needed in "libnet\.so\.$soversion" "libnet_http2\.so\.$soversion" "libnet_tls\.so\.$soversion" \
  "libnet_dns\.so\.$soversion" 'libprotobuf\.so\.32'; do
  grep -q "(NEEDED).*\[$needed\]" <<<"$grpc_dynamic" || fail "libnet_grpc.so does not need $needed"
done
for library in libnet libnet_tls libnet_dns libnet_http_client libnet_websocket libnet_http2 libnet_inspect; do
  needs_library "$root/lib/$library.so.$version" 'libprotobuf\.so.*' && fail "$library.so needs protobuf"
done
grep -q '^Requires: libnet_http2 = .*protobuf' "$root/lib/pkgconfig/libnet_grpc.pc" ||
  fail "libnet_grpc.pc does not require libnet_http2 and protobuf"
"$root/bin/protoc-gen-libnet" </dev/null >/dev/null 2>&1 ||
  fail "bin/protoc-gen-libnet does not run (an empty request is a valid one)"

symbols=$(nm -DC --defined-only "$root/lib/libnet.so.$version")
for symbol in 'libnet::TcpServer::start()' 'libnet::http::HttpServer::HttpServer(' 'libnet::newPoller(' \
  'libnet::http::coroHandler(' 'libnet::fastcgi::FastCgiHandler::FastCgiHandler('; do
  grep -qF "$symbol" <<<"$symbols" || fail "libnet.so does not define $symbol"
done

# Installed files name the final prefix, never the staging directory.
if grep -rlF "$stage" "$root"; then fail "the files above name the staging directory"; fi
grep -qx 'prefix=/usr' "$root/lib/pkgconfig/libnet.pc" || fail "libnet.pc's prefix is not /usr"
grep -qx "/usr/include/net/EventLoop.h" "$root/share/libnet/install_manifest.txt" ||
  fail "the manifest does not list /usr/include/net/EventLoop.h"

# --- again, with the option instead of the environment: nothing changes ---
install_libnet --prefix /usr --destdir "$stage"
grep -q ' 0 files written' "$tmp/log" || fail "a second install rewrote files: $(tail -n 1 "$tmp/log")"

# --- refusals ---
status=0
timeout 60 "$repo/tools/install.sh" --no-such-option >"$tmp/log" 2>&1 || status=$?
((status != 0)) || fail "tools/install.sh accepted --no-such-option"
status=0
timeout 60 "$repo/tools/install.sh" --uninstall --prefix "$tmp/nothing-here" >"$tmp/log" 2>&1 ||
  status=$?
((status != 0)) && grep -q 'no libnet manifest' "$tmp/log" ||
  fail "uninstalling from an empty prefix did not fail with 'no libnet manifest'"

# --- uninstall: back to what was there before ---
bounded 60 "tools/install.sh --uninstall" \
  env DESTDIR="$stage" "$repo/tools/install.sh" --uninstall --prefix /usr
left=$(cd "$stage" && find . -mindepth 1 | sort | tr '\n' ' ')
[[ $left == "./usr ./usr/include ./usr/include/other.h ./usr/lib " ]] ||
  fail "after --uninstall the staging root holds: $left"

# --- the Debian package ---
install_libnet --deb "$tmp/deb"
deb=$tmp/deb/libnet-dev_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || fail "no $deb"
info=$(dpkg-deb --field "$deb" Package Version Depends)
grep -qx 'Package: libnet-dev' <<<"$info" || fail "package name: $info"
grep -qx "Version: $version" <<<"$info" || fail "package version: $info"
grep -q '^Depends: .*liburing-dev (>= 2.3).*liburing2' <<<"$info" || fail "package dependencies: $info"
for runtime in libc-ares2 libssl3 zlib1g libnghttp2-14 libgoogle-perftools4 libprotobuf32 libprotoc32; do
  grep -q "^Depends: .*$runtime" <<<"$info" || fail "the package does not depend on $runtime: $info"
done
contents=$(dpkg-deb --contents "$deb" | awk '{ print $6 }')
for file in ./usr/include/net/EventLoop.h ./usr/lib/libnet.a "./usr/lib/libnet.so.$version" \
  ./usr/lib/pkgconfig/libnet.pc ./usr/lib/cmake/libnet/libnetConfig.cmake \
  ./usr/include/net/dns/Resolver.h ./usr/lib/libnet_dns.a "./usr/lib/libnet_dns.so.$version" \
  ./usr/lib/pkgconfig/libnet_dns.pc ./usr/include/net/http/HttpClient.h \
  ./usr/lib/libnet_http_client.a "./usr/lib/libnet_http_client.so.$version" \
  ./usr/lib/pkgconfig/libnet_http_client.pc ./usr/include/net/websocket/WebSocket.h \
  ./usr/lib/libnet_websocket.a "./usr/lib/libnet_websocket.so.$version" \
  ./usr/lib/pkgconfig/libnet_websocket.pc ./usr/include/net/http2/Http2Server.h \
  ./usr/lib/libnet_http2.a "./usr/lib/libnet_http2.so.$version" ./usr/lib/pkgconfig/libnet_http2.pc \
  ./usr/include/net/http/CoroHandler.h ./usr/include/net/fastcgi/FastCgiHandler.h \
  ./usr/include/net/inspect/Inspector.h ./usr/lib/libnet_inspect.a \
  "./usr/lib/libnet_inspect.so.$version" ./usr/lib/pkgconfig/libnet_inspect.pc \
  ./usr/include/net/grpc/Server.h ./usr/lib/libnet_grpc.a "./usr/lib/libnet_grpc.so.$version" \
  ./usr/lib/pkgconfig/libnet_grpc.pc ./usr/bin/protoc-gen-libnet \
  ./usr/share/licenses/libnet/LICENSE; do
  grep -qx "$file" <<<"$contents" || fail "the package lacks $file"
done
grep -q 'net/poller\|install_manifest' <<<"$contents" &&
  fail "the package holds backend headers or an install manifest"

checkout_after=$(git -C "$repo" status --porcelain --ignored=no)
[[ $checkout_after == "$checkout_before" ]] ||
  fail "the checkout changed: $(diff <(echo "$checkout_before") <(echo "$checkout_after"))"

echo "ok: install staging: DESTDIR tree, reinstall, uninstall and libnet-dev_${version} package" \
  "as expected, checkout untouched ($(elapsed) s)"
