#!/bin/bash
# SPDX-License-Identifier: MIT
# Held syscalls, signals and death:
#  1. a thread blocked in a held call (a "hitl" rule, nobody answers) gets a
#     signal (no SA_RESTART, then SA_RESTART): the handler runs, the agent
#     does not hang, the call ends as EINTR or a denial, never as ALLOW;
#  2. the agent is SIGKILLed while its call is held: shackle-run returns 137
#     at once (not at the approval timeout), and the audit log verifies;
#  3. the agent is SIGKILLed in the middle of heavy concurrent traffic:
#     no hang, exit 137, the audit log verifies.
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy held <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false, "hitl_timeout_s": 120},
 "exec": {"default": "allow", "rules": [
   {"name": "ask-true", "path": "/usr/bin/true", "action": "hitl"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "ask-loopback", "cidr": "$ALLOWED/32", "port": $LPORT, "action": "hitl"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
H=$(helper shk-held)

# 3. Death during heavy concurrent traffic (no hold needed).
POL2=$(policy traffic <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
(
	for i in $(seq 100); do
		# anchored: shackle-run's own command line contains the same words
		p=$(pgrep -f "^$(helper shk-threads) 16 100000 " | head -n 1)
		if [ -n "$p" ]; then sleep 1; kill -9 $p; exit 0; fi
		sleep 0.1
	done
) &
BG_PIDS+=($!)
SHK_TIMEOUT=40 shk "$POL2" -- "$(helper shk-threads)" 16 100000 "$ALLOWED" "$FORBIDDEN" "$LPORT"
expect_eq "killed during traffic: exit status 128+9" "$RC" 137
expect_audit_ok "killed during traffic"

# Parts 1 and 2 need a call that is really held.
export SHK_HOLD=1
SHK_TIMEOUT=40

# Is a "hitl" call held at all without --non-interactive (and no terminal)?
shk "$POL" -- "$H" connect "$ALLOWED" "$LPORT" 1500 --restart
show_run
probe=$(tail -n 1 "$OUT")
call_ms=$(sed -n 's/.*call_ms=\([0-9]*\).*/\1/p' <<<"$probe")
if [ "${call_ms:-0}" -lt 1000 ]; then
	[ "$FAILS" = 0 ] || finish
	note "death during traffic passed; the held-call parts cannot run:"
	skip "shackle-run does not hold a hitl call without --non-interactive (answer: $probe)"
fi

for variant in "" --restart; do
	for op in "connect $ALLOWED $LPORT" "exec /usr/bin/true"; do
		shk "$POL" -- "$H" $op 500 $variant
		show_run
		line=$(tail -n 1 "$OUT")
		set -- $op
		d="signal during held $1 ${variant:-(no SA_RESTART)}"
		case "$line" in
		*handler_ms=never*) fail "$d: the signal handler never ran ($line)" ;;
		*handler_ms=*) pass "$d: handler ran ($line)" ;;
		*) fail "$d: no answer from the agent (exit $RC)" ;;
		esac
		case "$line" in
		OK*) fail "$d: a held call nobody approved was released ($line)" ;;
		EINTR* | EPERM* | EACCES*) pass "$d: call ended with ${line%% *}" ;;
		*) fail "$d: unexpected result ($line)" ;;
		esac
		expect_audit_ok "$d"
	done
done

# Death while held.
export SHK_HELD_PIDFILE=$T/held.pid
SHK_TIMEOUT=40 shk "$POL" -- "$H" connect "$ALLOWED" "$LPORT" 1000000 &
SPID=$!
if wait_file "$T/held.pid" 100; then
	sleep 1
	kill -9 "$(cat "$T/held.pid")"
else
	fail "held agent did not start"
fi
wait "$SPID"
# shk ran in a subshell: recover its results from the files of run 6
RUNS=$((RUNS + 1)); LOG=$T/audit-$RUNS.jsonl; OUT=$T/out-$RUNS; ERR=$T/err-$RUNS
unset SHK_HELD_PIDFILE
if [ -s "$LOG" ]; then
	pass "death while held: shackle-run returned"
	expect_audit_ok "death while held"
	n=$(aq kind=session_end)
	expect_eq "death while held: session_end recorded" "$n" 1
	code=$(aq kind=session_end --field exit_status)
	note "session_end exit_status: $code"
else
	fail "death while held: no audit log"
fi

finish
