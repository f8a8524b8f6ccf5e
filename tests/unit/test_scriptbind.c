/* SPDX-License-Identifier: MIT */
/*
 * Which "#!" script names are watched (src/supervise/scriptbind.c): a name
 * resolved only through directories the agent (uid 65534 here) cannot
 * change is not; one through a directory it owns or may write, a symlink
 * of its own in a sticky directory, "..", procfs, or a relative name from a
 * working directory in reach is; a script it may rewrite itself is not; a
 * canonicalising interpreter with a watched name is refused. And the
 * lexical normal form the watch compares names in. The directory cases
 * need root (files of another user); without it only the normal form runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "supervise/internal.h"
#include "checkrun.h"

#define AGENT 65534

static struct shk_sup s;
static struct shk_sup_config cfg = { .run_uid = AGENT, .run_gid = AGENT };
static char base[64];

static void mkfile(const char *rel, mode_t mode, uid_t uid)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	ck_assert_int_eq(chmod(p, mode), 0);
	ck_assert_int_eq(chown(p, uid, uid), 0);
}

static void mkdir_as(const char *rel, mode_t mode, uid_t uid)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	ck_assert_int_eq(mkdir(p, mode), 0);
	ck_assert_int_eq(chmod(p, mode), 0);
	ck_assert_int_eq(chown(p, uid, uid), 0);
}

/* a symlink rel -> base/target */
static void link_as(const char *target, const char *rel, uid_t uid)
{
	char p[256], t[256];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	snprintf(t, sizeof(t), "%s/%s", base, target);
	ck_assert_int_eq(symlink(t, p), 0);
	ck_assert_int_eq(lchown(p, uid, uid), 0);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static void untree(void)
{
	if (base[0])
		nftw(base, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void tree(void)
{
	snprintf(base, sizeof(base), "/tmp/shk-scriptbind.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	ck_assert_int_eq(chmod(base, 0755), 0); /* root's, in sticky /tmp */
	mkdir_as("safe", 0755, 0);
	mkdir_as("open", 0777, 0);
	mkdir_as("sticky", 01777, 0);
	mkdir_as("owned", 0755, AGENT);
	mkfile("safe/ok.sh", 0755, 0);
	mkfile("open/ok.sh", 0755, 0);
	mkfile("open/mine.sh", 0755, AGENT);
	mkfile("sticky/ok.sh", 0755, 0);
	mkfile("owned/ok.sh", 0755, 0);
}

/* the working directory judged, when another than cwd (below base) */
static const char *judged_cwd;

/* shk_script_bind for one "#!" exec of name (its file: script, relative
 * to base), run by opener, the agent's cwd being cwd: binds or -errno. */
static int binds(const char *name, const char *script, const char *opener, const char *cwd)
{
	struct shk_obs_exec *x = &s.obs.exec;
	struct shk_exec_approval ap = { 0 };
	char p[256], n[256];
	struct stat st;
	int r;

	memset(&s.obs, 0, sizeof(s.obs));
	s.cfg = &cfg;
	s.drop_creds = true;
	snprintf(p, sizeof(p), "%s/%s", base, script);
	x->file.fd = open(p, O_PATH | O_CLOEXEC);
	ck_assert_int_ge(x->file.fd, 0);
	ck_assert_int_eq(fstat(x->file.fd, &st), 0);
	x->file.dev = st.st_dev;
	x->file.ino = st.st_ino;
	x->file.uid = st.st_uid;
	x->file.mode = st.st_mode;
	snprintf(x->file.path, sizeof(x->file.path), "%s", p);
	x->interp[0].fd = open("/bin/sh", O_PATH | O_CLOEXEC);
	snprintf(x->interp[0].path, sizeof(x->interp[0].path), "%s", opener);
	x->ninterp = 1;
	snprintf(x->cwd, sizeof(x->cwd), "%s/%s", base, cwd);
	ck_assert_int_eq(chdir(x->cwd), 0);
	snprintf(p, sizeof(p), "%s/%s", base, judged_cwd ? judged_cwd : cwd);
	ck_assert_int_eq(stat(p, &st), 0);
	ap.cwd_dev = st.st_dev; /* as keep_cwd records it */
	ap.cwd_ino = st.st_ino;
	ap.cmdline = strdup("sh");
	ap.cmdline_len = 3;
	snprintf(n, sizeof(n), name[0] == '@' ? "%s/%s" : "%.0s%s", base, name + (name[0] == '@'));
	r = shk_script_bind(&s, getpid(), n, &ap);
	close(x->file.fd);
	close(x->interp[0].fd);
	free(ap.cmdline);
	return r < 0 ? r : ap.nbind;
}

START_TEST(out_of_reach_not_watched)
{
	tree();
	ck_assert_int_eq(binds("@safe/ok.sh", "safe/ok.sh", "/usr/bin/dash", "."), 0);
	/* sticky: root's entry cannot be renamed by the agent */
	ck_assert_int_eq(binds("@sticky/ok.sh", "sticky/ok.sh", "/usr/bin/dash", "."), 0);
	/* a symlink of root's in root's directory to a file in root's */
	link_as("safe/ok.sh", "safe/alias", 0);
	ck_assert_int_eq(binds("@safe/alias", "safe/ok.sh", "/usr/bin/dash", "."), 0);
	/* relative, from a working directory out of reach */
	ck_assert_int_eq(binds("ok.sh", "safe/ok.sh", "/usr/bin/dash", "safe"), 0);
	ck_assert_int_eq(binds("./ok.sh", "safe/ok.sh", "/usr/bin/python3", "safe"), 0);
}
END_TEST

START_TEST(in_reach_watched)
{
	tree();
	ck_assert_int_eq(binds("@open/ok.sh", "open/ok.sh", "/usr/bin/dash", "."), 1);
	ck_assert_int_eq(binds("@owned/ok.sh", "owned/ok.sh", "/usr/bin/dash", "."), 1);
	/* the agent's own symlink in a sticky directory */
	link_as("safe/ok.sh", "sticky/link", AGENT);
	ck_assert_int_eq(binds("@sticky/link", "safe/ok.sh", "/usr/bin/dash", "."), 1);
	/* root's symlink leading through a directory in reach */
	link_as("open/ok.sh", "safe/alias", 0);
	ck_assert_int_eq(binds("@safe/alias", "open/ok.sh", "/usr/bin/dash", "."), 1);
	ck_assert_int_eq(binds("@safe/../safe/ok.sh", "safe/ok.sh", "/usr/bin/dash", "."), 1);
	/* relative: the working directory is the agent's to change */
	ck_assert_int_eq(binds("ok.sh", "open/ok.sh", "/usr/bin/dash", "open"), 1);
	ck_assert_int_eq(binds("/dev/fd/3/ok.sh", "safe/ok.sh", "/usr/bin/dash", "."), 1);
	/* the name leads elsewhere than the judged file */
	ck_assert_int_eq(binds("@safe/ok.sh", "open/ok.sh", "/usr/bin/dash", "."), 1);
	/* the working directory's path leads elsewhere than the directory
	 * judged (and verified at the exec stop) */
	judged_cwd = "open";
	ck_assert_int_eq(binds("ok.sh", "safe/ok.sh", "/usr/bin/dash", "safe"), 1);
	judged_cwd = NULL;
}
END_TEST

START_TEST(agent_rewrites_or_refused)
{
	tree();
	ck_assert_int_eq(binds("@open/mine.sh", "open/mine.sh", "/usr/bin/dash", "."), 0);
	ck_assert_int_eq(binds("@open/ok.sh", "open/ok.sh", "/usr/bin/node", "."), -EPERM);
	ck_assert_int_eq(binds("@safe/ok.sh", "safe/ok.sh", "/usr/bin/node", "."), 0);
}
END_TEST

START_TEST(normal_form)
{
	static const char *const c[][2] = {
		{ "/tmp/hs/./s.py", "/tmp/hs/s.py" }, { "a//b/../c", "a/c" }, { "../x", "../x" },
		{ "../../x/../y", "../../y" }, { "/..", "/" }, { "/a/../../b", "/b" }, { ".", "" },
		{ "./s.sh", "s.sh" }, { "a/../..", ".." }, { "//a//b//", "/a/b" }, { "a/./b/.", "a/b" },
	};
	char out[64];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		shk_script_normalise(c[i][0], out, sizeof(out));
		ck_assert_str_eq(out, c[i][1]);
	}
}
END_TEST

/* Bytes b (n of them) after pad bytes of 'x', in a file of its own. */
static int zipfile(size_t pad, const void *b, size_t n)
{
	char p[] = "/tmp/shk-zipXXXXXX";
	int fd = mkstemp(p);
	char *x = malloc(pad + n);

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(x);
	unlink(p);
	memset(x, 'x', pad);
	memcpy(x + pad, b, n);
	ck_assert_int_eq(write(fd, x, pad + n), (ssize_t)(pad + n));
	free(x);
	return fd;
}

static bool zip_of(size_t pad, const void *b, size_t n)
{
	int fd = zipfile(pad, b, n);
	bool z = shk_script_zip(fd, (int64_t)(pad + n));

	close(fd);
	return z;
}

/* An end-of-central-directory record (22 bytes) with a comment of c bytes. */
static size_t eocd(char *b, size_t c)
{
	memset(b, 0, 22 + c);
	memcpy(b, "PK\x05\x06", 4);
	b[20] = (char)(c & 0xff);
	b[21] = (char)(c >> 8);
	memset(b + 22, 'c', c);
	return 22 + c;
}

START_TEST(zip_detection)
{
	static char b[22 + 65535 + 1];

	ck_assert(!zip_of(0, "#!/bin/sh\nexit 0\n", 18));
	ck_assert(!zip_of(0, "", 0));
	ck_assert(!zip_of(0, "PK\x05\x06", 4)); /* truncated record: no zip */
	ck_assert(zip_of(10, b, eocd(b, 0)));
	ck_assert(zip_of(100000, b, eocd(b, 0)));
	ck_assert(zip_of(10, b, eocd(b, 1)));
	ck_assert(zip_of(100000, b, eocd(b, 5000)));
	ck_assert(zip_of(0, b, eocd(b, 65535)));
	/* the record at the first byte of the tail is found; one byte further out, not */
	memset(b, 'c', sizeof(b));
	memcpy(b, "PK\x05\x06", 4);
	ck_assert(zip_of(10, b, sizeof(b) - 1));
	ck_assert(!zip_of(10, b, sizeof(b)));
	/* a size past the end (the file shrank) cannot be read: watched */
	{
		int fd = zipfile(0, "#!/bin/sh\n", 10);

		ck_assert(shk_script_zip(fd, 1000));
		close(fd);
		ck_assert(shk_script_zip(-1, 1000));
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *su = suite_create("scriptbind");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, NULL, untree);
	tcase_add_test(tc, normal_form);
	tcase_add_test(tc, zip_detection);
	if (geteuid() == 0) {
		tcase_add_test(tc, out_of_reach_not_watched);
		tcase_add_test(tc, in_reach_watched);
		tcase_add_test(tc, agent_rewrites_or_refused);
	} else
		printf("# not root: the directory cases (files of uid %d) are not run\n", AGENT);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return shk_test_run(suite());
}
