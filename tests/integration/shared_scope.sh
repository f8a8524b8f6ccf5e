#!/bin/bash
# SPDX-License-Identifier: MIT
# Model C end to end (docs/shared-state.md): shackle-run sessions whose policy
# shares an organisation's budget and breaker on a real redis-server, which
# this scenario starts on a unix socket in its own directory and stops.
#  1. Two sessions at once exec /bin/true at 0.03 USD each against one
#     1.0 USD org budget: together exactly 33 execs are released (0.99), the
#     rest are budget_overrun, and Redis holds 990000 uUSD spent.
#  2. A trip in one session (an exec that costs more than the budget:
#     budget_overrun, trip_on_deny) refuses the other, running, session's
#     next call: circuit_open from the scope's breaker.
#  3. redis-server killed mid-run: the next call is DENY
#     shared_state_unavailable (nothing allowed); restarted: calls pass again.
#  4. The operator's reset of the tripping session (`shackle reset`) closes
#     the scope's breaker: the other session, refused while it was open
#     (without tripping its own), passes its next call.
#  5. The SDK's get_session_state shows the scope's spend (two sessions'),
#     read from Redis when asked: an error, and no number, while it is down.
#  6. A report whose settle failed (Redis down) is settled at its actual
#     cost before the next call once Redis is back; (7.) if another session
#     swept its reservation first, the retry charges nothing more.
#  8. A report whose settle failed and no call after it: the session's end
#     retries it (session_end records it) or leaves it to the lease.
# Every log verifies and replays without Redis.
. "$(dirname "$0")/lib.sh"
setup
require_root
require_cmd redis-server redis-cli
TRUE=$(readlink -f /bin/true)
RDIR=$T/redis
SOCK=$T/redis.sock
mkdir -p "$RDIR"

start_redis() {
	redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --dir "$RDIR" \
		--logfile "$RDIR/log" --save "" --appendonly yes --appendfsync always \
		--daemonize no &
	REDIS_PID=$!
	BG_PIDS+=("$REDIS_PID")
	for _ in $(seq 100); do
		redis-cli -s "$SOCK" ping 2>/dev/null | grep -q PONG && return 0
		sleep 0.05
	done
	echo "FAIL: redis-server did not answer on $SOCK"
	exit 1
}
stop_redis() {
	kill -9 "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	rm -f "$SOCK"
}

shared_policy() { # NAME ORG TRIP [EXTRA RULE]
	policy "$1" <<JSON
{"version": 1,
 "guard": {"budget_usd": 1.0, "max_repeat_calls": 0, "trip_on_deny": $3},
 "exec": {"default": "allow", "rules": [
   {"name": "true", "tool": "shell.true", "path": "$TRUE", "action": "allow", "cost_usd": 0.03}${4:+,
   $4}
 ]},
 "net": {"default": "deny"},
 "shared": {"redis": "unix:$SOCK", "org": "$2", "timeout_ms": 300,
            "scopes": {"budget": "org", "breaker": "org"}}}
JSON
}

# run_bg N POLICY CMD...: shackle-run in the background (its pid in BGPID);
# log $T/audit-N.jsonl; with OPERATOR=1 an operator channel in $T/ctl
export SHACKLE_CONTROL_DIR=$T/ctl
run_bg() {
	local n=$1 pol=$2 ni=--non-interactive
	shift 2
	[ -n "${OPERATOR:-}" ] && ni=
	timeout -k 5 120 "$SHACKLE_RUN" --policy "$pol" --audit "$T/audit-$n.jsonl" --key "$KEY" \
		--session "it-shared-$n" $ni -- "$@" >"$T/out-$n" 2>"$T/err-$n" </dev/null &
	BGPID=$!
}
log_ok() { # N DESC
	LOG=$T/audit-$1.jsonl
	expect_audit_ok "$2"
}
allowed_true() { "$PY" "$IT/audit_query.py" "$T/audit-$1.jsonl" kind=decision verdict=ALLOW tool=shell.true; }
q() { local n=$1; shift; "$PY" "$IT/audit_query.py" "$T/audit-$n.jsonl" "$@"; }

start_redis

# ---- 1. one budget, two sessions -------------------------------------------
POL=$(shared_policy budget it-budget false)
LOOP='i=0; while [ $i -lt 40 ]; do if '"$TRUE"'; then echo ok; else echo refused; fi; i=$((i+1)); done'
run_bg 1 "$POL" /bin/sh -c "$LOOP"; p1=$BGPID
run_bg 2 "$POL" /bin/sh -c "$LOOP"; p2=$BGPID
wait "$p1"; rc1=$?
wait "$p2"; rc2=$?
expect_eq "budget: session 1 exit status" "$rc1" 0
expect_eq "budget: session 2 exit status" "$rc2" 0
a1=$(allowed_true 1) a2=$(allowed_true 2)
note "budget: session 1 released $a1 execs, session 2 released $a2"
expect_eq "budget: execs released by both sessions together (33 x 0.03 <= 1.0)" "$((a1 + a2))" 33
expect_eq "budget: execs the agents saw run" "$(cat "$T/out-1" "$T/out-2" | grep -c '^ok')" 33
expect_eq "budget: refusals are budget_overrun" \
	"$(( $(q 1 kind=decision verdict=DENY reason=budget_overrun) + $(q 2 kind=decision verdict=DENY reason=budget_overrun) ))" 47
expect_eq "budget: spent in Redis (uUSD)" \
	"$(redis-cli -s "$SOCK" --raw eval "local k = redis.call('keys', 'shackle:*:budget'); return redis.call('hget', k[1], 'spent')" 0)" 990000
expect_eq "budget: reservations left in Redis" \
	"$(redis-cli -s "$SOCK" --raw eval "local k = redis.call('keys', 'shackle:*:budget'); return redis.call('hget', k[1], 'reserved')" 0)" 0
expect_ge "budget: decisions that recorded the shared budget" "$(q 1 kind=decision shared.budget.scope=org/it-budget)" 40
log_ok 1 "budget: session 1"
log_ok 2 "budget: session 2"
# the two hosts' logs of the scope add up; one alone does not (the other's
# operations are in no log given); a changed amount is a modified field
vs() { "$SHACKLE" audit verify --shared --pubkey "$PUB" "$@" >"$T/vs.out" 2>&1; VSRC=$?; }
vs "$T/audit-1.jsonl" "$T/audit-2.jsonl"
expect_eq "verify --shared: both logs add up ($(tail -n 1 "$T/vs.out"))" "$VSRC" 0
expect_eq "verify --shared: ... every operation chained to what Redis holds" \
	"$(grep -c "operations chained; .* after the last: 990000 uUSD spent, 0 reserved" "$T/vs.out")" 1
expect_eq "budget: every settle at once answered (none failed)" \
	"$(cat "$T/audit-1.jsonl" "$T/audit-2.jsonl" | grep -c '"then":{[^}]*"error"')" 0
vs "$T/audit-1.jsonl"
expect_eq "verify --shared: one log alone is refused" "$VSRC" 1
expect_eq "verify --shared: ... naming the entry's field" \
	"$(grep -c "^DOES NOT ADD UP: $T/audit-1.jsonl:[0-9]*: shared.\(budget\|then\): operations\? [0-9]* .*of org/it-budget: in no log given" "$T/vs.out")" 1
sed '0,/"estimate_uusd":30000/s//"estimate_uusd":3000/' "$T/audit-2.jsonl" >"$T/audit-2x.jsonl"
expect_eq "verify --shared: the tampered copy differs" "$(cmp -s "$T/audit-2.jsonl" "$T/audit-2x.jsonl"; echo $?)" 1
vs "$T/audit-1.jsonl" "$T/audit-2x.jsonl"
expect_eq "verify --shared: a changed shared amount is refused" "$VSRC" 1
expect_eq "verify --shared: ... by the log's own verification" \
	"$(grep -c "^NOT INTACT: $T/audit-2x.jsonl: modified field" "$T/vs.out")" 1

# ---- 2. one breaker --------------------------------------------------------
# an exec that costs more than the budget: budget_overrun, and a trip
DEAR='{"name": "dear", "tool": "shell.dear", "path": "/bin/echo", "action": "allow", "cost_usd": 5.0}'
# the agents' one call: an exec of argv[1], "ok", "failed" or "EPERM"
PY_RUN='import os, subprocess, sys, time
def run():
    try:
        return "ok" if subprocess.call([sys.argv[1]]) == 0 else "failed"
    except PermissionError:
        return "EPERM"
'
POL=$(shared_policy breaker it-breaker true \
	"$DEAR")
AGENT2=$PY_RUN'out = open(sys.argv[2], "w")
out.write(run() + "\n"); out.flush()
open(sys.argv[3] + ".ready", "w").write("1")
while not os.path.exists(sys.argv[3]):
    time.sleep(0.02)
out.write(run() + "\n"); out.flush()'
run_bg 3 "$POL" "$AGENT_PY" -c "$AGENT2" "$TRUE" "$T/r3" "$T/go3"; p3=$BGPID
wait_file "$T/go3.ready" 300 || fail "breaker: the second session did not start"
run_bg 4 "$POL" /bin/sh -c '/bin/echo dear; '"$TRUE"; p4=$BGPID
wait "$p4"
sleep 0.3 # the bound the breaker reaches the scope in is 100 ms
echo 1 >"$T/go3"
wait "$p3"
expect_eq "breaker: the tripping session's dear exec" "$(q 4 kind=decision tool=shell.dear reason=budget_overrun)" 1
expect_eq "breaker: its breaker_trip entry" "$(q 4 kind=breaker_trip)" 1
expect_eq "breaker: the other session's calls (before, after the trip)" "$(tr '\n' ' ' <"$T/r3")" "ok EPERM "
expect_eq "breaker: the other session's refusal is circuit_open, from the scope" \
	"$(q 3 kind=decision tool=shell.true reason=circuit_open shared.breaker.open=true shared.breaker.by=it-shared-4)" 1
log_ok 3 "breaker: session 3"
log_ok 4 "breaker: session 4"

# ---- 3. Redis goes away, and comes back -------------------------------------
POL=$(shared_policy outage it-outage false)
AGENT3=$PY_RUN'def wait(f):
    while not os.path.exists(f):
        time.sleep(0.02)
out = open(sys.argv[2], "w")
out.write(run() + "\n"); out.flush()
open(sys.argv[3] + ".1", "w").write("1"); wait(sys.argv[3] + ".killed")
out.write(run() + "\n"); out.write(run() + "\n"); out.flush()
open(sys.argv[3] + ".2", "w").write("1"); wait(sys.argv[3] + ".back")
for i in range(100):
    r = run()
    if r == "ok":
        break
    time.sleep(0.05)
out.write("%s after %d\n" % (r, i)); out.flush()'
run_bg 5 "$POL" "$AGENT_PY" -c "$AGENT3" "$TRUE" "$T/r5" "$T/f5"; p5=$BGPID
wait_file "$T/f5.1" 300 || fail "outage: the session did not start"
stop_redis
echo 1 >"$T/f5.killed"
wait_file "$T/f5.2" 300 || fail "outage: the agent did not get its answers"
start_redis
echo 1 >"$T/f5.back"
wait "$p5"
note "outage: $(tr '\n' ' ' <"$T/r5")"
expect_eq "outage: calls before, during (2) the outage" "$(head -n 3 "$T/r5" | tr '\n' ' ')" "ok EPERM EPERM "
expect_eq "outage: a call after the restart passes" "$(tail -n 1 "$T/r5" | awk '{print $1}')" ok
expect_ge "outage: refusals shared_state_unavailable (layer scope)" \
	"$(q 5 kind=decision verdict=DENY reason=shared_state_unavailable layer=scope)" 2
expect_eq "outage: ALLOWs that recorded a Redis error" "$(q 5 kind=decision verdict=ALLOW shared.error~E)" 0
expect_eq "outage: breaker_trip entries (an outage trips nothing)" "$(q 5 kind=breaker_trip)" 0
expect_ge "outage: the loss was told on stderr" "$(grep -c 'shared state' "$T/err-5")" 1
log_ok 5 "outage: session 5"

# ---- 4. the operator's reset closes the scope's breaker ---------------------
POL=$(shared_policy reset it-reset true \
	"$DEAR")
AGENT4=$PY_RUN'out = open(sys.argv[2], "w")
for step in ("1", "2", "3"):
    out.write(run() + "\n"); out.flush()
    open(sys.argv[3] + "." + step, "w").write("1")
    while step != "3" and not os.path.exists(sys.argv[3] + ".go" + step):
        time.sleep(0.02)'
run_bg 7 "$POL" "$AGENT_PY" -c "$AGENT4" "$TRUE" "$T/r7" "$T/f7"; p7=$BGPID
wait_file "$T/f7.1" 300 || fail "reset: the other session did not start"
OPERATOR=1 run_bg 6 "$POL" /bin/sh -c '/bin/echo dear; while [ ! -e '"$T"'/go6 ]; do :; done; '"$TRUE"' && echo after-reset'
p6=$BGPID
for _ in $(seq 300); do [ "$(q 6 kind=breaker_trip)" = 1 ] && break; sleep 0.02; done
sleep 0.3 # the bound the breaker reaches the scope in is 100 ms
touch "$T/f7.go1"
wait_file "$T/f7.2" 300 || fail "reset: the other session's call while open"
"$SHACKLE" reset --session it-shared-6 --as carol >"$T/reset.out" 2>&1
expect_eq "reset: CLI status ($(cat "$T/reset.out"))" "$?" 0
touch "$T/go6" "$T/f7.go2"
wait "$p6"
wait "$p7"
expect_eq "reset: the other session's calls (before, while open, after the reset)" \
	"$(tr '\n' ' ' <"$T/r7")" "ok EPERM ok "
expect_eq "reset: the tripping session runs again" "$(tail -n 1 "$T/out-6")" after-reset
expect_eq "reset: audited with the operator and the scope" \
	"$(q 6 kind=hitl state=breaker_reset operator=carol scope=org/it-reset)" 1
expect_eq "reset: the other session's own breaker never tripped" "$(q 7 kind=breaker_trip)" 0
expect_eq "reset: Redis' breaker is closed, by the operator" \
	"$(redis-cli -s "$SOCK" --raw eval "local k = redis.call('keys', 'shackle:*:breaker'); local r = ''; for _, x in ipairs(k) do local v = redis.call('hmget', x, 'open', 'by'); if v[2] == 'carol' then r = v[1] .. ' ' .. v[2] end end; return r" 0)" "0 carol"
log_ok 6 "reset: session 6"
log_ok 7 "reset: session 7"
vs "$T/audit-6.jsonl" "$T/audit-7.jsonl"
expect_eq "reset: both logs add up, breaker epochs alike ($(tail -n 1 "$T/vs.out"))" "$VSRC" 0
vs "$T/audit-7.jsonl"
expect_eq "reset: the tripping session's log missing is detected" \
	"$(grep -c "shared.breaker.by: org/it-reset was tripped by session it-shared-6" "$T/vs.out")" 1

# ---- 5. the SDK's get_session_state shows the scope as Redis holds it -------
# Session 8 spends 0.10 through the SDK; session 9 then spends 2 x 0.04 and
# asks for its state: its own spend is 0.08, the scope's 0.18. With
# redis-server down the answer is an error and no number; back up, 0.18.
cp -r "$SRC/clients" "$T/clients"
chmod -R a+rX "$T/clients"
POL=$(shared_policy state it-state false)
cat >"$T/sdk8.py" <<PYEOF
import sys
sys.path.insert(0, "$T/clients/python")
import shackle_sdk
c = shackle_sdk.connect(agent_id="state-8")
with c.call("web_search", {"q": "eight"}, estimated_cost_usd=0.2) as call:
    call.actual_cost_usd = 0.1
print("ran")
PYEOF
cat >"$T/sdk9.py" <<PYEOF
import json, os, sys, time
sys.path.insert(0, "$T/clients/python")
import shackle_sdk
f = sys.argv[1]
def wait(p):
    while not os.path.exists(p):
        time.sleep(0.02)
c = shackle_sdk.connect(agent_id="state-9")
for i in range(2):
    with c.call("web_search", {"q": "nine %d" % i}, estimated_cost_usd=0.05) as call:
        call.actual_cost_usd = 0.04
out = open(f, "w")
def state(tag):
    s = c.state()
    out.write(tag + " " + json.dumps(s) + "\n"); out.flush()
    return s
state("up")
open(f + ".1", "w").write("1"); wait(f + ".killed")
state("down")
open(f + ".2", "w").write("1"); wait(f + ".back")
for i in range(100):
    if "error" not in state("back").get("shared", {}):
        break
    time.sleep(0.05)
PYEOF
chmod 644 "$T/sdk8.py" "$T/sdk9.py"
run_bg 8 "$POL" "$AGENT_PY" "$T/sdk8.py"; wait "$BGPID"
expect_eq "state: session 8 ran its SDK call" "$(cat "$T/out-8")" ran
run_bg 9 "$POL" "$AGENT_PY" "$T/sdk9.py" "$T/s9"; p9=$BGPID
wait_file "$T/s9.1" 300 || fail "state: session 9 did not get its state ($(cat "$T/err-9"))"
stop_redis
echo 1 >"$T/s9.killed"
wait_file "$T/s9.2" 300 || fail "state: session 9 did not get its state during the outage"
start_redis
echo 1 >"$T/s9.back"
wait "$p9"
expect_eq "state: session 9's exit status" "$?" 0
# state TAG EXPR: EXPR of the last state answer tagged TAG (s)
state() { "$PY" -c 'import json, sys
line = [l for l in open(sys.argv[1]) if l.split(" ", 1)[0] == sys.argv[2]][-1]
s = json.loads(line.split(" ", 1)[1]); sh = s.get("shared", {})
print(eval(sys.argv[3]))' "$T/s9" "$@"; }
expect_eq "state: the session's own spend" "$(state up 'round(s["budget_spent_usd"], 6)')" 0.08
expect_eq "state: the scope's spend, both sessions'" "$(state up 'sh["budget"]["spent_usd"]')" 0.18
expect_eq "state: ... nothing reserved, the limit, what decide() is shown" \
	"$(state up '[sh["budget"][k] for k in ("reserved_usd", "limit_usd", "remaining_usd")]')" "[0.0, 1.0, 0.82]"
expect_eq "state: ... named by the scope" "$(state up 'sh["budget"]["scope"], sh["breaker"]["scope"]')" \
	"('org/it-state', 'org/it-state')"
expect_eq "state: ... the scope's breaker closed" "$(state up 'sh["breaker"]["open"], "error" in sh')" "(False, False)"
expect_eq "state: Redis down: an error" "$(state down '"errno" in sh["error"] and bool(sh["error"]["why"])')" True
expect_eq "state: ... and no number shown" \
	"$(state down 'sorted(sh["budget"]), sorted(sh["breaker"])')" "(['scope'], ['scope', 'trip_pending'])"
expect_eq "state: ... the session's own state still answered" "$(state down 'round(s["budget_spent_usd"], 6)')" 0.08
expect_eq "state: Redis back: the spend kept" "$(state back 'sh["budget"]["spent_usd"], "error" in sh')" "(0.18, False)"
log_ok 8 "state: session 8"
log_ok 9 "state: session 9"

# ---- 6. a report's settle that failed is retried before the next call -------
# An SDK call reserved at 0.20 reports 0.05 while redis-server is down: the
# settle fails (the post_exec entry says so). Back up, the next call first
# settles it at 0.05, not at the estimate after the lease.
POL=$(shared_policy retry it-retry false)
cat >"$T/sdk10.py" <<PYEOF
import os, sys, time
sys.path.insert(0, "$T/clients/python")
import shackle_sdk
f = sys.argv[1]
def wait(p):
    while not os.path.exists(p):
        time.sleep(0.02)
c = shackle_sdk.connect(agent_id="retry-10")
with c.call("web_search", {"q": "ten"}, estimated_cost_usd=0.2) as call:
    open(f + ".1", "w").write("1"); wait(f + ".killed")
    call.actual_cost_usd = 0.05
open(f + ".2", "w").write("1"); wait(f + ".back")
for i in range(100):
    try:
        with c.call("web_search", {"q": "after"}, estimated_cost_usd=0.01) as call:
            call.actual_cost_usd = 0.01
        print("after", i)
        break
    except shackle_sdk.Denied:
        time.sleep(0.05)
PYEOF
chmod 644 "$T/sdk10.py"
run_bg 10 "$POL" "$AGENT_PY" "$T/sdk10.py" "$T/s10"; p10=$BGPID
wait_file "$T/s10.1" 300 || fail "retry: session 10's call was not allowed"
stop_redis
echo 1 >"$T/s10.killed"
wait_file "$T/s10.2" 300 || fail "retry: session 10's report was not answered"
start_redis
echo 1 >"$T/s10.back"
wait "$p10"
expect_eq "retry: the call after the restart ran" "$(awk '{print $1}' "$T/out-10")" after
expect_eq "retry: the report's settle failed" "$(q 10 kind=post_exec shared.error.errno~E)" 1
BKEY=$(q 10 kind=decision --field shared.budget.key | head -n 1)
expect_eq "retry: Redis' spend is the actual costs (0.05 + 0.01)" \
	"$(redis-cli -s "$SOCK" --raw hget "$BKEY:budget" spent)" 60000
expect_eq "retry: ... nothing left reserved" "$(redis-cli -s "$SOCK" --raw hget "$BKEY:budget" reserved)" 0
expect_eq "retry: the retried settle is in a decision's entry" \
	"$(q 10 kind=decision 'shared.retried~"settled":true')" 1
expect_ge "retry: told on stderr" "$(grep -c 'settled at its actual cost on a retry' "$T/err-10")" 1
log_ok 10 "retry: session 10"
vs "$T/audit-10.jsonl"
expect_eq "retry: verify --shared adds the retried settle up ($(tail -n 1 "$T/vs.out"))" "$VSRC" 0

# ---- 7. ... and charges once when its reservation was swept meanwhile -------
# As 6 with lease_s 1: before session 11's next call, session 12's call
# sweeps the reservation at its estimate (0.20); the retry then finds
# nothing and charges nothing: 0.20 + 0.01 + 0.01 spent, not 0.25 more.
POL=$(shared_policy swept it-swept false)
sed -i 's/"timeout_ms": 300,/"timeout_ms": 300, "lease_s": 1,/' "$POL"
"$SHACKLE" policy check "$POL" >/dev/null || fail "swept: the policy with lease_s 1 is refused"
sed 's/retry-10/swept-11/' "$T/sdk10.py" >"$T/sdk11.py"
sed -n '1,3p' "$T/sdk10.py" >"$T/sdk12.py"
cat >>"$T/sdk12.py" <<'PYEOF'
c = shackle_sdk.connect(agent_id="swept-12")
with c.call("web_search", {"q": "twelve"}, estimated_cost_usd=0.01) as call:
    call.actual_cost_usd = 0.01
print("ran")
PYEOF
chmod 644 "$T/sdk11.py" "$T/sdk12.py"
run_bg 11 "$POL" "$AGENT_PY" "$T/sdk11.py" "$T/s11"; p11=$BGPID
wait_file "$T/s11.1" 300 || fail "swept: session 11's call was not allowed"
stop_redis
echo 1 >"$T/s11.killed"
wait_file "$T/s11.2" 300 || fail "swept: session 11's report was not answered"
start_redis
sleep 1.2 # the reservation's lease runs out
run_bg 12 "$POL" "$AGENT_PY" "$T/sdk12.py"; wait "$BGPID"
expect_eq "swept: session 12's call ran" "$(cat "$T/out-12")" ran
expect_eq "swept: ... and swept session 11's reservation" \
	"$(q 12 kind=decision 'shared.budget.swept~it-shared-11:')" 1
echo 1 >"$T/s11.back"
wait "$p11"
expect_eq "swept: session 11's call after ran" "$(awk '{print $1}' "$T/out-11")" after
expect_eq "swept: the retry found nothing to settle" "$(q 11 kind=decision 'shared.retried~"settled":false')" 1
BKEY=$(q 11 kind=decision --field shared.budget.key | head -n 1)
expect_eq "swept: Redis' spend charged the swept call once (0.20 + 0.01 + 0.01)" \
	"$(redis-cli -s "$SOCK" --raw hget "$BKEY:budget" spent)" 220000
log_ok 11 "swept: session 11"
log_ok 12 "swept: session 12"
vs "$T/audit-11.jsonl" "$T/audit-12.jsonl"
expect_eq "swept: verify --shared adds both logs up ($(tail -n 1 "$T/vs.out"))" "$VSRC" 0

# ---- 8. a settle still waiting when the session ends -----------------------
# The report's settle fails (redis-server down) and the agent exits with no
# call after it: the end retries it, and session_end records the answer
# (13: Redis back, settled at 0.05) or leaves it to the lease (14: still
# down); verify --shared counts either.
POL=$(shared_policy ended it-ended false)
cat >"$T/sdk13.py" <<PYEOF
import os, sys, time
sys.path.insert(0, "$T/clients/python")
import shackle_sdk
f = sys.argv[1]
def wait(p):
    while not os.path.exists(p):
        time.sleep(0.02)
c = shackle_sdk.connect(agent_id="ended")
with c.call("web_search", {"q": "last"}, estimated_cost_usd=0.2) as call:
    open(f + ".1", "w").write("1"); wait(f + ".killed")
    call.actual_cost_usd = 0.05
open(f + ".2", "w").write("1"); wait(f + ".back")
print("done")
PYEOF
chmod 644 "$T/sdk13.py"
run_bg 13 "$POL" "$AGENT_PY" "$T/sdk13.py" "$T/s13"; p13=$BGPID
wait_file "$T/s13.1" 300 || fail "ended: session 13's call was not allowed"
stop_redis
echo 1 >"$T/s13.killed"
wait_file "$T/s13.2" 300 || fail "ended: session 13's report was not answered"
start_redis
echo 1 >"$T/s13.back"
wait "$p13"
expect_eq "ended: session 13's exit status" "$?" 0
expect_eq "ended: the report's settle failed" "$(q 13 kind=post_exec shared.error.errno~E)" 1
expect_eq "ended: session_end carries the settle retried at the end" \
	"$(q 13 kind=session_end 'shared.retried~"settled":true' 'shared.retried~"actual_uusd":50000')" 1
BKEY=$(q 13 kind=decision --field shared.budget.key | head -n 1)
expect_eq "ended: Redis' spend is the actual cost (0.05), not the estimate" \
	"$(redis-cli -s "$SOCK" --raw hget "$BKEY:budget" spent)" 50000
log_ok 13 "ended: session 13"
"$SHACKLE" audit verify --shared --json --pubkey "$PUB" "$T/audit-13.jsonl" >"$T/vs13.json" 2>&1; VSRC=$?
expect_eq "ended: verify --shared adds the end's settle up ($(head -c 300 "$T/vs13.json"))" "$VSRC" 0
expect_eq "ended: ... counted as settled, nothing open" \
	"$("$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))["scopes"][0]; print(s["settled"], s["open"], s["spent_uusd"])' "$T/vs13.json")" "1 0 50000"

sed 's/"ended"/"ended-14"/' "$T/sdk13.py" >"$T/sdk14.py"
chmod 644 "$T/sdk14.py"
run_bg 14 "$POL" "$AGENT_PY" "$T/sdk14.py" "$T/s14"; p14=$BGPID
wait_file "$T/s14.1" 300 || fail "ended: session 14's call was not allowed"
stop_redis
echo 1 >"$T/s14.killed"
wait_file "$T/s14.2" 300 || fail "ended: session 14's report was not answered"
echo 1 >"$T/s14.back"
wait "$p14"
expect_eq "ended: session 14's exit status (Redis still down)" "$?" 0
N14=$(q 14 kind=post_exec --field nonce | head -n 1)
expect_eq "ended: session_end leaves the report to the lease, with why" \
	"$(q 14 kind=session_end "shared.left~\"actual_uusd\":50000,\"nonce\":\"$N14\"" 'shared.error.errno~E')" 1
expect_ge "ended: told on stderr" "$(grep -c 'before the session.s end; it is charged at its estimate' "$T/err-14")" 1
log_ok 14 "ended: session 14"
start_redis
"$SHACKLE" audit verify --shared --json --pubkey "$PUB" "$T/audit-13.jsonl" "$T/audit-14.jsonl" >"$T/vs14.json" 2>&1; VSRC=$?
expect_eq "ended: verify --shared adds both up ($(head -c 300 "$T/vs14.json"))" "$VSRC" 0
expect_eq "ended: ... the one left to the lease counted, still open" \
	"$("$PY" -c 'import json,sys; s=json.load(open(sys.argv[1]))["scopes"][0]; print(s["settled"], s["left"], s["open"])' "$T/vs14.json")" "1 1 1"
stop_redis
finish
