#!/bin/bash
# SPDX-License-Identifier: MIT
# The performance driver of shackle-run and shackle attach: every target of
# the performance issue, measured in one run next to the floor or peer it is
# judged against, and printed with met or MISSED (docs/supervisor.md,
# "Performance": what each row measures, and which README figures come from
# here). Root. It never fails on a missed target.
#
# Configurations of one workload run in one round, one after the other
# (each round starting one configuration further down the list: rot), and
# REPS rounds are made (a slow minute on a shared machine then hits every
# column alike); each figure is the median over the rounds, printed with the
# rounds' spread (min-max). Per-call loops report their own median per call
# (bench_supervise_loops); jobs (git status, curl, the build) time
# themselves inside the supervised process, so a supervisor's own start-up
# is not counted in them (start-up is a row of its own).
#
#   bench/run_supervise_bench.sh [--quick] [--with-build|--no-build] [--only SECTION] [BUILD_DIR] [REPS]
#     BUILD_DIR  a configured build (default $SHACKLE_BUILD_ROOT); what is
#                missing in it is built first (ninja, the few targets used)
#     REPS       rounds (default 5)
#     --quick    no build rows (the default of a full run builds this
#                project 6 times: 3 pairs, bare and under shackle-run, each
#                in a fresh build directory of a copy of the tree)
#     --only connect|attach|fork+exec  one section's rows and targets
#                alone (a few seconds a round): connect, for changes to the
#                network path; attach, the loops of shackle attach with
#                every call reported and the dispatch floor; fork+exec, the
#                exec path and its floors
# Peers: strace always (skipped with a note where absent), bwrap and
# firejail where installed (apt packages bubblewrap, firejail).
# Sizes (environment): N_CONNECT N_FORKEXEC N_GETPPID N_GIT GIT_FILES N_CURL
# N_UDP N_TCP START_PER_ROUND BUILD_PAIRS TREE_N (defaults below).
set -u
usage() { echo "usage: $0 [--quick] [--with-build|--no-build] [--only connect|attach|fork+exec] [BUILD_DIR] [REPS]" >&2; exit 2; }
WITH_BUILD=1 ONLY=
POS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--quick | --no-build) WITH_BUILD=0 ;;
	--with-build) WITH_BUILD=1 ;;
	--only)
		case "${2:-}" in connect | attach | fork+exec) ;; *) usage ;; esac
		ONLY=$2 WITH_BUILD=0
		shift ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) POS+=("$1") ;;
	esac
	shift
done
B=${POS[0]:-${SHACKLE_BUILD_ROOT:-}}
REPS=${POS[1]:-5}
[ -n "$B" ] && [ -d "$B" ] || usage
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || usage
[ "$(id -u)" = 0 ] || { echo "$0: run as root (shackle attach, cgroups, the agent as nobody)" >&2; exit 2; }
B=$(cd "$B" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
. "$HERE/bench_lib.sh"

LOOPS=$B/bench/bench_supervise_loops FLOOR=$B/bench/floor_supervisor EBPF=$B/bench/bench_ebpf
RUN=$B/src/cli/shackle-run SHK=$B/src/cli/shackle
ninja -C "$B" bench/bench_supervise_loops bench/floor_supervisor bench/bench_ebpf bench/bench_tree \
	src/cli/shackle-run src/cli/shackle >/dev/null || { echo "$0: building the benchmark targets in $B failed" >&2; exit 2; }

N_CONNECT=${N_CONNECT:-2000} N_FORKEXEC=${N_FORKEXEC:-500} N_GETPPID=${N_GETPPID:-2000000}
N_GIT=${N_GIT:-200} GIT_FILES=${GIT_FILES:-300} N_CURL=${N_CURL:-200}
N_UDP=${N_UDP:-200000} N_TCP=${N_TCP:-20000} START_PER_ROUND=${START_PER_ROUND:-3}
BUILD_PAIRS=${BUILD_PAIRS:-3} TREE_N=${TREE_N:-1000}

# in the build directory, removed at the end: firejail's profile for root
# (server.profile) makes /tmp, /var/tmp and the homes private
T=$(mktemp -d "$B/bench-run.XXXXXX")
chmod 755 "$T"
SERVER_PID= ATTACH_PID= CG_ON= CG_OFF=
cleanup() {
	[ -n "$ATTACH_PID" ] && kill -TERM "$ATTACH_PID" 2>/dev/null && wait "$ATTACH_PID" 2>/dev/null
	[ -n "$SERVER_PID" ] && kill -TERM "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
	for cg in $CG_ON $CG_OFF; do rmdir "$cg" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- peers ---
declare -A HAVE
HAVE[strace]=0 HAVE[bwrap]=0 HAVE[firejail]=0
for p in strace bwrap firejail; do command -v "$p" >/dev/null && HAVE[$p]=1; done
# bwrap: a sandbox of its own namespaces but the host network (the loops
# and the curl job talk over loopback); firejail with its default profile
# (seccomp filter, capabilities dropped)
peer_note() {
	local p
	for p in strace bwrap firejail; do
		[ "${HAVE[$p]}" = 1 ] || echo "# peer $p is not installed: its columns are skipped"
	done
}

# --- policies and the key ---
# every exec and everything on loopback allowed, no guard limits
cp "$HERE"/loopback-policy.json "$T/policy.json"
printf '{"version":1,"guard":{"hitl_mode":"never"},"exec":{"default":"deny","rules":[{"path":"/bin/true","action":"allow"}]},"net":{"default":"deny","rules":[]}}\n' >"$T/start.json"
"$SHK" keygen --out "$T/key" >/dev/null || { echo "$0: shackle keygen failed" >&2; exit 1; }
# which paths shackle-run takes here (session_end counters)
"$RUN" --policy "$T/policy.json" --audit "$T/probe.jsonl" --key "$T/key.key" --non-interactive -- /bin/true 2>/dev/null
NETV_MODE=$(grep -o '"net_verify":"[a-z]*"' "$T/probe.jsonl" 2>/dev/null | cut -d'"' -f4)
SYNC_MODE=$(grep -o '"sync_wake":[a-z]*' "$T/probe.jsonl" 2>/dev/null | cut -d: -f2)
SYNC=()
[ "$SYNC_MODE" = true ] && SYNC=(--sync)

# under CFG KIND CMD...: CMD under a configuration. KIND net or exec: the
# floors wake as shackle-run does for that kind of call (same-CPU wakeups for
# network calls where the kernel has them, none for execs) and notify on
# connect only (net) or on shackle-run's syscall set (exec).
under() {
	local cfg=$1 kind=$2 sy=() set=shackle
	shift 2
	[ "$kind" = net ] && sy=("${SYNC[@]}") && set=connect
	case "$cfg" in
	none) "$@" ;;
	floor) "$FLOOR" "${sy[@]}" --set $set -- "$@" ;;
	floor-poll) "$FLOOR" --set $set -- "$@" ;;
	floor-log) "$FLOOR" "${sy[@]}" --log "$T/floor.log" --set $set -- "$@" ;;
	floor-verify) "$FLOOR" "${sy[@]}" --log "$T/floor.log" --verify --set $set -- "$@" ;;
	floor-exec) "$FLOOR" --log "$T/floor.log" --exec-stop --set $set -- "$@" ;;
	# the same with each line a chained entry of ENTRY_N bytes (the
	# average decision line of shackle-run's run before it in the round)
	floor-verify-entry)
		[ -n "${ENTRY_N:-}" ] || return 1
		"$FLOOR" "${sy[@]}" --log "$T/floor.log" --entry-bytes "$ENTRY_N" --verify --set $set -- "$@" ;;
	floor-exec-entry)
		[ -n "${ENTRY_N:-}" ] || return 1
		"$FLOOR" --log "$T/floor.log" --entry-bytes "$ENTRY_N" --exec-stop --set $set -- "$@" ;;
	# an exec answered CONTINUE after a chained entry, with no exec stop:
	# what a supervisor whose execs the kernel verifies cannot go below
	floor-entry)
		[ -n "${ENTRY_N:-}" ] || return 1
		"$FLOOR" --log "$T/floor.log" --entry-bytes "$ENTRY_N" --set $set -- "$@" ;;
	shackle | shackle-emulate | shackle-ptrace)
		local nv=()
		[ "$cfg" = shackle-emulate ] && nv=(--net-verify=emulate)
		[ "$cfg" = shackle-ptrace ] && nv=(--exec-verify=ptrace)
		rm -f "$T/audit.jsonl"
		"$RUN" --policy "$T/policy.json" --audit "$T/audit.jsonl" --key "$T/key.key" "${nv[@]}" \
			--session bench --non-interactive -- "$@" 2>"$T/shk.err" ||
			echo "shackle-run failed: $(tail -n 3 "$T/shk.err")" >&2 ;;
	strace) strace -f -qq -e trace=execve,connect -o /dev/null "$@" ;;
	bwrap) bwrap --dev-bind / / --proc /proc --unshare-all --share-net --die-with-parent -- "$@" ;;
	firejail) firejail --quiet -- "$@" ;;
	esac
}

# --- the jobs: a git repository of GIT_FILES files, a loopback web server ---
# The agent of shackle-run is nobody (root's default): the repository is
# nobody's, HOME a directory of its own, and every configuration runs the
# same script. Files dated an hour back, the index refreshed once: git
# status only stats, nothing is racily clean, nothing rewrites the index.
make_repo() {
	local r=$T/repo
	mkdir -p "$T/home" "$r"/d{0..9}
	awk -v n="$GIT_FILES" -v d="$r" 'BEGIN { srand(1); for (i = 1; i <= n; i++) {
		f = d "/d" (i % 10) "/f" i ".txt"; printf "file %d\n", i >f
		for (j = 0; j < 4; j++) { s = ""; for (k = 0; k < 60; k++) s = s sprintf("%c", 97 + int(rand() * 26)); print s >f }
		close(f) } }'
	find "$r" -exec touch -d '1 hour ago' {} +
	HOME=$T/home git -C "$r" init -q && HOME=$T/home git -C "$r" add -A &&
		HOME=$T/home git -C "$r" -c user.name=b -c user.email=b@b commit -qm init &&
		HOME=$T/home git -C "$r" status >/dev/null || return 1
	chown -R nobody "$T/home" "$r"
}
cat >"$T/job.sh" <<'SH'
#!/bin/bash
# job.sh N CMD...: CMD N times (its output discarded); the mean per run, in ns
n=$1; shift
t0=$EPOCHREALTIME
for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 || { echo "job: $* failed" >&2; exit 1; }; done
t1=$EPOCHREALTIME
echo "job n=$n mean_ns=$(( (${t1/./} - ${t0/./}) * 1000 / n ))"
SH
cat >"$T/incg.sh" <<'SH'
#!/bin/bash
# incg.sh CGROUP CMD...: CMD as a process of CGROUP
echo $$ >"$1/cgroup.procs" || exit 1
shift
exec "$@"
SH
cat >"$T/server.py" <<'PY'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write("%d\n" % s.server_address[1])
s.serve_forever()
PY
chmod 755 "$T/job.sh" "$T/incg.sh"
GIT_OK=0 CURL_OK=0 ATTACH_OK=0 FLOOR_OK=0
if [ -n "$ONLY" ]; then :
elif command -v git >/dev/null && make_repo; then GIT_OK=1; else echo "# git job skipped: no git or the repository could not be made"; fi
GITCMD=(git -C "$T/repo" -c safe.directory='*' status)

# shackle attach on a cgroup of its own, a sibling cgroup not attached; the
# web server runs in neither (its accepts are not the job's calls)
start_attach() {
	local self i
	command -v curl >/dev/null || { echo "# curl job skipped: no curl"; return 1; }
	self=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") { print $5; exit } break } }' /proc/self/mountinfo)$(sed -n 's/^0:://p' /proc/self/cgroup)
	self=${self%/}
	CG_ON=$self/shk-drv-on-$$ CG_OFF=$self/shk-drv-off-$$
	mkdir "$CG_ON" "$CG_OFF" || { echo "# attach rows skipped: cannot make cgroups under $self"; CG_ON= CG_OFF=; return 1; }
	python3 "$T/server.py" "$T/port" & SERVER_PID=$!
	for i in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
	PORT=$(cat "$T/port" 2>/dev/null) || { echo "# curl job skipped: the web server did not start"; return 1; }
	"$SHK" attach --cgroup "$CG_ON" --policy "$T/policy.json" --audit "$T/attach.jsonl" \
		--key "$T/key.key" --non-interactive --duration 7200 2>"$T/attach.err" & ATTACH_PID=$!
	# attached once a connect in the cgroup is in the log
	for i in $(seq 100); do
		"$T/incg.sh" "$CG_ON" "$LOOPS" connect 1 >/dev/null 2>&1
		grep -q '"kind":"decision"' "$T/attach.jsonl" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "# curl job skipped: shackle attach did not log a call in 10 s: $(tail -n 2 "$T/attach.err")"
	return 1
}
# want SECTION: the section runs (all do without --only)
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
[ -z "$ONLY" ] && start_attach && CURL_OK=1
if want attach; then
	"$EBPF" reported udp 1000 >/dev/null 2>"$T/ebpf.err" && ATTACH_OK=1 ||
		echo "# attach loops skipped: $(tail -n 1 "$T/ebpf.err")"
	"$EBPF" floor udp 1000 >/dev/null 2>"$T/ebpf.err" && FLOOR_OK=1 ||
		echo "# attach dispatch floor skipped: $(tail -n 1 "$T/ebpf.err")"
fi

# --- one round ---
declare -A V   # V[cfg:workload]: one figure (ns) per round, in round order, NA where it failed
declare -A SPENT   # SPENT[workload]: seconds of wall time, all rounds
LAP=$SECONDS
lap() { SPENT[$1]=$(( ${SPENT[$1]:-0} + SECONDS - LAP )); LAP=$SECONDS; }
add() { V[$1]+=" ${2:-NA}"; }
field() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" | head -n 1; }
have_cfg() {
	case "$1" in
	strace | bwrap | firejail) [ "${HAVE[$1]}" = 1 ] ;;
	*) true ;;
	esac
}
# in the order they run: an entry floor after shackle-run, whose log gives
# its line's length; the *_ROWS, the order of the tables
CONNECT_CFGS="none floor floor-poll floor-log floor-verify shackle floor-verify-entry shackle-emulate strace bwrap firejail"
CONNECT_ROWS="none floor floor-poll floor-log floor-verify floor-verify-entry shackle shackle-emulate strace bwrap firejail"
GETPPID_CFGS="none floor shackle bwrap firejail"
FORKEXEC_CFGS="none floor floor-log floor-exec shackle floor-entry floor-exec-entry shackle-ptrace strace bwrap firejail"
FORKEXEC_ROWS="none floor floor-log floor-exec floor-entry floor-exec-entry shackle shackle-ptrace strace bwrap firejail"
GIT_CFGS="none floor-exec shackle floor-entry floor-exec-entry shackle-ptrace strace bwrap firejail"
GIT_ROWS="none floor-exec floor-entry floor-exec-entry shackle shackle-ptrace strace bwrap firejail"
declare -A ENTRY   # ENTRY[workload]: the entry floors' line length (bytes)
# entry_note CFG WORKLOAD: after shackle-run's run, the average length of
# the decision lines of its log (the newline counted, as tree_rss.sh does)
entry_note() {
	local n
	[ "$1" = shackle ] || return 0
	n=$(awk '/"kind":"decision"/ { n++; b += length($0) + 1 } END { if (n) printf "%d", b / n }' "$T/audit.jsonl" 2>/dev/null)
	add "entry:$2" "$n"
	[ -n "$n" ] && ENTRY[$2]=$n
	return 0
}
# chained CFG MIN FIGURE: FIGURE, or NA when CFG is an entry floor whose log
# is not a chain (floor_supervisor --check-chain) of at least MIN entries
chained() {
	local out k
	case "$1" in *-entry) ;; *) echo "$3"; return ;; esac
	[ -n "$3" ] || { echo NA; return; } # it did not run, or its loop failed
	out=$("$FLOOR" --check-chain "$T/floor.log" 2>&1)
	k=$(sed -n 's/.*chain verified: \([0-9]*\) entries.*/\1/p' <<<"$out")
	if [ -n "$k" ] && [ "$k" -ge "$2" ]; then
		echo "$3"
	else
		echo "# $1: not counted, its log is not a chain of $2 entries or more: $out" >&2
		echo NA
	fi
}
START_CFGS="none shackle strace bwrap firejail"
# attach_loops KIND N: one round of bench_ebpf's loop of KIND, every call
# reported (off/on) and under the dispatch floor (floor-off/floor), in the
# order of the round's parity; each run pairs its own two loops. Wall time
# per call as W, the loop child's CPU time per call as W-cpu.
attach_loops() {
	local w=$1 n=$2 m out off on order="reported floor"
	[ $((RND % 2)) = 0 ] && order="floor reported"
	for m in $order; do
		[ "$m" = floor ] && [ "$FLOOR_OK" != 1 ] && continue
		[ "$m" = reported ] && [ "$ATTACH_OK" != 1 ] && continue
		out=$("$EBPF" "$m" "$w" "$n")
		off=off on=on
		[ "$m" = floor ] && off=floor-off on=floor
		add "$off:$w" "$(field off_ns <<<"$out")"
		add "$on:$w" "$(field on_ns <<<"$out")"
		add "$off:$w-cpu" "$(field off_cpu_ns <<<"$out")"
		add "$on:$w-cpu" "$(field on_cpu_ns <<<"$out")"
		[ "$m" = floor ] || [ "$(field refused <<<"$out")" = 0 ] ||
			echo "# attach $w loop: $(field refused <<<"$out") calls refused (ring full): that round is not a cost"
	done
}
# rot K WORD...: the words, starting at the K-th (mod their count). Round R
# runs each section's configurations from the (R-1)-th on, so none of them
# always runs first after the previous section (a bare run there was
# faster or slower than in the middle of a round) or always right after a
# given one. Round 1 keeps the listed order: the entry floors follow
# shackle-run, whose log gives their line's length; later rounds use the
# length from the round before.
rot() {
	local k=$1 i
	shift
	local a=("$@")
	for ((i = 0; i < ${#a[@]}; i++)); do printf '%s ' "${a[(i + k) % ${#a[@]}]}"; done
}
RND=0
round() {
	local c i t0 t1 out
	RND=$((RND + 1))
	LAP=$SECONDS
	if want connect; then
		for c in $(rot $((RND - 1)) $CONNECT_CFGS); do
			have_cfg "$c" || continue
			out=$(ENTRY_N=${ENTRY[connect]:-} under "$c" net "$LOOPS" connect "$N_CONNECT" | field median_ns)
			add "$c:connect" "$(chained "$c" "$N_CONNECT" "$out")"
			entry_note "$c" connect
		done
	fi
	lap connect
	if [ -z "$ONLY" ]; then
		for c in $(rot $((RND - 1)) $GETPPID_CFGS); do
			have_cfg "$c" && add "$c:getppid" "$(under "$c" exec "$LOOPS" getppid "$N_GETPPID" | field median_ns)"
		done
		add "filter1:getppid" "$("$LOOPS" getppid-filter1 "$N_GETPPID" | field median_ns)"
	fi
	lap getppid
	if want fork+exec; then
		for c in $(rot $((RND - 1)) $FORKEXEC_CFGS); do
			have_cfg "$c" || continue
			# the run's CPU (user + system: supervisor, loop and the
			# children they wait for) beside the loop's own wall median;
			# none for bwrap, whose sandbox's CPU never reaches the
			# rusage of what the shell waits for (measured: ~4 us a run)
			out=$({ TIMEFORMAT='%3U %3S'; time ENTRY_N=${ENTRY[forkexec]:-} under "$c" exec "$LOOPS" forkexec "$N_FORKEXEC" 2>&4; } 4>&2 2>"$T/cpu")
			out=$(chained "$c" "$N_FORKEXEC" "$(field median_ns <<<"$out")")
			add "$c:forkexec" "$out"
			[ "$c" = bwrap ] || add "$c:forkexec-cpu" "$([ "$out" != NA ] && [ -n "$out" ] && awk -v n="$N_FORKEXEC" '{ printf "%d", ($1 + $2) * 1e9 / n }' "$T/cpu")"
			entry_note "$c" forkexec
		done
	fi
	lap fork+exec
	if [ "$GIT_OK" = 1 ]; then
		for c in $(rot $((RND - 1)) $GIT_CFGS); do
			have_cfg "$c" || continue
			out=$(HOME=$T/home ENTRY_N=${ENTRY[git]:-} under "$c" exec "$T/job.sh" "$N_GIT" "${GITCMD[@]}" | field mean_ns)
			add "$c:git" "$(chained "$c" "$N_GIT" "$out")"
			entry_note "$c" git
		done
	fi
	lap git
	[ -z "$ONLY" ] && for i in $(seq "$START_PER_ROUND"); do
		for c in $START_CFGS; do
			have_cfg "$c" || continue
			rm -f "$T"/start.jsonl*
			t0=$EPOCHREALTIME
			if [ "$c" = shackle ]; then
				"$RUN" --quiet --non-interactive --policy "$T/start.json" --audit "$T/start.jsonl" -- /bin/true
			else
				under "$c" exec /bin/true
			fi
			t1=$EPOCHREALTIME
			add "$c:start" "$(( (${t1/./} - ${t0/./}) * 1000 ))"
		done
	done
	lap start-up
	if want attach; then
		attach_loops udp "$N_UDP"
		attach_loops tcp "$N_TCP"
	fi
	lap attach-loops
	if [ "$CURL_OK" = 1 ]; then
		for c in off on; do
			cg=$CG_OFF
			[ "$c" = on ] && cg=$CG_ON
			add "$c:curl" "$("$T/incg.sh" "$cg" "$T/job.sh" "$N_CURL" curl -sf -o /dev/null "http://127.0.0.1:$PORT/" | field mean_ns)"
		done
	fi
	lap curl
}

# --- the build: BUILD_PAIRS pairs, bare and under shackle-run, alternating
# which comes first; each a fresh build directory of one copy of the tree
# (tests off), configured before the clock starts ---
build_pairs() {
	local i c d order
	(cd "$SRC" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | (mkdir -p "$T/src" && tar -xf - -C "$T/src") ||
		{ echo "# build rows skipped: the tree could not be copied"; return 1; }
	chown -R nobody "$T/src"
	# the conformance vectors' directory of the caller's build
	SHARED_DIR=$(python3 -c 'import json, sys
print(next((o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "shared_dir"), ""))' \
		"$B/meson-info/intro-buildoptions.json" 2>/dev/null)
	for i in $(seq "$BUILD_PAIRS"); do
		order="none shackle"
		[ $((i % 2)) = 0 ] && order="shackle none"
		for c in $order; do
			d=$T/src/b-$c-$i
			meson setup "$d" "$T/src" -Dtests=false -Dbuildtype=debugoptimized \
				${SHARED_DIR:+"-Dshared_dir=$SHARED_DIR"} >"$T/setup.log" 2>&1 ||
				{ echo "# build rows skipped: meson setup failed: $(tail -n 3 "$T/setup.log")"; return 1; }
			chown -R nobody "$d"
			add "$c:build" "$(under "$c" exec "$T/job.sh" 1 ninja -C "$d" -j2 | field mean_ns)"
			rm -rf "$d"
		done
	done
}

START=$SECONDS
echo "# shackle performance driver: $(uname -r), $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uptime | sed 's/.*load/load/')"
echo "# $REPS interleaved rounds; build rows: $([ "$WITH_BUILD" = 1 ] && echo "$BUILD_PAIRS pairs" || echo off)"
echo "# shackle-run: --net-verify=${NETV_MODE:-?} (auto), same-CPU wakeups for network calls: ${SYNC_MODE:-?}"
# an estimate for a quiet 2-vCPU machine: ~40 s a round, ~40 s for the
# memory trees, ~50 s a build (set-up included); round 1's own time follows
if [ -n "$ONLY" ]; then
	echo "# --only $ONLY: the $ONLY rows alone, a few seconds a round"
else
	echo "# expected duration on a quiet 2-vCPU machine: ~$(( (40 * REPS + 40 + WITH_BUILD * 2 * BUILD_PAIRS * 50) / 60 + 1 )) min (under load up to 3 times that)"
fi
peer_note
for r in $(seq "$REPS"); do
	round
	[ "$r" = 1 ] && echo "# round 1 took $((SECONDS - START)) s: the $REPS rounds will take ~$(( (SECONDS - START) * REPS )) s"
done
ROUNDS_S=$((SECONDS - START))
TREE_OUT=
[ -z "$ONLY" ] && TREE_OUT=$(bash "$HERE/tree_rss.sh" "$B" "$TREE_N" 2>&1)
BUILD_S=0
if [ "$WITH_BUILD" = 1 ]; then
	t=$SECONDS
	build_pairs
	BUILD_S=$((SECONDS - t))
fi
report
echo
echo "# wall time: rounds ${ROUNDS_S} s ($(for w in connect getppid fork+exec git start-up attach-loops curl; do printf '%s %s s, ' "$w" "${SPENT[$w]:-0}"; done | sed 's/, $//')),"
echo "#   memory $((SECONDS - START - ROUNDS_S - BUILD_S)) s, build ${BUILD_S} s; total $((SECONDS - START)) s"
