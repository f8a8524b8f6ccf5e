#!/bin/bash
# SPDX-License-Identifier: MIT
# The loop of death, end to end: a scripted python agent retries the same
# curl against a local server that answers 401, forever. The repeat guard
# (max_repeat_calls 4) must stop it after a few calls, the breaker must trip
# (breaker_trip entry), every later call must be denied with circuit_open,
# no request may reach the server after the trip, and the audit log must
# verify and replay. With the error signal in the call's own arguments
# (error amplification), the limit is one lower.
. "$(dirname "$0")/lib.sh"
setup
require_cmd curl
CURL=$(command -v curl)
CURL=$(readlink -f "$CURL")
start_http401
MAX=4
POL=$(policy loop <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": $MAX, "error_amplification": true, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
ITER=12
run_loop() { # OUTFILE [agent args]
	local out=$1
	shift
	: >"$T/http.log"
	SHK_TIMEOUT=120 shk "$POL" -- "$AGENT_PY" "$IT/agent_loop.py" --curl "$CURL" \
		--url "http://$ALLOWED:$HPORT/v1/chat/completions" --iterations "$ITER" \
		--final-connect "$ALLOWED:$HPORT" --out "$out" "$@"
	show_run
}
count() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(1 for x in r if x.startswith(sys.argv[2])))' "$1" "$2"; }
first_denied() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(next((x for x in r if not x.startswith("http:")), "none"))' "$1"; }

check_loop() { # LABEL RESULTS LIMIT
	local l=$1 r=$2 lim=$3 ok
	if [ ! -s "$r" ]; then
		fail "$l: the agent wrote no results (exit $RC)"
		return
	fi
	note "$l: $(tr -d '[]"' <"$r")"
	ok=$(count "$r" http:401)
	expect_eq "$l: agent exit status" "$RC" 0
	expect_ge "$l: some calls reached the server first" "$ok" 1
	expect_le "$l: curl calls that got through before the guard stopped it" "$ok" "$lim"
	expect_eq "$l: requests the server saw = calls that got through" \
		"$(wc -l <"$T/http.log")" "$ok"
	expect_eq "$l: the first stopped call failed with" "$(first_denied "$r")" exec:EPERM
	expect_eq "$l: every call after the first denial was stopped" \
		"$(count "$r" exec:EPERM)" "$((ITER - ok))"
	expect_eq "$l: the agent's own connect after the trip" "$(count "$r" connect:EPERM)" 1
	expect_decision "$l: that connect denied as circuit_open" 1 verdict=DENY \
		reason=circuit_open tool=net:connect
	expect_decision "$l: max_repeat_exceeded in the audit" 1 verdict=DENY reason=max_repeat_exceeded
	expect_decision "$l: later calls denied as circuit_open" 1 verdict=DENY reason=circuit_open
	expect_decision "$l: circuit_open for curl execs" 1 reason=circuit_open tool=exec:curl
	expect_ge "$l: breaker_trip entry" "$(aq kind=breaker_trip)" 1
	expect_eq "$l: ALLOW decisions after the breaker_trip entry" "$(allowed_after_trip)" 0
	expect_audit_ok "$l"
}

run_loop "$T/plain.json"
check_loop "repeat guard" "$T/plain.json" "$MAX"
plain=$(count "$T/plain.json" http:401)

# The agent feeds the error back into its next call (as agents do): the
# error signal is now in the call's argv, so amplification lowers the limit.
run_loop "$T/amp.json" --header "X-Last-Error: 401 Unauthorized"
check_loop "repeat guard + error amplification" "$T/amp.json" "$((MAX - 1))"
amp=$(count "$T/amp.json" http:401)
expect_le "amplified loop stopped no later than the plain one" "$amp" "$((plain - 1))"
finish
