#!/bin/bash
# SPDX-License-Identifier: MIT
# TOCTOU on exec: another thread (or process sharing the page) flips the path
# given to execve() between an allowed binary (/usr/bin/true) and a denied one
# (/usr/bin/touch MARK), in a forked child, a child whose flipper is another
# process, and a child created with CLONE_UNTRACED. The supervisor must judge
# what the kernel loads: the mark file must never exist.
. "$(dirname "$0")/lib.sh"
setup
POL=$(policy exec-race <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true},
 "exec": {"default": "allow", "rules": [
   {"name": "no-touch", "path": "/usr/bin/touch", "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
R=$(helper shk-race)
ITER=${SHK_RACE_EXEC_ITER:-300}
# racer NAME: the count NAME=N of the racer's last line
racer() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" <<<"$(tail -n 1 "$OUT")"; }
# --untraced: the exec'ing child is created with clone(CLONE_UNTRACED), out
# of reach of ptrace auto-attach (ARCHITECTURE: "ptrace auto-attach can be
# evaded by clone flags").
for variant in "" "--process" "--untraced"; do
	mark=$T/MARK$variant
	SHK_TIMEOUT=200 shk "$POL" -- "$R" exec /usr/bin/true /usr/bin/touch "$mark" "$ITER" $variant
	show_run
	if [ "$variant" = --untraced ] && grep -q 'clone(CLONE_UNTRACED): EPERM' "$ERR"; then
		pass "exec race --untraced: clone(CLONE_UNTRACED) itself is refused (EPERM)"
		expect_absent "exec race --untraced: denied binary never ran" "$mark"
		continue
	fi
	expect_absent "exec race ${variant:-thread}: denied binary never ran" "$mark"
	expect_ge "exec race ${variant:-thread}: allowed execs ran (not vacuous)" "$(racer ran)" 1
	expect_eq "exec race ${variant:-thread}: exit status" "$RC" 0
	expect_audit_ok "exec race ${variant:-thread}"
done

# The same path race with every exec checked by the kernel program
# (--exec-verify=bpf: no exec stop): what the kernel loaded after a flip is
# not what was judged, and the kernel kills it before its first
# instruction. Each kill the racer saw must be one of the kernel's.
for variant in "" "--process"; do
	d="exec race ${variant:-thread}, checked in the kernel"
	mark=$T/MARK-bpf$variant
	SHK_EXTRA=--exec-verify=bpf SHK_TIMEOUT=200 shk "$POL" -- "$R" exec /usr/bin/true /usr/bin/touch "$mark" "$ITER" $variant
	show_run
	killed=$(racer killed)
	expect_absent "$d: denied binary never ran" "$mark"
	expect_ge "$d: allowed execs ran in the kernel's check" "$(aq kind=session_end --field counters.exec_in_kernel)" 1
	expect_ge "$d: flipped execs were killed" "${killed:-0}" 1
	expect_eq "$d: every kill was the kernel's" "$(aq kind=session_end --field counters.exec_killed_in_kernel)" "${killed:-x}"
	expect_eq "$d: no exec stop was needed" "$(aq kind=session_end --field counters.exec_in_kernel)" \
		"$(aq kind=session_end --field counters.exec_verified | awk '{print $1 - 1}')"
	expect_audit_ok "$d"
done

# deny_one_policy NAME PATH: exec allowed but for PATH
deny_one_policy() {
	policy "$1" <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "deny-one", "path": "$2", "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
}

# race_case DESC POLICY MARK ARGS...: the racer must never create MARK, and
# some allowed runs must have happened
race_case() {
	local d=$1 pol=$2 mark=$3 line ran
	shift 3
	SHK_TIMEOUT=200 as_shk "${RACE_AS:-root}" "$pol" -- "$R" "$@"
	show_run
	line=$(tail -n 1 "$OUT")
	ran=$(sed -n 's/.*ran=\([0-9]*\).*/\1/p' <<<"$line")
	expect_absent "$d: the denied file never ran" "$mark"
	expect_ge "$d: allowed runs happened (not vacuous)" "${ran:-0}" 1
	expect_audit_ok "$d"
}

# shackle-run itself as nobody, with a copy of the key it may read
NB=$T/nobody
mkdir -p "$NB" && cp "$KEY" "$NB/key.key" && chown -R 65534:65534 "$NB" && chmod 700 "$NB"
cat >"$NB/run" <<SH
#!/bin/sh
exec setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all \
	env -i PATH=/usr/bin:/bin HOME="$NB" XDG_STATE_HOME="$NB" "$SHACKLE_RUN" "\$@"
SH
chmod 755 "$NB/run"
counter() { aq kind=session_end --field "counters.$1"; }
# as_shk AS POLICY -- CMD...: shk, shackle-run started as root or as nobody
as_shk() {
	local as=$1
	shift
	if [ "$as" = root ]; then shk "$@"; else SHACKLE_RUN=$NB/run KEY=$NB/key.key shk "$@"; fi
}

# A script run through a descriptor: execveat(fd, "", AT_EMPTY_PATH) of an
# allowed script while another thread dup2()s a denied script (same "#!"
# line) onto that fd. The kernel hands the interpreter /dev/fd/N, which it
# opens after the exec: fd N must still be the judged script then.
printf '#!/bin/sh\nexit 0\n' >"$T/ok-fd.sh"
printf '#!/bin/sh\n/usr/bin/touch %s\n' "$T/MARK-fd" >"$T/bad-fd.sh"
chmod a+rx "$T/ok-fd.sh" "$T/bad-fd.sh"
FD_DENY=$(policy exec-fd-deny <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", "rules": [
   {"name": "racer", "path": "$R", "action": "allow"},
   {"name": "shell", "path": "$(readlink -f /bin/sh)", "action": "allow"},
   {"name": "ok", "path": "$T/ok-fd.sh", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
FD_ALLOW=$(deny_one_policy exec-fd-race "$T/bad-fd.sh")
for RACE_AS in root nobody; do
	for pol in allow deny; do
		[ $pol = allow ] && p=$FD_ALLOW || p=$FD_DENY
		race_case "script via fd, dup2()ed after judgement ($RACE_AS, default-$pol)" "$p" \
			"$T/MARK-fd" exec-fd "$T/ok-fd.sh" "$T/bad-fd.sh" "$T/MARK-fd" "$ITER"
	done
done

# ld.so run as a program opens its program by name after the exec stop:
# another process exchanges the name (renameat2(RENAME_EXCHANGE)) between
# an allowed program and a denied one. What ld.so opens must be what was
# judged.
LDSO=$(ls /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 2>/dev/null | head -n 1)
mkdir -p "$T/ldso-race" && chmod 777 "$T/ldso-race"
LDSO_DENY=$(policy ldso-deny <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", "rules": [
   {"name": "racer", "path": "$R", "action": "allow"},
   {"name": "ld.so", "path": "$(readlink -f "$LDSO")", "action": "allow"},
   {"name": "true", "path": "/usr/bin/true", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
LDSO_ALLOW=$(deny_one_policy ldso-race /usr/bin/touch)
for RACE_AS in root nobody; do
	for pol in allow deny; do
		[ $pol = allow ] && p=$LDSO_ALLOW || p=$LDSO_DENY
		race_case "ld.so's program exchanged after judgement ($RACE_AS, default-$pol)" "$p" \
			"$T/MARK-ldso" exec-ldso "$LDSO" "$T/ldso-race" "$T/MARK-ldso" "$ITER"
	done
done
RACE_AS=root

# A "#!" script opened by name by its interpreter after the exec stop:
# another process exchanges DIR/prog (-> the allowed script) and DIR/other
# (-> the denied one, same "#!" line) while children exec DIR/prog. DIR is
# the agent's to change; the scripts are not (root's, 755), so their names
# are watched up to the interpreter's open. Default-allow and default-deny,
# shackle-run as root (agent nobody) and as nobody itself.
SB=$T/scr-bin
mkdir -p "$SB" "$T/scr-race" && chmod 755 "$SB" && chmod 777 "$T/scr-race"
printf '#!/bin/sh\nexit 0\n' >"$SB/ok.sh"
printf '#!/bin/sh\necho ran >%s\n' "$T/MARK-script" >"$SB/bad.sh"
chmod 755 "$SB/ok.sh" "$SB/bad.sh"
SH=$(readlink -f /bin/sh)
SCR_ALLOW=$(deny_one_policy script-allow "$SB/bad.sh")
SCR_DENY=$(policy script-deny <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", "rules": [
   {"name": "racer", "path": "$R", "action": "allow"},
   {"name": "shell", "path": "$SH", "action": "allow"},
   {"name": "ok", "path": "$SB/ok.sh", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
for as in root nobody; do
	for pol in allow deny; do
		d="script exchanged after judgement ($as, default-$pol)"
		[ $pol = allow ] && p=$SCR_ALLOW || p=$SCR_DENY
		rm -f "$T/MARK-script"
		SHK_TIMEOUT=100 as_shk $as "$p" -- "$R" exec-script "$T/scr-race" "$SB/ok.sh" "$SB/bad.sh" \
			"$T/MARK-script" "${SHK_RACE_SCRIPT_ITER:-40}"
		show_run
		line=$(tail -n 1 "$OUT")
		expect_absent "$d: the denied script never ran" "$T/MARK-script"
		expect_eq "$d: breach" "$(sed -n 's/.*breach=\([0-9]*\).*/\1/p' <<<"$line")" 0
		expect_ge "$d: allowed runs happened (not vacuous)" "$(sed -n 's/.*ran=\([0-9]*\).*/\1/p' <<<"$line")" 1
		expect_ge "$d: the names were watched" "$(counter script_watched)" 1
		# one log of the four is verified and replayed (ASan: a second each)
		[ $as/$pol != nobody/deny ] || expect_audit_ok "$d"
	done
	# the same script under a directory out of nobody's reach ($T and /tmp
	# are sticky, the entries root's): no watch
	as_shk $as "$SCR_ALLOW" -- /bin/sh -c "$SB/ok.sh && $SB/ok.sh"
	expect_eq "script out of reach ($as): exit status" "$RC" 0
	expect_eq "script out of reach ($as): not watched" "$(counter script_watched)" 0
	expect_eq "script out of reach ($as): bound without a watch" "$(counter script_unwatched)" 2
done

# A python zip application is opened by name again at every import, after
# the two opens counted for python. Two archives of the same layout (the
# same names and sizes; zipimport checks no CRC), DIR/prog -> the allowed
# one, DIR/other -> the denied one, whose module creates a mark; __main__,
# the same in both, exchanges the two names (renameat2(RENAME_EXCHANGE))
# and then imports the module. The name of a zip archive is watched until
# python exits: the import's open returns the denied archive and python is
# killed. Before, the denied module ran every time. Control: both names
# lead to the allowed archive.
ZA=$T/zip-src ZD=$T/zip-race
mkdir -p "$ZA/ok" "$ZA/bad" "$ZD" "$T/zip-mark" && chmod 777 "$ZD" "$T/zip-mark"
cat >"$ZA/ok/__main__.py" <<'PY'
import ctypes, os, sys
d = os.path.dirname(os.path.abspath(sys.argv[0])).encode()
ctypes.CDLL(None).renameat2(-100, d + b"/prog", -100, d + b"/other", 2)
import mod
mod.run()
PY
cp "$ZA/ok/__main__.py" "$ZA/bad/__main__.py"
printf 'import os\nos.close(os.open("%s", os.O_CREAT | os.O_WRONLY))\ndef run():\n    pass\n' \
	"$T/zip-mark/MARK" >"$ZA/bad/mod.py"
python3 - "$ZA" <<'PY'
import sys
d = sys.argv[1]
bad = open(d + "/bad/mod.py").read()
ok = "def run():\n    pass\n#"
open(d + "/ok/mod.py", "w").write(ok + "x" * (len(bad) - len(ok) - 1) + "\n")
PY
for z in ok bad; do python3 -m zipapp "$ZA/$z" -o "$SB/$z.pyz" -p /usr/bin/python3; done
chmod 755 "$SB/ok.pyz" "$SB/bad.pyz"
ZIP_DENY=$(policy zip-deny <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", "rules": [
   {"name": "python", "path": "$(readlink -f /usr/bin/python3)", "action": "allow"},
   {"name": "ok", "path": "$SB/ok.pyz", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
ZIP_ALLOW=$(deny_one_policy zip-allow "$SB/bad.pyz")
for as in root nobody; do
	for pol in allow deny; do
		d="zip application exchanged between its imports ($as, default-$pol)"
		[ $pol = allow ] && p=$ZIP_ALLOW || p=$ZIP_DENY
		ln -sfn "$SB/ok.pyz" "$ZD/prog"
		ln -sfn "$SB/bad.pyz" "$ZD/other"
		as_shk $as "$p" -- "$ZD/prog"
		expect_absent "$d: the denied module never ran" "$T/zip-mark/MARK"
		expect_eq "$d: python was killed at the open" "$(counter exec_killed)" 1
		[ $as/$pol != nobody/deny ] || expect_audit_ok "$d"
	done
	ln -sfn "$SB/ok.pyz" "$ZD/prog"
	ln -sfn "$SB/ok.pyz" "$ZD/other"
	as_shk $as "$ZIP_DENY" -- "$ZD/prog"
	expect_eq "zip application, both names allowed ($as): it ran, imports and all" "$RC" 0
	expect_eq "zip application ($as): watched" "$(counter script_watched)" 1
done

# A userland loader opens its program by name long after the exec stop
# (valgrind: its launcher valgrind.bin, then its tool binary, seven opens):
# another process exchanges DIR/prog (-> /usr/bin/true) and DIR/other (->
# /usr/bin/touch) meanwhile. DIR is the agent's to change, so the name is
# watched for the loader's life: every open of it must return the judged
# program. Before, the denied program ran (1 in 20 tries). A control run
# without the exchanges shows the watch lets the allowed program run.
VGBIN=/usr/bin/valgrind.bin
[ -x "$VGBIN" ] || VGBIN=/usr/bin/valgrind # not Debian: the ELF launcher itself
[ -x "$VGBIN" ] || skip "needs valgrind (scripts/setup installs it)"
VGD=$T/vg-race
mkdir -p "$VGD" "$T/vg-mark" && chmod 777 "$VGD" "$T/vg-mark"
VG_ALLOW=$(deny_one_policy vg-allow /usr/bin/touch)
VG_DENY=$(policy vg-deny <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", "rules": [
   {"name": "racer", "path": "$R", "action": "allow"},
   {"name": "valgrind", "path": "$VGBIN", "action": "allow"},
   {"name": "tools", "path": "/usr/libexec/valgrind/**", "action": "allow"},
   {"name": "true", "path": "/usr/bin/true", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
for as in root nobody; do
	for pol in allow deny; do
		d="valgrind's program exchanged after judgement ($as, default-$pol)"
		[ $pol = allow ] && p=$VG_ALLOW || p=$VG_DENY
		mark=$T/vg-mark/MARK-$as-$pol
		SHK_TIMEOUT=100 as_shk $as "$p" -- "$R" exec-valgrind "$VGBIN" "$VGD" "$mark" \
			"${SHK_RACE_LOADER_ITER:-12}"
		show_run
		line=$(tail -n 1 "$OUT")
		expect_absent "$d: the denied program never ran" "$mark"
		expect_eq "$d: breach" "$(sed -n 's/.*breach=\([0-9]*\).*/\1/p' <<<"$line")" 0
		expect_ge "$d: the names were watched" "$(counter loader_watched)" 1
		[ $as/$pol != nobody/deny ] || expect_audit_ok "$d"
	done
	ln -sfn /usr/bin/true "$VGD/prog"
	as_shk $as "$VG_DENY" -- "$VGBIN" --tool=none -q "$VGD/prog"
	expect_eq "valgrind, name in reach, no exchange ($as): the allowed program ran" "$RC" 0
	expect_eq "valgrind, name in reach ($as): launcher and tool watched" "$(counter loader_watched)" 2
	as_shk $as "$VG_DENY" -- "$VGBIN" --tool=none -q /usr/bin/true
	expect_eq "valgrind, name out of reach ($as): exit status" "$RC" 0
	expect_eq "valgrind, name out of reach ($as): not watched" "$(counter loader_watched)" 0
	expect_eq "valgrind, name out of reach ($as): bound without a watch" "$(counter loader_unwatched)" 2
done

# TOCTOU on argv: touch is allowed, but not with an argument naming a
# "forbidden" file; another thread (or process) flips argv[1] between an
# allowed and a forbidden name during execve().
POL=$(policy argv-race <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-forbidden-arg", "path": "/usr/bin/touch", "argv": ["*", "*forbidden*"], "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
for variant in "" "--process"; do
	good=$T/allowed-A$variant
	bad=$T/forbidden-A$variant
	SHK_TIMEOUT=200 shk "$POL" -- "$R" exec-argv /usr/bin/touch "$good" "$bad" "$ITER" $variant
	show_run
	line=$(tail -n 1 "$OUT")
	ran=$(sed -n 's/.*ran=\([0-9]*\).*/\1/p' <<<"$line")
	expect_absent "argv race ${variant:-thread}: the forbidden argument never reached touch" "$bad"
	expect_ge "argv race ${variant:-thread}: allowed execs ran (not vacuous)" "${ran:-0}" 1
	expect_decision "argv race ${variant:-thread}: the forbidden argument was seen and denied" 1 \
		verdict=DENY tool=exec:touch
	expect_audit_ok "argv race ${variant:-thread}"
done

# TOCTOU on envp: a loader variable flipped into the environment after the
# judgement (the kernel copies envp after the CONTINUE). The exec stop
# compares the judged variables with what the new image's stack holds: the
# program must never start with LD_PRELOAD set.
POL=$(policy env-race <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "loader_env": "deny"},
 "net": {"default": "deny"}}
JSON
)
for variant in "" "--process"; do
	SHK_TIMEOUT=200 shk "$POL" -- "$R" exec-env XD_PRELOAD= LD_PRELOAD= "$ITER" $variant
	show_run
	line=$(tail -n 1 "$OUT")
	ran=$(sed -n 's/.*ran=\([0-9]*\).*/\1/p' <<<"$line")
	expect_eq "env race ${variant:-thread}: LD_PRELOAD never reached the program" \
		"$(sed -n 's/.*breach=\([0-9]*\).*/\1/p' <<<"$line")" 0
	expect_ge "env race ${variant:-thread}: allowed execs ran (not vacuous)" "${ran:-0}" 1
	expect_decision "env race ${variant:-thread}: the loader variable was seen and denied" 1 \
		verdict=DENY tool=exec:printenv
	expect_audit_ok "env race ${variant:-thread}"
done
finish
