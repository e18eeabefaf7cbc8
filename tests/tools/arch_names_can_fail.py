#!/usr/bin/python3
"""arch_names_can_fail.py - shows that tools_arch_names can fail.

    arch_names_can_fail.py --tool arch_names_check.py --root ROOT --workdir DIR

Runs the tool on copies of ROOT/docs/architecture.md written into DIR,
against ROOT's tree, and on a small made-up tree:

  - the document as it is passes;
  - a copy with a made-up function, a made-up source, a made-up header
    or a path that is not there fails, naming it (the made-up names are
    put together when this runs, so that no file of the tree, this one
    included, holds them whole);
  - a made-up name in a fenced C block fails; in a shell block
    (```sh, or lines starting with "$ ") it is ignored;
  - patterns (`eng_cs_*`, `eng_fan_out_`, `src/*/*_int.h`) pass;
  - on a made-up tree (src/a.c defining eng_real_fn), a document citing
    it passes and fails once the function is renamed;
  - a missing document is a usage error (exit 2).
Each case names the exit status it expects and, for a failure, the
name the tool must print.  Exit 0 when every case behaves, 1 otherwise.
"""
import argparse
import os
import shutil
import subprocess
import sys


# Names no file has: put together here, never written whole.
FN = "eng" + "_zz_absent_call"
SRC = "cl" + "_engine_zz_absent.c"
HDR = "cl" + "_engine_zz_absent_int.h"
PATH = "src/engine/" + "cl" + "_engine_zz_gone.c"


def run(tool, doc, root):
    p = subprocess.run([sys.executable, tool, "--doc", doc, "--root", root],
                       capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    root = os.path.realpath(args.root)
    real = os.path.join(root, "docs", "architecture.md")
    if not os.path.isfile(real):
        print(f"arch_names_can_fail: no {real}")
        return 1
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    with open(real, encoding="utf-8") as f:
        base = f.read()

    def doc(name, extra):
        path = os.path.join(args.workdir, name + ".md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(base + "\n" + extra + "\n")
        return path

    # (case, document, root, expected status, names the output must have)
    cases = [
        ("the document as it is", real, root, 0, []),
        ("a made-up function", doc("fn", f"It calls `{FN}` first."), root, 1,
         [FN]),
        ("a made-up function with its arguments",
         doc("fnargs", f"Then `{FN}(eng_parts(e)->cs)`."), root, 1,
         [FN]),
        ("a made-up source", doc("src", f"In `{SRC}`."), root, 1,
         [SRC]),
        ("a made-up header", doc("hdr", f"Shared in `{HDR}`."), root, 1,
         [HDR]),
        ("a path that is not there", doc("path", f"See `{PATH}`."), root,
         1, [PATH]),
        ("a made-up name in a C block",
         doc("cblock", f"```c\nint x = {FN}(e);\n```"), root, 1,
         [FN]),
        ("a made-up name in a shell block",
         doc("shblock", f"```sh\nctest -R {FN} {SRC}\n```"), root, 0,
         []),
        ("a made-up name in a block of $ lines",
         doc("dollar", f"```\n$ grep {FN} src\n```"), root, 0, []),
        ("patterns", doc("glob", "`eng_cs_*`, `eng_fan_out_`, `src/*/*_int.h`, `cl_coll*.c`."),
         root, 0, []),
    ]

    # A made-up tree: the name is there, then it is not.
    tree = os.path.join(args.workdir, "tree")
    os.makedirs(os.path.join(tree, "src"))
    tiny = os.path.join(args.workdir, "tiny.md")
    with open(tiny, "w", encoding="utf-8") as f:
        f.write("# tiny\n\nThe loop calls `eng_real_fn` in `a.c`.\n")
    src = os.path.join(tree, "src", "a.c")

    def tree_with(fn):
        with open(src, "w", encoding="utf-8") as f:
            f.write(f"int {fn}(void) {{ return 0; }}\n")
        return tree

    failed = 0
    for name, d, r, want, names in cases:
        failed += check(args.tool, name, d, r, want, names)
    tree_with("eng_real_fn")
    failed += check(args.tool, "a made-up tree with the function", tiny, tree, 0, [])
    tree_with("eng_renamed_fn")
    failed += check(args.tool, "a made-up tree whose function was renamed", tiny, tree, 1,
                    ["eng_real_fn"])
    failed += check(args.tool, "no document", os.path.join(args.workdir, "none.md"), root, 2,
                    [])
    if failed:
        print(f"arch_names_can_fail: {failed} case(s) misbehaved")
        return 1
    print("arch_names_can_fail: every case behaved")
    return 0


def check(tool, name, doc, root, want, names):
    rc, out = run(tool, doc, root)
    missing = [n for n in names if f"`{n}`" not in out]
    ok = rc == want and not missing
    print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {rc} (want {want})"
          + (f", output lacks {missing}" if missing else ""))
    if not ok:
        print("     " + out.strip().replace("\n", "\n     "))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
