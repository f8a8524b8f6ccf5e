#!/bin/bash
# SPDX-License-Identifier: MIT
# A held call's release in a shared scope (docs/shared-state.md, "How the
# judge uses it", steps 5 and 6) on a real redis-server of its own: the
# agent (gateway_agent.py, through the model gateway) gets a Bash proposal
# that a "hitl" rule holds; the operator approves it with `shackle
# approve`. A proposal has no post-execution report, so its reservation
# must be settled at once, at the approval, as an unheld proposal's is:
# when the session ends Redis holds no reservation of it (left, it would
# be charged only when its 600 s lease runs out). The model requests are
# settled by their reports; the log verifies and replays without Redis.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
require_root # the agent runs as nobody
require_cmd redis-server redis-cli
setup
trap 'kill "$DPID" 2>/dev/null; cleanup' EXIT
SOCK=$T/redis.sock
mkdir -p "$T/redis"
redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --dir "$T/redis" \
	--logfile "$T/redis/log" --save "" --appendonly no --daemonize no &
BG_PIDS+=("$!")
for _ in $(seq 100); do
	redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && break
	sleep 0.05
done
# the reservations of every scope in this server, and their leases
held_resv() {
	redis-cli -s "$SOCK" --raw eval "local n = 0
for _, k in ipairs(redis.call('keys', 'shackle:*:resv')) do n = n + redis.call('hlen', k) end
for _, k in ipairs(redis.call('keys', 'shackle:*:lease')) do n = n + redis.call('zcard', k) end
return n" 0
}
start_double varied --turns 1
POL=$(gateway_policy held 5.0 0 '"rules": [{"name": "bash-held", "tool": "Bash", "action": "hitl"}]},
 "shared": {"redis": "unix:'"$SOCK"'", "org": "it-hitl-shared", "timeout_ms": 500,
            "scopes": {"budget": "org"}')
export SHACKLE_CONTROL_DIR=$T/ctl
SESSION=it-$NAME
LOG=$T/audit.jsonl
OUT=$T/out
pushd "$T" >/dev/null || exit 1
HOME=$T ANTHROPIC_API_KEY=sk-ant-real timeout -k 5 90 "$SHACKLE_RUN" --policy "$POL" --audit "$LOG" \
	--key "$KEY" --session "$SESSION" -- "$AGENT_PY" "$IT/gateway_agent.py" >"$OUT" 2>"$T/err" </dev/null &
RUN_PID=$!
popd >/dev/null || exit 1
ID=$(wait_pending 1)
expect_ne "a call is held" "$ID" ""
expect_eq "... the Bash proposal" "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["tool"])' "$T/pending.json")" Bash
expect_eq "... nothing is reserved while it waits (the hold gave its reservation back)" "$(held_resv)" 0
"$SHACKLE" approve "$ID" --as alice --session "$SESSION" >"$T/op.out" 2>&1
expect_eq "approve: CLI status" "$?" 0
wait "$RUN_PID"
RC=$?
expect_eq "exit status" "$RC" 0
expect_eq "the agent finished" "$(grep -c 'model: done after 1 turns' "$OUT")" 1
expect_decision "the proposal released by the operator" 1 tool=Bash verdict=ALLOW \
	reason=hitl_transition:approve operator=alice
expect_eq "both model requests were reported and settled" "$(aq kind=post_exec)" 2
expect_eq "no reservation is left in Redis" "$(held_resv)" 0
expect_audit_ok
finish
