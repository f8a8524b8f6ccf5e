#!/bin/bash
# SPDX-License-Identifier: MIT
# shackle-run's memory with an agent tree of N processes (bench_tree): its
# VmHWM and VmRSS (and the watchdog's) read from /proc while the whole tree
# is alive, with N forked children that wait, and with N children that each
# exec `sleep` (N judged execs); then the audit log's bytes per entry. Run
# by hand as root: shackle-run traces lazily there (docs/exec.md,
# "Which threads are tracees"); with AS_USER=NAME it runs as that user (traced mode: every
# process of the tree is a tracee). It prints figures, never fails on one.
#
#   bench/tree_rss.sh BUILD_DIR [N]
#   AS_USER=nobody bench/tree_rss.sh BUILD_DIR [N]
set -u
B=${1:?usage: $0 BUILD_DIR [N]}
N=${2:-1000}
RUN=$B/src/cli/shackle-run
TREE=$B/bench/bench_tree
[ -x "$RUN" ] && [ -x "$TREE" ] || { echo "build $RUN and $TREE first" >&2; exit 2; }
T=$(mktemp -d /tmp/shk-tree-rss.XXXXXX)
chmod 755 "$T"
[ -z "${AS_USER:-}" ] || { mkdir -m 700 "$T/run"; chown "$AS_USER" "$T" "$T/run"; }
trap 'rm -rf "$T"' EXIT
cat >"$T/policy.json" <<'JSON'
{"version": 1, "description": "tree_rss: every exec allowed, nothing else",
 "guard": {"budget_usd": 0, "max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"}, "net": {"default": "deny"}}
JSON
kib() { awk -v k="$1" '$1 == k":" {print $2}' "$2"; }
measure() { # LABEL ARGS...
	local label=$1 pid wd ready=0
	shift
	mkfifo "$T/in"
	${AS_USER:+setpriv --reuid "$(id -u "$AS_USER")" --regid "$(id -g "$AS_USER")" --clear-groups --inh-caps=-all \
		env -i PATH=/usr/bin:/bin HOME="$T" XDG_STATE_HOME="$T" XDG_RUNTIME_DIR="$T/run"} \
	"$RUN" --quiet --non-interactive --policy "$T/policy.json" --audit "$T/$label.jsonl" \
		-- "$TREE" "$@" <"$T/in" >"$T/$label.out" 2>"$T/$label.err" &
	pid=$!
	exec 9>"$T/in"
	for _ in $(seq 600); do
		grep -q '^ready' "$T/$label.out" 2>/dev/null && { ready=1; break; }
		sleep 0.1
	done
	# setpriv and env exec in place: $pid is shackle-run
	if [ "$ready" = 1 ]; then
		cp "/proc/$pid/status" "$T/status"
		wd=$(pgrep -P "$pid" -x shackle-watch | head -n 1)
		printf '%-28s %s  shackle-run VmHWM %6s KiB  VmRSS %6s KiB  threads %s' "$label" \
			"$(grep '^ready' "$T/$label.out")" "$(kib VmHWM "$T/status")" "$(kib VmRSS "$T/status")" \
			"$(kib Threads "$T/status")"
		[ -n "$wd" ] && printf '  watchdog VmRSS %s KiB' "$(kib VmRSS "/proc/$wd/status")"
		echo
	else
		echo "$label: the tree did not get ready in 60 s:" >&2
		cat "$T/$label.err" >&2
	fi
	exec 9>&-
	wait "$pid"
	rm -f "$T/in"
	log_bytes "$label" "$T/$label.jsonl"
}
# LABEL LOG: the whole log's bytes per decision (checkpoints, session
# entries included) and the decision lines' own size
log_bytes() {
	[ -s "$2" ] || return 0
	awk -v label="$1" '{ all += length($0) + 1 }
		/"kind":"decision"/ { n++; dec += length($0) + 1
			if (length($0) + 1 > max) max = length($0) + 1 }
		END { if (n) printf "%-28s audit log: %d decisions in %d entries, %d bytes: %d bytes per decision in all, decision lines %d bytes on average (max %d)\n",
			label, n, NR, all, all / n, dec / n, max }' "$2"
}
# N judged connects (bench_supervise_loops connect, loopback allowed)
connects() {
	local loops=$B/bench/bench_supervise_loops
	[ -x "$loops" ] || { echo "# no $loops: connect log skipped"; return 0; }
	"$RUN" --quiet --non-interactive --policy "$T/net.json" --audit "$T/connect.jsonl" \
		-- "$loops" connect "$N" >/dev/null 2>"$T/connect.err" || cat "$T/connect.err" >&2
	log_bytes "connect-$N" "$T/connect.jsonl"
}
cat >"$T/net.json" <<'JSON'
{"version": 1, "description": "tree_rss: loopback connects allowed",
 "guard": {"budget_usd": 0, "max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [{"name": "loopback", "cidr": "127.0.0.0/8", "action": "allow"}]}}
JSON
echo "# $(uname -r), $(nproc) CPUs, $(uptime | sed 's/.*load/load/')"
measure "fork-$N" "$N"
measure "fork+exec-$N" "$N" exec
[ -n "${AS_USER:-}" ] || connects
