/* SPDX-License-Identifier: MIT */
/*
 * The agent's seccomp filter against the other x86 ABIs, on any kernel.
 *
 * A kernel with IA32 emulation off at run time (ia32_emulation=0, or a
 * hypervisor that leaves it out) answers int $0x80 with SIGSEGV before
 * seccomp runs, so a live i386 test proves nothing there. What the filter
 * would do is still provable: the program shk_filter_build() makes (the
 * function run.c installs from, with the options it passes) is run here by
 * a classic-BPF evaluator of seccomp's subset over synthetic seccomp_data,
 * for AUDIT_ARCH_I386, for x32 numbers (nr | 0x40000000, which reach
 * seccomp whether or not the kernel has CONFIG_X86_X32_ABI) and for native
 * calls as controls. The evaluator is itself checked against the kernel:
 * the same program is installed in children that make real calls, and
 * every answer the kernel can give here must be the one predicted.
 *
 * And what the kernel's per-syscall action cache (5.11+) makes of it: the
 * calls a file-heavy tool makes by the hundred (git status: stats, opens,
 * reads, getdents) must be answered ALLOW from their number alone, so that
 * the kernel never runs the program for them; the calls it does run the
 * program for are printed with the instructions each takes.
 *
 * Prints "ok"/"FAIL" lines and "i386-emulation on|off" (an unsupervised
 * probe: int $0x80 getpid in a child, SIGSEGV means off); exit status 0
 * when every check passed.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "supervise/internal.h"

#define X32_BIT 0x40000000
#define I386_EXECVE 11
#define I386_GETPID 20
#define I386_SOCKETCALL 102
#define I386_CONNECT 362
#define X32_EXECVE 520 /* x32 has its own numbers for calls with pointer arrays */
#define EVAL_BAD 0xdeadbeefU /* not a seccomp action: the program was not runnable */

static int failures;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	failures += !ok;
}

/* A 32-bit word of seccomp_data at offset k, as BPF_LD|BPF_W|BPF_ABS reads it. */
static bool load_word(const struct seccomp_data *d, uint32_t k, uint32_t *ret)
{
	if (k % 4 != 0 || k > sizeof(*d) - 4)
		return false;
	memcpy(ret, (const char *)d + k, 4);
	return true;
}

static bool alu(uint16_t op, uint32_t *a, uint32_t src)
{
	switch (op) {
	case BPF_ADD: *a += src; return true;
	case BPF_SUB: *a -= src; return true;
	case BPF_MUL: *a *= src; return true;
	case BPF_DIV: if (!src) return false; *a /= src; return true;
	case BPF_MOD: if (!src) return false; *a %= src; return true;
	case BPF_AND: *a &= src; return true;
	case BPF_OR: *a |= src; return true;
	case BPF_XOR: *a ^= src; return true;
	case BPF_LSH: *a = src < 32 ? *a << src : 0; return true;
	case BPF_RSH: *a = src < 32 ? *a >> src : 0; return true;
	case BPF_NEG: *a = -*a; return true;
	}
	return false;
}

static bool jump(uint16_t op, uint32_t a, uint32_t src, bool *ret)
{
	switch (op) {
	case BPF_JEQ: *ret = a == src; return true;
	case BPF_JGT: *ret = a > src; return true;
	case BPF_JGE: *ret = a >= src; return true;
	case BPF_JSET: *ret = (a & src) != 0; return true;
	}
	return false;
}

/* The instructions seccomp accepts (kernel/seccomp.c seccomp_check_filter);
 * anything else, or a jump out of the program, answers EVAL_BAD. cBPF only
 * jumps forward, so the loop ends. */
static uint32_t eval_steps(const struct sock_fprog *p, const struct seccomp_data *d, unsigned *ret_steps)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };

	*ret_steps = 0;
	for (uint32_t pc = 0; pc < p->len; pc++) {
		const struct sock_filter *f = &p->filter[pc];
		uint16_t cls = BPF_CLASS(f->code);
		bool taken;

		++*ret_steps;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS: if (!load_word(d, f->k, &a)) return EVAL_BAD; continue;
		case BPF_LD | BPF_W | BPF_LEN: a = sizeof(*d); continue;
		case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(*d); continue;
		case BPF_LD | BPF_IMM: a = f->k; continue;
		case BPF_LDX | BPF_IMM: x = f->k; continue;
		case BPF_MISC | BPF_TAX: x = a; continue;
		case BPF_MISC | BPF_TXA: a = x; continue;
		case BPF_RET | BPF_K: return f->k;
		case BPF_RET | BPF_A: return a;
		case BPF_JMP | BPF_JA: pc += f->k; continue;
		}
		if ((f->code == (BPF_LD | BPF_MEM) || f->code == (BPF_LDX | BPF_MEM) || f->code == BPF_ST ||
		     f->code == BPF_STX) && f->k >= BPF_MEMWORDS)
			return EVAL_BAD;
		if (f->code == (BPF_LD | BPF_MEM))
			a = mem[f->k];
		else if (f->code == (BPF_LDX | BPF_MEM))
			x = mem[f->k];
		else if (f->code == BPF_ST)
			mem[f->k] = a;
		else if (f->code == BPF_STX)
			mem[f->k] = x;
		else if (cls == BPF_ALU && alu(BPF_OP(f->code), &a, BPF_SRC(f->code) == BPF_X ? x : f->k))
			;
		else if (cls == BPF_JMP && jump(BPF_OP(f->code), a, BPF_SRC(f->code) == BPF_X ? x : f->k, &taken))
			pc += taken ? f->jt : f->jf;
		else
			return EVAL_BAD;
	}
	return EVAL_BAD; /* fell off the end: the kernel refuses such a program */
}

static uint32_t eval(const struct sock_fprog *p, const struct seccomp_data *d)
{
	unsigned steps;

	return eval_steps(p, d, &steps);
}

/* kernel/seccomp.c seccomp_is_const_allow: the program run with only the
 * number and the arch known (native), any other load or instruction ends
 * it; an ALLOW reached that way is cached and the program never runs for
 * nr again. */
static bool const_allow(const struct sock_fprog *p, int nr)
{
	uint32_t a = 0;
	bool taken = false;

	for (uint32_t pc = 0; pc < p->len; pc++) {
		const struct sock_filter *f = &p->filter[pc];

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (f->k == offsetof(struct seccomp_data, nr))
				a = (uint32_t)nr;
			else if (f->k == offsetof(struct seccomp_data, arch))
				a = AUDIT_ARCH_X86_64;
			else
				return false;
			continue;
		case BPF_RET | BPF_K: return f->k == SECCOMP_RET_ALLOW;
		case BPF_JMP | BPF_JA: pc += f->k; continue;
		case BPF_ALU | BPF_AND | BPF_K: a &= f->k; continue;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGT | BPF_K:
		case BPF_JMP | BPF_JSET | BPF_K:
			jump(BPF_OP(f->code), a, f->k, &taken);
			pc += taken ? f->jt : f->jf;
			continue;
		}
		return false;
	}
	return false;
}

/* The calls of `git status` in a 300-file repository (strace -c: 681
 * calls, all but 3 of these numbers) and of the shell loop around it. */
static void action_cache(const struct sock_fprog *p, const char *v)
{
	static const int bulk[] = {
		__NR_newfstatat, __NR_openat, __NR_close, __NR_read, __NR_getdents64, __NR_mmap,
		__NR_access, __NR_brk, __NR_rt_sigaction, __NR_munmap, __NR_mprotect, __NR_getcwd,
		__NR_pread64, __NR_write, __NR_lseek, __NR_fstat, __NR_statx, __NR_readlink, __NR_futex,
		__NR_getpid, __NR_wait4, __NR_rt_sigprocmask, __NR_dup2, __NR_pipe2, __NR_exit_group,
	};
	char line[2048];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(bulk) / sizeof(bulk[0]); i++)
		check(const_allow(p, bulk[i]), "%s: nr %d is answered ALLOW from its number (the kernel's cache)", v,
		      bulk[i]);
	/* the calls the program runs for, and its length for each (args 0) */
	for (int nr = 0; nr < 512; nr++) {
		struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
		unsigned steps;

		if (const_allow(p, nr))
			continue;
		eval_steps(p, &d, &steps);
		n += (size_t)snprintf(line + n, n < sizeof(line) ? sizeof(line) - n : 0, " %d:%u", nr, steps);
	}
	printf("# %s: not cached (nr:instructions run):%s\n", v, line);
}

static uint32_t answer(const struct sock_fprog *p, uint32_t arch, int nr)
{
	struct seccomp_data d = { .nr = nr, .arch = arch };

	return eval(p, &d);
}

static const char *action_str(uint32_t r, char *buf, size_t len)
{
	switch (r & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS: return "KILL_PROCESS";
	case SECCOMP_RET_KILL_THREAD: return "KILL_THREAD";
	case SECCOMP_RET_TRAP: return "TRAP";
	case SECCOMP_RET_USER_NOTIF: return "USER_NOTIF";
	case SECCOMP_RET_ALLOW: return "ALLOW";
	case SECCOMP_RET_ERRNO: snprintf(buf, len, "ERRNO(%s)", strerrorname_np(r & SECCOMP_RET_DATA)); return buf;
	}
	snprintf(buf, len, "%#x", r);
	return buf;
}

static void expect(const struct sock_fprog *p, const char *variant, uint32_t arch, int nr, uint32_t want,
                   const char *what)
{
	char b1[64], b2[64];
	uint32_t got = answer(p, arch, nr);

	check(got == want, "%s: %s (arch %#x nr %#x) -> %s (expected %s)", variant, what, arch, (unsigned)nr,
	      action_str(got, b1, sizeof(b1)), action_str(want, b2, sizeof(b2)));
}

static void synthetic(const struct sock_fprog *p, const char *v)
{
	static const int i386_nrs[] = { I386_EXECVE, I386_GETPID, I386_SOCKETCALL, I386_CONNECT, 0, 439 };
	static const int x32_nrs[] = { __NR_getpid, __NR_connect, __NR_sendto, X32_EXECVE, 0, 1023 };
	const uint32_t kill = SECCOMP_RET_KILL_PROCESS, eperm = SECCOMP_RET_ERRNO | EPERM;

	for (size_t i = 0; i < sizeof(i386_nrs) / sizeof(i386_nrs[0]); i++)
		expect(p, v, AUDIT_ARCH_I386, i386_nrs[i], kill, "i386 call");
	for (size_t i = 0; i < sizeof(x32_nrs) / sizeof(x32_nrs[0]); i++)
		expect(p, v, AUDIT_ARCH_X86_64, X32_BIT | x32_nrs[i], kill, "x32 call");
	expect(p, v, AUDIT_ARCH_AARCH64, __NR_getpid, kill, "another architecture");
	/* controls: the evaluator tells the filter's other answers apart */
	expect(p, v, AUDIT_ARCH_X86_64, __NR_getpid, SECCOMP_RET_ALLOW, "native getpid");
	expect(p, v, AUDIT_ARCH_X86_64, __NR_execve, SECCOMP_RET_USER_NOTIF, "native execve");
	expect(p, v, AUDIT_ARCH_X86_64, __NR_connect, SECCOMP_RET_USER_NOTIF, "native connect");
	expect(p, v, AUDIT_ARCH_X86_64, __NR_ptrace, eperm, "native ptrace");
	expect(p, v, AUDIT_ARCH_X86_64, __NR_clone3, SECCOMP_RET_ERRNO | ENOSYS, "native clone3");
}

static long int80(long nr)
{
	long ret;

	/* the compat entry zeroes r8-r11 for 64-bit callers */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr) : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

/* How a call ends in a child, with prog installed when given: "ok", an
 * errno name, or "killed:SIG". The default SIGSEGV/SIGSYS actions are
 * restored first (a sanitizer would catch them and exit instead). */
static void outcome(const struct sock_fprog *prog, bool i386, long nr, long a0, char *buf, size_t len)
{
	int st;
	pid_t pid = fork();

	if (pid == 0) {
		long r;

		signal(SIGSEGV, SIG_DFL);
		signal(SIGSYS, SIG_DFL);
		if (prog && (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
			     syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0))
			_exit(255);
		r = i386 ? int80(nr) : syscall(nr, a0, 0, 0, 0);
		_exit(i386 ? (r == getpid() ? 0 : 254) : r < 0 ? errno : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		snprintf(buf, len, "fork/wait: %s", strerror(errno));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed:%s", sigabbrev_np(WTERMSIG(st)) ?: "?");
	else if (WEXITSTATUS(st) >= 254)
		snprintf(buf, len, "%s", WEXITSTATUS(st) == 255 ? "cannot install" : "wrong answer");
	else
		snprintf(buf, len, "%s", WEXITSTATUS(st) ? strerrorname_np(WEXITSTATUS(st)) : "ok");
}

/* What the kernel would show of evaluator answer r for a call in the child. */
static const char *observed(uint32_t r, char *buf, size_t len)
{
	switch (r & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_KILL_PROCESS: return "killed:SYS";
	case SECCOMP_RET_ALLOW: return "ok";
	case SECCOMP_RET_ERRNO: snprintf(buf, len, "%s", strerrorname_np(r & SECCOMP_RET_DATA)); return buf;
	}
	return "(not observable here)";
}

/* The kernel, running the same program, must do what the evaluator says. */
static void against_kernel(const struct sock_fprog *p, bool i386_on)
{
	static const struct { long nr; long a0; const char *what; } calls[] = {
		{ __NR_getpid, 0, "native getpid" },
		{ __NR_ptrace, -1, "native ptrace (request -1: EIO if it got through)" },
		{ __NR_clone3, 0, "native clone3 (NULL args: another errno if it got through)" },
		{ __NR_io_uring_setup, 0, "native io_uring_setup (another errno if it got through)" },
		{ X32_BIT | __NR_getpid, 0, "x32 getpid" },
		{ X32_BIT | __NR_connect, -1, "x32 connect" },
	};
	char got[64], buf[64];
	const char *want;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		want = observed(answer(p, AUDIT_ARCH_X86_64, (int)calls[i].nr), buf, sizeof(buf));
		outcome(p, false, calls[i].nr, calls[i].a0, got, sizeof(got));
		check(!strcmp(got, want), "kernel agrees: %s -> %s (evaluator: %s)", calls[i].what, got, want);
	}
	if (!i386_on) {
		printf("# i386 emulation is off: the i386 answer is the evaluator's alone\n");
		return;
	}
	want = observed(answer(p, AUDIT_ARCH_I386, I386_GETPID), buf, sizeof(buf));
	outcome(p, true, I386_GETPID, 0, got, sizeof(got));
	check(!strcmp(got, want), "kernel agrees: i386 getpid -> %s (evaluator: %s)", got, want);
}

int main(void)
{
	pid_t tids[1] = { getpid() };
	struct shk_filter_opts fo = { .sup_pid = getpid(), .sup_pgid = getpgrp(), .tids = tids, .ntids = 1 };
	char probe[64];
	bool i386_on;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	outcome(NULL, true, I386_GETPID, 0, probe, sizeof(probe));
	i386_on = !strcmp(probe, "ok");
	if (!i386_on && strcmp(probe, "killed:SEGV") != 0) {
		check(false, "unsupervised int $0x80 getpid: %s (expected its pid, or SIGSEGV)", probe);
		return 1;
	}
	printf("i386-emulation %s\n", i386_on ? "on" : "off");
	for (int hooked = 0; hooked < 2; hooked++) {
		struct sock_fprog prog = { 0 };
		const char *v = hooked ? "filter (hooked families only)" : "filter";

		fo.hooked_families_only = hooked;
		if ((r = shk_filter_build(&fo, &prog)) < 0) {
			check(false, "%s: shk_filter_build: %s", v, strerror(-r));
			continue;
		}
		printf("# %s: %u instructions\n", v, (unsigned)prog.len);
		synthetic(&prog, v);
		action_cache(&prog, v);
		against_kernel(&prog, i386_on);
		free(prog.filter);
	}
	printf("%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
