#!/usr/bin/python3
"""check_symbols.py - checks what an MPICH-ABI face library exports.

    check_symbols.py --lib L [--soname S] --exports exports.txt
                     [--reference /usr/lib/x86_64-linux-gnu/libmpich.so.12]

For the library L (nm -D, readelf -d):
  - it exports exactly the names of exports.txt (written by the generator
    from the function table and the ABI's data objects) plus collab_*:
    nothing is missing and nothing unexpected is exported;
  - every MPI_X / MPIX_X is a weak symbol at the address of the strong
    PMPI_X / PMPIX_X;
  - its SONAME is S (when given);
and, with --reference (the real MPICH library, when installed):
  - every MPI_* / PMPI_* / MPIX_* / PMPIX_* function the reference exports
    is exported by L;
  - every data object of the reference with an MPI name (MPI_*, MPIR_F08_*,
    MPIR_C_*) is exported by L with the same size.
Prints the counts and every problem; exit status 1 if there is one.
"""
import argparse
import re
import subprocess
import sys


def symbols(lib):
    out = subprocess.run(["nm", "-D", "-S", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4:
            addr, size, kind, name = f
        elif len(f) == 3:
            addr, kind, name = f
            size = "0"
        else:
            continue
        syms[name.split("@")[0]] = (kind, int(addr, 16), int(size, 16))
    return syms


def soname(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--soname")
    ap.add_argument("--exports", required=True)
    ap.add_argument("--reference")
    args = ap.parse_args()
    problems = []
    ours = symbols(args.lib)
    expected = {l.strip() for l in open(args.exports) if l.strip() and not l.startswith("#")}

    for name in sorted(expected - set(ours)):
        problems.append(f"missing export: {name}")
    for name in sorted(set(ours) - expected):
        if not name.startswith("collab_"):
            problems.append(f"unexpected export: {name} ({ours[name][0]})")

    weak = strong = 0
    for name, (kind, addr, _) in sorted(ours.items()):
        m = re.match(r"^(MPIX?_)", name)
        if not m or kind not in "TWtw":
            continue
        pname = "P" + name
        if kind != "W":
            problems.append(f"{name} is '{kind}', not a weak symbol")
        p = ours.get(pname)
        if p is None:
            problems.append(f"{name} has no {pname}")
        elif p[0] != "T":
            problems.append(f"{pname} is '{p[0]}', not a strong function")
        elif p[1] != addr:
            problems.append(f"{name} (0x{addr:x}) and {pname} (0x{p[1]:x}) differ")
        else:
            weak += 1
            strong += 1

    if args.soname:
        so = soname(args.lib)
        if so != args.soname:
            problems.append(f"SONAME is {so}, expected {args.soname}")

    nref = 0
    if args.reference:
        ref = symbols(args.reference)
        for name, (kind, _, size) in sorted(ref.items()):
            if re.match(r"^P?MPIX?_", name) and kind in "TW":
                nref += 1
                if name not in ours:
                    problems.append(f"the reference exports {name}, we do not")
            elif re.match(r"^(MPI_|MPIR_F08_|MPIR_C_)", name) and kind in "BDR":
                if name not in ours:
                    problems.append(f"the reference exports data {name}, we do not")
                elif ours[name][2] != size:
                    problems.append(f"data {name}: size {ours[name][2]}, reference {size}")

    counts = {}
    for name, (kind, _, _) in ours.items():
        key = re.match(r"^(PMPIX_|PMPI_|MPIX_|MPI_|MPIR_|collab_)", name)
        key = (key.group(1) if key else "other") + kind
        counts[key] = counts.get(key, 0) + 1
    print(f"{args.lib}: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print(f"{weak} MPI/MPIX weak aliases checked against their strong P-symbols"
          + (f"; {nref} reference functions checked" if args.reference else ""))
    for p in problems:
        print("PROBLEM", p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
