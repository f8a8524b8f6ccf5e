#!/bin/bash
# SPDX-License-Identifier: MIT
# After kill -9 of shackle-run its empty cgroup leaf and its operator socket
# are left. The next start removes them, and so does `shackle doctor
# --clean`; what belongs to a live session is never touched.
. "$(dirname "$0")/lib.sh"
require_root
setup
POL=$(plain_policy)
export SHACKLE_CONTROL_DIR=$T/ctl HOME=$T
mkdir -m 0700 "$T/ctl"
cd "$T" || exit 1
CGP=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)$(sed -n 's/^0:://p' /proc/self/cgroup)
CGP=${CGP%/}
# A start cleans up beside itself: any shackle-run started elsewhere on the
# host in our cgroup could remove the dead leaves this test looks at. The
# test's sessions get a cgroup of their own.
HOME_CG=$CGP
CGP=$HOME_CG/shk-stale-$$
mkdir "$CGP" && echo $$ >"$CGP/cgroup.procs" || skip "cannot make a cgroup for the test's sessions"
leave_cg() { echo $$ >"$HOME_CG/cgroup.procs" 2>/dev/null; rmdir "$CGP" 2>/dev/null; }
trap 'leave_cg; cleanup' EXIT
start_bg() { # NAME: a session that waits, in the background; sets BG
	"$SHACKLE_RUN" --policy "$POL" --audit "$T/$1.jsonl" --key "$KEY" --session "$1" \
		-- /bin/sleep 60 >/dev/null 2>"$T/$1.err" </dev/null &
	BG=$!
	BG_PIDS+=($BG)
	wait_sock "$T/ctl/$1.sock" || fail "$1: its operator socket did not appear"
	# the socket comes first, the leaf once the agent starts (slow under ASan)
	local i
	for i in $(seq 200); do
		grep -q . "$(leaf_of "$BG")/cgroup.procs" 2>/dev/null && return 0
		sleep 0.05
	done
	fail "$1: no cgroup leaf with the agent in it appeared"
}
wait_sock() { local i; for i in $(seq 100); do [ -S "$1" ] && return 0; sleep 0.1; done; return 1; }
leaf_of() { ls -d "$CGP/shackle-$1-"* 2>/dev/null | head -n 1; }
kill9() { # NAME PID: kill -9 and wait until the agent's tree is gone
	kill -9 "$2"
	wait "$2" 2>/dev/null
	local i
	for i in $(seq 100); do grep -q . "$(leaf_of "$2")/cgroup.procs" 2>/dev/null || break; sleep 0.1; done
}

start_bg live
LIVE=$BG
LIVE_CG=$(leaf_of "$LIVE")
[ -n "$LIVE_CG" ] || skip "shackle-run made no cgroup leaf here"
start_bg dead1
D1=$BG
D1_CG=$(leaf_of "$D1")
kill9 dead1 "$D1"
expect_eq "after kill -9 the leaf is left" "$([ -d "$D1_CG" ] && echo yes)" yes
expect_eq "after kill -9 the socket is left" "$([ -S "$T/ctl/dead1.sock" ] && echo yes)" yes
sleep 2.5 # a leaf is left alone in its first seconds (stale.c)
timeout 60 "$SHACKLE_RUN" --policy "$POL" --audit "$T/next.jsonl" --key "$KEY" -- /bin/true \
	>"$T/next.out" 2>"$T/next.err" </dev/null
expect_eq "the next start runs" "$?" 0
expect_absent "... and removed the dead session's leaf" "$D1_CG"
expect_absent "... and its socket" "$T/ctl/dead1.sock"
expect_eq "the live session's leaf is kept" "$([ -d "$LIVE_CG" ] && echo yes)" yes
expect_eq "the live session's socket is kept" "$([ -S "$T/ctl/live.sock" ] && echo yes)" yes
"$SHACKLE" pending --session live >"$T/pend.out" 2>&1
expect_eq "the live session still answers its operator" "$?" 0

start_bg dead2
D2=$BG
D2_CG=$(leaf_of "$D2")
kill9 dead2 "$D2"
sleep 2.5
"$SHACKLE" doctor --clean >"$T/clean.out" 2>&1
expect_eq "doctor --clean" "$?" 0
sed 's/^/# /' "$T/clean.out"
expect_absent "... removed the leaf" "$D2_CG"
expect_absent "... removed the socket" "$T/ctl/dead2.sock"
grep -q "removed $D2_CG" "$T/clean.out" && pass "... and says so" || fail "... output: $(cat "$T/clean.out")"
expect_eq "... kept the live session's leaf" "$([ -d "$LIVE_CG" ] && echo yes)" yes
expect_eq "... kept the live session's socket" "$([ -S "$T/ctl/live.sock" ] && echo yes)" yes
kill -TERM "$LIVE"
wait "$LIVE" 2>/dev/null
finish
