#!/bin/sh
# --help and -h on every command and subcommand: usage on stdout, nothing on
# stderr, exit 0, and `shackle help CMD [SUB]` prints the same text. A usage
# error goes to stderr with exit 2 and the synopsis. The commands are read
# from `shackle help`'s own list (subcommands from each command's usage), so
# that a new command without --help fails here.
# usage: test_cli_help.sh SHACKLE SHACKLE_RUN
set -u
SHACKLE=$1
RUN=$2
D=$(mktemp -d /tmp/shk-cli-help-XXXXXX)
trap 'rm -rf "$D"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }

# help_ok WHAT CMD...: exit 0, a usage on stdout that names WHAT, empty
# stderr (the operator commands of cmd_hitl.c share one usage text)
help_ok() {
	what=$1; shift
	"$@" >"$D/out" 2>"$D/err"; rc=$?
	if [ "$rc" = 0 ] && head -n 1 "$D/out" | grep -q "^usage: shackle" &&
		grep -qw -- "$what" "$D/out" && [ ! -s "$D/err" ]; then
		ok "$* (exit 0, usage on stdout)"
	else
		bad "$* (exit $rc; stdout/stderr follow)"; cat "$D/out" "$D/err"
	fi
}
# usage_error WHAT CMD...: exit 2, nothing on stdout, usage on stderr
usage_error() {
	what=$1; shift
	"$@" >"$D/out" 2>"$D/err" </dev/null; rc=$?
	if [ "$rc" = 2 ] && [ ! -s "$D/out" ] && grep -q "usage: shackle" "$D/err" &&
		grep -qw -- "$what" "$D/err"; then
		ok "$* (exit 2, usage on stderr)"
	else
		bad "$* (exit $rc, wanted 2 with the usage on stderr)"; cat "$D/out" "$D/err"
	fi
}
same() { # same DESC FILE FILE
	if cmp -s "$2" "$3"; then ok "$1"; else bad "$1"; diff "$2" "$3"; fi
}

"$SHACKLE" help >"$D/list" 2>"$D/err" && [ ! -s "$D/err" ] && ok "shackle help" || bad "shackle help"
"$SHACKLE" --help >"$D/list2" && same "shackle --help is shackle help" "$D/list" "$D/list2"
"$SHACKLE" -h >"$D/list2" && same "shackle -h is shackle help" "$D/list" "$D/list2"
cmds=$(sed -n '/^commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' "$D/list")
n=$(echo "$cmds" | wc -w)
[ "$n" -ge 15 ] && ok "shackle help lists $n commands" || bad "shackle help lists $n commands: $cmds"
usage_error "shackle COMMAND" "$SHACKLE"
usage_error "shackle COMMAND" "$SHACKLE" no-such-command
usage_error "shackle COMMAND" "$SHACKLE" help no-such-command

for c in $cmds; do
	help_ok "$c" "$SHACKLE" "$c" --help
	cp "$D/out" "$D/long"
	help_ok "$c" "$SHACKLE" "$c" -h
	same "shackle $c -h is --help" "$D/long" "$D/out"
	help_ok "$c" "$SHACKLE" help "$c"
	same "shackle help $c is shackle $c --help" "$D/long" "$D/out"
	# every command refuses an option it does not have, on stderr
	usage_error "$c" "$SHACKLE" "$c" --no-such-option
	subs=$(grep -o "shackle $c [a-z][a-z-]*" "$D/long" | awk '{print $3}' | sort -u)
	for s in $subs; do
		help_ok "shackle $c $s" "$SHACKLE" "$c" "$s" --help
		cp "$D/out" "$D/sublong"
		help_ok "shackle $c $s" "$SHACKLE" "$c" "$s" -h
		same "shackle $c $s -h is --help" "$D/sublong" "$D/out"
		help_ok "shackle $c $s" "$SHACKLE" help "$c" "$s"
		same "shackle help $c $s is shackle $c $s --help" "$D/sublong" "$D/out"
		usage_error "shackle $c $s" "$SHACKLE" "$c" "$s" --no-such-option
	done
done
# the subcommands found above include these (the parse did not miss them)
for s in "audit verify" "audit show" "audit export" "audit replay" "policy check" "policy explain"; do
	"$SHACKLE" help $s >/dev/null 2>&1 && ok "help $s" || bad "help $s"
done
# after --exec, --help is the call's argument, not a request for help
printf '{"version": 1}' >"$D/p.json"
"$SHACKLE" policy explain "$D/p.json" --exec /bin/true true --help >"$D/out" 2>&1 &&
	grep -q "action: allow" "$D/out" && ok "explain --exec ... --help judges the call" ||
	{ bad "explain --exec ... --help"; cat "$D/out"; }

help_ok "shackle-run" "$RUN" --help
cp "$D/out" "$D/long"
help_ok "shackle-run" "$RUN" -h
same "shackle-run -h is --help" "$D/long" "$D/out"
usage_error "shackle-run" "$RUN" --no-such-option

echo "$fails failure(s)"
[ "$fails" = 0 ]
