#!/bin/bash
# SPDX-License-Identifier: MIT
# TOCTOU on network destinations: a second thread (or a second process
# sharing the page) flips the sockaddr between the allowed and the forbidden
# address while the agent calls connect()/sendto() in a loop; for sendmsg()
# on a connected UDP socket it flips the msghdr between no address and the
# forbidden one. A supervisor
# that checks the agent's memory and answers CONTINUE lets the kernel re-read
# the flipped address. Nothing may ever arrive at the forbidden address.
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy race <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "forbidden", "cidr": "$FORBIDDEN/32", "action": "deny"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
R=$(helper shk-race)
ITER=${SHK_RACE_ITER:-3000}

for variant in "connect" "connect --process" "udp" "udp --process" "udpmsg" "udpmsg --process"; do
	set -- $variant
	mode=$1
	shift
	SHK_TIMEOUT=200 shk "$POL" -- "$R" "$mode" "$ALLOWED" "$LPORT" "$FORBIDDEN" "$LPORT" "$ITER" "$@"
	show_run
	line=$(tail -n 1 "$OUT")
	allowed=$(sed -n 's/.*allowed=\([0-9]*\).*/\1/p' <<<"$line")
	breach=$(sed -n 's/.*breach=\([0-9]*\).*/\1/p' <<<"$line")
	expect_eq "$variant: agent-side breaches (connected to the forbidden peer)" "${breach:-missing}" 0
	expect_ge "$variant: allowed calls went through (the race is not vacuous)" "${allowed:-0}" 1
	expect_in "$variant: exit status" "$RC" 0
	expect_no_arrival "$variant" "$FORBIDDEN"
	expect_audit_ok "$variant"
done
finish
