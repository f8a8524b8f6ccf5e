#!/bin/bash
# SPDX-License-Identifier: MIT
# Held calls as a newcomer meets them: shackle-run says on its stderr what
# waits, how to approve it and when it expires, then what became of it
# (the agent's strings escaped); `shackle watch` started after the hold
# lists what already waits, started before the session waits for it
# (--wait), and shows no operator where there is none; approve/reject
# --json print the answer as one object; an approval decide() denies (a
# wrong --digest) exits non-zero; root operates a session another user
# runs without being told where its directory is; a uid without a passwd
# entry decides without --as.
. "$(dirname "$0")/lib.sh"
require_root # to run sessions as other users
require_cmd setpriv
setup
export SHACKLE_CONTROL_DIR=$T/ctl

pol_for() { # NAME TIMEOUT
	policy "$1" <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true, "hitl_timeout_s": $2},
 "exec": {"default": "allow", "rules": [
   {"name": "ask-true", "path": "/usr/bin/true", "action": "hitl"}
 ]},
 "net": {"default": "deny"}}
JSON
}
POL=$(pol_for notice 60)
POL_SHORT=$(pol_for notice-short 1)
chmod 644 "$POL" "$POL_SHORT"

bg_run() { # SESSION POLICY -- CMD...
	local s=$1 pol=$2
	shift 3
	LOG=$T/audit-$s.jsonl
	OUT=$T/out-$s
	ERR=$T/err-$s
	SESSION=$s
	timeout -k 5 60 "$SHACKLE_RUN" --policy "$pol" --audit "$LOG" --key "$KEY" --session "$s" \
		-- "$@" >"$OUT" 2>"$ERR" </dev/null &
	RUN_PID=$!
}
# wait_grep PATTERN FILE: until FILE has a line matching (5 s).
wait_grep() {
	local i
	for i in $(seq 50); do
		grep -q -- "$1" "$2" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
ESC=$(printf '\033')

# 1. shackle-run's stderr; watchers started after the hold; --json answers
bg_run notice "$POL" -- /bin/sh -c "/usr/bin/true 'a${ESC}[2Kb' && echo released || echo denied
/bin/echo between
/usr/bin/true && echo released2 || echo denied2"
ID=$(wait_pending 1)
expect_ne "a call is held" "$ID" ""
wait_grep "held $ID:" "$ERR"
"$SHACKLE" watch --session notice >"$T/watch.txt" 2>&1 &
W1=$!
"$SHACKLE" watch --json --session notice >"$T/watch.json" 2>&1 &
W2=$!
wait_grep "WAIT   id $ID" "$T/watch.txt"
wait_grep "\"id\":\"$ID\"" "$T/watch.json"
expect_ge "watch after the hold: the call already waiting is listed" \
	"$(grep -c "WAIT   id $ID pid [0-9]* exec:true /usr/bin/true \$'a\\\\x1b\[2Kb' (policy_hitl)" "$T/watch.txt")" 1
expect_eq "watch --json after the hold: the waiting call first" \
	"$("$PY" -c 'import json,sys; e=json.loads(open(sys.argv[1]).readline()); print(e["event"], e["id"])' "$T/watch.json")" \
	"pending $ID"
"$SHACKLE" approve "$ID" --as alice --json --session notice >"$T/approve.json" 2>"$T/approve.err"
expect_eq "approve --json: exit status" "$?" 0
expect_eq "approve --json: one object" \
	"$("$PY" -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["id"], o["verdict"], o["reason"], o["state"], o["session"])' "$T/approve.json")" \
	"$ID ALLOW hitl_transition:approve released notice"
ID2=$(wait_pending 1 | awk '{print $NF}')
expect_ne "the second call is held" "$ID2" "$ID"
"$SHACKLE" reject "$ID2" --as bob --json --session notice >"$T/reject.json" 2>"$T/reject.err"
expect_eq "reject --json: exit status" "$?" 0
expect_eq "reject --json: one object" \
	"$("$PY" -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["id"], o["verdict"], o["state"])' "$T/reject.json")" \
	"$ID2 DENY denied"
wait "$RUN_PID"
wait "$W1"
expect_eq "watch: exits with the session" "$?" 0
wait "$W2"
cat "$ERR" "$T/watch.txt"
expect_eq "agent: first call released, second denied" "$(grep -c -e '^released$' -e '^denied2$' "$OUT")" 2
if grep -q "$ESC" "$ERR"; then
	fail "stderr: a raw escape character reached shackle-run's stderr"
else
	pass "stderr: no raw escape character"
fi
expect_eq "stderr: the held call, how to approve it, when it expires" \
	"$(grep -c "^shackle-run: held $ID: /usr/bin/true \$'a\\\\x1b\[2Kb' -- shackle approve $ID --session notice (or reject; expires in [0-9]* s)\$" "$ERR")" 1
expect_eq "stderr: the approval, once" \
	"$(grep -c "^shackle-run: held $ID approved by alice: released (ALLOW hitl_transition:approve)\$" "$ERR")" 1
expect_eq "stderr: the second call held" "$(grep -c "^shackle-run: held $ID2: /usr/bin/true -- shackle approve $ID2 " "$ERR")" 1
expect_eq "stderr: the rejection, once" \
	"$(grep -c "^shackle-run: held $ID2 rejected by bob: denied (DENY hitl_transition:reject)\$" "$ERR")" 1
expect_eq "stderr: one line per hold and per outcome" "$(grep -c "^shackle-run: held " "$ERR")" 4
# a decision without an operator shows none (not another field of the
# event in its place: '... by ALLOW', '... by exec:true')
expect_ge "watch: the decision without an operator is shown" "$(grep -c 'ALLOW  pid [0-9]* exec:echo /bin/echo between' "$T/watch.txt")" 1
expect_eq "watch: ... without ' by '" "$(grep 'exec:echo' "$T/watch.txt" | grep -c ' by ')" 0
expect_ge "watch: the released call by its operator" \
	"$(grep -c "ALLOW  pid [0-9]* exec:true .*(hitl_transition:approve) by alice\$" "$T/watch.txt")" 1
expect_ge "watch: the rejection by its operator" "$(grep -c "rejected id $ID2 by bob: DENY" "$T/watch.txt")" 1
expect_audit_ok "notice"

# 2. an approval for another digest is denied by decide(): non-zero exit
bg_run digest "$POL" -- /bin/sh -c '/usr/bin/true && echo released || echo denied'
ID=$(wait_pending 1)
"$SHACKLE" approve "$ID" --digest "$(printf '0%.0s' $(seq 64))" --json --session digest >"$T/digest.json" 2>"$T/digest.err"
expect_eq "wrong digest: exit status" "$?" 1
expect_eq "wrong digest: --json says so" \
	"$("$PY" -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["verdict"], o["reason"], o["state"])' "$T/digest.json")" \
	"DENY hitl_transition:digest_mismatch denied"
expect_eq "wrong digest: stderr says why" "$(grep -c "call $ID is denied, not released (hitl_transition:digest_mismatch)" "$T/digest.err")" 1
wait "$RUN_PID"
expect_eq "wrong digest: the agent was denied" "$(cat "$OUT")" denied
expect_eq "wrong digest: stderr of shackle-run" \
	"$(grep -c "^shackle-run: held $ID approved by [^ ]*: denied (DENY hitl_transition:digest_mismatch)\$" "$ERR")" 1
# the outcome is written before the agent runs again: an agent that writes
# its stderr a byte at a time the moment its exec fails cannot split it
bg_run pieces "$POL" -- /usr/bin/env SHK_EXEC_BYTES=1 "$(helper shk-exec)" plain /usr/bin/true x
ID=$(wait_pending 1)
"$SHACKLE" reject "$ID" --session pieces >/dev/null 2>&1
wait "$RUN_PID"
expect_eq "pieces: the outcome line is whole" \
	"$(grep -c "^shackle-run: held $ID rejected by [^ ]*: denied (DENY hitl_transition:reject)\$" "$ERR")" 1
expect_eq "pieces: the agent's line is whole" "$(grep -c '^shk-exec: EPERM$' "$ERR")" 1
# nobody answers: the expiry is said
bg_run expire "$POL_SHORT" -- /bin/sh -c '/usr/bin/true && echo released || echo denied'
wait "$RUN_PID"
expect_eq "expiry: stderr" "$(grep -c '^shackle-run: held [0-9]* expired: denied (DENY hitl_transition:reject)$' "$ERR")" 1

# 3. watch --wait started before the session
"$SHACKLE" watch --wait --json --session waited >"$T/waited.json" 2>"$T/waited.err" &
W1=$!
sleep 1
kill -0 "$W1" 2>/dev/null && pass "watch --wait: waits for the session" || fail "watch --wait: exited before the session ran ($(cat "$T/waited.err"))"
bg_run waited "$POL" -- /bin/sh -c '/usr/bin/true && echo released || echo denied'
ID=$(wait_pending 1)
wait_grep "\"id\":\"$ID\"" "$T/waited.json"
"$SHACKLE" reject "$ID" --session waited >/dev/null 2>&1
wait "$RUN_PID"
wait "$W1"
expect_eq "watch --wait: exit status" "$?" 0
expect_eq "watch --wait: the hold and its outcome" \
	"$("$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["event"] in ("pending", "resolved"): print(e["event"], e.get("state"))' "$T/waited.json" | tr '\n' ' ')" \
	"pending waiting resolved rejected "
"$SHACKLE" watch --session nosuch >/dev/null 2>"$T/nowait.err"
expect_eq "watch without --wait and no session: exit status" "$?" 1

# 4. root operates the session of another user, found where that user's
#    shackle-run put it (no SHACKLE_CONTROL_DIR, no XDG_RUNTIME_DIR:
#    /tmp/shackle-UID)
U=65534
np=$T/np
mkdir -p "$np"
cp "$KEY" "$np/key.key"
chown -R "$U:$U" "$np"
chmod 700 "$np"
SESSION=rootop-$$-$RANDOM
setpriv --reuid "$U" --regid "$U" --clear-groups --inh-caps=-all \
	env -i PATH=/usr/bin:/bin HOME="$np" timeout -k 5 60 "$SHACKLE_RUN" --policy "$POL" \
	--audit "$np/audit.jsonl" --key "$np/key.key" --session "$SESSION" \
	-- /bin/sh -c '/usr/bin/true && echo released || echo denied' >"$T/np.out" 2>"$T/np.err" </dev/null &
RUN_PID=$!
ID=$(wait_pending 1 env -u SHACKLE_CONTROL_DIR)
expect_ne "root: the other user's held call is listed" "${ID:-none}" none
env -u SHACKLE_CONTROL_DIR "$SHACKLE" pending >"$T/rootpending.txt" 2>&1
expect_eq "root: pending without --session shows it" "$(grep -c "^$ID  *$SESSION " "$T/rootpending.txt")" 1
env -u SHACKLE_CONTROL_DIR "$SHACKLE" approve "$ID" --session "$SESSION" --as root-op >"$T/rootop.out" 2>&1
expect_eq "root: approve of the other user's call" "$?" 0
wait "$RUN_PID"
cat "$T/np.err" "$T/rootpending.txt" "$T/rootop.out"
expect_eq "root: the other user's agent was released" "$(cat "$T/np.out")" released
LOG=$np/audit.jsonl
expect_eq "root: approved in that session's log" "$(aq kind=hitl state=approved operator=root-op)" 1

# 5. a uid without a passwd entry: the default operator name is one the
#    session accepts
U2=54321
while getent passwd "$U2" >/dev/null; do U2=$((U2 + 1)); done
np2=$T/np2
mkdir -p "$np2"
cp "$KEY" "$np2/key.key"
chown -R "$U2:$U2" "$np2"
chmod 700 "$np2"
as_u2() {
	setpriv --reuid "$U2" --regid "$U2" --clear-groups --inh-caps=-all \
		env -i PATH=/usr/bin:/bin HOME="$np2" SHACKLE_CONTROL_DIR="$np2/ctl" "$@"
}
SESSION=nopasswd
as_u2 timeout -k 5 60 "$SHACKLE_RUN" --policy "$POL" --audit "$np2/audit.jsonl" --key "$np2/key.key" \
	--session nopasswd -- /bin/sh -c '/usr/bin/true && echo released || echo denied' \
	>"$T/np2.out" 2>"$T/np2.err" </dev/null &
RUN_PID=$!
ID=$(wait_pending 1 as_u2)
as_u2 "$SHACKLE" approve "$ID" --session nopasswd >"$T/np2op.out" 2>&1
expect_eq "no passwd entry: approve without --as" "$?" 0
wait "$RUN_PID"
cat "$T/np2op.out"
expect_eq "no passwd entry: released" "$(cat "$T/np2.out")" released
LOG=$np2/audit.jsonl
expect_eq "no passwd entry: the operator is uid-$U2" "$(aq kind=hitl state=approved operator=uid-$U2)" 1
finish
