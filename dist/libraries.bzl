"""libnet as one library file, the way tools/install.sh ships it.

Inside this repository an application links //net and //net/http, and Bazel
passes the five archives behind them (//base, //net:core, //net/poller,
//net, //net/http) to the linker in an order that works. Outside it, a
consumer gets one file, so these rules make it from exactly the archives a
Bazel link would use (the deps' CcInfo, so a library added to the graph is
picked up without editing a list here):

  cc_merged_static_library  libnet.a: the non-PIC archives' members in one
                            archive. One archive makes the order among
                            libnet's parts irrelevant: the linker rescans an
                            archive's index until nothing more resolves, which
                            is what //net/poller's alwayslink does in Bazel.
  cc_whole_shared_library   libnet.so: every member of the PIC archives,
                            linked whole. A cc_binary(linkshared = True) of
                            the same deps links only the members something
                            in the link references (Bazel 4 no longer wraps
                            its deps in --whole-archive): //net/poller, which
                            is alwayslink, and what it calls, but no
                            TcpServer, TcpClient or HttpServer.

The system libraries the archives need (-luring, -pthread: the deps'
linkopts) are not inside libnet.a; the shared library records them as
NEEDED. dist/libnet.pc.in and dist/libnetConfig.cmake.in list them for
consumers of the archive.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _linker_inputs(deps, exclude = []):
    """The deps' linker inputs, each library once, in Bazel's link order,
    less those that `exclude` (targets shipped in another library) bring."""
    merged = cc_common.merge_cc_infos(cc_infos = [dep[CcInfo] for dep in deps])
    excluded = {}
    if exclude:
        others = cc_common.merge_cc_infos(cc_infos = [dep[CcInfo] for dep in exclude])
        for linker_input in others.linking_context.linker_inputs.to_list():
            excluded[str(linker_input.owner)] = True
    return [
        linker_input
        for linker_input in merged.linking_context.linker_inputs.to_list()
        if str(linker_input.owner) not in excluded
    ]

def _merged_static_library_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    archives = []
    for linker_input in _linker_inputs(ctx.attr.deps, ctx.attr.exclude):
        for library in linker_input.libraries:
            # The non-PIC archive is what Bazel's own binaries (the tests, the
            # benchmarks) link; GCC's default on Debian makes it PIE code, so
            # it links into the PIE executables g++ makes by default.
            archive = library.static_library or library.pic_static_library
            if archive == None:
                fail("%s provides no static library to merge" % linker_input.owner)
            archives.append(archive)

    script = ctx.actions.declare_file(ctx.label.name + ".mri")
    ctx.actions.write(
        output = script,
        content = "\n".join(
            ["create " + ctx.outputs.out.path] +
            ["addlib " + archive.path for archive in archives] +
            ["save", "end", ""],
        ),
    )

    # MRI's addlib keeps members with equal names, but a consumer's linker
    # would still pull in only one of two objects that define the same
    # symbols, so count the members to catch an archive that lost some.
    ctx.actions.run_shell(
        inputs = archives + [script],
        outputs = [ctx.outputs.out],
        tools = cc_toolchain.all_files,
        command = """
set -eu
ar="$1"; shift
out="$1"; shift
script="$1"; shift
"$ar" -M < "$script"
want=0
for archive in "$@"; do
  want=$((want + $("$ar" t "$archive" | wc -l)))
done
have=$("$ar" t "$out" | wc -l)
if [ "$have" -ne "$want" ]; then
  echo "$out: $have members, expected $want" >&2
  exit 1
fi
""",
        arguments = [cc_toolchain.ar_executable, ctx.outputs.out.path, script.path] +
                    [archive.path for archive in archives],
        mnemonic = "MergeArchives",
        progress_message = "Merging %d archives into %s" % (len(archives), ctx.outputs.out.short_path),
    )
    return [DefaultInfo(files = depset([ctx.outputs.out]))]

cc_merged_static_library = rule(
    implementation = _merged_static_library_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        # Targets whose archives another library file ships (libnet_tls.a
        # leaves out what libnet.a has).
        "exclude": attr.label_list(providers = [CcInfo]),
        "out": attr.output(mandatory = True),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)

def _whole_shared_library_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    feature_configuration = cc_common.configure_features(
        ctx = ctx,
        cc_toolchain = cc_toolchain,
        requested_features = ctx.features,
        unsupported_features = ctx.disabled_features,
    )
    linker_inputs = []
    for linker_input in _linker_inputs(ctx.attr.deps, ctx.attr.exclude):
        libraries = []
        for library in linker_input.libraries:
            if library.pic_static_library == None:
                fail("%s provides no PIC archive for a shared library" % linker_input.owner)
            libraries.append(cc_common.create_library_to_link(
                actions = ctx.actions,
                feature_configuration = feature_configuration,
                cc_toolchain = cc_toolchain,
                pic_static_library = library.pic_static_library,
                alwayslink = True,
            ))
        linker_inputs.append(cc_common.create_linker_input(
            owner = linker_input.owner,
            libraries = depset(libraries),
            user_link_flags = depset(linker_input.user_link_flags),
            additional_inputs = depset(linker_input.additional_inputs),
        ))
    outputs = cc_common.link(
        actions = ctx.actions,
        name = ctx.attr.library_name,
        feature_configuration = feature_configuration,
        cc_toolchain = cc_toolchain,
        linking_contexts = [cc_common.create_linking_context(linker_inputs = depset(linker_inputs))],
        output_type = "dynamic_library",
        # Each shared library it links against is named by its file
        # (-l:libnet.so), so that the result records its soname as NEEDED.
        # Those are installed beside it, and the loader looks for them in its
        # own RUNPATH, not in the program's: a program linked with
        # --as-needed (Debian's default) against libnet_http_client.so and
        # libnet_tls.so NEEDs only the first, and its RUNPATH does not reach
        # the second. $ORIGIN finds them under any prefix.
        user_link_flags = ["@" + ctx.file.linkopts_file.path] + [
            flag
            for so in ctx.files.link_against
            for flag in ["-L" + so.dirname, "-l:" + so.basename]
        ] + (["-Wl,-rpath,$ORIGIN"] if ctx.files.link_against else []) +
                          ctx.attr.system_libraries,
        additional_inputs = [ctx.file.linkopts_file] + ctx.files.link_against,
    )
    return [DefaultInfo(files = depset([outputs.library_to_link.dynamic_library]))]

cc_whole_shared_library = rule(
    implementation = _whole_shared_library_impl,
    attrs = {
        "deps": attr.label_list(providers = [CcInfo]),
        # As for cc_merged_static_library; their symbols come from
        # link_against instead.
        "exclude": attr.label_list(providers = [CcInfo]),
        # Shared libraries (files) the result needs at run time.
        "link_against": attr.label_list(allow_files = [".so"]),
        # lib<library_name>.so is the output.
        "library_name": attr.string(mandatory = True),
        # A response file of link options (the soname, which is derived from
        # //:VERSION and so cannot be a literal here).
        "linkopts_file": attr.label(allow_single_file = True, mandatory = True),
        # Linker flags (-lNAME) for system libraries the deps call themselves
        # whose targets `exclude` drops, since a library below links them
        # too: the result should name them as NEEDED, not lean on that one.
        "system_libraries": attr.string_list(),
        "_cc_toolchain": attr.label(default = "@bazel_tools//tools/cpp:current_cc_toolchain"),
    },
    fragments = ["cpp"],
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
)
