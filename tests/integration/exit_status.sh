#!/bin/bash
# SPDX-License-Identifier: MIT
# shackle-run's exit status is the command's (128+N when killed by signal
# N); standard output and input pass through; a signal sent to shackle-run
# reaches the agent.
. "$(dirname "$0")/lib.sh"
setup
POL=$(policy plain <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
)
shk "$POL" -- /bin/sh -c 'echo hello; exit 7'
expect_eq "exit code passes through" "$RC" 7
expect_eq "stdout passes through" "$(cat "$OUT")" hello
expect_audit_ok "exit 7"

shk "$POL" -- /bin/sh -c 'kill -TERM $$'
expect_eq "killed by SIGTERM -> 143" "$RC" 143
shk "$POL" -- /bin/sh -c 'kill -KILL $$'
expect_eq "killed by SIGKILL -> 137" "$RC" 137
expect_audit_ok "killed by SIGKILL"

echo piped-input | timeout 30 "$SHACKLE_RUN" --policy "$POL" --audit "$T/stdin.jsonl" --key "$KEY" \
	--non-interactive -- /bin/cat >"$T/stdin.out" 2>"$T/stdin.err"
expect_eq "stdin passes through" "$(cat "$T/stdin.out")" piped-input

# Signal forwarding: SIGTERM to shackle-run reaches the agent, whose handler
# exits 42.
timeout 30 "$SHACKLE_RUN" --policy "$POL" --audit "$T/fwd.jsonl" --key "$KEY" --non-interactive \
	-- /bin/sh -c 'trap "exit 42" TERM; echo ready; while :; do sleep 0.1; done' \
	>"$T/fwd.out" 2>"$T/fwd.err" &
SP=$!
wait_file "$T/fwd.out" 100 || fail "agent did not start"
kill -TERM "$SP"
wait "$SP"
expect_eq "SIGTERM forwarded to the agent (its handler exits 42)" "$?" 42
LOG=$T/fwd.jsonl
expect_audit_ok "forwarded signal"

# A signal shackle-run inherited ignored (nohup) stays ignored: not
# forwarded, and the agent inherits it ignored, as it would without us.
# (timeout catches SIGHUP itself: the trap is set below it)
timeout 30 bash -c 'trap "" HUP; exec "$@"' _ "$SHACKLE_RUN" --policy "$POL" \
	--audit "$T/ign.jsonl" --key "$KEY" --non-interactive -- /bin/sh -c \
	'grep ^SigIgn /proc/self/status; echo ready; sleep 1; echo survived' \
	>"$T/ign.out" 2>"$T/ign.err" &
TP=$!
wait_file "$T/ign.out" 100 || fail "agent did not start (ignored SIGHUP)"
sleep 0.2
kill -HUP "$(pgrep -o -f "^$SHACKLE_RUN .*$T/ign.jsonl")"
wait "$TP"
expect_eq "SIGHUP ignored by the caller: the agent is not killed" "$?" 0
expect_eq "... and finishes" "$(tail -n 1 "$T/ign.out")" survived
mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' "$T/ign.out")
expect_eq "... and inherits SIGHUP ignored (SigIgn bit 0)" "$(( 0x${mask:-0} & 1 ))" 1

# The command does not exist: shackle-run fails clearly, non-zero.
shk "$POL" -- /nonexistent/agent
expect_ne "missing command fails" "$RC" 0
if [ -s "$ERR" ]; then pass "missing command: message on stderr ($(head -n 1 "$ERR"))"; else
	fail "missing command: no message on stderr"; fi
# The policy file is read once: the document session_start records is the
# policy enforced. A FIFO gives each read other bytes (as a file rewritten
# between two reads would): the enforced policy allowed exec, a second read
# would have logged "deny" (red-team finding) and replay then diverged.
mkfifo "$T/pol.fifo"
( cat "$POL" >"$T/pol.fifo"; sleep 1; sed 's/"default": "allow"/"default": "deny"/' "$POL" >"$T/pol.fifo" ) &
feeder=$!
shk "$T/pol.fifo" -- /bin/true
kill "$feeder" 2>/dev/null
wait "$feeder" 2>/dev/null
expect_eq "policy from a FIFO: the agent ran" "$RC" 0
expect_eq "policy from a FIFO: session_start logs what was enforced" \
	"$(aq kind=session_start policy.exec.default=allow)" 1
expect_audit_ok "policy from a FIFO"

# An exec from a working directory longer than PATH_MAX (the exec stop
# compares the directory by identity, not by a name readlink cannot give:
# every exec there was killed, second review)
cat >"$T/deep.py" <<PY
import os
os.chdir("$T")
for i in range(24):
    os.makedirs("d" * 200, exist_ok=True)
    os.chdir("d" * 200)
rc = os.spawnv(os.P_WAIT, "/bin/true", ["true"])
print("deep-ok" if rc == 0 else "rc=%d" % rc)
PY
chmod 644 "$T/deep.py"
shk "$POL" -- "$AGENT_PY" "$T/deep.py"
expect_eq "exec from a working directory longer than PATH_MAX" "$(tail -n 1 "$OUT")" deep-ok
expect_eq "exec from a long working directory: exit status" "$RC" 0

finish
