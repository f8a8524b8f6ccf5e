#!/bin/bash
# SPDX-License-Identifier: MIT
# Other syscall ABIs have other numbers: i386 via int $0x80 (connect 362,
# socketcall(SYS_CONNECT), execve 11) and x32. A filter that only knows the
# x86-64 numbers lets them through. They must be denied or kill the caller;
# nothing may arrive at the forbidden address and the denied binary must not run.
#
# Where the kernel cannot run i386 code (IA32 emulation off at run time:
# int $0x80 raises SIGSEGV before seccomp sees it) the i386 runs prove
# nothing and are left out; the filter's answer for AUDIT_ARCH_I386 is then
# proven by filter_abi (tests/live/filter_abi.c: the filter as built, run by
# a classic-BPF evaluator, checked against the kernel), which runs always.
# x32 numbers reach seccomp on every x86-64 kernel: those runs are live,
# and only the kill counts (without CONFIG_X86_X32_ABI the kernel itself
# answers ENOSYS to an x32 call that got past the filter).
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
FA=$SHACKLE_BUILD_ROOT/tests/live/filter_abi
"$FA" >"$T/filter_abi" 2>&1
fa=$?
note "filter_abi: $(grep -c '^ok' "$T/filter_abi") checks passed, exit $fa"
if [ "$fa" = 0 ] && grep -q '^i386-emulation ' "$T/filter_abi"; then
	pass "the filter as built kills i386, x32 and foreign-arch calls (evaluated, checked against the kernel)"
else
	cat "$T/filter_abi"
	fail "filter_abi (exit $fa)"
fi
modes=x32-connect
if grep -q '^i386-emulation on' "$T/filter_abi"; then
	ctl=$("$E" int80-connect "$FORBIDDEN" "$LPORT")
	[ "$ctl" = OK ] || fail "control (unsupervised) int80-connect: '$ctl', expected OK"
	note "control (unsupervised) int80-connect: $ctl"
	modes="int80-connect int80-socketcall x32-connect"
else
	note "i386 emulation is off here: no live int \$0x80 runs"
fi
sleep 0.3
base=$(( $(arrivals $FORBIDDEN tcp) ))

for m in $modes; do
	shk "$POL" -- "$E" "$m" "$FORBIDDEN" "$LPORT"
	got=$(tail -n 1 "$OUT")
	case "$got" in
	killed:SYS) pass "$m: caller killed ($got)" ;;
	*) show_run; fail "$m: answer '$got', expected killed:SYS" ;;
	esac
done
sleep 0.3
expect_eq "arrivals at the forbidden address from other ABIs" "$(arrivals $FORBIDDEN tcp)" "$base"

if [ "$modes" != x32-connect ]; then
	shk "$POL" -- "$E" int80-execve /usr/bin/touch "$T/MARK"
	got=$(tail -n 1 "$OUT")
	expect_absent "int80-execve: denied binary did not run ($got)" "$T/MARK"
	case "$got" in
	killed:SYS) pass "int80-execve: $got" ;;
	*) show_run; fail "int80-execve: answer '$got', expected killed:SYS" ;;
	esac
fi
finish
