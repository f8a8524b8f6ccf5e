#!/bin/bash
# SPDX-License-Identifier: MIT
# The supervisor dies (SIGKILL from outside, as an OOM killer or an operator
# would): the agent's whole tree — including a setsid double-forked
# grandchild — must die with it at once. It must not carry on with ENOSYS
# answers (no listener) or, worse, unsupervised. Checked: no process of the
# tree survives 1 s (5 s for a task in uninterruptible sleep), at most the
# calls already in flight are logged after the kill, no forbidden call succeeds, and the audit log up to the kill is
# intact (verify may only report the unsigned tail, never a modification).
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy death <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-touch", "path": "/usr/bin/touch", "action": "deny"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
E=$(helper shk-escape)
for U in "" 0; do
	export SHK_USER=$U
	l=$T/persist$U.log
	note "agent user: ${U:-shackle-run default}"
	SHK_TIMEOUT=30 shk "$POL" -- "$E" persist "$FORBIDDEN" "$LPORT" "$T/MARK$U" "$l" 8 &
	bg=$!
	n=0
	for i in $(seq 100); do
		n=$(grep -c 'pid=' "$l" 2>/dev/null)
		[ "${n:-0}" -ge 2 ] && break
		sleep 0.1
	done
	[ "${n:-0}" -ge 2 ] || fail "agent and grandchild did not both start"
	sleep 0.5
	sup=$(pgrep -o -f "^$SHACKLE_RUN .*it-$NAME-$((RUNS + 1)) ")
	if [ -z "$sup" ]; then
		fail "shackle-run process not found"
		wait "$bg"
		continue
	fi
	kill -9 "$sup"
	at_kill=$(wc -l <"$l")
	sleep 1
	after=$(( $(wc -l <"$l") - at_kill ))
	wait "$bg"
	RUNS=$((RUNS + 1)); LOG=$T/audit-$RUNS.jsonl; OUT=$T/out-$RUNS; ERR=$T/err-$RUNS
	for who in agent grandchild; do
		p=$(sed -n "s/^$who pid=//p" "$l")
		# SIGKILL cannot interrupt a task in uninterruptible sleep (a
		# write to the log under heavy I/O on a loaded CI machine): allow
		# it up to 4 s more to go, and say how long it took
		k=0 seen=
		while pid_alive "$p" && [ $k -lt 40 ]; do
			# what it was doing, for the report below (it may be gone by then)
			seen="$(grep -E '^(State|PPid|TracerPid|SigPnd|ShdPnd)' "/proc/$p/status" 2>/dev/null |
				tr '\n' ' ') wchan=$(cat "/proc/$p/wchan" 2>/dev/null) stack=$(tr '\n' '|' \
				<"/proc/$p/stack" 2>/dev/null)"
			sleep 0.1
			k=$((k + 1))
		done
		if pid_alive "$p"; then
			fail "$who ($p) still alive 5 s after the supervisor died"
			note "$who, last seen: $seen"
			kill -9 "$p"
		else
			pass "$who died with the supervisor (checked 1 s after it, then $((k * 100)) ms more)"
		fi
	done
	expect_le "lines logged after the kill (calls in flight only)" "$after" 4
	if grep -q SURVIVED "$l"; then fail "the agent ran to its end unsupervised"; fi
	if grep -q 'connect=OK' "$l"; then fail "a forbidden connect succeeded"; fi
	if grep -q 'connect=ENOSYS\|exec=ENOSYS' "$l"; then
		note "ENOSYS seen after the supervisor died: $(grep -c ENOSYS "$l") time(s)"
	fi
	expect_absent "forbidden exec never ran" "$T/MARK$U"
	expect_no_arrival "supervisor death" "$FORBIDDEN"
	if "$SHACKLE" audit verify --pubkey "$PUB" "$LOG" >"$T/verify$U.out" 2>&1; then
		pass "audit log verifies after the supervisor's death"
	else
		v=$(tr '\n' ' ' <"$T/verify$U.out")
		case "$v" in
		*modif* | *insert* | *reorder* | *"wrong key"*) fail "audit log after the supervisor's death: $v" ;;
		*) note "audit verify after SIGKILL of the supervisor (expected class of damage): $v" ;;
		esac
	fi
	echo "--- agent log (tail):"
	tail -n 6 "$l"
done
finish
