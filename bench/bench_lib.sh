# SPDX-License-Identifier: MIT
# The report of bench/run_supervise_bench.sh (sourced by it): V[CFG:WORKLOAD]
# holds one figure in ns per round, in round order ("NA" where a run failed).

# stats KEY -> "median min max n" of its figures ("NA NA NA 0" if none)
stats() {
	printf '%s\n' ${V[$1]:-} | grep -E '^[0-9]+$' | sort -n |
		awk '{ a[NR] = $1 } END { if (!NR) { print "NA NA NA 0"; exit }
			m = NR % 2 ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2); print m, a[1], a[NR], NR }'
}
med() { local s; s=$(stats "$1"); echo "${s%% *}"; }
fmt() {
	awk -v v="$1" 'BEGIN { a = v < 0 ? -v : v
		if (v == "NA" || v == "") print "NA"; else if (a < 10000) printf "%d ns", v;
		else if (a < 1e6) printf "%.1f us", v / 1e3; else if (a < 1e9) printf "%.1f ms", v / 1e6;
		else printf "%.2f s", v / 1e9 }'
}
# NA where a figure is missing (or a divisor not positive)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b <= 0) print "NA"; else printf "%.3f", a / b }'; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA") print "NA"; else print a - b }'; }
# rounds A B [BASE]: the spread (min-max) and median of the per-round ratios
# (A - BASE) / (B - BASE), figures of one round paired by their index
rounds() {
	awk -v a="${V[$1]:-}" -v b="${V[$2]:-}" -v c="${3:+${V[$3]:-}}" 'BEGIN {
		na = split(a, x, " "); split(b, y, " "); nc = split(c, z, " ")
		for (i = 1; i <= na; i++) {
			if (x[i] !~ /^[0-9]+$/ || y[i] !~ /^[0-9]+$/ || (nc && z[i] !~ /^[0-9]+$/)) continue
			base = nc ? z[i] : 0
			if (y[i] - base <= 0) continue
			r[++n] = (x[i] - base) / (y[i] - base)
		}
		for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j - 1] > r[j]; j--) { t = r[j]; r[j] = r[j - 1]; r[j - 1] = t }
		if (n) printf "%.2f-%.2f %.3f\n", r[1], r[n], n % 2 ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
		else print "n/a NA" }'
}
verdict() { awk -v r="$1" -v t="$2" 'BEGIN { if (r == "NA" || r == "") print "n/a"; else if (r <= t) print "met"; else print "MISSED" }'; }

# table WORKLOAD TITLE CFG...: one row per configuration that ran
table() {
	local w=$1 title=$2 c s base rows=0
	shift 2
	base=$(med "${BASECFG:-none}:$w")
	echo
	echo "== $title"
	printf '  %-18s %12s   %-25s %8s %12s\n' config median "rounds (min-max)" "x ${BASECFG:-none}" "added"
	for c in "$@"; do
		s=($(stats "$c:$w"))
		[ "${s[3]}" = 0 ] && continue
		rows=1
		printf '  %-18s %12s   %-25s %8s %12s\n' "$c" "$(fmt "${s[0]}")" "$(fmt "${s[1]}") - $(fmt "${s[2]}")" \
			"$(ratio "${s[0]}" "$base")" "$(fmt "$(minus "${s[0]}" "$base")")"
	done
	[ "$rows" = 1 ] || echo "  (not run)"
}

TARGETS=()
# target NAME MEASURED LIMIT AGAINST SPREAD: one line of the summary
target() { TARGETS+=("$(printf '%-54s %9s  <= %-6s %-8s %s' "$1" "$2" "$3" "$(verdict "$2" "$3")" "$4${5:+; rounds $5}")"); }
# added_target NAME CFG AGAINST LIMIT WORKLOAD: (CFG - bare) / (AGAINST - bare)
added_target() {
	local w=$5 n a r
	n=$(minus "$(med "$2:$w")" "$(med "none:$w")")
	a=$(minus "$(med "$3:$w")" "$(med "none:$w")")
	r=($(rounds "$2:$w" "$3:$w" "none:$w"))
	target "$1" "$(ratio "$n" "$a")" "$4" "added $(fmt "$n") vs $3 added $(fmt "$a")" "${r[0]}"
}
# ratio_target NAME CFG AGAINST LIMIT WORKLOAD: CFG / AGAINST
ratio_target() {
	local r
	r=($(rounds "$2:$5" "$3:$5"))
	target "$1" "$(ratio "$(med "$2:$5")" "$(med "$3:$5")")" "$4" \
		"$(fmt "$(med "$2:$5")") vs $3 $(fmt "$(med "$3:$5")")" "${r[0]}"
}

# floor_says FIGURE LIMIT WHO: what a floor's figure in this run says of a
# limit: over it, the limit is out of reach of WHO in this run
floor_says() {
	awk -v f="$1" -v l="$2" -v w="$3" 'BEGIN { if (f == "NA" || f == "") print "not measured";
		else if (f > l) print "over the limit alone: out of reach of " w " in this run";
		else print "within the limit" }'
}
# floor_target NAME FLOOR LIMIT WORKLOAD WHO [NOTE]: a floor's own line,
# FLOOR / bare from the same rounds, what it says of LIMIT, its added cost
# next to shackle-run's
floor_target() {
	local f r
	f=$(ratio "$(med "$2:$4")" "$(med "none:$4")")
	r=($(rounds "$2:$4" "none:$4"))
	target "$1" "$f" "$3" "$(floor_says "$f" "$3" "$5"); added $(fmt "$(minus "$(med "$2:$4")" "$(med "none:$4")")"), shackle-run added $(fmt "$(minus "$(med "shackle:$4")" "$(med "none:$4")")")${6:+; $6}" "${r[0]}"
}
# entry_size WORKLOAD: the entry floors' line in bytes (median of the rounds)
entry_size() { local m; m=$(med "entry:$1"); echo "entry $m B"; }
# exec_targets WORKLOAD NAME LIMIT: shackle-run against bare, and the
# floors of the same rounds: a chained entry before CONTINUE with no exec
# stop (floor-entry: execs verified by the kernel, as shackle-run's are in
# lazy mode), the exec stop alone and with the entry (floor-exec,
# floor-exec-entry: execs verified at the stop, as --exec-verify=ptrace)
exec_targets() {
	local w=$1 name=$2 lim=$3 s fn fe p
	fn=$(ratio "$(med floor-entry:$w)" "$(med none:$w)")
	fe=$(ratio "$(med floor-exec-entry:$w)" "$(med none:$w)")
	p=$(ratio "$(med shackle-ptrace:$w)" "$(med none:$w)")
	s=($(rounds shackle:$w none:$w))
	target "$name: shackle-run / bare" "$(ratio "$(med shackle:$w)" "$(med none:$w)")" "$lim" \
		"$(fmt "$(med shackle:$w)") vs bare $(fmt "$(med none:$w)"); floor+entry ${fn}x, floor+exec stop+entry ${fe}x, shackle-run --exec-verify=ptrace ${p}x in this run" "${s[0]}"
	floor_target "$name: floor+entry / bare" floor-entry "$lim" "$w" \
		"a supervisor that chains its log and lets the kernel verify the exec" "$(entry_size "$w")"
	floor_target "$name: floor+exec stop / bare" floor-exec "$lim" "$w" \
		"a supervisor verifying at the exec stop"
	floor_target "$name: floor+exec stop+entry / bare" floor-exec-entry "$lim" "$w" \
		"a supervisor verifying at the exec stop that chains its log" "$(entry_size "$w")"
}
forkexec_targets() {
	local c fc
	exec_targets forkexec "fork+exec /bin/true" 1.10
	c=$(ratio "$(med shackle:forkexec-cpu)" "$(med none:forkexec-cpu)")
	fc=$(ratio "$(med floor-entry:forkexec-cpu)" "$(med none:forkexec-cpu)")
	target "fork+exec /bin/true: CPU, shackle-run / bare" "$c" 1.10 "floor+entry ${fc}x in this run"
}
git_targets() { exec_targets git "git status" 1.05; }
# attach_target PROTO W LIMIT: every call reported, attached / not attached,
# the median of the rounds' own ratios of the loop child's CPU time per
# call, next to the dispatch floor's (bpf/floor.bpf.c) of the same rounds
attach_target() {
	local r f rw fw
	r=($(rounds "on:$2-cpu" "off:$2-cpu"))
	f=($(rounds "floor:$2-cpu" "floor-off:$2-cpu"))
	rw=($(rounds "on:$2" "off:$2"))
	fw=($(rounds "floor:$2" "floor-off:$2"))
	target "attach $1 loop, every call reported (CPU)" "${r[1]}" "$3" \
		"the dispatch floor alone ${f[1]}x in this run; wall ${rw[1]}x" "${r[0]}"
	target "attach $1 loop, the dispatch floor alone (CPU)" "${f[1]}" "$3" \
		"$(floor_says "${f[1]}" "$3" "any program on these hooks"); wall ${fw[1]}x" "${f[0]}"
}

# the connect targets; floor+verify is the same limit against the floor
# that also pays for the kernel-verified path's mechanism
connect_targets() {
	local n a f r fl
	added_target "connect: shackle-run added / floor+log added" shackle floor-log 1.25 connect
	added_target "connect: shackle-run added / floor+verify added" shackle floor-verify 1.25 connect
	added_target "connect: shackle-run added / floor+verify+entry added" shackle floor-verify-entry 1.25 connect
	# the floor's own line: the mechanism and a chained entry alone, against
	# the same limit over floor+log
	n=$(minus "$(med floor-verify-entry:connect)" "$(med none:connect)")
	a=$(minus "$(med floor-log:connect)" "$(med none:connect)")
	f=$(ratio "$n" "$a")
	r=($(rounds floor-verify-entry:connect floor-log:connect none:connect))
	target "connect: floor+verify+entry added / floor+log added" "$f" 1.25 \
		"$(floor_says "$f" 1.25 "a kernel-verified supervisor that chains its log"); added $(fmt "$n") vs floor-log added $(fmt "$a"); $(entry_size connect)" "${r[0]}"
	if [ "${HAVE[strace]}" = 1 ]; then
		added_target "connect: shackle-run added / strace added" shackle strace 0.2 connect
		# the same limit for the floors: a notification's round trip alone
		# (floor+log) and with the kernel check (floor+verify) against strace
		for fl in floor-log floor-verify; do
			n=$(minus "$(med $fl:connect)" "$(med none:connect)")
			a=$(minus "$(med strace:connect)" "$(med none:connect)")
			f=$(ratio "$n" "$a")
			r=($(rounds $fl:connect strace:connect none:connect))
			target "connect: ${fl/-/+} added / strace added" "$f" 0.2 \
				"$(floor_says "$f" 0.2 "a supervisor answering notifications"); added $(fmt "$n") vs strace added $(fmt "$a")" "${r[0]}"
		done
	else
		target "connect: shackle-run added / strace added" NA 0.2 "strace not installed"
	fi
}

report() {
	local hwm avg longest all r add logs
	if want connect; then
		table connect "connect: TCP connect() to a listener of the loop on 127.0.0.1, $N_CONNECT per run, median per call" $CONNECT_ROWS
		echo "  (floor: CONTINUE to every connect, same-CPU wakeups as shackle-run has them; floor-poll: poll, then RECV;"
		echo "   floor-log: the floor that also copies the address, checks ID_VALID and writes one line before answering;"
		echo "   floor-verify: floor-log and what the kernel-verified CONTINUE cannot do without: pidfd_getfd of the socket,"
		echo "   SO_COOKIE, one bpf map update (the approval by socket and thread), the close of the copy;"
		echo "   floor-verify-entry: floor-verify with each line a chained entry of $(med entry:connect) B, the average decision"
		echo "   line of the round's shackle-run log: a template, its number patched in, the previous line's hash in it,"
		echo "   the SHA-256 of the line (shackle's) patched in, one write; its log checked with --check-chain;"
		echo "   shackle-emulate: shackle-run --net-verify=emulate; strace -f -e trace=execve,connect)"
	fi
	if want fork+exec; then
		table forkexec "fork + exec /bin/true + wait, $N_FORKEXEC per run, median per iteration" $FORKEXEC_ROWS
		table forkexec-cpu "the same, CPU time (user + system of the whole run: supervisor, loop, children) per iteration" $FORKEXEC_ROWS
		echo "  (the floors notify on shackle-run's syscall set and, as shackle-run for execs, wake without same-CPU wakeups;"
		echo "   floor-exec: floor-log and, for an exec, what verifying the loaded image cannot do without: PTRACE_SEIZE"
		echo "   of the caller with PTRACE_O_TRACEEXEC before the answer, the PTRACE_EVENT_EXEC stop, one readlink of"
		echo "   /proc/PID/exe, PTRACE_DETACH. floor-exec-entry: floor-exec with each line a chained entry of"
		echo "   $(med entry:forkexec) B (as floor-verify-entry); floor-entry: floor-log with that entry and no exec stop, the floor of"
		echo "   a supervisor whose execs the kernel verifies (shackle-run's in lazy mode: root, agent nobody); shackle-ptrace:"
		echo "   shackle-run --exec-verify=ptrace. CPU: bash's time of each run; bwrap has none, its sandbox's CPU is not"
		echo "   in the rusage of the processes waited for)"
	fi
	if want attach && { [ "$ATTACH_OK" = 1 ] || [ "$FLOOR_OK" = 1 ]; }; then
		BASECFG=off table udp "attach, every call reported: UDP connect() on one socket, $N_UDP per run, wall per call (bench_ebpf reported|floor)" off on floor-off floor
		BASECFG=off table udp-cpu "the same, the loop child's CPU time per call" off on floor-off floor
		BASECFG=off table tcp "attach, every call reported: TCP socket+connect+close, $N_TCP per run, wall per call" off on floor-off floor
		BASECFG=off table tcp-cpu "the same, the loop child's CPU time per call" off on floor-off floor
		echo "  (floor: bpf/floor.bpf.c, programs that allow at once on every hook shackle attach uses, the cgroup-BPF"
		echo "   dispatch alone; floor-off its own run's loop not attached. Each bench_ebpf run pairs its own two loops,"
		echo "   and the targets are the medians of those pairs' ratios)"
	fi
	if [ -n "${ONLY:-}" ]; then
		case "$ONLY" in
		connect) connect_targets ;;
		fork+exec) forkexec_targets ;;
		attach)
			attach_target TCP tcp 1.05
			attach_target UDP udp 1.25 ;;
		esac
		echo
		echo "== targets (figure <= limit: met/MISSED; the figure it is judged against; the rounds' own ratios)"
		printf '  %s\n' "${TARGETS[@]}"
		return
	fi
	table getppid "getppid (not intercepted), $N_GETPPID per run, median per call" $GETPPID_CFGS filter1
	echo "  (filter1: the same loop under a one-instruction allow-all seccomp filter, no supervisor;"
	echo "   no strace: it stops at every syscall, traced or not)"
	if [ "$GIT_OK" = 1 ]; then
		table git "git status in a $GIT_FILES-file repository, $N_GIT per run, mean per call" $GIT_ROWS
		echo "  (floor-exec, floor-entry, floor-exec-entry, shackle-ptrace: as in the fork+exec rows, the entry $(med entry:git) B)"
	fi
	table start "start-up: CFG /bin/true, wall, $START_PER_ROUND per round" $START_CFGS
	echo "  (shackle: shackle-run --quiet --non-interactive --policy P --audit NEW_LOG -- /bin/true, P allowing /bin/true; a key made for the new log)"
	if [ "$CURL_OK" = 1 ]; then
		BASECFG=off table curl "attach (shackle attach, signed log): curl of a loopback web server, $N_CURL per run, mean per call" off on
		[ "$CURL_OK" = 1 ] && echo "  (shackle attach logged $(grep -c '"kind":"decision"' "$T/attach.jsonl") decisions in all)"
	fi
	echo
	echo "== memory (bench/tree_rss.sh $B $TREE_N)"
	sed 's/^/  /' <<<"$TREE_OUT"
	if [ "$WITH_BUILD" = 1 ]; then
		table build "building this project: ninja -j2 in a fresh build directory (tests off), $BUILD_PAIRS pairs" none shackle
	fi

	connect_targets
	ratio_target "getppid: shackle-run / one-instruction filter" shackle filter1 1.02 getppid
	forkexec_targets
	if [ "$GIT_OK" = 1 ]; then
		git_targets
	else
		target "git status: shackle-run / bare" NA 1.05 "not run"
	fi
	if [ "$WITH_BUILD" = 1 ]; then
		r=($(rounds shackle:build none:build))
		target "build, ninja -j2: shackle-run / bare" "${r[1]}" 1.10 \
			"median of the pairs' ratios; bare $(fmt "$(med none:build)")" "${r[0]}"
	else
		target "build, ninja -j2: shackle-run / bare" NA 1.10 "not run (--quick)"
	fi
	add=$(minus "$(med shackle:start)" "$(med none:start)")
	target "start-up: shackle-run added wall (ms)" "$(awk -v v="$add" 'BEGIN { if (v == "NA") print "NA"; else printf "%.1f", v / 1e6 }')" 30 \
		"$(fmt "$(med shackle:start)") vs bare $(fmt "$(med none:start)")"
	attach_target TCP tcp 1.05
	attach_target UDP udp 1.25
	ratio_target "attach: $N_CURL curls against loopback" on off 1.03 curl
	hwm=$(grep -o 'shackle-run VmHWM *[0-9]*' <<<"$TREE_OUT" | awk '$3 > m { m = $3 } END { if (m) printf "%.1f", m / 1024; else print "NA" }')
	target "memory: shackle-run VmHWM, tree of $TREE_N (MiB)" "$hwm" 16 "largest of the trees above"
	# the logs of many decisions (the exec and connect runs; the forked
	# tree's log has the one exec of its parent)
	logs=$(grep -E 'audit log: ([0-9]{2,}) decisions' <<<"$TREE_OUT")
	avg=$(sed -n 's/.*decision lines \([0-9]*\) bytes on average.*/\1/p' <<<"$logs" | sort -n | tail -n 1)
	longest=$(sed -n 's/.*on average (max \([0-9]*\)).*/\1/p' <<<"$logs" | sort -n | tail -n 1)
	all=$(sed -n 's/.* \([0-9]*\) bytes per decision in all.*/\1/p' <<<"$logs" | sort -n | tail -n 1)
	# Per decision, as the target reads: the whole log over its decisions.
	# One line's length is mostly its params' (an argv of 200 bytes makes a
	# line 200 bytes longer), so the longest line is shown, not judged.
	target "audit log: bytes per decision, whole log (B)" "${all:-NA}" 1024 \
		"checkpoints and session records too, largest of the exec and connect logs"
	target "audit log: decision line, average (B)" "${avg:-NA}" 1024 "longest line ${longest:-NA} B (its params')"

	echo
	echo "== targets (figure <= limit: met/MISSED; the figure it is judged against; the rounds' own ratios)"
	printf '  %s\n' "${TARGETS[@]}"
}
