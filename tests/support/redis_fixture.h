/* SPDX-License-Identifier: MIT */
/*
 * A real redis-server of the test's own: a private directory, a unix socket
 * in it (and, when asked, a TCP port on 127.0.0.1 picked by the kernel),
 * started, killed and restarted by the test. Never the system's service,
 * never a fixed port or path that another test could share.
 */
#ifndef SHACKLE_REDIS_FIXTURE_H
#define SHACKLE_REDIS_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct shk_redis {
	pid_t pid;
	const char *fsync;  /* NULL: no AOF; "always": spend survives a kill -9; "everysec" */
	int port;           /* 0: unix socket only */
	char dir[64];
	char sock[96];
};

static inline bool shk_redis_available(void)
{
	return access("/usr/bin/redis-server", X_OK) == 0;
}

/* A port that was free a moment ago (the kernel's pick); redis may lose
 * it to someone else, which shk_redis_start then reports. */
static inline int shk_redis_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static inline bool shk_redis_ping(const struct shk_redis *r)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char buf[16];
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok = false;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", r->sock);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, "PING\r\n", 6) == 6 && read(fd, buf, sizeof(buf)) >= 5)
		ok = !memcmp(buf, "+PONG", 5);
	if (fd >= 0)
		close(fd);
	return ok;
}

static inline int shk_redis_spawn(struct shk_redis *r)
{
	char port[16], logf[256];

	snprintf(port, sizeof(port), "%d", r->port);
	snprintf(logf, sizeof(logf), "%s/redis.log", r->dir);
	r->pid = fork();
	if (r->pid < 0)
		return -errno;
	if (r->pid == 0) {
		execl("/usr/bin/redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
		      "--unixsocket", r->sock, "--unixsocketperm", "700", "--dir", r->dir,
		      "--logfile", logf, "--save", "", "--appendonly", r->fsync ? "yes" : "no",
		      "--appendfsync", r->fsync ? r->fsync : "no", "--daemonize", "no", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		struct timespec ts = { 0, 10 * 1000000 };
		int st;

		if (shk_redis_ping(r))
			return 0;
		if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
			r->pid = 0;
			return -ECHILD;
		}
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

/* Start one in a new private directory. 0 or a negative errno. */
static inline int shk_redis_start(struct shk_redis *r, const char *fsync, bool tcp)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/shk-redis-XXXXXX");
	if (!mkdtemp(r->dir))
		return -errno;
	snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
	r->fsync = fsync;
	r->port = tcp ? shk_redis_free_port() : 0;
	return shk_redis_spawn(r);
}

/* kill -9: no shutdown, no last write; as a crash or an OOM kill. */
static inline void shk_redis_kill(struct shk_redis *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = 0;
	unlink(r->sock);
}

/* The same directory, socket and port again (lose_data: its files gone). */
static inline int shk_redis_restart(struct shk_redis *r, bool lose_data)
{
	char cmd[300];

	shk_redis_kill(r);
	if (lose_data) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'/appendonlydir '%s'/*.rdb", r->dir, r->dir);
		if (system(cmd) != 0)
			return -EIO;
	}
	return shk_redis_spawn(r);
}

static inline void shk_redis_stop(struct shk_redis *r)
{
	char cmd[300];

	shk_redis_kill(r);
	if (r->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->dir);
		(void)!system(cmd);
	}
	r->dir[0] = 0;
}

#endif
