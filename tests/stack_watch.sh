# stack_watch.sh - records where the processes of a hung test are stuck
# (sourced by tests/coll/run_test.sh and tests/e2e/lib.sh, not run).

# stack_watch PID SECONDS FILE: if PID still runs after SECONDS, writes the
# stacks of every process below it to FILE (checking once a second, so it
# ends with PID).
stack_watch() {
    local pid=$1 after=$2 file=$3 i p
    exec >/dev/null 2>&1
    for ((i = 0; i < after; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 1
    done
    for p in $(descendants "$pid"); do
        case "$(cat /proc/"$p"/comm 2>/dev/null)" in timeout | collab-run) continue ;; esac
        {
            echo "===== pid $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)"
            timeout 20 gdb -p "$p" -batch -ex 'thread apply all bt' 2>&1 | grep -E '^(#|Thread)'
        } >>"$file"
    done
}

descendants() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}
