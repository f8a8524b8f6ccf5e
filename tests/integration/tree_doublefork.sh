#!/bin/bash
# SPDX-License-Identifier: MIT
# Process-group escapes: the agent's grandchild calls setsid() and is
# reparented after a double fork. It must stay supervised (its forbidden
# connect is denied) and must not outlive the session (killed or otherwise
# accounted for when shackle-run returns).
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy tree <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
E=$(helper shk-escape)
SHK_TIMEOUT=40 shk "$POL" -- "$E" doublefork "$T/gc.pid" "$T/gc.result" "$FORBIDDEN" "$LPORT"
show_run
expect_eq "exit status of the agent" "$RC" 0
expect_eq "agent output" "$(answer)" agent-exits
gc=$(head -n 1 "$T/gc.pid" 2>/dev/null)
[ -n "$gc" ] || fail "grandchild did not report its pid"
expect_eq "grandchild's forbidden connect" "$(sed -n 's/^connect=//p' "$T/gc.result" 2>/dev/null)" EPERM
expect_le "shackle-run did not wait for the grandchild's 30 s sleep (s)" "$ELAPSED" 25
alive=1
for i in $(seq 20); do
	pid_alive "$gc" || { alive=0; break; }
	sleep 0.1
done
if [ "$alive" = 1 ]; then
	fail "setsid+double-fork grandchild $gc still alive after the session ended"
	kill -9 "$gc" 2>/dev/null
else
	pass "grandchild $gc is gone after the session"
fi
expect_no_arrival "grandchild" "$FORBIDDEN"
n=$(aq kind=session_end)
expect_eq "one session_end entry" "$n" 1
expect_ge "session_end accounts for the grandchild killed at the end (counters.killed_at_end)" \
	"$(aq kind=session_end --field counters.killed_at_end)" 1
expect_audit_ok
finish
