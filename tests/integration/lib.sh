# SPDX-License-Identifier: MIT
# Shared shell library of the integration scenarios (sourced by bash).
#
# A scenario runs real programs under shackle-run and checks what the agent
# saw (errno names printed by the helpers), what reached the loopback
# witnesses outside the sandbox, the exit status, and the audit log (which
# must also verify and replay). Checks accumulate: a run reports every
# failing check, then `finish` exits 1 if there was any.
#
# Skips: `skip REASON` prints "SKIP: REASON" and exits 77, unless
# SHACKLE_TESTS_MUST_RUN=1, in which case it fails (exit 1).
#
# Only loopback addresses are ever used. The "forbidden" destination of the
# network scenarios is 127.0.0.2 (a witness listens there, outside the agent's
# sandbox), the allowed one is 127.0.0.1.

set -u

# CI runners export CI=true, which makes shackle-run treat HITL as a block
# when no operator channel is configured. Scenarios test that on purpose
# (CI=true on one command); everything else must not depend on the runner.
unset CI

SRC=${SHACKLE_SOURCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BLD=${SHACKLE_BUILD_ROOT:-}
IT=$SRC/tests/integration
HELPERS=${BLD:+$BLD/tests/integration}
SHACKLE_RUN=${SHACKLE_RUN:-${BLD:+$BLD/src/cli/shackle-run}}
SHACKLE=${SHACKLE:-${BLD:+$BLD/src/cli/shackle}}
NAME=$(basename "$0" .sh)
FAILS=0
ALLOWED=127.0.0.1
FORBIDDEN=127.0.0.2
BG_PIDS=()

must_run() { [ -n "${SHACKLE_TESTS_MUST_RUN:-}" ] && [ "${SHACKLE_TESTS_MUST_RUN}" != 0 ]; }

skip() {
	if must_run; then
		echo "FAIL (SHACKLE_TESTS_MUST_RUN=1, may not skip): $*" >&2
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

note() { echo "# $*"; }
pass() { echo "ok - $*"; }
fail() {
	echo "not ok - $*"
	FAILS=$((FAILS + 1))
}

finish() {
	if [ "$FAILS" -ne 0 ]; then
		echo "$NAME: $FAILS check(s) failed (work dir kept: $T)"
		KEEP=1
		exit 1
	fi
	echo "$NAME: all checks passed"
	exit 0
}

cleanup() {
	local p
	for p in "${BG_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${BG_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	if [ -z "${KEEP:-}" ] && [ -n "${T:-}" ]; then
		rm -rf "$T"
	fi
}

require_root() { [ "$(id -u)" = 0 ] || skip "needs root (euid $(id -u))"; }
require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "needs $c"
	done
}

# The real interpreter, not a pyenv/asdf shim script (which would itself
# exec several programs under supervision and muddle the audit log).
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PY=
[ -n "$PY" ] || skip "needs python3"
# The agent may run as another user (shackle-run as root defaults to
# --user nobody): give it an interpreter every user can run.
AGENT_PY=$PY
for p in /usr/bin/python3 /usr/local/bin/python3; do
	if [ -x "$p" ]; then AGENT_PY=$(readlink -f "$p"); break; fi
done

setup() {
	[ -n "$BLD" ] || skip "SHACKLE_BUILD_ROOT is not set (run through meson test)"
	[ -x "$SHACKLE_RUN" ] || skip "shackle-run is not built ($SHACKLE_RUN)"
	[ -x "$SHACKLE" ] || skip "shackle is not built ($SHACKLE)"
	T=$(mktemp -d "${TMPDIR:-/tmp}/shk-it-$NAME.XXXXXX")
	# The agent may run as nobody (shackle-run's default as root): it must be
	# able to create its mark files and results here, or a denied exec would
	# look the same as an allowed one that failed to write.
	chmod 1777 "$T"
	trap cleanup EXIT
	"$SHACKLE" keygen --out "$T/key" >/dev/null 2>"$T/keygen.err" ||
		{ cat "$T/keygen.err" >&2; echo "FAIL: shackle keygen"; exit 1; }
	KEY=$T/key.key
	PUB=$T/key.pub
	RUNS=0
}

helper() { echo "$HELPERS/$1"; }

# Write a policy from stdin to $T/NAME.json and check it with the CLI first:
# a scenario that runs with a policy shackle refuses tests nothing.
policy() {
	local f=$T/$1.json
	cat >"$f"
	if ! "$SHACKLE" policy check "$f" >"$T/$1.check" 2>&1; then
		cat "$T/$1.check" >&2
		echo "FAIL: test policy $1 is refused by shackle policy check"
		exit 1
	fi
	echo "$f"
}

# A policy that allows every exec and no network, with no repeat guard.
plain_policy() {
	policy plain <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny"}}
JSON
}

# shk POLICY -- CMD...: run CMD under shackle-run with a fresh audit log.
# Sets RC (exit status), OUT/ERR (files), LOG (audit log). A run that does
# not end within SHK_TIMEOUT seconds is a hang and fails the scenario.
shk() {
	local pol=$1
	shift
	[ "$1" = -- ] && shift
	RUNS=$((RUNS + 1))
	LOG=$T/audit-$RUNS.jsonl
	OUT=$T/out-$RUNS
	ERR=$T/err-$RUNS
	local t0=$SECONDS opts=(--policy "$pol" --audit "$LOG" --key "$KEY" --session "it-$NAME-$RUNS")
	# SHK_HOLD=1: no --non-interactive, so that "hitl" calls are held
	[ -n "${SHK_HOLD:-}" ] || opts+=(--non-interactive)
	# SHK_USER=0: the agent runs as root (the strongest attacker); default:
	# shackle-run's own default (nobody when the tests run as root)
	[ -z "${SHK_USER:-}" ] || opts+=(--user "$SHK_USER")
	# SHK_WRAP=PROG: shackle-run is started through PROG (e.g. shk-noclone3)
	timeout -k 5 "${SHK_TIMEOUT:-60}" ${SHK_WRAP:-} "$SHACKLE_RUN" "${opts[@]}" ${SHK_EXTRA:-} \
		-- "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
	ELAPSED=$((SECONDS - t0))
	if [ "$ELAPSED" -ge "${SHK_TIMEOUT:-60}" ]; then
		fail "run $RUNS ($*) did not finish within ${SHK_TIMEOUT:-60}s (hang; exit $RC)"
	fi
	return 0
}

# First word the helper printed (its errno name), last line of stdout.
answer() { tail -n 1 "$OUT" | awk '{print $1}'; }

show_run() {
	echo "--- run $RUNS: exit $RC; stdout:"
	cat "$OUT"
	echo "--- stderr:"
	tail -n 20 "$ERR"
}

expect_eq() { # DESC ACTUAL EXPECTED
	if [ "$2" = "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2', want '$3'"; fi
}
expect_ne() { # DESC ACTUAL UNWANTED
	if [ "$2" != "$3" ]; then pass "$1 ($2)"; else fail "$1: got '$2'"; fi
}
expect_in() { # DESC ACTUAL ALT...
	local d=$1 a=$2 x
	shift 2
	for x in "$@"; do
		[ "$a" = "$x" ] && { pass "$d ($a)"; return; }
	done
	fail "$d: got '$a', want one of: $*"
}
expect_le() { # DESC ACTUAL MAX
	if [ "$2" -le "$3" ] 2>/dev/null; then pass "$1 ($2 <= $3)"; else fail "$1: got '$2', want <= $3"; fi
}
expect_ge() { # DESC ACTUAL MIN
	if [ "$2" -ge "$3" ] 2>/dev/null; then pass "$1 ($2 >= $3)"; else fail "$1: got '$2', want >= $3"; fi
}
expect_absent() { # DESC FILE
	if [ ! -e "$2" ]; then pass "$1"; else fail "$1: $2 exists"; fi
}

# aq [FILTER...] [--field F|--json]: query the last audit log.
aq() { "$PY" "$IT/audit_query.py" "$LOG" "$@"; }

# ALLOW decisions that come after the first breaker_trip entry (file order);
# "no-trip" when the log has no breaker_trip entry.
allowed_after_trip() {
	"$PY" - "$LOG" <<'PYEOF'
import json, sys
tripped, n = False, 0
for line in open(sys.argv[1], encoding="utf-8"):
    if not line.strip():
        continue
    e = json.loads(line)
    if e.get("kind") == "breaker_trip":
        tripped = True
    elif tripped and e.get("kind") == "decision" and str(e.get("verdict", "")).upper() == "ALLOW":
        n += 1
print(n if tripped else "no-trip")
PYEOF
}

# The audit log of the last run verifies with the public key and replays.
expect_audit_ok() {
	local what=${1:-run $RUNS}
	if [ ! -s "$LOG" ]; then
		fail "$what: no audit log at $LOG"
		return
	fi
	if "$SHACKLE" audit verify --pubkey "$PUB" "$LOG" >"$T/verify.out" 2>&1; then
		pass "$what: audit verify"
	else
		fail "$what: audit verify: $(tail -n 3 "$T/verify.out" | tr '\n' ' ')"
	fi
	if "$SHACKLE" audit replay "$LOG" >"$T/replay.out" 2>&1; then
		pass "$what: audit replay"
	else
		fail "$what: audit replay: $(tail -n 3 "$T/replay.out" | tr '\n' ' ')"
	fi
}

# Decision entries of the last log that match FILTERS must number >= MIN.
expect_decision() { # DESC MIN FILTER...
	local d=$1 min=$2 n
	shift 2
	n=$(aq kind=decision "$@") || { fail "$d: audit log unreadable"; return; }
	if [ "$n" -ge "$min" ]; then pass "$d ($n entries: $*)"; else
		fail "$d: $n decision entries match $*, want >= $min"
	fi
}
expect_no_decision() { # DESC FILTER...
	local d=$1 n
	shift
	n=$(aq kind=decision "$@") || { fail "$d: audit log unreadable"; return; }
	if [ "$n" = 0 ]; then pass "$d"; else fail "$d: $n decision entries match $*"; fi
}

# Background witnesses (outside shackle-run). They exit on their own after
# a bounded time even if this script is killed.
wait_file() { # FILE [TENTHS]
	local i
	for i in $(seq "${2:-100}"); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

wait_grep() { # FILE PATTERN [TENTHS]: until a line of FILE matches
	local i
	for i in $(seq "${3:-300}"); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

json_get() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# start_listener [extra listener.py args]: TCP+UDP witness on 127.0.0.1 and
# 127.0.0.2, same port; sets LPORT and LCOUNTS.
start_listener() {
	LCOUNTS=$T/counts.json
	"$PY" "$IT/listener.py" --addr "$ALLOWED" --addr "$FORBIDDEN" --port-file "$T/lport.json" \
		--counts-file "$LCOUNTS" --timeout "${SHK_WITNESS_TIMEOUT:-300}" "$@" \
		2>"$T/listener.err" &
	BG_PIDS+=($!)
	wait_file "$T/lport.json" || { cat "$T/listener.err"; echo "FAIL: listener did not start"; exit 1; }
	LPORT=$(json_get "$T/lport.json" port)
}

# arrivals ADDR KIND (tcp|udp): what the witness saw at ADDR so far.
arrivals() {
	"$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c.get(sys.argv[2],{}).get(sys.argv[3],0))' \
		"$LCOUNTS" "$1" "$2"
}

# wait_arrivals ADDR KIND N: give the witness time to drain its queue (up to
# 15 s) until it has counted N arrivals; prints the final count.
wait_arrivals() {
	local i n
	for i in $(seq 150); do
		n=$(arrivals "$1" "$2")
		[ "$n" -ge "$3" ] && break
		sleep 0.1
	done
	echo "$n"
}

expect_no_arrival() { # DESC ADDR
	local n
	sleep 0.2
	n=$(( $(arrivals "$2" tcp) + $(arrivals "$2" udp) ))
	if [ "$n" = 0 ]; then pass "$1: nothing arrived at $2"; else
		fail "$1: $n connection(s)/datagram(s) arrived at $2 (BREACH)"
	fi
}

start_http401() {
	"$PY" "$IT/http401.py" --port-file "$T/hport.json" --log "$T/http.log" \
		--timeout "${SHK_WITNESS_TIMEOUT:-300}" 2>"$T/http.err" &
	BG_PIDS+=($!)
	wait_file "$T/hport.json" || { cat "$T/http.err"; echo "FAIL: http server did not start"; exit 1; }
	HPORT=$(json_get "$T/hport.json" port)
}

# pid_alive PID: a process that has not exited. A zombie is dead, and one
# reaped between two looks must not pass for alive: its state is read once,
# and no readable state means no process.
pid_alive() {
	local st
	[ -n "$1" ] || return 1
	st=$(sed -n 's/^State:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null) || return 1
	case $st in
	"" | Z* | X*) return 1 ;;
	esac
	return 0
}

# wait_pending N [PREFIX...]: until session $SESSION holds N calls (15 s);
# prints the ids; $T/pending.json is the last listing. PREFIX runs the
# shackle command (env -u VAR, a function that changes user).
wait_pending() {
	local n=$1 i c
	shift
	for i in $(seq 150); do
		"$@" "$SHACKLE" pending --json --session "$SESSION" >"$T/pending.json" 2>/dev/null &&
			c=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/pending.json") &&
			[ "$c" -ge "$n" ] && break
		sleep 0.1
	done
	"$PY" -c 'import json,sys; print(" ".join(p["id"] for p in json.load(open(sys.argv[1]))))' "$T/pending.json"
}

# wait_no_pending: until the session lists no held call (prints what is
# still listed after 15 s)
wait_no_pending() {
	local i
	for i in $(seq 150); do
		"$SHACKLE" pending --json --session "$SESSION" >"$T/pending.json" 2>/dev/null &&
			[ "$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/pending.json")" = 0 ] &&
			return 0
		sleep 0.1
	done
	"$PY" -c 'import json,sys; print(" ".join(p["id"] for p in json.load(open(sys.argv[1]))))' "$T/pending.json"
}
