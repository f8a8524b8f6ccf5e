#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/floor_supervisor --entry-bytes: the evidence floor of the performance
# driver writes one chained entry of N bytes per notified call, and
# --check-chain accepts that log and nothing altered. The floor is a lower
# bound only if it does the work it claims: every call a line, every line
# hashed and linked to the one before.
. "$(dirname "$0")/lib.sh"

require_root
setup
FLOOR=$BLD/bench/floor_supervisor
LOOPS=$BLD/bench/bench_supervise_loops
[ -x "$FLOOR" ] && [ -x "$LOOPS" ] || skip "bench/floor_supervisor or bench_supervise_loops is not built"

# chain_of LOG N K: --check-chain verifies LOG as K entries or more of N bytes
chain_of() {
	local out k
	out=$("$FLOOR" --check-chain "$1")
	k=$(sed -n "s/.*chain verified: \([0-9]*\) entries of $2 bytes$/\1/p" <<<"$out")
	[ -n "$k" ] && [ "$k" -ge "$3" ] && [ "$(wc -c <"$1")" = $((k * $2)) ]
}

# execs under the exec floor: the shell's own exec and its children's
"$FLOOR" --log "$T/exec.log" --entry-bytes 300 --exec-stop --set shackle -- \
	/bin/sh -c '/bin/true; /bin/true; /bin/true; :' && chain_of "$T/exec.log" 300 4 &&
	pass "exec floor: one 300-byte chained entry per exec" ||
	fail "exec floor: $("$FLOOR" --check-chain "$T/exec.log" 2>&1)"

# connects under the kernel-verified floor, the driver's floor-verify-entry
if "$FLOOR" --log "$T/net.log" --entry-bytes 957 --verify -- "$LOOPS" connect 20 >"$T/net.out" &&
	chain_of "$T/net.log" 957 20; then
	pass "connect floor: 20 connects, 20 or more 957-byte chained entries"
else
	fail "connect floor: $(cat "$T/net.out"; "$FLOOR" --check-chain "$T/net.log" 2>&1)"
fi

# the hash is SHA-256 of the line without its hash member, by another tool
line=$(sed -n 2p "$T/exec.log")
body=${line%%,\"hash\":*}
want=$(printf '%s}' "$body" | sha256sum | cut -d' ' -f1)
[ "${line#*\"hash\":\"}" = "$want\"}" ] && pass "sha256sum agrees with the hash of line 2" ||
	fail "line 2: hash is not sha256sum's $want: $line"
prev=$(sed -n 1p "$T/exec.log")
[ "${line#*\"prev_hash\":\"}" != "$line" ] && [ "${line:41:64}" = "${prev: -66:64}" ] &&
	pass "line 2's prev_hash is line 1's hash" || fail "line 2 does not link to line 1"

# altered logs: one byte of a line, a line left out, a line repeated
sed '2s/x"/y"/' "$T/exec.log" >"$T/byte.log"
sed 2d "$T/exec.log" >"$T/gap.log"
sed '2p' "$T/exec.log" >"$T/dup.log"
for f in byte gap dup; do
	out=$("$FLOOR" --check-chain "$T/$f.log")
	[ $? = 1 ] && [[ "$out" == *"line "[23]" breaks the chain"* ]] &&
		pass "--check-chain refuses the $f log: $out" || fail "--check-chain took the $f log: $out"
done
: >"$T/empty.log"
"$FLOOR" --check-chain "$T/empty.log" >/dev/null && fail "--check-chain took an empty log" ||
	pass "--check-chain refuses an empty log"
"$FLOOR" --log "$T/small.log" --entry-bytes 190 -- /bin/true 2>/dev/null
[ $? = 2 ] && pass "--entry-bytes below the template's 191 bytes is refused" ||
	fail "--entry-bytes 190 was taken"
finish
