"""The external repositories libnet needs, for libnet's own WORKSPACE and for
any workspace that depends on libnet:

    load("@libnet//:deps.bzl", "libnet_dependencies")
    libnet_dependencies()

Bazel 4 fetches rules_cc, rules_java and remote_coverage_tools from the
network for every build, even one that uses only the native C++ rules.
libnet_dependencies() declares each of them, unless the workspace has
declared that name already, as the offline stand-in under libnet's
third_party/ (see third_party/README.md). A workspace that wants the real
repositories (online, or to use more of rules_cc than its defs.bzl) declares
them before calling it.

The workspace's own code that includes libnet's headers needs C++20 from its
own .bazelrc (`build --cxxopt=-std=c++20`); see copts.bzl for why no macro or
target of libnet can set that for it.
"""

# Each stand-in is found through a file of its own directory in libnet, as a
# label: Label() here resolves in the repository this file belongs to, so the
# lookup works whatever name the consumer gave libnet and however it was
# fetched (local_repository, http_archive, git_repository). local_repository
# cannot do this: it needs a filesystem path, which a WORKSPACE macro cannot
# compute.
_STAND_INS = {
    "remote_coverage_tools": Label("//third_party/remote_coverage_tools:WORKSPACE"),
    "rules_cc": Label("//third_party/rules_cc:WORKSPACE"),
    "rules_java": Label("//third_party/rules_java:WORKSPACE"),
}

def _stand_in_repository_impl(repository_ctx):
    # The repository's contents are links to the stand-in's files, so an edit
    # in libnet's third_party/ reaches the repository without a refetch.
    source = repository_ctx.path(repository_ctx.attr.workspace_file).dirname
    for entry in source.readdir():
        repository_ctx.symlink(entry, entry.basename)

_stand_in_repository = repository_rule(
    implementation = _stand_in_repository_impl,
    attrs = {
        "workspace_file": attr.label(
            mandatory = True,
            allow_single_file = True,
            doc = "The WORKSPACE file of a stand-in directory under libnet's third_party/.",
        ),
    },
    local = True,
    doc = "A repository made of links to one of libnet's offline stand-ins.",
)

def libnet_dependencies():
    """Declares the repositories libnet needs that are not declared yet."""
    for name, workspace_file in _STAND_INS.items():
        if not native.existing_rule(name):
            _stand_in_repository(name = name, workspace_file = workspace_file)
