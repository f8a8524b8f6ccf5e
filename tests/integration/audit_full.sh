#!/bin/bash
# SPDX-License-Identifier: MIT
# The audit log's file system fills up during a run (a 64 KiB tmpfs, in a
# mount namespace of the test's own). Every call after that is denied,
# shackle-run says why (ENOSPC, not a bare EIO) and exits 125 although the
# agent exits 0, and the log never verifies as intact.
. "$(dirname "$0")/lib.sh"
setup
require_root
require_cmd unshare mount
POL=$(policy plain <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
)
mkdir -p "$T/mnt"
# the agent execs /bin/true until one is refused, then says how many ran
unshare -m --propagation private /bin/sh -c '
	mount -t tmpfs -o size=64k shk-full "$1/mnt" || exit 99
	"$2" --policy "$3" --audit "$1/mnt/log.jsonl" --key "$4" --non-interactive -- \
		/bin/sh -c "n=0; while /bin/true; do n=\$((n+1)); done; echo ran \$n"
	rc=$?
	cp "$1/mnt/log.jsonl" "$1/log.jsonl"
	exit $rc' sh "$T" "$SHACKLE_RUN" "$POL" "$KEY" >"$T/out" 2>"$T/err"
RC=$?
show_err() { sed 's/^/# stderr: /' "$T/err"; }
[ "$RC" = 99 ] && skip "cannot mount a tmpfs here"
show_err
ran=$(sed -n 's/^ran \([0-9]*\)$/\1/p' "$T/out")
expect_ge "the agent ran execs before the log filled up (not vacuous)" "${ran:-0}" 10
expect_eq "shackle-run exits 125 after the audit log failed (the agent exited 0)" "$RC" 125
if grep -q 'the audit log failed (No space left on device)' "$T/err"; then
	pass "the error names ENOSPC"
else
	fail "the error names ENOSPC"
fi
decisions=$(grep -c '"kind":"decision"' "$T/log.jsonl")
allowed=$(grep -c '"verdict":"ALLOW"' "$T/log.jsonl")
# every exec that ran has its ALLOW entry (the first is the agent's sh)
expect_ge "every exec that ran is in the log" "$allowed" "$((ran + 1))"
"$SHACKLE" audit verify --pubkey "$PUB" "$T/log.jsonl" >"$T/verify" 2>&1
expect_eq "the log does not verify as intact" "$?" 1
note "decisions logged: $decisions, execs that ran: $ran"
finish
