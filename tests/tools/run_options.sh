# collab-run: command-line checks, error messages and exit statuses.
# Every rejected command must exit 2, say why, and start no peer.
. "$(dirname "$0")/lib.sh"

usage_error() { # usage_error REGEX ARGS...
    local re=$1
    shift
    cr "$@"
    expect_rc 2
    expect_err "^collab-run: error: .*$re"
    expect_no_err " is pid "
}

cr --help
expect_rc 0
expect_out '^usage: collab-run -n N'
expect_out '--chaos SPEC'
cr --version
expect_rc 0
expect_out '^collab-run \(mpicollab\) [0-9]+\.[0-9]+'

usage_error 'the number of peers is required \(-n N\)' "$PROBE" sleep 0
usage_error "-n '0': expected a number of peers from 1 to 1024" -n 0 "$PROBE"
usage_error "-n 'two'" -n two "$PROBE"
usage_error "-n '5000'" -n 5000 "$PROBE"
usage_error "-n needs a number of peers" -n
usage_error 'no program given' -n 2
usage_error 'no program given' -n 2 --abi mpich --
usage_error "unknown option '--bogus'" -n 2 --bogus "$PROBE"
expect_err '^collab-run: see collab-run --help'
usage_error "--abi 'lam': expected mpich or ompi" -n 2 --abi lam "$PROBE"
usage_error "--mode 'inject': expected preload or replace" -n 2 --mode inject "$PROBE"
usage_error "--timeout '0': expected a positive number of seconds" -n 2 --timeout 0 "$PROBE"
usage_error "--timeout 'soon'" -n 2 --timeout soon "$PROBE"
usage_error "--bind 'tight'" -n 2 --bind tight "$PROBE"
usage_error "rank 3 is out of range \(0\.\.2 with -n 3\)" -n 3 --chaos kill:3@1s "$PROBE"
usage_error "rank 5 is out of range" -n 3 --chaos 'kill:1@line:5:x' "$PROBE"
usage_error "bad regular expression 'a\('" -n 3 --chaos 'kill:1@line:0:a(' "$PROBE"
usage_error "unknown action 'explode'" -n 3 --chaos 'explode:1@1s' "$PROBE"
usage_error "stop needs a duration" -n 3 --chaos 'stop:1@1s' "$PROBE"
usage_error "expected a time such as 5s" -n 3 --chaos 'kill:1@tomorrow' "$PROBE"
usage_error "peer \+1 is never started" -n 3 --chaos 'kill:+1@1s' "$PROBE"

# The program must exist and be executable.
usage_error 'no-such-program-xyz: command not found in PATH' -n 2 --abi mpich no-such-program-xyz
usage_error '/nonexistent/prog: No such file or directory' -n 2 --abi mpich /nonexistent/prog
printf 'data\n' >"$TMP/plain"
chmod 644 "$TMP/plain"
usage_error "$TMP/plain: Permission denied" -n 2 --abi mpich "$TMP/plain"
usage_error "$TMP: Is a directory" -n 2 --abi mpich "$TMP"

# The ABI must be known.
printf '#!/bin/sh\necho hi\n' >"$TMP/script.sh"
chmod 755 "$TMP/script.sh"
usage_error "cannot tell which MPI ABI $TMP/script.sh uses: it is a script.*pass --abi mpich or --abi ompi" \
    -n 2 --libdir "$FAKE" "$TMP/script.sh"
usage_error "cannot tell which MPI ABI .*tools_probe uses: it does not link libmpich.so.12, libmpi.so.12 or libmpi.so.40" \
    -n 2 --libdir "$FAKE" "$PROBE"

# The library folder must hold what the mode and ABI need.
mkdir -p "$TMP/emptylib"
usage_error "--libdir /nonexistent/lib: No such file or directory" -n 2 --abi mpich --libdir /nonexistent/lib "$PROBE"
usage_error "--libdir $TMP/emptylib has no libmpicollab.so \(needed for --abi mpich --mode preload\)" \
    -n 2 --abi mpich --libdir "$TMP/emptylib" "$PROBE"
usage_error "has no libmpicollab-ompi.so" -n 2 --abi ompi --libdir "$TMP/emptylib" "$PROBE"
usage_error "has no mpicollab/libmpich.so.12" -n 2 --abi mpich --mode replace --libdir "$TMP/emptylib" "$PROBE"
usage_error "has no mpicollab/libmpi.so.40" -n 2 --abi ompi --mode replace --libdir "$TMP/emptylib" "$PROBE"
cp "$FAKE/libmpicollab.so" "$TMP/emptylib/"
cr -n 1 --abi mpich --libdir "$TMP/emptylib" "$PROBE" sleep 0
expect_rc 0

# Without --libdir: <folder of collab-run>/../lib.
mkdir -p "$TMP/prefix/bin" "$TMP/prefix/lib"
cp "$RUN" "$TMP/prefix/bin/collab-run"
RUN_SAVED=$RUN
RUN=$TMP/prefix/bin/collab-run
usage_error "cannot find libmpicollab.so next to collab-run \(looked in $TMP/prefix/lib\); pass --libdir DIR" \
    -n 1 --abi mpich "$PROBE" sleep 0
cp "$FAKE/libmpicollab.so" "$TMP/prefix/lib/"
cr -n 1 --abi mpich "$PROBE" env 0
expect_rc 0
expect_out "^LD_PRELOAD=$TMP/prefix/lib/libmpicollab.so$"
RUN=$RUN_SAVED

# COLLAB_* variables collab-run would set.
COLLAB_WORLD_SIZE=3 cr -n 2 --abi mpich --libdir "$FAKE" "$PROBE" sleep 0
expect_rc 2
expect_err "COLLAB_WORLD_SIZE=3 in the environment conflicts with -n 2"
COLLAB_WORLD_SIZE=two cr -n 2 --abi mpich --libdir "$FAKE" "$PROBE" sleep 0
expect_rc 2
expect_err "COLLAB_WORLD_SIZE='two' in the environment is not a number"
COLLAB_WORLD_SIZE=2 cr -n 2 --abi mpich --libdir "$FAKE" "$PROBE" sleep 0
expect_rc 0
for v in COLLAB_RANK COLLAB_IDENTITY COLLAB_LISTEN COLLAB_ANNOUNCE; do
    env "$v=x" "$RUN" -n 2 --abi mpich --libdir "$FAKE" "$PROBE" sleep 0 >"$TMP/out" 2>"$TMP/err"
    RC=$?
    LAST_CMD="$v=x collab-run -n 2"
    expect_rc 2
    expect_err "$v is set in the environment, but collab-run starts several peers here"
done
COLLAB_LISTEN=/ip4/127.0.0.1/tcp/1 cr -n 1 --chaos start@1s --abi mpich --libdir "$FAKE" "$PROBE" sleep 0
expect_rc 2
expect_err "COLLAB_LISTEN is set in the environment"

finish
