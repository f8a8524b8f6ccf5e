#!/bin/bash
# SPDX-License-Identifier: MIT
# A newcomer's first runs: CMD is looked up in PATH as the agent's user
# (a directory only root may enter, first in root's PATH, does not hide
# /usr/bin); when the agent's user cannot write its HOME or the working
# directory, shackle-run says so once; a plain run writes nothing of its
# own on stdout or stderr (notes only with --verbose); the agent is born in
# its cgroup leaf (clone3 CLONE_INTO_CGROUP), not moved into it; where
# clone3 fails (a kernel before 5.7) the agent is forked and moved in; a
# leaf that takes no process at all fails the start, and nothing runs.
. "$(dirname "$0")/lib.sh"
require_root
require_cmd setpriv
setup
POL=$(plain_policy)
# 1. PATH lookup as the agent (nobody): a root-only directory first in PATH
mkdir -m 0700 "$T/rootbin"
printf '#!/bin/sh\necho root-only-copy\n' >"$T/rootbin/echo"
printf '#!/bin/sh\necho root-only\n' >"$T/rootbin/shk-root-only"
chmod 755 "$T/rootbin/echo" "$T/rootbin/shk-root-only"
cd "$T" || exit 1
run_path() { # CMD...
	RUNS=$((RUNS + 1))
	LOG=$T/path-$RUNS.jsonl
	HOME=$T PATH="$T/rootbin:/usr/bin:/bin" timeout 60 "$SHACKLE_RUN" --policy "$POL" \
		--audit "$LOG" --key "$KEY" --non-interactive -- "$@" >"$T/p.out" 2>"$T/p.err"
	RC=$?
}
run_path echo from-usr-bin
expect_eq "a root-only PATH entry is skipped: exit status" "$RC" 0
expect_eq "... the agent ran /usr/bin's echo" "$(cat "$T/p.out")" from-usr-bin
expect_eq "... the judged exec is the resolved path" \
	"$(aq kind=decision tool=exec:echo --field params.path | head -n 1)" "$(readlink -f /usr/bin/echo)"
expect_audit_ok "PATH lookup as the agent"
run_path shk-root-only
expect_eq "only in a root-only directory: exit 126" "$RC" 126
expect_eq "... the error names the path and the user" "$(cat "$T/p.err")" \
	"shackle-run: $T/rootbin/shk-root-only: Permission denied for user nobody"
run_path shk-nowhere-at-all
expect_eq "found nowhere: exit 127" "$RC" 127
expect_eq "... the error says so" "$(cat "$T/p.err")" \
	"shackle-run: shk-nowhere-at-all: not found in PATH for user nobody"

# 2. The agent's user cannot write HOME and the working directory
mkdir -m 0755 "$T/rootown"
(cd "$T/rootown" && HOME=$T/rootown timeout 60 "$SHACKLE_RUN" --policy "$POL" --audit "$T/ro.jsonl" \
	--key "$KEY" --non-interactive -- /bin/true >"$T/ro.out" 2>"$T/ro.err")
expect_eq "unwritable HOME and cwd: the agent still runs" "$?" 0
expect_eq "... one line on stderr" "$(wc -l <"$T/ro.err")" 1
expect_eq "... naming the user, HOME and the working directory" \
	"$(grep -c "runs as user nobody (uid [0-9]*), which cannot write its HOME ($T/rootown) or the working directory ($T/rootown)" "$T/ro.err")" 1
expect_eq "... and nothing on stdout" "$(wc -c <"$T/ro.out")" 0
(cd "$T" && HOME=$T timeout 60 "$SHACKLE_RUN" --policy "$POL" --audit "$T/rw.jsonl" --key "$KEY" \
	--non-interactive -- /bin/true >"$T/rw.out" 2>"$T/rw.err")
expect_eq "writable HOME and cwd: nothing said" "$(cat "$T/rw.err")" ""

# 3. A plain run without root: the agent's output only; notes with --verbose
np=$T/np
mkdir -p "$np/home" "$np/state" "$np/run"
chown -R 65534:65534 "$np"
chmod 700 "$np" "$np/run"
as_nobody() {
	(cd "$np/home" && setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all \
		env -i PATH=/usr/bin:/bin HOME="$np/home" XDG_STATE_HOME="$np/state" \
		XDG_RUNTIME_DIR="$np/run" "$SHACKLE_RUN" "$@")
}
as_nobody -- /bin/echo agent-output >"$T/u.out" 2>"$T/u.err" </dev/null
expect_eq "plain run without root: exit status" "$?" 0
expect_eq "... stdout is the agent's alone" "$(cat "$T/u.out")" agent-output
expect_eq "... nothing of shackle-run's on stderr" "$(cat "$T/u.err")" ""
as_nobody --verbose -- /bin/echo agent-output >"$T/v.out" 2>"$T/v.err" </dev/null
expect_eq "--verbose: stdout is still the agent's alone" "$(cat "$T/v.out")" agent-output
expect_ge "--verbose: the notes are on stderr" "$(grep -c '^shackle-run: ' "$T/v.err")" 1
# 4. The verify programs only for a policy that can let an IPv4/IPv6 call
# through: a net policy that denies them all runs without them (auto)
netv() { aq kind=session_end --field counters.net_verify; }
shk "$POL" -- /bin/true
expect_eq "net denied whole: exit status" "$RC" 0
expect_eq "... auto loads no verify programs" "$(netv)" emulate
SHK_EXTRA="--net-verify bpf" shk "$POL" -- /bin/true
if [ "$RC" = 0 ]; then
	expect_eq "... unless --net-verify bpf asks for them" "$(netv)" bpf
	POLNET=$(policy netallow <<JSON
{"version": 1, "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [{"cidr": "127.0.0.0/8", "op": "connect", "action": "allow"}]}}
JSON
)
	shk "$POLNET" -- /bin/true
	expect_eq "a connect rule that allows: auto loads them" "$(netv)" bpf
else
	note "--net-verify bpf unavailable here: $(tail -n 1 "$ERR")"
fi
# 5. Born in the leaf: no migration through cgroup.procs (its RCU grace
# period was the largest wait of a start), and the agent's first process is
# in the leaf, under Landlock's /proc guard as before
POLSH=$(policy execall <<JSON
{"version": 1, "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"}, "net": {"default": "deny"}}
JSON
)
shk "$POLSH" -- /bin/sh -c 'cat /proc/self/cgroup; echo x >/proc/self/comm 2>/dev/null || echo guarded'
expect_eq "born in the leaf: exit status" "$RC" 0
expect_eq "... session_end says so" "$(aq kind=session_end --field counters.cgroup_clone)" true
expect_eq "... the agent's cgroup is the leaf" "$(grep -c '^0::/.*shackle-[0-9]*-' "$OUT")" 1
expect_eq "... and its /proc is still guarded" "$(grep -c '^guarded$' "$OUT")" 1
# 6. Without clone3 (shk-noclone3 answers it ENOSYS for shackle-run and
# everything it starts, as a kernel before 5.7 would): the fallback forks
# the agent and writes its pid to the leaf's cgroup.procs. glibc's
# pthread_create falls back to clone on ENOSYS, so the supervisor's threads
# still start. The leaf is shackle-PID-RANDOM under shackle-run's own
# cgroup (this shell's), PID the supervisor's: the agent's parent.
CG=$(sed -n 's/^0:://p' /proc/self/cgroup)
POLFB=$(policy fallback <<JSON
{"version": 1, "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [{"name": "no-id", "path": "/usr/bin/id", "action": "deny"}]},
 "net": {"default": "deny"}}
JSON
)
SHK_WRAP=$(helper shk-noclone3) shk "$POLFB" -- /bin/sh -c \
	'cat /proc/self/cgroup; echo "ppid=$PPID"; /bin/echo allowed-ran; /usr/bin/id >/dev/null 2>&1 || echo id-refused'
expect_eq "no clone3: exit status" "$RC" 0
expect_eq "... session_end says the child was moved in" \
	"$(aq kind=session_end --field counters.cgroup_clone)" false
expect_eq "... with a cgroup" "$(aq kind=session_end --field counters.cgroup)" true
FBPP=$(sed -n 's/^ppid=//p' "$OUT")
expect_eq "... the agent's cgroup is the session's leaf" \
	"$(grep -c "^0::${CG%/}/shackle-$FBPP-[0-9a-f]\{8\}\$" "$OUT")" 1
expect_eq "... an allowed exec runs" "$(grep -c '^allowed-ran$' "$OUT")" 1
expect_eq "... a denied one is refused" "$(grep -c '^id-refused$' "$OUT")" 1
expect_decision "... and logged as denied" 1 tool=exec:id verdict=DENY
expect_audit_ok "no clone3"
# 7. A leaf that takes no process: shackle-run makes its leaf in its own
# cgroup, so one started in a threaded cgroup makes a "domain invalid" one
# (a domain below a threaded cgroup, which can hold no process). clone3
# into it and the fallback's write to its cgroup.procs both fail with
# EOPNOTSUPP (the kernel's cgroup_migrate_vet_dst on both routes). The
# agent must not run outside the leaf: exit 125, one error naming the leaf
# and both errnos, the agent's command never ran, and neither a process
# nor the leaf is left behind. The threaded cgroup is made below this
# test's own one.
CGMNT=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
THR=$CGMNT${CG%/}/shk-it-threaded-$$
DEL=$CGMNT${CG%/}/shk-it-deleg-$$
trap 'rmdir "$THR/t" "$THR" "$DEL" 2>/dev/null; cleanup' EXIT
# a skip here would hide the checks above: a failure under MUST_RUN, else a note
if ! mkdir "$THR" "$THR/t" 2>"$T/thr.err" || ! echo threaded 2>>"$T/thr.err" >"$THR/t/cgroup.type"; then
	if must_run; then fail "no threaded cgroup below $CGMNT${CG%/}: $(cat "$T/thr.err")"; fi
	note "SKIP 7-8: no threaded cgroup below $CGMNT${CG%/}: $(cat "$T/thr.err")"
	finish
fi
printf '#!/bin/sh\necho $$ >"%s/t/cgroup.procs" || exit 3\nexec "$@"\n' "$THR" >"$T/in-threaded"
chmod 755 "$T/in-threaded"
SHK_WRAP=$T/in-threaded shk "$POLSH" -- /bin/sh -c "touch $T/agent-ran"
expect_eq "a leaf that takes no process: exit 125" "$RC" 125
expect_eq "... one line on stderr" "$(wc -l <"$ERR")" 1
E="\(EOPNOTSUPP (Operation not supported)\)"
expect_eq "... naming the leaf and both errnos" "$(grep -c "^shackle-run: the agent cannot enter \
its cgroup $THR/t/shackle-[0-9]*-[0-9a-f]\{8\}: clone3 CLONE_INTO_CGROUP failed with $E, writing \
its pid to cgroup.procs with $E; the agent was not started\$" "$ERR")" 1
expect_absent "... the agent's command never ran" "$T/agent-ran"
expect_no_decision "... no call was judged"
for i in $(seq 20); do
	[ -s "$THR/t/cgroup.procs" ] || break
	sleep 0.1
done
expect_eq "... no process left in shackle-run's cgroup" "$(cat "$THR/t/cgroup.procs")" ""
expect_eq "... nor the leaf" "$(find "$THR/t" -mindepth 1 -type d | wc -l)" 0
rmdir "$THR/t" "$THR"
# 8. The same without root in a cgroup whose directory alone was given to
# nobody (its cgroup.procs still root's): the leaf can be made, but a move
# into it needs the common ancestor's cgroup.procs, so clone3 and the
# fallback both fail with EACCES
mkdir "$DEL" && chown 65534:65534 "$DEL"
(echo "$BASHPID" >"$DEL/cgroup.procs" &&
	as_nobody -- /bin/sh -c "touch $T/agent-ran-deleg") >"$T/d.out" 2>"$T/d.err" </dev/null
expect_eq "partly delegated, without root: exit 125" "$?" 125
E="\(EACCES (Permission denied)\)"
expect_eq "... one line naming the leaf and both EACCES" "$(grep -c "^shackle-run: the agent cannot \
enter its cgroup $DEL/shackle-[0-9]*-[0-9a-f]\{8\}: clone3 CLONE_INTO_CGROUP failed with $E, \
writing its pid to cgroup.procs with $E; the agent was not started\$" "$T/d.err")/$(wc -l <"$T/d.err")" 1/1
expect_absent "... the agent's command never ran" "$T/agent-ran-deleg"
expect_eq "... no process left, no leaf" \
	"$(cat "$DEL/cgroup.procs")$(find "$DEL" -mindepth 1 -type d | wc -l)" 0
rmdir "$DEL"
finish
