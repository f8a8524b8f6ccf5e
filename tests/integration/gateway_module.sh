#!/bin/bash
# SPDX-License-Identifier: MIT
# The model gateway is a module (src/gateway/module.h) that shackle-run
# opens only for a policy with a "models" section: shackle-run itself does
# not link libcurl or libmicrohttpd (their loading cost every start 20-40
# ms); without the module a policy without models still runs, one with
# models is refused (exit 125, the module named) instead of running
# without its gateway; a module that anyone else could have replaced is
# refused too.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd readelf
setup
MOD=$(dirname "$SHACKLE_RUN")/shackle-gateway.so
[ -f "$MOD" ] || { fail "the module is not built beside shackle-run ($MOD)"; finish; }
needed=$(readelf -d "$SHACKLE_RUN" | grep -c 'NEEDED.*\(libcurl\|libmicrohttpd\)')
expect_eq "shackle-run does not link libcurl or libmicrohttpd" "$needed" 0
PLAIN=$(plain_policy)
MODELS=$(policy models <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"},
 "models": {"prices": [{"model": "claude-*", "input": 3, "output": 15}],
            "upstream": {"anthropic": "http://127.0.0.1:9"}}}
JSON
)
# the build tree's shackle-run finds the module beside it
SHK_EXTRA=--verbose shk "$MODELS" -- /bin/true
expect_eq "with the module: exit status" "$RC" 0
expect_eq "... the gateway served" "$(grep -c '^shackle-run: model gateway: http://127.0.0.1:' "$ERR")" 1
# a copy of shackle-run alone
mkdir -m 0755 "$T/bin"
cp "$SHACKLE_RUN" "$T/bin/shackle-run"
SHACKLE_RUN=$T/bin/shackle-run shk "$PLAIN" -- /bin/true
expect_eq "no module, no models section: the agent runs" "$RC" 0
SHACKLE_RUN=$T/bin/shackle-run shk "$MODELS" -- /bin/true
expect_eq "no module, a models section: refused with 125" "$RC" 125
expect_eq "... saying why, naming the module" \
	"$(grep -c 'models" section, but the model gateway cannot be loaded: shackle-gateway.so not found' "$ERR")" 1
expect_eq "... the agent did not run: no call judged" "$(grep -c '"kind":"decision"' "$LOG" 2>/dev/null)" 0
# a module beside it that group or others may write
cp "$MOD" "$T/bin/shackle-gateway.so"
chmod 0775 "$T/bin/shackle-gateway.so"
SHACKLE_RUN=$T/bin/shackle-run shk "$MODELS" -- /bin/true
expect_eq "a group-writable module: refused with 125" "$RC" 125
expect_eq "... saying so" "$(grep -c "$T/bin/./shackle-gateway.so: refused: owned by another user or writable by group or others" "$ERR")" 1
# owned by a user who is neither root, the caller nor the executable's owner
chmod 0755 "$T/bin/shackle-gateway.so"
chown 65534 "$T/bin/shackle-gateway.so"
SHACKLE_RUN=$T/bin/shackle-run shk "$MODELS" -- /bin/true
expect_eq "a module of another owner: refused with 125" "$RC" 125
chown 0 "$T/bin/shackle-gateway.so"
SHACKLE_RUN=$T/bin/shackle-run SHK_EXTRA=--verbose shk "$MODELS" -- /bin/true
expect_eq "the same module, root's and 0755: exit status" "$RC" 0
expect_eq "... the gateway served" "$(grep -c '^shackle-run: model gateway: http://127.0.0.1:' "$ERR")" 1
finish
