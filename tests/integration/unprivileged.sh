#!/bin/bash
# SPDX-License-Identifier: MIT
# shackle-run started by an unprivileged user (no root anywhere): enforcement
# still works (no_new_privs + user notification), the defaults work (policy
# from policies/, audit log and public key under $XDG_STATE_HOME/shackle,
# ephemeral key), and the agent — same uid as its supervisor — can neither
# read the signing key nor append to or truncate the audit log.
. "$(dirname "$0")/lib.sh"
require_root # to become an unprivileged user
require_cmd setpriv
setup
start_listener
U=65534
np=$T/np
mkdir -p "$np/home" "$np/state"
cp "$T/key.key" "$np/key.key"
cp "$T/key.pub" "$np/key.pub"
chown -R "$U:$U" "$np"
chmod 700 "$np"
chmod 600 "$np/key.key"
as_user() {
	setpriv --reuid "$U" --regid "$U" --clear-groups --inh-caps=-all \
		env -i PATH=/usr/bin:/bin HOME="$np/home" XDG_STATE_HOME="$np/state" "$@"
}
POL=$(policy unpriv <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
N=$(helper shk-netprobe)
cat >"$T/agent.sh" <<SH
echo "allowed \$("$N" connect $ALLOWED $LPORT)"
echo "forbidden \$("$N" connect $FORBIDDEN $LPORT)"
echo "read-key \$(cat "$np/key.key" >/dev/null 2>&1 && echo OK || echo DENIED)"
echo "append-log \$( (echo garbage >>"$np/audit.jsonl") 2>/dev/null && echo OK || echo DENIED)"
echo "truncate-log \$( (: >"$np/audit.jsonl") 2>/dev/null && echo OK || echo DENIED)"
SH
chmod 644 "$T/agent.sh"

timeout 60 setpriv --reuid "$U" --regid "$U" --clear-groups --inh-caps=-all \
	env -i PATH=/usr/bin:/bin HOME="$np/home" XDG_STATE_HOME="$np/state" \
	"$SHACKLE_RUN" --policy "$POL" --audit "$np/audit.jsonl" --key "$np/key.key" \
	--non-interactive -- /bin/sh "$T/agent.sh" >"$T/u.out" 2>"$T/u.err"
RC=$?
cat "$T/u.out"
echo "--- stderr:"
cat "$T/u.err"
get() { awk -v l="$1" '$1 == l {print $2; exit}' "$T/u.out"; }
expect_eq "unprivileged: exit status" "$RC" 0
expect_eq "unprivileged: allowed connect" "$(get allowed)" OK
expect_eq "unprivileged: forbidden connect" "$(get forbidden)" EPERM
expect_no_arrival "unprivileged" "$FORBIDDEN"
expect_eq "unprivileged: agent reads the signing key" "$(get read-key)" DENIED
expect_eq "unprivileged: agent appends to the audit log" "$(get append-log)" DENIED
expect_eq "unprivileged: agent truncates the audit log" "$(get truncate-log)" DENIED
LOG=$np/audit.jsonl
expect_audit_ok "unprivileged run"

# The operator channel, without root: the agent has the operator's uid. The
# filter refuses its connects to the socket, and the directory is covered in
# its mount namespace, so it can neither rename the socket aside and serve
# its own in its place (showing the operator a harmless call for a held
# one) nor plant one. A held call is still seen and answered from outside.
mkdir -p "$np/run"
chown "$U:$U" "$np/run"
chmod 700 "$np/run"
POLH=$(policy unpriv-hitl <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false, "hitl_timeout_s": 30},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "ask", "cidr": "$ALLOWED/32", "action": "hitl"}
 ]}}
JSON
)
chmod 644 "$POLH"
CS=$np/run/shackle/unp-ctl.sock
cat >"$T/agent-ctl.sh" <<SH
echo "ctl-entries \$(ls -A "$np/run/shackle" 2>/dev/null | wc -l)"
echo "rename-socket \$(mv "$CS" "$np/aside.sock" 2>/dev/null && echo OK || echo DENIED)"
echo "plant-socket \$(touch "$np/run/shackle/fake.sock" 2>/dev/null && echo OK || echo DENIED)"
echo "held \$("$N" connect $ALLOWED $LPORT)"
SH
chmod 644 "$T/agent-ctl.sh"
as_user XDG_RUNTIME_DIR="$np/run" "$SHACKLE_RUN" --policy "$POLH" --audit "$np/ctl.jsonl" \
	--key "$np/key.key" --session unp-ctl -- /bin/sh "$T/agent-ctl.sh" \
	>"$T/c.out" 2>"$T/c.err" </dev/null &
bgc=$!
id=
for i in $(seq 100); do
	id=$(as_user XDG_RUNTIME_DIR="$np/run" "$SHACKLE" pending --json 2>/dev/null |
		"$PY" -c 'import json,sys; l=json.load(sys.stdin); print(l[0]["id"] if l else "")' 2>/dev/null)
	[ -n "$id" ] && break
	sleep 0.1
done
expect_ne "unprivileged: the operator sees the held call" "${id:-none}" none
# root may operate a session another user runs (the peer check must not
# take the supervisor's EPERM for a vanished peer)
rid=$(SHACKLE_CONTROL_DIR=$np/run/shackle "$SHACKLE" pending --json --session unp-ctl 2>"$T/rootop.err" |
	"$PY" -c 'import json,sys; l=json.load(sys.stdin); print(l[0]["id"] if l else "")' 2>/dev/null)
expect_eq "unprivileged: root as the operator sees the held call" "${rid:-none}" "${id:-none}"
[ -n "$id" ] && as_user XDG_RUNTIME_DIR="$np/run" "$SHACKLE" reject "$id" >"$T/rej.out" 2>&1
wait "$bgc"
cat "$T/c.out"
getc() { awk -v l="$1" '$1 == l {print $2; exit}' "$T/c.out"; }
expect_eq "unprivileged: the agent sees no control socket" "$(getc ctl-entries)" 0
expect_eq "unprivileged: the agent renames the control socket aside" "$(getc rename-socket)" DENIED
expect_eq "unprivileged: the agent plants a socket in the control directory" \
	"$(getc plant-socket)" DENIED
expect_eq "unprivileged: the rejected call" "$(getc held)" EPERM
[ -e "$np/aside.sock" ] && fail "unprivileged: the control socket was moved aside"
LOG=$np/ctl.jsonl
expect_audit_ok "unprivileged run with an operator channel"

# A directory above the covered one may be the agent's to rename: it moves
# run/ aside, makes run/shackle again and puts a socket of its own there,
# named as a session. The operator's commands talk only to a session served
# from their own user namespace (the agent's is another): the fake is not
# listed, and naming it is refused (second review).
POLF=$(policy unpriv-fake <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "unix", "unix": "/**", "action": "allow"}
 ]}}
JSON
)
chmod 644 "$POLF"
rm -rf "$np/run.moved"
cat >"$T/fake.py" <<PY
import os, socket, time
np = "$np"
os.rename(np + "/run", np + "/run.moved")
os.makedirs(np + "/run/shackle", mode=0o700)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(np + "/fake.sock")
s.listen(8)
os.rename(np + "/fake.sock", np + "/run/shackle/fake-sess.sock")
open(np + "/fake.ready", "w").close()
s.settimeout(6)
end = time.time() + 6
while time.time() < end:
    try:
        c, _ = s.accept()
    except OSError:
        break
    try:
        if c.recv(4096):
            c.sendall(b'{"ok":true,"pending":[{"id":"9","tool":"exec:git","reason":"policy_hitl","params":{"argv":["git","status"]}}]}\\n')
    except OSError:
        pass
    c.close()
PY
chmod 644 "$T/fake.py"
as_user XDG_RUNTIME_DIR="$np/run" "$SHACKLE_RUN" --policy "$POLF" --audit "$np/fake.jsonl" \
	--key "$np/key.key" --session unp-real -- "$AGENT_PY" "$T/fake.py" >"$T/f.out" 2>"$T/f.err" </dev/null &
bgf=$!
for i in $(seq 100); do [ -e "$np/fake.ready" ] && break; sleep 0.1; done
if [ ! -e "$np/fake.ready" ]; then
	cat "$T/f.err"
	fail "unprivileged: the fake-channel agent did not start"
else
	as_user XDG_RUNTIME_DIR="$np/run" "$SHACKLE" pending --json >"$T/fake.json" 2>"$T/fake.err"
	expect_eq "unprivileged: a fake session in a re-made control directory is not listed" \
		"$(grep -c fake-sess "$T/fake.json")" 0
	as_user XDG_RUNTIME_DIR="$np/run" "$SHACKLE" pending --session fake-sess >"$T/fake2.txt" 2>&1
	ls "$np/run/shackle"
	cat "$T/fake.json" "$T/fake.err" "$T/fake2.txt"
	expect_eq "unprivileged: naming the fake session does not reach it" "$(grep -c 'git status' "$T/fake2.txt")" 0
fi
wait "$bgf"
rm -rf "$np/run" && mv "$np/run.moved" "$np/run" 2>/dev/null

# Defaults: no --policy, --audit or --key.
as_user "$SHACKLE_RUN" --print-audit-path -- /bin/true >"$T/d.out" 2>"$T/d.err"
RC=$?
cat "$T/d.err"
expect_eq "defaults: exit status" "$RC" 0
LOG=$(sed -n 's/^audit: //p' "$T/d.err")
dpub=$(sed -n 's/^pubkey: //p' "$T/d.err")
case "$LOG" in
"$np/state/shackle/"*) pass "defaults: audit log under \$XDG_STATE_HOME/shackle ($LOG)" ;;
*) fail "defaults: audit log at '$LOG', not under $np/state/shackle" ;;
esac
if [ -s "$LOG" ] && [ -s "$dpub" ] &&
	"$SHACKLE" audit verify --pubkey "$dpub" "$LOG" >"$T/dv.out" 2>&1; then
	pass "defaults: the log verifies with the public key written beside it"
else
	fail "defaults: verify: $(tr '\n' ' ' <"$T/dv.out" 2>/dev/null)"
fi
if [ -n "$LOG" ] && [ -s "$LOG" ]; then
	d=$("$PY" "$IT/audit_query.py" "$LOG" kind=session_start --field policy.description)
	note "default policy: ${d:0:80}"
fi
finish
