#!/usr/bin/python3
"""proto_sync_can_fail.py - shows that abi_proto_sync can fail.

    proto_sync_can_fail.py --gen gen_bindings.py --table mpi_functions.txt
                           --headers include/mpicollab --workdir DIR

Copies the committed prototype headers (mpi_proto.h and its chapter
headers) into DIR, checks that the copy passes gen_bindings.py --check,
then spoils it three ways, each on a fresh copy: a declaration edited by
hand in one chapter header, a chapter header deleted, a stale chapter
header added.  Each must make --check fail and name the file.  Exit 0
when all three are caught.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys


def fresh_copy(headers, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for f in glob.glob(os.path.join(headers, "mpi_proto*.h")):
        shutil.copy(f, workdir)


def check(args):
    r = subprocess.run([sys.executable, args.gen, "--abi", "mpich", "--table", args.table,
                        "--proto", os.path.join(args.workdir, "mpi_proto.h"), "--check"],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    for a in ("--gen", "--table", "--headers", "--workdir"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    fails = 0
    fresh_copy(args.headers, args.workdir)
    rc, out = check(args)
    if rc != 0:
        print(f"FAIL: the unchanged copy does not pass:\n{out}")
        return 1
    chapters = sorted(glob.glob(os.path.join(args.workdir, "mpi_proto_*.h")))
    if len(chapters) < 2:
        print("FAIL: fewer than two chapter headers")
        return 1

    def spoil(what, victim, action):
        nonlocal fails
        fresh_copy(args.headers, args.workdir)
        action(os.path.join(args.workdir, victim))
        rc, out = check(args)
        if rc == 0 or victim not in out:
            print(f"FAIL: {what} ({victim}) not caught:\n{out}")
            fails += 1
        else:
            print(f"ok: {what} caught: {out.strip()}")

    def edit(path):
        text = open(path).read()
        open(path, "w").write(text.replace("MPICOLLAB_API;", "MPICOLLAB_API ;", 1))

    spoil("a declaration edited by hand", os.path.basename(chapters[0]), edit)
    spoil("a chapter header missing", os.path.basename(chapters[-1]), os.remove)
    spoil("a stale chapter header", "mpi_proto_gone.h",
          lambda p: open(p, "w").write("/* stale */\n"))
    shutil.rmtree(args.workdir, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
