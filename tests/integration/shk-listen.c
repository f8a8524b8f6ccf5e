/* SPDX-License-Identifier: MIT */
/*
 * shk-listen: listen() on a socket whose address is about to change.
 *
 *   shk-listen race N
 *       A listener of its own on 127.0.0.1 with a full accept queue keeps
 *       every further non-blocking connect in SYN_SENT, its socket showing
 *       127.0.0.1:P. N times: such a socket, listen() on it while a second
 *       thread shutdown()s it (the socket goes back to unbound 0.0.0.0 and
 *       a listen() autobinds every address). Prints "BREACH ADDR:PORT" for
 *       a listener on another address than 127.0.0.1, else
 *       "held einval=N eperm=N ok=N".
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hlp.h"

static int victim;
static volatile int go;

static void *shutter(void *arg)
{
	(void)arg;
	while (!go)
		;
	shutdown(victim, SHUT_RDWR);
	return NULL;
}

static int full_listener(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a->sin_port = 0;
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof(*a)) < 0 || listen(l, 0) < 0 ||
	    getsockname(l, (struct sockaddr *)a, &len) < 0)
		hlp_die("listener failed");
	/* fill the accept queue: later SYNs are dropped, connects stay SYN_SENT */
	for (int i = 0; i < 3; i++) {
		int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(c, (struct sockaddr *)a, sizeof(*a));
	}
	usleep(100000);
	return l;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a, got;
	int n, einval = 0, eperm = 0, ok = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 3 || strcmp(argv[1], "race") || (n = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: shk-listen race N\n");
		return HLP_USAGE;
	}
	full_listener(&a);
	for (int i = 0; i < n; i++) {
		socklen_t len = sizeof(got);
		pthread_t th;
		int r;

		victim = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(victim, (struct sockaddr *)&a, sizeof(a));
		go = 0;
		if (pthread_create(&th, NULL, shutter, NULL))
			hlp_die("pthread_create failed");
		go = 1;
		r = listen(victim, 4);
		pthread_join(th, NULL);
		if (r == 0 && getsockname(victim, (struct sockaddr *)&got, &len) == 0 &&
		    got.sin_addr.s_addr != htonl(INADDR_LOOPBACK)) {
			printf("BREACH %s:%u\n", inet_ntoa(got.sin_addr), ntohs(got.sin_port));
			return 1;
		}
		r == 0 ? ok++ : errno == EINVAL ? einval++ : eperm++;
		close(victim);
	}
	printf("held einval=%d eperm=%d ok=%d\n", einval, eperm, ok);
	return 0;
}
