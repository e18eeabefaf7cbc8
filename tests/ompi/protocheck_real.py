#!/usr/bin/python3
"""protocheck_real.py - the face's prototypes against Open MPI's own header.

For every function the Open MPI face exports (interpose/ompi/exports.txt,
except mpicollab's MPIX_Collab_* and the ULFM calls, which Open MPI 4.1
lacks), takes the prototype from the function table (the shared
mpi_functions.txt plus mpi_functions_ompi.txt) and compiles, with
mpicc.openmpi against Open MPI's mpi.h and mpi-ext.h,

    static int (*const p_MPI_X)(<table parameters>) = MPI_X;

so any parameter or return type that differs from Open MPI's fails the
test with the compiler naming the function.  const-qualification
differences are errors too (-Werror=incompatible-pointer-types).

Usage: protocheck_real.py --table T [--table T2] --exports exports.txt --workdir DIR
"""
import argparse
import os
import subprocess
import sys

SKIP_PREFIX = ("MPIX_Collab_", "MPIX_Comm_")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", action="append", required=True)
    ap.add_argument("--exports", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--mpicc", default="mpicc.openmpi")
    a = ap.parse_args()
    rows = {}
    for t in a.table:
        for line in open(t):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            f = [x.strip() for x in line.split("|")]
            if len(f) == 5 and "only=mpich" not in f[3]:
                rows[f[0]] = (f[1], f[2])
    names = [l.strip() for l in open(a.exports) if l.strip() and not l.startswith("#")]
    missing = [n for n in names if n not in rows]
    if missing:
        print("protocheck_real: exported but not in the table: " + " ".join(missing))
        return 1
    os.makedirs(a.workdir, exist_ok=True)
    src = os.path.join(a.workdir, "protocheck_real.c")
    checked = 0
    with open(src, "w") as f:
        f.write("#include <mpi.h>\n#include <mpi-ext.h>\n\n")
        for n in names:
            if n.startswith(SKIP_PREFIX):
                continue
            ret, params = rows[n]
            # Open MPI declares no PMPIX_ twin of MPIX_Query_cuda_support.
            twins = (n,) if n == "MPIX_Query_cuda_support" else (n, "P" + n)
            for name in twins:
                f.write("__attribute__((unused)) static %s (*const p_%s)(%s) = %s;\n"
                        % (ret, name, params, name))
            checked += 1
    # OMPI_OMIT_MPI1_COMPAT_DECLS=0: declare the MPI-1 functions removed in
    # MPI-3.0 (MPI_Address, ...), which libmpi.so.40 still exports.
    r = subprocess.run([a.mpicc, "-std=gnu11", "-c", "-DOMPI_OMIT_MPI1_COMPAT_DECLS=0",
                        "-Wno-deprecated-declarations", "-Werror=incompatible-pointer-types",
                        "-Werror=discarded-qualifiers", "-o", os.path.join(a.workdir, "pc.o"),
                        src], capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stdout + r.stderr)
        print("protocheck_real: prototypes differ from Open MPI's (see above)")
        return 1
    print("protocheck_real: %d functions (and their PMPI_ twins) match Open MPI's mpi.h"
          % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
