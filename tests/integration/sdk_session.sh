#!/bin/bash
# SPDX-License-Identifier: MIT
# SP/1.0 Model B in the session of shackle-run: an agent asks before its
# tools through the SDK socket (SHACKLE_SOCKET) with the Python and the Node
# client, and also runs a program. The SDK's calls and the kernel's share
# one budget and one log: a post_exec's actual cost moves the budget that
# the next SDK call is judged against; the exec is judged in between; the
# log verifies and replays.
. "$(dirname "$0")/lib.sh"
require_cmd node
setup
# The last run: the SDK socket is known by its inode, not by its name. The
# agent owns the socket's directory; another listening socket hard-linked
# over that name is a unix connect like any other (denied by this policy),
# never the SDK's transport.
# the agent may run as nobody, which cannot read a checkout under /root
cp -r "$SRC/clients" "$T/clients"
chmod -R a+rX "$T/clients"
POL=$(policy sdk <<'JSON'
{"version": 1,
 "guard": {"budget_usd": 1.0, "max_repeat_calls": 3, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
)
cat >"$T/agent.py" <<PYEOF
import subprocess, sys
sys.path.insert(0, "$T/clients/python")
import shackle_sdk
c = shackle_sdk.connect(agent_id="py-agent", framework="plain-python")
with c.call("web_search", {"q": "circuit breakers"}, estimated_cost_usd=0.01) as call:
    call.actual_cost_usd = 0.3
print("first call ran")
subprocess.run(["/bin/echo", "a kernel call"], check=True)
try:
    with c.call("web_search", {"q": "more"}, estimated_cost_usd=0.8):
        print("second call ran")
except shackle_sdk.Denied as d:
    print("denied:", d.code)
print("spent:", c.state()["budget_spent_usd"])
import os, socket
raw = socket.socket(socket.AF_UNIX)
raw.connect(os.environ["SHACKLE_SOCKET"])
raw.sendall(b"{not json\n")
raw.recv(4096)  # the error answer: the refusal is logged before it is sent
PYEOF
cat >"$T/agent.js" <<JSEOF
'use strict';
const shackle = require('$T/clients/node/index.js');
const { execFileSync } = require('child_process');
(async () => {
  const c = await shackle.connect({ agentId: 'js-agent', framework: 'plain-node' });
  await c.withCall('web_search', { q: 'circuit breakers' }, { estimatedCostUsd: 0.01 },
    async (call) => { call.actualCostUsd = 0.3; });
  console.log('first call ran');
  execFileSync('/bin/echo', ['a kernel call'], { stdio: 'inherit' });
  try {
    await c.withCall('web_search', { q: 'more' }, { estimatedCostUsd: 0.8 },
      async () => console.log('second call ran'));
  } catch (e) {
    if (!(e instanceof shackle.Denied)) throw e;
    console.log('denied:', e.code);
  }
  console.log('spent:', (await c.state()).budget_spent_usd);
  c.close();
})().catch((e) => { console.error('agent:', e.message); process.exit(1); });
JSEOF
chmod 644 "$T/agent.py" "$T/agent.js"
NODE=$(readlink -f "$(command -v node)")
for lang in py js; do
	if [ $lang = py ]; then shk "$POL" -- "$AGENT_PY" "$T/agent.py"; else shk "$POL" -- "$NODE" "$T/agent.js"; fi
	[ "$RC" = 0 ] || show_run
	expect_eq "$lang: exit status" "$RC" 0
	expect_eq "$lang: the agent's output" "$(tr '\n' '|' <"$OUT")" \
		"first call ran|a kernel call|denied: budget_overrun|spent: 0.3|"
	expect_decision "$lang: the SDK call judged in the session" 1 kind=decision tool=web_search verdict=ALLOW \
		inputs.source=sdk
	expect_eq "$lang: its actual cost settled" "$(aq kind=post_exec actual_cost=0.3)" 1
	expect_decision "$lang: the kernel's exec in the same log" 1 kind=decision tool=exec:echo verdict=ALLOW
	expect_decision "$lang: the second SDK call denied by the shared budget" 1 kind=decision tool=web_search \
		verdict=DENY reason=budget_overrun
	expect_eq "$lang: audit show names the SDK call by its origin and params" \
		"$("$SHACKLE" audit show "$LOG" | grep -c "  sdk:$lang-agent  *web_search  *ALLOW .*{\"q\":\"circuit breakers\"}")" 1
	if [ $lang = py ]; then
		expect_eq "$lang: a message the socket refuses is logged as a refusal" \
			"$(aq kind=refusal origin~sdk what=INVALID_MESSAGE)" 1
	fi
	expect_audit_ok "$lang"
done

"$PY" -c 'import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666); s.listen(4); s.settimeout(20)
open(sys.argv[2], "w").write("1")
s.accept(); open(sys.argv[2], "w").write("accepted")' "$T/other.sock" "$T/other.state" &
BG_PIDS+=($!)
wait_file "$T/other.state" 100 || fail "the other listener did not start"
# fs.protected_hardlinks: only a socket's owner may link it
chown nobody "$T/other.sock"
cat >"$T/swap.py" <<'PYEOF'
import errno, os, socket, sys
p = os.environ["SHACKLE_SOCKET"]
tmp = os.path.join(os.path.dirname(p), "other")
os.link(sys.argv[1], tmp)
os.replace(tmp, p)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(p)
    print("connected")
except OSError as e:
    print("refused", errno.errorcode[e.errno])
PYEOF
chmod 644 "$T/swap.py"
shk "$POL" -- "$AGENT_PY" "$T/swap.py" "$T/other.sock"
[ "$RC" = 0 ] || show_run
expect_eq "swap: the agent's connect to another socket under the SDK's name" "$(cat "$OUT")" "refused EPERM"
expect_eq "swap: the other socket was not reached" "$(cat "$T/other.state")" 1
expect_decision "swap: the connect was judged" 1 kind=decision tool=net:connect verdict=DENY
expect_audit_ok "swap"
finish
