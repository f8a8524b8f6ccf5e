#!/bin/bash
# SPDX-License-Identifier: MIT
# Where a supervisor's answer time goes: the critical path of each
# notification (from the return of SECCOMP_IOCTL_NOTIF_RECV to the entry of
# SECCOMP_IOCTL_NOTIF_SEND, all of it spent while the agent's thread waits)
# and the agent's own time between an answer and the next notification,
# for shackle-run and for the floor with a chained entry (floor_supervisor
# --log --entry-bytes, the floor of a supervisor whose execs the kernel
# verifies). The supervisor's loop thread is recorded with perf on the
# raw_syscalls tracepoints; each syscall inside the critical path is summed
# by name, and what is left is user space (plus the tracepoints' own cost,
# about 1 us per syscall here, so absolute figures are high; compare rows).
#
#   bench/critical_path.sh [-r ROUNDS] [-s SECONDS] BUILD_DIR [forkexec|connect]
#     forkexec: fork, execve /bin/true, wait (the floor: floor-entry);
#     connect: TCP connects to the loop's own listener (the floor:
#     floor-verify-entry, as in the driver)
#
# Root (perf on another process's thread, tracefs). Prints, per supervisor,
# the median critical path and agent time over the notifications of each
# round, then the mean per-notification breakdown of the last round.
set -u
ROUNDS=3 SECS=2
while [ $# -gt 0 ]; do
	case "$1" in
	-r) ROUNDS=$2; shift 2 ;;
	-s) SECS=$2; shift 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-s SECONDS] BUILD_DIR [forkexec|connect]" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
MODE=${2:-forkexec}
command -v perf >/dev/null || { echo "$0: needs perf" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "$0: run as root" >&2; exit 2; }
TR=/sys/kernel/tracing
[ -d $TR/events/raw_syscalls ] || mount -t tracefs nodev $TR 2>/dev/null
[ -d $TR/events/raw_syscalls ] || { echo "$0: no tracefs at $TR" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
LOOPS=$B/bench/bench_supervise_loops FLOOR=$B/bench/floor_supervisor
ninja -C "$B" src/cli/shackle-run src/cli/shackle bench/bench_supervise_loops bench/floor_supervisor >/dev/null ||
	{ echo "$0: build failed" >&2; exit 1; }
T=$(mktemp -d /tmp/shk-crit.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
case $MODE in
# the floors as the driver runs them: for an exec, no same-CPU wakeups (as
# shackle-run has them for execs); for a connect, what a kernel-verified
# CONTINUE needs as well
forkexec) WORK=("$LOOPS" forkexec 1000000 /bin/true) FL=(--log "$T/floor.log" --entry-bytes 950) FLN=floor-entry ;;
connect) WORK=("$LOOPS" connect 100000000)
	FL=(--sync --log "$T/floor.log" --entry-bytes 950 --verify) FLN=floor-v-entry ;;
*) echo "$0: forkexec or connect" >&2; exit 2 ;;
esac
# the driver's policy: execs and loopback allowed, no guard limits
POLICY=$HERE/loopback-policy.json
"$B/src/cli/shackle" keygen --out "$T/key" >/dev/null || { echo "keygen failed" >&2; exit 1; }

# record LABEL CMD...: the first process's loop thread, SECS seconds
record() {
	local label=$1 pid
	shift
	"$@" >/dev/null 2>&1 &
	pid=$!
	sleep 1.5
	perf record -q -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -t "$pid" -o "$T/$label.data" -- sleep "$SECS" 2>/dev/null
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	perf script -i "$T/$label.data" -F time,event,trace 2>/dev/null >"$T/$label.txt"
}

analyse() { # FILE LABEL BREAKDOWN(0|1)
	python3 - "$@" <<'PY'
import collections, re, sys
path, label, full = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
names = {0: "read", 1: "write", 3: "close", 7: "poll", 14: "rt_sigprocmask", 16: "ioctl", 41: "socket",
         42: "connect", 54: "setsockopt", 55: "getsockopt", 89: "readlink", 202: "futex",
         232: "epoll_wait", 234: "tgkill", 257: "openat", 262: "newfstatat", 5: "fstat",
         310: "process_vm_readv", 321: "bpf", 434: "pidfd_open", 438: "pidfd_getfd", 75: "fdatasync"}
ioctls = {"c0502100": "RECV", "c0182101": "SEND", "40082102": "ID_VALID", "40082104": "SET_FLAGS",
          "c0182103": "ADDFD"}
pat = re.compile(r"\s*([\d.]+):\s+raw_syscalls:sys_(enter|exit): NR (\d+)(.*)")
wins, cur, pend, last_send = [], None, None, None
agent = []
for line in open(path):
    m = pat.match(line)
    if not m:
        continue
    t, kind, nr, rest = float(m.group(1)) * 1e6, m.group(2), int(m.group(3)), m.group(4)
    if kind == "enter":
        arg = rest.split(",")[1].strip() if nr == 16 and "," in rest else ""
        if nr == 16 and arg.endswith("c0182101") and cur is not None:
            cur["end"] = t
            wins.append(cur)
            cur = None
        pend = (t, nr, arg)
        continue
    if not pend or pend[1] != nr:
        pend = None
        continue
    name = names.get(nr, "nr %d" % nr)
    if nr == 16:
        name = "ioctl " + next((v for k, v in ioctls.items() if pend[2].endswith(k)), pend[2])
    if name == "ioctl RECV":
        if last_send is not None:
            agent.append(t - last_send)
        cur = {"start": t, "us": collections.Counter(), "n": collections.Counter()}
    elif name == "ioctl SEND":
        last_send = t
    elif cur is not None:
        cur["us"][name] += t - pend[0]
        cur["n"][name] += 1
    pend = None
if not wins:
    print("  %-12s no notification recorded" % label)
    sys.exit(0)
crit = sorted(w["end"] - w["start"] for w in wins)
agent.sort()
med = lambda a: a[len(a) // 2] if a else float("nan")
print("  %-12s notifications %5d  critical path median %6.1f us (p25 %.1f, p75 %.1f)  agent between answers median %8.1f us"
      % (label, len(wins), med(crit), crit[len(crit) // 4], crit[3 * len(crit) // 4], med(agent)))
if full:
    n = len(wins)
    us, cnt = collections.Counter(), collections.Counter()
    for w in wins:
        us.update(w["us"])
        cnt.update(w["n"])
    mean = sum(crit) / n
    tot = 0.0
    print("    mean critical path %.1f us, per notification:" % mean)
    for k, v in us.most_common():
        print("      %-22s %5.2f calls %7.1f us" % (k, cnt[k] / n, v / n))
        tot += v / n
    print("      %-22s %5s       %7.1f us" % ("syscalls in all", "", tot))
    print("      %-22s %5s       %7.1f us" % ("user space and tracing", "", mean - tot))
PY
}

echo "# critical path of a notification ($MODE), $(uname -r), $(nproc) CPUs, $ROUNDS rounds of ${SECS} s, $(date -u '+%F %H:%M UTC')"
for r in $(seq "$ROUNDS"); do
	rm -f "$T/audit.jsonl" "$T/floor.log"
	record shackle "$B/src/cli/shackle-run" --policy "$POLICY" --audit "$T/audit.jsonl" --key "$T/key.key" \
		--non-interactive --quiet -- "${WORK[@]}"
	record floor "$FLOOR" "${FL[@]}" --set shackle -- "${WORK[@]}"
	last=0
	[ "$r" = "$ROUNDS" ] && last=1
	echo "round $r"
	analyse "$T/shackle.txt" shackle-run $last
	analyse "$T/floor.txt" "$FLN" $last
done
