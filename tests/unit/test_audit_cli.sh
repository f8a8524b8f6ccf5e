#!/bin/sh
# shackle keygen / audit verify|show|export|replay from the command line.
# usage: test_audit_cli.sh SHACKLE AUDIT_WRITELOG
set -u
SHACKLE=$1
WRITELOG=$2
D=$(mktemp -d /tmp/shk-audit-cli-XXXXXX)
trap 'rm -rf "$D"' EXIT
fails=0
ok() { echo "ok - $1"; }
bad() { echo "FAIL - $1"; fails=$((fails + 1)); }
expect() { # expect STATUS DESCRIPTION CMD...
	want=$1; what=$2; shift 2
	"$@" >"$D/out" 2>"$D/err"; got=$?
	if [ "$got" = "$want" ]; then ok "$what"; else bad "$what (exit $got, wanted $want)"; cat "$D/out" "$D/err"; fi
}
has() { # has FILE TEXT DESCRIPTION
	if grep -q -- "$2" "$1"; then ok "$3"; else bad "$3 ('$2' missing)"; cat "$1"; fi
}

expect 0 "keygen" "$SHACKLE" keygen --out "$D/k"
[ "$(stat -c %a "$D/k.key")" = 600 ] && ok "secret key mode 0600" || bad "secret key mode"
expect 1 "keygen refuses to overwrite" "$SHACKLE" keygen --out "$D/k"
has "$D/err" "refusing to overwrite" "overwrite message"
expect 2 "keygen without --out" "$SHACKLE" keygen

expect 0 "write a ledger" "$WRITELOG" "$D/k.key" "$D/log.jsonl"
expect 0 "verify intact log" "$SHACKLE" audit verify --pubkey "$D/k.pub" "$D/log.jsonl"
has "$D/out" "^intact" "intact report"
expect 0 "verify --json" "$SHACKLE" audit verify --json --pubkey "$D/k.pub" "$D/log.jsonl"
has "$D/out" '"ok":true' "json ok"

expect 0 "show" "$SHACKLE" audit show "$D/log.jsonl"
has "$D/out" "exec:curl" "show lists tools"
has "$D/out" "max_repeat_exceeded" "show lists reasons"
if grep -q "$(printf '\033')" "$D/out"; then bad "no colour when not a tty"; else ok "no colour when not a tty"; fi
expect 0 "show --verdict DENY" "$SHACKLE" audit show --verdict DENY "$D/log.jsonl"
if grep -q "ALLOW" "$D/out"; then bad "verdict filter"; else ok "verdict filter"; fi
expect 0 "show --since" "$SHACKLE" audit show --since 1700000004 "$D/log.jsonl"
if grep -q "within_thresholds" "$D/out"; then bad "since filter"; else ok "since filter"; fi
expect 2 "show bad --verdict" "$SHACKLE" audit show --verdict MAYBE "$D/log.jsonl"

expect 0 "replay" "$SHACKLE" audit replay --pubkey "$D/k.pub" "$D/log.jsonl"
has "$D/out" "^reproduced" "replay reproduced"
# cut after a signed checkpoint, before session_end: verify says truncated,
# and so must replay (it said "reproduced", exit 0); --live accepts a log
# still being written, as verify --live does
last_cp=$(grep -n '"kind":"checkpoint"' "$D/log.jsonl" | cut -d: -f1 | tail -n 2 | head -n 1)
head -n "$last_cp" "$D/log.jsonl" >"$D/cut.jsonl"
expect 1 "verify a log cut before session_end" "$SHACKLE" audit verify --pubkey "$D/k.pub" "$D/cut.jsonl"
expect 1 "replay --pubkey refuses a log cut before session_end" \
	"$SHACKLE" audit replay --pubkey "$D/k.pub" "$D/cut.jsonl"
expect 0 "replay --pubkey --live accepts it" "$SHACKLE" audit replay --pubkey "$D/k.pub" --live "$D/cut.jsonl"

expect 0 "export dir" "$SHACKLE" audit export --pubkey "$D/k.pub" --out "$D/bundle" "$D/log.jsonl"
expect 0 "verify bundle dir" "$SHACKLE" audit verify --bundle "$D/bundle"
expect 0 "export tar" "$SHACKLE" audit export --pubkey "$D/k.pub" --out "$D/bundle.tar" "$D/log.jsonl"
expect 0 "verify bundle tar" "$SHACKLE" audit verify --bundle "$D/bundle.tar"
# a log the manifest does not list is not verified: the bundle is refused
echo '{"kind":"decision","verdict":"ALLOW"}' >"$D/bundle/logs/001-extra.jsonl"
expect 2 "bundle with an unlisted log" "$SHACKLE" audit verify --bundle "$D/bundle"
has "$D/err" "logs/001-extra.jsonl is not listed" "unlisted log named"
rm "$D/bundle/logs/001-extra.jsonl"
sed -i 's/"max_repeat_calls":2/"max_repeat_calls":7/' "$D/bundle/policy.json"
expect 1 "bundle with a swapped policy" "$SHACKLE" audit verify --bundle "$D/bundle"
has "$D/err" "policy.json does not match" "policy mismatch named"
expect 2 "export refuses to overwrite" "$SHACKLE" audit export --pubkey "$D/k.pub" --out "$D/bundle" "$D/log.jsonl"

sed -i '3s/"pid":321/"pid":322/' "$D/log.jsonl"
expect 1 "verify modified log" "$SHACKLE" audit verify --pubkey "$D/k.pub" "$D/log.jsonl"
has "$D/out" "modified field: .*log.jsonl:3 (seq 2)" "names class, line and seq"
expect 1 "replay refuses an unverified log" "$SHACKLE" audit replay --pubkey "$D/k.pub" "$D/log.jsonl"
expect 2 "verify with missing key" "$SHACKLE" audit verify --pubkey "$D/nope.pub" "$D/log.jsonl"
# garbage after a log is named at its first line (the reader now also stops
# there: a record per line of millions of blank lines took 1.4 GB; memory is
# not asserted here)
"$WRITELOG" "$D/k.key" "$D/fresh.jsonl" || bad "write a fresh ledger"
n=$(wc -l <"$D/fresh.jsonl")
{ cat "$D/fresh.jsonl"; yes '' | head -n 200000; } >"$D/blank.jsonl"
expect 1 "verify a log followed by blank lines" "$SHACKLE" audit verify --pubkey "$D/k.pub" "$D/blank.jsonl"
has "$D/out" "blank.jsonl:$((n + 1)): not a ledger entry" "first blank line named"
has "$D/out" "of $((n + 1)) entries" "counted up to it"
# replay without --pubkey reads an unverified log: sizes it would allocate
# a session by are bounded
sed '1s/"max_pending":0/"max_pending":1099511627776/' "$D/fresh.jsonl" >"$D/bigcfg.jsonl"
expect 1 "replay refuses an absurd session_config" "$SHACKLE" audit replay "$D/bigcfg.jsonl"
has "$D/out" "session_config.max_pending = 1099511627776 is not a size" "absurd size named"
: >"$D/empty.jsonl"
expect 2 "verify a missing log" "$SHACKLE" audit verify --pubkey "$D/k.pub" "$D/nope.jsonl"
expect 2 "verify an empty log" "$SHACKLE" audit verify --pubkey "$D/k.pub" "$D/empty.jsonl"

echo "$fails failure(s)"
[ "$fails" = 0 ]
