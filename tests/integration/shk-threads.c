/* SPDX-License-Identifier: MIT */
/*
 * shk-threads NTHREADS ITER AHOST FHOST PORT
 *
 * NTHREADS threads connect concurrently, ITER times each, alternating the
 * allowed AHOST:PORT and the forbidden FHOST:PORT. Prints
 *   "ok=N denied=N wrong=N other=N"
 * ok: allowed connect succeeded to the right peer; denied: forbidden connect
 * refused with EPERM/EACCES; wrong: an allowed connect was refused or a
 * forbidden one went through (exit 1); other: any other answer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "hlp.h"

static struct sockaddr_storage a_ss, f_ss;
static socklen_t a_len, f_len;
static long iter;
static _Atomic long n_ok, n_denied, n_wrong, n_other;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < iter; i++) {
		int forbidden = i & 1;
		struct sockaddr_storage *ss = forbidden ? &f_ss : &a_ss;
		int fd = socket(ss->ss_family, SOCK_STREAM, 0);
		int e;

		if (fd < 0) {
			n_other++;
			continue;
		}
		e = connect(fd, (struct sockaddr *)ss, forbidden ? f_len : a_len) < 0 ? errno : 0;
		if (!forbidden && e == 0)
			n_ok++;
		else if (forbidden && (e == EPERM || e == EACCES))
			n_denied++;
		else if ((forbidden && e == 0) || (!forbidden && (e == EPERM || e == EACCES)))
			n_wrong++;
		else
			n_other++;
		close(fd);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[256];
	long n;

	if (argc != 6) {
		fprintf(stderr, "usage: shk-threads NTHREADS ITER AHOST FHOST PORT\n");
		return HLP_USAGE;
	}
	n = strtol(argv[1], NULL, 10);
	iter = strtol(argv[2], NULL, 10);
	if (n < 1 || n > 256 || iter < 1)
		hlp_die("bad thread or iteration count");
	a_len = hlp_sockaddr(argv[3], argv[5], &a_ss);
	f_len = hlp_sockaddr(argv[4], argv[5], &f_ss);
	for (long i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, worker, NULL))
			hlp_die("pthread_create failed");
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("ok=%ld denied=%ld wrong=%ld other=%ld\n", n_ok, n_denied, n_wrong, n_other);
	return n_wrong ? 1 : 0;
}
