#!/bin/bash
# SPDX-License-Identifier: MIT
# Interpreter variables (PYTHONPATH, BASH_ENV, ENV, NODE_OPTIONS, ...) make
# an allowed interpreter run the caller's own code in its process, where no
# further exec is judged. Under an exec allowlist that allows the
# interpreters, such an exec is judged by exec.interp_env (implicit: the
# allowlist's deny, with the rule name in the audit entry); with
# "interp_env": "allow" it runs and the injected code really runs (the
# reason for the rule). By default the variables are judged on every exec
# (PYTHONPATH on echo too: gdb embeds python, and its PYTHONPATH ran the
# injected code); under "interp_env_scope": "interpreter" only for their own
# interpreter: PYTHONPATH on echo and BASH_ENV on python pass, PERL5OPT on
# Debian's perl5.36-x86_64-linux-gnu does not. A byte-identical copy of
# python (matched as the python rule) and a "#!" script run by python are
# judged as python. Library loader variables: OPENSSL_CONF makes an allowed
# curl dlopen the module its configuration names (exec.loader_env; with
# "loader_env": "allow" the module really runs). Every log verifies and
# replays.
. "$(dirname "$0")/lib.sh"
require_root
setup
H=$(helper shk-harden)
ECHO=$(readlink -f /bin/echo)
SH=$(readlink -f /bin/sh)
BASH_BIN=$(readlink -f /bin/bash 2>/dev/null || true)
NODE=$(command -v node 2>/dev/null | xargs -r readlink -f)

PERLA=$(ls /usr/bin/perl5*-*-linux-gnu 2>/dev/null | head -n 1)
GDB=$(command -v gdb 2>/dev/null | xargs -r readlink -f)

# The injected code: each leaves a mark file when it runs.
mkdir -p "$T/evil" && chmod 755 "$T/evil"
printf 'open("%s/injected-python", "w").write("x")\n' "$T" >"$T/evil/sitecustomize.py"
printf ': >%s/injected-shell\n' "$T" >"$T/evil.sh"
printf 'require("fs").writeFileSync("%s/injected-node", "x");\n' "$T" >"$T/evil.js"
chmod 644 "$T/evil/sitecustomize.py" "$T/evil.sh" "$T/evil.js"
cp "$AGENT_PY" "$T/pycopy" && chmod 755 "$T/pycopy"
printf '#!%s\nprint("ran")\n' "$AGENT_PY" >"$T/script.py" && chmod 755 "$T/script.py"

rules() {
	echo "{\"name\": \"helper\", \"path\": \"$(readlink -f "$H")\", \"action\": \"allow\"},"
	echo "{\"name\": \"python\", \"path\": \"$AGENT_PY\", \"action\": \"allow\"},"
	echo "{\"name\": \"script\", \"path\": \"$T/script.py\", \"action\": \"allow\"},"
	echo "{\"name\": \"sh\", \"path\": \"$SH\", \"action\": \"allow\"},"
	[ -n "$BASH_BIN" ] && echo "{\"name\": \"bash\", \"path\": \"$BASH_BIN\", \"action\": \"allow\"},"
	[ -n "$NODE" ] && echo "{\"name\": \"node\", \"path\": \"$NODE\", \"action\": \"allow\"},"
	[ -n "$PERLA" ] && echo "{\"name\": \"perl\", \"path\": \"/usr/bin/perl*\", \"action\": \"allow\"},"
	[ -n "$GDB" ] && echo "{\"name\": \"gdb\", \"path\": \"$GDB\", \"action\": \"allow\"},"
	echo "{\"name\": \"echo\", \"path\": \"$ECHO\", \"action\": \"allow\"}"
}

# judged DESC WANT_IMPLICIT VAR=VAL PROG ARGS...: under the implicit policy
# the exec is denied by exec.interp_env (WANT_IMPLICIT=EPERM) or runs
# (WANT_IMPLICIT=ran); the variable is in the params exactly when judged.
judged() {
	local d=$1 want=$2 var=$3
	shift 3
	shk "$POLX" -- "$H" exec-env "$var" "$@"
	expect_eq "$le: $d" "$(answer)" "$([ "$le" = allow ] && echo ran || echo "$want")"
	if [ "$want" = EPERM ]; then
		[ "$le" != allow ] && expect_decision "$le: $d: denied by exec.interp_env" 1 \
			verdict=DENY rule=exec.interp_env
		expect_ge "$le: $d: the variable is in the params" \
			"$(grep -c "\"interp_env\":\[\"${var%%=*}=" "$LOG")" 1
	else
		expect_eq "$le: $d: not judged for this program" "$(grep -c '"interp_env":\[' "$LOG")" 0
	fi
	expect_audit_ok "$le: $d"
}

for le in implicit allow scoped; do
	extra=
	[ "$le" = allow ] && extra='"interp_env": "allow",'
	[ "$le" = scoped ] && extra='"interp_env_scope": "interpreter",'
	# a variable of another interpreter: judged unless scoped
	other=EPERM
	[ "$le" = scoped ] && other=ran
	POLX=$(policy "interp-$le" <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", $extra "rules": [
$(rules)
 ]},
 "net": {"default": "deny"}}
JSON
)
	rm -f "$T"/injected-*
	judged "PYTHONPATH into python" EPERM "PYTHONPATH=$T/evil" "$AGENT_PY" -c 'print("ran")'
	if [ "$le" = allow ]; then
		expect_eq "interp_env allow: the injected sitecustomize ran" "$(cat "$T/injected-python" 2>/dev/null)" x
	else
		expect_absent "implicit: nothing injected ran" "$T/injected-python"
	fi
	judged "PYTHONSTARTUP into python" EPERM "PYTHONSTARTUP=$T/evil/sitecustomize.py" "$AGENT_PY" -c 'print("ran")'
	# a copy of allowlisted python is the agent's file (rewritable after the
	# judgement): under this default deny it is denied outright, whatever
	# interp_env says; it is still recognised (matched_as)
	shk "$POLX" -- "$H" exec-env "PYTHONPATH=$T/evil" "$T/pycopy" -c 'print("ran")'
	expect_eq "$le: a copy of allowlisted python under a default deny" "$(answer)" EPERM
	expect_decision "$le: a copy of allowlisted python: denied by the default" 1 \
		verdict=DENY reason=policy_denied
	expect_ge "$le: a copy of allowlisted python: recognised as python" \
		"$(grep -c '"matched_as":\["'"$AGENT_PY" "$LOG")" 1
	expect_audit_ok "$le: a copy of allowlisted python"
	judged "PYTHONPATH into a #! script run by python" EPERM "PYTHONPATH=$T/evil" "$T/script.py"
	judged "ENV into sh" EPERM "ENV=$T/evil.sh" "$SH" -c 'echo ran'
	judged "PYTHONPATH on echo" $other "PYTHONPATH=$T/evil" "$ECHO" ran
	judged "BASH_ENV on python" $other "BASH_ENV=$T/evil.sh" "$AGENT_PY" -c 'print("ran")'
	judged "PYTHONPYCACHEPREFIX into python" EPERM "PYTHONPYCACHEPREFIX=$T/evil" "$AGENT_PY" -c 'print("ran")'
	if [ -n "$PERLA" ]; then
		judged "PERL5OPT into $(basename "$PERLA")" EPERM "PERL5OPT=-w" "$PERLA" -e 'print "ran\n"'
	else
		note "no architecture-qualified perl here: not tried"
	fi
	if [ -n "$GDB" ]; then
		rm -f "$T/injected-python"
		judged "PYTHONPATH into gdb (embedded python)" $other "PYTHONPATH=$T/evil" "$GDB" -batch -nx \
			-ex 'echo ran\n'
		[ "$le" = allow ] && expect_eq "interp_env allow: gdb's python ran the injected code" \
			"$(cat "$T/injected-python" 2>/dev/null)" x
	else
		note "no gdb here: an embedded interpreter not tried"
	fi
	if [ -n "$BASH_BIN" ]; then
		rm -f "$T/injected-shell"
		judged "BASH_ENV into bash" EPERM "BASH_ENV=$T/evil.sh" "$BASH_BIN" -c 'echo ran'
		if [ "$le" = allow ]; then
			[ -e "$T/injected-shell" ] && pass "interp_env allow: BASH_ENV ran" ||
				fail "interp_env allow: BASH_ENV did not run"
		fi
		judged "exported function into bash" EPERM 'BASH_FUNC_greet%%=() { builtin echo injected; }' \
			"$BASH_BIN" -c 'echo ran'
	else
		note "no bash here: BASH_ENV not tried"
	fi
	if [ -n "$NODE" ]; then
		rm -f "$T/injected-node"
		judged "NODE_OPTIONS into node" EPERM "NODE_OPTIONS=--require $T/evil.js" "$NODE" -e 'console.log("ran")'
		[ "$le" = allow ] && expect_eq "interp_env allow: NODE_OPTIONS --require ran" \
			"$(cat "$T/injected-node" 2>/dev/null)" x
	else
		note "no node here: NODE_OPTIONS not tried"
	fi
done

# loader_env and interp_env are separate knobs: LD_PRELOAD stays denied
# when interpreter variables are allowed
shk "$POLX" -- "$H" exec-env LD_PRELOAD=/nonexistent/evil.so "$AGENT_PY" -c 'print("ran")'
expect_eq "interp_env allow: LD_PRELOAD into python still denied" "$(answer)" EPERM
expect_decision "denied by exec.loader_env" 1 verdict=DENY rule=exec.loader_env
expect_audit_ok "loader_env with interp_env allow"

# OPENSSL_CONF (review F3): a providers section names a module, which an
# allowed curl dlopens at start — the agent's code in curl's process
CURL=$(command -v curl 2>/dev/null | xargs -r readlink -f)
if [ -n "$CURL" ]; then
	cp "$(helper shk-evilmod.so)" "$T/evilmod.so" && chmod 644 "$T/evilmod.so"
	printf 'openssl_conf = init\n[init]\nproviders = prov\n[prov]\nevil = evil_sect\ndefault = def_sect\n[evil_sect]\nmodule = %s\nactivate = 1\n[def_sect]\nactivate = 1\n' \
		"$T/evilmod.so" >"$T/evil.cnf" && chmod 644 "$T/evil.cnf"
	for le in implicit allow; do
		extra=
		[ "$le" = allow ] && extra='"loader_env": "allow",'
		POLC=$(policy "openssl-$le" <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", $extra "rules": [
   {"name": "helper", "path": "$(readlink -f "$H")", "action": "allow"},
   {"name": "curl", "path": "$CURL", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
		rm -f "$T/evilmod.so.ran"
		shk "$POLC" -- "$H" exec-env "OPENSSL_CONF=$T/evil.cnf" "$CURL" -s --version
		if [ "$le" = implicit ]; then
			expect_eq "OPENSSL_CONF into curl: denied" "$(answer)" EPERM
			expect_decision "denied by exec.loader_env, the variable in the params" 1 verdict=DENY \
				rule=exec.loader_env "params.loader_env~OPENSSL_CONF"
			expect_absent "the module did not run" "$T/evilmod.so.ran"
		else
			expect_eq "loader_env allow: curl ran" "$(grep -c '^curl ' "$OUT")" 1
			expect_eq "loader_env allow: the module named by OPENSSL_CONF ran in curl" \
				"$(cat "$T/evilmod.so.ran" 2>/dev/null)" x
		fi
		expect_audit_ok "OPENSSL_CONF, loader_env $le"
	done
else
	note "no curl here: OPENSSL_CONF not tried"
fi
finish
