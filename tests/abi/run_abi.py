#!/usr/bin/python3
"""run_abi.py - runs the single-peer ABI tests of the MPICH face.

    run_abi.py errors  --exe errors --lib libmpicollab.so
    run_abi.py inert   --exe inert  --lib libmpicollab.so
    run_abi.py foreign --exe foreign_ompi --lib libmpicollab.so
    run_abi.py optable --exe op_table_mpich --lib libmpicollab.so
    run_abi.py app     --exe hello  --mode preload --lib libmpicollab.so
    run_abi.py app     --exe hello  --mode replace --libdir lib/mpicollab
    run_abi.py app     --exe hello  --mode own --libdir lib
    run_abi.py install --build BUILD --prefix DIR --source hello.c --exe hello_mpich

Every run gets its own swarm of one peer on loopback (COLLAB_WORLD_SIZE=1,
a fresh COLLAB_RUN_ID, no COLLAB_INITIAL_PEERS) and a deadline; a run that
passes it is killed and fails the test.  Exit status 0 if every check
passed; each failed check is printed.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

TIMEOUT = 60
failures = []


def env_for(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("COLLAB_")}
    env.update({
        "COLLAB_WORLD_SIZE": "1",
        "COLLAB_LISTEN": "/ip4/127.0.0.1/tcp/0",
        "COLLAB_RUN_ID": f"abi-test-{os.getpid()}",
        "COLLAB_LOG": "warn",
    })
    env.update(extra)
    return env


def run(cmd, extra_env, label):
    try:
        r = subprocess.run(cmd, env=env_for(extra_env), capture_output=True, text=True,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        failures.append(f"{label}: no result within {TIMEOUT} s (killed)")
        return None
    sys.stdout.write(f"--- {label}: exit {r.returncode}\n{r.stdout}")
    if r.stderr:
        sys.stdout.write("stderr:\n" + r.stderr)
    return r


def check(cond, what):
    if not cond:
        failures.append(what)


def fatal_line(r, label, must_contain):
    """Exactly one [collab] line on stderr, naming the call and the problem."""
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    fatal = [l for l in lines if "fatal error" in l]
    check(len(fatal) == 1 and len(lines) == 1,
          f"{label}: expected exactly one line on stderr (the fatal error), got {len(lines)}")
    for word in must_contain:
        check(any(word in l for l in fatal), f"{label}: the fatal line does not name {word!r}")


def cmd_errors(args):
    pre = {"LD_PRELOAD": args.lib}
    r = run([args.exe, "return"], pre, "errors return")
    if r is not None:
        check(r.returncode == 0, "errors return: exit status %d" % r.returncode)
        check("FAIL" not in r.stdout, "errors return: some checks failed")
        check(r.stdout.count("ok ") >= 30, "errors return: checks missing from the output")
    r = run([args.exe, "fatal"], pre, "errors fatal")
    if r is not None:
        check(r.returncode == 9, f"errors fatal: exit status {r.returncode}, expected 9 (MPI_ERR_OP)")
        check("returned" not in r.stdout, "errors fatal: the call returned")
        fatal_line(r, "errors fatal", ["MPI_Allreduce", "op", "MPI_ERR_OP"])
    r = run([args.exe, "unsupported"], pre, "errors unsupported")
    if r is not None:
        check(r.returncode == 44, f"errors unsupported: exit status {r.returncode}, expected 44")
        fatal_line(r, "errors unsupported", ["MPI_Win_create", "not supported"])
    r = run([args.exe, "preinit"], pre, "errors preinit")
    if r is not None:
        check(r.returncode == 15, f"errors preinit: exit status {r.returncode}, expected 15")
        fatal_line(r, "errors preinit", ["MPI_Comm_rank", "before MPI_Init"])
    r = run([args.exe, "abort"], pre, "errors abort")
    if r is not None:
        check(r.returncode == 7, f"errors abort: exit status {r.returncode}, expected 7")
        check(re.search(r"Abort\(7\) on node 0 \(rank 0 in comm 0\): application called "
                        r"MPI_Abort\(MPI_COMM_WORLD, 7\)", r.stderr) is not None,
              "errors abort: no MPICH-style abort line")


def cmd_inert(args):
    r = run([args.exe, os.path.basename(args.lib)], {"LD_PRELOAD": args.lib}, "inert")
    if r is not None:
        check(r.returncode == 0, "inert: the preloaded library started threads or sockets "
                                 "(or was not loaded)")


def cmd_foreign(args):
    extra = {"LD_PRELOAD": args.lib, "OMPI_ALLOW_RUN_AS_ROOT": "1",
             "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    r = run([args.exe], extra, "foreign")
    if r is not None:
        check(r.returncode != 0, "foreign: an Open MPI program ran on the MPICH face")
        check("foreign: rank" not in r.stdout, "foreign: the program went past MPI_Init")
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        check(len(lines) == 1 and "built for Open MPI" in lines[0],
              "foreign: expected one line saying the program was built for Open MPI")


def cmd_optable(args):
    """The op/datatype table (op_table.c) on real MPICH and on the face: identical."""
    ref = run([args.exe], {"LD_PRELOAD": ""}, "optable on MPICH")
    ours = run([args.exe], {"LD_PRELOAD": args.lib}, "optable on mpicollab")
    if ref is None or ours is None:
        return
    check(ref.returncode == 0 and ours.returncode == 0,
          f"optable: exit statuses {ref.returncode} (MPICH), {ours.returncode} (mpicollab)")
    check(len(ref.stdout.splitlines()) > 800, "optable: MPICH's table is incomplete")
    a, b = ref.stdout.splitlines(), ours.stdout.splitlines()
    diff = [f"  MPICH: {x!r}  mpicollab: {y!r}" for x, y in zip(a, b) if x != y]
    check(len(a) == len(b) and not diff,
          "optable: the face decides differently from MPICH:\n" + "\n".join(diff[:40]))


def cmd_install(args):
    """Installs the face alone, then uses it the three documented ways."""
    import shutil
    shutil.rmtree(args.prefix, ignore_errors=True)
    r = subprocess.run(["cmake", "--install", args.build, "--prefix", args.prefix,
                        "--component", "mpicollab_mpich"], capture_output=True, text=True)
    check(r.returncode == 0, f"install: cmake --install failed: {r.stderr.strip()}")
    if r.returncode != 0:
        return
    here = os.path.dirname(os.path.abspath(__file__))
    protos = sorted(os.path.basename(p) for p in glob.glob(
        os.path.join(here, "..", "..", "include", "mpicollab", "mpi_proto_*.h")))
    check(len(protos) > 0, "install: no chapter headers mpi_proto_*.h in the source tree")
    for f in ["include/mpicollab/mpi.h", "include/mpicollab/mpi_proto.h"] + [
              "include/mpicollab/" + p for p in protos] + [
              "include/mpicollab/mpix_collab.h", "lib/libmpicollab.so",
              "lib/mpicollab/libmpich.so.12", "lib/mpicollab/libmpi.so.12",
              "lib/pkgconfig/mpicollab.pc", "lib/cmake/mpicollab/mpicollabConfig.cmake"]:
        check(os.path.exists(os.path.join(args.prefix, f)), f"install: {f} missing")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(args.prefix, "lib", "pkgconfig"))
    pc = subprocess.run(["pkg-config", "--cflags", "--libs", "mpicollab"], env=env,
                        capture_output=True, text=True)
    check(pc.returncode == 0, "install: pkg-config does not know mpicollab")
    if pc.returncode != 0:
        return
    exe = os.path.join(args.prefix, "hello_pkgconfig")
    cc = subprocess.run(["cc", "-o", exe, args.source] + pc.stdout.split() +
                        ["-Wl,-rpath," + os.path.join(args.prefix, "lib")],
                        capture_output=True, text=True)
    check(cc.returncode == 0, f"install: compiling against the installed header: {cc.stderr}")
    if cc.returncode == 0:
        r = run([exe], {}, "installed, own header")
        check(r is not None and "hello ok" in r.stdout, "install: the pkg-config build failed")
    if args.exe:
        args.mode, args.libdir, args.expect = "replace", os.path.join(args.prefix, "lib",
                                                                      "mpicollab"), "hello ok"
        cmd_app(args)


def cmd_app(args):
    if args.mode == "preload":
        extra = {"LD_PRELOAD": args.lib}
    else:
        old = os.environ.get("LD_LIBRARY_PATH")
        extra = {"LD_LIBRARY_PATH": args.libdir + (":" + old if old else "")}
    if args.mode == "replace":
        # The binary must resolve MPICH's library to ours.
        l = subprocess.run(["ldd", args.exe], env=env_for(extra), capture_output=True, text=True)
        sys.stdout.write(l.stdout)
        m = re.search(r"\blib(mpich|mpi)\.so\.12 => (\S+)", l.stdout)
        check(m is not None, "replace: ldd shows no libmpich.so.12 / libmpi.so.12")
        if m is not None:
            check(os.path.realpath(m.group(2)).startswith(os.path.realpath(args.libdir)),
                  f"replace: lib{m.group(1)}.so.12 resolves to {m.group(2)}, not to {args.libdir}")
    r = run([args.exe], extra, f"app {args.mode}")
    if r is not None:
        check(r.returncode == 0 and args.expect in r.stdout,
              f"app {args.mode}: exit status {r.returncode}, no '{args.expect}'")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["errors", "inert", "foreign", "app", "install",
                                            "optable"])
    ap.add_argument("--build")
    ap.add_argument("--prefix")
    ap.add_argument("--source")
    ap.add_argument("--exe")
    ap.add_argument("--lib")
    ap.add_argument("--libdir")
    ap.add_argument("--mode", choices=["preload", "replace", "own"])
    ap.add_argument("--expect", default="hello ok", help="line the program prints on success")
    args = ap.parse_args()
    {"errors": cmd_errors, "inert": cmd_inert, "foreign": cmd_foreign, "app": cmd_app,
     "install": cmd_install, "optable": cmd_optable}[args.what](args)
    for f in failures:
        print("FAILED:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
