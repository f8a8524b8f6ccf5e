#!/bin/bash
# SPDX-License-Identifier: MIT
# Real runtimes, not just test helpers:
#  - dash pipelines in a loop (fork-heavy, SIGPIPE): right output, no hang,
#    every exec audited;
#  - a node.js agent (libuv thread pool, epoll, non-blocking connects) with
#    many concurrent HTTP requests to the allowed server and to the forbidden
#    address, and a spawn of a denied binary.
. "$(dirname "$0")/lib.sh"
setup
start_listener
start_http401
POL=$(policy runtimes <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-touch", "path": "/usr/bin/touch", "action": "deny"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "forbidden", "cidr": "$FORBIDDEN/32", "action": "deny"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
DASH=$(command -v dash || echo /bin/sh)
ITER=40
SHK_TIMEOUT=120 shk "$POL" -- "$DASH" -c "i=0; n=0; while [ \$i -lt $ITER ]; do
	n=\$((n + \$(seq 1 200 | grep 7 | wc -l))); i=\$((i + 1)); done
	yes | head -n 1 >/dev/null; echo total=\$n"
show_run
expect_eq "dash pipelines: exit status" "$RC" 0
expect_eq "dash pipelines: output" "$(tail -n 1 "$OUT")" "total=$((ITER * 38))"
for t in seq grep wc yes head; do
	n=$(aq kind=decision tool=exec:$t verdict=ALLOW)
	case $t in yes | head) want=1 ;; *) want=$ITER ;; esac
	expect_eq "dash pipelines: exec:$t audited" "$n" "$want"
done
expect_audit_ok "dash pipelines"

if command -v node >/dev/null; then
	NODE=$(readlink -f "$(command -v node)")
	SHK_TIMEOUT=120 shk "$POL" -- "$NODE" "$IT/node_agent.js" "http://$ALLOWED:$HPORT/v1/x" \
		"http://$FORBIDDEN:$LPORT/v1/x" 40 /usr/bin/touch "$T/MARK"
	show_run
	j=$(tail -n 1 "$OUT")
	jq() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$j" "$1" 2>/dev/null; }
	expect_eq "node: exit status" "$RC" 0
	expect_eq "node: allowed requests answered 401" "$(jq 'd["allowed"].get("http:401", 0)')" 40
	expect_eq "node: forbidden requests refused with EPERM" "$(jq 'd["forbidden"].get("EPERM", 0)')" 10
	expect_eq "node: spawn of a denied binary" "$(jq 'd["spawn"]')" EPERM
	expect_absent "node: denied binary did not run" "$T/MARK"
	expect_no_arrival "node" "$FORBIDDEN"
	expect_eq "node: server saw every allowed request" "$(wc -l <"$T/http.log")" 40
	expect_audit_ok "node"
else
	note "node not installed: node part not run"
fi
finish
