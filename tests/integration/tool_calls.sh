#!/bin/bash
# SPDX-License-Identifier: MIT
# Tool-call identity at syscall level (docs/decide.md, "Tool calls at
# syscall level"), end to end under shackle-run:
# 1. a tool (a shell script the agent runs three times with different
#    arguments) runs the same helpers with identical argv more often than
#    max_repeat_calls (3) each time (4): it is not stopped, and every helper's
#    decision names the decision of the tool's exec; the same top-level
#    exec in a loop is still stopped after max_repeat_calls;
# 2. a connect loop to one address under a rule with "repeat_guard": false
#    is not stopped by the repeat guard but by the budget; the same loop
#    under a guarded rule is stopped after max_repeat_calls.
# 1 runs as nobody (lazy tracing) and as root (traced). Every log verifies
# and replays, and `audit show` shows the link.
. "$(dirname "$0")/lib.sh"
setup
start_listener
MAX=3

# 1. helpers of a tool
cat >"$T/tool.sh" <<'SH'
i=0
while [ $i -lt 4 ]; do
	/bin/cat /dev/null
	/bin/true
	i=$((i + 1))
done
echo "tool $1 done"
SH
cat >"$T/agent.py" <<'PY'
import subprocess, sys
tool = sys.argv[1]
for arg in ("a", "b", "c"):
    r = subprocess.run(["/bin/sh", tool, arg], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    print(r.stdout.decode().strip() or "tool %s failed (%d)" % (arg, r.returncode))
for i in range(4):
    try:
        subprocess.run(["/bin/echo", "same"], stdout=subprocess.DEVNULL)
        print("echo ok")
    except OSError as e:
        print("echo refused errno %d" % e.errno)
PY
chmod a+r "$T/tool.sh" "$T/agent.py"
POL=$(policy helpers <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": $MAX, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
)
SHK_TIMEOUT=60 shk "$POL" -- "$AGENT_PY" "$T/agent.py" "$T/tool.sh"
show_run
expect_eq "helpers: exit status" "$RC" 0
expect_eq "helpers: each tool run finished" "$(grep -c '^tool [abc] done$' "$OUT")" 3
expect_eq "helpers: the loop of the same exec ran $MAX times" "$(grep -c '^echo ok$' "$OUT")" "$MAX"
expect_eq "helpers: ... then it was refused" "$(grep -c '^echo refused' "$OUT")" "$((4 - MAX))"
expect_eq "helpers: refused by the repeat guard" \
	"$(aq kind=decision tool=exec:echo verdict=DENY reason=max_repeat_exceeded)" 1
expect_eq "helpers: no helper was refused" "$(aq kind=decision tool=exec:cat verdict=DENY)" 0
expect_eq "helpers: every helper exec is linked to its tool call" \
	"$(aq kind=decision tool=exec:cat verdict=ALLOW inputs.tool_call~)" 12
"$PY" - "$LOG" >"$T/links.out" <<'PYEOF'
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by_seq = {e["seq"]: e for e in entries}
bad, tools = 0, set()
for e in entries:
    if e.get("kind") != "decision" or e.get("tool") not in ("exec:cat", "exec:true"):
        continue
    t = (e.get("inputs") or {}).get("tool_call")
    own = by_seq.get(t, {})
    # the decision of the tool's exec: /bin/sh TOOL ARG, allowed, not itself linked
    argv = (own.get("params") or {}).get("argv") or [None]
    if argv[0] != "/bin/sh" or own.get("verdict") != "ALLOW" or "tool_call" in (own.get("inputs") or {}):
        bad += 1
    tools.add(t)
print(bad, len(tools))
PYEOF
expect_eq "helpers: links name the tool's exec, one tool call per run (bad, distinct)" \
	"$(cat "$T/links.out")" "0 3"
expect_eq "helpers: the agent's own execs are not linked" \
	"$(aq kind=decision tool=exec:echo inputs.tool_call~)" 0
"$SHACKLE" audit show "$LOG" >"$T/show.out" 2>&1
expect_ge "helpers: audit show shows the link" "$(grep -c 'exec:cat.*part of #[0-9]' "$T/show.out")" 12
expect_audit_ok "helpers"
# the same as root, where every process is traced from its fork (traced
# mode, docs/exec.md): the same answers
SHK_USER=0 SHK_TIMEOUT=60 shk "$POL" -- "$AGENT_PY" "$T/agent.py" "$T/tool.sh"
expect_eq "helpers, traced: each tool run finished" "$(grep -c '^tool [abc] done$' "$OUT")" 3
expect_eq "helpers, traced: the loop of the same exec ran $MAX times" "$(grep -c '^echo ok$' "$OUT")" "$MAX"
expect_eq "helpers, traced: helper execs linked" "$(aq kind=decision tool=exec:cat verdict=ALLOW inputs.tool_call~)" 12
expect_audit_ok "helpers, traced"

# 2. a connect loop to one address, with and without the rule's exemption
cat >"$T/connect.py" <<'PY'
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
for i in range(6):
    s = socket.socket()
    try:
        s.connect((host, port))
        print("connect ok")
    except OSError as e:
        print("connect refused errno %d" % e.errno)
    s.close()
PY
chmod a+r "$T/connect.py"
conn_pol() { # NAME REPEAT_GUARD
	policy "$1" <<JSON
{"version": 1,
 "guard": {"budget_usd": 1.0, "max_repeat_calls": 2, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "model-api", "cidr": "$ALLOWED/32", "port": $LPORT, "action": "allow", "cost_usd": 0.25,
    "repeat_guard": $2}
 ]}}
JSON
}
SHK_TIMEOUT=60 shk "$(conn_pol exempt false)" -- "$AGENT_PY" "$T/connect.py" "$ALLOWED" "$LPORT"
show_run
expect_eq "exempt: connects allowed until the budget is spent (4 x 0.25 of 1.0)" \
	"$(grep -c '^connect ok$' "$OUT")" 4
expect_eq "exempt: stopped by the budget" \
	"$(aq kind=decision tool=net:connect verdict=DENY reason=budget_exhausted)" 1
expect_eq "exempt: never by the repeat guard" "$(aq kind=decision reason=max_repeat_exceeded)" 0
expect_eq "exempt: the log says why" "$(aq kind=decision tool=net:connect verdict=ALLOW inputs.repeat_guard=false)" 4
expect_audit_ok "exempt"
SHK_TIMEOUT=60 shk "$(conn_pol guarded true)" -- "$AGENT_PY" "$T/connect.py" "$ALLOWED" "$LPORT"
show_run
expect_eq "guarded: the same loop is stopped after 2" "$(grep -c '^connect ok$' "$OUT")" 2
expect_eq "guarded: by the repeat guard" \
	"$(aq kind=decision tool=net:connect verdict=DENY reason=max_repeat_exceeded)" 1
expect_audit_ok "guarded"
finish
