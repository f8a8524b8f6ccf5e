#!/bin/sh
# `shackle policy` end to end: a bad file gives exit 2 and FILE:LINE:COLUMN,
# the shipped policies check, and explain names rule, tool and action.
# Usage: test_policy_cli.sh SHACKLE_BINARY
set -u
shackle=$1
src=${SHACKLE_SOURCE_ROOT:?}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

printf '{"version": 1,\n "net": {"rules": [\n   {"cidr": "10.0.0.1/33", "action": "allow"}]}}\n' >"$tmp/bad.json"
"$shackle" policy check "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 2 ] || fail "bad policy: exit $rc, want 2"
grep -q "^$tmp/bad.json:3:13: net.rules\[0\].cidr: " "$tmp/err" || fail "bad policy: stderr was: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "bad policy: expected one error line"

printf '{"version": 1, "exec": {' >"$tmp/trunc.json"
"$shackle" policy check "$tmp/trunc.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "truncated policy: want exit 2"
grep -q "^$tmp/trunc.json:1:[0-9]*: " "$tmp/err" || fail "truncated: $(cat "$tmp/err")"

"$shackle" policy check "$tmp/missing.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "missing file: want exit 2"
grep -q "^$tmp/missing.json: cannot open: " "$tmp/err" || fail "missing file: $(cat "$tmp/err")"

# a binary file: the NUL byte or the first byte that is not UTF-8, 1-based
printf '\000\001\002\003' >"$tmp/nul.bin"
"$shackle" policy check "$tmp/nul.bin" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || fail "binary file: want exit 2"
grep -q "^$tmp/nul.bin:1:1: the file contains a NUL byte" "$tmp/err" || fail "binary: $(cat "$tmp/err")"
printf '\211PNG\r\n' >"$tmp/png.bin"
"$shackle" policy check "$tmp/png.bin" >/dev/null 2>"$tmp/err"
grep -q "^$tmp/png.bin:1:1: unable to decode byte 0x89" "$tmp/err" || fail "not UTF-8: $(cat "$tmp/err")"
printf '{"version": 1,\n "exec": {"rules": [{"path": "/x", "action": "deny"}, {"path": "/y",\n   "path": "/z", "action": "deny"}]}}' >"$tmp/dup.json"
"$shackle" policy check "$tmp/dup.json" >/dev/null 2>"$tmp/err"
grep -q "^$tmp/dup.json:3:4: exec.rules\[1\].path: duplicate key \"path\"" "$tmp/err" || fail "duplicate: $(cat "$tmp/err")"

# shackle-run refuses the same files with its own status, 125 (docs/policy.md)
run=${SHACKLE_BUILD_ROOT:-}/src/cli/shackle-run
if [ -x "$run" ]; then
	"$run" --policy "$tmp/missing.json" -- /bin/true >/dev/null 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 125 ] || fail "shackle-run, missing policy: exit $rc, want 125"
	grep -q "$tmp/missing.json: cannot open: " "$tmp/err" && ! grep -q ":0:0:" "$tmp/err" ||
		fail "shackle-run, missing policy: $(cat "$tmp/err")"
	"$run" --policy "$tmp/nul.bin" -- /bin/true >/dev/null 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 125 ] && grep -q "$tmp/nul.bin:1:1: the file contains a NUL byte" "$tmp/err" ||
		fail "shackle-run, binary policy: exit $rc, $(cat "$tmp/err")"
fi

for p in coding-agent ci-agent observe-only; do
	"$shackle" policy check "$src/policies/$p.json" >"$tmp/out" 2>"$tmp/err" || fail "$p: $(cat "$tmp/err")"
	grep -q "valid policy" "$tmp/out" || fail "$p: no verdict line"
	cp "$tmp/out" "$tmp/check-$p"
done

"$shackle" policy explain "$src/policies/coding-agent.json" --exec /usr/bin/git git push origin >"$tmp/out" 2>&1 ||
	fail "explain exec: $(cat "$tmp/out")"
grep -q 'rule .* "git-push"' "$tmp/out" && grep -q "tool: git.push" "$tmp/out" && grep -q "action: hitl" "$tmp/out" ||
	fail "explain exec output: $(cat "$tmp/out")"

"$shackle" policy explain "$src/policies/ci-agent.json" --connect '[::ffff:127.0.0.1]:5432' >"$tmp/out" 2>&1 ||
	fail "explain connect: $(cat "$tmp/out")"
grep -q '"loopback-v4"' "$tmp/out" && grep -q "action: allow" "$tmp/out" && grep -q "tool: net:connect" "$tmp/out" ||
	fail "explain connect output: $(cat "$tmp/out")"

grep -q "repeat guard: on" "$tmp/out" || fail "explain connect: the repeat guard: $(cat "$tmp/out")"
# a rule that takes its calls out of the repeat guard says so
"$shackle" policy explain "$src/policies/coding-agent.json" --op send --proto udp --connect 127.0.0.53:53 \
	>"$tmp/out" 2>&1 || fail "explain dns: $(cat "$tmp/out")"
grep -q '"dns-stub"' "$tmp/out" && grep -q 'repeat guard: off ("repeat_guard": false)' "$tmp/out" ||
	fail "explain dns output: $(cat "$tmp/out")"
"$shackle" policy explain --json "$src/policies/coding-agent.json" --op send --proto udp --connect 127.0.0.53:53 \
	>"$tmp/out" 2>&1 || fail "explain --json dns: $(cat "$tmp/out")"
grep -q '"repeat_guard":false' "$tmp/out" || fail "explain --json dns output: $(cat "$tmp/out")"
grep -A1 '"dns-stub"' "$tmp/check-coding-agent" | grep -q "out of the repeat guard" ||
	fail "check: dns-stub: $(cat "$tmp/check-coding-agent")"

"$shackle" policy explain "$src/policies/ci-agent.json" --op bind --proto udp --connect 127.0.0.1:53 >"$tmp/out" 2>&1 ||
	fail "explain bind: $(cat "$tmp/out")"
grep -q "tool: net:bind" "$tmp/out" && grep -q "action: deny" "$tmp/out" || fail "explain bind output: $(cat "$tmp/out")"

"$shackle" policy explain "$src/policies/coding-agent.json" --connect unix:/var/run/docker.sock >"$tmp/out" 2>&1 ||
	fail "explain unix"
grep -q "action: deny" "$tmp/out" || fail "explain unix output: $(cat "$tmp/out")"

# git send-pack pushes as git push does (red-team note): it waits too
"$shackle" policy explain "$src/policies/coding-agent.json" --exec /usr/bin/git git send-pack /tmp/r HEAD:refs/heads/x >"$tmp/out" 2>&1
grep -q "action: hitl" "$tmp/out" || fail "git send-pack is not held: $(cat "$tmp/out")"

# exec path patterns that can match stay accepted ("**sudo", "*/usr/bin/x")
for pat in '**sudo' '*/usr/bin/x'; do
	printf '{"version": 1, "exec": {"rules": [{"path": "%s", "action": "deny"}]}}' "$pat" >"$tmp/pat.json"
	"$shackle" policy check "$tmp/pat.json" >/dev/null 2>&1 || fail "path pattern $pat is refused"
done

# a unix deny rule written through a symlinked directory: explain judges the
# canonical name against the rule's alias, as a run does
mkdir -p "$tmp/real" && ln -sfn real "$tmp/link"
printf '{"version": 1, "net": {"default": "allow", "rules": [{"unix": "%s/link/s.sock", "action": "deny"}]}}' "$tmp" >"$tmp/u.json"
"$shackle" policy explain "$tmp/u.json" --connect "unix:$tmp/real/s.sock" >"$tmp/out" 2>&1
grep -q "action: deny" "$tmp/out" || fail "explain unix through a symlinked dir: $(cat "$tmp/out")"

# explain judges the name the file resolves to, as the supervisor does
printf '{"version": 1, "exec": {"rules": [{"path": "%s", "action": "deny"}]}}' "$(readlink -f /bin/sh)" >"$tmp/sh.json"
"$shackle" policy explain "$tmp/sh.json" --exec "$(dirname "$(readlink -f /bin/sh)")//$(basename "$(readlink -f /bin/sh)")" sh >"$tmp/out" 2>&1
grep -q "action: deny" "$tmp/out" || fail "explain of a path written with //: $(cat "$tmp/out")"

# Sockets of services that run commands or type for the user (outside the
# sandbox when the agent has the user's uid: tmux, the session bus and
# systemd --user, X11, VS Code's IPC, container engines) are denied by both
# shipped policies (red-team finding: an agent approved its own held call
# through the operator's tmux); an ordinary socket stays allowed.
for p in coding-agent ci-agent; do
	for s in /run/user/1000/bus /run/user/1000/systemd/private /tmp/tmux-1000/default \
		@/tmp/.X11-unix/X0 /tmp/.X11-unix/X0 /run/user/1000/wayland-0 \
		/run/user/1000/podman/podman.sock /run/containerd/containerd.sock \
		/run/user/1000/vscode-ipc-1.sock /run/screen/S-u/1.pts /tmp/screens/S-u/1.pts \
		/run/user/1000/emacs/server /run/user/1000/nvim.123.0 /run/user/1000/zellij/0.1/s \
		/home/u/.ssh/cm-git@github.com:22 /run/user/1000/gnupg/S.gpg-agent; do
		"$shackle" policy explain "$src/policies/$p.json" --connect "unix:$s" >"$tmp/out" 2>&1
		grep -q "action: deny" "$tmp/out" || fail "$p: unix:$s is not denied: $(cat "$tmp/out")"
	done
	"$shackle" policy explain "$src/policies/$p.json" --connect unix:/run/nscd/socket >"$tmp/out" 2>&1
	grep -q "action: allow" "$tmp/out" || fail "$p: an ordinary unix socket is not allowed"
done

"$shackle" policy explain "$src/policies/coding-agent.json" --connect 10.0.0.1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "bad destination: want exit 2"
"$shackle" policy explain "$src/policies/coding-agent.json" --exec /usr/bin/git >/dev/null 2>&1
[ $? -eq 2 ] || fail "--exec without argv0: want exit 2"

# --json: one document, the same facts as the text
pyjson() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $1" "$tmp/out"; }
"$shackle" policy check --json "$src/policies/coding-agent.json" >"$tmp/out" 2>"$tmp/err" || fail "check --json: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "check --json: not one line"
pyjson 'assert d["valid"] and len(d["sha256"]) == 64 and d["guard"]["budget_usd"] > 0
r = [x for x in d["exec"]["rules"] if x["name"] == "git-push"][0]
assert r["action"] == "hitl" and r["tool"] == "git.push", r
assert any(x.get("unix", "").endswith("docker.sock") for x in d["net"]["rules"])' ||
	fail "check --json content: $(cat "$tmp/out")"
"$shackle" policy check "$src/policies/coding-agent.json" >"$tmp/text"
grep -q "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sha256"])' "$tmp/out")" "$tmp/text" ||
	fail "check --json: digest differs from the text's"
"$shackle" policy check --json "$tmp/bad.json" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "check --json of a bad policy: want exit 2"
pyjson 'e = d["error"]; assert not d["valid"] and e["line"] == 3 and e["column"] == 13 and "cidr" in e["message"], d' ||
	fail "check --json of a bad policy: $(cat "$tmp/out")"
grep -q "bad.json:3:13: " "$tmp/err" || fail "check --json of a bad policy: stderr $(cat "$tmp/err")"
"$shackle" policy explain --json "$src/policies/coding-agent.json" --exec /usr/bin/git git push origin >"$tmp/out" 2>"$tmp/err" ||
	fail "explain --json exec: $(cat "$tmp/err")"
pyjson 'm = d["match"]; assert m["rule_name"] == "git-push" and m["action"] == "hitl" and m["tool"] == "git.push"
assert d["call"]["argv"] == ["git", "push", "origin"] and d["call"]["kind"] == "exec"' ||
	fail "explain --json exec: $(cat "$tmp/out")"
"$shackle" policy explain "$src/policies/ci-agent.json" --json --op bind --proto udp --connect 127.0.0.1:53 >"$tmp/out" 2>"$tmp/err" ||
	fail "explain --json bind: $(cat "$tmp/err")"
pyjson 'c, m = d["call"], d["match"]; assert c["op"] == "bind" and c["proto"] == "udp" and m["tool"] == "net:bind" and m["action"] == "deny"' ||
	fail "explain --json bind: $(cat "$tmp/out")"
"$shackle" policy explain --json "$tmp/u.json" --connect "unix:$tmp/real/s.sock" >"$tmp/out" 2>"$tmp/err" ||
	fail "explain --json unix"
pyjson 'assert d["match"]["action"] == "deny" and d["call"]["proto"] == "unix"' || fail "explain --json unix: $(cat "$tmp/out")"
# An allowlist that admits a userland loader (valgrind, qemu-user, box64):
# a warning per loader path on stderr, at the admitting rule's position;
# exit status 0; --json carries them as "warnings". The usual paths are
# judged whether installed or not, so this does not depend on the machine.
printf '{"version": 1,\n "exec": {"default": "deny", "rules": [\n   {"name": "sys", "path": "/usr/**", "action": "allow"}]}}\n' >"$tmp/loaders.json"
"$shackle" policy check "$tmp/loaders.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" -eq 0 ] || fail "loader warnings: exit $rc, want 0"
for l in /usr/bin/valgrind /usr/bin/qemu-x86_64-static /usr/bin/box64 /usr/local/bin/box64 /usr/bin/FEXLoader; do
	grep -qF "warning: $tmp/loaders.json:3:4: rule \"sys\" allows $l, a userland loader: it runs a program named in its arguments, judged and watched to its opens; deny it unless the agent needs it (docs/exec.md, Userland loaders)" "$tmp/err" ||
		fail "loader warnings: none for $l: $(cat "$tmp/err")"
done
grep -q "qemu-img\|qemu-system" "$tmp/err" && fail "loader warnings: not a loader: $(cat "$tmp/err")"
"$shackle" policy check --json "$tmp/loaders.json" >"$tmp/out" 2>"$tmp/err" || fail "loader warnings --json: exit $?"
pyjson 'w = d["warnings"]; assert any("allows /usr/bin/box64," in x for x in w), w
assert not any(x.startswith("warning: ") for x in w), w' || fail "loader warnings --json: $(cat "$tmp/out")"
# denied by a rule before the allow, or a default-allow policy: no warning
printf '{"version": 1,\n "exec": {"default": "deny", "rules": [\n   {"path": "**/box64", "action": "deny"},\n   {"path": "/usr/**", "action": "allow"}]}}\n' >"$tmp/loaders2.json"
"$shackle" policy check "$tmp/loaders2.json" >/dev/null 2>"$tmp/err" || fail "loader warnings 2: exit $?"
grep -q "box64" "$tmp/err" && fail "loader warnings: box64 is denied: $(cat "$tmp/err")"
grep -q "rule 1 allows /usr/bin/valgrind," "$tmp/err" || fail "loader warnings: unnamed rule: $(cat "$tmp/err")"
printf '{"version": 1, "exec": {"default": "allow"}}\n' >"$tmp/loaders3.json"
"$shackle" policy check "$tmp/loaders3.json" >/dev/null 2>"$tmp/err" || fail "loader warnings 3: exit $?"
[ -s "$tmp/err" ] && fail "default allow: no warning wanted: $(cat "$tmp/err")"
# the shipped policies exclude the loaders they would admit
for f in "$src"/policies/*.json; do
	"$shackle" policy check "$f" >/dev/null 2>"$tmp/err" || fail "$f: exit $?"
	grep -q "userland loader" "$tmp/err" && fail "$f admits a userland loader: $(cat "$tmp/err")"
done
# check shows what the model gateway does with the policy ("models") and
# what it shares on Redis ("shared"), in text and in --json
c="$tmp/check-coding-agent"
grep -qx 'models (the model gateway):' "$c" || fail "check: no models section: $(cat "$c")"
grep -qx '  upstream anthropic: https://api.anthropic.com (the provider'"'"'s own)' "$c" || fail "check: models upstream"
grep -qx '  a request body over 33554432 bytes is refused; an upstream silent for 300 s is cut off' "$c" ||
	fail "check: models limits"
grep -A1 -x '  0. "bash" calls of a tool matching Bash' "$c" |
	grep -qx '     -> allowed (allow); input left out of its params (repeat guard, exec link): "description"' ||
	fail "check: models rule bash: $(grep -A12 '^models' "$c")"
grep -qx '  otherwise: allowed (allow) (the exec default: no models.default)' "$c" || fail "check: models default"
grep -qx '    claude-sonnet-4\*: 3 / 15 / 6 / 0.3' "$c" && grep -qx '    gpt-5.5: 5 / 30 / 5 / 0.5' "$c" ||
	fail "check: prices: $(grep -A30 '^models' "$c")"
grep -q '^  prices'"'"' source: Anthropic: the pricing table' "$c" && grep -q '^  prices'"'"' date: Anthropic: read 2026-12-01' "$c" ||
	fail "check: prices' source and date"
grep -qx 'shared: none (budget and breaker stay in each session)' "$c" || fail "check: shared none"
grep -qx 'models (the model gateway; no "models" section, its defaults):' "$tmp/check-ci-agent" &&
	grep -qx '  otherwise: denied (deny; the breaker does not trip) (the exec default: no models.default)' "$tmp/check-ci-agent" &&
	grep -qx '  prices: none (every model request is refused: unpriced_model)' "$tmp/check-ci-agent" ||
	fail "check: ci-agent models: $(grep -A8 '^models' "$tmp/check-ci-agent")"
printf '{"version": 1, "guard": {"budget_usd": 5},\n "models": {"source": "S", "date": "D", "default": "hitl", "upstream": {"openai": "http://127.0.0.1:9/"},\n  "prices": [{"model": "m*", "input": 1, "output": 2}],\n  "rules": [{"name": "b", "tool": "Bash", "action": "deny", "ignore_input": ["description", "command"]},\n   {"tool": "model:*", "action": "allow"}]},\n "shared": {"redis": "redis://[::1]:6380", "timeout_ms": 50, "org": "acme", "agent": "ci",\n  "scopes": {"budget": "org", "breaker": "agent"}}}\n' >"$tmp/gw.json"
"$shackle" policy check "$tmp/gw.json" >"$tmp/out" 2>"$tmp/err" || fail "gw: exit $?: $(cat "$tmp/err")"
for l in '  upstream openai: http://127.0.0.1:9' \
	'  0. "b" calls of a tool matching Bash' \
	'     -> denied (deny; the breaker does not trip); input left out of its params (repeat guard, exec link): "description", "command"' \
	'  1. calls of a tool matching model:*' '     -> allowed (allow)' '  otherwise: held for human approval (hitl)' \
	'    m*: 1 / 2 / 1 / 1' '  prices'"'"' source: S' '  prices'"'"' date: D' \
	'shared (budget and breaker on Redis):' \
	'  server: redis://[::1]:6380; a server silent for 50 ms on a connect or a command is unreachable: the shared calls are denied' \
	'  budget: shared by every session of org acme (scope org)' \
	'  breaker: shared by every session of agent ci of org acme (scope agent)' \
	'  a reservation nobody settles is charged at its estimate after 600 s (lease_s)'; do
	grep -qxF "$l" "$tmp/out" || fail "gw: no line '$l': $(sed -n '/^models/,$p' "$tmp/out")"
done
grep -qxF "warning: $tmp/gw.json:4:93: models rule \"b\" leaves \"command\" out of the params of Bash proposals: every one is the same call to the repeat guard and none links to its exec (docs/gateway.md, ignore_input)" "$tmp/err" &&
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "gw: ignore_input command warning: $(cat "$tmp/err")"
"$shackle" policy check --json "$tmp/gw.json" >"$tmp/out" 2>/dev/null || fail "gw --json: exit $?"
pyjson 'm, s = d["models"], d["shared"]
assert m["present"] and m["default"] == "hitl" and not m["default_implicit"], m
assert m["upstream"] == {"anthropic": None, "openai": "http://127.0.0.1:9"}, m
assert m["source"] == "S" and m["date"] == "D" and m["max_request_bytes"] == 33554432 and m["upstream_timeout_s"] == 300, m
assert m["prices"] == [{"model": "m*", "input": 1, "output": 2, "cache_write": 1, "cache_read": 1}], m
assert m["rules"][0] == {"index": 0, "name": "b", "tool": "Bash", "action": "deny", "ignore_input": ["description", "command"]}, m
assert m["rules"][1] == {"index": 1, "name": None, "tool": "model:*", "action": "allow", "ignore_input": []}, m
assert s == {"redis": "redis://[::1]:6380", "timeout_ms": 50, "lease_s": 600, "org": "acme", "agent": "ci",
             "scopes": {"budget": "org", "breaker": "agent"}}, s
assert len(d["warnings"]) == 1 and "leaves \"command\" out" in d["warnings"][0], d["warnings"]' ||
	fail "gw --json: $(cat "$tmp/out")"
"$shackle" policy check --json "$src/policies/coding-agent.json" >"$tmp/out" 2>/dev/null || fail "check --json coding-agent"
pyjson 'm = d["models"]
assert d["shared"] is None and m["default"] == "allow" and m["default_implicit"], m
assert m["rules"] == [{"index": 0, "name": "bash", "tool": "Bash", "action": "allow", "ignore_input": ["description"]}], m
assert {"model": "gpt-4o", "input": 2.5, "output": 10, "cache_write": 2.5, "cache_read": 1.25} in m["prices"], m
assert m["source"].startswith("Anthropic: ") and m["date"].startswith("Anthropic: read 2026-12-01"), m' ||
	fail "check --json coding-agent models: $(cat "$tmp/out")"
# "cmd" warns too; an ordinary ignore_input does not
printf '{"version": 1, "models": {"rules": [{"tool": "shell", "action": "allow", "ignore_input": ["cmd"]}]}}\n' >"$tmp/gw2.json"
"$shackle" policy check "$tmp/gw2.json" >/dev/null 2>"$tmp/err" || fail "gw2: exit $?"
grep -qF "warning: $tmp/gw2.json:1:91: models rule 0 leaves \"cmd\" out of the params of shell proposals" "$tmp/err" ||
	fail "gw2: cmd warning: $(cat "$tmp/err")"
"$shackle" policy check "$src/policies/coding-agent.json" >/dev/null 2>"$tmp/err" || fail "coding-agent: exit $?"
grep -q "ignore_input" "$tmp/err" && fail "coding-agent: an ignore_input warning: $(cat "$tmp/err")"
echo ok
