/* SPDX-License-Identifier: MIT */
/*
 * exec: judge the file the kernel is about to load, then verify at the
 * ptrace exec stop (before the new image runs one instruction) that the image
 * and argv are the approved ones. The notification is answered with
 * CONTINUE, so the kernel re-reads the path and argv from the agent's memory:
 * the exec stop is what closes that window (docs/exec.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>

#include <shackle/execenv.h>
#include <shackle/loaders.h>

#include "supervise/internal.h"
#include "supervise/mem.h"
#include "supervise/path.h"

#define BINPRM_BUF 256

/*
 * The first bytes of files seen in this session (up to the kernel's
 * BINPRM_BUF_SIZE: all it reads of a "#!" line), by device, inode, size and
 * ctime: a hit spares reopening the file to read them (open, pread, close).
 * Files that do not start with "#!" (ELF binaries, mostly) keep no bytes.
 * Any write changes ctime, which no caller can set. A file rewritten within
 * one ctime tick and taken from here is judged as it was, while the kernel
 * reads what it is now: another "#!" line or none means another
 * interpreter, or the file itself, and another argv at the exec stop,
 * killed; the same line is the same judgement (a script's body is not
 * judged). Only the loop thread judges execs.
 */
#define HEAD_CACHE 64
static struct {
	dev_t dev;
	ino_t ino;
	int64_t size;
	struct timespec ctime;
	uint16_t len; /* bytes of a "#!" file; 0: not a script */
	char buf[BINPRM_BUF];
} heads[HEAD_CACHE];
static unsigned heads_n, heads_next;

/* The cached first bytes of f into buf: their length, 0 for no script,
 * -1 when f is not cached. */
static int head_cached(const struct shk_exec_file *f, char *buf)
{
	for (unsigned i = 0; i < heads_n; i++)
		if (heads[i].ino == f->ino && heads[i].dev == f->dev && heads[i].size == f->size &&
		    heads[i].ctime.tv_sec == f->ctime.tv_sec &&
		    heads[i].ctime.tv_nsec == f->ctime.tv_nsec) {
			memcpy(buf, heads[i].buf, heads[i].len);
			return heads[i].len;
		}
	return -1;
}

static void head_add(const struct shk_exec_file *f, const char *buf, size_t len)
{
	unsigned i = heads_next;

	heads_next = (heads_next + 1) % HEAD_CACHE;
	if (heads_n < HEAD_CACHE)
		heads_n++;
	heads[i].dev = f->dev;
	heads[i].ino = f->ino;
	heads[i].size = f->size;
	heads[i].ctime = f->ctime;
	heads[i].len = (uint16_t)len;
	memcpy(heads[i].buf, buf, len);
}

/* The first bytes of f (at most BINPRM_BUF) into buf when it starts with
 * "#!": their length; 0 otherwise or when it cannot be read (verified at
 * the exec stop anyway). */
static ssize_t read_head(const struct shk_exec_file *f, char *buf)
{
	char p[64];
	_cleanup_close_ int rfd = -EBADF;
	ssize_t n;

	if ((n = head_cached(f, buf)) >= 0)
		return n;
	snprintf(p, sizeof(p), "/proc/self/fd/%d", f->fd);
	rfd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0)
		return 0;
	n = pread(rfd, buf, BINPRM_BUF, 0);
	if (n < 2)
		return 0; /* unread: tried again next time */
	if (buf[0] != '#' || buf[1] != '!')
		n = 0;
	head_add(f, buf, (size_t)n);
	return n;
}

/* First line of a "#!" script, split as the kernel does: the interpreter
 * name, then everything after it (trimmed) as one optional argument. */
static bool parse_shebang(const struct shk_exec_file *f, char *name, size_t nlen, char *arg,
                          size_t alen)
{
	char buf[BINPRM_BUF + 1];
	ssize_t n = read_head(f, buf);
	char *s, *e, *eol;

	if (n == 0)
		return false;
	buf[n] = 0;
	eol = strchr(buf, '\n');
	if (eol)
		*eol = 0;
	for (s = buf + 2; *s == ' ' || *s == '\t'; s++)
		;
	for (e = s; *e && *e != ' ' && *e != '\t'; e++)
		;
	if ((size_t)(e - s) >= nlen || e == s)
		return e != s ? (name[0] = 0, true) : false;
	memcpy(name, s, e - s);
	name[e - s] = 0;
	for (s = e; *s == ' ' || *s == '\t'; s++)
		;
	for (e = s + strlen(s); e > s && (e[-1] == ' ' || e[-1] == '\t'); e--)
		;
	if ((size_t)(e - s) >= alen)
		e = s + alen - 1;
	memcpy(arg, s, e - s);
	arg[e - s] = 0;
	return true;
}

static int append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t l = strlen(s) + 1;

	if (*len + l > *cap) {
		size_t c = (*cap ? *cap * 2 : 1024);
		while (c < *len + l)
			c *= 2;
		char *b = realloc(*buf, c);
		if (!b)
			return -ENOMEM;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, s, l);
	*len += l;
	return 0;
}

static bool is_loader(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return strncmp(b, "ld-linux", 8) == 0 || strcmp(b, "ld.so") == 0 ||
	       (strncmp(b, "ld-", 3) == 0 && strstr(b, ".so"));
}

/* The program ld.so would run: its first non-option argument; *ret_argv0
 * the value of the last --argv0 among the options (NULL: none);
 * *ret_code_opts whether they load code of the caller's choosing
 * (--preload, --audit, --library-path: judged as exec.loader_env). One scan
 * of the argv the kernel builds, so a "#!" line's options count too. */
static const char *loader_program(const struct shk_argv *a, size_t *ret_i, const char **ret_argv0,
                                  bool *ret_code_opts)
{
	static const char *const with_arg[] = {
		"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0",
		"--glibc-hwcaps-prepend", "--glibc-hwcaps-mask",
	};
	for (size_t i = 1; i < a->n; i++) {
		const char *s = a->v[i];
		bool skip = false;

		if (strncmp(s, "--", 2) != 0) {
			*ret_i = i;
			return s;
		}
		if (strcmp(s, "--") == 0) {
			*ret_i = i + 1;
			return i + 1 < a->n ? a->v[i + 1] : NULL;
		}
		for (size_t k = 0; k < sizeof(with_arg) / sizeof(with_arg[0]); k++)
			if (strcmp(s, with_arg[k]) == 0)
				skip = true;
		if (skip && !strcmp(s, "--argv0") && i + 1 < a->n)
			*ret_argv0 = a->v[i + 1];
		if (!strcmp(s, "--preload") || !strcmp(s, "--audit") || !strcmp(s, "--library-path"))
			*ret_code_opts = true;
		if (skip)
			i++;
	}
	return NULL;
}

static void file_close(struct shk_exec_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* A regular file we opened: its name, identity and size (fd is then f's). */
static int describe_file(int fd, struct shk_exec_file *f)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || shk_fd_name(fd, f->path, sizeof(f->path)) < 0) {
		close(fd);
		return -EACCES;
	}
	if (S_ISLNK(st.st_mode) || !S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISLNK(st.st_mode) ? -ELOOP : -EACCES;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->ctime = st.st_ctim;
	f->uid = st.st_uid;
	f->mode = st.st_mode;
	f->fd = fd;
	return 0;
}

/* Open what the agent names, as a regular file, and describe it. */
static int open_exec_file(struct shk_sup *s, pid_t tid, int dirfd, const char *path, int oflags,
                          struct shk_exec_file *f)
{
	int fd = shk_path_open(s, tid, dirfd, path, oflags, false);

	f->fd = -1;
	return fd < 0 ? fd : describe_file(fd, f);
}

/*
 * The program ld.so is asked to run, resolved as the agent's ld.so will
 * resolve it: absolute names inside the thread's root (a root agent may
 * have chrooted), relative ones beneath its working directory, and never
 * through a /proc magic link. Our own resolution of "/proc/1/../self/fd/3",
 * "/proc/net/../fd/3", an agent's symlink to /proc/self/fd/3 or
 * "/proc/self/cwd/.." named OUR process while ld.so, after the exec stop
 * (which verifies ld.so, not its program), opened the agent's: a denied
 * program would run, a held git push would run unheld. Names that
 * need a magic link, or ".." above the working directory, are refused
 * (EPERM): running ld.so as a program with such a name is not something
 * tools do.
 */
static int open_loader_target(pid_t tid, const char *path, struct shk_exec_file *f)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_MAGICLINKS };
	char base[64];
	int bfd, fd;

	f->fd = -1;
	snprintf(base, sizeof(base), "/proc/%d/%s", (int)tid, path[0] == '/' ? "root" : "cwd");
	if ((bfd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	how.resolve |= path[0] == '/' ? RESOLVE_IN_ROOT : RESOLVE_BENEATH;
	fd = (int)syscall(SYS_openat2, bfd, path, &how, sizeof(how));
	if (fd < 0)
		fd = errno == ELOOP || errno == EXDEV ? -EPERM : -errno;
	close(bfd);
	return fd < 0 ? fd : describe_file(fd, f);
}


struct cmdline {
	char *buf;
	size_t len, cap;
};

/* The argv the kernel builds for a script: interpreter name, optional
 * argument, the name the script was opened by, then argv[1..] of before. */
static int script_argv(struct cmdline *c, const char *iname, const char *iarg,
                       const char *filename)
{
	struct cmdline n = { 0 };
	size_t first = c->len ? strlen(c->buf) + 1 : 0;
	int r;

	if ((r = append(&n.buf, &n.len, &n.cap, iname)) < 0 ||
	    (iarg[0] && (r = append(&n.buf, &n.len, &n.cap, iarg)) < 0) ||
	    (r = append(&n.buf, &n.len, &n.cap, filename)) < 0) {
		free(n.buf);
		return r;
	}
	if (c->len > first) {
		if (n.len + c->len - first > n.cap) {
			char *b = realloc(n.buf, n.len + c->len - first);
			if (!b) {
				free(n.buf);
				return -ENOMEM;
			}
			n.buf = b;
		}
		memcpy(n.buf + n.len, c->buf + first, c->len - first);
		n.len += c->len - first;
	}
	free(c->buf);
	*c = n;
	c->cap = n.len;
	return 0;
}

/* Follow the "#!" chain as the kernel will (at most SHK_SUP_MAX_INTERP
 * levels); the approval expects the last interpreter's inode. */
static int script_chain(struct shk_sup *s, pid_t tid, const char *filename,
                        struct shk_exec_approval *ap, struct cmdline *c)
{
	struct shk_obs_exec *x = &s->obs.exec;
	const struct shk_exec_file *cur = &x->file;
	char iname[BINPRM_BUF], iarg[BINPRM_BUF], prev[PATH_MAX + 32];
	int r;

	snprintf(prev, sizeof(prev), "%s", filename);
	while (parse_shebang(cur, iname, sizeof(iname), iarg, sizeof(iarg))) {
		struct shk_exec_file *f;

		if (iname[0] == 0)
			return -ENOEXEC;
		if (x->ninterp == SHK_SUP_MAX_INTERP)
			return -ELOOP;
		f = &x->interp[x->ninterp];
		if ((r = open_exec_file(s, tid, AT_FDCWD, iname, O_PATH, f)) < 0)
			return r;
		x->ninterp++;
		if ((r = script_argv(c, iname, iarg, prev)) < 0)
			return r;
		if (!(x->interp_cmd[x->ninterp - 1] = malloc(c->len ? c->len : 1)))
			return -ENOMEM;
		memcpy(x->interp_cmd[x->ninterp - 1], c->buf, c->len);
		x->interp_cmd_len[x->ninterp - 1] = c->len;
		snprintf(prev, sizeof(prev), "%s", iname);
		cur = f;
	}
	ap->dev = cur->dev;
	ap->ino = cur->ino;
	return 0;
}

/* The name the kernel gives a script's interpreter (fs/exec.c); path is
 * plen bytes and its NUL (a copy, not snprintf: every exec passes here). */
static void kernel_name(int dirfd, const char *path, size_t plen, char *buf, size_t len)
{
	if (path[0] == '/' || dirfd == AT_FDCWD) {
		plen = plen < len ? plen : len - 1;
		memcpy(buf, path, plen);
		buf[plen] = 0;
	} else if (path[0] == 0)
		snprintf(buf, len, "/dev/fd/%d", dirfd);
	else
		snprintf(buf, len, "/dev/fd/%d/%s", dirfd, path);
}

/* filename: the name the kernel gives a script's interpreter (kernel_name) */
static int observe_file(struct shk_sup *s, pid_t tid, int dirfd, const char *path, int flags,
                        const char *filename, struct shk_exec_approval *ap)
{
	struct shk_obs_exec *x = &s->obs.exec;
	int oflags = O_PATH | ((flags & AT_SYMLINK_NOFOLLOW) ? O_NOFOLLOW : 0);
	struct cmdline c = { 0 };
	int r;

	if ((r = open_exec_file(s, tid, dirfd, path, oflags, &x->file)) < 0)
		return r;
	x->via_fd = path[0] == 0;
	for (size_t i = 0; i < s->argv.n; i++)
		if ((r = append(&c.buf, &c.len, &c.cap, s->argv.v[i])) < 0)
			goto out;
	r = script_chain(s, tid, filename, ap, &c);
	if (r == 0 && x->via_fd && x->ninterp) {
		ap->script_via_fd = true;
		ap->script_fd = dirfd;
		ap->script_dev = x->file.dev;
		ap->script_ino = x->file.ino;
	}
out:
	ap->cmdline = c.buf;
	ap->cmdline_len = c.len;
	return r;
}

/* The system's dynamic loaders, found once: a file is the loader by name,
 * or by inode (hard link), or by size and content (a renamed copy). Their
 * identities are taken at the first exec (four stats per exec otherwise); a
 * loader replaced during the session is still recognised by its name. */
static const char *const loader_paths[] = {
	"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/lib64/ld-linux-x86-64.so.2",
};
#define NLOADERS (sizeof(loader_paths) / sizeof(loader_paths[0]))
static struct stat loader_st[NLOADERS];
static bool loader_found[NLOADERS];
static pthread_once_t loaders_once = PTHREAD_ONCE_INIT;

static void loaders_find(void)
{
	for (size_t i = 0; i < NLOADERS; i++)
		loader_found[i] = stat(loader_paths[i], &loader_st[i]) == 0;
}

static bool same_content(int fd_path, const char *known, int64_t size)
{
	char p[64];
	_cleanup_close_ int a = -EBADF, b = -EBADF;
	char x[8192], y[8192];
	int64_t done = 0;

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd_path);
	a = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	b = open(known, O_RDONLY | O_CLOEXEC);
	if (a < 0 || b < 0)
		return false;
	while (done < size) {
		ssize_t n = read(a, x, sizeof(x));
		if (n <= 0 || read(b, y, (size_t)n) != n || memcmp(x, y, (size_t)n) != 0)
			return false;
		done += n;
	}
	return true;
}

static bool is_loader_file(const struct shk_exec_file *f)
{
	if (is_loader(f->path))
		return true;
	pthread_once(&loaders_once, loaders_find);
	for (size_t i = 0; i < NLOADERS; i++) {
		const struct stat *st = &loader_st[i];

		if (loader_found[i] &&
		    ((st->st_dev == f->dev && st->st_ino == f->ino) ||
		     (st->st_size == f->size && same_content(f->fd, loader_paths[i], f->size))))
			return true;
	}
	return false;
}

/*
 * The loader an exec runs, and the argv it parses: ld.so or a userland
 * loader (shackle/loaders.h) as the program, or as the last "#!"
 * interpreter, with the argv the kernel builds (the approval's cmdline); or
 * a userland loader's launcher script (Debian's /usr/bin/valgrind), with
 * the script's own argv. NULL: no loader.
 */
static const char *loader_of(struct shk_sup *s, const struct shk_exec_approval *ap,
                             const shk_loader **ret_ul, const char **ret_buf, size_t *ret_len)
{
	struct shk_obs_exec *x = &s->obs.exec;
	const struct shk_exec_file *last = x->ninterp ? &x->interp[x->ninterp - 1] : &x->file;

	*ret_buf = ap->cmdline;
	*ret_len = ap->cmdline_len;
	if ((*ret_ul = shk_loader_by_name(last->path)))
		return shk_loader_name(*ret_ul);
	if (is_loader_file(last))
		return "ld.so";
	if (x->ninterp && (*ret_ul = shk_loader_by_name(x->file.path))) {
		*ret_buf = s->argv.buf;
		*ret_len = s->argv.len;
		return shk_loader_name(*ret_ul);
	}
	return NULL;
}

/* The program a userland loader runs (NULL: none), as loader_program does
 * for ld.so; a command line the table cannot place is recorded as refused. */
static const char *userland_program(struct shk_obs_exec *x, const shk_loader *ul,
                                    const struct shk_argv *a, size_t *ret_i,
                                    const char **ret_argv0)
{
	shk_loader_cmd c;

	switch (shk_loader_parse_argv(ul, a->v, a->n, &c)) {
	case SHK_LOADER_TARGET:
		*ret_i = c.target;
		*ret_argv0 = c.argv0;
		x->loader_code_opts = c.code_opts;
		return a->v[c.target];
	case SHK_LOADER_UNPARSED:
		x->loader_refused = c.why;
		snprintf(x->loader_bad, sizeof(x->loader_bad), "%.*s", (int)sizeof(x->loader_bad) - 1,
		         a->v[c.bad]);
		return NULL;
	default:
		return NULL;
	}
}

/* valgrind runs a "#!" script's interpreter itself, where no exec judges
 * it: such a target is refused, not followed. */
static bool userland_script(struct shk_obs_exec *x)
{
	char iname[BINPRM_BUF], iarg[BINPRM_BUF];

	if (!parse_shebang(&x->loader_target, iname, sizeof(iname), iarg, sizeof(iarg)))
		return false;
	x->loader_refused = "a \"#!\" script, whose interpreter the loader runs unjudged";
	snprintf(x->loader_bad, sizeof(x->loader_bad), "%.*s", (int)sizeof(x->loader_bad) - 1,
	         x->loader_target.path);
	file_close(&x->loader_target);
	return true;
}

/* A loader run as the program, or as the last "#!" interpreter: the program
 * it is asked to run is named by its argv (loader_of). */
static int observe_loader(struct shk_sup *s, pid_t tid, const struct shk_exec_approval *ap)
{
	struct shk_obs_exec *x = &s->obs.exec;
	struct shk_argv a = { 0 };
	const shk_loader *ul;
	const char *prog, *argv0 = NULL, *buf;
	size_t n = 0, k = 0, len;
	int r;

	if (!(x->loader_name = loader_of(s, ap, &ul, &buf, &len)))
		return 0;
	x->loader_userland = ul != NULL;
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1)
		n++;
	if (!(a.v = calloc(n + 1, sizeof(*a.v))))
		return -ENOMEM;
	n = 0;
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1)
		a.v[n++] = buf + off;
	a.n = n;
	prog = ul ? userland_program(x, ul, &a, &k, &argv0)
	          : loader_program(&a, &k, &argv0, &x->loader_code_opts);
	r = prog ? open_loader_target(tid, prog, &x->loader_target) : 0;
	if (r == 0 && prog && ul && userland_script(x))
		prog = NULL;
	if (r == 0 && prog) {
		/* the program's argv: from its name on, as the loader passes
		 * it, with the name replaced by --argv0's (or qemu's -0) value
		 * when one is given (else a rule on argv[0] is not
		 * applied); a copy (the cmdline grows, and moves,
		 * with the environment) */
		const char *rest = a.v[k] + strlen(a.v[k]) + 1;
		size_t l0, lrest = (size_t)(buf + len - rest);

		if (!argv0)
			argv0 = a.v[k];
		if (ul && !(x->loader_given = strdup(a.v[k])))
			r = -ENOMEM;
		l0 = strlen(argv0) + 1;
		x->loader_cmd_len = l0 + lrest;
		if (!(x->loader_cmd = malloc(x->loader_cmd_len)))
			r = -ENOMEM;
		else {
			memcpy(x->loader_cmd, argv0, l0);
			memcpy(x->loader_cmd + l0, rest, lrest);
		}
	}
	free(a.v);
	if (r < 0)
		return r;
	x->has_loader_target = prog != NULL;
	return 0;
}

/* Close the fds an observation holds (after the judge has run). */
void shk_exec_obs_release(struct shk_sup *s)
{
	struct shk_obs_exec *x = &s->obs.exec;

	file_close(&x->file);
	for (size_t i = 0; i < x->ninterp; i++) {
		file_close(&x->interp[i]);
		free(x->interp_cmd[i]);
		x->interp_cmd[i] = NULL;
	}
	file_close(&x->loader_target);
	free(x->loader_cmd);
	x->loader_cmd = NULL;
	free(x->loader_given);
	x->loader_given = NULL;
}

/* The judged variables of an environment block ("A=b\0C=d\0..."), in
 * order: those that make ld.so (or glibc's iconv) load code of the caller's
 * choosing into whatever program is exec'd, and those that make an
 * interpreter run it (shackle/execenv.h; the pipeline decides which count
 * for the program). The exec stop compares the same pick. */
static int pick_loader_env(const char *env, size_t len, char *out, size_t cap, size_t *ret_len)
{
	size_t n = 0;

	for (size_t off = 0; off < len;) {
		size_t l = strnlen(env + off, len - off);

		if (shk_env_classify(env + off, l, NULL) != SHK_ENV_OTHER) {
			if (l + 1 > cap - n)
				return -E2BIG;
			memcpy(out + n, env + off, l);
			out[n + l] = 0;
			n += l + 1;
		}
		off += l + 1;
	}
	*ret_len = n;
	return 0;
}

/* envp is copied like argv (same bounds: E2BIG beyond) and only its judged
 * variables (loader and interpreter) are kept; they follow the cmdline in
 * the approval, so that the exec stop can check the environment the kernel
 * really copied. */
static int observe_env(struct shk_sup *s, struct shk_memwin *w, uint64_t envp,
                       struct shk_exec_approval *ap)
{
	struct shk_obs_exec *x = &s->obs.exec;
	struct shk_argv env = { 0 };
	size_t n = 0;
	char *c;
	int r;

	r = shk_memwin_read_argv(w, envp, &env);
	if (r == 0 && env.n)
		r = pick_loader_env(env.buf, env.len, s->loader_env, sizeof(s->loader_env), &n);
	x->loader_env = s->loader_env;
	x->loader_env_len = n;
	/* the whole block too: the exec stop compares it first (env_matches) */
	if (r == 0 && !(c = realloc(ap->cmdline, ap->cmdline_len + n + env.len + 1)))
		r = -ENOMEM;
	if (r == 0) {
		memcpy(c + ap->cmdline_len, s->loader_env, n);
		if (env.len)
			memcpy(c + ap->cmdline_len + n, env.buf, env.len);
		ap->cmdline = c;
		ap->loader_env_len = n;
		ap->env_len = env.len;
	}
	shk_argv_free(&env);
	return r;
}

/* stat() of what /proc/PID/WHAT (exe, cwd) leads to. */
static int proc_stat(pid_t pid, const char *what, struct stat *st)
{
	char p[64];

	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
	return stat(p, st) < 0 ? -errno : 0;
}

/* The judged working directory goes with the approval, by device and
 * inode (a path would be cut at PATH_MAX, and a directory renamed to the
 * judged name would pass): the exec stop checks it. A sibling thread's
 * chdir() while the exec waited (for a human, or only for our judgement)
 * would run an approved `git push` in another repository than the one
 * shown and logged. */
static int keep_cwd(struct shk_exec_approval *ap, pid_t tid)
{
	struct stat st;

	if (proc_stat(tid, "cwd", &st) < 0)
		return -ESRCH;
	ap->cwd_dev = st.st_dev;
	ap->cwd_ino = st.st_ino;
	return 0;
}

/*
 * Once the kernel's check is loaded (lazy mode), the pidfd that holds a
 * tool call's process after its exec (execfast.c) is opened here, before
 * the ID_VALID that ends the observation: that one check then proves it is
 * of the caller's process, as it does for the reads. pidfd_open() without
 * PIDFD_THREAD refuses a thread that does not lead its group, so success
 * also gives the caller's tgid (no tgkill); a non-leader gets none here
 * and is handled as before.
 */
static void leader_pidfd(struct shk_sup *s, pid_t tid, struct shk_exec_approval *ap)
{
	if (s->lazy && s->xf.ev && tid != s->child &&
	    (ap->pidfd = (int)syscall(SYS_pidfd_open, tid, 0)) < 0)
		ap->pidfd = -1;
}

int shk_exec_observe(struct shk_sup *s, const struct seccomp_notif *req,
                     struct shk_exec_approval *ap)
{
	struct shk_obs_exec *x = &s->obs.exec;
	bool at = req->data.nr == SYS_execveat;
	int dirfd = at ? (int)req->data.args[0] : AT_FDCWD;
	int flags = at ? (int)req->data.args[4] : 0;
	char path[PATH_MAX], name[PATH_MAX + 32];
	size_t plen;
	pid_t tid = (pid_t)req->pid;
	struct shk_memwin w;
	int r;

	memset(&s->obs, 0, sizeof(s->obs));
	s->obs.kind = SHK_OBS_EXEC;
	s->obs.nr = req->data.nr;
	s->obs.tid = tid;
	x->file.fd = x->loader_target.fd = -1;
	memset(ap, 0, sizeof(*ap));
	ap->pidfd = -1;
	ap->tid = tid;
	ap->notif_id = req->id;
	shk_memwin_init(&w, tid);
	r = shk_memwin_read_str(&w, req->data.args[at ? 1 : 0], path, sizeof(path), &plen);
	if (r < 0)
		return r;
	if ((r = shk_memwin_read_argv(&w, req->data.args[at ? 2 : 1], &s->argv)) < 0)
		return r;
	/* argc == 0 is how CVE-2021-4034 began; nothing legitimate needs it */
	if (s->argv.n == 0)
		return -EINVAL;
	if (plen == 0 && !(at && (flags & AT_EMPTY_PATH)))
		return -ENOENT;
	x->argv = s->argv.v;
	x->argc = s->argv.n;
	kernel_name(dirfd, path, plen, name, sizeof(name));
	if ((r = observe_file(s, tid, dirfd, path, flags, name, ap)) < 0)
		return r;
	if ((r = observe_loader(s, tid, ap)) < 0)
		return r;
	if (x->has_loader_target && !x->loader_userland) {
		ap->watch_open = true;
		ap->open_dev = x->loader_target.dev;
		ap->open_ino = x->loader_target.ino;
	}
	if ((r = observe_env(s, &w, req->data.args[at ? 3 : 2], ap)) < 0)
		return r;
	shk_proc_link(tid, "cwd", x->cwd, sizeof(x->cwd));
	if ((r = keep_cwd(ap, tid)) < 0)
		return r;
	if ((r = shk_script_bind(s, tid, name, ap)) < 0)
		return r;
	leader_pidfd(s, tid, ap);
	shk_tidinfo_peek(s, tid, ap->pidfd >= 0);
	ap->pid = s->obs.pid;
	/* everything above came from the agent: only now ask whether the
	 * notification is still the one we read it for */
	if (ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0)
		return -ESRCH;
	return 0;
}

/* Recorded before the CONTINUE answer; in lazy mode the thread becomes a
 * tracee here, or the exec is refused (traced by someone else, gone). */
int shk_exec_approve(struct shk_sup *s, struct shk_exec_approval *ap)
{
	int r;

	shk_exec_forget(s, ap->tid);
	if ((r = shk_tracer_seize(s, ap->tid, ap->notif_id)) < 0)
		return r;
	if (s->ex.nappr == s->ex.cappr) {
		size_t c = s->ex.cappr ? s->ex.cappr * 2 : 16;
		struct shk_exec_approval *n = realloc(s->ex.appr, c * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->ex.appr = n;
		s->ex.cappr = c;
	}
	s->ex.appr[s->ex.nappr++] = *ap;
	ap->cmdline = NULL;
	ap->pidfd = -1;
	return 0;
}

void shk_exec_forget(struct shk_sup *s, pid_t tid)
{
	shk_execfast_forget(s, tid);
	for (size_t i = 0; i < s->ex.nappr; i++) {
		if (s->ex.appr[i].tid != tid)
			continue;
		free(s->ex.appr[i].cmdline);
		if (s->ex.appr[i].pidfd >= 0)
			close(s->ex.appr[i].pidfd);
		s->ex.appr[i] = s->ex.appr[--s->ex.nappr];
		return;
	}
}

/* %cs of a task in 64-bit mode (__USER_CS); a 32-bit image runs with 0x23 */
#define X86_64_USER_CS 0x33

/*
 * The argv and environment the new image starts with, read from its stack at
 * the exec stop: rsp points at argc, then argv[], NULL, envp[], NULL, auxv
 * (the System V initial stack, fs/binfmt_elf.c create_elf_tables). Nothing
 * of the image has run and the memory is its own: these are the strings the
 * kernel copied (the bytes /proc/PID/cmdline and /proc/PID/environ show),
 * reached through the pointers the program will use. One GETREGS and a
 * window read or two, instead of opening and reading both /proc files.
 */
static int initial_stack(pid_t pid, struct shk_argv *argv, struct shk_argv *env)
{
	struct user_regs_struct regs;
	struct shk_memwin w;
	uint64_t argc;
	int r;

	if (ptrace(PTRACE_GETREGS, pid, 0, &regs) < 0)
		return -errno;
	/* a 32-bit image has 4-byte pointers: not supported (the filter kills
	 * its syscalls anyway), so it never starts */
	if (regs.cs != X86_64_USER_CS)
		return -ENOEXEC;
	shk_memwin_init(&w, pid);
	if ((r = shk_memwin_read(&w, regs.rsp, &argc, sizeof(argc))) < 0 ||
	    (r = shk_memwin_read_argv(&w, regs.rsp + 8, argv)) < 0)
		return r;
	if (argc != argv->n)
		return -EINVAL;
	return shk_memwin_read_argv(&w, regs.rsp + 8 * (argc + 2), env);
}

/* The judged variables of an environment are exactly the judged ones. An
 * environment identical to the one judged has them (the pick is a function
 * of the bytes): only a changed one is picked again. */
static bool env_matches(const struct shk_argv *env, const struct shk_exec_approval *ap)
{
	const char *judged = ap->cmdline + ap->cmdline_len;
	/* one more than judged: any extra variable makes the pick fail */
	_cleanup_free_ char *got = NULL;
	size_t n = 0;

	if (env->len == ap->env_len &&
	    (env->len == 0 || memcmp(env->buf, judged + ap->loader_env_len, env->len) == 0))
		return true;
	got = malloc(ap->loader_env_len + 1);
	return got && pick_loader_env(env->buf, env->len, got, ap->loader_env_len + 1, &n) == 0 &&
	       n == ap->loader_env_len && memcmp(got, judged, n) == 0;
}

/* The argv is the approved one, byte for byte, and the judged variables of
 * the environment are the judged ones (another thread may have rewritten
 * argv or envp after our read). */
static bool stack_matches(pid_t pid, const struct shk_exec_approval *ap)
{
	struct shk_argv argv = { 0 }, env = { 0 };
	bool ok = initial_stack(pid, &argv, &env) == 0 && argv.len == ap->cmdline_len &&
	          memcmp(argv.buf, ap->cmdline, argv.len) == 0 && env_matches(&env, ap);

	shk_argv_free(&argv);
	shk_argv_free(&env);
	return ok;
}

/* The process starts in the working directory that was judged (keep_cwd). */
static bool same_cwd(pid_t pid, const struct shk_exec_approval *ap)
{
	struct stat st;

	return proc_stat(pid, "cwd", &st) == 0 && st.st_dev == ap->cwd_dev && st.st_ino == ap->cwd_ino;
}

/*
 * A script run through a descriptor is read by its interpreter from
 * /dev/fd/N: fd N of the new image must be the script that was judged.
 * Another thread sharing the fd table could dup2() a denied script onto N
 * after the judgement; exec gives the new image a table of its own, which
 * nobody but the image itself can change, and it has not run yet.
 */
static bool same_script_fd(pid_t pid, const struct shk_exec_approval *ap)
{
	char what[32];
	struct stat st;

	if (!ap->script_via_fd)
		return true;
	snprintf(what, sizeof(what), "fd/%d", ap->script_fd);
	return proc_stat(pid, what, &st) == 0 && st.st_dev == ap->script_dev &&
	       st.st_ino == ap->script_ino;
}

/* At PTRACE_EVENT_EXEC: pid is the thread group leader now, former_tid the
 * thread that called exec. Returns 0 when it is what was approved. */
int shk_exec_verify(struct shk_sup *s, pid_t pid, pid_t former_tid)
{
	struct shk_exec_approval *ap = NULL;
	struct stat st;
	int watch = 0;
	bool ok;

	for (size_t i = 0; i < s->ex.nappr; i++)
		if (s->ex.appr[i].tid == former_tid)
			ap = &s->ex.appr[i];
	if (!ap)
		return -EPERM;
	ok = proc_stat(pid, "exe", &st) == 0 && st.st_dev == ap->dev && st.st_ino == ap->ino &&
	     same_cwd(pid, ap) && same_script_fd(pid, ap) && stack_matches(pid, ap);
	if (ok && (watch = shk_openwatch_add(s, pid, ap)) < 0)
		watch = -EPERM;
	if (ok && ap->script)
		ap->nbind ? s->stats.script_watched++ : s->stats.script_unwatched++;
	if (ok && ap->userland)
		ap->userland_bound ? s->stats.loader_watched++ : s->stats.loader_unwatched++;
	if (ok && watch >= 0)
		/* the pidfd is of the judged caller's process: this one, unless
		 * pids differ (then opened now: the image is stopped) */
		shk_toolproc_add(s, pid, ap->tool_call, ap->pid == pid ? shk_take_fd(&ap->pidfd) : -1);
	shk_exec_forget(s, former_tid);
	return !ok ? -EPERM : watch;
}
