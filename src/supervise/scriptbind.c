/* SPDX-License-Identifier: MIT */
/*
 * "#!" scripts bound to their judgement. The kernel runs a script's
 * interpreter with the script's *name* in argv, and the interpreter opens
 * that name after the exec stop, which verifies only the interpreter, the
 * argv and the cwd. A process that can change a directory the name is
 * resolved through could exchange the script (renameat2(RENAME_EXCHANGE))
 * for a denied one with the same "#!" line in between.
 *
 * Out of reach: every directory the name is resolved through — from the
 * agent's root, through its symlinks' targets, a relative name through the
 * full path of the working directory, since interpreters make it absolute
 * (python opens CWD/./NAME) — is one no process of the agent's uid can
 * change: not its own, not group- or world-writable (sticky ones only for
 * entries it owns, as the kernel's sticky check), not on procfs or FUSE,
 * and no "..". Nobody in the tree can then make the name lead elsewhere: no watch.
 * A root agent is never out of reach. A script the agent may rewrite
 * itself (its own, world-writable, or any on a writable mount for a root
 * agent) is not watched either: the name binds nothing its content does
 * not already give away (an approved file's content in place is not
 * covered, docs/exec.md). Checked first: it costs a statfs at most
 * (owner and mode are exec.c's).
 *
 * Any other name is watched in the new image (openwatch.c): every open of
 * it must return the judged file. Its names: as the kernel passes it, made
 * absolute against the judged cwd, and the judged file's canonical path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "supervise/internal.h"
#include "util/linux.h"

#define MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */

struct agent {
	uid_t uid;
	bool root;
	int rootfd;   /* O_PATH: the thread's root */
};

/* Can a process of the agent's uid rename or remove entry e of directory d? */
static bool changeable(const struct stat *d, const struct stat *e, uid_t uid)
{
	if (d->st_uid == uid)
		return true; /* its own: it can chmod it */
	if (!(d->st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	/* group-writable counts whatever the group (ACLs put their mask
	 * there); sticky: only entries it owns (may_delete's check) */
	return !(d->st_mode & S_ISVTX) || e->st_uid == uid;
}

/* Where a walk is: the directory reached, by its path below the agent's
 * root ("" is the root), and its stat. */
struct place {
	char dir[2 * PATH_MAX];
	struct stat st;
	dev_t fsdev;  /* the last device checked not to be procfs */
};

/* Devices seen not to be procfs or FUSE (the mounts scripts live on: a
 * few). Only the loop thread judges execs. */
static dev_t notproc[8];
static unsigned notproc_n;

static bool on_procfs(const struct agent *a, struct place *at)
{
	struct statfs sf;
	int fd;
	bool proc;

	if (at->st.st_dev == at->fsdev)
		return false;
	for (unsigned i = 0; i < notproc_n; i++)
		if (notproc[i] == at->st.st_dev)
			return at->fsdev = at->st.st_dev, false;
	if ((fd = openat(a->rootfd, at->dir[0] ? at->dir : ".", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return true;
	/* FUSE: its daemon, maybe of the agent's uid, says what a name is */
	proc = fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC || sf.f_type == FUSE_SUPER_MAGIC;
	close(fd);
	at->fsdev = at->st.st_dev;
	if (!proc && notproc_n < sizeof(notproc) / sizeof(notproc[0]))
		notproc[notproc_n++] = at->st.st_dev;
	return proc;
}

/*
 * Walk path from the place reached (an absolute path, or symlink target,
 * from the root) as the kernel resolves it, one component at a time, each
 * a fstatat of the prefix that never follows a link: and say whether any
 * step is in the agent's reach (1) or none is (0). Each directory's entry
 * was found out of reach before the next is looked up, so none of what was
 * seen can be changed by the agent meanwhile. With want, the last component
 * must be that file; without, path is a directory and at ends on it.
 */
static int walk(const struct agent *a, struct place *at, const char *path, const struct stat *want)
{
	char rest[2 * PATH_MAX], link[PATH_MAX], cand[2 * PATH_MAX + NAME_MAX + 2];
	int links = 0;
	char *p = rest;

	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return 1;
	for (;;) {
		struct stat e;
		char *comp;
		ssize_t n;

		if (*p == '/') {
			at->dir[0] = 0;
			if (fstat(a->rootfd, &at->st) < 0)
				return 1;
		}
		while (*p == '/')
			p++;
		if (!*p)
			return want != NULL; /* a directory where a file was named */
		comp = p;
		p += strcspn(p, "/");
		if (*p)
			*p++ = 0;
		if (!strcmp(comp, "."))
			continue;
		if (!strcmp(comp, "..") || on_procfs(a, at) ||
		    snprintf(cand, sizeof(cand), "%s%s%s", at->dir, at->dir[0] ? "/" : "", comp) >=
		            (int)sizeof(cand) ||
		    fstatat(a->rootfd, cand, &e, AT_SYMLINK_NOFOLLOW) < 0 || changeable(&at->st, &e, a->uid))
			return 1;
		if (S_ISLNK(e.st_mode)) {
			if ((n = readlinkat(a->rootfd, cand, link, sizeof(link) - 1)) <= 0 ||
			    ++links > MAX_LINKS)
				return 1;
			link[n] = 0;
			if (snprintf(cand, sizeof(cand), "%s%s%s", link, *p ? "/" : "", p) >=
			    (int)sizeof(rest))
				return 1;
			memcpy(rest, cand, strlen(cand) + 1);
			p = rest;
			continue;
		}
		if (!*p && want)
			return e.st_dev != want->st_dev || e.st_ino != want->st_ino;
		if (!S_ISDIR(e.st_mode))
			return 1;
		memcpy(at->dir, cand, strlen(cand) + 1);
		at->st = e;
	}
}

/* Is the name (as the kernel passes it to the interpreter) in reach? */
static int name_in_reach(const struct agent *a, const struct shk_exec_approval *ap,
                         const char *cwd, const char *name, const struct stat *want)
{
	struct place at = { .fsdev = (dev_t)-1 };

	/* both walks start at "/", which stats the root */
	if (name[0] == '/')
		return walk(a, &at, name, want);
	/* a relative name: the working directory's full path must lead to
	 * the working directory itself, out of reach all the way: the one
	 * judged (keep_cwd), which the exec stop verifies the image runs in */
	if (cwd[0] != '/' || walk(a, &at, cwd, NULL) || ap->cwd_dev != at.st.st_dev ||
	    ap->cwd_ino != at.st.st_ino)
		return 1;
	return walk(a, &at, name, want);
}

/* A file the agent may rewrite in place (its own, world-writable, or any
 * for a root agent: CAP_DAC_OVERRIDE), on a writable mount. Owner and mode
 * as exec.c found them when it opened the file: only its owner (the agent:
 * then it writes it anyway) or root can change them. */
static bool agent_writes(const struct agent *a, const struct shk_exec_file *f)
{
	struct statvfs v;

	return (a->root || f->uid == a->uid || (f->mode & S_IWOTH)) && fstatvfs(f->fd, &v) == 0 &&
	       !(v.f_flag & ST_RDONLY);
}

/* Lexical normal form: no "//", "." or "dir/..". A relative name keeps
 * its leading ".."; "/.." is "/". */
void shk_script_normalise(const char *in, char *out, size_t len)
{
	size_t o = 0, floor;

	if (len < 2) {
		if (len)
			out[0] = 0;
		return;
	}
	if (in[0] == '/')
		out[o++] = '/';
	floor = o; /* ".." pops nothing below this */
	out[o] = 0;
	for (const char *p = in; *p;) {
		size_t l;
		bool up;

		while (*p == '/')
			p++;
		if (!(l = strcspn(p, "/")))
			break;
		up = l == 2 && p[0] == '.' && p[1] == '.';
		if ((l == 1 && p[0] == '.') || (up && o == floor && in[0] == '/')) {
			p += l;
			continue;
		}
		if (up && o > floor) {
			while (o > floor && out[o - 1] != '/')
				o--;
			if (o > floor)
				o--;
			out[o] = 0;
			p += l;
			continue;
		}
		if (o + 1 + l + 1 > len)
			break;
		if (o > 0 && out[o - 1] != '/')
			out[o++] = '/';
		memcpy(out + o, p, l);
		o += l;
		out[o] = 0;
		if (up)
			floor = o; /* a leading "..": kept */
		p += l;
	}
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');

	return b ? b + 1 : path;
}

/*
 * How often the program that opens the script opens it before it runs it,
 * as checked with strace: dash, bash and perl once; python twice (its
 * zipimport probe, then the run). Any other: 0, watched until it exits or
 * execs. node and the like open a canonical path they compute, which no
 * name match can tie to the name if it changed in between: their exec
 * fails instead.
 */
static void script_opener(const char *path, uint8_t *ret_opens, bool *ret_canon)
{
	static const char *const once[] = { "dash", "bash", "rbash", "perl" };
	static const char *const canon[] = { "node", "nodejs", "bun", "deno" };
	const char *b = base_name(path);

	*ret_opens = !strncmp(b, "python", 6) || !strncmp(b, "pypy", 4) ? 2 : 0;
	for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++)
		if (!strncmp(b, once[i], strlen(once[i])))
			*ret_opens = 1;
	*ret_canon = false;
	for (size_t i = 0; i < sizeof(canon) / sizeof(canon[0]); i++)
		if (!strcmp(b, canon[i]))
			*ret_canon = true;
}

/*
 * Is the script a zip archive (a python zip application: "#!" line, then
 * the archive)? zipimport finds an archive by the end-of-central-directory
 * record in its last 64 KiB + 22 bytes, and opens it by name again for
 * every module it imports, long after the two opens counted for python.
 * The record is the last 22 bytes unless the archive has a comment, so
 * those are read first; only then is the rest of the tail (no more than
 * the file) scanned. A read that fails counts as a zip: watched.
 */
bool shk_script_zip(int fd, int64_t size)
{
	enum { EOCD = 22, TAIL = EOCD + 65535 };
	size_t len = size > TAIL ? TAIL : (size_t)(size > 0 ? size : 0);
	_cleanup_free_ char *buf = NULL;
	char end[EOCD];
	ssize_t n;

	if (len < EOCD)
		return false; /* no room for the record: zipimport refuses it too */
	n = pread(fd, end, EOCD, size - EOCD);
	if (n != EOCD)
		return true;
	if (!memcmp(end, "PK\x05\x06", 4))
		return true;
	if (!(buf = malloc(len)))
		return true;
	n = pread(fd, buf, len, size - (int64_t)len);
	return n != (ssize_t)len || memmem(buf, len, "PK\x05\x06", 4) != NULL;
}

static bool zip_archive(const struct shk_exec_file *f)
{
	_cleanup_close_ int fd = -EBADF;
	char p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", f->fd);
	if ((fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return true; /* cannot tell: watch it as one */
	return shk_script_zip(fd, f->size);
}

/* Append "name\0abs\0canon\0" to the approval's blob (after the env). */
static int add_name(struct shk_exec_approval *ap, const char *cwd, const char *name,
                    const struct shk_exec_file *f)
{
	char abs[2 * PATH_MAX + 2], norm[PATH_MAX];
	size_t off = ap->cmdline_len + ap->loader_env_len + ap->env_len + ap->bind_len, l;
	char *c;

	snprintf(abs, sizeof(abs), "%s%s%s", name[0] == '/' ? "" : cwd, name[0] == '/' ? "" : "/",
	         name);
	shk_script_normalise(abs, norm, sizeof(norm));
	l = strlen(name) + strlen(norm) + strlen(f->path) + 3;
	if (!(c = realloc(ap->cmdline, off + l)))
		return -ENOMEM;
	ap->cmdline = c;
	c += off;
	c = stpcpy(c, name) + 1;
	c = stpcpy(c, norm) + 1;
	stpcpy(c, f->path);
	ap->bind_len += l;
	ap->bind[ap->nbind].dev = f->dev;
	ap->bind[ap->nbind].ino = f->ino;
	ap->bind[ap->nbind].zip = zip_archive(f);
	ap->nbind++;
	return 0;
}

/* Watch name (of file f) unless nobody in the tree can make it lead
 * elsewhere, or the agent may rewrite f itself. */
static int bind_name(const struct agent *a, const struct shk_obs_exec *x, const char *name,
                     const struct shk_exec_file *f, struct shk_exec_approval *ap)
{
	const struct stat st = { .st_dev = f->dev, .st_ino = f->ino };

	if (agent_writes(a, f) || (!a->root && !name_in_reach(a, ap, x->cwd, name, &st)))
		return 0;
	return add_name(ap, x->cwd, name, f);
}

/*
 * The scripts of the chain whose names the new image opens: level 0 is the
 * file named (as name0, the name the kernel passes), level j the "#!"
 * interpreter j-1 that is itself a script (named as its "#!" line names
 * it). The last interpreter is the ELF the exec stop verifies; a script run
 * through a descriptor is verified there too (same_script_fd).
 */
int shk_script_bind(struct shk_sup *s, pid_t tid, const char *name0, struct shk_exec_approval *ap)
{
	struct shk_obs_exec *x = &s->obs.exec;
	const struct shk_exec_file *opener = x->ninterp ? &x->interp[x->ninterp - 1] : &x->file;
	bool userland = x->has_loader_target && x->loader_userland && x->loader_given;
	struct agent a = { .rootfd = -1 };
	static uid_t euid = (uid_t)-1; /* ours does not change: once */
	char p[64];
	int r = 0;

	if (x->has_loader_target && !x->loader_userland)
		opener = &x->loader_target;
	script_opener(opener->path, &ap->bind_opens, &ap->bind_canon);
	ap->script = x->ninterp > 0;
	if (!ap->script && !userland)
		return 0;
	if (euid == (uid_t)-1)
		euid = geteuid();
	if ((a.uid = euid) == 0)
		a.root = !s->drop_creds, a.uid = s->cfg->run_uid;
	snprintf(p, sizeof(p), "/proc/%d/root", (int)tid);
	if (!a.root && (a.rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -ESRCH;
	for (size_t j = x->via_fd ? 1 : 0; j < x->ninterp && r == 0; j++) {
		const struct shk_exec_file *f = j ? &x->interp[j - 1] : &x->file;

		r = bind_name(&a, x, j ? x->interp_cmd[j - 1] : name0, f, ap);
	}
	if (r == 0 && (ap->userland = userland)) {
		uint8_t n = ap->nbind;

		r = bind_name(&a, x, x->loader_given, &x->loader_target, ap);
		/* how often a loader opens its program is nobody's to know
		 * (valgrind: its launcher, then its tool, seven times) */
		if ((ap->userland_bound = ap->nbind > n))
			ap->bind_opens = 0;
	}
	if (a.rootfd >= 0)
		close(a.rootfd);
	/* an opener whose open no name match sees: the exec fails */
	return r == 0 && ap->nbind && ap->bind_canon ? -EPERM : r;
}
