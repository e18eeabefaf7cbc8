#!/usr/bin/python3
"""gen_bindings.py - generates the MPI bindings of one face from the table.

    gen_bindings.py --abi mpich --table mpi_functions.txt --out DIR
                    [--extra-exports FILE] [--exports FILE]
    gen_bindings.py --abi mpich --table mpi_functions.txt --proto FILE [--check]

Writes into DIR:
  bindings.c    one strong PMPI_X per row (default visibility) that runs the
                row's argument checks and calls cli_impl_X (or reports
                MPI_ERR_UNSUPPORTED_OPERATION), and MPI_X as a weak alias
                at the same address
  cli_impl.h    prototypes of every cli_impl_* the rows call; the
                hand-written glue includes it, so a signature that differs
                from the table fails to compile
  exports.map   anonymous linker version script: exactly the exported
                names (plus collab_*), everything else local
  exports.txt   the exported names, one per line (for tests/abi)
  protocheck.c  assigns each function to a pointer of the table's type; it
                compiles only against an mpi.h whose prototypes agree
With --proto, writes the prototype headers for that ABI instead: FILE
(include/mpicollab/mpi_proto.h), which includes one header per chapter of
the MPI standard beside it (mpi_proto_p2p.h, mpi_proto_coll.h, ...;
PROTO_CHAPTERS).  With --proto FILE --check, writes nothing and exits 1
when any of those headers is missing, differs from what the table
generates, or is a chapter header no longer generated.  Format of the
table: docs/abi.md section 2.
"""
import argparse
import os
import re
import sys
import textwrap

CHECKS = {
    # name: (C function, number of arguments)
    "comm": ("cli_check_comm", 1),
    "count": ("cli_check_count", 1),
    "type": ("cli_check_type", 1),
    "dtype": ("cli_check_dtype", 1),
    "op": ("cli_check_op", 1),
    "root": ("cli_check_root", 1),
    "dest": ("cli_check_dest", 1),
    "src": ("cli_check_src", 1),
    "tag": ("cli_check_tag", 1),
    "rtag": ("cli_check_rtag", 1),
    "buf": ("cli_check_buf", 2),
    "ptr": ("cli_check_ptr", 1),
}


class Row:
    def __init__(self, lineno, fields):
        if len(fields) != 5:
            raise ValueError(f"line {lineno}: expected 5 fields separated by '|'")
        self.name, self.ret, self.params_text, how, checks = fields
        if not re.match(r"^P?MPIX?_\w+$", self.name):
            raise ValueError(f"line {lineno}: bad function name {self.name!r}")
        self.lineno = lineno
        self.params = split_params(self.params_text)
        self.flags = set()
        self.only = None
        self.impl = None
        self.reason = None
        self.decl_mpix = False
        for w in re.findall(r"\w+=?\w*\([^)]*\)|\S+", how):
            if w == "impl":
                self.impl = self.name.split("_", 1)[1]
            elif w.startswith("impl="):
                self.impl = w[5:]
            elif w.startswith("unsupported(") and w.endswith(")"):
                self.reason = w[len("unsupported("):-1]
            elif w in ("pre", "noret"):
                self.flags.add(w)
            elif w.startswith("only="):
                self.only = w[5:]
            elif w == "decl=mpix":
                self.decl_mpix = True
            else:
                raise ValueError(f"line {lineno}: unknown word {w!r} in 'how'")
        if (self.impl is None) == (self.reason is None):
            raise ValueError(f"line {lineno}: need exactly one of impl / unsupported(...)")
        if self.ret != "int" and self.impl is None:
            raise ValueError(f"line {lineno}: unsupported rows must return int")
        if self.ret != "int" and "pre" not in self.flags:
            raise ValueError(f"line {lineno}: non-int rows must be 'pre'")
        self.checks = []
        names = {p[1] for p in self.params}
        for m in re.finditer(r"(\w+)\(([^)]*)\)", checks):
            kind, args = m.group(1), [a.strip() for a in m.group(2).split(",")]
            if kind not in CHECKS or len(args) != CHECKS[kind][1]:
                raise ValueError(f"line {lineno}: bad check {m.group(0)!r}")
            for a in args:
                if a not in names:
                    raise ValueError(f"line {lineno}: check {m.group(0)!r} names no parameter")
            self.checks.append((kind, args))
        if re.sub(r"\w+\([^)]*\)", "", checks).strip():
            raise ValueError(f"line {lineno}: cannot parse checks {checks!r}")
        # comm checks first: they choose the error handler of later checks.
        self.checks.sort(key=lambda c: 0 if c[0] == "comm" else 1)


def split_params(text):
    """Returns [(declaration, name)], name None for '...'; [] for 'void'."""
    if text.strip() == "void":
        return []
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "([" and 1 or 0
        depth -= ch in ")]" and 1 or 0
        cur += ch
    out.append(cur.strip())
    res = []
    for p in out:
        if p == "...":
            res.append((p, None))
            continue
        m = re.match(r"^(.*?)(\w+)\s*((\[[^\]]*\])*)$", p)
        if not m or not m.group(1).strip():
            raise ValueError(f"cannot find the parameter name in {p!r}")
        res.append((p, m.group(2)))
    return res


def read_table(path, abi):
    rows = []
    seen = set()
    for i, line in enumerate(open(path), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        row = Row(i, [f.strip() for f in line.rstrip("\n").split("|")])
        if row.only is not None and row.only != abi:
            continue
        if row.name in seen:
            raise ValueError(f"line {i}: {row.name} listed twice")
        seen.add(row.name)
        rows.append(row)
    return rows


def pmpi(name):
    return "P" + name


def impl_prototypes(rows):
    """cli_impl_Y prototypes, from the row whose own name is MPI_Y/MPIX_Y."""
    protos = {}
    by_suffix = {}
    for r in rows:
        if r.impl is None:
            continue
        suffix = r.name.split("_", 1)[1]
        if suffix in by_suffix:
            raise ValueError(f"line {r.lineno}: {r.name} and {by_suffix[suffix].name} "
                             f"would share cli_impl_{suffix}")
        by_suffix[suffix] = r
    for r in rows:
        if r.impl is None or r.impl in protos:
            continue
        owner = by_suffix.get(r.impl)
        if owner is None or owner.impl != r.impl:
            raise ValueError(f"line {r.lineno}: impl={r.impl} has no row of its own")
        params = ["cli_call_t *call"] + [p for p, n in owner.params if n is not None]
        protos[r.impl] = f"{owner.ret} cli_impl_{r.impl}({', '.join(params)});"
    return protos


def gen_function(r, abi):
    sig = f"{r.ret} {pmpi(r.name)}({r.params_text})"
    args = [n for _, n in r.params if n is not None]
    body = [f"{sig}", "{", "    cli_call_t call;"]
    if r.ret != "int":
        body.append(f'    cli_call_init(&call, "{r.name}");')
        body.append(f"    return cli_impl_{r.impl}({', '.join(['&call'] + args)});")
        body.append("}")
        return "\n".join(body)
    flags = "CLI_PRE" if "pre" in r.flags else "0"
    if r.reason is not None and r.name.startswith("MPI_T_"):
        for a in args:
            body.append(f"    (void)({a});")
        body.append(f'    return cli_unsupported_tool(&call, "{r.name}");')
        body.append("}")
        return "\n".join(body)
    body.append("    int rc;")
    body.append(f'    if ((rc = cli_enter(&call, "{r.name}", {flags})) != MPI_SUCCESS)')
    body.append("        return rc;")
    for kind, cargs in r.checks:
        fn = CHECKS[kind][0]
        cexpr = ", ".join(f"(const void *)({a})" if kind == "ptr" else a for a in cargs)
        body.append(f'    if ((rc = {fn}(&call, {cexpr}, "{cargs[0]}")) != MPI_SUCCESS)')
        body.append("        return rc;")
    if r.reason is not None:
        comm = next((n for p, n in r.params
                     if n is not None and re.match(r"^(const\s+)?MPI_Comm\s+\w+$", p)), None)
        for a in args:
            body.append(f"    (void)({a});")
        is_file = r.name.startswith("MPI_File_") or any(
            re.match(r"^MPI_File\s*\*?\s*\w+$", p) for p, _ in r.params)
        if is_file:
            # MPI-IO errors go to the file error handler (MPI_ERRORS_RETURN).
            body.append(f'    return cli_unsupported_file(&call, "{r.reason}");')
        else:
            cexpr = comm if comm else "MPI_COMM_NULL"
            body.append(f'    return cli_unsupported(&call, {cexpr}, "{r.reason}");')
    else:
        body.append(f"    return cli_impl_{r.impl}({', '.join(['&call'] + args)});")
    body.append("}")
    return "\n".join(body)


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


HEAD = "/* Generated by interpose/gen/gen_bindings.py from {table} for the {abi} face.\n   Do not edit: edit the table or the generator. */\n"


def gen_outputs(rows, args, all_rows):
    head = HEAD.format(table=os.path.basename(args.table), abi=args.abi)
    # Prototypes come from every row of the ABI, so that a kept row may
    # call the impl of a row --exports dropped (impl=Allgather_c).
    protos = impl_prototypes(all_rows)
    impl_h = [head, "#ifndef CLI_IMPL_H_INCLUDED", "#define CLI_IMPL_H_INCLUDED", "",
              "/* The hand-written implementations behind the generated bindings.  Each",
              "   receives the call context (name, resolved communicator, error",
              "   handler) after the table's argument checks passed. */", ""]
    impl_h += [protos[k] for k in sorted(protos)]
    impl_h += ["", "#endif", ""]
    write(os.path.join(args.out, "cli_impl.h"), "\n".join(impl_h))

    b = [head, "#include <mpi.h>", '#include "cli.h"', '#include "cli_impl.h"', "",
         "#define CLI_EXPORT __attribute__((visibility(\"default\")))", ""]
    for r in rows:
        b.append(f"CLI_EXPORT {gen_function(r, args.abi)}")
        b.append(f'extern __typeof__({pmpi(r.name)}) {r.name}\n'
                 f'    __attribute__((weak, alias("{pmpi(r.name)}"), visibility("default")));')
        b.append("")
    write(os.path.join(args.out, "bindings.c"), "\n".join(b))

    names = []
    for r in rows:
        names += [r.name, pmpi(r.name)]
    extra = []
    if args.extra_exports:
        extra = [l.strip() for l in open(args.extra_exports)
                 if l.strip() and not l.lstrip().startswith("#")]
    m = ["/* " + head.strip()[3:].replace("*/", "").strip() + " */", "{", "  global:"]
    m += [f"    {n};" for n in sorted(names + extra)]
    m += ["    collab_*;", "  local:", "    *;", "};", ""]
    write(os.path.join(args.out, "exports.map"), "\n".join(m))
    write(os.path.join(args.out, "exports.txt"), "\n".join(sorted(names + extra)) + "\n")

    pc = [head, "#include <mpi.h>", "",
          "/* Compiles only if every prototype of mpi.h agrees with the table. */", ""]
    for r in rows:
        guard = r.name.startswith("MPIX_Collab_")
        if guard:
            pc.append("#ifdef MPIX_COLLAB_H_INCLUDED")
        pc.append(f"__attribute__((unused)) static {r.ret} (*const pc_{r.name})"
                  f"({r.params_text}) = {r.name};")
        pc.append(f"__attribute__((unused)) static {r.ret} (*const pc_{pmpi(r.name)})"
                  f"({r.params_text}) = {pmpi(r.name)};")
        if guard:
            pc.append("#endif")
    pc.append("")
    write(os.path.join(args.out, "protocheck.c"), "\n".join(pc))


def wrap(decl, width=100):
    if len(decl) <= width:
        return decl
    head, params = decl.split("(", 1)
    indent = " " * (len(head) + 1)
    lines, cur = [], head + "("
    for part in re.split(r"(?<=,) ", params):
        if len(cur) + len(part) + 1 > width and cur.strip() != head + "(":
            lines.append(cur.rstrip())
            cur = indent
        cur += part + " "
    lines.append(cur.rstrip())
    return "\n".join(lines)


# The chapters of the MPI standard the prototype header is split into, in
# the order mpi_proto.h includes them: (file suffix, what it holds, a
# pattern on the name without its P?MPIX?_ prefix, case ignored: I?
# stands for the nonblocking form, e.g. Iallreduce).  A function goes to
# the first chapter whose pattern matches; the last, with no pattern,
# takes the rest.  Each file stays under PROTO_MAX_LINES lines.
PROTO_CHAPTERS = [
    ("p2p", "point-to-point and partitioned communication, requests",
     r"^(I?[BSR]?send|I?m?recv|I?m?probe|I?sendrecv|I?sendrecv_replace|[BSR]?send_init"
     r"|Recv_init|Psend_init|Precv_init|Pready"
     r"|Pready_range|Pready_list|Parrived|Get_count|Start|Startall|Cancel)(_c)?$"
     r"|^(Wait|Test|Request_|Buffer_|Comm_attach_buffer|Comm_detach_buffer|Comm_flush_buffer"
     r"|Session_attach_buffer|Session_detach_buffer|Session_flush_buffer)"),
    ("coll", "collective operations and reduction operators",
     r"^I?(Barrier|Bcast|Gatherv?|Scatterv?|Allgatherv?|Alltoall[vw]?|Allreduce|Reduce"
     r"|Reduce_scatter|Reduce_scatter_block|Scan|Exscan)(_init)?(_c)?$"
     r"|^Reduce_local(_c)?$|^Op_"),
    ("dtype", "datatypes and packing",
     r"^(Type_|Pack|Unpack|Get_address|Get_elements|Aint_|Address$)"),
    ("comm", "groups, communicators, caching, dynamic processes",
     r"^(Comm_|Group_|Intercomm_|Attr_|Keyval_|Open_port|Close_port|Lookup_name|Publish_name"
     r"|Unpublish_name)"),
    ("topo", "process topologies and neighborhood collectives",
     r"^(I?neighbor_|Cart|Graph|Dist_graph|Topo_test|Dims_create)"),
    ("env", "the environment, info objects, sessions and errors",
     r"^(Init|Init_thread|Initialized|Finalize|Finalized|Abort|Wtime|Wtick|Get_processor_name"
     r"|Get_version|Get_library_version|Get_hw_resource_info|Query_thread|Is_thread_main"
     r"|Alloc_mem|Free_mem|Pcontrol|Query_\w+_support|GPU_query_support)$"
     r"|^(Errhandler_|Error_|Add_error_|Delete_error_|Remove_error_|Info_|Session_)"),
    ("rma", "one-sided communication",
     r"^(Put|Get|Rput|Rget|Accumulate|Raccumulate|Get_accumulate|Rget_accumulate"
     r"|Fetch_and_op|Compare_and_swap)(_c)?$|^Win_"),
    ("io", "I/O", r"^(File_|Register_datarep)"),
    ("rest", "the rest (the tools interface, generalized requests, status objects)", None),
]
PROTO_MAX_LINES = 900


def proto_chapter(name):
    """The suffix of the chapter header that declares function `name`."""
    base = re.sub(r"^P?MPIX?_", "", name)
    for suffix, _, pattern in PROTO_CHAPTERS:
        if pattern is None or re.search(pattern, base, re.IGNORECASE):
            return suffix
    raise AssertionError("the last chapter takes every name")


def proto_files(rows, path):
    """{file name: text} of the prototype headers for --proto path: the
    main one (path's name), which includes one per chapter
    (<stem>_<suffix>.h beside it, in PROTO_CHAPTERS' order)."""
    name = os.path.basename(path)
    stem = name[:-2] if name.endswith(".h") else name
    decls = {suffix: [] for suffix, _, _ in PROTO_CHAPTERS}
    for r in rows:
        if r.decl_mpix:
            continue
        for n in (r.name, pmpi(r.name)):
            decls[proto_chapter(r.name)].append(wrap(f"{r.ret} {n}({r.params_text}) MPICOLLAB_API;"))
    guard = re.sub(r"\W", "_", name).upper()
    files = {}
    main = [f"/*  {name} - prototypes of every function the MPICH-ABI face exports.",
            "",
            "    Generated by interpose/gen/gen_bindings.py --proto from",
            "    interpose/gen/mpi_functions.txt; do not edit.  Included by mpi.h; the",
            "    MPIX_Collab_* and ULFM functions are declared in mpix_collab.h.  The",
            "    prototypes are in one header per chapter of the MPI standard, beside",
            "    this one, each included here.",
            "*/",
            f"#ifndef MPICOLLAB_{guard}_INCLUDED",
            f"#define MPICOLLAB_{guard}_INCLUDED",
            ""]
    for suffix, what, _ in PROTO_CHAPTERS:
        if not decls[suffix]:
            continue
        part = f"{stem}_{suffix}.h"
        main += [f"/* {what[0].upper()}{what[1:]}. */", f'#include "{part}"']
        pguard = re.sub(r"\W", "_", part).upper()
        intro = textwrap.wrap(f"{part} - prototypes of the MPICH-ABI face's functions of one "
                              f"chapter of the MPI standard: {what}.", 72)
        text = ["/*  " + intro[0]] + ["    " + l for l in intro[1:]] + [
                "",
                "    Generated by interpose/gen/gen_bindings.py --proto from",
                f"    interpose/gen/mpi_functions.txt; do not edit.  Included by {name},",
                "    after mpi.h's types.",
                "*/",
                f"#ifndef MPICOLLAB_{pguard}_INCLUDED",
                f"#define MPICOLLAB_{pguard}_INCLUDED",
                ""] + decls[suffix] + ["", "#endif", ""]
        files[part] = "\n".join(text)
    main += ["", "#endif", ""]
    files[name] = "\n".join(main)
    for f, text in files.items():
        n = text.count("\n")
        if n >= PROTO_MAX_LINES:
            raise ValueError(f"{f} would have {n} lines (at most {PROTO_MAX_LINES - 1}): "
                             "split its chapter in PROTO_CHAPTERS")
    return files


def gen_proto(rows, args):
    d = os.path.dirname(args.proto) or "."
    for f, text in proto_files(rows, args.proto).items():
        write(os.path.join(d, f), text)


def check_proto(rows, args):
    """--check: compares the prototype headers beside --proto with what the
    table generates; names every file that differs, is missing, or is a
    chapter header no longer generated.  Returns the number of such files."""
    d = os.path.dirname(args.proto) or "."
    want = proto_files(rows, args.proto)
    name = os.path.basename(args.proto)
    stem = name[:-2] if name.endswith(".h") else name
    bad = 0
    for f in sorted(want):
        path = os.path.join(d, f)
        try:
            have = open(path).read()
        except OSError:
            print(f"{path}: missing (generate it: gen_bindings.py --proto {args.proto})")
            bad += 1
            continue
        if have != want[f]:
            print(f"{path}: differs from what {args.table} generates (stale or edited by hand)")
            bad += 1
    for f in sorted(os.listdir(d)):
        if f.startswith(stem + "_") and f.endswith(".h") and f not in want:
            print(f"{os.path.join(d, f)}: a chapter header the table no longer generates")
            bad += 1
    if bad == 0:
        print(f"{len(want)} prototype headers match {args.table}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--abi", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--out")
    ap.add_argument("--proto")
    ap.add_argument("--check", action="store_true",
                    help="with --proto: compare the headers there, write nothing")
    ap.add_argument("--extra-exports")
    ap.add_argument("--exports", help="restrict to the names listed in this file")
    args = ap.parse_args()
    try:
        rows = read_table(args.table, args.abi)
    except (OSError, ValueError) as e:
        sys.exit(f"gen_bindings.py: {args.table}: {e}")
    all_rows = rows
    if args.exports:
        keep = {l.strip() for l in open(args.exports)
                if l.strip() and not l.lstrip().startswith("#")}
        rows = [r for r in rows if r.name in keep]
    try:
        if args.proto and args.check:
            sys.exit(1 if check_proto(rows, args) else 0)
        if args.proto:
            gen_proto(rows, args)
        else:
            if not args.out:
                sys.exit("gen_bindings.py: need --out or --proto")
            os.makedirs(args.out, exist_ok=True)
            gen_outputs(rows, args, all_rows)
    except ValueError as e:
        sys.exit(f"gen_bindings.py: {e}")


if __name__ == "__main__":
    main()
