#!/bin/bash
# SPDX-License-Identifier: MIT
# Human in the loop, end to end with real held syscalls: an agent's call
# matched by a "hitl" rule waits in the kernel while the operator (this
# script, another process outside the agent's tree) decides with the
# `shackle` CLI over the session's control socket.
#   approve, reject, modify (connect redirected), defer/escalate then
#   approve, duplicate resume, approval for the wrong digest (+ reset),
#   timeout expiry, non-interactive and CI=true, the agent trying to approve
#   itself (control socket connect, `shackle approve`), many concurrent
#   pending calls, a held process killed; every log verifies and replays.
. "$(dirname "$0")/lib.sh"
setup
start_listener
export SHACKLE_CONTROL_DIR=$T/ctl
AGENT_SHACKLE=$T/shackle-copy
cp "$SHACKLE" "$AGENT_SHACKLE" && chmod 755 "$AGENT_SHACKLE"

pol_for() { # NAME TIMEOUT
	policy "$1" <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true, "hitl_timeout_s": $2},
 "exec": {"default": "allow", "rules": [
   {"name": "ask-true", "path": "/usr/bin/true", "action": "hitl"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "ask-forbidden", "cidr": "$FORBIDDEN/32", "port": $LPORT, "action": "hitl"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"},
   {"name": "unix", "unix": "/**", "action": "allow"}
 ]}}
JSON
}
POL=$(pol_for hitl 120)
POL_SHORT=$(pol_for short 2)

# bg_run SESSION POLICY -- CMD...: shackle-run in the background, calls held.
bg_run() {
	local s=$1 pol=$2
	shift 3
	RUNS=$((RUNS + 1))
	LOG=$T/audit-$s.jsonl
	OUT=$T/out-$s
	ERR=$T/err-$s
	SESSION=$s
	timeout -k 5 90 "$SHACKLE_RUN" --policy "$pol" --audit "$LOG" --key "$KEY" --session "$s" \
		${SHK_USER:+--user "$SHK_USER"} -- "$@" >"$OUT" 2>"$ERR" </dev/null &
	RUN_PID=$!
}
bg_wait() {
	wait "$RUN_PID"
	RC=$?
}

pending_field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0][sys.argv[2]])' "$T/pending.json" "$1"; }

op() { "$SHACKLE" "$@" --session "$SESSION" >"$T/op.out" 2>&1; OPRC=$?; }

AGENT='/usr/bin/true && echo released || echo denied'

# 1. approve (with a watcher, --json, that sees the wait and the decision)
bg_run approve "$POL" -- /bin/sh -c "$AGENT"
ID=$(wait_pending 1)
expect_ne "approve: a call is pending" "$ID" ""
expect_eq "approve: tool" "$(pending_field tool)" "exec:true"
"$SHACKLE" watch --json --session approve >"$T/watch.json" 2>"$T/watch.err" &
WATCH=$!
# connected once it has listed what waits (the watch answer carries it)
wait_file "$T/watch.json" 300
op approve "$ID" --as alice
expect_eq "approve: CLI status" "$OPRC" 0
bg_wait
wait "$WATCH"
expect_eq "watch: ends with the session" "$?" 0
expect_eq "watch: the decision event" \
	"$("$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("event") == "resolved": print(e["state"], e["operator"], e["verdict"], e["reason"])' "$T/watch.json")" \
	"approved alice ALLOW hitl_transition:approve"
expect_ge "watch: the released call is seen as a decision" \
	"$(grep -c '"event":"decision"' "$T/watch.json")" 1
expect_eq "approve: agent's call ran" "$(tail -n 1 "$OUT")" "released"
expect_decision "approve: released by decide()" 1 verdict=ALLOW reason=hitl_transition:approve operator=alice
expect_eq "approve: hitl entries" "$(aq kind=hitl state=pending),$(aq kind=hitl state=approved operator=alice)" "1,1"
expect_audit_ok "approve"
# duplicate resume: the call was released; a second approve has no effect
# (the session is over, so this is checked on a live one below)

# 2. reject, and a second resume (a person-readable watcher sees the wait)
bg_run reject "$POL" -- /bin/sh -c "sleep 1; $AGENT; sleep 3"
# --wait: a watcher that starts before the session's socket exists waits for
# it (alive after a moment did not mean connected: a slow start under ASan
# found no session yet and exited)
"$SHACKLE" watch --wait --session reject >"$T/watch.txt" 2>&1 &
WATCH=$!
ID=$(wait_pending 1)
wait_grep "$T/watch.txt" "WAIT   id $ID"
op reject "$ID" --as bob
expect_eq "reject: CLI status" "$OPRC" 0
op approve "$ID"
expect_eq "duplicate resume: CLI status" "$OPRC" 1
expect_in "duplicate resume: reported" "$(grep -o 'duplicate_resume_no_effect' "$T/op.out" | head -n 1)" \
	duplicate_resume_no_effect
bg_wait
expect_eq "reject: agent's call denied" "$(head -n 1 "$OUT" | tail -n 1)" "denied"
expect_decision "reject: decided by decide()" 1 verdict=DENY reason=hitl_transition:reject operator=bob
expect_decision "duplicate resume: judged" 1 verdict=DENY reason=policy_violation:duplicate_resume_no_effect
expect_eq "reject: breaker not tripped" "$(aq kind=breaker_trip)" 0
wait "$WATCH"
expect_ge "watch: the wait, readable" "$(grep -c "WAIT   id $ID" "$T/watch.txt")" 1
expect_ge "watch: the rejection, readable" "$(grep -c "rejected id $ID by bob" "$T/watch.txt")" 1
expect_audit_ok "reject + duplicate resume"

# 3. modify: a held connect to the forbidden witness goes to the allowed one
bg_run modify "$POL" -- "$(helper shk-netprobe)" connect "$FORBIDDEN" "$LPORT"
ID=$(wait_pending 1)
op modify "$ID" --connect "$FORBIDDEN:1"
expect_eq "modify: a destination the policy denies is refused" "$OPRC" 1
op modify "$ID" --connect "$ALLOWED:$LPORT" --as carol
expect_eq "modify: CLI status" "$OPRC" 0
bg_wait
expect_eq "modify: the agent's connect succeeded" "$(answer)" OK
expect_in "modify: arrived at the operator's destination" "$(wait_arrivals "$ALLOWED" tcp 1)" 1 2
expect_no_arrival "modify" "$FORBIDDEN"
expect_decision "modify: successor released" 1 verdict=ALLOW reason=hitl_transition:modify_successor
expect_eq "modify: hitl entry" "$(aq kind=hitl state=modified operator=carol)" 1
expect_audit_ok "modify"

# modify of an exec is refused with a reason; the call stays held
bg_run modify-exec "$POL" -- /bin/sh -c "$AGENT"
ID=$(wait_pending 1)
op modify "$ID" --connect "$ALLOWED:80"
expect_eq "modify exec: refused" "$OPRC" 1
expect_in "modify exec: reason" "$(grep -o 'connect() calls' "$T/op.out")" "connect() calls"
op reject "$ID"
bg_wait
expect_audit_ok "modify exec"

# 4. defer and escalate keep it held; then approve
bg_run defer "$POL" -- /bin/sh -c "$AGENT"
ID=$(wait_pending 1)
op defer "$ID"
expect_eq "defer: CLI status" "$OPRC" 0
wait_pending 1 >/dev/null
expect_eq "defer: still pending" "$(pending_field state)" deferred
op escalate "$ID" --as lead
wait_pending 1 >/dev/null
expect_eq "escalate: still pending" "$(pending_field state)" escalated
op approve "$ID" --as lead
bg_wait
expect_eq "defer/escalate/approve: released" "$(tail -n 1 "$OUT")" "released"
expect_decision "defer: held again by decide()" 2 verdict=HITL reason=hitl_transition:defer_escalate
expect_audit_ok "defer/escalate"

# 5. an approval bound to another digest releases nothing; reset reopens
# (the agent waits with shell builtins only: any exec before the reset
# would meet the open breaker)
bg_run digest "$POL" -- /bin/sh -c "$AGENT; while [ ! -e $T/go ]; do :; done; /usr/bin/id -u >/dev/null && echo after-reset"
ID=$(wait_pending 1)
op approve "$ID" --digest "$(printf '0%.0s' $(seq 64))"
expect_eq "wrong digest: CLI status (the call was denied, not released)" "$OPRC" 1
expect_in "wrong digest: said" "$(grep -o 'is denied, not released' "$T/op.out")" "is denied, not released"
op reset --as dave
touch "$T/go"
expect_eq "reset: CLI status" "$OPRC" 0
bg_wait
expect_eq "wrong digest: denied" "$(head -n 1 "$OUT")" denied
expect_eq "reset: agent runs again" "$(tail -n 1 "$OUT")" after-reset
expect_decision "wrong digest: decide()" 1 verdict=DENY reason=hitl_transition:digest_mismatch
expect_eq "reset: audited with the operator" "$(aq kind=hitl state=breaker_reset operator=dave)" 1
expect_audit_ok "wrong digest + reset"

# 6. nobody answers: denied at hitl_timeout_s with its own entry
t0=$SECONDS
bg_run expire "$POL_SHORT" -- /bin/sh -c "$AGENT"
bg_wait
expect_eq "expiry: denied" "$(tail -n 1 "$OUT")" denied
expect_le "expiry: within the timeout" "$((SECONDS - t0))" 10
expect_eq "expiry: hitl expired entry" "$(aq kind=hitl state=expired)" 1
expect_audit_ok "expiry"

# hitl_timeout_s 0 (policies/ci-agent.json): denied at once, even with a channel
POL_ZERO=$(pol_for zero 0)
SHK_HOLD=1 shk "$POL_ZERO" -- /bin/sh -c "$AGENT"
expect_eq "timeout 0: denied" "$(tail -n 1 "$OUT")" denied
expect_le "timeout 0: at once" "$ELAPSED" 5
expect_eq "timeout 0: never ALLOW" "$(aq kind=decision verdict=ALLOW tool=exec:true)" 0
expect_audit_ok "timeout 0"

# 7. non-interactive, and CI=true without an operator channel: blocked at once
shk "$POL" -- /bin/sh -c "$AGENT"
expect_eq "non-interactive: denied" "$(tail -n 1 "$OUT")" denied
expect_le "non-interactive: at once" "$ELAPSED" 5
expect_eq "non-interactive: never ALLOW" "$(aq kind=decision verdict=ALLOW tool=exec:true)" 0
expect_audit_ok "non-interactive"
CI=true SHK_HOLD=1 shk "$POL" -- /bin/sh -c "$AGENT"
expect_eq "CI=true: denied" "$(tail -n 1 "$OUT")" denied
expect_le "CI=true: at once" "$ELAPSED" 5
expect_audit_ok "CI=true"

# 8. the agent tries to approve itself (as root: only the interception and
# the peer checks stand in the way)
cat >"$T/self.sh" <<SH
/usr/bin/true && echo released || echo denied &
sleep 1
for s in "$SHACKLE_CONTROL_DIR"/*.sock; do
	"$AGENT_PY" -c 'import socket,sys; c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); print("CONNECTED")' "\$s" 2>/dev/null || echo "connect refused"
done
SHACKLE_CONTROL_DIR="$SHACKLE_CONTROL_DIR" "$AGENT_SHACKLE" pending >/dev/null 2>&1 && echo "pending worked" || echo "pending refused"
for id in \$(seq 1 20); do
	SHACKLE_CONTROL_DIR="$SHACKLE_CONTROL_DIR" "$AGENT_SHACKLE" approve \$id >/dev/null 2>&1 && echo "APPROVED \$id"
done
echo attempts-done
wait
SH
chmod 755 "$T/self.sh"
SHK_USER=0 bg_run self "$POL" -- /bin/sh "$T/self.sh"
ID=$(wait_pending 1)
# still pending once every attempt of the agent has been made (not merely a
# while after the call was held)
wait_grep "$OUT" '^attempts-done' || fail "self-approval: the agent's attempts did not end"
expect_eq "self-approval: still pending" "$(wait_pending 1)" "$ID"
op reject "$ID"
bg_wait
expect_eq "self-approval: no socket connect" "$(grep -c CONNECTED "$OUT")" 0
expect_eq "self-approval: no approve" "$(grep -c APPROVED "$OUT")" 0
expect_eq "self-approval: call denied by the operator" "$(grep -c '^denied' "$OUT")" 1
expect_decision "self-approval: connects denied" 1 tool=net:connect verdict=DENY rule=builtin:operator-channel
expect_audit_ok "self-approval"

# 9. many calls pending at once, approved in reverse order
bg_run many "$POL" -- /bin/sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do (/usr/bin/true && echo ok) & done; wait'
IDS=$(wait_pending 10)
expect_eq "many: 10 pending" "$(echo "$IDS" | wc -w)" 10
for id in $(echo "$IDS" | tr ' ' '\n' | sort -rn); do
	op approve "$id"
done
bg_wait
expect_eq "many: all released" "$(grep -c '^ok' "$OUT")" 10
expect_decision "many: approvals" 10 reason=hitl_transition:approve
expect_audit_ok "many"

# 10. the held process is killed: cancelled, no zombie approval, no hang
bg_run killed "$POL" -- /bin/sh -c "$AGENT; echo after"
ID=$(wait_pending 1)
HPID=$(pending_field pid)
kill -9 "$HPID"
expect_eq "killed: nothing pending" "$(wait_no_pending)" ""
bg_wait
expect_eq "killed: cancelled in the log" "$(aq kind=hitl state=cancelled)" 1
op approve "$ID"
expect_eq "killed: session gone, approve fails" "$OPRC" 1
expect_audit_ok "killed"

# 11. what the operator is shown of a held call is what it is: the agent
#     chooses argv and program names, and a terminal acts on the escape
#     sequences in them (a red-team agent erased the line of a held
#     `git push --force URL` and printed a harmless command over it), and a
#     long argument pushed the rest out of a silently cut column.
ESC=$(printf '\033')
LONG=$(printf 'x%.0s' $(seq 600))
bg_run shown "$POL" -- /usr/bin/true "${ESC}[2K${ESC}[1Gharmless" "$LONG" tail-arg
ID=$(wait_pending 1)
"$SHACKLE" pending --session shown >"$T/shown.txt" 2>&1
"$SHACKLE" pending --json --session shown >"$T/shown.json" 2>&1
cat "$T/shown.txt"
if grep -q "$ESC" "$T/shown.txt"; then
	fail "shown: pending printed a raw escape character"
else
	pass "shown: no raw escape character in pending's table"
fi
expect_eq "shown: the escape is written out" "$(grep -c "'\\\\x1b\[2K\\\\x1b\[1Gharmless'" "$T/shown.txt")" 1
expect_eq "shown: the cut says how much is missing" "$(grep -c 'more bytes here; the audit log has all' "$T/shown.txt")" 1
expect_eq "shown: --json has the whole argv" "$(grep -c tail-arg "$T/shown.json")" 1
op reject "$ID"
bg_wait
expect_audit_ok "shown"
# ... and audit show: a program named with an escape sequence
cp /bin/echo "$T/${ESC}[31mred"
shk "$POL" -- "$T/${ESC}[31mred"
"$SHACKLE" audit show "$LOG" >"$T/show.txt" 2>&1
if grep -q "$ESC" "$T/show.txt"; then
	fail "audit show printed a raw escape character"
else
	pass "audit show: no raw escape character"
fi
expect_eq "audit show: the program name written out" "$(grep -c 'exec:\\x1b\[31mred' "$T/show.txt")" 1

# 12. held calls with huge arguments: the listing stays within what the
#     channel sends one client (4 MiB), so the operator is not dropped and
#     told that nothing waits (red-team finding); cut values say so.
cat >"$T/huge.py" <<'PY'
import os
a = "\x01" * 120000
kids = []
for i in range(3):  # not Popen: it waits for each exec, held here
    pid = os.fork()
    if pid == 0:
        os.execv("/usr/bin/true", ["/usr/bin/true", a, a + str(i)])
    kids.append(pid)
for pid in kids:
    os.waitpid(pid, 0)
PY
chmod 644 "$T/huge.py"
bg_run huge "$POL" -- "$AGENT_PY" "$T/huge.py"
IDS=$(wait_pending 3)
expect_eq "huge: 3 pending in the listing" "$(echo "$IDS" | wc -w)" 3
expect_eq "huge: every entry says it was cut" \
	"$("$PY" -c 'import json,sys; print(sum(1 for p in json.load(open(sys.argv[1])) if p.get("params_cut")))' "$T/pending.json")" 3
"$SHACKLE" pending --session huge >"$T/huge.txt" 2>&1
expect_eq "huge: the table shows 3 rows" "$(grep -c '^[0-9]' "$T/huge.txt")" 3
expect_le "huge: the listing is small" "$(wc -c <"$T/pending.json")" 200000
for id in $IDS; do op reject "$id"; done
bg_wait
expect_audit_ok "huge"

# 13. the directory an approved exec runs in is the one shown: a second
#     thread chdir()s while the exec is held, then the operator approves
#     (a red-team agent pushed another repository this way). The exec stop
#     compares the process's directory with the judged one and kills.
CW=$(helper shk-cwd)
mkdir -p "$T/d1" "$T/d2"
chmod 755 "$T/d1" "$T/d2"
for v in moved same; do
	d2=$T/d2
	[ $v = same ] && d2=$T/d1
	bg_run "cwd-$v" "$POL" -- "$CW" exec "$T/d1" "$d2" 300 /usr/bin/true
	ID=$(wait_pending 1)
	expect_eq "cwd-$v: the held call shows the directory it was judged in" \
		"$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["params"]["cwd"])' "$T/pending.json")" "$T/d1"
	wait_grep "$OUT" '^moved'
	op approve "$ID"
	bg_wait
	expect_eq "cwd-$v: the thread changed directory while the exec was held" "$(grep -c '^moved' "$OUT")" 1
	if [ $v = moved ]; then
		expect_eq "cwd-moved: the approved exec is killed at the exec stop" "$RC" 137
		expect_eq "cwd-moved: counted as killed" "$(aq kind=session_end counters.exec_killed=1)" 1
	else
		expect_eq "cwd-same: the approved exec runs" "$RC" 0
	fi
	expect_audit_ok "cwd-$v"
done
# a process that shares its working directory with another (clone CLONE_FS
# without CLONE_THREAD) could change it after the exec stop: refused
expect_eq "clone(CLONE_FS) outside shackle-run" "$("$CW" clone-fs)" ok
shk "$POL" -- "$CW" clone-fs
expect_eq "clone(CLONE_FS) under shackle-run" "$(answer)" EPERM

finish
