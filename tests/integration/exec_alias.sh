#!/bin/bash
# SPDX-License-Identifier: MIT
# One file, many names: the policy denies /usr/bin/touch; the agent tries to
# run it as ./touch, /usr/bin/../bin/touch, //usr//bin//touch,
# /proc/self/root/..., a symlink, a symlinked directory, a hard link, an fd
# (execveat AT_EMPTY_PATH, O_PATH, /proc/self/fd/N), a memfd copy, a "#!"
# script (and a chain of two) whose interpreter is touch, a plain copy (same
# bytes, new inode), and through the
# dynamic loader. touch would create the mark file: it must never exist, and
# the agent must see the exec fail (EPERM/EACCES) or be killed.
# Control: the same modes with an allowed binary (mkdir) must work, so the
# denials are not an accident of the helper.
. "$(dirname "$0")/lib.sh"
setup
# As root, so that the agent may hard-link a file it does not own.
export SHK_USER=0
DENIED=/usr/bin/touch
ALLOWED_BIN=/usr/bin/mkdir
[ -x "$DENIED" ] && [ -x "$ALLOWED_BIN" ] || skip "needs $DENIED and $ALLOWED_BIN"
POL=$(policy exec <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true},
 "exec": {"default": "allow", "rules": [
   {"name": "no-touch", "path": "$DENIED", "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
X=$(helper shk-exec)
# "copy" is a new inode with the same bytes: only matching by content catches
# it (the supervisor matches exec rule files by inode and by content).
MODES="plain relative dotdot dslash proc-root symlink symlink-dir hardlink copy execveat
empty-path opath proc-fd memfd shebang shebang-chain ldso"
for m in $MODES; do
	d=$T/$m
	mkdir -p "$d"
	shk "$POL" -- "$X" "$m" "$DENIED" "$d/MARK" "$d"
	a=$(answer)
	if [ "$m" = hardlink ] && grep -q '^SKIP' "$OUT"; then
		note "hardlink: $(cat "$OUT") (tmp dir on another file system?)"
		continue
	fi
	if [ -e "$d/MARK" ]; then
		show_run
		fail "$m: the denied binary ran (mark file created) (BREACH)"
	elif [ "$RC" -ge 128 ]; then
		pass "$m: denied binary did not run (agent killed, exit $RC)"
	else
		expect_in "$m: errno seen by the agent" "$a" EPERM EACCES
	fi
	expect_decision "$m: a DENY is in the audit log" 1 verdict=DENY
	expect_audit_ok "$m"
done

for m in $MODES; do
	d=$T/ctl-$m
	mkdir -p "$d"
	shk "$POL" -- "$X" "$m" "$ALLOWED_BIN" "$d/MARK" "$d"
	if [ "$m" = hardlink ] && grep -q '^SKIP' "$OUT"; then
		continue
	fi
	if [ -d "$d/MARK" ]; then
		pass "control $m: allowed binary ran"
	else
		show_run
		fail "control $m: the allowed binary did not run"
	fi
done

# Files the supervisor has seen are remembered by device, inode, size and
# ctime with their first bytes (none for a binary, the "#!" line for a
# script). Rewritten in place, same size, into a script whose interpreter is
# the denied binary, a binary or a script is judged again: the write changes
# ctime. (The pause puts the write past the ctime tick of the file's
# creation: within one, the write would not change ctime and what was
# remembered would be judged; the exec stop then kills, exec_race.)
rewritten() { # NAME DIR: DIR/prog made (run first with DIR/made: mkdir)
	shk "$POL" -- /bin/sh -c '
	"$1/prog" "$1/made"
	[ -d "$1/made" ] || exit 3
	sleep 0.05
	printf "#!%s %s\n" "$2" "$1/MARK" | dd of="$1/prog" conv=notrunc status=none || exit 4
	"$1/prog"
	echo "rc=$?"' sh "$2" "$DENIED"
	[ -d "$2/made" ] && pass "$1: it ran first" || { show_run; fail "$1: it did not run first"; }
	expect_absent "$1: the denied interpreter never ran" "$2/MARK"
	expect_decision "$1: the rewritten file was judged as the script it is and denied" 1 \
		verdict=DENY tool=exec:touch rule=no-touch
	expect_audit_ok "$1"
}
mkdir -p "$T/rewritten" "$T/rewritten-script"
cp "$ALLOWED_BIN" "$T/rewritten/prog"
rewritten "rewritten binary" "$T/rewritten"
# "made" and "MARK": the same size
printf '#!%s %s\n' "$ALLOWED_BIN" "$T/rewritten-script/made" >"$T/rewritten-script/prog"
chmod 755 "$T/rewritten-script/prog"
rewritten "rewritten script" "$T/rewritten-script"
# Argv rules hold for the argv a file really runs with. A "#!" interpreter
# gets "interp [arg] script argv[1..]" from the kernel, so the script's name
# and the "#!" argument are its arguments; the program ld.so runs gets ld.so's
# argv from its own name on. A red-team review ran `git push` by naming a
# script "origin" with "#!/usr/bin/git push", and `ld.so touch SECRET`
# under a position-anchored rule.
APOL=$(policy argv-interp <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-secret", "path": "$DENIED", "argv": ["*", "*SECRET*"], "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
SPOL=$(policy argv-shebang <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-secret-anywhere", "path": "$DENIED", "argv": ["*", "**", "*SECRET*", "**"], "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
d=$T/argvinterp
mkdir -p "$d" && chmod 777 "$d"
# the "#!" argument names the file touch would make
printf '#!%s %s\n' "$DENIED" "$d/SECRET-by-shebang" >"$d/script" && chmod 755 "$d/script"
shk "$SPOL" -- /bin/sh -c '"$1/script"; echo "rc=$?"' sh "$d"
expect_absent "#! argument SECRET: the interpreter is judged with the argv it gets" "$d/SECRET-by-shebang"
expect_decision "#! argument SECRET: denied by the argv rule" 1 verdict=DENY rule=no-secret-anywhere
LDSO=$(readlink -f /lib64/ld-linux-x86-64.so.2 2>/dev/null)
if [ -x "$LDSO" ]; then
	shk "$APOL" -- "$LDSO" "$DENIED" "$d/SECRET-via-ldso"
	expect_absent "ld.so running the program with a SECRET argument: denied" "$d/SECRET-via-ldso"
	shk "$APOL" -- "$LDSO" "$DENIED" "$d/plain-via-ldso"
	[ -e "$d/plain-via-ldso" ] && pass "ld.so running it with a plain argument: allowed" ||
		{ show_run; fail "ld.so running it with a plain argument did not run"; }
else
	fail "no /lib64/ld-linux-x86-64.so.2 on this machine"
fi
expect_audit_ok "argv of interpreters"

# Under an allowlist, a copy of an allowed program is not let in as that
# program: the copy is the agent's file, rewritable between the judgement
# and the kernel's open (the exec stop compares the inode, not the bytes: a
# red-team agent ran touch through a rewritten copy of allowlisted mkdir).
# Copies only ever get their original's rule when it is the stricter one.
# A hard link is the original file itself (same inode) and stays allowed.
POLA=$(policy allowlist <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", "rules": [
   {"name": "helper", "path": "$X", "action": "allow"},
   {"name": "mkdir", "path": "$ALLOWED_BIN", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
for m in copy memfd; do
	d=$T/allow-$m
	mkdir -p "$d"
	shk "$POLA" -- "$X" "$m" "$ALLOWED_BIN" "$d/made" "$d"
	if [ -e "$d/made" ]; then
		fail "$m of an allowlisted program ran under default deny"
	else
		pass "$m of an allowlisted program is not allowed by the original's rule"
	fi
	expect_decision "$m of an allowlisted program: DENY" 1 verdict=DENY
done
d=$T/allow-plain
mkdir -p "$d"
shk "$POLA" -- "$X" plain "$ALLOWED_BIN" "$d/made" "$d"
[ -e "$d/made" ] && pass "control: the allowlisted program itself runs" ||
	fail "control: the allowlisted program itself did not run"

# ld.so's --argv0 sets the program's argv[0] (a rule on argv[0] must see
# it), and the value of an option is not the end of the options (an
# "--argv0 x" in front hid a --preload from exec.loader_env): red-team
# findings.
LDSO=/lib64/ld-linux-x86-64.so.2
POLV=$(policy argv0 <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "loader_env": "deny", "rules": [
   {"name": "dashed", "argv": ["*git-push", "**"], "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
if [ -x "$LDSO" ]; then
	shk "$POLV" -- "$LDSO" --argv0 git-push /bin/true
	expect_ne "ld.so --argv0 git-push: the argv[0] rule applies" "$RC" 0
	expect_decision "ld.so --argv0 git-push: DENY by the argv[0] rule" 1 verdict=DENY rule=dashed
	shk "$POLV" -- "$LDSO" --argv0 x --preload /nonexistent-shk.so /bin/true
	expect_ne "ld.so --argv0 x --preload: loader_env applies" "$RC" 0
	expect_decision "ld.so --argv0 x --preload: DENY" 1 verdict=DENY
	# an --argv0 that is the value of another option is not the argv0
	shk "$POLV" -- "$LDSO" --argv0 git-push --inhibit-rpath --argv0 --inhibit-cache /bin/true
	expect_decision "ld.so --argv0 git-push --inhibit-rpath --argv0 --inhibit-cache: DENY" 1 verdict=DENY rule=dashed
	shk "$POLV" -- "$LDSO" --argv0 x /bin/true
	expect_eq "control: ld.so --argv0 x runs" "$RC" 0
fi

# ld.so's program named through "/proc//self/fd/3": the supervisor took
# "/proc//self" for its own process (fd 3: the audit log) while ld.so opened
# the agent's fd 3, the denied program (red-team finding). Names are
# collapsed as the kernel walks them before /proc/self is rewritten.
# The program is resolved as ld.so will resolve it (in the thread's root,
# never through a /proc magic link: refused, EPERM), so every spelling
# that reaches the agent's fd through /proc is refused, and /proc paths
# through ".." and symlinks too (second review).
if [ -x "$LDSO" ]; then
	ln -sf /proc/self/fd/3 "$T/fd3link"
	for p in '/proc//self/fd/3' '/proc/./self/fd/3' '//proc/self//fd/3' '/proc/1/../self/fd/3' \
		'/proc/self/../self/fd/3' '/dev/../proc/self/fd/3' '/proc/net/../fd/3' "$T/fd3link"; do
		d=$T/selfslash-$RUNS
		mkdir -p "$d"
		shk "$POL" -- /bin/sh -c "exec 3<$DENIED; $LDSO $p $d/MARK"
		if [ -e "$d/MARK" ]; then
			fail "ld.so $p: the denied program ran"
		else
			pass "ld.so $p: the denied program did not run"
		fi
		expect_eq "ld.so $p: no exec is allowed" "$(aq kind=decision verdict=ALLOW tool~ld-linux)" 0
	done
	# a program named relative to the working directory, above it: refused
	d=$T/above
	mkdir -p "$d/sub"
	shk "$POL" -- /bin/sh -c "cd $d/sub && $LDSO ../../../../../../../../usr/bin/mkdir $d/made"
	[ -e "$d/made" ] && fail "ld.so ../ above the working directory ran" ||
		pass "ld.so ../ above the working directory is refused"
	# control: a plain name still runs
	shk "$POL" -- "$LDSO" /usr/bin/mkdir "$T/plain-made"
	[ -d "$T/plain-made" ] && pass "control: ld.so /usr/bin/mkdir runs" ||
		fail "control: ld.so /usr/bin/mkdir did not run"
fi

finish
