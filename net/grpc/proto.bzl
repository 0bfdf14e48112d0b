"""libnet_proto_library: C++ messages and libnet gRPC services from .proto files.

    load("//net/grpc:proto.bzl", "libnet_proto_library")

    libnet_proto_library(
        name = "helloworld_proto",
        srcs = ["helloworld.proto"],
        deps = ["//examples/grpc/protos:empty_proto"],  # other libnet_proto_library targets
    )

runs the system protoc (/usr/bin/protoc, Debian's protobuf-compiler: offline,
nothing downloaded) in a genrule: --cpp_out gives NAME.pb.h/.pb.cc (the
messages) and, with services = True, libnet's plugin
(//net/grpc/plugin:protoc-gen-libnet) gives NAME.libnet.h/.libnet.cc (one
class per service: docs/grpc.md, "Generating code"). The outputs are wrapped in
a cc_library `name` that depends on //third_party:protobuf, on //net/grpc:grpc,
//net/grpc:coro (the coroutine handlers of CoroService) and //net/grpc:client
(the stubs) when services = True, and on `deps`.

Import paths are workspace-relative, with no prefix: a .proto imports another
by its path in the repository (`import "examples/grpc/protos/empty.proto";`),
and a generated header is included the same way
("examples/grpc/protos/helloworld.pb.h"). The files of every target in `deps`
(and theirs, transitively) are inputs of the genrule, so imports across
packages work; the well-known types (`import "google/protobuf/empty.proto";`)
come from /usr/include, as Debian's libprotobuf-dev installs them, and are
linked from the system libprotobuf.

Each target also defines NAME_proto_srcs, a filegroup of its .proto files
and those of its deps, which is what a dependent target's genrule reads.
"""

load("//:copts.bzl", "LIBNET_COPTS")

_PROTOC = "/usr/bin/protoc"

# Labels resolved against libnet's own repository, so that the macro works
# from a workspace that loads it as an external repository too.
_PLUGIN = Label("//net/grpc/plugin:protoc-gen-libnet")
_PROTOBUF = Label("//third_party:protobuf")
_GRPC = Label("//net/grpc:grpc")
_GRPC_CORO = Label("//net/grpc:coro")
_GRPC_CLIENT = Label("//net/grpc:client")

def _proto_srcs_label(dep):
    """The NAME_proto_srcs filegroup of the libnet_proto_library `dep`."""
    if ":" in dep:
        return dep + "_proto_srcs"
    return dep + ":" + dep.split("/")[-1] + "_proto_srcs"

def _repository_root(label):
    """Where the files of `label`'s repository are in the execution root."""
    if label.startswith("@") and not label.startswith("@//"):
        return "external/" + label[1:].split("//")[0]
    return None

def libnet_proto_library(
        name,
        srcs,
        deps = [],
        services = True,
        visibility = None,
        testonly = False):
    """C++ messages (and libnet services) from `srcs`; see the file comment.

    Args:
      name: the cc_library to include and link.
      srcs: .proto files of this package.
      deps: libnet_proto_library targets whose .proto files `srcs` import.
      services: also run libnet's plugin (NAME.libnet.h/.cc) and depend on
        //net/grpc:grpc and //net/grpc:coro.
      visibility: of the cc_library and the filegroup.
      testonly: of every target made here.
    """
    for src in srcs:
        if not src.endswith(".proto"):
            fail("libnet_proto_library %s: %s is not a .proto file" % (name, src))
    stems = [src[:-len(".proto")] for src in srcs]
    hdrs = [stem + ".pb.h" for stem in stems]
    cc_srcs = [stem + ".pb.cc" for stem in stems]
    if services:
        hdrs += [stem + ".libnet.h" for stem in stems]
        cc_srcs += [stem + ".libnet.cc" for stem in stems]

    native.filegroup(
        name = name + "_proto_srcs",
        srcs = srcs + [_proto_srcs_label(dep) for dep in deps],
        visibility = visibility,
        testonly = testonly,
    )

    # This package's repository is the import root of its files; the
    # repositories of deps in other repositories are searched after it.
    own_root = _repository_root(native.repository_name() + "//")
    root = own_root or "."
    import_roots = [root]
    for dep in deps:
        dep_root = _repository_root(dep)
        if dep_root and dep_root not in import_roots:
            import_roots.append(dep_root)
    out_dir = "$(GENDIR)" + ("/" + own_root if own_root else "")
    flags = ["-I" + r for r in import_roots] + [
        "-I/usr/include",
        "--cpp_out=" + out_dir,
    ]
    tools = []
    if services:
        flags += [
            "--plugin=protoc-gen-libnet=$(location %s)" % _PLUGIN,
            "--libnet_out=" + out_dir,
        ]
        tools = [_PLUGIN]
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [":" + name + "_proto_srcs"],
        outs = hdrs + cc_srcs,
        cmd = " ".join([_PROTOC] + flags + ["$(location %s)" % src for src in srcs]),
        tools = tools,
        message = "protoc " + " ".join(srcs),
        visibility = ["//visibility:private"],
        testonly = testonly,
    )

    native.cc_library(
        name = name,
        srcs = cc_srcs,
        hdrs = hdrs,
        copts = LIBNET_COPTS,
        # A service's descriptor is found by name in the generated pool,
        # which a .pb.cc joins when its object is linked: keep the objects
        # even where nothing else refers to them (a file of services only).
        alwayslink = True,
        deps = [_PROTOBUF] + ([_GRPC, _GRPC_CORO, _GRPC_CLIENT] if services else []) + deps,
        visibility = visibility,
        testonly = testonly,
    )
