# SPDX-License-Identifier: MIT
# Shared by the agent scenarios (agent_cli.sh, agent_loop_gateway.sh,
# hitl_shared.sh, gateway_unauth.sh): the
# scripted model (claude_double.py) and what is read from its stats and the
# audit log. Source after lib.sh and setup.
DP=
start_double() { # SCRIPT ARGS...: the model, on a fresh port, with its own stats
	[ -n "$DP" ] && kill "$DPID" 2>/dev/null
	STATS=$T/stats-$RUNS-$1
	: >"$STATS"
	"$PY" "$IT/claude_double.py" "$@" --stats "$STATS" >"$T/double.port" 2>"$T/double.err" &
	DPID=$!
	wait_file "$T/double.port" 50 && DP=$(head -n 1 "$T/double.port")
	[ -n "$DP" ] || { cat "$T/double.err"; fail "the model double did not start"; finish; }
	: >"$T/double.port"
}
served() { wc -l <"$STATS"; }
# gateway_policy NAME BUDGET REPEAT [MODELS_EXTRA]: everything allowed to
# exec, nothing to connect, the model priced and served by the double
gateway_policy() {
	policy "$1" <<JSON
{"version": 1,
 "guard": {"budget_usd": $2, "max_repeat_calls": $3, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny"},
 "models": {"prices": [{"model": "claude-*", "input": 3, "output": 15}],
            "upstream": {"anthropic": "http://127.0.0.1:$DP"}${4:+, $4}}}
JSON
}
# seconds from the first refusal (FILTER) to the end of the session
exit_after() {
	"$PY" - "$LOG" "$@" <<'PYEOF'
import json, sys
log, tool, verdict = sys.argv[1], sys.argv[2], "DENY"
t_deny = t_end = None
for line in open(log, encoding="utf-8"):
    e = json.loads(line)
    if e.get("kind") == "decision" and e.get("verdict") == verdict and \
            str(e.get("tool", "")).startswith(tool) and t_deny is None:
        t_deny = e["time_ns"]
    if e.get("kind") == "session_end":
        t_end = e["time_ns"]
print("none" if t_deny is None or t_end is None else "%.1f" % ((t_end - t_deny) / 1e9))
PYEOF
}
within_10s() { # DESC SECONDS
	if [ "$2" != none ] && awk -v s="$2" 'BEGIN { exit !(s <= 10) }'; then pass "$1 ($2 s)"; else
		fail "$1: $2 s"; fi
}

