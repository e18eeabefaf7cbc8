#!/usr/bin/python3
"""run_compare.py - runs one unchanged Open MPI program on Open MPI and on mpicollab.

    run_compare.py --np N --build DIR [--mode preload|replace] [options] -- PROGRAM [ARGS...]

1. Reference: the program on Debian's Open MPI (a singleton for N = 1,
   `mpirun -n N` otherwise).
2. mpicollab: the same binary with the Open MPI face, LD_PRELOAD'ed
   (--mode preload) or found as libmpi.so.40 on LD_LIBRARY_PATH
   (--mode replace).  N = 1 starts the peer directly (no launcher, as a
   volunteer would); N > 1 uses `collab-run -n N --abi ompi`.
3. Compares the exit statuses and standard outputs.  Options:
   --sort              compare the lines sorted (output of several ranks)
   --rtol X            numbers may differ by a relative X (summation order)
   --same-after WORD   in mpicollab's output, the token after WORD must be
                       the same on every line that has it (bitwise agreement
                       between peers)
   --expect-rc N       both runs must exit with N (default 0)
   --expect-fail       mpicollab's run must exit non-zero (with --no-reference)
   --expect-stderr RE  mpicollab's standard error must match the regex
   --reject-stderr RE  ... and must not match this one
   --env K=V           an environment setting for mpicollab's run
   --timeout S         per run (default 120)
   --chaos SPEC        passed to collab-run (a fault to inject; N > 1)
   --expect-count RE N mpicollab's stdout must have N lines matching RE

Network traffic stays on loopback; the peers' logs (stderr) are shown when
something differs.
"""
import argparse
import difflib
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile

OMPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_btl": "self,vader", "OMPI_MCA_rmaps_base_oversubscribe": "1"}
NUM_RE = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def run(cmd, env, timeout):
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += "\n[run_compare] killed after %s s\n" % timeout
        return 124, out, err
    return p.returncode, out, err


def tokens_equal(a, b, rtol):
    if a == b:
        return True
    if rtol and NUM_RE.match(a) and NUM_RE.match(b):
        x, y = float(a), float(b)
        return abs(x - y) <= rtol * max(abs(x), abs(y), 1e-300)
    return False


def lines_equal(a, b, rtol):
    ta, tb = a.split(), b.split()
    return len(ta) == len(tb) and all(tokens_equal(x, y, rtol) for x, y in zip(ta, tb))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--np", type=int, default=1)
    ap.add_argument("--build", required=True)
    ap.add_argument("--mode", choices=("preload", "replace"), default="preload")
    ap.add_argument("--sort", action="store_true")
    ap.add_argument("--rtol", type=float, default=0.0)
    ap.add_argument("--same-after")
    ap.add_argument("--expect-rc", type=int, default=0)
    ap.add_argument("--expect-fail", action="store_true")
    ap.add_argument("--expect-stderr")
    ap.add_argument("--reject-stderr", help="mpicollab's stderr must not match this regex")
    ap.add_argument("--env", action="append", default=[], metavar="K=V",
                    help="set in mpicollab's run (after its own COLLAB_* settings)")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--chaos", action="append", default=[])
    ap.add_argument("--expect-count", nargs=2, metavar=("RE", "N"))
    ap.add_argument("--no-reference", action="store_true",
                    help="only run on mpicollab (checks rc, stderr, --same-after)")
    ap.add_argument("prog", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    prog = a.prog[1:] if a.prog and a.prog[0] == "--" else a.prog
    if not prog:
        sys.exit("run_compare: no program given")

    base = dict(os.environ)
    for k in ("LD_PRELOAD", "LD_LIBRARY_PATH"):
        base.pop(k, None)
    ok = True

    if not a.no_reference:
        env = dict(base, **OMPI_ENV)
        if a.np == 1:
            rrc, rout, rerr = run(prog, env, a.timeout)
        else:
            # mpirun forwards output in chunks that may split lines of several
            # ranks; each rank's output file is exact.
            with tempfile.TemporaryDirectory(prefix="run_compare.") as d:
                rrc, _, rerr = run(["mpirun", "--output-filename", d, "-n", str(a.np)] + prog,
                                   env, a.timeout)
                files = sorted(glob.glob(os.path.join(d, "*", "rank.*", "stdout")),
                               key=lambda f: int(f.split("rank.")[-1].split(os.sep)[0]))
                rout = "".join(open(f).read() for f in files)
        if rrc != a.expect_rc:
            print("run_compare: the reference run on Open MPI exited %d, expected %d\n%s"
                  % (rrc, a.expect_rc, rerr))
            return 1

    lib = os.path.join(a.build, "lib")
    for k in [k for k in base if k.startswith("COLLAB_")]:
        base.pop(k)
    env = dict(base, COLLAB_LOG="warn")
    if a.np == 1:
        # A lone volunteer: loopback only, a world of one.
        env["COLLAB_LISTEN"] = "/ip4/127.0.0.1/tcp/0"
        env["COLLAB_WORLD_SIZE"] = "1"
        if a.mode == "preload":
            env["LD_PRELOAD"] = os.path.join(lib, "libmpicollab-ompi.so")
        else:
            env["LD_LIBRARY_PATH"] = os.path.join(lib, "mpicollab")
        cmd = prog
    else:
        cmd = [os.path.join(a.build, "bin", "collab-run"), "-n", str(a.np), "--abi", "ompi",
               "--mode", a.mode, "--libdir", lib, "--timeout", str(a.timeout)]
        for c in a.chaos:
            cmd += ["--chaos", c]
        cmd += ["--"] + prog
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    orc, oout, oerr = run(cmd, env, a.timeout + 10)
    sys.stdout.write(oout)

    if a.expect_fail:
        if orc == 0:
            print("run_compare: mpicollab run exited 0, expected a failure")
            ok = False
    elif orc != a.expect_rc:
        print("run_compare: mpicollab run exited %d, expected %d" % (orc, a.expect_rc))
        ok = False
    if a.reject_stderr and re.search(a.reject_stderr, oerr, re.M):
        print("run_compare: mpicollab's stderr matches %r\n%s" % (a.reject_stderr, oerr))
        return 1
    if a.expect_stderr and not re.search(a.expect_stderr, oerr, re.M):
        print("run_compare: mpicollab's stderr does not match %r" % a.expect_stderr)
        ok = False
    if a.expect_count:
        n = len(re.findall(a.expect_count[0], oout, re.M))
        if n != int(a.expect_count[1]):
            print("run_compare: %d lines match %r, expected %s"
                  % (n, a.expect_count[0], a.expect_count[1]))
            ok = False
    if a.same_after:
        seen = set(re.findall(r"\b%s\s+(\S+)" % re.escape(a.same_after), oout))
        if len(seen) != 1:
            print("run_compare: values after %r differ between peers: %s"
                  % (a.same_after, sorted(seen)))
            ok = False
    if not a.no_reference:
        rl, ol = rout.splitlines(), oout.splitlines()
        if a.same_after:
            pat = re.compile(r"\b(%s)\s+\S+" % re.escape(a.same_after))
            rl = [pat.sub(r"\1 *", l) for l in rl]
            ol = [pat.sub(r"\1 *", l) for l in ol]
        if a.sort:
            rl, ol = sorted(rl), sorted(ol)
        if len(rl) != len(ol) or not all(lines_equal(x, y, a.rtol) for x, y in zip(rl, ol)):
            print("run_compare: output differs from Open MPI's")
            if not a.rtol:
                sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
                    rl, ol, "open mpi", "mpicollab", lineterm="", n=1))
            for i in range(max(len(rl), len(ol)) if a.rtol else 0):
                x = rl[i] if i < len(rl) else "<none>"
                y = ol[i] if i < len(ol) else "<none>"
                if not lines_equal(x, y, a.rtol):
                    print("  open mpi:  %s\n  mpicollab: %s" % (x, y))
            ok = False
    if not ok:
        print("---- mpicollab stderr ----\n" + oerr)
        return 1
    print("run_compare: ok (%d peer%s, %s)" % (a.np, "s" if a.np > 1 else "", a.mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
