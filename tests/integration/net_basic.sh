#!/bin/bash
# SPDX-License-Identifier: MIT
# Network tool calls: every way of naming a destination (connect, non-blocking
# connect, v4-mapped IPv6, UDP sendto/sendmsg/sendmmsg, UDP connect, TCP Fast
# Open, AF_UNIX paths and abstract names, bind/listen) is judged; the agent
# sees EPERM for a denied destination and nothing arrives there; send() on a
# connected socket is not a tool call (fast path, no audit entry).
. "$(dirname "$0")/lib.sh"
setup
mkdir -p "$T/real"
ln -s real "$T/link"
start_listener --unix "$T/ok.sock" --unix "$T/bad.sock" --unix-dgram "$T/bad.dgram" \
	--abstract "shk-it-ok-$$" --abstract "shk-it-bad-$$" \
	--unix "$T/real/s.sock" --unix "$T/real/g1.sock"
wait_file "$LCOUNTS"
POL=$(policy net <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": true},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "forbidden", "cidr": "$FORBIDDEN/32", "action": "deny"},
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"},
   {"name": "ok-sock", "unix": "$T/ok.sock", "action": "allow"},
   {"name": "ok-abstract", "unix": "@shk-it-ok-*", "action": "allow"}
 ]}}
JSON
)
N=$(helper shk-netprobe)
P=$LPORT
cat >"$T/agent.sh" <<SH
p() { label=\$1; shift; echo "\$label \$("$N" "\$@" 2>&1)"; }
p connect-allowed connect $ALLOWED $P
p connect-forbidden connect $FORBIDDEN $P
p nonblock-allowed connect $ALLOWED $P --nonblock
p nonblock-forbidden connect $FORBIDDEN $P --nonblock
p mapped-allowed connect ::ffff:$ALLOWED $P
p mapped-forbidden connect ::ffff:$FORBIDDEN $P
p mapped-nonblock-forbidden connect ::ffff:$FORBIDDEN $P --nonblock
p udp-allowed udp $ALLOWED $P
p udp-forbidden udp $FORBIDDEN $P
p udp-mapped-forbidden udp ::ffff:$FORBIDDEN $P
p udp-connect-forbidden udp-connect $FORBIDDEN $P
p sendmsg-allowed sendmsg $ALLOWED $P
p sendmsg-forbidden sendmsg $FORBIDDEN $P
p sendmmsg-mixed sendmmsg $ALLOWED $P $FORBIDDEN $P
p fastopen-allowed fastopen $ALLOWED $P
p fastopen-forbidden fastopen $FORBIDDEN $P
p unix-allowed unix $T/ok.sock
p unix-forbidden unix $T/bad.sock
p unix-dgram-forbidden unix-dgram $T/bad.dgram
p abstract-allowed unix-abstract shk-it-ok-$$
p abstract-forbidden unix-abstract shk-it-bad-$$
p listen-allowed listen $ALLOWED 0
p bind-forbidden bind $FORBIDDEN 0
SH
shk "$POL" -- /bin/sh "$T/agent.sh"
show_run
get() { awk -v l="$1" '$1 == l {print $2; exit}' "$OUT"; }

expect_eq "exit status of the agent" "$RC" 0
for c in connect nonblock mapped udp sendmsg fastopen unix abstract listen; do
	expect_eq "$c-allowed" "$(get $c-allowed)" OK
done
for c in connect nonblock mapped mapped-nonblock udp udp-mapped udp-connect sendmsg fastopen \
	unix unix-dgram abstract bind; do
	expect_eq "$c-forbidden" "$(get $c-forbidden)" EPERM
done
mm=$(grep '^sendmmsg-mixed' "$OUT")
case "$mm" in
*"OK sent_msgs=2"*) fail "sendmmsg: both datagrams sent, including the forbidden one ($mm)" ;;
*) pass "sendmmsg with a forbidden second destination not fully sent ($mm)" ;;
esac
expect_eq "peer of the allowed connect" \
	"$(awk '$1 == "connect-allowed" {print $3}' "$OUT")" "peer=$ALLOWED:$P"
expect_ge "arrivals at the allowed address (the probes really ran)" "$(wait_arrivals $ALLOWED tcp 4)" 4
expect_no_arrival "forbidden destination" "$FORBIDDEN"
expect_decision "denied connects audited" 4 verdict=DENY tool=net:connect
expect_decision "allowed connects audited" 4 verdict=ALLOW tool=net:connect
expect_decision "denied sends audited" 3 verdict=DENY tool~net:send
expect_audit_ok

# Fast path: send() on a connected socket names no destination and must not
# be a tool call (the filter checks the arguments, the supervisor never sees it).
# The session_end counters tell whether the supervisor was notified at all:
# every notification must be a decision, so none was spent on send().
cat >"$T/fast.sh" <<SH
echo "tcp-send \$("$N" tcp-send $ALLOWED $P)"
echo "udp-send \$("$N" udp-connect $ALLOWED $P)"
SH
shk "$POL" -- /bin/sh "$T/fast.sh"
show_run
expect_eq "send() on a connected TCP socket" "$(get tcp-send)" OK
expect_eq "send() on a connected UDP socket" "$(get udp-send)" OK
expect_decision "the connects are tool calls" 2 tool=net:connect verdict=ALLOW
expect_no_decision "send() without address is not a tool call" tool~net:send
expect_eq "notifications the supervisor received = decisions" \
	"$(aq kind=session_end --field counters.notifications)" "$(aq kind=decision)"
expect_audit_ok "fast path run"

# Host rules: resolved by the supervisor when it starts (/etc/hosts here, so
# no traffic leaves the machine). "localhost" allows 127.0.0.1, not .2.
if getent hosts localhost | grep -q '^127\.0\.0\.1 '; then
	HPOL=$(policy host <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "by-name", "host": "localhost", "port": $P, "action": "allow"}
 ]}}
JSON
)
	cat >"$T/host.sh" <<SH
echo "host-allowed \$("$N" connect $ALLOWED $P)"
echo "host-forbidden \$("$N" connect $FORBIDDEN $P)"
echo "host-otherport \$("$N" connect $ALLOWED 1)"
SH
	shk "$HPOL" -- /bin/sh "$T/host.sh"
	show_run
	expect_eq "host rule: localhost:$P allowed" "$(get host-allowed)" OK
	expect_eq "host rule: $FORBIDDEN denied" "$(get host-forbidden)" EPERM
	expect_eq "host rule: localhost, other port denied" "$(get host-otherport)" EPERM
	expect_audit_ok "host rule"
else
	note "localhost does not resolve to 127.0.0.1 here: host rule part not run"
fi
# Unix rules written through a symlinked directory (/var/run/docker.sock
# where /var/run -> /run): the socket is judged by its canonical name, and
# such a deny rule never matched (red-team finding). Literal and glob.
SPOL=$(policy unix-symlink <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "allow", "rules": [
   {"name": "no-s", "unix": "$T/link/s.sock", "action": "deny"},
   {"name": "no-g", "unix": "$T/link/g*.sock", "action": "deny"}
 ]}}
JSON
)
cat >"$T/sym.sh" <<SH
echo "via-link \$("$N" unix $T/link/s.sock)"
echo "via-real \$("$N" unix $T/real/s.sock)"
echo "glob-via-real \$("$N" unix $T/real/g1.sock)"
echo "other \$("$N" unix $T/ok.sock)"
SH
shk "$SPOL" -- /bin/sh "$T/sym.sh"
show_run
expect_eq "unix deny rule through a symlinked dir: connect via the link" "$(get via-link)" EPERM
expect_eq "unix deny rule through a symlinked dir: connect via the real dir" "$(get via-real)" EPERM
expect_eq "unix glob deny rule through a symlinked dir" "$(get glob-via-real)" EPERM
expect_eq "unix: another socket stays allowed" "$(get other)" OK
expect_audit_ok "unix rules through a symlinked directory"
# ... but an allow rule is not widened through a symlink: an allow of
# link/s.sock does not reach the socket behind it (it names another file)
APOL=$(policy unix-symlink-allow <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "ok-s", "unix": "$T/link/s.sock", "action": "allow"}
 ]}}
JSON
)
shk "$APOL" -- /bin/sh "$T/sym.sh"
expect_eq "unix allow rule through a symlinked dir: the real socket is not allowed" "$(get via-real)" EPERM

# An abstract name with a NUL in it is logged with all its bytes (as the
# policy matches them): "\0name\0x" was logged as "@name", next to the
# DENY of the real "@name" (red-team finding).
"$PY" -c "
import socket, sys, time
ls = []
for n in (b'\0shk-nul-$$', b'\0shk-nul-$$\0x'):
    s = socket.socket(socket.AF_UNIX); s.bind(n); s.listen(4); ls.append(s)
open(sys.argv[1], 'w').close()
time.sleep(20)" "$T/nul.ready" &
NULP=$!
wait_file "$T/nul.ready"
NPOL=$(policy unix-nul <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "allow", "rules": [
   {"name": "no-nul", "unix": "@shk-nul-$$", "action": "deny"}
 ]}}
JSON
)
shk "$NPOL" -- "$AGENT_PY" -c "
import socket
s = socket.socket(socket.AF_UNIX); s.connect(b'\0shk-nul-$$\0x'); print('connected')"
kill "$NULP" 2>/dev/null
expect_eq "abstract name with a NUL: connected (allowed)" "$(tail -n 1 "$OUT")" connected
expect_eq "abstract name with a NUL: logged with every byte" \
	"$(grep -c "\"unix\":\"@shk-nul-$$\\\\u0000x\"" "$LOG")" 1
expect_audit_ok "abstract name with a NUL"

finish
