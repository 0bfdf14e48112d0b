#!/usr/bin/env bash
# Installs libnet for programs built outside this repository (with CMake,
# pkg-config or a plain compiler command line), or removes it again.
#
#   tools/install.sh [--prefix DIR] [--destdir DIR]    build with --config=opt and install
#   tools/install.sh --uninstall [--prefix DIR] [--destdir DIR]
#   tools/install.sh --deb OUTDIR                      build libnet-dev_VERSION_ARCH.deb
#
# What lands under PREFIX (default /usr/local):
#   include/{base,net,net/coro,net/http,net/fastcgi,net/metrics,net/tls,net/dns,
#            net/websocket,net/http2,net/inspect,net/grpc}/*.h
#                                     the public headers (the
#                                     hdrs of the libraries in dist/BUILD and
#                                     below them; nothing of net/poller/, no
#                                     liburing)
#   lib/libnet.a                      every libnet archive merged into one
#   lib/libnet.so.VERSION (+ .so.MAJOR, .so links), soname libnet.so.MAJOR
#   lib/libnet_tls.a, lib/libnet_tls.so.VERSION (+ links)  the TLS layer
#                                     alone (it needs libnet and OpenSSL)
#   lib/libnet_dns.a, lib/libnet_dns.so.VERSION (+ links)  the resolver
#                                     alone (it needs libnet and c-ares)
#   lib/libnet_http_client.a, lib/libnet_http_client.so.VERSION (+ links)
#                                     the HTTP client alone (it needs libnet,
#                                     libnet_tls and libnet_dns)
#   lib/libnet_websocket.a, lib/libnet_websocket.so.VERSION (+ links)
#                                     WebSocket alone (it needs
#                                     libnet_http_client, zlib and libcrypto)
#   lib/libnet_http2.a, lib/libnet_http2.so.VERSION (+ links)
#                                     HTTP/2 for the HTTP server alone (it
#                                     needs libnet and nghttp2)
#   lib/libnet_inspect.a, lib/libnet_inspect.so.VERSION (+ links)
#                                     the inspector and CPU profiles alone
#                                     (they need libnet and libprofiler)
#   lib/libnet_grpc.a, lib/libnet_grpc.so.VERSION (+ links)
#                                     the gRPC server alone (it needs
#                                     libnet_http2, protobuf and zlib)
#   bin/protoc-gen-libnet             protoc's plugin for libnet's gRPC
#                                     services (docs/grpc.md, "Generating
#                                     code"; it needs libprotoc)
#   lib/pkgconfig/libnet.pc, libnet_tls.pc, libnet_dns.pc, libnet_http_client.pc,
#                 libnet_websocket.pc, libnet_http2.pc, libnet_inspect.pc,
#                 libnet_grpc.pc
#   lib/cmake/libnet/libnetConfig.cmake, libnetConfigVersion.cmake
#                                     (libnet::libnet, libnet::libnet_shared;
#                                     COMPONENTS tls: libnet::tls, libnet::tls_shared;
#                                     COMPONENTS dns: libnet::dns, libnet::dns_shared;
#                                     COMPONENTS http_client: libnet::http_client,
#                                     libnet::http_client_shared; COMPONENTS
#                                     websocket: libnet::websocket,
#                                     libnet::websocket_shared; COMPONENTS
#                                     http2: libnet::http2,
#                                     libnet::http2_shared; COMPONENTS
#                                     inspect: libnet::inspect,
#                                     libnet::inspect_shared; COMPONENTS
#                                     grpc: libnet::grpc,
#                                     libnet::grpc_shared and
#                                     libnet_PROTOC_PLUGIN)
#   share/licenses/libnet/LICENSE     the MIT licence, whose notice goes with
#                                     every copy of the libraries
#   share/libnet/install_manifest.txt what --uninstall removes
#
# DESTDIR (the option or the environment variable, as packagers set it)
# stages the tree under DIR/PREFIX; the installed files still name PREFIX.
# Installing again is safe: unchanged files are left alone, files an earlier
# install of this prefix had and this one has not are removed. The version
# is the one in ./VERSION. Needs Bazel and a C++ toolchain; no network.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: tools/install.sh [--prefix DIR] [--destdir DIR] [--uninstall]
       tools/install.sh --deb OUTDIR

  --prefix DIR    where libnet goes (default /usr/local)
  --destdir DIR   stage under DIR/PREFIX (default: $DESTDIR, else nothing)
  --uninstall     remove what the install under PREFIX put there, as its
                  manifest (PREFIX/share/libnet/install_manifest.txt) lists,
                  and the directories it created if they are empty
  --deb OUTDIR    build the Debian package libnet-dev (prefix /usr) into
                  OUTDIR instead of installing
  -h, --help      this text
EOF
}

die() {
  echo "install.sh: $*" >&2
  exit 1
}

prefix=/usr/local
destdir=${DESTDIR:-}
action=install
deb_dir=
while (($# > 0)); do
  case "$1" in
    --prefix | --destdir | --deb)
      (($# >= 2)) || die "$1 needs a directory (see --help)"
      case "$1" in
        --prefix) prefix=$2 ;;
        --destdir) destdir=$2 ;;
        --deb) deb_dir=$2 action=deb ;;
      esac
      shift 2
      ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --destdir=*) destdir=${1#*=}; shift ;;
    --deb=*) deb_dir=${1#*=} action=deb; shift ;;
    --uninstall) action=uninstall; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[[ $action == deb ]] && [[ -z $deb_dir ]] && die "--deb needs a directory"
[[ -n $prefix ]] || die "--prefix is empty"

# Absolute paths, taken before leaving the caller's directory. The prefix is
# written into libnet.pc, so it is normalized but not resolved through links.
prefix=$(realpath -m -s -- "$prefix")
[[ -n $destdir ]] && destdir=$(realpath -m -s -- "$destdir")
[[ $destdir == / ]] && destdir=
[[ -n $deb_dir ]] && deb_dir=$(realpath -m -s -- "$deb_dir")
p=${prefix%/}   # the prefix to join paths to ("" for /)

# The prefix is written into libnet.pc, where a blank would split it, and
# substituted with sed.
unsupported='[[:space:]|&\\]'
for dir in "$prefix" "$destdir" "$deb_dir"; do
  if [[ $dir =~ $unsupported ]]; then
    die "'$dir': paths with blanks, '|', '&' or '\\' are not supported"
  fi
done

cd "$(dirname "$0")/.."
version=$(tr -d '[:space:]' <VERSION)
[[ $version =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || die "VERSION '$version' is not MAJOR.MINOR.PATCH"
# The API and ABI a program gets: before 1.0 each minor release may change
# them (0.1 and 0.2 are different APIs), so the soname carries MAJOR.MINOR
# (libnet.so.0.2); from 1.0 on, MAJOR only.
if ((BASH_REMATCH[1] == 0)); then
  soversion=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
else
  soversion=${BASH_REMATCH[1]}
fi

manifest_name=share/libnet/install_manifest.txt

work=$(mktemp -d "${TMPDIR:-/tmp}/libnet-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- build: the tree of one installation, under $1, for prefix $2 ----------

# The components, in the order they build on each other: each has
# //dist:NAME_static and //dist:NAME_shared, libnet_NAME.{a,so} and
# dist/libnet_NAME.pc.in.
components=(tls dns http_client websocket http2 inspect grpc)

# Programs installed under bin/: protoc's plugin for gRPC services.
PLUGIN=//net/grpc/plugin:protoc-gen-libnet

# The public headers: the hdrs of every library in dist's libraries' closure
# but the backends' (//net/poller's one header, the factory's, is for
# EventLoop.cc alone), as repository paths.
public_headers() {
  local labels libraries="deps(//dist:static)" component
  for component in "${components[@]}"; do
    libraries+=" + deps(//dist:${component}_static)"
  done
  labels=$(bazel query --noimplicit_deps \
    "labels(hdrs, kind(\"cc_library\", $libraries) - //net/poller:all)" \
    2>"$work/query.log") || {
    cat "$work/query.log" >&2
    die "bazel query for the public headers failed"
  }
  sed -n 's|^//\([^:]*\):\(.*\)$|\1/\2|p' <<<"$labels" | sed 's|^/||' | sort
}

# Fails unless the headers are self-contained within the set: none of them
# is a backend's, none includes a backend's or liburing, and every header of
# this repository that one includes is in the set too.
check_headers() {
  local header included bad=()
  declare -A installed=()
  for header in "$@"; do installed[$header]=1; done
  for header in "$@"; do
    [[ -f $header ]] || bad+=("$header: not a source file (generated headers are not installed)")
    [[ $header == net/poller/* ]] && bad+=("$header: a backend header is listed as public")
    while IFS= read -r included; do
      case "$included" in
        net/poller/* | liburing* | liburing/*)
          bad+=("$header includes $included, which no application may need") ;;
        base/* | net/* | examples/* | tests/* | pingpong/* | bench/*)
          [[ -n ${installed[$included]:-} ]] ||
            bad+=("$header includes $included, which is not installed") ;;
      esac
    done < <(sed -n 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\([^>"]*\)[>"].*|\1|p' "$header")
  done
  if ((${#bad[@]} > 0)); then
    printf 'install.sh: %s\n' "${bad[@]}" >&2
    die "the public headers are not fit to install"
  fi
}

build_tree() {
  local root=$1 tree_prefix=$2 bin header component targets=(//dist:static //dist:shared "$PLUGIN")
  for component in "${components[@]}"; do
    targets+=("//dist:${component}_static" "//dist:${component}_shared")
  done
  echo "install.sh: building libnet $version (bazel build --config=opt)" >&2
  # --symlink_prefix=/ leaves the bazel-* links of the checkout as they were.
  bazel build --config=opt --symlink_prefix=/ "${targets[@]}" >&2 ||
    die "the Bazel build failed"
  bin=$(bazel info --config=opt bazel-bin 2>/dev/null) || die "bazel info bazel-bin failed"

  local headers=()
  mapfile -t headers < <(public_headers)
  ((${#headers[@]} > 0)) || die "bazel query found no public headers"
  check_headers "${headers[@]}"
  for header in "${headers[@]}"; do
    install -D -m 0644 "$header" "$root/include/$header"
  done

  install -D -m 0644 "$bin/dist/libnet.a" "$root/lib/libnet.a"
  install -D -m 0644 "$bin/dist/libnet.so" "$root/lib/libnet.so.$version"
  local soname
  soname=$(readelf -d "$root/lib/libnet.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ $soname == "libnet.so.$soversion" ]] ||
    die "libnet.so has soname '$soname', expected libnet.so.$soversion"
  ln -s "libnet.so.$version" "$root/lib/libnet.so.$soversion"
  ln -s "libnet.so.$soversion" "$root/lib/libnet.so"
  # The components: each a library of its own on top of libnet.
  for component in "${components[@]}"; do
    install -D -m 0644 "$bin/dist/libnet_$component.a" "$root/lib/libnet_$component.a"
    install -D -m 0644 "$bin/dist/libnet_$component.so" "$root/lib/libnet_$component.so.$version"
    soname=$(readelf -d "$root/lib/libnet_$component.so.$version" |
      sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    [[ $soname == "libnet_$component.so.$soversion" ]] ||
      die "libnet_$component.so has soname '$soname', expected libnet_$component.so.$soversion"
    ln -s "libnet_$component.so.$version" "$root/lib/libnet_$component.so.$soversion"
    ln -s "libnet_$component.so.$soversion" "$root/lib/libnet_$component.so"
  done

  install -D -m 0755 "$bin/net/grpc/plugin/protoc-gen-libnet" "$root/bin/protoc-gen-libnet"

  local substitute=(-e "s|@PREFIX@|$tree_prefix|g" -e "s|@VERSION@|$version|g"
    -e "s|@SOVERSION@|$soversion|g")
  mkdir -p "$root/lib/pkgconfig" "$root/lib/cmake/libnet"
  sed "${substitute[@]}" dist/libnet.pc.in >"$root/lib/pkgconfig/libnet.pc"
  for component in "${components[@]}"; do
    sed "${substitute[@]}" "dist/libnet_$component.pc.in" \
      >"$root/lib/pkgconfig/libnet_$component.pc"
  done
  sed "${substitute[@]}" dist/libnetConfig.cmake.in >"$root/lib/cmake/libnet/libnetConfig.cmake"
  sed "${substitute[@]}" dist/libnetConfigVersion.cmake.in \
    >"$root/lib/cmake/libnet/libnetConfigVersion.cmake"
  chmod 0644 "$root/lib/pkgconfig/"*.pc "$root/lib/cmake/libnet/"*.cmake
  install -D -m 0644 LICENSE "$root/share/licenses/libnet/LICENSE"
}

# --- install / uninstall ---------------------------------------------------

# The loader finds a new libnet.so.MAJOR in /usr/local/lib or /usr/lib only
# once its cache is rebuilt; elsewhere a program needs an RPATH (CMake gives
# one in the build tree) or LD_LIBRARY_PATH.
refresh_loader_cache() {
  if [[ -z $destdir && $EUID -eq 0 && ($p == /usr || $p == /usr/local) ]] &&
    command -v ldconfig >/dev/null; then
    echo "install.sh: ldconfig" >&2
    ldconfig
  fi
}

# The entries of a manifest, without its comments.
manifest_entries() {
  [[ -f $1 ]] && grep -v '^#' "$1" || true
}

# A manifest entry must be a normalized absolute path; a file must be under
# the prefix, a directory (trailing /) under it, the prefix, or above it.
check_entry() {
  local entry=$1 path=${1%/}
  [[ $path == /* && $(realpath -m -s -- "$path") == "$path" ]] ||
    die "manifest entry '$entry' is not a plain absolute path"
  if [[ $entry == */ ]]; then
    [[ $path == "$p"/* || $path == "$prefix" || $p/ == "$path"/* ]] ||
      die "manifest entry '$entry' is no directory of prefix $prefix"
  else
    [[ $path == "$p"/* ]] || die "manifest entry '$entry' is not under prefix $prefix"
  fi
}

do_install() {
  local stage=$work/stage
  build_tree "$stage" "$prefix"

  local target=$destdir$p manifest=$destdir$p/$manifest_name
  [[ -z $destdir ]] || mkdir -p -- "$destdir"
  local files=() rel
  mapfile -t files < <(cd "$stage" && find . \( -type f -o -type l \) -printf '%P\n' | sort)
  files+=("$manifest_name")

  # Directories: the ones an earlier install created stay recorded as ours.
  declare -A created=() wanted=()
  local entry dir
  while IFS= read -r entry; do
    [[ -z $entry ]] && continue
    check_entry "$entry"
    [[ $entry == */ && -d $destdir${entry%/} ]] && created[${entry%/}]=1
  done < <(manifest_entries "$manifest")
  for rel in "${files[@]}"; do
    dir=$(dirname "$p/$rel")
    while [[ $dir != / && -z ${wanted[$dir]:-} ]]; do
      wanted[$dir]=1
      dir=$(dirname "$dir")
    done
  done
  while IFS= read -r dir; do
    if [[ ! -d $destdir$dir ]]; then
      mkdir -m 0755 -- "$destdir$dir"
      created[$dir]=1
    fi
  done < <(printf '%s\n' "${!wanted[@]}" | awk '{ print length($0) "\t" $0 }' | sort -n | cut -f2-)

  # Files of an earlier install that this one no longer has.
  declare -A new=()
  for rel in "${files[@]}"; do new[$p/$rel]=1; done
  while IFS= read -r entry; do
    [[ -z $entry || $entry == */ || -n ${new[$entry]:-} ]] && continue
    if [[ -e $destdir$entry || -L $destdir$entry ]]; then
      rm -f -- "$destdir$entry"
      echo "removed (no longer installed): $destdir$entry"
    fi
  done < <(manifest_entries "$manifest")

  # The manifest goes first, so that --uninstall also cleans up after an
  # install that stopped half-way.
  {
    echo "# libnet $version under $prefix. 'tools/install.sh --uninstall --prefix $prefix'"
    echo "# removes these files, then the directories (trailing /) if they are empty."
    for rel in "${files[@]}"; do echo "$p/$rel"; done
    for dir in "${!created[@]}"; do echo "$dir/"; done | sort
  } >"$manifest"
  chmod 0644 "$manifest"

  local installed=0 unchanged=0 src dst
  for rel in "${files[@]}"; do
    [[ $rel == "$manifest_name" ]] && continue
    src=$stage/$rel dst=$target/$rel
    if [[ -L $src ]]; then
      if [[ -L $dst && $(readlink "$dst") == "$(readlink "$src")" ]]; then
        unchanged=$((unchanged + 1))
        echo "up to date: $dst"
        continue
      fi
      rm -f -- "$dst"
      ln -s "$(readlink "$src")" "$dst"
    else
      if [[ -f $dst && ! -L $dst ]] && cmp -s "$src" "$dst"; then
        unchanged=$((unchanged + 1))
        echo "up to date: $dst"
        continue
      fi
      rm -f -- "$dst"
      # Programs (bin/) stay executable; everything else is data.
      if [[ $rel == bin/* ]]; then
        install -m 0755 "$src" "$dst"
      else
        install -m 0644 "$src" "$dst"
      fi
    fi
    installed=$((installed + 1))
    echo "installed: $dst"
  done


  refresh_loader_cache
  echo "install.sh: libnet $version in $target: $installed files written," \
    "$unchanged unchanged; manifest $manifest"
}

do_uninstall() {
  local manifest=$destdir$p/$manifest_name entry
  [[ -f $manifest ]] || die "no libnet manifest at $manifest: nothing was installed under $prefix${destdir:+ (DESTDIR $destdir)}"
  local entries=() dirs=()
  mapfile -t entries < <(manifest_entries "$manifest")
  for entry in "${entries[@]}"; do [[ -n $entry ]] && check_entry "$entry"; done

  local removed=0
  for entry in "${entries[@]}"; do
    [[ -z $entry || $entry == */ || $entry == "$p/$manifest_name" ]] && continue
    if [[ -e $destdir$entry || -L $destdir$entry ]]; then
      rm -f -- "$destdir$entry"
      echo "removed: $destdir$entry"
      removed=$((removed + 1))
    fi
  done
  rm -f -- "$manifest"
  echo "removed: $manifest"

  # Deepest first, so that a directory's subdirectories go before it.
  mapfile -t dirs < <(printf '%s\n' "${entries[@]}" | sed -n 's|/$||p' |
    awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2-)
  for entry in "${dirs[@]}"; do
    [[ -d $destdir$entry ]] || continue
    if rmdir -- "$destdir$entry" 2>/dev/null; then
      echo "removed: $destdir$entry/"
    else
      echo "kept (not empty): $destdir$entry/"
    fi
  done
  refresh_loader_cache
  echo "install.sh: libnet uninstalled from $destdir$p ($((removed + 1)) files)"
}

# --- Debian package --------------------------------------------------------

do_deb() {
  command -v dpkg-deb >/dev/null || die "--deb needs dpkg-deb (dpkg)"
  command -v dpkg-shlibdeps >/dev/null || die "--deb needs dpkg-shlibdeps (apt-get install dpkg-dev)"
  local root=$work/deb arch shlibs deb
  mkdir -p "$root/DEBIAN"
  chmod 0755 "$root" "$root/DEBIAN"
  build_tree "$root/usr" /usr
  find "$root" -type d -exec chmod 0755 {} +
  arch=$(dpkg --print-architecture)

  # The shared libraries' runtime dependencies (liburing, and OpenSSL,
  # c-ares, zlib, nghttp2, libprofiler and protobuf for the components, libprotoc
  # for the plugin), as dpkg-shlibdeps finds them. It
  # wants a debian/control to read, and says nothing useful without one; the
  # components need libnet.so.MAJOR and each other's libraries, which are this
  # package's own, so shlibs.local names them and -x leaves the package's
  # dependency on itself out.
  mkdir -p "$work/shlibs/debian"
  printf 'Source: libnet\n\nPackage: libnet-dev\nArchitecture: any\n' >"$work/shlibs/debian/control"
  {
    echo "libnet $soversion libnet-dev"
    for component in "${components[@]}"; do
      echo "libnet_$component $soversion libnet-dev"
    done
  } >"$work/shlibs/debian/shlibs.local"
  local libraries=("$root/usr/lib/libnet.so.$version" "$root/usr/bin/protoc-gen-libnet") component
  for component in "${components[@]}"; do
    libraries+=("$root/usr/lib/libnet_$component.so.$version")
  done
  shlibs=$(cd "$work/shlibs" && dpkg-shlibdeps -O -xlibnet-dev -l"$root/usr/lib" \
    "${libraries[@]}" 2>"$work/shlibdeps.log" |
    sed -n 's/^shlibs:Depends=//p') || true
  [[ -n $shlibs ]] || {
    cat "$work/shlibdeps.log" >&2
    die "dpkg-shlibdeps found no dependencies of the shared libraries"
  }

  # Whoever builds the package maintains it: DEBFULLNAME/DEBEMAIL as the
  # Debian tools use them, else the author of the checked-out commit.
  local maintainer
  if [[ -n ${DEBEMAIL:-} ]]; then
    maintainer="${DEBFULLNAME:-libnet} <$DEBEMAIL>"
  else
    maintainer=$(git log -1 --format='%an <%ae>') || die "set DEBEMAIL (and DEBFULLNAME) for the package's Maintainer"
  fi

  # One package with all the libraries, as a -dev package for building
  # programs. The components' archives and their CMake and pkg-config files
  # want OpenSSL's, c-ares's, zlib's, nghttp2's and gperftools' development
  # files, recommended rather than required, since a program without TLS,
  # the resolver, WebSocket, HTTP/2 or the inspector needs none of them.
  # Debian's libnet1-dev (the packet construction library) also ships
  # libnet.so and libnet.a, and provides the name libnet-dev: the two cannot
  # share a system, which the Conflicts says.
  cat >"$root/DEBIAN/control" <<EOF
Package: libnet-dev
Version: $version
Architecture: $arch
Maintainer: $maintainer
Section: libdevel
Priority: optional
Depends: liburing-dev (>= 2.3), $shlibs
Recommends: libssl-dev (>= 3.0), libc-ares-dev (>= 1.18), zlib1g-dev, libnghttp2-dev (>= 1.52),
 libgoogle-perftools-dev (>= 2.10), libprotobuf-dev (>= 3.21), protobuf-compiler (>= 3.21)
Conflicts: libnet1-dev
Description: one-loop-per-thread C++20 network library for Linux
 libnet runs non-blocking TCP servers and clients (and an HTTP/1.1 server
 with coroutine handlers and FastCGI, an HTTP client, HTTP/2 for the
 server, WebSocket and a gRPC server) on an event loop per thread, over
 epoll or io_uring, chosen at run time.
 .
 This package has the headers, the static and the shared libraries, and the
 files that let CMake (find_package(libnet), target libnet::libnet) and
 pkg-config (libnet) find them. TLS (OpenSSL), the DNS resolver (c-ares),
 the HTTP client (on both), WebSocket (zlib), HTTP/2 (nghttp2), the
 inspector (gperftools' libprofiler) and gRPC (protobuf) are libraries of
 their own: CMake components tls, dns, http_client, websocket, http2,
 inspect and grpc, pkg-config libnet_tls, libnet_dns, libnet_http_client,
 libnet_websocket, libnet_http2, libnet_inspect and libnet_grpc. protoc's
 plugin for gRPC services is /usr/bin/protoc-gen-libnet.
EOF
  mkdir -p "$deb_dir"
  deb=$deb_dir/libnet-dev_${version}_${arch}.deb
  dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
  echo "install.sh: built $deb"
}

case "$action" in
  install) do_install ;;
  uninstall) do_uninstall ;;
  deb) do_deb ;;
esac
