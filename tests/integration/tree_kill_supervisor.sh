#!/bin/bash
# SPDX-License-Identifier: MIT
# Killing the supervisor must not open a door. The agent (root, like its
# supervisor here) sends SIGKILL to the shackle-run process, then keeps
# trying a forbidden connect and a forbidden exec for 3 s. Acceptable: the
# kill is refused and the attempts stay denied; or the supervisor dies and
# the agent dies with it at once. Never: a forbidden call that goes through,
# or an agent that keeps running unsupervised.
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy kill <<JSON
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
# Twice: as shackle-run's default user (nobody when the tests run as root)
# and as root, the strongest agent.
for U in "" 0; do
	export SHK_USER=$U
	note "agent user: ${U:-shackle-run default}"
	(
		for i in $(seq 200); do
			p=$(pgrep -o -f "^$SHACKLE_RUN .*it-$NAME-$((RUNS + 1)) " 2>/dev/null) && [ -n "$p" ] &&
				{ echo "$p" >"$T/sup$U.pid"; exit 0; }
			sleep 0.05
		done
	) &
	BG_PIDS+=($!)
	SHK_TIMEOUT=30 shk "$POL" -- "$E" kill-supervisor "$T/sup$U.pid" "$FORBIDDEN" "$LPORT" "$T/MARK$U" "$T/agent$U.log"
	show_run
	echo "--- agent log:"
	cat "$T/agent$U.log" 2>/dev/null
	kill_res=$(sed -n 's/^kill=//p' "$T/agent$U.log" 2>/dev/null)
	[ -n "$kill_res" ] || fail "the agent never attempted the kill (no supervisor pid?)"
	expect_absent "forbidden exec never ran" "$T/MARK$U"
	expect_no_arrival "after the kill attempt" "$FORBIDDEN"
	if grep -q '^connect=OK' "$T/agent$U.log" 2>/dev/null; then
		fail "a forbidden connect succeeded after the kill attempt"
	fi
	if grep -q '^exec=ran' "$T/agent$U.log" 2>/dev/null; then
		fail "a forbidden exec ran after the kill attempt"
	fi
	case "$kill_res" in
	OK)
		note "the agent could kill its supervisor; checking that it died with it"
		if grep -q SURVIVED "$T/agent$U.log"; then
			fail "supervisor killed, agent kept running for 3 s (unsupervised)"
		fi
		n=$(grep -c -E '^(connect|exec)=' "$T/agent$U.log")
		expect_le "calls the agent made after killing its supervisor" "$n" 2
		if grep -q -E '^(connect|exec)=ENOSYS' "$T/agent$U.log"; then
			note "the agent saw ENOSYS (no listener) before dying: fail-closed but not killed first"
		fi
		;;
	EPERM | EACCES)
		pass "the kill was refused ($kill_res)"
		expect_eq "forbidden connects after the refused kill" \
			"$(grep '^connect=' "$T/agent$U.log" | sort -u | tr '\n' ' ')" "connect=EPERM "
		expect_eq "agent exit status" "$RC" 0
		expect_audit_ok
		;;
	*) fail "kill attempt: '$kill_res'" ;;
	esac
	# The whole tree is gone after shackle-run returned.
	sleep 0.5
	AGENT_RE="^$E kill-supervisor $T/"
	if pgrep -f "$AGENT_RE" >/dev/null; then
		fail "agent processes still alive after shackle-run returned: $(pgrep -f "$AGENT_RE" | tr '\n' ' ')"
		for p in $(pgrep -f "$AGENT_RE"); do kill -9 "$p"; done
	else
		pass "no agent process left"
	fi
done
finish
