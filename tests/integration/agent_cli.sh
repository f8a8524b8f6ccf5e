#!/bin/bash
# SPDX-License-Identifier: MIT
# A real coding-agent CLI under shackle-run with the model gateway: Claude
# Code (pinned, installed from npm into the build tree) talks to a scripted
# model (claude_double.py) on loopback through the gateway shackle-run
# starts. Checked: ordinary varied work for 50 turns over connections the
# server drops is not stopped; the same tool proposal in a loop is refused
# after max_repeat_calls and no model request goes upstream after the trip;
# the budget stops the session at its spend over kept-alive connections;
# the CLI exits within 10 s of each refusal; the exec of each proposed Bash
# command links to its proposal; the real key goes upstream and
# the agent never sees it; a client that ignores the base URL is refused by
# the kernel. Every log verifies and replays.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
require_root # the agent runs as nobody, its HOME given to it
require_cmd npm
setup
CLI_VERSION=2.1.197
CLI_DIR=$BLD/tests/agent-cli-$CLI_VERSION
CLI=$CLI_DIR/node_modules/.bin/claude
if [ ! -x "$CLI" ]; then
	if ! timeout 300 npm install --prefix "$CLI_DIR" --no-audit --no-fund --loglevel=error \
		"@anthropic-ai/claude-code@$CLI_VERSION" >"$T/npm.log" 2>&1; then
		tail -n 5 "$T/npm.log"
		skip "npm install @anthropic-ai/claude-code@$CLI_VERSION failed"
	fi
	chmod -R a+rX "$CLI_DIR"
fi
expect_eq "the pinned CLI runs" "$("$CLI" --version 2>/dev/null | awk '{print $1}')" "$CLI_VERSION"

mkdir -p "$T/home" "$T/work"
chown nobody "$T/home" "$T/work"
REAL_KEY=sk-ant-real-$RANDOM$RANDOM
trap 'kill "$DPID" 2>/dev/null; cleanup' EXIT
pol() { gateway_policy "$1" "$2" "$3"; } # NAME BUDGET REPEAT
# shk in this shell, from the work directory, with the CLI's environment
run_cli() { # POLICY PROMPT
	pushd "$T/work" >/dev/null || exit 1
	HOME=$T/home ANTHROPIC_API_KEY=$REAL_KEY DISABLE_TELEMETRY=1 \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 SHK_TIMEOUT=120 \
		shk "$1" -- "$CLI" -p "$2" --allowedTools Bash
	popd >/dev/null || exit 1
}
# 1. ordinary varied work: 50 turns, the server closes every 3rd connection
start_double varied --turns 50 --close-every 3
run_cli "$(pol varied 5.0 3)" "do the work"
grep -q "done after 50 turns" "$OUT" || show_run
expect_eq "varied: the CLI finished its work" "$(grep -c 'done after 50 turns' "$OUT")" 1
expect_eq "varied: exit status" "$RC" 0
expect_eq "varied: every turn reached the model" "$(served)" 51
expect_eq "varied: ... with the real key, through the gateway" "$(grep -c " key=$REAL_KEY\$" "$STATS")" 51
expect_decision "varied: each model request judged" 51 kind=decision tool~model:claude verdict=ALLOW
expect_decision "varied: each proposal judged" 50 kind=decision tool=Bash verdict=ALLOW
expect_eq "varied: each response's usage settled" "$(aq kind=post_exec)" 51
# the CLI runs each Bash command as bash -c "... eval 'CMD' ...": linked
expect_eq "varied: each Bash command's exec links to its proposal" \
	"$(aq kind=decision params.argv~"eval 'echo turn-" inputs.proposal.tool=Bash)" 50
expect_no_decision "varied: nothing denied" verdict=DENY
expect_audit_ok "varied"

# 2. the loop of death: the same proposal again and again (a shell builtin:
# the kernel's own repeat guard would stop an identical exec first)
start_double loop --command "export -p >$T/agent-env.txt"
run_cli "$(pol loop 5.0 3)" "check the environment"
expect_decision "loop: the first 3 proposals pass" 3 kind=decision tool=Bash verdict=ALLOW
expect_decision "loop: the 4th is refused by the repeat guard" 1 kind=decision tool=Bash verdict=DENY \
	reason=max_repeat_exceeded
expect_eq "loop: the CLI was told why" "$(grep -c max_repeat_exceeded "$OUT")" 1
expect_eq "loop: no model request reached the model after the trip" "$(served)" 4
expect_eq "loop: nothing allowed after the trip" "$(allowed_after_trip)" 0
within_10s "loop: the CLI exited within 10 s of the refusal" "$(exit_after Bash)"
if grep -q "$REAL_KEY" "$T/agent-env.txt" 2>/dev/null; then
	fail "loop: the agent's environment holds the real key"
elif grep -q '^declare -x ANTHROPIC_BASE_URL="http://127.0.0.1:' "$T/agent-env.txt" 2>/dev/null; then
	pass "loop: the agent sees the gateway and a placeholder key, not the real one"
else
	fail "loop: the agent's environment was not captured"
fi
expect_audit_ok "loop"

# 3. the budget, over kept-alive connections: each answer costs 0.0315 USD
start_double varied --turns 100 --input-tokens 10000
run_cli "$(pol budget 0.2 0)" "do the work"
spent=$("$PY" -c 'import json,sys; print(round(sum(json.loads(l).get("actual_cost", 0) for l in open(sys.argv[1]) if "\"post_exec\"" in l), 6))' "$LOG")
expect_decision "budget: a model request refused for the budget" 1 kind=decision tool~model:claude \
	verdict=DENY reason~budget_
expect_eq "budget: what reached the model is what was allowed" "$(served)" \
	"$(aq kind=decision tool~model:claude verdict=ALLOW)"
expect_ge "budget: more than one request before it" "$(served)" 2
if awk -v s="$spent" 'BEGIN { exit !(s <= 0.2) }'; then pass "budget: spent $spent <= 0.2"; else
	fail "budget: spent $spent > 0.2"; fi
expect_ne "budget: the CLI reports the failure" "$RC" 0
within_10s "budget: the CLI exited within 10 s of the refusal" "$(exit_after model:)"
expect_audit_ok "budget"

# 4. a client that ignores the base URL: the kernel refuses its connect
require_cmd curl
start_double varied
shk "$(pol direct 1.0 3)" -- "$(readlink -f "$(command -v curl)")" -s -m 5 "http://127.0.0.1:$DP/v1/messages"
expect_eq "direct: curl could not connect (7)" "$RC" 7
expect_decision "direct: the connect to the model was denied" 1 kind=decision verdict=DENY params.port="$DP"
expect_eq "direct: nothing reached the model" "$(served)" 0

# 5. the key is wiped from shackle-run's own environment block too: an agent
# that may read /proc/<shackle-run>/environ (root here; the same uid without
# root) does not find it there
ANTHROPIC_API_KEY=$REAL_KEY SHK_USER=0 shk "$(pol environ 1.0 3)" -- /bin/sh -c \
	"tr '\\0' '\\n' </proc/\$PPID/environ | grep -c '$REAL_KEY'"
expect_eq "environ: the real key is not in shackle-run's /proc environ" "$(cat "$OUT")" 0
finish
