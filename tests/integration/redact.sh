#!/bin/bash
# SPDX-License-Identifier: MIT
# The policy's redact list under shackle-run. A secret on command lines — a
# curl Authorization header inside a shell command line and as curl's own
# argument, --token=SECRET, and SECRET after --token — reaches the real
# programs (the request arrives, echo prints it) but never the audit log
# (decisions, session_start), `shackle pending` (text and --json) or
# `shackle watch`; the log verifies, and replay re-runs the redacted calls
# from their logged digests and says so.
. "$(dirname "$0")/lib.sh"
require_cmd curl
setup
start_http401
export SHACKLE_CONTROL_DIR=$T/ctl
SECRET="s3cr3t-$$-$RANDOM"
ECHO=$(readlink -f /bin/echo)
POL=$(policy redact <<JSON
{"version": 1,
 "redact": ["authorization", "token"],
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false, "hitl_timeout_s": 60},
 "exec": {"default": "allow", "rules": [
   {"name": "ask-echo", "path": "$ECHO", "argv": ["*", "--approve-me", "**"], "action": "hitl"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"},
   {"name": "unix", "unix": "/**", "action": "allow"}
 ]}}
JSON
)

no_secret() { # DESC FILE
	local n
	n=$(grep -c -- "$SECRET" "$2")
	if [ "$n" = 0 ]; then pass "$1: the secret is not in it"; else
		fail "$1: the secret appears on $n line(s) of $2"
	fi
}

# 1. the secret on command lines, non-interactive
shk "$POL" -- /bin/sh -c "curl -s -o /dev/null -w '%{http_code}\n' -H 'Authorization: Bearer $SECRET' \
http://$ALLOWED:$HPORT/redact; $ECHO --token=$SECRET one; $ECHO --token $SECRET two"
show_run
expect_eq "curl ran with its header" "$(head -n 1 "$OUT")" 401
expect_ge "the request reached the server" "$(grep -c 'GET /redact' "$T/http.log")" 1
expect_eq "echo got the real --token=" "$(sed -n 2p "$OUT")" "--token=$SECRET one"
expect_eq "echo got the real token after --token" "$(sed -n 3p "$OUT")" "--token $SECRET two"
no_secret "audit log" "$LOG"
expect_decision "sh's command line redacted" 1 kind=decision redacted=true 'params.argv~Authorization: [REDACTED:'
expect_decision "curl's own header argument redacted" 1 'params.argv~"-H","Authorization: [REDACTED:' \
	'params.argv~"http://'"$ALLOWED:$HPORT"'/redact"'
expect_ge "--token= redacted" "$(grep -c '"argv":\["[^"]*echo","--token=\[REDACTED:[0-9_]*\]","one"\]' "$LOG")" 1
expect_decision "the element after --token redacted" 1 'params.argv~"--token","[REDACTED:'
expect_eq "session_start's agent argv redacted" \
	"$(aq kind=session_start 'argv~Authorization: [REDACTED:')" 1
expect_no_decision "nothing unredacted that should be" redacted=false 'params.argv~--token'
expect_audit_ok "redacted command lines"
expect_ge "replay says which calls it re-ran from logged digests" \
	"$(grep -c 'had redacted params' "$T/replay.out")" 1
"$SHACKLE" audit replay --json "$LOG" >"$T/replay.json" 2>&1
expect_ge "replay --json counts the redacted decisions" \
	"$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["redacted_decisions"])' "$T/replay.json")" 4

# 1b. a secret next to an argument the log cannot hold (not UTF-8): the
#     call is denied by Rule 1 and logged (params null), nothing leaks
shk "$POL" -- /bin/sh -c "$ECHO \$(printf '\\377') --token=$SECRET; $ECHO after"
no_secret "audit log (non-UTF-8 argument)" "$LOG"
expect_decision "the non-UTF-8 exec is logged and denied" 1 tool=exec:echo verdict=DENY \
	reason=policy_violation:malformed_input
expect_ge "sh's command line still redacted, up to the shell's ';'" \
	"$(grep -c -- '--token=\[REDACTED:[0-9_]*\]; .*"redacted":true' "$LOG")" 1
expect_audit_ok "non-UTF-8 argument with a secret"

# 1c. review F1: a command after a secret stays visible (in the log here,
#     in `shackle pending` below): the shell's builtins and redirections
#     would appear nowhere else
shk "$POL" -- /bin/sh -c "token=1; : >$T/hidden1; echo \"token\": { ; : >$T/hidden2"
expect_eq "both redirections ran" "$(ls "$T"/hidden1 "$T"/hidden2 2>/dev/null | wc -l)" 2
expect_ge "the first is in the log after the marker" \
	"$(grep -c -- "token=\[REDACTED:1\]; : >$T/hidden1" "$LOG")" 1
expect_ge "the second too (after a quoted key and {)" \
	"$(grep -cF -- ': [REDACTED:2]; : >'"$T/hidden2" "$LOG")" 1

# 1d. review F2: the params_hash of a redacted call is keyed: the SHA-256
#     of the real canonical params (a 4-digit secret: 10^4 guesses) is not
#     in the log, while a plain call's params_hash is exactly that SHA-256
#     (the check below can tell), and equal redacted params give equal
#     digests within the session (the repeat guard still sees them)
shk "$POL" -- /bin/sh -c "$ECHO --token=4821; $ECHO --token=4821; $ECHO plain"
"$PY" - "$LOG" >"$T/hashes" <<'PYEOF'
import hashlib, json, sys
def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
for line in open(sys.argv[1], encoding="utf-8"):
    e = json.loads(line)
    if e.get("kind") != "decision" or "echo" not in str(e.get("tool")):
        continue
    real = json.loads(json.dumps(e["params"]).replace("[REDACTED:4]", "4821"))
    sha = hashlib.sha256(canon(real)).hexdigest()
    print("redacted" if e["redacted"] else "plain", e["params_hash"], "sha" if sha == e["params_hash"] else "other")
PYEOF
expect_eq "the plain call's params_hash is the SHA-256 of its params" "$(grep -c '^plain .* sha$' "$T/hashes")" 1
expect_eq "no redacted call's params_hash is the SHA-256 of the real params" \
	"$(grep -c '^redacted .* sha$' "$T/hashes")" 0
expect_eq "two redacted calls, one digest" "$(grep '^redacted ' "$T/hashes" | cut -d' ' -f2 | sort -u | wc -l)" 1
expect_eq "two redacted calls logged" "$(grep -c '^redacted ' "$T/hashes")" 2
expect_audit_ok "keyed digests"

# 2. a held call: the operator sees the redacted form, never the secret
S=redact-held
LOG=$T/audit-$S.jsonl
timeout -k 5 90 "$SHACKLE_RUN" --policy "$POL" --audit "$LOG" --key "$KEY" --session "$S" \
	-- "$ECHO" --approve-me "--token=$SECRET" >"$T/out-held" 2>"$T/err-held" </dev/null &
RUN_PID=$!
for i in $(seq 150); do
	"$SHACKLE" pending --json --session "$S" >"$T/pending.json" 2>/dev/null &&
		[ "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/pending.json")" -ge 1 ] && break
	sleep 0.1
done
"$SHACKLE" pending --session "$S" >"$T/pending.txt" 2>&1
ID=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$T/pending.json")
expect_ne "a call is held" "$ID" ""
no_secret "shackle pending --json" "$T/pending.json"
no_secret "shackle pending" "$T/pending.txt"
"$SHACKLE" watch --json --session "$S" >"$T/watch.json" 2>"$T/watch.err" &
WATCH=$!
sleep 0.5
expect_ge "pending --json shows the redacted form" "$(grep -c -- '--token=\[REDACTED:[0-9_]*\]' "$T/pending.json")" 1
expect_ge "pending shows the redacted form" "$(grep -c -- '--token=\[REDACTED:[0-9_]*\]' "$T/pending.txt")" 1
"$SHACKLE" reject "$ID" --as alice --session "$S" >"$T/op.out" 2>&1
expect_eq "reject: CLI status" "$?" 0
wait "$RUN_PID"
wait "$WATCH"
expect_ge "watch saw the decision, redacted" "$(grep '"event":"decision"' "$T/watch.json" | grep -c -- '--token=\[REDACTED:[0-9_]*\]')" 1
no_secret "shackle watch --json" "$T/watch.json"
no_secret "audit log of the held call" "$LOG"
expect_decision "the operator's rejection, redacted" 1 verdict=DENY reason=hitl_transition:reject redacted=true
expect_audit_ok "held call"
finish
