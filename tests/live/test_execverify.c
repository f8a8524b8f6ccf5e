/* SPDX-License-Identifier: MIT */
/*
 * Live test of shackle-run's exec check in the kernel (bpf/execverify.bpf.c
 * via src/ebpf/execverify.c), without seccomp in the way: a child in a fresh
 * cgroup leaf execs on command; this process plays the supervisor and arms
 * the approval first. An approval that differs from what the child then
 * execs is exactly what the program sees when another thread changed the
 * path, argv, environment or working directory after the supervisor read
 * them: the child must die by SIGKILL before the image runs (the image
 * would write a file).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf/execv_offsets.h"
#include "ebpf/execverify.h"
#include "ebpf/netverify.h"
#include "execv.h"
#include "testutil.h"
#include "checkrun.h"

static char cg[4096], mark[128];
static struct shk_execverify *ev;

struct evrec {
	uint64_t cookie;
	pid_t tid, pid;
	unsigned why;
};
static struct evrec evs[16];
static int nevs;

static void on_ev(void *ctx, uint64_t cookie, pid_t tid, pid_t pid, unsigned why)
{
	(void)ctx;
	if (nevs < 16)
		evs[nevs++] = (struct evrec){ cookie, tid, pid, why };
}

/* What the child execs: /bin/sh -c 'echo ran > MARK' with env A=1 B=2. */
struct job {
	const char *path, *cwd;
	const char *argv[5], *env[3];
	bool in_cgroup, from_thread;
};

static void job_default(struct job *j)
{
	static char script[256];

	snprintf(script, sizeof(script), "echo ran > %s", mark);
	*j = (struct job){ .path = "/bin/sh", .cwd = "/", .argv = { "sh", "-c", script, NULL },
	                   .env = { "A=1", "B=2", NULL }, .in_cgroup = true };
}

static size_t strings(const char *const *v, char *buf)
{
	size_t n = 0;

	for (; *v; v++) {
		memcpy(buf + n, *v, strlen(*v) + 1);
		n += strlen(*v) + 1;
	}
	return n;
}

/* The approval of what j execs, as the supervisor would judge it. */
static void want_of(const struct job *j, struct shk_execverify_want *w, char *abuf, char *ebuf)
{
	struct stat st, cw;

	ck_assert_int_eq(stat(j->path, &st), 0);
	ck_assert_int_eq(stat(j->cwd, &cw), 0);
	*w = (struct shk_execverify_want){ .cookie = 77, .dev = st.st_dev, .ino = st.st_ino,
	                                   .cwd_dev = cw.st_dev, .cwd_ino = cw.st_ino,
	                                   .argv = abuf, .env = ebuf };
	w->argv_len = strings(j->argv, abuf);
	w->env_len = strings(j->env, ebuf);
}

static void (*disarm_hook)(pid_t tid, const struct shk_execverify_want *w);
static int go_fd = -1;
static const struct job *cur;

static void *exec_thread(void *arg)
{
	int *tidpipe = arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	char c;

	if (write(tidpipe[1], &tid, sizeof(tid)) != sizeof(tid) || read(go_fd, &c, 1) != 1)
		_exit(3);
	execve(cur->path, (char *const *)cur->argv, (char *const *)cur->env);
	_exit(4);
}

/* Fork the child (in the leaf, in j->cwd), learn the tid that will exec,
 * arm w for it, let it exec; its wait status. */
static int run(const struct job *j, const struct shk_execverify_want *w)
{
	int go[2], tp[2], st = 0;
	pid_t pid, tid;
	char c = 'g';

	unlink(mark);
	ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
	ck_assert_int_eq(pipe2(tp, O_CLOEXEC), 0);
	cur = j;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pthread_t t;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		go_fd = go[0];
		if (read(go[0], &c, 1) != 1 || chdir(j->cwd) < 0) /* in the leaf now */
			_exit(2);
		if (j->from_thread) {
			if (pthread_create(&t, NULL, exec_thread, tp) != 0)
				_exit(5);
			pause();
		}
		tid = (pid_t)syscall(SYS_gettid);
		if (write(tp[1], &tid, sizeof(tid)) != sizeof(tid) || read(go[0], &c, 1) != 1)
			_exit(3);
		execve(j->path, (char *const *)j->argv, (char *const *)j->env);
		_exit(4);
	}
	close(go[0]);
	close(tp[1]);
	if (j->in_cgroup)
		ck_assert_int_eq(shk_cgroup_enter(cg, pid), 0);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	ck_assert_int_eq(read(tp[0], &tid, sizeof(tid)), sizeof(tid));
	if (w && disarm_hook)
		disarm_hook(tid, w);
	else if (w)
		ck_assert_int_eq(shk_execverify_arm(ev, tid, w), 0);
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	close(go[1]);
	close(tp[0]);
	nevs = 0;
	ck_assert_int_ge(shk_execverify_drain(ev, on_ev, NULL), 0);
	if (w && j->in_cgroup && !disarm_hook) {
		ck_assert_int_eq(nevs, 1);
		ck_assert_int_eq(evs[0].tid, tid);
		ck_assert_int_eq(evs[0].pid, pid);
		ck_assert(evs[0].cookie == 77);
	} else {
		ck_assert_int_eq(nevs, 0);
	}
	return st;
}

static bool ran(void)
{
	return access(mark, F_OK) == 0;
}

static void killed(int st, unsigned why)
{
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	ck_assert_msg(!ran(), "the image ran");
	ck_assert_msg(evs[0].why == why, "why %#x, expected %#x", evs[0].why, why);
}

static void passed(int st)
{
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	ck_assert(ran());
}

START_TEST(exact_exec_runs)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256];

	job_default(&j);
	want_of(&j, &w, a, e);
	passed(run(&j, &w));
	ck_assert_int_eq(evs[0].why, 0);
}
END_TEST

START_TEST(from_a_thread)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256];

	job_default(&j);
	j.from_thread = true;
	want_of(&j, &w, a, e);
	passed(run(&j, &w));
	ck_assert_int_eq(evs[0].why, 0);
	ck_assert_int_ne(evs[0].tid, evs[0].pid); /* keyed by the caller, not its pid */
	/* the same, changed: the thread's approval is the one checked */
	j.argv[0] = "sx";
	killed(run(&j, &w), SHK_EXECV_STRINGS);
}
END_TEST

START_TEST(changed_image_killed)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256];

	job_default(&j);
	want_of(&j, &w, a, e);
	j.path = "/bin/dash"; /* the same sh on Debian, another inode than bash */
	{
		struct stat x, y;
		ck_assert_int_eq(stat("/bin/sh", &x), 0);
		if (stat("/bin/dash", &y) < 0 || x.st_ino == y.st_ino)
			j.path = "/bin/bash";
	}
	killed(run(&j, &w), SHK_EXECV_EXE);
}
END_TEST

START_TEST(changed_strings_killed)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256], mid[256];

	job_default(&j);
	want_of(&j, &w, a, e);
	j.argv[1] = "-x"; /* same length */
	killed(run(&j, &w), SHK_EXECV_STRINGS);
	job_default(&j);
	j.argv[3] = "extra";
	j.argv[4] = NULL;
	killed(run(&j, &w), SHK_EXECV_ARGV);
	job_default(&j);
	j.env[1] = "B=3";
	killed(run(&j, &w), SHK_EXECV_STRINGS);
	job_default(&j);
	j.env[1] = NULL;
	killed(run(&j, &w), SHK_EXECV_ENV);
	/* a byte in a middle word (not the first, not the last) */
	job_default(&j);
	snprintf(mid, sizeof(mid), "%s", j.argv[2]);
	ck_assert_int_gt(strlen(mid), 24);
	mid[20] = mid[20] == 'x' ? 'y' : 'x';
	j.argv[2] = mid;
	killed(run(&j, &w), SHK_EXECV_STRINGS);
}
END_TEST

START_TEST(changed_cwd_killed)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256];

	job_default(&j);
	want_of(&j, &w, a, e);
	j.cwd = "/tmp";
	killed(run(&j, &w), SHK_EXECV_CWD);
}
END_TEST

START_TEST(unarmed_and_outside_untouched)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256];

	job_default(&j);
	passed(run(&j, NULL));
	/* an approval that does not match, for a tid outside the leaf: the
	 * number may be a stranger's reuse of it, never ours to kill */
	want_of(&j, &w, a, e);
	j.in_cgroup = false;
	w.ino++;
	passed(run(&j, &w));
}
END_TEST

/* An approval whose exec the kernel failed is dropped before the thread's
 * next exec: that exec is not checked against it. */
static void disarm_after_arm(pid_t tid, const struct shk_execverify_want *w)
{
	ck_assert_int_eq(shk_execverify_arm(ev, tid, w), 0);
	ck_assert_int_eq(shk_execverify_disarm(ev, tid), 0);
	ck_assert_int_eq(shk_execverify_disarm(ev, tid), 0); /* already gone: fine */
}

START_TEST(disarmed_is_gone)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256];

	job_default(&j);
	want_of(&j, &w, a, e);
	w.ino++; /* would kill */
	disarm_hook = disarm_after_arm;
	passed(run(&j, &w));
	disarm_hook = NULL;
}
END_TEST

START_TEST(single_use)
{
	struct job j;
	struct shk_execverify_want w;
	char a[256], e[256], script[300];

	/* sh execs a second image in the same thread: the approval was the
	 * first one's; the second is not checked (its own notification arms
	 * its own approval in shackle-run) */
	job_default(&j);
	snprintf(script, sizeof(script), "exec /bin/sh -c 'echo ran > %s'", mark);
	j.argv[2] = script;
	want_of(&j, &w, a, e);
	passed(run(&j, &w));
	ck_assert_int_eq(evs[0].why, 0);
}
END_TEST

START_TEST(too_long_refused)
{
	char big[SHK_EXECV_BYTES];
	struct shk_execverify_want w = { .argv = big, .argv_len = SHK_EXECV_BYTES - 8,
	                                 .env = big, .env_len = 8 };

	memset(big, 'a', sizeof(big));
	ck_assert(!shk_execverify_fits(w.argv_len, w.env_len));
	ck_assert(shk_execverify_fits(w.argv_len, w.env_len - 1));
	ck_assert_int_eq(shk_execverify_arm(ev, 1, &w), -E2BIG);
}
END_TEST

/* The per-boot file of offsets: used only when it is this boot's and
 * nobody else's; anything else is parsed again (and rewritten). */
static char odir[64], ofile[96];

static void odir_make(void)
{
	snprintf(odir, sizeof(odir), "/tmp/shk-xoff-%d", (int)getpid());
	snprintf(ofile, sizeof(ofile), "%s/execv-offsets", odir);
	ck_assert_int_eq(mkdir(odir, 0700), 0);
}

static void odir_drop(void)
{
	unlink(ofile);
	rmdir(odir);
}

static bool got_cached(struct shk_execv_offsets *o)
{
	bool cached = true;

	ck_assert_int_eq(shk_execv_offsets_get(odir, o, &cached), 0);
	return cached;
}

START_TEST(offsets_kept_for_the_boot)
{
	struct shk_execv_offsets parsed, o;
	struct stat st;

	odir_make();
	ck_assert_int_eq(shk_execv_offsets_parse(&parsed), 0);
	ck_assert(!got_cached(&o));
	ck_assert_mem_eq(&o, &parsed, sizeof(o));
	ck_assert_int_eq(stat(ofile, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	memset(&o, 0, sizeof(o));
	ck_assert(got_cached(&o));
	ck_assert_mem_eq(&o, &parsed, sizeof(o));
	/* NULL: no file at all */
	ck_assert_int_eq(shk_execv_offsets_get(NULL, &o, &(bool){ true }), 0);
	odir_drop();
}
END_TEST

/* Patch the file's bytes at off (the record: magic, boot id, size, offsets). */
static void patch(off_t off, const void *b, size_t n)
{
	int fd = open(ofile, O_WRONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, b, n, off), (ssize_t)n);
	close(fd);
}

START_TEST(offsets_of_another_boot_or_owner_ignored)
{
	struct shk_execv_offsets parsed, o;
	int fd;

	odir_make();
	ck_assert_int_eq(shk_execv_offsets_parse(&parsed), 0);
	ck_assert(!got_cached(&o));
	/* another boot's id: parsed again, and this boot's written back */
	patch(8, "00000000", 8);
	ck_assert(!got_cached(&o));
	ck_assert_mem_eq(&o, &parsed, sizeof(o));
	ck_assert(got_cached(&o));
	/* other magic, a torn record, a file others may write, a symlink,
	 * a directory others may enter: never read */
	patch(0, "X", 1);
	ck_assert(!got_cached(&o));
	ck_assert(got_cached(&o));
	ck_assert_int_eq(truncate(ofile, 20), 0);
	ck_assert(!got_cached(&o));
	ck_assert(got_cached(&o));
	ck_assert_int_eq(chmod(ofile, 0622), 0);
	ck_assert(!got_cached(&o));
	ck_assert(got_cached(&o));
	ck_assert_int_eq(rename(ofile, "/tmp/shk-xoff-real"), 0);
	ck_assert_int_eq(symlink("/tmp/shk-xoff-real", ofile), 0);
	ck_assert(!got_cached(&o));
	ck_assert(got_cached(&o));
	unlink("/tmp/shk-xoff-real");
	ck_assert_int_eq(chmod(odir, 0755), 0);
	ck_assert(!got_cached(&o));
	ck_assert(!got_cached(&o));
	ck_assert_mem_eq(&o, &parsed, sizeof(o));
	/* bytes as good as the kernel's, in a file others wrote: never read */
	ck_assert_int_eq(chmod(odir, 0700), 0);
	ck_assert(got_cached(&o));
	fd = open(ofile, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchown(fd, 65534, 65534), 0);
	close(fd);
	ck_assert(!got_cached(&o));
	ck_assert(got_cached(&o));
	odir_drop();
}
END_TEST

static void setup(void)
{
	char own[1024];
	int dfd, r;

	ck_assert_int_eq(shk_cgroup2_self(own, sizeof(own)), 0);
	snprintf(cg, sizeof(cg), "%s/shk-execverify-%d", own, (int)getpid());
	ck_assert_msg(mkdir(cg, 0755) == 0, "mkdir %s: %s", cg, strerror(errno));
	snprintf(mark, sizeof(mark), "/tmp/shk-execverify-%d.ran", (int)getpid());
	dfd = open(cg, O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	r = shk_execverify_open(dfd, &ev);
	close(dfd);
	ck_assert_msg(r == 0, "execverify open: %s", strerror(-r));
}

static void teardown(void)
{
	shk_execverify_free(ev);
	ev = NULL;
	if (cg[0])
		rmdir(cg);
	unlink(mark);
}

int main(void)
{
	Suite *s = suite_create("execverify");
	TCase *tc = tcase_create("live");
	char why[256], own[1024];

	shk_test_require_root();
	if (shk_netverify_usable(why, sizeof(why)) < 0)
		shk_test_skip("the exec check needs global thread ids: %s", why);
	if (shk_cgroup2_self(own, sizeof(own)) < 0)
		shk_test_skip("no cgroup v2");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, exact_exec_runs);
	tcase_add_test(tc, from_a_thread);
	tcase_add_test(tc, changed_image_killed);
	tcase_add_test(tc, changed_strings_killed);
	tcase_add_test(tc, changed_cwd_killed);
	tcase_add_test(tc, unarmed_and_outside_untouched);
	tcase_add_test(tc, single_use);
	tcase_add_test(tc, disarmed_is_gone);
	tcase_add_test(tc, too_long_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("offsets");
	tcase_add_test(tc, offsets_kept_for_the_boot);
	tcase_add_test(tc, offsets_of_another_boot_or_owner_ignored);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
