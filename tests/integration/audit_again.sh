#!/bin/bash
# SPDX-License-Identifier: MIT
# Running twice with the same --audit LOG (shackle-run and shackle attach):
# the second session is appended,
# signed with the key kept beside the log (LOG.key, 0600, the invoker's),
# and the log with both verifies and replays. A key file of another owner
# or with wider permissions, another key, a device as the log, and a full
# disk are refused clearly, leaving nothing behind.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd unshare mount
setup
POL=$(plain_policy)
cd "$T" || exit 1
export HOME=$T
A=$T/again.jsonl
run() { # LOG [ARGS...] -- CMD...
	local log=$1
	shift
	timeout 60 "$SHACKLE_RUN" --policy "$POL" --audit "$log" --non-interactive "$@" \
		>"$T/r.out" 2>"$T/r.err"
	RC=$?
}
run "$A" -- /bin/echo first
expect_eq "first run" "$RC" 0
expect_eq "... LOG.key is the invoker's, mode 0600" "$(stat -c '%u %a' "$A.key")" "0 600"
expect_eq "... LOG.pub is written" "$(head -n 1 "$A.pub")" shackle-ed25519-public-v1
run "$A" -- /bin/echo second
expect_eq "second run with the same --audit" "$RC" 0
expect_eq "... nothing said" "$(cat "$T/r.err")" ""
expect_eq "... two sessions in the log" "$(grep -c '"kind":"session_start"' "$A")" 2
"$SHACKLE" audit verify --pubkey "$A.pub" "$A" >"$T/v.out" 2>&1
expect_eq "... verify accepts both sessions" "$?" 0
grep -q ' 2 session(s)' "$T/v.out" && pass "... verify counts 2 sessions" || fail "verify: $(cat "$T/v.out")"
"$SHACKLE" audit replay "$A" >"$T/rp.out" 2>&1
expect_eq "... replay accepts both sessions" "$?" 0

# the key beside the log must be private and the invoker's
chmod 644 "$A.key"
run "$A" -- /bin/true
expect_eq "LOG.key with mode 0644: refused" "$RC" 125
grep -q "$A.key: mode 0644" "$T/r.err" && pass "... the error names the key and its mode" ||
	fail "... error: $(cat "$T/r.err")"
chmod 600 "$A.key"
chown 65534 "$A.key"
run "$A" -- /bin/true
expect_eq "LOG.key owned by another user: refused" "$RC" 125
grep -q "$A.key: owned by uid 65534" "$T/r.err" && pass "... the error names the owner" ||
	fail "... error: $(cat "$T/r.err")"
chown 0 "$A.key"
# another key than the one that signed the log
run "$A" --key "$KEY" -- /bin/true
expect_eq "another --key for a log signed by LOG.key: refused" "$RC" 125
grep -q "its sessions are signed by key" "$T/r.err" && pass "... the error says which key signed it" ||
	fail "... error: $(cat "$T/r.err")"
expect_eq "... the log is unchanged" "$(grep -c '"kind":"session_start"' "$A")" 2
# a log of the keygen key is continued with it, and nothing is written beside it
run "$T/k.jsonl" --key "$KEY" -- /bin/true
run "$T/k.jsonl" --key "$KEY" -- /bin/true
expect_eq "--key: the second run appends" "$RC" 0
expect_absent "--key: no LOG.key" "$T/k.jsonl.key"
expect_absent "--key: no LOG.pub" "$T/k.jsonl.pub"
LOG=$T/k.jsonl
expect_audit_ok "--key, run twice"

# shackle attach takes the same defaults: the key beside the log, a log
# given again continued, and without --audit the state directory
CG=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)/shk-it-again-$$
if mkdir "$CG" 2>/dev/null; then
	attach() { timeout 30 "$SHACKLE" attach --cgroup "$CG" --policy "$POL" --duration 1 \
		--non-interactive "$@" >"$T/at.out" 2>"$T/at.err"; }
	attach --audit "$T/at.jsonl"
	expect_eq "attach without --key" "$?" 0
	attach --audit "$T/at.jsonl"
	expect_eq "attach again with the same --audit" "$?" 0
	expect_eq "... LOG.key beside it, 0600" "$(stat -c %a "$T/at.jsonl.key" 2>/dev/null)" 600
	"$SHACKLE" audit verify --pubkey "$T/at.jsonl.pub" "$T/at.jsonl" >"$T/atv.out" 2>&1
	expect_eq "... both sessions verify" "$?$(grep -o ' 2 session(s)' "$T/atv.out")" "0 2 session(s)"
	sid=it-again-$$-$RANDOM
	attach --session "$sid"
	expect_eq "attach without --audit" "$?" 0
	expect_eq "... the log is in the state directory" \
		"$(ls /var/lib/shackle/audit-"$sid".jsonl* 2>/dev/null | wc -l)" 3
	rm -f /var/lib/shackle/audit-"$sid".jsonl /var/lib/shackle/audit-"$sid".jsonl.key \
		/var/lib/shackle/audit-"$sid".jsonl.pub
	rmdir "$CG"
else
	fail "cannot make a cgroup for shackle attach"
fi

# not a regular file: refused, nothing created
run /dev/full -- /bin/true
expect_eq "--audit /dev/full: refused" "$RC" 125
grep -q "/dev/full: a character device, not a file" "$T/r.err" && pass "... says why" ||
	fail "... error: $(cat "$T/r.err")"
expect_absent "... no /dev/full.pub" /dev/full.pub
expect_absent "... no /dev/full.key" /dev/full.key

# a full disk: ENOSPC named, nothing left behind, the next run works
mkdir -p "$T/mnt"
unshare -m --propagation private /bin/sh -c '
	mount -t tmpfs -o size=16k shk-full "$1/mnt" || exit 99
	dd if=/dev/zero of="$1/mnt/fill" bs=1k count=64 2>/dev/null
	"$2" --policy "$3" --audit "$1/mnt/log.jsonl" --non-interactive -- /bin/true 2>"$1/full.err"
	echo "rc $?"
	ls -A "$1/mnt"
	rm -f "$1/mnt/fill"
	"$2" --policy "$3" --audit "$1/mnt/log.jsonl" --non-interactive -- /bin/true 2>>"$1/full.err"
	echo "after $?"
	ls -A "$1/mnt"' sh "$T" "$SHACKLE_RUN" "$POL" >"$T/full.out"
[ "$?" = 99 ] && skip "cannot mount a tmpfs here"
cat "$T/full.out" "$T/full.err" | sed 's/^/# /'
expect_eq "full disk: refused" "$(sed -n 's/^rc //p' "$T/full.out")" 125
grep -q "No space left on device" "$T/full.err" && pass "... the error names ENOSPC" ||
	fail "... error: $(cat "$T/full.err")"
expect_eq "... only the filler is left" "$(sed -n '2p' "$T/full.out")" fill
expect_eq "... after space is freed the next run works" "$(sed -n 's/^after //p' "$T/full.out")" 0
expect_eq "... and leaves the log, its key and .pub" "$(tail -n 3 "$T/full.out" | tr '\n' ' ')" \
	"log.jsonl log.jsonl.key log.jsonl.pub "
finish
