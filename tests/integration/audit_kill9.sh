#!/bin/bash
# SPDX-License-Identifier: MIT
# shackle-run killed with SIGKILL while its agent runs: the audit log has no
# session_end. `shackle audit verify` must say so in plain words, and
# `shackle audit replay` must refuse the log alike with and without
# --pubkey (without it, it said "reproduced", exit 0, where with it it
# refused).
. "$(dirname "$0")/lib.sh"
setup
POL=$(policy kill9 <<JSON
{"version": 1, "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"}, "net": {"default": "deny"}}
JSON
)
SHK_TIMEOUT=30 shk "$POL" -- /bin/sh -c '/bin/true; /bin/true; exec /bin/sleep 25' &
bg=$!
sup=
for _ in $(seq 100); do
	[ -z "$sup" ] && sup=$(pgrep -o -f "^$SHACKLE_RUN .*it-$NAME-1 ")
	grep -q '"tool":"exec:sleep"' "$T/audit-1.jsonl" 2>/dev/null && break
	sleep 0.1
done
if [ -z "$sup" ] || ! grep -q '"tool":"exec:sleep"' "$T/audit-1.jsonl" 2>/dev/null; then
	fail "shackle-run did not start the agent (pid '${sup}')"
	wait "$bg"
	finish
fi
kill -9 "$sup"
wait "$bg"
RUNS=1; LOG=$T/audit-1.jsonl
if grep -q '"kind":"session_end"' "$LOG"; then fail "the log has a session_end after SIGKILL"; fi

"$SHACKLE" audit verify --pubkey "$PUB" "$LOG" >"$T/verify.out" 2>&1
expect_eq "verify of the cut log exits" "$?" 1
if grep -q "session it-$NAME-1 has no session_end: the log was cut (shackle-run killed?); use --live" "$T/verify.out"; then
	pass "verify says the session_end is missing"
else
	fail "verify does not name the missing session_end: $(tr '\n' ' ' <"$T/verify.out")"
fi
"$SHACKLE" audit replay "$LOG" >"$T/r1.out" 2>"$T/r1.err"
expect_eq "replay without --pubkey exits" "$?" 1
"$SHACKLE" audit replay --pubkey "$PUB" "$LOG" >"$T/r2.out" 2>"$T/r2.err"
expect_eq "replay with --pubkey exits" "$?" 1
if cmp -s "$T/r1.err" "$T/r2.err" && grep -q "has no session_end" "$T/r1.err"; then
	pass "replay with and without --pubkey refuse alike: $(cat "$T/r1.err")"
else
	fail "replay with and without --pubkey differ: '$(cat "$T/r1.err")' vs '$(cat "$T/r2.err")'"
fi
if grep -q reproduced "$T/r1.out" "$T/r2.out"; then fail "a replay said reproduced"; fi
finish
