#!/bin/bash
# SPDX-License-Identifier: MIT
# Userland loaders: valgrind (and qemu-user, box64 when installed) run a
# program named only on their command line, which no exec of its own ever
# names. Under an allowlist that admits /usr/** (the loader), a forbidden
# program outside it run through the loader must be refused (EPERM) and
# logged as a DENY naming it (params.loader_target); under a default-allow
# policy a deny rule on the program must hold through the loader too. An
# allowed program under valgrind runs. A program name the loader would look
# up in PATH, which the supervisor cannot judge, is refused with the
# built-in rule builtin:loader-cmdline, and so is a "#!" script as the
# program (valgrind would run its interpreter unjudged).
. "$(dirname "$0")/lib.sh"
setup
VG=/usr/bin/valgrind
VGBIN=/usr/bin/valgrind.bin
[ -x "$VG" ] || skip "needs valgrind (scripts/setup installs it)"
[ -x "$VGBIN" ] || VGBIN=$VG # not Debian: valgrind is the ELF launcher itself
TOUCH=/usr/bin/touch
MKDIR=/usr/bin/mkdir
# the forbidden program: outside /usr, where the allowlist admits nothing
mkdir -p "$T/bin"
cp "$TOUCH" "$T/bin/forbidden"
chmod -R a+rX "$T/bin"
FORBIDDEN_BIN=$T/bin/forbidden

ALLOWLIST=$(policy allowlist <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0},
 "exec": {"default": "deny", "rules": [
   {"name": "usr", "path": "/usr/**", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
DENYLIST=$(policy denylist <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0},
 "exec": {"default": "allow", "rules": [
   {"name": "no-touch", "path": "$TOUCH", "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)

# denied RUN-NAME POLICY PROGRAM MARK LOADER-ARGV...: MARK must not appear,
# the loader's exec is refused, the log has a DENY naming PROGRAM
denied() {
	local what=$1 pol=$2 prog=$3 mark=$4
	shift 4
	shk "$pol" -- "$@" "$prog" "$mark"
	if [ -e "$mark" ]; then
		show_run
		fail "$what: the forbidden program ran under the loader (BREACH)"
	else
		pass "$what: the forbidden program did not run"
	fi
	expect_ne "$what: the run failed" "$RC" 0
	expect_decision "$what: DENY naming the target" 1 verdict=DENY \
		"params.loader_target=$prog" params.loader=valgrind
	expect_no_decision "$what: no ALLOW names the target" verdict=ALLOW \
		"params.loader_target=$prog"
	expect_audit_ok "$what"
}

denied "allowlist, valgrind.bin" "$ALLOWLIST" "$FORBIDDEN_BIN" "$T/m1" "$VGBIN" --tool=none -q
denied "allowlist, valgrind" "$ALLOWLIST" "$FORBIDDEN_BIN" "$T/m2" "$VG" --tool=none -q
denied "allowlist, after --" "$ALLOWLIST" "$FORBIDDEN_BIN" "$T/m3" "$VGBIN" -q --
denied "deny rule, valgrind" "$DENYLIST" "$TOUCH" "$T/m4" "$VG" --tool=none -q
denied "deny rule, tool binary" "$DENYLIST" "$TOUCH" "$T/m5" \
	/usr/libexec/valgrind/none-amd64-linux --tool=none -q

# control: an allowed program under valgrind runs, judged by its name
shk "$ALLOWLIST" -- "$VGBIN" --tool=none -q "$MKDIR" "$T/made"
if [ -d "$T/made" ]; then pass "control: the allowed program ran under valgrind"; else
	show_run
	fail "control: the allowed program did not run under valgrind"
fi
expect_decision "control: ALLOW naming the target" 1 verdict=ALLOW \
	"params.loader_target=$MKDIR" params.loader=valgrind
expect_audit_ok "control"

# a name valgrind looks up in PATH: the program it finds is not judged
shk "$DENYLIST" -- "$VGBIN" --tool=none -q mkdir "$T/made-by-path"
expect_absent "PATH name: nothing ran" "$T/made-by-path"
expect_decision "PATH name: refused as builtin:loader-cmdline" 1 verdict=DENY \
	rule=builtin:loader-cmdline params.loader=valgrind "params.loader_refused~PATH"
expect_audit_ok "PATH name"

# a "#!" script as the target: valgrind runs its interpreter (here the
# denied touch) itself, with no exec to judge
printf '#!%s\n' "$TOUCH" >"$T/bin/script"
chmod a+rx "$T/bin/script"
shk "$DENYLIST" -- "$VGBIN" --tool=none -q "$T/bin/script" "$T/m6"
expect_absent "#! target: the denied interpreter did not run" "$T/m6"
expect_decision "#! target: refused as builtin:loader-cmdline" 1 verdict=DENY \
	rule=builtin:loader-cmdline "params.loader_refused~#!"
expect_audit_ok "#! target"

# qemu-user and box64 are tested here only where installed (their option
# parsers are unit-tested: test_loaders); an x86-64 guest on an x86-64 host
for q in qemu-x86_64 qemu-x86_64-static box64; do
	bin=$(command -v "$q") || { note "$q not installed: not run"; continue; }
	shk "$ALLOWLIST" -- "$bin" "$FORBIDDEN_BIN" "$T/m-$q"
	expect_absent "$q: the forbidden program did not run" "$T/m-$q"
	expect_decision "$q: DENY naming the target" 1 verdict=DENY \
		"params.loader_target=$FORBIDDEN_BIN"
done
finish
