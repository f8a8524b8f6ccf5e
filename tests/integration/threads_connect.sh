#!/bin/bash
# SPDX-License-Identifier: MIT
# Many threads connect at once, half to the allowed and half to the forbidden
# address: every allowed connect succeeds, every forbidden one is EPERM, the
# run neither hangs nor crashes, nothing reaches the forbidden address and
# every call is in the (verifiable) audit log.
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy threads <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "forbidden", "cidr": "$FORBIDDEN/32", "action": "deny"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
NT=${SHK_THREADS:-32}
ITER=${SHK_THREAD_ITER:-40}
SHK_TIMEOUT=150 shk "$POL" -- "$(helper shk-threads)" "$NT" "$ITER" "$ALLOWED" "$FORBIDDEN" "$LPORT"
show_run
line=$(tail -n 1 "$OUT")
half=$((NT * ITER / 2))
expect_eq "exit status" "$RC" 0
expect_eq "allowed connects that succeeded" "$(sed -n 's/.*ok=\([0-9]*\).*/\1/p' <<<"$line")" "$half"
expect_eq "forbidden connects denied with EPERM" "$(sed -n 's/.*denied=\([0-9]*\).*/\1/p' <<<"$line")" "$half"
expect_eq "wrong answers" "$(sed -n 's/.*wrong=\([0-9]*\).*/\1/p' <<<"$line")" 0
expect_no_arrival "concurrent connects" "$FORBIDDEN"
expect_eq "arrivals at the allowed address" "$(wait_arrivals $ALLOWED tcp "$half")" "$half"
expect_decision "every allowed connect audited" "$half" tool=net:connect verdict=ALLOW
expect_decision "every denied connect audited" "$half" tool=net:connect verdict=DENY
expect_audit_ok

# Threads that end untraced leave what was cached about them (their pid,
# exe and a pidfd) until their tid comes back: 1500 short-lived threads that
# connect once each must not grow the supervisor's descriptors without bound.
MANY=${SHK_MANY_THREADS:-1500}
cat >"$T/many.py" <<PY
import socket, threading, time
def one():
    s = socket.socket()
    s.connect(("$ALLOWED", $LPORT))
    s.close()
for i in range($MANY):
    t = threading.Thread(target=one)
    t.start()
    t.join()
open("$T/many.done", "w").write("done")
time.sleep(5)
PY
SHK_TIMEOUT=120 shk "$POL" -- "$AGENT_PY" "$T/many.py" &
bg=$!
if wait_file "$T/many.done" 1000; then
	sup=$(pgrep -o -f "^$SHACKLE_RUN .*it-$NAME-$((RUNS + 1)) ")
	nfd=$(ls "/proc/$sup/fd" 2>/dev/null | wc -l)
	note "shackle-run holds $nfd descriptors after $MANY threads"
	expect_le "supervisor descriptors after $MANY one-connect threads" "$nfd" 1200
else
	fail "the $MANY threads did not finish"
fi
wait "$bg"
RUNS=$((RUNS + 1)); LOG=$T/audit-$RUNS.jsonl; OUT=$T/out-$RUNS; ERR=$T/err-$RUNS
expect_decision "every thread's connect audited" "$MANY" tool=net:connect verdict=ALLOW
finish
