/* SPDX-License-Identifier: MIT */
/*
 * The first file a verified ld.so opens. ld.so run as a program opens the
 * program it is asked to run by name, after the exec stop: a name exchanged
 * for a denied program in between (renameat2(RENAME_EXCHANGE) from another
 * process of the tree) would run it. From the exec stop the new image is
 * resumed with PTRACE_SYSCALL until its first successful open; at that
 * open's exit stop the descriptor it got — what ld.so will map — must be
 * the judged program, or the image is killed before it reads a byte. The
 * image is single-threaded and has run only ld.so's own start, so the fd
 * checked is the fd used. ld.so's first open is its program (rtld maps the
 * main program before any preload or audit module); any other file first
 * fails closed. Two syscalls come before it: the cost is four stops.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "supervise/internal.h"

static struct shk_open_watch *find(struct shk_sup *s, pid_t pid)
{
	for (size_t i = 0; i < s->ow.nwatch; i++)
		if (s->ow.watch[i].pid == pid)
			return &s->ow.watch[i];
	return NULL;
}

void shk_openwatch_forget(struct shk_sup *s, pid_t pid)
{
	struct shk_open_watch *w = find(s, pid);

	if (w)
		*w = s->ow.watch[--s->ow.nwatch];
}

int shk_openwatch_add(struct shk_sup *s, pid_t pid, dev_t dev, ino_t ino)
{
	shk_openwatch_forget(s, pid);
	if (s->ow.nwatch == s->ow.cwatch) {
		size_t c = s->ow.cwatch ? s->ow.cwatch * 2 : 16;
		struct shk_open_watch *n = realloc(s->ow.watch, c * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ow.watch = n;
		s->ow.cwatch = c;
	}
	s->ow.watch[s->ow.nwatch++] = (struct shk_open_watch){ .pid = pid, .dev = dev, .ino = ino };
	return 0;
}

static bool is_open(uint64_t nr)
{
	return nr == SYS_open || nr == SYS_openat || nr == SYS_openat2 || nr == SYS_creat;
}

/* The watched open ended: is its descriptor the judged file? */
static bool opened_judged(pid_t pid, const struct shk_open_watch *w, int64_t fd)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d/fd/%lld", (int)pid, (long long)fd);
	return stat(p, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino;
}

/* Resume an image that no longer needs watching (lazy mode: let it go). */
static void unwatch(struct shk_sup *s, pid_t pid)
{
	shk_openwatch_forget(s, pid);
	if (s->lazy && ptrace(PTRACE_DETACH, pid, 0, 0) == 0) {
		shk_tracer_untrack(s, pid);
		return;
	}
	ptrace(PTRACE_CONT, pid, 0, 0);
}

int shk_openwatch_stop(struct shk_sup *s, pid_t pid)
{
	struct __ptrace_syscall_info si = { 0 };
	struct shk_open_watch *w = find(s, pid);

	if (!w || ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(si), &si) <= 0)
		return 0;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		w->in_open = is_open(si.entry.nr);
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		return 1;
	}
	if (si.op != PTRACE_SYSCALL_INFO_EXIT)
		return 0;
	if (!w->in_open || si.exit.is_error) {
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		return 1;
	}
	if (!opened_judged(pid, w, si.exit.rval)) {
		s->stats.exec_killed++;
		shk_openwatch_forget(s, pid);
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return 1;
	}
	unwatch(s, pid);
	return 1;
}
