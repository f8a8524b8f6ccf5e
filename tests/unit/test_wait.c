/* SPDX-License-Identifier: MIT */
/*
 * The loop's wait (src/supervise/wait.c) and a signal another thread took:
 * a process-directed signal that comes while the loop thread has ours
 * blocked goes to a thread that does not block it (here one started before
 * shk_wait_init, as the SDK socket's acceptor is); the wait that follows
 * must return at once, not sleep until the next tick or kick. And one that
 * thread's handler takes only once the wait has begun (the thread was
 * slow to run: the wait already looked and found nothing) must end it too.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "supervise/internal.h"
#include "checkrun.h"

static atomic_bool stop;
static pid_t loop_tid;

/* a library's thread: all signals let in, asleep */
static void *bystander(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		poll(NULL, 0, 10);
	return NULL;
}

/* the late kick a broken wait would sleep until: 2 s */
static void *late_kick(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200 && !atomic_load(&stop); i++)
		poll(NULL, 0, 10);
	if (!atomic_load(&stop))
		syscall(SYS_tgkill, getpid(), loop_tid, SIGCHLD);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* SIGUSR1 (forwarded to the agent) sent to the process while the loop
 * thread blocks it: the bystander takes it; the wait sees it recorded. */
static void signal_elsewhere_then(int (*wait)(void))
{
	pthread_t by, kick;
	sigset_t old;
	double t0;
	uint64_t bits;
	int r;

	atomic_store(&stop, false);
	loop_tid = (pid_t)syscall(SYS_gettid);
	ck_assert_int_eq(pthread_create(&by, NULL, bystander, NULL), 0);
	ck_assert_int_eq(shk_wait_init(&old), 0);
	ck_assert_int_eq(pthread_create(&kick, NULL, late_kick, NULL), 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	poll(NULL, 0, 50); /* delivered to the bystander by now */
	t0 = now_s();
	r = wait();
	ck_assert_int_eq(r, 0);
	ck_assert_msg(now_s() - t0 < 1.0, "the wait slept %.2f s past a recorded signal", now_s() - t0);
	bits = shk_wait_take();
	ck_assert(bits & ((uint64_t)1 << SIGUSR1));
	atomic_store(&stop, true);
	pthread_join(kick, NULL);
	pthread_join(by, NULL);
	shk_wait_restore();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static int wait_poll_none(void)
{
	return shk_wait_poll(NULL, 0);
}

/* the bystander's handler runs 100 ms into the wait: SIGCHLD sent to that
 * thread itself (as the kernel would have routed it there earlier) */
static pid_t by_tid;

static void *slow_bystander(void *arg)
{
	(void)arg;
	by_tid = (pid_t)syscall(SYS_gettid);
	while (!atomic_load(&stop))
		poll(NULL, 0, 10);
	return NULL;
}

static void *raise_on_bystander(void *arg)
{
	(void)arg;
	poll(NULL, 0, 100);
	syscall(SYS_tgkill, getpid(), by_tid, SIGCHLD);
	return NULL;
}

START_TEST(wait_ended_by_a_signal_another_thread_takes_later)
{
	pthread_t by, kick, late;
	sigset_t old;
	double t0;
	int r;

	atomic_store(&stop, false);
	loop_tid = (pid_t)syscall(SYS_gettid);
	ck_assert_int_eq(pthread_create(&by, NULL, slow_bystander, NULL), 0);
	while (!by_tid)
		poll(NULL, 0, 1);
	ck_assert_int_eq(shk_wait_init(&old), 0);
	ck_assert_int_eq(pthread_create(&kick, NULL, late_kick, NULL), 0);
	ck_assert_int_eq(pthread_create(&late, NULL, raise_on_bystander, NULL), 0);
	t0 = now_s();
	r = shk_wait_poll(NULL, 0);
	ck_assert_int_eq(r, 0);
	ck_assert_msg(now_s() - t0 < 1.0, "the wait slept %.2f s past a signal another thread took", now_s() - t0);
	ck_assert(shk_wait_take() & ((uint64_t)1 << SIGCHLD));
	atomic_store(&stop, true);
	pthread_join(late, NULL);
	pthread_join(kick, NULL);
	pthread_join(by, NULL);
	shk_wait_restore();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
END_TEST

START_TEST(poll_sees_a_signal_another_thread_took)
{
	signal_elsewhere_then(wait_poll_none);
}
END_TEST

/* shk_wait_notif on a listener nobody traps into: a socket fd stands in
 * (the ioctl would fail, but it must not even be reached) */
static int wait_notif_dummy(void)
{
	static struct shk_sup s;
	static struct seccomp_notif req;
	int sv[2];
	int r;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	s.notify_fd = sv[0];
	s.req = &req;
	s.sizes.seccomp_notif = sizeof(req);
	r = shk_wait_notif(&s);
	close(sv[0]);
	close(sv[1]);
	return r;
}

START_TEST(notif_sees_a_signal_another_thread_took)
{
	signal_elsewhere_then(wait_notif_dummy);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("wait");
	TCase *tc = tcase_create("elsewhere");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, poll_sees_a_signal_another_thread_took);
	tcase_add_test(tc, notif_sees_a_signal_another_thread_took);
	tcase_add_test(tc, wait_ended_by_a_signal_another_thread_takes_later);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return shk_test_run(suite());
}
