#!/usr/bin/python3
"""mpi4py_classify.py - classifies the failures in one log of bench/mpi4py-suite.sh.

    mpi4py_classify.py LOG NP

Prints one line per failed test ("<class>\t<test id>"), or, when the log
has no unittest result at all, one line for the file ("<class>\t<why>").
A failure is out of scope when its traceback (or, for a file that stopped
early, the "[collab] MPI_X is not supported" line) names a feature the
project declares out of scope (docs/testing.md); anything else is a
"defect".
"""
import re
import sys

CLASSES = [
    ("inter-communicators", r"Intercomm|intercomm|Inter\b|[Ii]nter-?comm|Create_intercomm"),
    ("topologies", r"Cart|Graph|Topo|[Nn]eighbor"),
    ("RMA, I/O, dynamic processes (DESIGN 8)",
     r"\bWin\b|Win\.|MPI_Win|RMA|\bFile\.|MPI_File|Spawn|Open_port|Publish_name|"
     r"Lookup_name|Comm_accept|Comm_connect|Comm_join|Alloc_mem|Free_mem"),
]


def classify(text):
    for name, pat in CLASSES:
        if re.search(pat, text):
            return name
    return "defect"


def main():
    log, np = sys.argv[1], int(sys.argv[2])
    text = open(log, errors="replace").read()
    # unittest's failure blocks: a ====== line, "FAIL: id" or "ERROR: id",
    # a ------ line, then the traceback up to the next ===== or ----- line.
    blocks = re.findall(r"^(?:FAIL|ERROR): ([^\n]+)\n-{20,}\n(.*?)(?=^={20,}|^-{20,})", text,
                        re.M | re.S)
    seen = {}
    for test, tb in blocks:
        # Ranks share one log: another rank's progress dots can run into a
        # line; keep the test id only.
        test = re.sub(r"[.EFsx]+$", "", test.strip()) or test.strip()
        # Sub-tests (parameters after the id) count as their test.
        m = re.match(r"^(\w+ \([\w.]+\))", test)
        if m:
            test = m.group(1)
        c = classify(test + "\n" + tb)
        # One test failing on several ranks: the most specific class wins.
        if test not in seen or seen[test] == "defect":
            seen[test] = c
    for test in sorted(seen):
        print("%s\t%s" % (seen[test], test))
    if seen:
        return
    ran = len(re.findall(r"^Ran \d+ tests? in", text, re.M))
    if ran >= np:
        return
    unsup = re.findall(r"\[collab\].*?(MPI_\w+) is not supported by mpicollab \(([^)]*)\)", text)
    if unsup:
        call, why = unsup[0]
        print("%s\t(file stopped: %s is not supported, %s)" % (classify(call + " " + why), call, why))
    else:
        print("defect\t(file stopped: %d of %d ranks reported a result)" % (ran, np))


if __name__ == "__main__":
    main()
