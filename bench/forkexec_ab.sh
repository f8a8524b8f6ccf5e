#!/bin/bash
# SPDX-License-Identifier: MIT
# A/B comparison of shackle-run builds on the fork+exec loop of
# bench_supervise_loops (fork, execve /bin/true, waitpid), for changes to
# the exec path. Every round runs the loop unsupervised, then under each
# build's shackle-run (same permissive policy as run_supervise_bench.sh,
# audit log signed and fsynced as in production); prints the median over the
# rounds of the per-run medians and the ratio to unsupervised.
#
#   bench/forkexec_ab.sh [-c CPU] [-r ROUNDS] [-n N] [-s out|in] BUILD...
#     -c CPU  pin everything to one CPU (taskset): no cross-CPU wakeups,
#             steadier figures on a shared 2-vCPU VM; A/B only
#     -s out  exec a "#!/bin/sh" script (exit 0) instead of /bin/true, in a
#             directory out of the agent's reach (its name is not watched)
#     -s in   the same script (root's, 755) in a world-writable directory:
#             its name is watched up to the interpreter's open
#   bench/forkexec_ab.sh --cpu [-c CPU] [-r ROUNDS] [-s out|in] BUILD...
#     per build, the supervisor loop thread's CPU time per exec
#     (/proc/PID/task/PID/schedstat over 2 s of a running loop, divided by
#     the decisions logged meanwhile), ROUNDS alternating runs (default 3)
set -u
PIN= ROUNDS= N=300 CPU=0 SCRIPT=
while [ $# -gt 0 ]; do
	case "$1" in
	-c) PIN=$2; shift 2 ;;
	-r) ROUNDS=$2; shift 2 ;;
	-n) N=$2; shift 2 ;;
	--cpu) CPU=1; shift ;;
	-s) SCRIPT=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--cpu] [-c CPU] [-r ROUNDS] [-n N] BUILD..." >&2; exit 2; }
TS=()
[ -n "$PIN" ] && TS=(taskset -c "$PIN")
for b in "$@"; do
	[ -x "$b/src/cli/shackle-run" ] && [ -x "$b/bench/bench_supervise_loops" ] ||
		{ echo "missing $b/src/cli/shackle-run or bench_supervise_loops" >&2; exit 2; }
done
LOOPS=$1/bench/bench_supervise_loops
T=$(mktemp -d /tmp/shk-fxab.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
PROG=/bin/true
case $SCRIPT in
out) PROG=$T/s.sh ;;
in) mkdir -m 777 "$T/w" && PROG=$T/w/s.sh ;;
"") ;;
*) echo "-s out|in" >&2; exit 2 ;;
esac
[ "$PROG" = /bin/true ] || { printf '#!/bin/sh\nexit 0\n' >"$PROG" && chmod 755 "$PROG"; }
cat >"$T/policy.json" <<'JSON'
{"version": 1,
 "description": "benchmark: every exec allowed, no guard limits",
 "guard": {"budget_usd": 0, "max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
"$1/src/cli/shackle" keygen --out "$T/key" >/dev/null || { echo "keygen failed" >&2; exit 1; }

run() { # BUILD|none N -> median ns
	local out
	if [ "$1" = none ]; then
		out=$("${TS[@]}" "$LOOPS" forkexec "$2" "$PROG")
	else
		rm -f "$T/audit.jsonl"
		out=$("${TS[@]}" "$1/src/cli/shackle-run" --policy "$T/policy.json" \
			--audit "$T/audit.jsonl" --key "$T/key.key" --non-interactive -- \
			"$LOOPS" forkexec "$2" "$PROG" 2>"$T/err") || { echo NA; return; }
	fi
	sed -n 's/.*median_ns=\([0-9]*\).*/\1/p' <<<"$out"
}

cpu_per_exec() { # BUILD
	local pid c0 c1 d0 d1 x
	rm -f "$T/cpu.jsonl"
	"${TS[@]}" "$1/src/cli/shackle-run" --policy "$T/policy.json" --audit "$T/cpu.jsonl" \
		--key "$T/key.key" --non-interactive -- "$LOOPS" forkexec 100000 "$PROG" >/dev/null 2>&1 &
	pid=$!
	sleep 0.7
	read -r c0 x x <"/proc/$pid/task/$pid/schedstat"
	d0=$(grep -c '"decision"' "$T/cpu.jsonl")
	sleep 2
	read -r c1 x x <"/proc/$pid/task/$pid/schedstat"
	d1=$(grep -c '"decision"' "$T/cpu.jsonl")
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null
	awk -v c=$((c1 - c0)) -v n=$((d1 - d0)) 'BEGIN { printf "%.0f", (n > 0 ? c / n / 1000 : -1) }'
}

med() { printf '%s\n' "$@" | grep -E '^[0-9]+$' | sort -n | awk '{a[NR]=$1} END {print NR ? a[int((NR+1)/2)] : "NA"}'; }

if [ "$CPU" = 1 ]; then
	declare -A C
	for r in $(seq "${ROUNDS:-3}"); do
		for b in "$@"; do C[$b]+=" $(cpu_per_exec "$b")"; done
	done
	for b in "$@"; do
		echo "$b: loop-thread CPU per exec, median $(med ${C[$b]}) us  [${C[$b]} ]"
	done
	exit 0
fi

declare -A V
for r in $(seq "${ROUNDS:-7}"); do
	V[none]+=" $(run none "$N")"
	for b in "$@"; do V[$b]+=" $(run "$b" "$N")"; done
done
base=$(med ${V[none]})
echo "# fork+exec of $PROG, $N per run, ${ROUNDS:-7} interleaved rounds${PIN:+, pinned to CPU $PIN}; $(uname -r), $(nproc) CPUs"
us() { awk -v a="$1" 'BEGIN { if (a == "NA") print "NA"; else printf "%.0f us", a / 1000 }'; }
echo "unsupervised: $(us "$base")  [${V[none]} ]"
for b in "$@"; do
	m=$(med ${V[$b]})
	echo "$b: $(us "$m"), $(awk -v a="$m" -v b="$base" 'BEGIN { if (a == "NA" || b == "NA") print "NA"; else printf "%.3f", a / b }') x unsupervised  [${V[$b]} ]"
done
