/* SPDX-License-Identifier: MIT */
/*
 * The SDK socket's file (src/sdk/server.c listen_on): born 0600, given to
 * the agent's user, and never a path followed once it was checked. With
 * --sdk-socket in a directory someone else may write to, that someone can
 * swap the path for a symlink between the check and what follows it; the
 * test seam shk_sdk_after_check_hook does the swap at exactly that point,
 * and what the symlink names must stay as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "sdk/internal.h"
#include "sdk_judge.h"
#include "checkrun.h"
#include "testutil.h"

static char dir[256], sock[300], moved[300], victim[300];
static bool swap_armed;

void shk_sdk_after_check_hook(const char *path)
{
	if (!swap_armed || strcmp(path, sock) != 0)
		return;
	swap_armed = false;
	ck_assert_int_eq(rename(sock, moved), 0);
	ck_assert_int_eq(symlink(victim, sock), 0);
}

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(dir, sizeof(dir), "%s/sdk-listen-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(moved, sizeof(moved), "%s/moved", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	fd = open(victim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0644), 0);
	close(fd);
}

static void teardown(void)
{
	unlink(sock);
	unlink(moved);
	unlink(victim);
	rmdir(dir);
}

/* As root the socket goes to nobody, as shackle-run gives it to the agent;
 * otherwise to ourselves, which chown allows without privilege. */
static void owner(uid_t *uid, gid_t *gid)
{
	*uid = geteuid() == 0 ? 65534 : getuid();
	*gid = geteuid() == 0 ? 65534 : getgid();
}

static struct shk_sdk *start(struct sdk_judge *j, struct shk_sdk_config *cfg)
{
	shk_guard_config g = sdk_judge_guard();
	struct shk_source_judge iface;
	struct shk_sdk *sdk = NULL;

	ck_assert_int_eq(sdk_judge_init(j, &g), 0);
	iface = sdk_judge_iface(j);
	cfg->socket_path = sock;
	cfg->set_owner = true;
	owner(&cfg->uid, &cfg->gid);
	ck_assert_int_eq(shk_sdk_start(cfg, &iface, &sdk), 0);
	return sdk;
}

START_TEST(test_born_private)
{
	struct shk_sdk_config cfg = { .max_conns = 1 };
	struct sdk_judge j;
	struct shk_sdk *sdk;
	mode_t old = umask(0);
	struct stat st;

	sdk = start(&j, &cfg);
	umask(old);
	ck_assert_int_eq(lstat(sock, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(st.st_uid, cfg.uid);
	ck_assert_int_eq(st.st_gid, cfg.gid);
	/* the umask is the process's again */
	ck_assert_int_eq(umask(old), old);
	shk_sdk_stop(sdk);
	sdk_judge_free(&j);
}
END_TEST

START_TEST(test_swapped_path_not_followed)
{
	struct shk_sdk_config cfg = { .max_conns = 1 };
	struct sdk_judge j;
	struct shk_sdk *sdk;
	struct stat before, st;

	ck_assert_int_eq(stat(victim, &before), 0);
	swap_armed = true;
	sdk = start(&j, &cfg);
	ck_assert_msg(!swap_armed, "the test seam was never called");
	ck_assert_int_eq(stat(victim, &st), 0);
	ck_assert_msg((st.st_mode & 07777) == 0644, "the symlink's target got mode %o",
		      st.st_mode & 07777);
	ck_assert_msg(st.st_uid == before.st_uid && st.st_gid == before.st_gid,
		      "the symlink's target got owner %u:%u", (unsigned)st.st_uid, (unsigned)st.st_gid);
	/* what was checked is what got the owner: the socket, wherever it is now */
	ck_assert_int_eq(lstat(moved, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(st.st_uid, cfg.uid);
	shk_sdk_stop(sdk);
	sdk_judge_free(&j);
	/* stop removed the name it was given (the symlink), not the victim */
	ck_assert_int_eq(lstat(sock, &st), -1);
	ck_assert_int_eq(stat(victim, &st), 0);
}
END_TEST

/* The server's threads leave the process's signals to the supervisor's loop
 * thread (a SIGCHLD one of them took would wait for the loop's next tick). */
START_TEST(test_threads_block_signals)
{
	struct shk_sdk_config cfg = { .max_conns = 1 };
	struct sdk_judge j;
	struct shk_sdk *sdk;
	struct dirent *e;
	char self[32];
	int others = 0;
	DIR *d;

	sdk = start(&j, &cfg);
	snprintf(self, sizeof(self), "%ld", (long)gettid());
	ck_assert_ptr_nonnull(d = opendir("/proc/self/task"));
	while ((e = readdir(d))) {
		char p[300], line[256];
		unsigned long long blk = 0;
		FILE *f;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, self))
			continue;
		snprintf(p, sizeof(p), "/proc/self/task/%s/status", e->d_name);
		ck_assert_ptr_nonnull(f = fopen(p, "re"));
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "SigBlk: %llx", &blk) == 1)
				break;
		fclose(f);
		ck_assert_msg(blk & (1ULL << (SIGCHLD - 1)), "thread %s does not block SIGCHLD (SigBlk %llx)",
		              e->d_name, blk);
		others++;
	}
	closedir(d);
	ck_assert_int_gt(others, 0);
	shk_sdk_stop(sdk);
	sdk_judge_free(&j);
}
END_TEST

static Suite *listen_suite(void)
{
	Suite *s = suite_create("sdk_listen");
	TCase *tc = tcase_create("sdk_listen");

	/* in the parent: a failed test leaves nothing behind */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_born_private);
	tcase_add_test(tc, test_swapped_path_not_followed);
	tcase_add_test(tc, test_threads_block_signals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(listen_suite());
}
