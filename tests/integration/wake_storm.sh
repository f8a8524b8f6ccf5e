#!/bin/bash
# SPDX-License-Identifier: MIT
# The loop thread waits inside the listener's RECV and is woken there by
# signals (src/supervise/wait.c): SIGCHLD, the forwarded signals, and the
# waker thread's kicks for the operator channel and the tick. A signal that
# lands between unblocking and entering the ioctl must not leave the loop
# asleep, and one that lands just after a notification was taken must not
# lose it. Here an agent connects and execs in a loop while shackle-run is
# hit with SIGWINCH (forwarded; ignored by the agent) as fast as a shell can
# send it and the operator channel is queried without pause: every call is
# answered and audited, nothing hangs, the log verifies.
. "$(dirname "$0")/lib.sh"
setup
start_listener
POL=$(policy storm <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
NC=${SHK_STORM_CONNECTS:-1500}
NE=${SHK_STORM_EXECS:-150}
cat >"$T/storm.py" <<PY
import os, socket, subprocess
ok = bad = ex = 0
for i in range($NC):
    s = socket.socket()
    try:
        s.connect(("$ALLOWED", $LPORT))
        ok += 1
    except OSError as e:
        bad += 1
    s.close()
    if i % ($NC // $NE) == 0 and ex < $NE:
        if subprocess.call(["/bin/true"]) == 0:
            ex += 1
# the storm below has sent its quota (signals and operator queries) while
# this process lived: on a loaded machine the loop can be over before that
import time
deadline = time.time() + 120
while not os.path.exists("$T/storm.done") and time.time() < deadline:
    time.sleep(0.05)
print("ok=%d bad=%d execs=%d" % (ok, bad, ex), flush=True)
PY
SESSION=it-$NAME-$((RUNS + 1))
(
	# until the run is over: signals and operator queries, back to back
	for _ in $(seq 400); do
		sup=$(pgrep -o -f "^$SHACKLE_RUN .*$SESSION ") && break
		sleep 0.05
	done
	[ -n "${sup:-}" ] || exit 0
	n=0 q=0
	while kill -0 "$sup" 2>/dev/null; do
		kill -WINCH "$sup" 2>/dev/null && n=$((n + 1))
		if [ $((n % 20)) = 0 ]; then
			"$SHACKLE" pending --json --session "$SESSION" >/dev/null 2>&1 && q=$((q + 1))
		fi
		[ "$n" -ge 100 ] && [ "$q" -ge 5 ] && [ ! -e "$T/storm.done" ] && : >"$T/storm.done"
	done
	echo "$n $q" >"$T/storm.count"
) &
storm=$!
# an operator channel: no --non-interactive (lib.sh unsets CI)
SHK_HOLD=1 SHK_TIMEOUT=180 shk "$POL" -- "$AGENT_PY" "$T/storm.py"
wait "$storm"
show_run
read -r nsig nq <"$T/storm.count" 2>/dev/null || { nsig=0; nq=0; }
note "$nsig SIGWINCH sent, $nq operator queries answered during the run"
expect_ge "signals sent during the run" "$nsig" 100
expect_ge "operator queries answered during the run" "$nq" 5
line=$(tail -n 1 "$OUT")
expect_eq "exit status" "$RC" 0
expect_eq "connects that succeeded" "$(sed -n 's/.*ok=\([0-9]*\).*/\1/p' <<<"$line")" "$NC"
expect_eq "execs that ran" "$(sed -n 's/.*execs=\([0-9]*\).*/\1/p' <<<"$line")" "$NE"
expect_decision "every connect audited" "$NC" tool=net:connect verdict=ALLOW
expect_decision "every exec audited" "$NE" tool=exec:true verdict=ALLOW
expect_audit_ok
# same-CPU wakeups where the kernel has them (6.6+); said, not required
if grep -q '"sync_wake":true' "$LOG"; then
	note "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP in use"
else
	note "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP not in use (kernel $(uname -r))"
fi
finish
