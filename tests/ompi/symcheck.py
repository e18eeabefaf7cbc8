#!/usr/bin/python3
"""symcheck.py - checks the exported symbols of the Open MPI face.

Compares a built face library with what Open MPI 4.1's libmpi.so.40 exports
and with what Debian's mpi4py extension module references:

1. every C function libmpi.so.40 exports (MPI_*, PMPI_*, MPIX_*, PMPIX_*,
   OMPI_C_*; not the Fortran names) is exported by the face, so nothing
   falls through to the real library under LD_PRELOAD;
2. every MPI_*/ompi_*/OMPI_* name mpi4py's MPI.*.so leaves undefined is
   defined by the face (Python loads the module with RTLD_NOW);
3. every predefined object is a default-visibility OBJECT of exactly the
   size libmpi.so.40 gives it (copy relocations);
4. every MPI_X is an alias of PMPI_X (same address, MPI_X weak);
5. nothing else is exported (only MPI_*, PMPI_*, MPIX_*, PMPIX_*, collab_*,
   the ompi_* objects, OMPI_C_* and MPI_F_STATUS(ES)_IGNORE);
6. the library is not linked with -Bsymbolic, and has the expected SONAME
   when --soname is given.

Usage: symcheck.py LIBRARY [--soname libmpi.so.40] [--real PATH] [--mpi4py PATH]
"""
import argparse
import glob
import re
import subprocess
import sys

REAL_DEFAULT = "/usr/lib/x86_64-linux-gnu/libmpi.so.40"
MPI4PY_GLOB = "/usr/lib/python3/dist-packages/mpi4py/MPI.cpython-*.so"

# Fortran entry points of libmpi.so.40 that C programs never reference
# (the C header maps these names to OMPI_C_* functions or to macros).
FORTRAN_ONLY = re.compile(r"^P?MPI_([A-Z0-9_]+_FN|CONVERSION_FN_NULL|AINT_(ADD|DIFF)_F90|"
                          r"WTIME_F90|WTICK_F90|F_STATUSES_IGNORE|F_STATUS_IGNORE)$")
# Predefined objects: the struct ompi_predefined_*_t globals.
OBJECT_RE = re.compile(r"^(ompi_mpi_[a-z0-9_]+|ompi_request_null|ompi_message_null|"
                       r"ompi_message_no_proc)$")
ALLOWED_RE = re.compile(r"^(P?MPIX?_\w+|collab_\w+|OMPI_C_MPI_\w+|MPI_F_STATUS(ES)?_IGNORE)$")


def symbols(path, defined=True):
    """name -> (value, size, type, bind, visibility) from readelf --dyn-syms."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True,
                         text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or not f[0][:-1].isdigit():
            continue
        value, size, typ, bind, vis, ndx, name = f[1], f[2], f[3], f[4], f[5], f[6], f[7]
        name = name.split("@")[0]
        if (ndx != "UND") != defined:
            continue
        size = int(size, 16) if size.startswith("0x") else int(size)
        syms[name] = (int(value, 16), size, typ, bind, vis)
    return syms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("library")
    ap.add_argument("--soname")
    ap.add_argument("--real", default=REAL_DEFAULT)
    ap.add_argument("--mpi4py")
    a = ap.parse_args()
    errors = []

    ours = symbols(a.library)
    real = symbols(a.real)

    # 1. functions of the real library
    real_funcs = sorted(n for n, s in real.items()
                        if s[2] == "FUNC" and re.match(r"^(P?MPIX?_|OMPI_C_MPI_)", n)
                        and not FORTRAN_ONLY.match(n))
    missing = [n for n in real_funcs if n not in ours or ours[n][2] != "FUNC"]
    for n in missing:
        errors.append("function of libmpi.so.40 not exported: %s" % n)

    # 2. mpi4py's references
    mod = a.mpi4py or (sorted(glob.glob(MPI4PY_GLOB)) or [None])[0]
    if mod is None:
        errors.append("mpi4py extension module not found (%s)" % MPI4PY_GLOB)
        wanted = []
    else:
        wanted = sorted(n for n in symbols(mod, defined=False)
                        if re.match(r"^(P?MPIX?_|ompi_|OMPI_)", n))
        for n in wanted:
            if n not in ours:
                errors.append("mpi4py needs %s, not exported" % n)

    # 3. objects at exact sizes, default visibility
    real_objs = {n: s for n, s in real.items() if OBJECT_RE.match(n) and s[2] == "OBJECT"
                 and s[1] >= 256 and not n.endswith("_addr")}
    for n, s in sorted(real_objs.items()):
        o = ours.get(n)
        if o is None:
            errors.append("object not exported: %s (%d bytes)" % (n, s[1]))
        elif o[2] != "OBJECT" or o[1] != s[1] or o[4] != "DEFAULT" or o[3] != "GLOBAL":
            errors.append("object %s: ours %s %d bytes %s %s, Open MPI OBJECT %d bytes"
                          % (n, o[2], o[1], o[3], o[4], s[1]))
    for n in ("MPI_F_STATUS_IGNORE", "MPI_F_STATUSES_IGNORE"):
        if n not in ours or ours[n][1] != real[n][1]:
            errors.append("object %s missing or of the wrong size" % n)

    # 4. MPI_X aliases PMPI_X
    for n, s in ours.items():
        if n.startswith("MPI_") and s[2] == "FUNC":
            p = ours.get("P" + n)
            if p is None:
                errors.append("%s has no PMPI_ twin" % n)
            elif p[0] != s[0]:
                errors.append("%s is not an alias of P%s" % (n, n))
            elif s[3] != "WEAK":
                errors.append("%s should be weak (PMPI_ strong)" % n)

    # 5. nothing else exported
    for n, s in sorted(ours.items()):
        if not n or s[2] in ("SECTION", "FILE", "NOTYPE") and n.startswith("_"):
            continue
        if OBJECT_RE.match(n) and n in real_objs:
            continue
        if not ALLOWED_RE.match(n):
            errors.append("exported but not part of the interface: %s (%s)" % (n, s[2]))

    # 6. dynamic section
    dyn = subprocess.run(["readelf", "-d", "-W", a.library], capture_output=True, text=True,
                         check=True).stdout
    if re.search(r"\(SYMBOLIC\)|FLAGS\).*SYMBOLIC", dyn):
        errors.append("linked with -Bsymbolic: handle comparisons would break")
    if a.soname:
        m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", dyn)
        if m is None or m.group(1) != a.soname:
            errors.append("SONAME is %s, expected %s" % (m.group(1) if m else None, a.soname))

    for e in errors:
        print("symcheck: " + e)
    print("symcheck: %s: %d functions of libmpi.so.40, %d mpi4py references, %d objects "
          "checked; %d problems" % (a.library, len(real_funcs), len(wanted), len(real_objs),
                                    len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
