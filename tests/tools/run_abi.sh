# collab-run: MPI ABI detection from the program's DT_NEEDED entries, and
# the LD_PRELOAD / LD_LIBRARY_PATH each ABI and mode gets.
. "$(dirname "$0")/lib.sh"

MPICH_PROG=$CR_TEST_BIN/abi_probe_mpich
OMPI_PROG=$CR_TEST_BIN/abi_probe_ompi
if [ ! -x "$MPICH_PROG" ] || [ ! -x "$OMPI_PROG" ]; then
    echo "abi_probe_mpich / abi_probe_ompi were not built (no mpicc.mpich / mpicc.openmpi)"
    exit 77
fi

# Detected, preload mode (the default).
cr -n 2 --libdir "$FAKE" "$MPICH_PROG"
expect_rc 0
[ "$(count_out '^abi-probe ran$')" = 2 ] || { fail "mpich probe did not run twice"; show; }
[ "$(count_out "^LD_PRELOAD=$FAKE/libmpicollab.so$")" = 2 ] || { fail "mpich: LD_PRELOAD"; show; }
expect_no_err warning

cr -n 2 --libdir "$FAKE" "$OMPI_PROG"
expect_rc 0
[ "$(count_out "^LD_PRELOAD=$FAKE/libmpicollab-ompi.so$")" = 2 ] || { fail "ompi: LD_PRELOAD"; show; }

# Replace mode: our folder first on the library path, nothing preloaded.
cr -n 1 --mode replace --libdir "$FAKE" "$OMPI_PROG"
expect_rc 0
expect_out "^LD_LIBRARY_PATH=$FAKE/mpicollab$"
expect_out "^LD_PRELOAD=$"
LD_LIBRARY_PATH=/opt/theirs cr -n 1 --mode=replace --libdir "$FAKE" "$MPICH_PROG"
expect_rc 0
expect_out "^LD_LIBRARY_PATH=$FAKE/mpicollab:/opt/theirs$"

# The user's own preload stays, after ours.
cp "$FAKE/libmpicollab.so" "$TMP/libtheirs.so"
LD_PRELOAD=$TMP/libtheirs.so cr -n 1 --libdir "$FAKE" "$MPICH_PROG"
expect_rc 0
expect_out "^LD_PRELOAD=$FAKE/libmpicollab.so:$TMP/libtheirs.so$"

# Found through PATH.
PATH=$CR_TEST_BIN:$PATH cr -n 1 --libdir "$FAKE" abi_probe_ompi
expect_rc 0
expect_out "^LD_PRELOAD=$FAKE/libmpicollab-ompi.so$"

# --abi overrides; a contradiction is worth a warning.
cr -n 1 --abi ompi --libdir "$FAKE" "$MPICH_PROG"
expect_rc 0
expect_err "warning: .*abi_probe_mpich links the mpich ABI, but --abi ompi was given"
expect_out "^LD_PRELOAD=$FAKE/libmpicollab-ompi.so$"

# No ABI to detect: scripts, interpreters, static programs.
printf '#!/bin/sh\necho "script ran $COLLAB_RANK"\n' >"$TMP/job.sh"
chmod 755 "$TMP/job.sh"
cr -n 2 --libdir "$FAKE" "$TMP/job.sh"
expect_rc 2
expect_err "cannot tell which MPI ABI $TMP/job.sh uses: it is a script, not an ELF program; pass --abi mpich or --abi ompi"
cr -n 2 --abi mpich --libdir "$FAKE" "$TMP/job.sh"
expect_rc 0
expect_out '^script ran 0$'
expect_out '^script ran 1$'

PY=${CR_TEST_PYTHON:-/usr/bin/python3}
if [ -x "$PY" ]; then
    cr -n 2 --libdir "$FAKE" "$PY" -c 'print(1)'
    expect_rc 2
    expect_err "cannot tell which MPI ABI .* uses: it does not link libmpich.so.12, libmpi.so.12 or libmpi.so.40 directly; pass --abi"
fi

if printf 'int main(void){return 0;}\n' >"$TMP/s.c" && cc -static -o "$TMP/static" "$TMP/s.c" 2>/dev/null; then
    cr -n 1 --libdir "$FAKE" "$TMP/static"
    expect_rc 2
    expect_err "cannot tell which MPI ABI $TMP/static uses: it is statically linked"
else
    echo "(no static C library here: static program case skipped)"
fi

finish
