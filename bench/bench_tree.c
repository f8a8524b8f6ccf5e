/* SPDX-License-Identifier: MIT */
/*
 * An agent tree for bench/tree_rss.sh: forks N children that wait (with
 * "exec", each child execs `sleep 3600` first: a judged exec each), prints
 * "ready N" once all N are alive, and waits for its stdin to close or a
 * signal; then kills its children and exits.
 *
 *   bench_tree N [exec]
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	int do_exec = argc > 2 && !strcmp(argv[2], "exec");
	pid_t *kids;
	char c;

	if (n <= 0 || n > 100000) {
		fprintf(stderr, "usage: bench_tree N [exec]\n");
		return 2;
	}
	kids = calloc((size_t)n, sizeof(*kids));
	if (!kids)
		return 1;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			fprintf(stderr, "fork %d: %s\n", i, strerror(errno));
			n = i;
			break;
		}
		if (kids[i] == 0) {
			if (do_exec)
				execl("/bin/sleep", "sleep", "3600", (char *)NULL);
			pause();
			_exit(0);
		}
	}
	/* with exec: ready once every child runs sleep (its exec was judged) */
	for (int i = 0; do_exec && i < n; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)kids[i]);
		while ((f = fopen(path, "r"))) {
			int got = fgets(comm, sizeof(comm), f) != NULL;

			fclose(f);
			if (got && !strcmp(comm, "sleep\n"))
				break;
			usleep(1000);
		}
	}
	printf("ready %d\n", n);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	free(kids);
	return 0;
}
