#!/bin/bash
# SPDX-License-Identifier: MIT
# Budgets, end to end: the same stubborn agent, but every call is different
# (no repeat) and each curl exec costs money (cost_usd on the exec rule).
# Budget 1.0 at 0.375 per exec: exactly 2 execs are released (0.25 left) and
# the 3rd is budget_overrun. Budget 1.0 at 0.25 per exec: exactly 4 execs are
# released, which leaves exactly 0; SP/1.0 Rule 5 then denies *every* call
# (budget_exhausted) — including the 4th curl's own connect (cost 0), so
# only 3 requests reach the server and the 4th curl fails to connect.
# The breaker trips, later calls are circuit_open, the log verifies and
# replays. (Binary-exact costs, so no rounding question arises.)
. "$(dirname "$0")/lib.sh"
setup
require_cmd curl
CURL=$(readlink -f "$(command -v curl)")
start_http401
count() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(1 for x in r if x.startswith(sys.argv[2])))' "$1" "$2"; }
ITER=10
# cost, execs released, requests served, reason of the first denial
for case in "0.25 4 3 budget_exhausted" "0.375 2 2 budget_overrun"; do
	set -- $case
	cost=$1 want=$2 served=$3 reason=$4
	POL=$(policy "budget-$cost" <<JSON
{"version": 1,
 "guard": {"budget_usd": 1.0, "max_repeat_calls": 0, "trip_on_deny": true},
 "exec": {"default": "allow", "rules": [
   {"name": "curl", "tool": "http.fetch", "path": "$CURL", "action": "allow", "cost_usd": $cost}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
	: >"$T/http.log"
	r=$T/result-$cost.json
	SHK_TIMEOUT=120 shk "$POL" -- "$AGENT_PY" "$IT/agent_loop.py" --curl "$CURL" --vary \
		--url "http://$ALLOWED:$HPORT/v1/embeddings" --iterations "$ITER" --out "$r"
	show_run
	l="budget 1.0 at $cost per call"
	if [ ! -s "$r" ]; then
		fail "$l: the agent wrote no results (exit $RC)"
		continue
	fi
	note "$l: $(tr -d '[]"' <"$r")"
	expect_eq "$l: agent exit status" "$RC" 0
	expect_eq "$l: curl execs released (ALLOW http.fetch)" \
		"$(aq kind=decision verdict=ALLOW tool=http.fetch)" "$want"
	expect_eq "$l: calls that got an HTTP answer" "$(count "$r" http:401)" "$served"
	expect_eq "$l: requests the server saw" "$(wc -l <"$T/http.log")" "$served"
	expect_eq "$l: curl that ran but could not connect" "$(count "$r" curl-exit:7)" "$((want - served))"
	expect_eq "$l: calls stopped with EPERM" "$(count "$r" exec:EPERM)" "$((ITER - want))"
	expect_eq "$l: $reason decisions (the trip)" "$(aq kind=decision verdict=DENY reason=$reason)" 1
	expect_decision "$l: later curl execs circuit_open" "$((ITER - want - 1))" verdict=DENY \
		reason=circuit_open tool=http.fetch
	expect_ge "$l: breaker_trip entry" "$(aq kind=breaker_trip)" 1
	expect_eq "$l: ALLOW decisions after the trip" "$(allowed_after_trip)" 0
	expect_audit_ok "$l"
done
finish
