#!/bin/bash
# SPDX-License-Identifier: MIT
# Syscalls that would blind or bypass the supervisor are refused outright:
# io_uring (connect without connect()), ptrace of the parent and of the
# supervisor, a seccomp filter with a notification listener of the agent's
# own (newest filter wins), bpf(), perf_event_open(), process_vm_writev().
# Each one is first run unsupervised as a control: if it fails there too the
# check proves nothing and is reported as such.
. "$(dirname "$0")/lib.sh"
setup
# As root the kernel itself would allow every one of these calls, so a
# refusal can only come from the supervisor.
export SHK_USER=0
POL=$(policy permissive <<JSON
{"version": 1,
 "guard": {"max_repeat_calls": 0, "trip_on_deny": false},
 "exec": {"default": "allow"},
 "net": {"default": "allow"}}
JSON
)
E=$(helper shk-escape)
for m in io_uring seccomp-listener bpf perf vm-write ptrace-parent; do
	ctl=$("$E" "$m" 2>&1 | tail -n 1)
	shk "$POL" -- "$E" "$m"
	got=$(tail -n 1 "$OUT")
	case "$m" in
	ptrace-parent)
		case "$got" in
		"attach=OK"* | *"seize=OK"*) show_run; fail "$m: ptrace of the parent succeeded ($got)" ;;
		attach=E*) pass "$m: refused ($got; unsupervised: $ctl)" ;;
		*) show_run; fail "$m: no answer ($got)" ;;
		esac ;;
	vm-write)
		# unsupervised the call reaches the kernel (EFAULT on our bogus
		# address); supervised it must be refused before that
		expect_in "$m: refused (unsupervised: $ctl)" "$got" EPERM EACCES ENOSYS ;;
	*)
		expect_in "$m: refused (unsupervised: $ctl)" "$got" EPERM EACCES ENOSYS ;;
	esac
	[ "$ctl" = OK ] || [ "$m" = vm-write ] || [ "$m" = ptrace-parent ] ||
		note "$m: control run unsupervised gave '$ctl' (check is weaker)"
done

# ptrace of the supervisor itself: the agent learns its pid from a file the
# test writes (an agent could equally scan /proc).
SHK_TIMEOUT=30
(
	for i in $(seq 100); do
		p=$(pgrep -o -f "^$SHACKLE_RUN .*it-$NAME-" 2>/dev/null) && [ -n "$p" ] &&
			{ echo "$p" >"$T/sup.pid"; exit 0; }
		sleep 0.05
	done
) &
BG_PIDS+=($!)
shk "$POL" -- /bin/sh -c "sleep 0.5; exec '$E' ptrace-pid '$T/sup.pid'"
show_run
got=$(tail -n 1 "$OUT")
case "$got" in
attach=E*seize=E*) pass "ptrace of the supervisor refused ($got)" ;;
*) fail "ptrace of the supervisor: $got" ;;
esac
finish
