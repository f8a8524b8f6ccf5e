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
 *
 * The same stops watch the names of "#!" scripts in reach of the agent
 * (scriptbind.c): every open whose path names one — the name as given,
 * made absolute against the cwd or the dirfd, or the script's canonical
 * path — must return the judged script, until the interpreter has opened
 * it as often as it is known to (python twice; an interpreter not known,
 * or a zip application, which python opens again at every import: until it
 * exits), then the watch ends. A
 * name still watched when the image execs again stays watched in the new
 * image if its argv passes it on (`#!/usr/bin/env python3`).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervise/internal.h"
#include "supervise/mem.h"
#include "supervise/path.h"

static struct shk_open_watch *find(struct shk_sup *s, pid_t pid)
{
	for (size_t i = 0; i < s->ow.nwatch; i++)
		if (s->ow.watch[i].pid == pid)
			return &s->ow.watch[i];
	return NULL;
}

static void drop_name(struct shk_open_watch *w, size_t i)
{
	free(w->names[i].str);
	w->names[i] = w->names[--w->nnames];
}

void shk_openwatch_forget(struct shk_sup *s, pid_t pid)
{
	struct shk_open_watch *w = find(s, pid);

	if (!w)
		return;
	while (w->nnames)
		drop_name(w, 0);
	*w = s->ow.watch[--s->ow.nwatch];
}

void shk_openwatch_free(struct shk_sup *s)
{
	while (s->ow.nwatch)
		shk_openwatch_forget(s, s->ow.watch[0].pid);
	free(s->ow.watch);
	s->ow.watch = NULL;
	s->ow.cwatch = 0;
}

/* An exec stop of a watched image: the former thread's watch is the new
 * image's; its first-open check was the old image's. */
void shk_openwatch_exec(struct shk_sup *s, pid_t former, pid_t pid)
{
	struct shk_open_watch *w;

	/* forget moves the last watch into the freed slot: look former up
	 * after it, or the pointer may name a slot no longer in use */
	if (former != pid)
		shk_openwatch_forget(s, pid);
	if (!(w = find(s, former)))
		return;
	w->pid = pid;
	w->first_open = w->in_open = false;
	w->in_name = -1;
}

static struct shk_open_watch *get(struct shk_sup *s, pid_t pid)
{
	struct shk_open_watch *w = find(s, pid);

	if (w)
		return w;
	if (s->ow.nwatch == s->ow.cwatch) {
		size_t c = s->ow.cwatch ? s->ow.cwatch * 2 : 16;
		struct shk_open_watch *n = realloc(s->ow.watch, c * sizeof(*n));

		if (!n)
			return NULL;
		s->ow.watch = n;
		s->ow.cwatch = c;
	}
	w = &s->ow.watch[s->ow.nwatch++];
	*w = (struct shk_open_watch){ .pid = pid, .in_name = -1 };
	return w;
}

/* Is one of argv's strings (the cmdline blob) this name? */
static bool in_argv(const struct shk_exec_approval *ap, const char *name)
{
	for (size_t off = 0; off < ap->cmdline_len; off += strlen(ap->cmdline + off) + 1)
		if (!strcmp(ap->cmdline + off, name))
			return true;
	return false;
}

/*
 * At a verified exec stop: what the new image must open. Names carried
 * over from the image before stay only when this argv passes them on, and
 * are opened as often as this program is known to open its script.
 * 1: watched, 0: nothing to watch, -EPERM: a name stays watched but the
 * program opens another path than it (canonicalising), -ENOMEM.
 */
int shk_openwatch_add(struct shk_sup *s, pid_t pid, const struct shk_exec_approval *ap)
{
	struct shk_open_watch *w = find(s, pid);
	const char *b = ap->cmdline + ap->cmdline_len + ap->loader_env_len + ap->env_len;

	for (size_t i = 0; w && i < w->nnames;)
		if (in_argv(ap, w->names[i].str)) {
			w->names[i].opens_left = w->names[i].zip ? 0 : ap->bind_opens;
			i++;
		} else
			drop_name(w, i);
	if (!ap->watch_open && !ap->nbind && (!w || !w->nnames)) {
		if (w)
			shk_openwatch_forget(s, pid);
		return 0;
	}
	if (!(w = get(s, pid)))
		return -ENOMEM;
	if (ap->watch_open) {
		w->first_open = true;
		w->dev = ap->open_dev;
		w->ino = ap->open_ino;
	}
	for (size_t i = 0; i < ap->nbind; i++) {
		size_t l = strlen(b) + 1;

		l += strlen(b + l) + 1;
		l += strlen(b + l) + 1;
		if (w->nnames == SHK_WATCH_NAMES || !(w->names[w->nnames].str = malloc(l)))
			return -ENOMEM;
		memcpy(w->names[w->nnames].str, b, l);
		w->names[w->nnames].dev = ap->bind[i].dev;
		w->names[w->nnames].ino = ap->bind[i].ino;
		w->names[w->nnames].zip = ap->bind[i].zip;
		w->names[w->nnames++].opens_left = ap->bind[i].zip ? 0 : ap->bind_opens;
		b += l;
	}
	return w->nnames && ap->bind_canon ? -EPERM : 1;
}

static bool is_open(uint64_t nr)
{
	return nr == SYS_open || nr == SYS_openat || nr == SYS_openat2 || nr == SYS_creat;
}

/* The watched open ended: is its descriptor the file (dev, ino)? */
static bool opened(pid_t pid, int64_t fd, dev_t dev, ino_t ino)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d/fd/%lld", (int)pid, (long long)fd);
	return stat(p, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* Does abs (normalised) end with "/" + the name's part below its leading
 * ".."? (An interpreter that makes a relative name absolute prefixes some
 * path of the directory, maybe not the judged one's: renamed since.) */
static bool ends_with_name(const char *abs, const char *name)
{
	char n[PATH_MAX];
	const char *t = n;
	size_t la, lt;

	shk_script_normalise(name, n, sizeof(n));
	while (!strncmp(t, "../", 3))
		t += 3;
	la = strlen(abs);
	lt = strlen(t);
	return lt && strcmp(t, "..") && la > lt && abs[la - lt - 1] == '/' &&
	       !strcmp(abs + la - lt, t);
}

/*
 * At the entry of an open: the watched script name its path names, or -1.
 * The path is read from the image (its own memory, which nobody else may
 * write: the filter refuses process_vm_writev and ptrace, Landlock /proc
 * writes) and made absolute against the cwd or the dirfd it is opened from.
 */
static int name_opened(pid_t pid, const struct shk_open_watch *w,
                       const struct __ptrace_syscall_info *si)
{
	bool at = si->entry.nr == SYS_openat || si->entry.nr == SYS_openat2;
	char q[PATH_MAX], base[PATH_MAX], abs[2 * PATH_MAX + 2], norm[PATH_MAX];
	struct shk_memwin mw;
	size_t len;

	shk_memwin_init(&mw, pid);
	if (shk_memwin_read_str(&mw, si->entry.args[at ? 1 : 0], q, sizeof(q), &len) < 0)
		return -1; /* the kernel cannot read it either */
	base[0] = 0;
	if (q[0] != '/') {
		char what[32];
		int dirfd = at ? (int)si->entry.args[0] : AT_FDCWD;

		if (dirfd == AT_FDCWD)
			snprintf(what, sizeof(what), "cwd");
		else
			snprintf(what, sizeof(what), "fd/%d", dirfd);
		shk_proc_link(pid, what, base, sizeof(base));
	}
	snprintf(abs, sizeof(abs), "%s/%s", base, q);
	shk_script_normalise(abs, norm, sizeof(norm));
	for (size_t i = 0; i < w->nnames; i++) {
		const char *name = w->names[i].str, *jabs = name + strlen(name) + 1,
		           *canon = jabs + strlen(jabs) + 1;

		if (!strcmp(norm, jabs) || !strcmp(norm, canon) ||
		    (name[0] != '/' && ends_with_name(norm, name)))
			return (int)i;
	}
	return -1;
}

/* The flags of the open at whose entry pid is (openat2's from its how). */
static uint64_t open_flags(pid_t pid, const struct __ptrace_syscall_info *si)
{
	struct shk_memwin mw;
	uint64_t f = 0;

	switch (si->entry.nr) {
	case SYS_open:
		return si->entry.args[1];
	case SYS_openat:
		return si->entry.args[2];
	case SYS_openat2:
		shk_memwin_init(&mw, pid);
		return shk_memwin_read(&mw, si->entry.args[2], &f, sizeof(f)) < 0 ? 0 : f;
	default:
		return 0; /* creat */
	}
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

/* The open's descriptor is what it must be; the watch may end after it. */
static bool open_ok(struct shk_open_watch *w, pid_t pid, int64_t fd)
{
	if (w->first_open) {
		if (!opened(pid, fd, w->dev, w->ino))
			return false;
		w->first_open = false;
	}
	if (w->in_name >= 0) {
		struct shk_watch_name *n = &w->names[w->in_name];

		if (!opened(pid, fd, n->dev, n->ino))
			return false;
		/* an O_PATH open reads nothing: checked, not counted */
		if (!w->in_opath && n->opens_left && --n->opens_left == 0)
			drop_name(w, (size_t)w->in_name);
	}
	return true;
}

int shk_openwatch_stop(struct shk_sup *s, pid_t pid)
{
	struct __ptrace_syscall_info si = { 0 };
	struct shk_open_watch *w = find(s, pid);

	if (!w || ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(si), &si) <= 0)
		return 0;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		w->in_open = is_open(si.entry.nr);
		w->in_name = w->in_open && w->nnames ? name_opened(pid, w, &si) : -1;
		w->in_opath = w->in_name >= 0 && open_flags(pid, &si) & O_PATH;
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		return 1;
	}
	if (si.op != PTRACE_SYSCALL_INFO_EXIT)
		return 0;
	if (!w->in_open || si.exit.is_error) {
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		return 1;
	}
	if (!open_ok(w, pid, si.exit.rval)) {
		s->stats.exec_killed++;
		shk_openwatch_forget(s, pid);
		kill(pid, SIGKILL);
		ptrace(PTRACE_CONT, pid, 0, 0);
		return 1;
	}
	if (!w->first_open && !w->nnames) {
		unwatch(s, pid);
		return 1;
	}
	w->in_open = false;
	w->in_name = -1;
	ptrace(PTRACE_SYSCALL, pid, 0, 0);
	return 1;
}
