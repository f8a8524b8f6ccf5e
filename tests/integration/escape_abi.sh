#!/bin/bash
# SPDX-License-Identifier: MIT
# Other syscall ABIs have other numbers: i386 via int $0x80 (connect 362,
# socketcall(SYS_CONNECT), execve 11) and x32. A filter that only knows the
# x86-64 numbers lets them through. They must be denied or kill the caller;
# nothing may arrive at the forbidden address and the denied binary must not run.
. "$(dirname "$0")/lib.sh"
setup
[ "$(uname -m)" = x86_64 ] || skip "x86-64 only (int \$0x80 from 64-bit code)"
start_listener
POL=$(policy abi <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow", "rules": [
   {"name": "no-touch", "path": "/usr/bin/touch", "action": "deny"}
 ]},
 "net": {"default": "deny", "rules": [
   {"name": "loopback", "cidr": "$ALLOWED/32", "action": "allow"}
 ]}}
JSON
)
E=$(helper shk-escape)
ctl=$("$E" int80-connect "$FORBIDDEN" "$LPORT")
[ "$ctl" = OK ] || skip "int \$0x80 does not work unsupervised here ($ctl): no i386 emulation"
note "control (unsupervised) int80-connect: $ctl"
sleep 0.3
base=$(( $(arrivals $FORBIDDEN tcp) ))

for m in int80-connect int80-socketcall x32-connect; do
	shk "$POL" -- "$E" "$m" "$FORBIDDEN" "$LPORT"
	got=$(tail -n 1 "$OUT")
	case "$got" in
	killed:*) pass "$m: caller killed ($got)" ;;
	EPERM | EACCES | ENOSYS) pass "$m: refused ($got)" ;;
	*) show_run; fail "$m: answer '$got'" ;;
	esac
done
sleep 0.3
expect_eq "arrivals at the forbidden address from other ABIs" "$(arrivals $FORBIDDEN tcp)" "$base"

shk "$POL" -- "$E" int80-execve /usr/bin/touch "$T/MARK"
got=$(tail -n 1 "$OUT")
expect_absent "int80-execve: denied binary did not run ($got)" "$T/MARK"
case "$got" in
killed:* | EPERM | EACCES | ENOSYS) pass "int80-execve: $got" ;;
*) show_run; fail "int80-execve: answer '$got'" ;;
esac
finish
