#!/usr/bin/python3
"""arch_names_check.py - every C name docs/architecture.md cites exists.

    arch_names_check.py [--doc PATH] [--root PATH] [--verbose]

Reads the document (default ROOT/docs/architecture.md) and collects the
names it cites that look like C: in every backticked span, the
identifiers starting with eng_ or cl_ (functions, types, tests) and the
file names ending in .c or .h; in a fenced code block that is not a
shell command (```sh, ```bash, ```shell, ```console, or a block whose
lines start with "$ "), the same names without backticks.  A name
followed by '*' or ending in '_' is a pattern (eng_cs_*, _X_*), not a
name; a file name preceded by '*' is one too (src/*/*_int.h).

Each name must occur in ROOT's src/, tests/, tools/ or bench/ (default
ROOT: two folders above this script): an identifier as a whole word in
some file's text; a file name as a file there or as text (an
#include), and a name with a folder (include/mpi_collab.h,
src/util/cl_device.c) as that path under ROOT or under one of them.  This script itself is
not searched, so that its allowlist below cannot hide a name.

ALLOWED lists the few names the document cites on purpose although no
file has them, each with its reason.  An allowed name that the tree
does have fails too: the entry is wrong, remove it.  An allowed name the
document no longer cites is printed as a warning.

Exit 0 when every name is found, 1 when some is not (each listed with
its line in the document), 2 when the document or the tree is missing.
"""
import argparse
import os
import re
import sys

# Names the document cites although the code has none of them: name -> reason.
ALLOWED = {
    "eng_X_ctx_t": "a placeholder: X stands for any component's name (eng_join_ctx_t, ...)",
    "eng_X_destroy": "a placeholder: X stands for any component's name (eng_join_destroy, ...)",
    "cl_engine_x.c": "a placeholder: the table's shorthand _x stands for cl_engine_x.c",
}

SEARCHED = ("src", "tests", "tools", "bench")
SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh"}
MAX_BYTES = 4 << 20  # larger files are data, not source

IDENT = re.compile(r"(?<![A-Za-z0-9_*])((?:eng|cl)_[A-Za-z0-9_]*)(?![A-Za-z0-9_])")
FILE = re.compile(r"(?<![A-Za-z0-9_*./-])([A-Za-z0-9_][A-Za-z0-9_./-]*\.[ch])(?![A-Za-z0-9_{])")
SPAN = re.compile(r"`([^`\n]+)`")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOTTED = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.[ch]\b")


def names_in(text):
    """The C-looking names of one piece of text, in order."""
    out = []
    for m in FILE.finditer(text):
        out.append(m.group(1))
    # Identifiers that are not the stem of a file name already taken.
    for m in IDENT.finditer(text):
        end = m.end(1)
        if m.group(1).endswith("_") or text.startswith("*", end):
            continue  # a pattern: eng_fan_out_, eng_cs_*
        if text.startswith(".", end) and FILE.match(text, m.start(1)):
            continue  # the stem of a file name, taken above
        out.append(m.group(1))
    return out


def is_shell_block(lang, lines):
    if lang.lower() in SHELL_LANGS:
        return True
    if lang:
        return False
    body = [l for l in lines if l.strip()]
    return bool(body) and all(l.lstrip().startswith("$ ") for l in body)


def doc_names(path):
    """[(name, line number)] cited by the document."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    cited = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^\s*(```+|~~~+)\s*([A-Za-z0-9_+-]*)", line)
        if fence:
            mark, lang = fence.group(1), fence.group(2)
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(mark):
                j += 1
            block = lines[i + 1:j]
            if not is_shell_block(lang, block):
                for k, text in enumerate(block):
                    for n in names_in(text):
                        cited.append((n, i + 2 + k))
            i = j + 1
            continue
        for m in SPAN.finditer(line):
            for n in names_in(m.group(1)):
                cited.append((n, i + 1))
        i += 1
    return cited


def tree_index(root, skip):
    """(words, dotted names, relative paths, base names) of the searched folders."""
    words, dotted, paths, bases = set(), set(), set(), set()
    for top in SEARCHED:
        base = os.path.join(root, top)
        for d, dirs, files in os.walk(base):
            dirs[:] = [x for x in dirs if not x.startswith(".")]
            for name in files:
                full = os.path.join(d, name)
                if os.path.realpath(full) == skip:
                    continue
                rel = os.path.relpath(full, root)
                paths.add(rel)
                bases.add(name)
                try:
                    if os.path.getsize(full) > MAX_BYTES:
                        continue
                    with open(full, "rb") as f:
                        raw = f.read()
                except OSError:
                    continue
                if b"\0" in raw[:4096]:
                    continue  # binary
                text = raw.decode("utf-8", "replace")
                words.update(WORD.findall(text))
                dotted.update(os.path.basename(x) for x in DOTTED.findall(text))
    return words, dotted, paths, bases


def found(name, idx, root):
    words, dotted, paths, bases = idx
    if name.endswith((".c", ".h")):
        if "/" in name:
            return os.path.isfile(os.path.join(root, name)) or any(
                p.endswith(os.sep + os.path.normpath(name)) for p in paths)
        return name in bases or name in dotted
    return name in words


def main():
    here = os.path.dirname(os.path.realpath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(here)),
                    help="the tree whose src/, tests/, tools/, bench/ are searched")
    ap.add_argument("--doc", help="the document (default ROOT/docs/architecture.md)")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args()
    root = os.path.realpath(args.root)
    doc = args.doc or os.path.join(root, "docs", "architecture.md")
    if not os.path.isfile(doc):
        print(f"arch_names_check: no document {doc}", file=sys.stderr)
        return 2
    if not any(os.path.isdir(os.path.join(root, t)) for t in SEARCHED):
        print(f"arch_names_check: {root} has none of {', '.join(SEARCHED)}", file=sys.stderr)
        return 2
    cited = doc_names(doc)
    idx = tree_index(root, os.path.realpath(__file__))
    first = {}
    for n, line in cited:
        first.setdefault(n, line)
    missing = [(n, l) for n, l in first.items() if n not in ALLOWED and not found(n, idx, root)]
    wrong = [n for n in ALLOWED if n in first and found(n, idx, root)]
    for n in ALLOWED:
        if n not in first:
            print(f"arch_names_check: warning: allowed name {n} is no longer cited "
                  f"by {os.path.basename(doc)}; remove its entry")
    if args.verbose:
        print(f"arch_names_check: {len(first)} names cited by {doc}")
    for n in wrong:
        print(f"arch_names_check: {n} is allowed as absent ({ALLOWED[n]}) but the tree has it; "
              "remove its entry")
    for n, l in sorted(missing, key=lambda x: x[1]):
        print(f"{doc}:{l}: `{n}` occurs nowhere in {', '.join(s + '/' for s in SEARCHED)}")
    if missing or wrong:
        print(f"arch_names_check: FAILED: {len(missing)} name(s) not found, "
              f"{len(wrong)} wrong allowlist entr(y/ies)")
        return 1
    print(f"arch_names_check: ok: {len(first)} names of {os.path.basename(doc)} found "
          f"({len(ALLOWED)} allowed as absent)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
