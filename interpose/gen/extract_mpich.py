#!/usr/bin/python3
"""extract_mpich.py - one-off derivation of the function table from MPICH.

Reads the names that MPICH 4.0.2's libmpich.so.12 exports (nm -D) and the
prototypes of its headers (mpi_proto.h, mpio.h), and prints one table row
per exported MPI_* / MPIX_* function:

    name | return type | parameters | how | checks

The rows it prints start as `unsupported(<reason>)`; the committed table
(mpi_functions.txt) was produced by this script once and then edited by
hand as functions were implemented.  The build never runs this script, so
MPICH need not be installed; keep it to re-derive or audit the table:

    interpose/gen/extract_mpich.py > /tmp/rows.txt
    interpose/gen/extract_mpich.py --check interpose/gen/mpi_functions.txt

--check compares names and prototypes with the committed table and prints
every difference (exit status 1 if there is one).
"""
import argparse
import re
import subprocess
import sys

LIB = "/usr/lib/x86_64-linux-gnu/libmpich.so.12"
INC = "/usr/include/x86_64-linux-gnu/mpich"

# Reason shown by MPI_ERR_UNSUPPORTED_OPERATION, chosen by name pattern.
# First match wins.
REASONS = [
    (r"^MPI_T_", "the MPI tool information interface"),
    (r"^MPI_(Win_|Put|Get$|Get_c$|Get_accumulate|Accumulate|Raccumulate|Rput|Rget|"
     r"Compare_and_swap|Fetch_and_op)", "one-sided communication"),
    (r"^MPI_(File_|Register_datarep)", "MPI-IO"),
    (r"^MPI_(Comm_spawn|Comm_accept|Comm_connect|Comm_join|Open_port|Close_port|"
     r"Publish_name|Unpublish_name|Lookup_name)", "dynamic processes"),
    (r"^MPI_(Intercomm_|Comm_remote_)", "inter-communicators"),
    (r"^MPI_(Cart|Graph|Dist_graph|Neighbor_|Ineighbor_)", "process topologies"),
    (r"^MPI_Session_|^MPI_Group_from_session_pset|^MPI_Comm_create_from_group",
     "sessions"),
    (r"^MPIX?_Grequest", "generalized requests"),
    (r"_init(_c)?$|^MPI_Start(all)?$|^MPI_P(ready|arrived)|^MPI_Psend|^MPI_Precv",
     "persistent and partitioned requests"),
    (r"^MPI_(Pack_external|Unpack_external)", "external32 packing"),
]


def exported_names():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TW" and re.match(r"^MPIX?_", parts[2]):
            names.add(parts[2])
    return names


def prototypes():
    protos = {}
    for hdr in ("mpi_proto.h", "mpio.h"):
        text = open(f"{INC}/{hdr}").read()
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
        for decl in text.split(";"):
            decl = " ".join(decl.split())
            decl = re.sub(r"MPICH_ATTR_POINTER_WITH_TYPE_TAG\(\d+,\d+\)", "", decl)
            decl = decl.replace("MPICH_API_PUBLIC", "").replace("ROMIO_API_PUBLIC", "")
            m = re.match(r"^(?:.*\})?\s*([A-Za-z_][\w ]*?[\w*])\s*\b(MPIX?_\w+)\s*\((.*)\)\s*$",
                         decl)
            if not m:
                continue
            ret, name, params = m.group(1).strip(), m.group(2), m.group(3).strip()
            if ret.startswith("typedef") or name in protos:
                continue
            params = re.sub(r"\s*,\s*", ", ", params)
            params = re.sub(r"\(\s+", "(", params)
            protos[name] = (ret, params)
    return protos


def reason_for(name):
    for pat, why in REASONS:
        if re.search(pat, name):
            return why
    return "not implemented yet"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", metavar="TABLE")
    args = ap.parse_args()
    names = exported_names()
    protos = prototypes()
    missing = sorted(n for n in names if n not in protos)
    if missing:
        sys.exit("no prototype for: " + " ".join(missing))
    rows = {n: protos[n] for n in names}
    if args.check:
        table = {}
        for line in open(args.check):
            if not line.strip() or line.startswith("#"):
                continue
            f = [x.strip() for x in line.split("|")]
            if "only=ompi" in f[3].split():
                continue
            table[f[0]] = (f[1], f[2])
        bad = 0
        for n in sorted(set(rows) | set(table)):
            if n.startswith("MPIX_Collab_"):
                continue
            if n not in table:
                print("missing from table:", n); bad = 1
            elif n not in rows:
                print("not exported by MPICH:", n); bad = 1
            elif rows[n] != table[n]:
                print("prototype differs:", n, rows[n], table[n]); bad = 1
        mpi = sum(1 for n in rows if n.startswith("MPI_"))
        print(f"MPICH exports {mpi} MPI_* and {len(rows) - mpi} MPIX_* functions")
        sys.exit(bad)
    for n in sorted(rows):
        ret, params = rows[n]
        print(f"{n} | {ret} | {params} | unsupported({reason_for(n)}) |")


if __name__ == "__main__":
    main()
