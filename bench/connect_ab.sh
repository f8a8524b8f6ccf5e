#!/bin/bash
# SPDX-License-Identifier: MIT
# A/B comparison of shackle-run builds on the connect loop of
# bench_supervise_loops (TCP socket, connect to 127.0.0.1, close), for
# changes to the network path. Root: the connects then take the
# kernel-verified path (docs/supervisor.md). Same permissive policy as
# run_supervise_bench.sh, audit log signed and fsynced as in production.
#
#   bench/connect_ab.sh [-c CPU] [-r ROUNDS] [-n N] BUILD...
#     wall: every round runs the loop bare, then under each build's
#     shackle-run; the median over the rounds of the per-run medians per
#     connect, and the added cost (figure - bare)
#     -c CPU  pin everything to one CPU (taskset): what other work on the
#             machine moves between the CPUs hits fewer runs
#   bench/connect_ab.sh --cpu [-r ROUNDS] BUILD...
#     per build, the supervisor loop thread's CPU time per connect
#     (/proc/PID/task/PID/schedstat over 2 s of a running loop, divided by
#     the decisions logged meanwhile), ROUNDS alternating runs (default 5);
#     and the loop's wall time per iteration over that window (socket,
#     connect, close: 2 s over the decisions)
#     A BUILD given as floor-log:BUILD or floor-verify:BUILD is that build's
#     floor_supervisor --sync --log [--verify] instead (its supervisor
#     thread, per line logged): the floors of run_supervise_bench.sh
#   bench/connect_ab.sh --syscalls BUILD
#     the loop thread's syscalls over 2 s of a running loop (strace -c of
#     that thread), per connect
set -u
ROUNDS= N=2000 MODE=wall PIN=
while [ $# -gt 0 ]; do
	case "$1" in
	-c) PIN=$2; shift 2 ;;
	-r) ROUNDS=$2; shift 2 ;;
	-n) N=$2; shift 2 ;;
	--cpu) MODE=cpu; shift ;;
	--syscalls) MODE=sys; shift ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--cpu|--syscalls] [-c CPU] [-r ROUNDS] [-n N] BUILD..." >&2; exit 2; }
TS=()
[ -n "$PIN" ] && TS=(taskset -c "$PIN")
for b in "$@"; do
	[ "$b" != "${b#floor-}" ] && [ "$MODE" = cpu ] && b=${b#*:}
	[ -x "$b/src/cli/shackle-run" ] && [ -x "$b/bench/bench_supervise_loops" ] ||
		{ echo "missing $b/src/cli/shackle-run or bench_supervise_loops" >&2; exit 2; }
done
B1=$1
[ "$B1" != "${B1#floor-}" ] && B1=${B1#*:}
LOOPS=$B1/bench/bench_supervise_loops
T=$(mktemp -d /tmp/shk-cab.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
# every exec and everything on loopback allowed, no guard limits
cp "$(dirname "$0")"/loopback-policy.json "$T/policy.json"
"$B1/src/cli/shackle" keygen --out "$T/key" >/dev/null || { echo "keygen failed" >&2; exit 1; }
echo "# $(uname -r), $(nproc) CPUs, $(date -u '+%H:%M UTC'), $(uptime | sed 's/.*load/load/')"

# start BUILD N: shackle-run (or a floor) over the connect loop in the
# background (PID)
start() {
	rm -f "$T/audit.jsonl"
	case "$1" in
	floor-log:* | floor-verify:*)
		local v=()
		[ "${1%%:*}" = floor-verify ] && v=(--verify)
		"${TS[@]}" "${1#*:}/bench/floor_supervisor" --sync --log "$T/audit.jsonl" "${v[@]}" --set connect -- \
			"$LOOPS" connect "$2" >"$T/out" 2>"$T/err" &
		PID=$!
		return ;;
	esac
	"${TS[@]}" "$1/src/cli/shackle-run" --policy "$T/policy.json" --audit "$T/audit.jsonl" \
		--key "$T/key.key" --non-interactive -- "$LOOPS" connect "$2" >"$T/out" 2>"$T/err" &
	PID=$!
}
# decisions logged (a floor's log: its lines)
decisions() {
	case "$CUR" in
	floor-*) wc -l <"$T/audit.jsonl" ;;
	*) grep -c '"decision"' "$T/audit.jsonl" ;;
	esac
}

run() { # BUILD|none -> median ns per connect
	local out
	if [ "$1" = none ]; then
		out=$("${TS[@]}" "$LOOPS" connect "$N")
	else
		start "$1" "$N"
		wait "$PID" || { echo NA; return; }
		out=$(cat "$T/out")
	fi
	sed -n 's/.*median_ns=\([0-9]*\).*/\1/p' <<<"$out"
}

cpu_per_connect() { # BUILD -> ns of loop-thread CPU per connect
	local c0 c1 d0 d1 x
	CUR=$1
	start "$1" 100000000
	sleep 0.7
	read -r c0 x x <"/proc/$PID/task/$PID/schedstat"
	d0=$(decisions)
	sleep 2
	read -r c1 x x <"/proc/$PID/task/$PID/schedstat"
	d1=$(decisions)
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	awk -v c=$((c1 - c0)) -v n=$((d1 - d0)) 'BEGIN { printf "%.0f %.0f", (n > 0 ? c / n : -1), (n > 0 ? 2e9 / n : -1) }'
}

med() { printf '%s\n' "$@" | grep -E '^[0-9]+$' | sort -n | awk '{a[NR]=$1} END {print NR ? a[int((NR+1)/2)] : "NA"}'; }
us() { awk -v a="$1" 'BEGIN { if (a == "NA") print "NA"; else printf "%.1f us", a / 1000 }'; }

if [ "$MODE" = sys ]; then
	command -v strace >/dev/null || { echo "no strace" >&2; exit 2; }
	CUR=$1
	start "$1" 100000000
	sleep 0.7
	d0=$(decisions)
	timeout -s INT 2 strace -c -qq -p "$PID" -o "$T/sys" 2>/dev/null
	d1=$(decisions)
	kill -TERM "$PID"
	wait "$PID" 2>/dev/null
	# per pidfd_getfd: one per connect, exactly (the decisions counted
	# around strace's attach and detach are only about as many)
	awk -v d=$((d1 - d0)) '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $NF != "total" {
		c[$NF] = $4; t += $4 } END { n = c["pidfd_getfd"]; if (!n) { print "no connect seen"; exit 1 }
		for (k in c) printf "  %-20s %6.2f per connect\n", k, c[k] / n
		printf "  %-20s %6.2f per connect (%d connects; about %d decisions logged)\n", "all", t / n, n, d }' "$T/sys" | sort -k2 -rn
	exit 0
fi

if [ "$MODE" = cpu ]; then
	declare -A C W
	for r in $(seq "${ROUNDS:-5}"); do
		for b in "$@"; do
			read -r c w <<<"$(cpu_per_connect "$b")"
			C[$b]+=" $c" W[$b]+=" $w"
		done
	done
	for b in "$@"; do
		echo "$b: loop-thread CPU per connect, median $(us "$(med ${C[$b]})")  [${C[$b]} ]"
		echo "$b: wall per iteration, median $(us "$(med ${W[$b]})")  [${W[$b]} ]"
	done
	echo "# $(date -u '+%H:%M UTC'), $(uptime | sed 's/.*load/load/')"
	exit 0
fi

declare -A V
for r in $(seq "${ROUNDS:-7}"); do
	V[none]+=" $(run none)"
	for b in "$@"; do V[$b]+=" $(run "$b")"; done
done
base=$(med ${V[none]})
echo "# connect to 127.0.0.1, $N per run, ${ROUNDS:-7} interleaved rounds${PIN:+, pinned to CPU $PIN}, median per connect"
echo "bare: $(us "$base")  [${V[none]} ]"
for b in "$@"; do
	m=$(med ${V[$b]})
	echo "$b: $(us "$m"), added $(us "$(awk -v a="$m" -v b="$base" 'BEGIN { if (a == "NA" || b == "NA") print "NA"; else print a - b }')")  [${V[$b]} ]"
done
echo "# $(date -u '+%H:%M UTC'), $(uptime | sed 's/.*load/load/')"
