#!/usr/bin/python3
"""structure_check.py - measures the file structure of src/ on a built tree.

    structure_check.py --build BUILD_DIR [--allow FILE] [--verbose]
    structure_check.py --manifest M --src SRC_DIR [--allow FILE] [--nm NM]
                       [--deps auto|depfile|compiler] [--cc CC] [--verbose]

Two criteria of docs/architecture.md ("Measured structure"), measured on
the objects the build made, not on what the comments say:

1. Calls between files.  Each object of the library's areas (collab_util,
   collab_reduce, collab_coll, collab_elastic, collab_engine; the list and
   the objects come from the manifest that CMake writes at configure time,
   BUILD_DIR/tests/tools/structure-<config>.txt) is read with nm: the
   global symbols it defines and the ones it leaves undefined.  File A
   has an edge to file B when A uses a symbol that B defines (a call, or
   a global variable).  Static functions and calls inside one file do not
   matter at this level.  A call through a function pointer (a component's
   context, a hooks table, a handler registered in the loop's table) is
   NOT an edge: the object that calls through the pointer names no symbol
   of the callee, which is the point of a context.  Taking a function's
   address (to fill a context) IS an edge, from the file that fills the
   context to the file that defines the function.
   The strongly connected components of this graph (Tarjan) are the
   circles: every component of more than one file is printed with one
   closed chain of edges through all its files, each edge with a symbol
   that makes it.

2. Private headers.  Every header src/*/*_int.h or src/*/*_impl.h is
   private to the files listed for it in the allowlist.  The set of
   library sources that include it, directly or through another header, is
   read from the build's depfiles (OBJECT.d, written by the compiler with
   -MD; the Makefile generators keep them) or, where there are none (Ninja
   keeps them in its own log), from the compiler's own answer (CC -MM with
   the target's include directories and definitions).  It must equal the
   declared set.

The allowlist (tools/structure/allowed.txt) declares, each with a one-line
reason:

    group NAME: REASON            files that may call each other in circles
        FILE FILE ...
    edge FILE -> FILE: REASON     an edge ignored when looking for circles
    private HEADER: REASON        the only sources that may include HEADER
        FILE FILE ...

Paths are relative to src/; lines starting with whitespace continue the
list of files of the entry above; '#' starts a comment.  A reason that
starts with "to remove" marks a debt: the entry is accepted and printed as
a warning on every run.

The check fails (exit status 1) when
  - a circle (after the edges declared with 'edge' are taken out) is not
    inside one group;
  - a group, or a file of a group, no longer needs to be there: the file
    is in no circle inside its group;
  - an 'edge' no longer exists, or no longer closes a circle that a group
    does not allow;
  - the sources that include a private header differ from the declared
    ones, or a private header has no entry, or an entry names a header
    that does not exist;
  - the allowlist names a file that is not a source of the library.
Exit status 0 when everything holds, 2 on a usage or input error (no
manifest, an object that was not built), 77 when nm cannot read the
objects (gcc's link-time-optimisation objects, without gcc's plugin).
"""
import argparse
import collections
import glob
import os
import re
import shlex
import subprocess
import sys

SKIP = 77
PRIVATE_GLOBS = ("*/*_int.h", "*/*_impl.h")


class InputError(Exception):
    pass


class Skip(Exception):
    pass


# --- the manifest -------------------------------------------------------------

def read_manifest(path):
    """Returns the targets of the manifest: a list of dicts with the keys
    target, srcdir, bindir, sources, objects, includes, defines."""
    if not os.path.isfile(path):
        raise InputError(f"no manifest {path} (configure the build with CMake first)")
    targets = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, rest = line.partition("\t")
            values = [v for v in rest.split("\t") if v]
            if key == "target":
                targets.append({"target": values[0], "sources": [], "objects": [],
                                "includes": [], "defines": [], "srcdir": "", "bindir": ""})
            elif not targets:
                raise InputError(f"{path}: '{key}' before the first target")
            elif key in ("srcdir", "bindir"):
                targets[-1][key] = values[0] if values else ""
            elif key in ("sources", "objects", "includes", "defines"):
                targets[-1][key] = values
            else:
                raise InputError(f"{path}: unknown key '{key}'")
    if not targets:
        raise InputError(f"{path}: no target")
    return targets


def pair_sources(t, src_root):
    """Pairs each C source of target t with its object: CMake names the
    object after the source's path (CMakeFiles/<target>.dir/<path>.o, the path relative to
    the target's source directory, '..' written '__').  Returns a list of
    (source path relative to src_root, absolute source, object)."""
    pairs = []
    sources = []
    for s in t["sources"]:
        if not s.endswith(".c"):
            continue
        if not os.path.isabs(s):
            s = os.path.join(t["srcdir"], s)
        sources.append(os.path.normpath(s))
    by_name = {}
    for s in sources:
        name = os.path.relpath(s, t["srcdir"]).replace("../", "__/")
        by_name["/" + name] = s
    for obj in t["objects"]:
        base = os.path.splitext(obj)[0]  # CMakeFiles/<target>.dir/<path>.c
        match = [s for name, s in by_name.items() if base.endswith(".dir" + name)]
        if len(match) != 1:
            raise InputError(f"target {t['target']}: {len(match)} sources for object {obj}")
        pairs.append((os.path.relpath(match[0], src_root), match[0], obj))
    return pairs


# --- symbols and edges ----------------------------------------------------------

def read_symbols(nm, obj):
    """Returns (defined, undefined): the global symbols obj defines and the
    ones it uses without defining them."""
    if not os.path.isfile(obj):
        raise InputError(f"object {obj} does not exist (build the library first)")
    r = subprocess.run([nm, "-P", "-g", obj], capture_output=True, text=True)
    if r.returncode != 0:
        raise InputError(f"{nm} {obj}: {r.stderr.strip()}")
    defined, undefined = set(), set()
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if name == "__gnu_lto_slim":
            # gcc's -flto object read by an nm without gcc's plugin.
            raise Skip(f"{nm} cannot read the link-time-optimisation object {obj} "
                       f"(use gcc-nm: --nm)")
        if kind in ("U", "w", "v"):
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def build_graph(files, nm):
    """files: {rel: object}.  Returns (edges, definers): edges[a][b] is the
    sorted list of the symbols a uses that b defines."""
    defs, uses = {}, {}
    for rel, obj in files.items():
        defs[rel], uses[rel] = read_symbols(nm, obj)
    definers = {}
    for rel, d in defs.items():
        for s in d:
            definers.setdefault(s, []).append(rel)
    edges = {rel: {} for rel in files}
    for a, u in uses.items():
        for s in u:
            for b in definers.get(s, ()):
                if b != a:
                    edges[a].setdefault(b, []).append(s)
    for a in edges:
        for b in edges[a]:
            edges[a][b].sort()
    return edges


def tarjan(nodes, succ):
    """Strongly connected components of the graph (nodes, succ(node) ->
    iterable), iteratively.  Returns a list of sorted lists."""
    index, low, on_stack = {}, {}, set()
    stack, comps, counter = [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ(root))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ(w)))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def shortest_path(succ, src, dst, inside):
    """A shortest path src -> ... -> dst (at least one edge, so that src ==
    dst gives a circle) through the nodes of `inside`, or None."""
    prev = {}
    queue = collections.deque([src])
    while queue:
        v = queue.popleft()
        for w in sorted(succ(v)):
            if w in inside and w not in prev:
                prev[w] = v
                queue.append(w)
        if dst in prev:
            break
    if dst not in prev:
        return None
    path, v = [dst], prev[dst]
    while True:
        path.append(v)
        if v == src:
            break
        v = prev[v]
    path.reverse()
    return path


def closed_chain(comp, succ):
    """One closed walk through every file of the strongly connected
    component comp, made of shortest paths: comp[0] -> the nearest file
    not yet visited -> ... -> back to comp[0]."""
    inside = set(comp)
    start = comp[0]
    walk, seen = [start], {start}
    while len(seen) < len(comp):
        best = None
        for target in comp:
            if target in seen:
                continue
            p = shortest_path(succ, walk[-1], target, inside)
            if p is not None and (best is None or len(p) < len(best)):
                best = p
        walk.extend(best[1:])
        seen.update(best)
    if walk[-1] != start:
        walk.extend(shortest_path(succ, walk[-1], start, inside)[1:])
    return walk


def format_chain(walk, edges):
    hops = []
    for a, b in zip(walk, walk[1:]):
        syms = edges[a][b]
        more = f" +{len(syms) - 1}" if len(syms) > 1 else ""
        hops.append(f"      {a} -> {b}  ({syms[0]}{more})")
    return "\n".join(hops)


# --- the allowlist ----------------------------------------------------------------

def read_allow(path):
    """Returns (groups, edges, privates): groups and privates are lists of
    dicts (name, reason, files, line), edges a list of dicts (a, b,
    reason, line)."""
    groups, edges, privates = [], [], []
    last = None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            where = f"{path}:{n}"
            if line[0].isspace():
                if last is None or "files" not in last:
                    raise InputError(f"{where}: a continuation line without a group or private entry")
                last["files"].extend(line.split())
                continue
            m = re.match(r"^group\s+(\S+)\s*:\s*(.+)$", line)
            if m:
                last = {"name": m.group(1), "reason": m.group(2).strip(), "files": [], "line": where}
                groups.append(last)
                continue
            m = re.match(r"^edge\s+(\S+)\s*->\s*(\S+)\s*:\s*(.+)$", line)
            if m:
                last = None
                edges.append({"a": m.group(1), "b": m.group(2), "reason": m.group(3).strip(),
                              "line": where})
                continue
            m = re.match(r"^private\s+(\S+)\s*:\s*(.+)$", line)
            if m:
                last = {"name": m.group(1), "reason": m.group(2).strip(), "files": [], "line": where}
                privates.append(last)
                continue
            raise InputError(f"{where}: not an entry: {line.strip()}")
    return groups, edges, privates


def is_debt(reason):
    return reason.lower().startswith("to remove")


# --- header inclusion -------------------------------------------------------------

def parse_depfile(path, cwd):
    with open(path) as f:
        text = f.read()
    text = text.replace("\\\n", " ")
    out = set()
    for rule in text.split("\n"):
        if ":" not in rule:
            continue
        # The first ': ' ends the target (paths here have no ': ').
        _, _, deps = rule.partition(": ")
        for d in re.split(r"(?<!\\)\s+", deps.strip()):
            if not d:
                continue
            d = d.replace("\\ ", " ")
            out.add(os.path.normpath(os.path.join(cwd, d)))
    return out


def compiler_deps(cc, t, source):
    cmd = [cc, "-MM", "-MG"]
    cmd += ["-I" + i for i in t["includes"]]
    cmd += ["-D" + d for d in t["defines"]]
    cmd.append(source)
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=t["bindir"] or None)
    if r.returncode != 0:
        raise InputError(f"{' '.join(shlex.quote(c) for c in cmd)}: {r.stderr.strip()}")
    text = r.stdout.replace("\\\n", " ")
    _, _, deps = text.partition(": ")
    return {os.path.normpath(os.path.join(t["bindir"] or os.getcwd(), d))
            for d in deps.split() if d}


def includers(pairs, mode, cc, build):
    """Returns {rel source: set of headers it includes (absolute)}."""
    have_all = all(os.path.isfile(obj + ".d") for _, _, obj, _ in pairs)
    if mode == "depfile" and not have_all:
        missing = [obj + ".d" for _, _, obj, _ in pairs if not os.path.isfile(obj + ".d")]
        raise InputError(f"no depfile {missing[0]} (the build's generator keeps none?)")
    use_depfiles = mode == "depfile" or (mode == "auto" and have_all)
    out = {}
    for rel, src, obj, t in pairs:
        if use_depfiles:
            out[rel] = parse_depfile(obj + ".d", build)
        else:
            out[rel] = compiler_deps(cc, t, src)
    return out, ("the build's depfiles" if use_depfiles else f"{cc} -MM")


# --- the check --------------------------------------------------------------------

def check(args):
    src_root = os.path.realpath(args.src)
    targets = read_manifest(args.manifest)
    pairs = []
    for t in targets:
        for rel, s, obj in pair_sources(t, src_root):
            pairs.append((rel, s, obj, t))
    files = {}
    for rel, _, obj, _ in pairs:
        if rel in files:
            raise InputError(f"{rel} is compiled into two of the manifest's targets")
        files[rel] = obj
    groups, allowed_edges, privates = read_allow(args.allow)

    problems, warnings = [], []

    def known(rel, where):
        if rel not in files:
            problems.append(f"{where}: {rel} is not a source of the library's targets")
            return False
        return True

    # 1. Calls between files.
    edges = build_graph(files, args.nm)
    n_edges = sum(len(v) for v in edges.values())
    if args.show_edges:
        for a in sorted(edges):
            for b in sorted(edges[a]):
                if re.search(args.show_edges, a) or re.search(args.show_edges, b):
                    print(f"edge {a} -> {b}: {' '.join(edges[a][b])}")
    print(f"structure: {len(files)} files of src/ in {len(targets)} targets, "
          f"{n_edges} edges between files (read by {args.nm})")
    tolerated = set()
    for e in allowed_edges:
        ok = known(e["a"], e["line"]) & known(e["b"], e["line"])
        if not ok:
            continue
        if e["b"] not in edges[e["a"]]:
            problems.append(f"{e['line']}: stale edge entry: {e['a']} no longer uses a symbol of {e['b']}")
            continue
        tolerated.add((e["a"], e["b"]))
        if is_debt(e["reason"]):
            warnings.append(f"edge {e['a']} -> {e['b']} ({', '.join(edges[e['a']][e['b']])}): "
                            f"{e['reason']}")
    group_of = {}
    for g in groups:
        for rel in g["files"]:
            if not known(rel, g["line"]):
                continue
            if rel in group_of:
                problems.append(f"{g['line']}: {rel} is already in group {group_of[rel]['name']}")
            group_of[rel] = g
        if is_debt(g["reason"]):
            warnings.append(f"group {g['name']} ({' '.join(g['files'])}): {g['reason']}")

    def succ_without(skip):
        return lambda v: [w for w in edges[v] if (v, w) not in skip]

    def cycles(skip):
        return [c for c in tarjan(list(files), succ_without(skip)) if len(c) > 1]

    def covering_group(comp):
        g = group_of.get(comp[0])
        if g is not None and all(group_of.get(f) is g for f in comp):
            return g
        return None

    comps = cycles(tolerated)
    succ = succ_without(tolerated)
    for i, comp in enumerate(comps, 1):
        g = covering_group(comp)
        chain = format_chain(closed_chain(comp, succ), edges)
        if g is not None:
            print(f"  circle {i}: {len(comp)} files, allowed by group {g['name']} ({g['reason']})")
            if args.verbose:
                print(chain)
        else:
            spans = sorted({group_of[f]["name"] for f in comp if f in group_of})
            outside = [f for f in comp if f not in group_of]
            what = (f"spans groups {', '.join(spans)}" if spans else "in no group")
            if outside:
                what += f"; outside every group: {' '.join(outside)}"
            problems.append(f"circle {i} of {len(comp)} files not allowed ({what}):\n"
                            f"      files: {' '.join(comp)}\n{chain}")
            print(f"  circle {i}: {len(comp)} files, NOT ALLOWED")
    in_any = {f for comp in comps for f in comp}
    for g in groups:
        # A file in a circle that is not allowed is reported with that circle.
        stale = [f for f in g["files"] if f in files and f not in in_any]
        if len(stale) == len(g["files"]):
            problems.append(f"{g['line']}: stale group {g['name']}: its files call each other "
                            f"in no circle any more (remove the entry)")
        elif stale:
            problems.append(f"{g['line']}: group {g['name']} is larger than its circles: "
                            f"{' '.join(stale)} no longer in one (remove them)")
    # An ignored edge must still be what keeps a circle out of the groups.
    if not any(p.startswith("circle") for p in problems):
        for e in allowed_edges:
            key = (e["a"], e["b"])
            if key not in tolerated:
                continue
            again = cycles(tolerated - {key})
            if all(covering_group(c) is not None for c in again):
                problems.append(f"{e['line']}: stale edge entry {e['a']} -> {e['b']}: "
                                f"no longer closes a circle that a group does not allow")

    # 2. Private headers.
    headers = set()
    for pat in PRIVATE_GLOBS:
        headers.update(os.path.relpath(h, src_root) for h in glob.glob(os.path.join(src_root, pat)))
    deps, how = includers(pairs, args.deps, args.cc, args.build)
    declared = {p["name"]: p for p in privates}
    for name, p in sorted(declared.items()):
        if name not in headers:
            problems.append(f"{p['line']}: {name} is not a private header of src/ "
                            f"(none such, or not named *_int.h / *_impl.h)")
    print(f"structure: {len(headers)} private headers, includers from {how}")
    for h in sorted(headers):
        habs = os.path.join(src_root, h)
        actual = {rel for rel, d in deps.items() if habs in d}
        p = declared.get(h)
        if p is None:
            problems.append(f"private header {h} has no 'private' entry; today it is included by "
                            f"{' '.join(sorted(actual)) or 'nobody'}")
            continue
        for rel in p["files"]:
            known(rel, p["line"])
        want = set(p["files"])
        extra, missing = sorted(actual - want), sorted(want & set(files) - actual)
        if extra:
            problems.append(f"{h} (private: {p['reason']}) is included by "
                            f"{' '.join(extra)}, which the allowlist does not name")
        if missing:
            problems.append(f"{p['line']}: stale: {' '.join(missing)} no longer include(s) {h} "
                            f"(remove from the entry)")
        if is_debt(p["reason"]):
            warnings.append(f"private {h}: {p['reason']}")
        print(f"  {h}: {len(actual)} includer(s){'' if extra or missing else ', as declared'}")
        if args.verbose:
            print(f"      {' '.join(sorted(actual))}")

    for w in warnings:
        print(f"structure: warning: {w}")
    for p in problems:
        print(f"structure: FAIL: {p}")
    if problems:
        print(f"structure: {len(problems)} problem(s); the allowed structure is {args.allow}")
        return 1
    print(f"structure: ok ({len(comps)} circles, each inside a group; "
          f"{len(warnings)} entries to remove)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the build directory (finds its manifest)")
    ap.add_argument("--manifest", help="the list of targets, sources and objects CMake wrote")
    here = os.path.dirname(os.path.realpath(__file__))
    ap.add_argument("--src", default=os.path.join(here, "..", "..", "src"),
                    help="the sources' root (default: src/ of this checkout)")
    ap.add_argument("--allow", default=os.path.join(here, "allowed.txt"),
                    help="the allowlist (default: allowed.txt beside this tool)")
    ap.add_argument("--nm", default="nm", help="nm that reads the objects (default nm)")
    ap.add_argument("--cc", default="cc", help="compiler for -MM where there are no depfiles")
    ap.add_argument("--deps", choices=("auto", "depfile", "compiler"), default="auto",
                    help="where the includers come from (default: the depfiles if every "
                         "object has one, else CC -MM)")
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="print every circle's chain and every header's includers")
    ap.add_argument("--show-edges", metavar="REGEX",
                    help="also print every edge from or to a file matching REGEX, with its symbols")
    args = ap.parse_args()
    if args.manifest is None:
        if args.build is None:
            ap.error("--build or --manifest is needed")
        found = sorted(glob.glob(os.path.join(args.build, "tests", "tools", "structure-*.txt")))
        if len(found) != 1:
            ap.error(f"{len(found)} manifests in {args.build}/tests/tools; name one with --manifest")
        args.manifest = found[0]
    if args.build is None:
        args.build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(args.manifest))))
    try:
        return check(args)
    except Skip as e:
        print(f"structure: skipped: {e}")
        return SKIP
    except InputError as e:
        print(f"structure: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
