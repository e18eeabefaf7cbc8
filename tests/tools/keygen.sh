# collab-keygen: creates identity files (0600), prints the peer id and the
# join line, never overwrites without --force, and refuses unsafe files.
. "$(dirname "$0")/lib.sh"

KG=$CR_TEST_KEYGEN
kg() {
    "$KG" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    RC=$?
    ELAPSED=?
    LAST_CMD="collab-keygen $*"
}

kg "$TMP/a.key"
expect_rc 0
[ "$(stat -c %a "$TMP/a.key")" = 600 ] || fail "mode $(stat -c %a "$TMP/a.key"), expected 600"
expect_out '^peer id: [1-9A-HJ-NP-Za-km-z]{32,44}$'
ID=$(sed -n 's/^peer id: //p' "$TMP/out")
expect_out "^COLLAB_INITIAL_PEERS=/ip4/<your public ip>/tcp/<port>/p2p/$ID$"
expect_out "COLLAB_IDENTITY=$TMP/a.key"
grep -q "peer-id = \"$ID\"" "$TMP/a.key" || fail "the file does not hold peer id $ID"

# --show reads it back; the id is stable.
kg --show "$TMP/a.key"
expect_rc 0
expect_out "^peer id: $ID$"

# Never overwritten without --force.
cp "$TMP/a.key" "$TMP/a.copy"
kg "$TMP/a.key"
expect_rc 1
expect_err "a.key already exists; use --force to replace it"
cmp -s "$TMP/a.key" "$TMP/a.copy" || fail "the file changed without --force"

kg --force "$TMP/a.key"
expect_rc 0
NEW=$(sed -n 's/^peer id: //p' "$TMP/out")
[ -n "$NEW" ] && [ "$NEW" != "$ID" ] || fail "--force kept peer id $ID"
[ "$(stat -c %a "$TMP/a.key")" = 600 ] || fail "mode after --force: $(stat -c %a "$TMP/a.key")"
[ "$(find "$TMP" -name 'a.key.new.*' | wc -l)" = 0 ] || fail "--force left temporary files"
kg --show "$TMP/a.key"
expect_out "^peer id: $NEW$"

# Unsafe or unusable files.
chmod 644 "$TMP/a.key"
kg --show "$TMP/a.key"
expect_rc 1
expect_err '^collab-keygen: .*a\.key'
kg --show "$TMP/missing.key"
expect_rc 1
expect_err 'missing.key does not exist'
mkdir "$TMP/dir.key"
kg --force "$TMP/dir.key"
expect_rc 1
expect_err 'is not a regular file'
kg "$TMP/no/such/dir/x.key"
expect_rc 1
expect_err '^collab-keygen: '
[ -e "$TMP/no" ] && fail "created folders on the way"

# --swarm-key: 32 random bytes as 64 hex digits, mode 0600, accepted by
# COLLAB_SWARM_KEY_FILE's rules; never overwritten without --force.
kg --swarm-key "$TMP/swarm.key"
expect_rc 0
expect_out "COLLAB_SWARM_KEY_FILE=$TMP/swarm.key"
[ "$(stat -c %a "$TMP/swarm.key")" = 600 ] || fail "swarm key mode $(stat -c %a "$TMP/swarm.key")"
grep -qxE '[0-9a-f]{64}' "$TMP/swarm.key" || fail "the swarm key is not 64 hex digits"
[ "$(wc -c <"$TMP/swarm.key")" = 65 ] || fail "the swarm key file is not 64 digits and a newline"
cp "$TMP/swarm.key" "$TMP/swarm.copy"
kg --swarm-key "$TMP/swarm.key"
expect_rc 1
expect_err 'swarm.key already exists; use --force'
cmp -s "$TMP/swarm.key" "$TMP/swarm.copy" || fail "the swarm key changed without --force"
kg --swarm-key --force "$TMP/swarm.key"
expect_rc 0
cmp -s "$TMP/swarm.key" "$TMP/swarm.copy" && fail "--force kept the old swarm key"
[ "$(stat -c %a "$TMP/swarm.key")" = 600 ] || fail "mode after --force"
[ "$(find "$TMP" -name 'swarm.key.new.*' | wc -l)" = 0 ] || fail "--swarm-key left temporary files"
kg --swarm-key --show "$TMP/swarm.key"
expect_rc 2

# Usage errors.
kg
expect_rc 2
expect_err 'FILE is required'
kg --bogus "$TMP/b.key"
expect_rc 2
expect_err "unknown option '--bogus'"
kg "$TMP/b.key" "$TMP/c.key"
expect_rc 2
expect_err 'one FILE only'
kg --force --show "$TMP/a.key"
expect_rc 2
kg -- "$TMP/-dash.key"
expect_rc 0
[ -f "$TMP/-dash.key" ] || fail "-- FILE not honoured"
kg --help
expect_rc 0
expect_out '^usage: collab-keygen'

finish
