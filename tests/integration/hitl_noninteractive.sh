#!/bin/bash
# SPDX-License-Identifier: MIT
# With --non-interactive there is no human: a call whose verdict is HITL (a
# "hitl" rule, or hitl_mode "always") must be blocked at once (SP/1.0 §3.4:
# never downgraded to ALLOW), with EPERM for the agent and an audit entry
# that says HITL or DENY — never ALLOW.
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy hitl-rule <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "ask-touch", "path": "/usr/bin/touch", "action": "hitl"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "ask-forbidden", "cidr": "$FORBIDDEN/32", "action": "hitl"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
X=$(helper shk-exec)
N=$(helper shk-netprobe)
cat >"$T/agent.sh" <<SH
echo "exec \$("$X" plain /usr/bin/touch "$T/MARK")"
echo "connect \$("$N" connect $FORBIDDEN $LPORT)"
echo "allowed \$("$N" connect $ALLOWED $LPORT)"
SH
shk "$POL" -- /bin/sh "$T/agent.sh"
show_run
get() { awk -v l="$1" '$1 == l {print $2; exit}' "$OUT"; }
expect_eq "hitl rule, exec: errno" "$(get exec)" EPERM
expect_absent "hitl rule, exec: did not run" "$T/MARK"
expect_eq "hitl rule, connect: errno" "$(get connect)" EPERM
expect_eq "allowed connect still works" "$(get allowed)" OK
expect_no_arrival "hitl connect" "$FORBIDDEN"
expect_no_decision "no ALLOW for the held exec" tool=exec:touch verdict=ALLOW
expect_no_decision "no ALLOW for the held connect" tool=net:connect params.addr=$FORBIDDEN verdict=ALLOW
expect_decision "the exec's verdict is recorded" 1 tool=exec:touch
note "exec verdict/reason: $(aq kind=decision tool=exec:touch --field verdict) / $(aq kind=decision tool=exec:touch --field reason)"
expect_audit_ok

POL2=$(policy hitl-always <<JSON
{"version": 1,
 "guard": {"hitl_mode": "always", "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
)
shk "$POL2" -- /bin/true
show_run
expect_ne "hitl_mode always: the command is not run" "$RC" 0
expect_no_decision "hitl_mode always: nothing allowed" verdict=ALLOW
expect_decision "hitl_mode always: hitl_all_calls recorded" 1 reason=hitl_all_calls
expect_audit_ok "hitl_mode always"
finish
