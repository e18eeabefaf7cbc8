#!/usr/bin/python3
"""constcheck.py - compares mpicollab's mpi.h with MPICH's, value by value.

Generates one C program that prints every constant of constants.txt and
the size, alignment and field offsets of MPI_Status, MPI_F08_status and
the scalar and handle types, compiles it once against our include/mpi.h
and once against MPICH's mpi.h, runs both and compares the outputs line by
line.  Our header is compiled with -std=c11 -pedantic -Werror and also as
C++11 (whose output must equal the C one).

    constcheck.py --cc gcc --cxx g++ --ours include --mpich /usr/include/.../mpich
                  --list constants.txt --workdir DIR [--mutate]

--mutate redefines one constant of our header before the program sees it
and succeeds only if the comparison then reports that difference: it
proves the check can fail.  Exit status 0 on success, 1 on a difference
or a build failure (all differences are printed first).
"""
import argparse
import os
import subprocess
import sys

LAYOUT = [
    "sizeof(MPI_Status)", "_Alignof(MPI_Status)",
    "offsetof(MPI_Status, count_lo)", "offsetof(MPI_Status, count_hi_and_cancelled)",
    "offsetof(MPI_Status, MPI_SOURCE)", "offsetof(MPI_Status, MPI_TAG)",
    "offsetof(MPI_Status, MPI_ERROR)", "sizeof(MPI_F08_status)",
    "offsetof(MPI_F08_status, MPI_SOURCE)", "offsetof(MPI_F08_status, MPI_ERROR)",
    "sizeof(MPI_Aint)", "sizeof(MPI_Count)", "sizeof(MPI_Offset)", "sizeof(MPI_Fint)",
    "(MPI_Aint)-1 < 0", "(MPI_Count)-1 < 0", "(MPI_Offset)-1 < 0",
    "sizeof(MPI_Comm)", "sizeof(MPI_Datatype)", "sizeof(MPI_Group)", "sizeof(MPI_Op)",
    "sizeof(MPI_Errhandler)", "sizeof(MPI_Request)", "sizeof(MPI_Message)",
    "sizeof(MPI_Info)", "sizeof(MPI_Win)", "sizeof(MPI_Session)", "sizeof(MPI_File)",
    "sizeof(MPI_T_enum)", "sizeof(MPI_T_pvar_handle)",
    "sizeof(enum MPIR_Combiner_enum)", "sizeof(MPIR_T_verbosity_t)",
]


def program(consts, cxx=False):
    out = ["#include <mpi.h>", "#include <stddef.h>", "#include <stdint.h>",
           "#include <stdio.h>", "", "int main(void)", "{"]
    for kind, name in consts:
        if kind == "i":
            out.append(f'    printf("%s %lld\\n", "{name}", (long long)({name}));')
        elif kind == "p":
            out.append(f'    printf("%s %#llx\\n", "{name}", '
                       f'(unsigned long long)(uintptr_t)({name}));')
        else:
            out.append(f'    printf("%s \\"%s\\"\\n", "{name}", {name});')
    for expr in LAYOUT:
        e = expr.replace("_Alignof", "alignof") if cxx else expr
        out.append(f'    printf("%s %lld\\n", "{expr}", (long long)({e}));')
    out += ["    return 0;", "}", ""]
    return "\n".join(out)


def build_and_run(cmd, src, exe, log):
    r = subprocess.run(cmd + [src, "-o", exe], capture_output=True, text=True)
    if r.returncode != 0:
        log.append(f"compile failed: {' '.join(cmd)}\n{r.stderr}")
        return None
    r = subprocess.run([exe], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        log.append(f"{exe} exited with {r.returncode}")
        return None
    return r.stdout.splitlines()


def compare(a, b, label_a, label_b):
    diffs = []
    da = dict(l.split(" ", 1) if " " in l else (l, "") for l in a)
    db = dict(l.split(" ", 1) if " " in l else (l, "") for l in b)
    for name in sorted(set(da) | set(db)):
        if da.get(name) != db.get(name):
            diffs.append(f"{name}: {label_a} {da.get(name, '<missing>')}, "
                         f"{label_b} {db.get(name, '<missing>')}")
    return diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--cxx")
    ap.add_argument("--ours", required=True)
    ap.add_argument("--mpich", required=True)
    ap.add_argument("--list", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--mutate", action="store_true")
    args = ap.parse_args()
    consts = []
    for line in open(args.list):
        if line.strip() and not line.startswith("#"):
            kind, name = line.split()
            consts.append((kind, name))
    os.makedirs(args.workdir, exist_ok=True)
    src = os.path.join(args.workdir, "constcheck.c")
    with open(src, "w") as f:
        f.write(program(consts))
    log = []
    ours_cmd = [args.cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", args.ours]
    if args.mutate:
        mut = os.path.join(args.workdir, "mutate.h")
        with open(mut, "w") as f:
            f.write("#include <mpi.h>\n#undef MPI_ANY_SOURCE\n#define MPI_ANY_SOURCE (-1)\n")
        ours_cmd += ["-include", mut]
    ours = build_and_run(ours_cmd, src, os.path.join(args.workdir, "cc_ours"), log)
    mpich = build_and_run([args.cc, "-std=c11", "-w", "-I", args.mpich], src,
                          os.path.join(args.workdir, "cc_mpich"), log)
    cxx = None
    if args.cxx and not args.mutate:
        srcxx = os.path.join(args.workdir, "constcheck.cc")
        with open(srcxx, "w") as f:
            f.write(program(consts, cxx=True))
        cxx = build_and_run([args.cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror",
                             "-I", args.ours], srcxx, os.path.join(args.workdir, "cxx_ours"), log)
    for l in log:
        print(l)
    if ours is None or mpich is None:
        sys.exit(1)
    diffs = compare(ours, mpich, "ours", "mpich")
    if cxx is not None:
        diffs += ["C++: " + d for d in compare(cxx, ours, "c++", "c")]
    if args.mutate:
        hit = any(d.startswith("MPI_ANY_SOURCE:") for d in diffs)
        print("mutation detected" if hit else "mutation NOT detected: the check cannot fail")
        sys.exit(0 if hit else 1)
    for d in diffs:
        print("DIFF", d)
    print(f"compared {len(ours)} values ({len(consts)} constants, {len(LAYOUT)} layout facts): "
          f"{len(diffs)} differences")
    sys.exit(1 if diffs or log else 0)


if __name__ == "__main__":
    main()
