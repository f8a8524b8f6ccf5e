#!/bin/bash
# SPDX-License-Identifier: MIT
# Findings of the supervisor's security review: each run gives the emulation
# something malformed or privileged and checks the agent gets what the
# kernel would answer (or EPERM), that shackle-run survives it (its exit
# status is the helper's) and that the log verifies.
. "$(dirname "$0")/lib.sh"
require_root
setup
H=$(helper shk-harden)
POL=$(policy harden <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "only-allowed", "cidr": "$ALLOWED/32", "op": ["connect", "send"], "action": "allow"},
   {"name": "v6-loopback", "cidr": "::1/128", "op": ["send"], "action": "allow"},
   {"name": "unix", "unix": "/**", "action": "allow"}
 ]}}
JSON
)

# run_expect DESC WANT ARGS...: the helper's answer under shackle-run
run_expect() {
	local d=$1 want=$2
	shift 2
	shk "$POL" -- "$H" "$@"
	expect_eq "$d" "$(answer)" "$want"
	expect_in "$d: shackle-run exit is the helper's" "$RC" 0 1
	if grep -qE 'Sanitizer|runtime error' "$ERR"; then
		fail "$d: sanitizer report from shackle-run: $(grep -m1 -E 'Sanitizer|runtime error' "$ERR")"
	fi
}

# 1. control messages whose headers lie about their length (heap overflow in
#    translate_control before the fix) and more fds than SCM_MAX_FD
for len in 0 8 15 200; do
	run_expect "SCM_RIGHTS then a header with cmsg_len=$len" EINVAL cmsg-len "$len"
done
run_expect "253 fds in one SCM_RIGHTS (SCM_MAX_FD)" "ok" cmsg-fds 253
run_expect "254 fds in one SCM_RIGHTS" EINVAL cmsg-fds 254
expect_audit_ok

# 2. AF_UNIX addresses longer than a sockaddr_un (stack overflow in
#    unix_target before the fix): the kernel answers EINVAL
run_expect "connect with a 128-byte AF_UNIX address" EINVAL unix-long
run_expect "bind with a 128-byte AF_UNIX address" EINVAL unix-long bind

# 3. control messages are sent with the supervisor's privileges: only an
#    allowlist passes. IP_RETOPTS loose source routing would carry a datagram
#    judged for 127.0.0.1 to 127.0.0.2; SO_MARK/SO_PRIORITY need CAP_NET_ADMIN
start_listener --sniff-lo shk-harden-cmsg
run_expect "UDP to $ALLOWED with IP_RETOPTS LSRR via $FORBIDDEN" EPERM cmsg lsrr "$ALLOWED" "$LPORT" "$FORBIDDEN"
expect_no_arrival "LSRR" "$FORBIDDEN"
# an IPv6 type-2 routing header needs no privilege (kernels with
# CONFIG_IPV6_MIP6) and would carry a datagram judged for ::1 to the address
# inside it: refused before the kernel sees it (the decision is ALLOW)
run_expect "UDPv6 to ::1 with an IPV6_RTHDR type-2 routing header" EPERM cmsg rthdr ::1 "$LPORT" ::2
run_expect "UDP with SO_MARK" EPERM cmsg mark "$ALLOWED" "$LPORT"
run_expect "UDP with SO_PRIORITY" EPERM cmsg priority "$ALLOWED" "$LPORT"
sleep 0.3
expect_eq "frames with the marker on lo after the refused sends" "$(arrivals lo-frames udp)" 0
run_expect "SCM_CREDENTIALS claiming pid 1 / uid 0" EPERM creds 1 0 0
run_expect "SCM_CREDENTIALS claiming its own pid but uid 0" EPERM creds self 0 self
shk "$POL" -- "$H" creds self self self
expect_eq "SCM_CREDENTIALS with its own ids passes" "$(answer)" ok
expect_eq "the receiver sees the agent's uid/gid" \
	"$(tail -n 1 "$OUT" | sed -n 's/^ok uid=\([0-9]*\) gid=\([0-9]*\) self=\1\/\2$/same/p')" same
SHK_USER=0 shk "$POL" -- "$H" creds self self self
expect_eq "root agent: SCM_CREDENTIALS with its own ids passes" "$(answer)" ok
SHK_USER=0 run_expect "root agent: SCM_CREDENTIALS claiming pid 1" EPERM creds 1 0 0
run_expect "UDP with IP_TTL (allowed)" "ok" cmsg ttl "$ALLOWED" "$LPORT"
run_expect "UDP with IP_TOS (allowed)" "ok" cmsg tos "$ALLOWED" "$LPORT"
expect_ge "allowed datagrams with IP_TTL/IP_TOS arrived" "$(wait_arrivals "$ALLOWED" udp 2)" 2
# On the kernel-verified path the kernel re-reads what it is given after our
# check: a sendmsg's control messages (a source route flipped in) must not
# be, so a sendmsg is always emulated; a sendto may be let through.
if SHK_EXTRA="--net-verify bpf" shk "$POL" -- "$H" cmsg ttl "$ALLOWED" "$LPORT" && [ "$RC" != 125 ]; then
	expect_eq "--net-verify bpf: UDP sendmsg with cmsgs sent" "$(answer)" ok
	expect_eq "--net-verify bpf: sendmsg never CONTINUE'd" \
		"$(aq kind=session_end --field counters | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.readline())["net_continued"])')" 0
else
	note "--net-verify bpf unavailable here: $(tail -n 1 "$ERR")"
fi
expect_audit_ok

# ... and the same source route as a socket option (IP_OPTIONS) would move
# a judged TCP connect to the first hop (the kernel lets only CAP_NET_RAW
# set one: the agent runs as root here); SCTP would make unjudged
# associations (SCTP_SOCKOPT_CONNECTX): both refused at the filter
SHK_USER=0 run_expect "root agent: setsockopt(IP_OPTIONS, LSRR via $FORBIDDEN)" EPERM \
	sockopt-lsrr "$ALLOWED" "$LPORT" "$FORBIDDEN"
run_expect "socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP)" EPERM sctp
run_expect "socket(AF_INET6, SOCK_STREAM, IPPROTO_SCTP)" EPERM sctp 6
for v in auto emulate; do
	SHK_USER=0 SHK_EXTRA="--net-verify $v" run_expect "--net-verify $v: IP_OPTIONS source route" EPERM \
		sockopt-lsrr "$ALLOWED" "$LPORT" "$FORBIDDEN"
	SHK_EXTRA="--net-verify $v" run_expect "--net-verify $v: SCTP socket" EPERM sctp
done
expect_no_arrival "source-routed connects" "$FORBIDDEN"

# Emulated calls run with shackle-run's credentials where they run on the
# loop thread: a unix listen() there records root as the listener's
# SO_PEERCRED, which every client of the agent's server would then trust
shk "$POL" -- "$H" listen "$T/peercred.sock"
show_run
expect_eq "SO_PEERCRED of the agent's unix listener is the agent's uid" "$(answer)" ok

# ... and a worker that binds for the agent has no capability left: a port
# below 1024 stays root's (the worker keeps real uid 0, creds.c)
POLB=$(policy lowbind <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "bind-loopback", "cidr": "127.0.0.0/8", "op": ["bind"], "action": "allow"}
 ]}}
JSON
)
NP=$(helper shk-netprobe)
shk "$POLB" -- "$NP" bind 127.0.0.1 81
expect_eq "the agent (nobody) binding port 81 through the emulation" "$(answer)" EACCES
SHK_USER=0 shk "$POLB" -- "$NP" bind 127.0.0.1 81
expect_eq "control: a root agent binds port 81" "$(answer)" OK

# 4. a connect to 0.0.0.0 / :: reaches loopback (or, on a socket bound to an
#    address, that address) past rules that deny it
POL0=$(policy unspec <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "allow", "rules": [
   {"name": "no-local-admin", "cidr": "127.0.0.1/32", "port": $LPORT, "action": "deny"},
   {"name": "no-forbidden", "cidr": "$FORBIDDEN/32", "op": ["connect", "send"], "action": "deny"}
 ]}}
JSON
)
before=$(arrivals "$ALLOWED" tcp)
for v in auto emulate; do
	SHK_EXTRA="--net-verify $v" shk "$POL0" -- "$H" connect 0.0.0.0 "$LPORT"
	expect_eq "--net-verify $v: connect 0.0.0.0:port denied for 127.0.0.1" "$(answer)" EPERM
	SHK_EXTRA="--net-verify $v" shk "$POL0" -- "$H" connect-bound "$FORBIDDEN" "$LPORT"
	expect_eq "--net-verify $v: bound to $FORBIDDEN, connect 0.0.0.0 denied" "$(answer)" EPERM
done
expect_decision "0.0.0.0 judged as the bound address" 1 verdict=DENY rule=no-forbidden
sleep 0.3
expect_eq "TCP connections that reached $ALLOWED:$LPORT" "$(arrivals "$ALLOWED" tcp)" "$before"
expect_no_arrival "connect 0.0.0.0 from a socket bound to $FORBIDDEN" "$FORBIDDEN"
# still works where loopback is allowed, and goes where it was judged
for v in auto emulate; do
	SHK_EXTRA="--net-verify $v" shk "$POL" -- "$H" connect 0.0.0.0 "$LPORT"
	expect_eq "--net-verify $v: connect 0.0.0.0 allowed as $ALLOWED" "$(answer)" "ok"
done
expect_decision "0.0.0.0 logged as $ALLOWED" 1 verdict=ALLOW
expect_eq "connections at $ALLOWED:$LPORT" "$(wait_arrivals "$ALLOWED" tcp $((before + 2)))" $((before + 2))
expect_audit_ok

# 5. the agent may make any number of threads, each blocked in an emulated
#    call holding up to 256 KiB and 253 fds in shackle-run: the queue of
#    calls waiting for a worker is bounded (256), the rest fail with EAGAIN
SHK_TIMEOUT=90 shk "$POL" -- "$H" flood 400
show_run
fl=$(tail -n 1 "$OUT")
expect_eq "flood of 400 blocking sends ran" "$(answer)" ok
ea=$(echo "$fl" | sed -n 's/.*eagain=\([0-9]*\).*/\1/p')
se=$(echo "$fl" | sed -n 's/.*sent=\([0-9]*\).*/\1/p')
expect_ge "blocking sends beyond the queue refused with EAGAIN" "${ea:-0}" 100
expect_ge "queued blocking sends completed once drained" "${se:-0}" 200

# 7. LD_PRELOAD & co. run the agent's own code inside an allowed program:
#    with an exec allowlist (default deny) such an exec is denied, unless
#    the policy says "loader_env": "allow"; the variables are in the params
ECHO=$(command -v echo | grep / || echo /bin/echo)
[ -x "$ECHO" ] || ECHO=/bin/echo
ECHO=$(readlink -f "$ECHO")
LDSO=$(readlink -f /lib64/ld-linux-x86-64.so.2 2>/dev/null || echo /lib64/ld-linux-x86-64.so.2)
for le in implicit allow; do
	extra=
	[ "$le" = allow ] && extra='"loader_env": "allow",'
	POLX=$(policy "exec-$le" <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "deny", $extra "rules": [
   {"name": "helper", "path": "$(readlink -f "$H")", "action": "allow"},
   {"name": "echo", "path": "$ECHO", "action": "allow"},
   {"name": "ldso", "path": "$LDSO", "action": "allow"}
 ]},
 "net": {"default": "deny"}}
JSON
)
	shk "$POLX" -- "$H" exec-env LD_PRELOAD=/nonexistent/evil.so "$ECHO" ran
	show_run
	if [ "$le" = implicit ]; then
		expect_eq "exec allowlist: LD_PRELOAD into an allowed program" "$(answer)" EPERM
		expect_decision "denied by exec.loader_env" 1 verdict=DENY rule=exec.loader_env
	else
		expect_eq "loader_env allow: LD_PRELOAD passes" "$(answer)" ran
	fi
	n=$(grep -c '"loader_env":\["LD_PRELOAD=/nonexistent/evil.so"\]' "$LOG")
	expect_ge "loader variables in the params ($le)" "$n" 1
	expect_audit_ok
	shk "$POLX" -- "$H" exec-env LANG=C "$ECHO" ran
	expect_eq "exec allowlist: no loader variable ($le)" "$(answer)" ran
	if [ -x "$LDSO" ]; then
		shk "$POLX" -- "$H" exec-env LANG=C "$LDSO" "$ECHO" ran
		expect_eq "ld.so running an allowed program ($le)" "$(answer)" ran
		shk "$POLX" -- "$H" exec-env LANG=C "$LDSO" --preload /nonexistent/x.so "$ECHO" ran
		[ "$le" = implicit ] && expect_eq "ld.so --preload into an allowed program" "$(answer)" EPERM
	fi
	for v in LD_AUDIT=/x.so LD_LIBRARY_PATH=/tmp GCONV_PATH=/tmp; do
		shk "$POLX" -- "$H" exec-env "$v" "$ECHO" ran
		[ "$le" = implicit ] && expect_eq "exec allowlist: $v" "$(answer)" EPERM
	done
done

# ... and ld.so under another name (a copy) or as a "#!" interpreter runs a
# program whose rules must still be consulted
if [ -x "$LDSO" ]; then
	POLD=$(policy ldso <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-echo", "path": "$ECHO", "action": "deny"}
 ]},
 "net": {"default": "deny"}}
JSON
)
	cp "$LDSO" "$T/myloader" && chmod 755 "$T/myloader"
	shk "$POLD" -- "$H" exec-env LANG=C "$T/myloader" "$ECHO" ran
	show_run
	expect_eq "renamed copy of ld.so running a denied program" "$(answer)" EPERM
	expect_decision "copy of ld.so: its target judged" 1 verdict=DENY rule=no-echo
	printf '#!%s %s\n' "$LDSO" "$ECHO" >"$T/viald.sh"
	chmod 755 "$T/viald.sh"
	shk "$POLD" -- "$H" exec-env LANG=C "$T/viald.sh" ran
	show_run
	expect_eq "ld.so as the #! interpreter running a denied program" "$(answer)" EPERM
	expect_decision "#! ld.so: its target judged" 1 verdict=DENY rule=no-echo
	shk "$POLD" -- "$H" exec-env LANG=C "$T/myloader" /bin/true
	expect_eq "renamed ld.so running an allowed program" "$RC" 0
fi

# 6. A blocking sendmmsg is performed by an emulation worker, which acts
#    with the agent's uid and no capabilities: the kernel's answer and every
#    msg_len must still reach the caller (it got EFAULT after the first).
shk "$POL" -- "$H" mmsg-batch 3
expect_eq "blocking sendmmsg of 3 datagrams: count and each msg_len" "$(tail -n 1 "$OUT")" "ok 3 1,2,3"

# 6a. sendmmsg writes each msg_len back into the caller: a sender killed
#     while its blocking send waits must not have that write land in the
#     process that got its pid next (here: one made to get it, as root,
#     with the same mapping). The agent runs as root so that the worker
#     could write anywhere.
if [ -w /proc/sys/kernel/ns_last_pid ]; then
	rm -f "$T/mmsg.pid"
	SHK_USER=0 SHK_TIMEOUT=30 shk "$POL" -- "$H" mmsg-block "$T/mmsg.pid" 4 &
	bgshk=$!
	if wait_file "$T/mmsg.pid" 50; then
		g=$(cat "$T/mmsg.pid")
		sleep 0.5
		kill -9 "$g"
		for i in $(seq 50); do [ -e "/proc/$g" ] || break; sleep 0.05; done
		echo $((g - 1)) >/proc/sys/kernel/ns_last_pid
		"$H" mmsg-victim 6 >"$T/victim.out" 2>&1 &
		vp=$!
		wait "$vp"
		wait "$bgshk"
		if [ "$vp" = "$g" ]; then
			expect_eq "msg_len write-back into the pid's next owner" \
				"$(sed -n 's/^canary //p' "$T/victim.out")" 0xdeadbeef
		else
			note "the victim got pid $vp, not $g (another process took it): not checked"
		fi
	else
		wait "$bgshk"
		fail "mmsg-block did not start"
	fi
fi

# 7. The emulation workers run under the agent's uid, so the kernel lets the
#    agent signal them, and a fatal signal (or a stop) to one thread ends or
#    freezes the whole supervisor. Every route that names a thread is
#    refused: rt_tgsigqueueinfo, tgkill, tkill, kill and rt_sigqueueinfo
#    given the tid, pidfd_send_signal on /proc/TID, a SIGIO owner (F_SETOWN
#    to the tid, F_SETOWN_EX, FIOSETOWN).
RUNS=$((RUNS + 1)) # the background run above counted in its subshell only
shk "$POL" -- "$H" signal-sup
if grep -q '^no-thread' "$OUT"; then
	note "no supervisor thread runs as the agent's uid here (not root): nothing to signal"
else
	expect_eq "every route to signal a supervisor thread is refused" "$(answer)" refused-all
	expect_eq "the refused routes say EPERM" "$(grep -c ' EPERM$' "$OUT")" 10
	expect_eq "shackle-run exit is the helper's" "$RC" 0
fi

# 7b. The same from outside the tree: a process of the agent's uid that
#     shackle-run does not supervise (the user's other processes, when the
#     agent runs as that user) has no filter in its way. The workers keep
#     real and saved uid 0 (creds.c), so the kernel refuses it, and prlimit
#     on a worker (the whole process's limits) too.
AU=$(id -u nobody 2>/dev/null) && AG=$(id -g nobody 2>/dev/null) || AU=
if [ -z "$AU" ]; then
	fail "no user nobody: the outside-signal check cannot run"
else
	RUNS=$((RUNS + 1))
	timeout -k 5 30 "$SHACKLE_RUN" --policy "$POL" --audit "$T/audit-$RUNS.jsonl" \
		--key "$KEY" --non-interactive --user "$AU" -- sleep 5 \
		>"$T/out-$RUNS" 2>"$T/err-$RUNS" </dev/null &
	bg7=$!
	sp=
	for i in $(seq 100); do
		sp=$(pgrep -P "$bg7" -x shackle-run | head -n 1)
		# its workers act as the agent (effective uid) once they run
		[ -n "$sp" ] && grep -qsE "^Uid:\s+[0-9]+\s+$AU\s" /proc/"$sp"/task/*/status && break
		sleep 0.05
	done
	if [ -z "$sp" ]; then
		fail "shackle-run did not start for the outside-signal check"
	else
		setpriv --reuid="$AU" --regid="$AG" --clear-groups "$H" signal-outside "$sp" \
			>"$T/sig7b.out" 2>&1
		expect_eq "no route signals a worker from outside the tree" \
			"$(tail -n 1 "$T/sig7b.out")" refused-all
		expect_eq "the kernel says EPERM to all seven" "$(grep -c ' EPERM$' "$T/sig7b.out")" 7
	fi
	wait "$bg7"
	expect_eq "shackle-run exit after the outside attempts" "$?" 0
fi

# 8. A process may open /proc/CHILD/mem of its own child for writing and
#    rewrite the argv/environment the exec stop verified, before the new
#    image reads them (a red-team review ran a denied argv and an LD_PRELOAD
#    that way). Landlock keeps the agent's tree from opening anything under
#    /proc for writing; outside shackle-run the same open succeeds.
MEMPROBE='sleep 3 & p=$!; if (exec 3<>/proc/$p/mem) 2>/dev/null; then echo opened; else echo refused; fi; kill $p'
ctl=$(/bin/sh -c "$MEMPROBE")
expect_eq "control: outside shackle-run a child's /proc/PID/mem opens for writing" "$ctl" opened
shk "$POL" -- /bin/sh -c "$MEMPROBE"
expect_eq "the agent cannot open its child's /proc/PID/mem for writing" "$(tail -n 1 "$OUT")" refused
expect_eq "session_end says the /proc guard was in force" \
	"$(grep -o '"proc_guard":[a-z]*' "$LOG" | cut -d: -f2)" true
# (a pipe of the agent's own: one of ours would be refused to nobody by its
# owner and mode, Landlock or not)
shk "$POL" -- /bin/sh -c '(echo through-proc-fd > /dev/stdout) | cat'
expect_eq "writes through /proc/self/fd (a pipe) still work" "$(tail -n 1 "$OUT")" through-proc-fd
# a ruleset that does not grant REFER refuses every rename or link into
# another directory (EXDEV): git, pip and mv must keep working
mkdir -p "$T/rn/a" "$T/rn/b" && chmod -R 777 "$T/rn"
shk "$POL" -- /bin/sh -c "echo x > $T/rn/a/f && mv $T/rn/a/f $T/rn/b/f && ln $T/rn/b/f $T/rn/a/g && echo moved"
expect_eq "rename and link across directories still work" "$(tail -n 1 "$OUT")" moved

# 9. listen() judged on the socket's address of the moment: a connecting
#    socket shows 127.0.0.1:P, another thread's shutdown() puts it back to
#    unbound, and the listen() performed after the judgement autobinds
#    every address (red-team finding: judged 127.0.0.1, listening on
#    0.0.0.0). A connecting socket cannot listen (EINVAL before any
#    judgement), and a listener that is not where it was judged is shut.
POLL=$(policy listen-race <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "deny", "rules": [
   {"name": "serve-loopback", "cidr": "127.0.0.1/32", "op": ["bind", "listen"], "action": "allow"},
   {"name": "loopback", "cidr": "127.0.0.0/8", "op": ["connect"], "action": "allow"}
 ]}}
JSON
)
for v in auto emulate; do
	SHK_EXTRA="--net-verify $v" shk "$POLL" -- "$(helper shk-listen)" race 400
	expect_eq "--net-verify $v: no listener on another address after 400 races" \
		"$(tail -n 1 "$OUT" | cut -d' ' -f1)" held
done

# 10. A unix datagram the agent sends reaches an SO_PASSCRED receiver with
#     the agent's uid: the workers that send for it keep real uid 0
#     (section 7b), and without credentials in the message the kernel names
#     the sender's real uid (a review saw uid 0: journald trusts that).
RX=$T/passcred.sock
"$PY" -c "
import os, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
open(sys.argv[1] + '.ready', 'w').close()
s.settimeout(20)
msg, anc, fl, addr = s.recvmsg(100, socket.CMSG_SPACE(12))
pid, uid, gid = struct.unpack('iII', anc[0][2])
open(sys.argv[1] + '.out', 'w').write('%d %d\n' % (uid, gid))" "$RX" &
rxp=$!
wait_file "$RX.ready"
shk "$POL" -- "$AGENT_PY" -c "
import socket
socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '$RX'); print('sent')"
wait "$rxp"
expect_eq "SO_PASSCRED receiver: the datagram was sent" "$(tail -n 1 "$OUT")" sent
expect_eq "SO_PASSCRED receiver: sender uid and gid are the agent's" \
	"$(cat "$RX.out" 2>/dev/null)" "$(id -u nobody) $(id -g nobody)"

finish
