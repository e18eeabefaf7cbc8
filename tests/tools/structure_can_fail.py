#!/usr/bin/python3
"""structure_can_fail.py - shows that tools_structure can fail.

    structure_can_fail.py --tool structure_check.py --cc CC --nm NM --workdir DIR

Builds a small made-up src/ in DIR (five C files, objects and depfiles
compiled by CC, a manifest like the one CMake writes) and runs the tool on
it with allowlists and builds that are right and wrong:

  - the right allowlist passes, with and without the depfiles (CC -MM):
    a.c <-> b.c is a circle of the group, c.c calls a.c and hands it a
    function a.c calls back through a pointer (no circle: a pointer is not
    an edge);
  - a circle not in a group (no group, a group of one file too few, a
    call c.c -> a.c turned into a circle by a direct call back) fails;
  - an 'edge ... : to remove' entry for that direct call passes, with a
    warning; the same entry without the call, or for an edge that closes
    no circle, fails as stale;
  - a stale group and a group larger than its circle fail;
  - a private header included from outside its files, directly or through
    another header, fails; a declared includer that no longer includes it
    fails; a private header without an entry fails;
  - an allowlist naming a file that is not a source fails.
Each case names what it expects in the tool's output.  Exit 0 when every
case behaves, 1 otherwise.
"""
import argparse
import os
import shutil
import subprocess
import sys

SOURCES = {
    "m/p_int.h": "int m_shared(void);\n",
    "m/q_int.h": "int m_other(void);\n",
    "m/pub.h": "#ifdef VIA_PUB\n#include \"m/p_int.h\"\n#endif\n"
               "int a_call(int (*f)(void));\nint c_cb(void);\n",
    "m/a.c": "#include \"m/p_int.h\"\n#include \"m/pub.h\"\n"
             "int b_fn(void);\n"
             "int a_fn(void) { return b_fn(); }\n"
             "int a_call(int (*f)(void)) { return f(); }\n"
             "#ifdef A_CALLS_C\nint a_direct(void) { return c_cb(); }\n#endif\n",
    "m/b.c": "#include \"m/p_int.h\"\nint a_fn(void);\n"
             "int b_fn(void) { return 1; }\n"
             "int m_shared(void) { return a_fn(); }\n",
    "m/c.c": "#include \"m/pub.h\"\n"
             "#ifdef C_INCLUDES_P\n#include \"m/p_int.h\"\n#endif\n"
             "int c_cb(void) { return 2; }\n"
             "int c_fn(void) { return a_call(c_cb); }\n",
    "m/d.c": "#include \"m/q_int.h\"\nint c_fn(void);\n"
             "int m_other(void) { return c_fn(); }\n",
    "m/e.c": "#include \"m/q_int.h\"\nint e_fn(void) { return 0; }\n",
}

GROUP = "group ab: a class with its helper file\n    m/a.c m/b.c\n"
PRIV_P = "private m/p_int.h: a and b only\n    m/a.c m/b.c\n"
PRIV_Q = "private m/q_int.h: d and e only\n    m/d.c m/e.c\n"
GOOD = GROUP + PRIV_P + PRIV_Q


def build(work, cc, flags, defines=()):
    """Writes the sources, compiles them with -MD (flags: {file: [-D...]})
    and writes the manifest (with defines, for CC -MM).  Returns its path."""
    shutil.rmtree(work, ignore_errors=True)
    src = os.path.join(work, "src")
    objdir = os.path.join(work, "CMakeFiles", "m.dir")  # where CMake puts them
    for rel, text in SOURCES.items():
        p = os.path.join(src, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
    sources, objects = [], []
    for rel in sorted(r for r in SOURCES if r.endswith(".c")):
        s = os.path.join(src, rel)
        o = os.path.join(objdir, rel + ".o")
        os.makedirs(os.path.dirname(o), exist_ok=True)
        cmd = [cc, "-c", "-O2", "-I", src, "-MD", "-MF", o + ".d", "-o", o, s]
        cmd += flags.get(rel, [])
        subprocess.run(cmd, check=True)
        sources.append(s)
        objects.append(o)
    manifest = os.path.join(work, "structure-Test.txt")
    with open(manifest, "w") as f:
        f.write(f"target\tm\nsrcdir\t{src}\nbindir\t{work}\n")
        f.write("sources\t" + "\t".join(sources) + "\n")
        f.write("objects\t" + "\t".join(objects) + "\n")
        f.write(f"includes\t{src}\ndefines\t" + "\t".join(defines) + "\n")
    return manifest


def run(args, manifest, allow_text, extra=()):
    allow = os.path.join(args.workdir, "allowed.txt")
    with open(allow, "w") as f:
        f.write(allow_text)
    cmd = [sys.executable, args.tool, "--manifest", manifest, "--build", args.workdir,
           "--src", os.path.join(args.workdir, "src"), "--allow", allow,
           "--nm", args.nm, "--cc", args.cc, *extra]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    for a in ("--tool", "--cc", "--nm", "--workdir"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    bad = 0

    def case(name, flags, allow, want_rc, want, extra=(), defines=()):
        nonlocal bad
        manifest = build(args.workdir, args.cc, flags, defines)
        rc, out = run(args, manifest, allow, extra)
        missing = [w for w in want if w not in out]
        if rc != want_rc or missing:
            bad += 1
            print(f"FAIL {name}: status {rc} (want {want_rc}), missing {missing}\n{out}")
        else:
            print(f"ok   {name}")

    circle_ac = {"m/a.c": ["-DA_CALLS_C"]}
    edge_ac = GOOD + "edge m/a.c -> m/c.c: to remove: a.c calls c.c back directly\n"
    case("the right allowlist passes", {}, GOOD, 0, ["structure: ok", "2 includer(s), as declared"])
    case("the same with CC -MM", {}, GOOD, 0, ["structure: ok", "-MM"], ["--deps", "compiler"])
    case("a circle in no group", {}, PRIV_P + PRIV_Q, 1,
         ["circle 1 of 2 files not allowed", "m/a.c -> m/b.c  (b_fn)", "m/b.c -> m/a.c  (a_fn)"])
    case("a group one file short", {}, GROUP.replace(" m/b.c", "") + PRIV_P + PRIV_Q, 1,
         ["circle 1 of 2 files not allowed (spans groups ab; outside every group: m/b.c)"])
    case("a direct call back makes a bigger circle", circle_ac, GOOD, 1,
         ["circle 1 of 3 files not allowed", "outside every group: m/c.c",
          "m/a.c -> m/c.c  (c_cb)"])
    case("an edge to remove hides it, with a warning", circle_ac, edge_ac, 0,
         ["structure: warning: edge m/a.c -> m/c.c (c_cb): to remove", "1 entries to remove"])
    case("the edge entry is stale once the call is gone", {}, edge_ac, 1,
         ["stale edge entry: m/a.c no longer uses a symbol of m/c.c"])
    case("an edge entry that closes no circle is stale", {},
         GOOD + "edge m/c.c -> m/a.c: to remove: nothing\n", 1,
         ["stale edge entry m/c.c -> m/a.c: no longer closes a circle"])
    case("a stale group", {}, GOOD + "group cd: none\n    m/c.c m/d.c\n", 1,
         ["stale group cd"])
    case("a group larger than its circle", {}, GROUP.replace("m/b.c", "m/b.c m/e.c") + PRIV_P
         + PRIV_Q, 1, ["group ab is larger than its circles: m/e.c"])
    case("a private header included from outside", {"m/c.c": ["-DC_INCLUDES_P"]}, GOOD, 1,
         ["m/p_int.h (private: a and b only) is included by m/c.c"])
    case("the same through another header", {"m/c.c": ["-DVIA_PUB"]}, GOOD, 1,
         ["m/p_int.h (private: a and b only) is included by m/c.c"])
    case("the same with CC -MM", {}, GOOD, 1,
         ["m/p_int.h (private: a and b only) is included by m/c.c"],
         ["--deps", "compiler"], ["VIA_PUB"])
    case("a declared includer that is gone", {}, GROUP + PRIV_P + PRIV_Q.replace("m/e.c", "m/e.c m/c.c"),
         1, ["stale: m/c.c no longer include(s) m/q_int.h"])
    case("a private header without an entry", {}, GROUP + PRIV_P, 1,
         ["private header m/q_int.h has no 'private' entry; today it is included by m/d.c m/e.c"])
    case("a file that is not a source", {}, GROUP.replace("m/b.c", "m/b.c m/z.c") + PRIV_P + PRIV_Q,
         1, ["m/z.c is not a source of the library's targets"])
    if bad:
        print(f"structure_can_fail: {bad} case(s) did not behave")
        return 1
    print("structure_can_fail: every case behaved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
