# collab-run: lines of concurrent peers never mix, tagged or not; stdout
# and stderr stay apart.  Each peer writes every line in three pieces with
# pauses, so pieces of different peers reach collab-run interleaved.
. "$(dirname "$0")/lib.sh"

N=4
LINES=200 # per peer: every tenth goes to stderr
cr -n $N --abi mpich --libdir "$FAKE" --tag-output "$PROBE" lines $LINES
expect_rc 0
X=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
# Every stdout line is whole and tagged with its own rank, in order.
bad=$(awk -v x="$X" -v n=$N '
    { if (match($0, /^\[[0-9]+\] rank [0-9]+ line [0-9]+ x+ end$/) == 0) { print "malformed: " $0; next }
      split($0, f, " "); tag = substr(f[1], 2, length(f[1]) - 2)
      if (tag != f[3]) { print "wrong tag: " $0; next }
      if (f[6] != x) { print "mangled: " $0; next }
      if ((tag in last) && f[5] + 0 <= last[tag]) print "out of order: " $0
      last[tag] = f[5] + 0; count[tag]++ }
    END { for (r = 0; r < n; r++) if (count[r] != 180) print "rank " r ": " count[r] " lines" }' "$TMP/out")
[ -z "$bad" ] || { fail "tagged stdout: $(echo "$bad" | head -5)"; show; }
# stderr: the peers' lines (tagged) and collab-run's own, never mixed.
bad=$(grep -v '^collab-run: ' "$TMP/err" | awk -v n=$N '
    { if (match($0, /^\[[0-9]+\] rank [0-9]+ err [0-9]+ x+ end$/) == 0) { print "malformed: " $0; next }
      split($0, f, " "); tag = substr(f[1], 2, length(f[1]) - 2)
      if (tag != f[3]) print "wrong tag: " $0; count[tag]++ }
    END { for (r = 0; r < n; r++) if (count[r] != 20) print "rank " r ": " count[r] " stderr lines" }')
[ -z "$bad" ] || { fail "tagged stderr: $(echo "$bad" | head -5)"; show; }

# Untagged: the same lines, whole, without prefixes.
cr -n $N --abi mpich --libdir "$FAKE" "$PROBE" lines $LINES
expect_rc 0
bad=$(awk -v n=$N '
    { if (match($0, /^rank [0-9]+ line [0-9]+ x+ end$/) == 0) { print "malformed: " $0; next }
      count[$2]++ }
    END { for (r = 0; r < n; r++) if (count[r] != 180) print "rank " r ": " count[r] " lines" }' "$TMP/out")
[ -z "$bad" ] || { fail "untagged stdout: $(echo "$bad" | head -5)"; show; }
n=$(grep -Ec '^rank [0-9]+ err [0-9]+ x+ end$' "$TMP/err")
[ "$n" = $((N * 20)) ] || { fail "untagged stderr: $n whole lines"; show; }
[ "$(grep -vc -e '^collab-run: ' -e '^rank [0-9]* err ' "$TMP/err")" = 0 ] ||
    { fail "untagged stderr has mixed lines"; show; }

# Started peers are tagged too.
cr -n 1 --abi mpich --libdir "$FAKE" --tag-output --chaos start@0s --chaos start:0@0s "$PROBE" lines 3
expect_rc 0
[ "$(count_out '^\[\+1\] rank \? line [0-9]+ ')" = 3 ] || { fail "peer +1 tags"; show; }
[ "$(count_out '^\[0\] rank 0 line [0-9]+ ')" = 6 ] || { fail "started rank 0 tags"; show; }

finish
