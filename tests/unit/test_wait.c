/* SPDX-License-Identifier: MIT */
/*
 * The loop thread's signals (src/supervise/wait.c): a SIGCHLD sent to the
 * process while the loop thread blocks it (busy between two waits) goes to
 * a thread that does not block it, whose handler records it; the loop's
 * next wait must still return at once, not at the next tick. Here the
 * other thread never ticks and the wait is a ppoll on nothing: the alarm
 * ends a wait that missed the signal.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <check.h>

#include "supervise/internal.h"
#include "checkrun.h"

static pthread_barrier_t ready;

static void *unblocked(void *arg)
{
	sigset_t none;

	(void)arg;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	pthread_barrier_wait(&ready);
	for (;;)
		pause();
	return NULL;
}

START_TEST(signal_on_another_thread)
{
	sigset_t old;
	pthread_t t;
	uint64_t got = 0;

	ck_assert_int_eq(shk_wait_init(&old), 0);
	ck_assert_int_eq(pthread_barrier_init(&ready, NULL, 2), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, unblocked, NULL), 0);
	pthread_barrier_wait(&ready);
	/* the loop thread blocks SIGCHLD here: only the other thread takes it
	 * (once it has, the signal is no longer pending for the process) */
	ck_assert_int_eq(kill(getpid(), SIGCHLD), 0);
	for (int i = 0; i < 2000; i++) {
		sigset_t p;

		ck_assert_int_eq(sigpending(&p), 0);
		if (!sigismember(&p, SIGCHLD))
			break;
		usleep(1000);
	}
	alarm(5);
	for (int i = 0; i < 3 && !(got & (1ULL << SIGCHLD)); i++) {
		ck_assert_int_ge(shk_wait_poll(NULL, 0), 0);
		got |= shk_wait_take();
	}
	alarm(0);
	ck_assert(got & (1ULL << SIGCHLD));
	shk_wait_restore();
}
END_TEST

static Suite *suite(void)
{
	Suite *su = suite_create("wait");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, signal_on_another_thread);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	return shk_test_run(suite());
}
