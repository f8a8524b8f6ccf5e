#!/bin/bash
# SPDX-License-Identifier: MIT
# A plain Python agent loop (gateway_agent.py: stdlib urllib, a connection
# per request, each proposed Bash command run with subprocess) under
# shackle-run with the model gateway, against the scripted model
# (claude_double.py). Checked: 50 varied turns are not stopped; the same
# proposal in a loop is refused after max_repeat_calls, and the agent's
# next request is refused without reaching the model; the budget stops the
# session at its spend; the agent exits within 10 s of each refusal; every
# bad input the gateway answers leaves one refusal entry that verify,
# replay and show accept; each `sh -c` exec of a proposed command links to
# its proposal in the log (replay derives the links again), and a link
# never lets through an exec the policy denies; an exec that carries out a
# proposal is a member of its tool call (out of the repeat guard, which the
# proposal is counted in), and a proposal held for a person and approved
# with `shackle approve` links to its exec; the same command proposed with
# a new description each turn is one call again under a rule's
# ignore_input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/agent_lib.sh"
require_root # the agent runs as nobody
setup
trap 'kill "$DPID" 2>/dev/null; cleanup' EXIT
AGENT=$IT/gateway_agent.py
REAL_KEY=sk-ant-real-$RANDOM$RANDOM
pol() { gateway_policy "$1" "$2" "$3" '"max_request_bytes": 65536'"${4:+, $4}"; } # NAME BUDGET REPEAT [MODELS_EXTRA]
run_agent() { # POLICY ARGS...
	local p=$1
	shift
	pushd "$T" >/dev/null || exit 1
	HOME=$T ANTHROPIC_API_KEY=$REAL_KEY SHK_TIMEOUT=120 shk "$p" -- "$AGENT_PY" "$AGENT" "$@"
	popd >/dev/null || exit 1
}

# 1. 50 varied turns, the server closing every 3rd connection; first the
# bad inputs, each answered and logged
start_double varied --turns 50 --close-every 3
run_agent "$(pol varied 5.0 3)" --bad-inputs
grep -q "done after 50 turns" "$OUT" || show_run
expect_eq "varied: the agent finished its work" "$(grep -c 'model: done after 50 turns' "$OUT")" 1
expect_eq "varied: exit status" "$RC" 0
expect_eq "varied: every turn reached the model" "$(served)" 51
expect_eq "varied: ... with the real key" "$(grep -c " key=$REAL_KEY\$" "$STATS")" 51
expect_decision "varied: each proposal judged" 50 kind=decision tool=Bash verdict=ALLOW
expect_no_decision "varied: nothing denied" verdict=DENY
# shackle-run's gateway reaches the upstream from outside the supervised
# tree: those 51 connects are no kernel calls of the agent's
expect_eq "varied: no kernel call to the upstream" "$(aq kind=decision tool~net: params.port=$DP)" 0
expect_ge "varied: ... in a log that holds the agent's kernel calls" "$(aq kind=decision tool~exec:)" 1
bad=$(grep '^bad ' "$OUT" | tr '\n' ' ')
expect_eq "bad inputs: answered with their statuses" "$bad" \
	"bad malformed_json 400 bad invalid_utf8 400 bad unknown_endpoint 404 bad get 405 bad oversize 413 bad wrong_key 401 bad unpriced 403 "
expect_eq "bad inputs: one refusal entry each" "$(aq kind=refusal origin=gateway --field what | tr '\n' ' ')" \
	"malformed_request malformed_request unknown_endpoint method_not_allowed too_large wrong_key unpriced_model "
"$SHACKLE" audit show "$LOG" >"$T/show.out" 2>&1
expect_eq "bad inputs: audit show prints them" "$(grep -c 'REFUSED gateway' "$T/show.out")" 7
"$SHACKLE" audit replay --json "$LOG" >"$T/replay.json" 2>&1
expect_eq "bad inputs: replay counts them" "$(json_get "$T/replay.json" refusals)" 7
# each command ran as /bin/sh -c CMD (subprocess, shell=True)
expect_eq "links: every sh -c exec links to the Bash proposal it carries out" \
	"$(aq kind=decision params.argv~'"-c","echo turn-' inputs.proposal.tool=Bash)" 50
expect_eq "links: turn 7's exec names turn 7's proposal" \
	"$(aq kind=decision params.argv~'"echo turn-7"' --field inputs.proposal.seq)" \
	"$(aq kind=decision tool=Bash params.command='echo turn-7' --field seq)"
expect_eq "links: nothing else links" "$(aq kind=decision inputs.proposal.seq~)" 50
expect_eq "links: audit show prints them" "$(grep -c '  proposal seq [0-9]* Bash$' "$T/show.out")" 50
expect_eq "links: replay derives them again" "$(json_get "$T/replay.json" proposal_links)" 50
# a link moved to another proposal, or dropped, is a divergence (replay
# without --pubkey: the chain is not what is tested here)
for how in moved dropped; do
	"$PY" - "$LOG" "$T/links-$how.jsonl" "$how" <<'PYEOF'
import json, sys
src, dst, how = sys.argv[1:]
with open(src) as f, open(dst, "w") as out:
    done = False
    for line in f:
        e = json.loads(line)
        link = (e.get("inputs") or {}).get("proposal") if e.get("kind") == "decision" else None
        if link and not done:
            done = True
            if how == "moved":
                link["seq"] += 1
            else:
                del e["inputs"]["proposal"]
            line = json.dumps(e, separators=(",", ":")) + "\n"
        out.write(line)
PYEOF
	"$SHACKLE" audit replay "$T/links-$how.jsonl" >"$T/links-$how.out" 2>&1
	expect_eq "links: replay refuses a link $how" \
		"$(grep -c '^DIVERGED .*inputs.proposal' "$T/links-$how.out")" 1
done
expect_audit_ok "varied"

# 2. the loop: the same proposal (a shell builtin) again and again
start_double loop --command ": the same call"
run_agent "$(pol loop 5.0 3)"
expect_decision "loop: the first 3 proposals pass" 3 kind=decision tool=Bash verdict=ALLOW
expect_eq "loop: the 4th is refused by the repeat guard" \
	"$(aq kind=decision tool=Bash verdict=DENY reason=max_repeat_exceeded)" 1
expect_eq "loop: the agent was told why" "$(grep -c 'model: .*max_repeat_exceeded' "$OUT")" 1
expect_decision "loop: its next request is refused" 1 kind=decision tool~model: verdict=DENY \
	reason=circuit_open
expect_eq "loop: nothing reached the model after the trip" "$(served)" 4
expect_eq "loop: nothing allowed after the trip" "$(allowed_after_trip)" 0
expect_eq "loop: the agent reports the refusal" "$RC" 1
within_10s "loop: the agent exited within 10 s of the refusal" "$(exit_after Bash)"
expect_audit_ok "loop"

# 3. the budget: each answer costs 0.0315 USD. The agent's requests are
# small, so their estimates pass until the budget is spent; the response
# that spends it is charged in full (output is not estimated up front,
# docs/gateway.md) and its proposal is refused: at most one answer over.
start_double varied --turns 100 --input-tokens 10000
run_agent "$(pol budget 0.2 0)"
spent=$("$PY" -c 'import json,sys; print(round(sum(json.loads(l).get("actual_cost", 0) for l in open(sys.argv[1]) if "\"post_exec\"" in l), 6))' "$LOG")
expect_eq "budget: the first refusal is the budget's" \
	"$(aq kind=decision verdict=DENY --field reason | head -n 1)" budget_exhausted
expect_eq "budget: then the breaker refuses the next request" \
	"$(aq kind=decision tool~model: verdict=DENY --field reason | head -n 1)" circuit_open
expect_eq "budget: what reached the model is what was allowed" "$(served)" \
	"$(aq kind=decision tool~model: verdict=ALLOW)"
expect_ge "budget: more than one request before it" "$(served)" 2
if awk -v s="$spent" 'BEGIN { exit !(s >= 0.2 && s < 0.2 + 0.0315) }'; then
	pass "budget: stopped at its spend: 0.2 <= $spent < 0.2 + one answer"
else
	fail "budget: spent $spent, want 0.2 <= spent < 0.2315"
fi
expect_eq "budget: the agent reports the refusal" "$RC" 1
within_10s "budget: the agent exited within 10 s of the refusal" "$(exit_after model:)"
expect_audit_ok "budget"

# 4. a link is evidence, never a permission: the exec a proposal asks for,
# denied by an exec rule, is denied and still names its proposal
start_double varied --turns 1
p=$(policy link-deny <<JSON
{"version": 1,
 "guard": {"budget_usd": 1.0, "max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow",
          "rules": [{"name": "no-turn-0", "argv": ["*", "-c", "echo turn-0"], "action": "deny"}]},
 "net": {"default": "deny"},
 "models": {"prices": [{"model": "claude-*", "input": 3, "output": 15}],
            "upstream": {"anthropic": "http://127.0.0.1:$DP"}}}
JSON
)
run_agent "$p" --max-turns 1
expect_eq "link-deny: the proposal was allowed" "$(aq kind=decision tool=Bash verdict=ALLOW)" 1
expect_eq "link-deny: its exec is denied by the rule, linked to it" \
	"$(aq kind=decision verdict=DENY rule=no-turn-0 --field inputs.proposal.seq)" \
	"$(aq kind=decision tool=Bash --field seq)"
expect_audit_ok "link-deny"

# replay_drops_links DESC: a copy of the log without its links diverges
replay_drops_links() {
	sed -e 's/"inputs":{"proposal":{[^}]*}}/"inputs":{}/' "$LOG" >"$T/nolinks.jsonl"
	"$SHACKLE" audit replay "$T/nolinks.jsonl" >"$T/nolinks.out" 2>&1
	expect_eq "$1" "$(grep -c '^DIVERGED .*inputs.proposal' "$T/nolinks.out")" 1
}

# 5. one tool call of the model is one tool call: the agent ran the command
# itself first (counted), then the model proposes it again and again. The
# proposal guard stops the 4th proposal; the execs, members of their
# proposals' tool calls, are not counted a second time (counted, the 3rd
# proposal's exec was the 4th identical exec and refused before it).
start_double loop --command "ls -d /"
run_agent "$(pol members 5.0 3)" --run-first "ls -d /"
execs() { aq kind=decision params.argv~'"-c","ls -d /"' "$@"; }
expect_eq "members: the agent's own exec and the 3 proposals' ran" "$(execs verdict=ALLOW)" 4
expect_eq "members: the only repeat refusal is the 4th proposal's" \
	"$(aq kind=decision reason=max_repeat_exceeded --field tool)" Bash
expect_decision "members: 3 proposals passed" 3 kind=decision tool=Bash verdict=ALLOW
expect_eq "members: each proposal's exec is linked, shown no repeat limit" \
	"$(execs inputs.proposal.tool=Bash view.max_repeat_calls=0)" 3
expect_eq "members: the agent's own exec is counted" "$(execs inputs.proposal.tool!=Bash view.max_repeat_calls=3)" 1
p1=$(aq kind=decision tool=Bash verdict=ALLOW --field seq | head -n 1)
expect_ge "members: the ls a proposal's shell runs is part of that proposal's tool call" \
	"$(aq kind=decision tool~exec: params.argv~'"ls","-d"' inputs.tool_call="$p1")" 1
"$SHACKLE" audit show "$LOG" >"$T/show.out" 2>&1
expect_ge "members: audit show prints the helper as part of #$p1" "$(grep -c "  part of #$p1\b" "$T/show.out")" 1
expect_audit_ok "members"
replay_drops_links "members: replay without the links diverges"

# 6. a proposal held for a person: rejected, then (the agent asks again)
# approved with `shackle approve`, then rejected. The approved one links to
# its exec from the decision that released it; the rejected ones never do.
export SHACKLE_CONTROL_DIR=$T/ctl
start_double loop --command "ls -d /"
p=$(policy held <<JSON
{"version": 1,
 "guard": {"budget_usd": 5.0, "max_repeat_calls": 0, "trip_on_deny": true, "hitl_timeout_s": 60},
 "exec": {"default": "allow"},
 "net": {"default": "deny"},
 "models": {"prices": [{"model": "claude-*", "input": 3, "output": 15}],
            "upstream": {"anthropic": "http://127.0.0.1:$DP"},
            "rules": [{"name": "ask-bash", "tool": "Bash", "action": "hitl"}]}}
JSON
)
n=$((RUNS + 1))
SESSION=it-$NAME-$n
(SHK_HOLD=1 run_agent "$p") &
held_pid=$!
for how in reject approve reject; do
	id=$(wait_pending 1)
	"$SHACKLE" "$how" "$id" --session "$SESSION" >"$T/op.out" 2>&1 || { cat "$T/op.out"; fail "$how $id"; }
	sleep 0.3
done
wait "$held_pid"
RUNS=$n LOG=$T/audit-$n.jsonl OUT=$T/out-$n ERR=$T/err-$n
expect_eq "held: the agent was told of both refusals" "$(grep -c 'model: .*hitl_transition:reject' "$OUT")" 2
approved=$(aq kind=decision tool=Bash verdict=ALLOW --field seq)
expect_eq "held: one proposal approved, two rejected" \
	"$(aq kind=decision tool=Bash reason=hitl_transition:reject) ${approved:+1}" "2 1"
expect_eq "held: its exec links to the decision that released it" \
	"$(aq kind=decision params.argv~'"-c","ls -d /"' --field inputs.proposal.seq)" "$approved"
expect_eq "held: nothing else links" "$(aq kind=decision inputs.proposal.seq~)" 1
expect_ge "held: the ls it runs is part of #$approved" \
	"$(aq kind=decision tool~exec: params.argv~'"ls","-d"' inputs.tool_call="$approved")" 1
expect_audit_ok "held"
replay_drops_links "held: replay without the link diverges"

# 7. the same command, a new description each turn (Claude Code's Bash
# input has one): four new calls for the repeat guard, unless the rule
# leaves the description out of the proposal's params
start_double described --turns 4 --command ": the same call"
run_agent "$(pol described 5.0 3)"
expect_decision "described: without ignore_input the 4 proposals pass" 4 kind=decision tool=Bash \
	verdict=ALLOW
expect_no_decision "described: ... and nothing is refused" verdict=DENY
expect_eq "described: the agent finished" "$RC" 0
expect_audit_ok "described"
start_double described --turns 4 --command ": the same call"
run_agent "$(pol ignored 5.0 3 '"rules": [{"name": "bash", "tool": "Bash", "action": "allow",
                                           "ignore_input": ["description"]}]')"
expect_eq "ignored: the first 3 proposals pass, under the rule" \
	"$(aq kind=decision tool=Bash verdict=ALLOW rule=bash)" 3
expect_eq "ignored: the 4th is refused by the repeat guard, under the rule" \
	"$(aq kind=decision tool=Bash verdict=DENY reason=max_repeat_exceeded rule=bash)" 1
expect_eq "ignored: the agent was told why" "$(grep -c 'model: .*max_repeat_exceeded .*rule "bash"' "$OUT")" 1
expect_eq "ignored: the params hold the command alone" \
	"$(aq kind=decision tool=Bash params='{"command":": the same call"}')" 4
expect_eq "ignored: each description is logged in the inputs" \
	"$(aq kind=decision tool=Bash --field inputs.ignored_input.description | tr '\n' '|')" \
	"step 0: run it again|step 1: run it again|step 2: run it again|step 3: run it again|"
expect_eq "ignored: audit show prints what was left out" \
	"$("$SHACKLE" audit show "$LOG" | grep -c ' Bash .* ignored {"description":"step [0-3]: run it again"}')" 4
expect_eq "ignored: the proposals' execs still link to them" \
	"$(aq kind=decision params.argv~'"-c",": the same call"' inputs.proposal.tool=Bash)" 3
expect_audit_ok "ignored"
finish
