#!/usr/bin/env python3
"""Lists the functions longer than a budget in the project's C++ and Python.

Usage: tools/function_lengths.py [--max N] [--exclude PATH]... [DIR|FILE]...
       (from the repository root; default DIRs: base net examples bench
       pingpong tools)

Prints `path:line: name is N lines` for every function of more than N lines
(default 60) in the *.h, *.cc and *.py files under the directories given, and
exits 1 if there is any (0 if none, 2 on bad usage). --exclude drops every
file whose path starts with PATH (repeatable); third_party/ and tests/ are
out of scope unless named on the command line.

How a function's length is counted: every physical line from the line that
opens its definition to the line that ends it, both included, blank lines
and comments too.
  * Python: from the `def` line (decorators not counted) to the function's
    last line (ast's end_lineno). A nested function or a method counts on its
    own and towards the function that encloses it.
  * C++: from the line where the name of the function stands to the line of
    the brace that closes its body. A body is a `{` that follows a `)` plus
    optional qualifiers (const, noexcept, override, a trailing return type,
    ...) and, for constructors, a member initializer list. Comments, string,
    raw string and character literals are skipped. Lambdas, local classes and
    nested blocks count towards the enclosing function; a function defined in
    a class body (in a header too) counts on its own. Macro bodies (#define)
    are skipped.
"""
import argparse
import ast
import os
import re
import sys

DEFAULT_DIRS = ["base", "net", "examples", "bench", "pingpong", "tools"]
ALWAYS_EXCLUDED = ("third_party", "tests")
CPP_SUFFIXES = (".h", ".cc")

# Words that may stand between a parameter list's `)` and a function body.
QUALIFIERS = {
    "const", "volatile", "noexcept", "override", "final", "mutable", "constexpr",
    "try", "requires", "&", "&&",
}
# A `(`...`)` preceded by one of these opens a statement, not a function.
CONTROL = {
    "if", "for", "while", "switch", "catch", "return", "sizeof", "alignof",
    "decltype", "noexcept", "requires", "static_assert", "co_return", "co_await",
    "co_yield", "throw", "new", "delete", "case", "else", "do", "alignas",
    "__attribute__", "defined", "typeid",
}


# ---------------------------------------------------------------- Python

def python_functions(path, text):
    """(name, first line, length) of every def in a Python source."""
    tree = ast.parse(text, filename=path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.name, node.lineno, node.end_lineno - node.lineno + 1))
    return found


# ---------------------------------------------------------------- C++

# What strip_cpp() blanks: comments, literals and preprocessor directives
# (with their backslash continuations). A quote after a digit or letter is a
# digit separator (1'000) or part of a prefixed literal, not a char literal.
SKIPPED = re.compile(r"""
    //[^\n]*
  | /\*.*?(?:\*/|\Z)
  | (?<![A-Za-z_0-9])(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\(.*?(?:\)(?P=delim)"|\Z)
  | "(?:\\.|[^"\\\n])*"?
  | (?<![A-Za-z_0-9'])'(?:\\.|[^'\\\n])*'?
  | ^[ \t]*\#(?:\\\n|[^\n])*
""", re.M | re.S | re.X)


def strip_cpp(text):
    """The source with comments, literals and preprocessor lines blanked.

    Every character that is not a newline inside them becomes a space, so
    offsets and line numbers stay those of the file.
    """
    return SKIPPED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


TOKEN = re.compile(r"[A-Za-z_~][A-Za-z_0-9]*|::|->|&&|\S")


def cpp_functions(path, text):
    """(name, first line, length) of every function body in a C++ source."""
    code = strip_cpp(text)
    tokens = [(m.group(0), m.start()) for m in TOKEN.finditer(code)]
    line_of = _line_index(code)
    found = []
    depth_stack = []  # for each open `{`: True if it opens a function body
    in_function = 0
    for idx, (tok, pos) in enumerate(tokens):
        if tok == "{":
            start = None if in_function else _function_start(tokens, idx)
            if start is not None:
                name, name_pos = start
                depth_stack.append((name, name_pos))
                in_function += 1
            else:
                depth_stack.append(None)
        elif tok == "}" and depth_stack:
            opened = depth_stack.pop()
            if opened is not None:
                in_function -= 1
                name, name_pos = opened
                first, last = line_of(name_pos), line_of(pos)
                found.append((name, first, last - first + 1))
    return found


def _line_index(code):
    starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_of(pos):
        lo, hi = 0, len(starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    return line_of


def _function_start(tokens, brace):
    """(name, offset of the name) if the `{` at tokens[brace] opens a body."""
    j = brace - 1
    # Qualifiers, a trailing return type, or a constructor's initializer list
    # may stand between the parameters' `)` and the body.
    while j >= 0:
        tok = tokens[j][0]
        if tok == ")":
            open_paren = _matching_open(tokens, j, "(", ")")
            if open_paren is None:
                return None
            before = tokens[open_paren - 1][0] if open_paren > 0 else ""
            if before in ("noexcept", "requires", "decltype", "throw", "alignas"):
                j = open_paren - 2
                continue
            # A member initializer: `: a_(x), b_(y) {` -- walk to its colon.
            init = _initializer_list_start(tokens, open_paren)
            if init is not None:
                j = init - 1
                continue
            return _function_name(tokens, open_paren)
        if tok in QUALIFIERS or tok == "::" or tok == "->" or tok in ("*", "&"):
            j -= 1
            continue
        if tok == ">":
            j = _before_template_args(tokens, j)
            if j is None:
                return None
            continue
        if tok == "}":  # the last member initializer braced: `: a_{x} {`
            open_brace = _matching_open(tokens, j, "{", "}")
            init = None if open_brace is None else _initializer_list_start(tokens, open_brace)
            if init is None:
                return None
            j = init - 1
            continue
        if re.match(r"[A-Za-z_]", tok) and _trailing_return(tokens, j):
            j -= 1
            continue
        return None
    return None


def _trailing_return(tokens, j):
    """True if tokens[j] is part of a `-> Type` before a body."""
    k = j
    while k >= 0 and (re.match(r"[A-Za-z_]", tokens[k][0]) or tokens[k][0] in ("::", "*", "&")):
        k -= 1
    return k >= 0 and tokens[k][0] == "->"


def _initializer_list_start(tokens, open_paren):
    """The index of the `:` that starts a member initializer list ending here."""
    k = open_paren - 1
    while k >= 0:
        tok = tokens[k][0]
        if re.match(r"[A-Za-z_]", tok) or tok == "::":
            k -= 1
            continue
        if tok == ">":
            k = _before_template_args(tokens, k)
            if k is None:
                return None
            continue
        break
    if k < 0 or k == open_paren - 1:
        return None
    tok = tokens[k][0]
    if tok == ":" and k > 0 and tokens[k - 1][0] == ")":
        return k
    if tok == "," and k > 0 and tokens[k - 1][0] in (")", "}"):
        prev = tokens[k - 1][0]
        close = k - 1
        opener = _matching_open(tokens, close, "(" if prev == ")" else "{",
                                prev)
        if opener is None:
            return None
        return _initializer_list_start(tokens, opener)
    return None


def _function_name(tokens, open_paren):
    k = open_paren - 1
    if k < 0:
        return None
    tok, pos = tokens[k]
    if tok == ">":  # operator() templates, `Foo<T>::Foo(`
        k = _before_template_args(tokens, k)
        if k is None or k < 0:
            return None
        tok, pos = tokens[k]
    if tok in ("]", ")"):
        return None  # a lambda or a call through an expression
    if not re.match(r"[A-Za-z_~]", tok) or tok in CONTROL:
        # `operator()`, `operator==` ...
        for back in range(1, 4):
            if k - back + 1 >= 0 and tokens[k - back + 1][0] == "operator":
                pos = tokens[k - back + 1][1]
                return "operator" + "".join(t for t, _ in tokens[k - back + 2:open_paren]), pos
        return None
    name = tok
    while k >= 2 and tokens[k - 1][0] == "::" and re.match(r"[A-Za-z_~]", tokens[k - 2][0]):
        name = tokens[k - 2][0] + "::" + name
        pos = tokens[k - 2][1]
        k -= 2
    return name, pos


def _before_template_args(tokens, close_angle):
    """The index of the token before the `<` that the `>` at close_angle
    closes, or None."""
    open_angle = _matching_open(tokens, close_angle, "<", ">")
    return None if open_angle is None else open_angle - 1


def _matching_open(tokens, close, opener, closer):
    depth = 0
    k = close
    while k >= 0:
        tok = tokens[k][0]
        if tok == closer:
            depth += 1
        elif tok == opener:
            depth -= 1
            if depth == 0:
                return k
        elif opener == "<" and tok in (";", "{", "}"):
            return None
        k -= 1
    return None


# ---------------------------------------------------------------- driver

def source_files(roots, excluded):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(("bazel-", ".")))
            for name in sorted(filenames):
                path = os.path.normpath(os.path.join(dirpath, name))
                if not path.endswith(CPP_SUFFIXES + (".py",)):
                    continue
                if any(_under(path, e) for e in excluded):
                    continue
                yield path


def _under(path, prefix):
    prefix = os.path.normpath(prefix)
    parts = path.split(os.sep)
    return path == prefix or path.startswith(prefix + os.sep) or prefix in parts


def functions(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".py"):
        return python_functions(path, text)
    return cpp_functions(path, text)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Lists the functions longer than --max lines (see the module docstring).")
    parser.add_argument("paths", nargs="*", default=DEFAULT_DIRS, metavar="DIR",
                        help="directories or files to scan (default: %(default)s)")
    parser.add_argument("--max", type=int, default=60, metavar="N",
                        help="longest function allowed, in lines (default 60)")
    parser.add_argument("--exclude", action="append", default=[], metavar="PATH",
                        help="skip files under PATH (repeatable)")
    args = parser.parse_args(argv)
    if args.max < 1:
        parser.error("--max must be at least 1")

    excluded = list(args.exclude)
    for always in ALWAYS_EXCLUDED:
        if not any(_under(p, always) for p in args.paths):
            excluded.append(always)

    too_long = 0
    for path in source_files(args.paths, excluded):
        try:
            found = functions(path)
        except (SyntaxError, UnicodeDecodeError) as e:
            print(f"{path}: cannot read: {e}", file=sys.stderr)
            return 2
        for name, line, length in sorted(found, key=lambda f: f[1]):
            if length > args.max:
                print(f"{path}:{line}: {name} is {length} lines")
                too_long += 1
    return 1 if too_long else 0


if __name__ == "__main__":
    sys.exit(main())
