/* SPDX-License-Identifier: MIT */
/*
 * shk-exec: run one binary under one of its many names. A policy that judges
 * the name instead of the file the kernel loads is bypassed by one of these.
 *
 *   shk-exec MODE BINARY MARK [TMPDIR]
 *
 * The exec'd program gets argv {basename(BINARY), MARK}: with BINARY =
 * /usr/bin/touch a successful exec creates MARK, which is the evidence the
 * scenario checks. When the exec fails the helper prints "<ERRNAME>" and
 * exits 0 (with SHK_EXEC_BYTES set in its environment it also writes
 * "shk-exec: <ERRNAME>" to stderr, a byte a write); when it succeeds nothing
 * is printed by the helper (the new image runs).
 *
 * MODE:
 *   plain          execve(BINARY)
 *   relative       chdir(dirname), execve("./name")
 *   dotdot         execve("<dir>/../<lastdir>/<name>")
 *   dslash         execve("//<path with every / doubled>")
 *   proc-root      execve("/proc/self/root<BINARY>")
 *   symlink        symlink TMPDIR/alias -> BINARY, execve(alias)
 *   symlink-dir    symlink TMPDIR/d -> dirname(BINARY), execve(TMPDIR/d/name)
 *   hardlink       link BINARY to TMPDIR/hl (same filesystem), execve(hl)
 *   copy           copy BINARY to TMPDIR/cp, execve(cp) (content, new inode)
 *   execveat       execveat(open(dirname), name, 0)
 *   empty-path     execveat(open(BINARY, O_RDONLY), "", AT_EMPTY_PATH)
 *   opath          execveat(open(BINARY, O_PATH), "", AT_EMPTY_PATH)
 *   proc-fd        execve("/proc/self/fd/N") of an fd open on BINARY
 *   memfd          copy BINARY into a memfd, fexecve
 *   shebang        write TMPDIR/script with "#!BINARY MARK", execve(script)
 *   shebang-chain  script whose interpreter is a second script whose
 *                  interpreter is BINARY
 *   ldso           execve(ld-linux-x86-64.so.2, {ld.so, BINARY, MARK})
 */
#include <fcntl.h>
#include <libgen.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hlp.h"

#define LDSO "/lib64/ld-linux-x86-64.so.2"

static char *av[4];
static char *const envp[] = { "PATH=/usr/bin:/bin", NULL };

static void fail(void)
{
	const char *e = hlp_errname(errno);
	char line[64];
	int n;

	printf("%s\n", e);
	/* with SHK_EXEC_BYTES set, also "shk-exec: ERRNAME" on stderr a byte a
	 * write, at once: anything else written there meanwhile splits it */
	if (getenv("SHK_EXEC_BYTES")) {
		n = snprintf(line, sizeof(line), "shk-exec: %s\n", e);
		for (int i = 0; i < n; i++)
			if (write(2, line + i, 1) != 1)
				break;
	}
	exit(0);
}

static char *xdirname(const char *p)
{
	char *c = strdup(p);

	return c ? dirname(c) : NULL;
}

static char *xbasename(const char *p)
{
	char *c = strdup(p);

	return c ? basename(c) : NULL;
}

static void copy_fd(const char *from, int to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (in < 0)
		hlp_die("open %s: %s", from, hlp_errname(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(to, buf, (size_t)n) != n)
			hlp_die("write: %s", hlp_errname(errno));
	close(in);
}

static void write_script(const char *path, const char *interp, const char *arg)
{
	FILE *f = fopen(path, "w");

	if (!f)
		hlp_die("fopen %s: %s", path, hlp_errname(errno));
	fprintf(f, "#!%s%s%s\nexit 0\n", interp, arg ? " " : "", arg ? arg : "");
	fclose(f);
	chmod(path, 0755);
}

static char *join(const char *a, const char *b)
{
	char *r = NULL;

	if (asprintf(&r, "%s/%s", a, b) < 0)
		hlp_die("oom");
	return r;
}

static void exec_at(int dirfd, const char *name, int flags)
{
	syscall(SYS_execveat, dirfd, name, av, envp, flags);
	fail();
}

static void run(const char *mode, const char *bin, const char *mark, const char *tmp)
{
	char *dir = xdirname(bin), *name = xbasename(bin);
	char buf[4096];
	int fd;

	if (!strcmp(mode, "plain")) {
		execve(bin, av, envp);
	} else if (!strcmp(mode, "relative")) {
		if (chdir(dir) < 0)
			hlp_die("chdir: %s", hlp_errname(errno));
		snprintf(buf, sizeof(buf), "./%s", name);
		execve(buf, av, envp);
	} else if (!strcmp(mode, "dotdot")) {
		snprintf(buf, sizeof(buf), "%s/../%s/%s", dir, xbasename(dir), name);
		execve(buf, av, envp);
	} else if (!strcmp(mode, "dslash")) {
		size_t o = 0;

		for (const char *p = bin; *p && o + 3 < sizeof(buf); p++) {
			buf[o++] = *p;
			if (*p == '/')
				buf[o++] = '/';
		}
		buf[o] = 0;
		execve(buf, av, envp);
	} else if (!strcmp(mode, "proc-root")) {
		snprintf(buf, sizeof(buf), "/proc/self/root%s", bin);
		execve(buf, av, envp);
	} else if (!strcmp(mode, "symlink") || !strcmp(mode, "symlink-dir")) {
		int d = !strcmp(mode, "symlink-dir");
		char *l = join(tmp, d ? "d" : "alias");

		if (symlink(d ? dir : bin, l) < 0)
			hlp_die("symlink: %s", hlp_errname(errno));
		execve(d ? join(l, name) : l, av, envp);
	} else if (!strcmp(mode, "hardlink")) {
		char *l = join(tmp, "hl");

		if (link(bin, l) < 0) {
			printf("SKIP link: %s\n", hlp_errname(errno));
			exit(0);
		}
		execve(l, av, envp);
	} else if (!strcmp(mode, "copy")) {
		char *l = join(tmp, "cp");

		fd = open(l, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
		if (fd < 0)
			hlp_die("open %s: %s", l, hlp_errname(errno));
		copy_fd(bin, fd);
		close(fd);
		execve(l, av, envp);
	} else if (!strcmp(mode, "execveat")) {
		fd = open(dir, O_RDONLY | O_DIRECTORY);
		if (fd < 0)
			hlp_die("open %s: %s", dir, hlp_errname(errno));
		exec_at(fd, name, 0);
	} else if (!strcmp(mode, "empty-path") || !strcmp(mode, "opath")) {
		fd = open(bin, !strcmp(mode, "opath") ? O_PATH : O_RDONLY);
		if (fd < 0)
			hlp_die("open %s: %s", bin, hlp_errname(errno));
		exec_at(fd, "", AT_EMPTY_PATH);
	} else if (!strcmp(mode, "proc-fd")) {
		fd = open(bin, O_RDONLY);
		if (fd < 0)
			hlp_die("open %s: %s", bin, hlp_errname(errno));
		snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
		execve(buf, av, envp);
	} else if (!strcmp(mode, "memfd")) {
		fd = memfd_create("innocent", 0);
		if (fd < 0)
			hlp_die("memfd_create: %s", hlp_errname(errno));
		copy_fd(bin, fd);
		fexecve(fd, av, envp);
	} else if (!strcmp(mode, "shebang")) {
		char *s = join(tmp, "script");

		write_script(s, bin, mark);
		execve(s, av, envp);
	} else if (!strcmp(mode, "shebang-chain")) {
		char *s1 = join(tmp, "outer"), *s2 = join(tmp, "inner");

		/* binfmt_script recurses: a script may be an interpreter. */
		write_script(s2, bin, mark);
		write_script(s1, s2, NULL);
		execve(s1, av, envp);
	} else if (!strcmp(mode, "ldso")) {
		char *const la[] = { LDSO, (char *)bin, (char *)mark, NULL };

		execve(LDSO, la, envp);
	} else {
		fprintf(stderr, "shk-exec: unknown mode '%s'\n", mode);
		exit(HLP_USAGE);
	}
	fail();
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: shk-exec MODE BINARY MARK [TMPDIR]\n");
		return HLP_USAGE;
	}
	av[0] = xbasename(argv[2]);
	av[1] = argv[3];
	av[2] = NULL;
	run(argv[1], argv[2], argv[3], argc == 5 ? argv[4] : "/tmp");
	return 0;
}
