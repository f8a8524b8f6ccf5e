/* SPDX-License-Identifier: MIT */
/*
 * shk-held: make a call that the supervisor holds (a "hitl" rule waiting for
 * a person) and interrupt it with a signal, as Go's SIGURG preemption or a
 * dash pipeline would.
 *
 *   shk-held exec BINARY DELAY_MS [--restart]
 *   shk-held connect HOST PORT DELAY_MS [--restart]
 *
 * A second thread sends SIGUSR1 to the calling thread after DELAY_MS. The
 * handler is installed without SA_RESTART unless --restart. Prints
 *   "<ERRNAME> call_ms=N handler_ms=N|never"
 * (times from the start of the call). With a pid file in $SHK_HELD_PIDFILE
 * the helper writes its pid there just before the call.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "hlp.h"

static _Atomic long handler_at = -1;
static long t0;
static pthread_t caller;
static long delay_ms;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_usr1(int sig)
{
	(void)sig;
	handler_at = now_ms() - t0;
}

static void *poker(void *arg)
{
	(void)arg;
	usleep((useconds_t)delay_ms * 1000);
	pthread_kill(caller, SIGUSR1);
	return NULL;
}

int main(int argc, char **argv)
{
	int restart = !strcmp(argv[argc - 1], "--restart");
	int nargs = argc - restart;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = restart ? SA_RESTART : 0 };
	const char *pidfile = getenv("SHK_HELD_PIDFILE");
	pthread_t th;
	int e;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (nargs < 2 || ((strcmp(argv[1], "exec") || nargs != 4) &&
			  (strcmp(argv[1], "connect") || nargs != 5))) {
		fprintf(stderr, "usage: shk-held exec BINARY DELAY_MS [--restart]\n"
				"       shk-held connect HOST PORT DELAY_MS [--restart]\n");
		return HLP_USAGE;
	}
	delay_ms = strtol(argv[nargs - 1], NULL, 10);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	caller = pthread_self();
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (f) {
			fprintf(f, "%ld\n", (long)getpid());
			fclose(f);
		}
	}
	if (pthread_create(&th, NULL, poker, NULL))
		hlp_die("pthread_create failed");
	t0 = now_ms();
	if (!strcmp(argv[1], "exec")) {
		char *const av[] = { argv[2], NULL };
		char *const env[] = { NULL };

		execve(argv[2], av, env);
		e = errno;
	} else {
		struct sockaddr_storage ss;
		socklen_t len = hlp_sockaddr(argv[2], argv[3], &ss);
		int fd = socket(ss.ss_family, SOCK_STREAM, 0);

		e = connect(fd, (struct sockaddr *)&ss, len) < 0 ? errno : 0;
	}
	{
		long h = handler_at;
		char hb[32];

		snprintf(hb, sizeof(hb), "%ld", h);
		printf("%s call_ms=%ld handler_ms=%s\n", hlp_errname(e), now_ms() - t0,
		       h < 0 ? "never" : hb);
	}
	return 0;
}
