/* SPDX-License-Identifier: MIT */
/*
 * shk-cwd: the working directory an exec runs in, changed behind its back.
 *
 *   shk-cwd exec DIR1 DIR2 DELAY_MS PROG
 *       chdir(DIR1), then exec PROG (argv {PROG}) while a second thread,
 *       after DELAY_MS, changes the process's directory to DIR2 and prints
 *       "moved". An exec held for a human is approved after that: the exec
 *       stop must see DIR2, not the DIR1 that was judged, and kill it.
 *   shk-cwd clone-fs
 *       clone(CLONE_FS) without CLONE_THREAD: a process sharing the working
 *       directory with its parent; prints "ok" or the errno name.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hlp.h"

static const char *dir2;
static long delay_ms;

static void *mover(void *arg)
{
	(void)arg;
	usleep((useconds_t)delay_ms * 1000);
	if (chdir(dir2) == 0)
		printf("moved\n");
	return NULL;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 6 && !strcmp(argv[1], "exec")) {
		char *const av[] = { argv[5], NULL };
		pthread_t th;

		dir2 = argv[3];
		delay_ms = strtol(argv[4], NULL, 10);
		if (chdir(argv[2]) < 0)
			hlp_die("chdir failed");
		if (pthread_create(&th, NULL, mover, NULL))
			hlp_die("pthread_create failed");
		execv(argv[5], av);
		printf("%s\n", hlp_errname(errno));
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "clone-fs")) {
		long pid = syscall(SYS_clone, CLONE_FS | SIGCHLD, 0, 0, 0, 0);

		if (pid == 0)
			_exit(0);
		if (pid > 0)
			waitpid((pid_t)pid, NULL, 0);
		printf("%s\n", pid < 0 ? hlp_errname(errno) : "ok");
		return 0;
	}
	fprintf(stderr, "usage: shk-cwd exec DIR1 DIR2 DELAY_MS PROG | shk-cwd clone-fs\n");
	return HLP_USAGE;
}
