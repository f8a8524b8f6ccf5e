/* SPDX-License-Identifier: MIT */
/*
 * The SDK socket's acceptor: listen, check the peer, hand each connection
 * to a thread of its own up to max_conns, refuse the rest at once. The
 * acceptor never blocks on a client (its refusals are sent MSG_DONTWAIT),
 * so a flood of connections costs an accept and a close each and nothing
 * else: the connections already served, and the judge, go on.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sdk/internal.h"
#include "sdk/proto.h"
#include "util/linux.h"

#define BACKLOG 128
/* How often an idle acceptor joins the threads of closed connections. */
#define REAP_MS 1000

static void refuse_peer(struct shk_sdk *sdk, int fd, pid_t pid, const char *code, const char *text)
{
	struct shk_sdk_err err = { .code = code };
	struct shk_sdk_ctx x = { .correlation_id = "", .now_ns = shk_realtime_ns() };
	char buf[1024];
	struct shk_sdk_out out = { buf, 0, sizeof(buf) };
	char origin[32];
	shk_doc *doc = NULL;

	snprintf(err.text, sizeof(err.text), "%s", text);
	shk_sdk_note(sdk, "sdk:pid %d refused: %s: %s", (int)pid, code, text);
	snprintf(origin, sizeof(origin), "sdk:pid %d", (int)pid);
	shk_sdk_log_refusal(sdk, origin, code, text);
	if (shk_doc_new(&doc) == 0 && shk_sdk_write_error(doc, &x, &err, &out) == 0)
		(void)!send(fd, out.buf, out.len, MSG_DONTWAIT | MSG_NOSIGNAL);
	shk_doc_free(doc);
	close(fd);
}

/* Join every thread that has returned; under sdk->lock. */
static void reap_locked(struct shk_sdk *sdk)
{
	for (unsigned i = 0; i < sdk->cfg.max_conns; i++) {
		struct slot *s = &sdk->slots[i];

		if (s->state != SLOT_DONE)
			continue;
		pthread_join(s->thread, NULL);
		s->state = SLOT_FREE;
	}
}

static struct slot *free_slot_locked(struct shk_sdk *sdk)
{
	for (unsigned i = 0; i < sdk->cfg.max_conns; i++)
		if (sdk->slots[i].state == SLOT_FREE)
			return &sdk->slots[i];
	return NULL;
}

static void set_send_timeout(int fd, uint32_t ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void take_connection(struct shk_sdk *sdk, int fd)
{
	struct ucred cr = { .pid = 0 };
	socklen_t len = sizeof(cr);
	struct slot *s;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return refuse_peer(sdk, fd, 0, "AUTHENTICATION_FAILED", "no peer credentials");
	if (sdk->cfg.peer_ok && sdk->cfg.peer_ok(sdk->cfg.peer_ctx, cr.pid, cr.uid, cr.gid) != 0)
		return refuse_peer(sdk, fd, cr.pid, "AUTHENTICATION_FAILED",
				   "this socket serves the supervised agent's processes only");
	pthread_mutex_lock(&sdk->lock);
	reap_locked(sdk);
	s = free_slot_locked(sdk);
	if (s) {
		s->fd = fd;
		s->pid = cr.pid;
		s->state = SLOT_RUNNING;
		set_send_timeout(fd, sdk->cfg.send_timeout_ms);
		if (pthread_create(&s->thread, NULL, shk_sdk_conn_main, s) != 0) {
			s->state = SLOT_FREE;
			s = NULL;
		}
	}
	pthread_mutex_unlock(&sdk->lock);
	if (!s)
		refuse_peer(sdk, fd, cr.pid, "RATE_LIMITED", "too many SDK connections at once");
}

/* Wait for a connection, a timeout or the stop; false once stopped. */
static bool wait_accept(struct shk_sdk *sdk, int timeout_ms)
{
	struct pollfd p[2] = { { sdk->listen_fd, POLLIN, 0 }, { sdk->stop_fd, POLLIN, 0 } };

	if (poll(p, 2, timeout_ms) < 0 && errno != EINTR)
		return false;
	return !(p[1].revents & POLLIN);
}

static void *acceptor_main(void *arg)
{
	struct shk_sdk *sdk = arg;
	int backoff = 0;

	while (wait_accept(sdk, backoff ? backoff : REAP_MS)) {
		int fd = accept4(sdk->listen_fd, NULL, NULL, SOCK_CLOEXEC);

		backoff = 0;
		if (fd >= 0) {
			take_connection(sdk, fd);
			continue;
		}
		/* EAGAIN: the poll timed out, reap. Out of fds: the pending
		 * connection stays queued; try again soon instead of spinning
		 * on a listen fd that stays readable. */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			backoff = 50;
		pthread_mutex_lock(&sdk->lock);
		reap_locked(sdk);
		pthread_mutex_unlock(&sdk->lock);
	}
	return NULL;
}

static int make_dir(struct shk_sdk *sdk)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(sdk->dir, sizeof(sdk->dir) - 6, "%s/shackle-sdk-XXXXXX", tmp) >=
	    (int)sizeof(sdk->dir) - 6)
		return -ENAMETOOLONG;
	if (!mkdtemp(sdk->dir)) {
		sdk->dir[0] = '\0';
		return -errno;
	}
	if (sdk->cfg.set_owner && chown(sdk->dir, sdk->cfg.uid, sdk->cfg.gid) < 0)
		return -errno;
	/* The directory's name left room for "/sock" and its NUL. */
	memcpy(sdk->path, sdk->dir, strlen(sdk->dir));
	memcpy(sdk->path + strlen(sdk->dir), "/sock", sizeof("/sock"));
	return 0;
}

/*
 * The file bind() made, checked and given to the agent's user through an
 * O_PATH fd: with --sdk-socket in a directory another user may write to,
 * the path can be swapped for a symlink at any moment, and root's chown
 * (or chmod) by path would land on whatever it names. The fd keeps naming
 * the inode that was checked.
 */
static int own_socket_file(struct shk_sdk *sdk)
{
	_cleanup_close_ int pfd = open(sdk->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	char proc[32];

	/* O_PATH|O_NOFOLLOW opens a symlink itself, which fstat shows. */
	if (pfd < 0 || fstat(pfd, &st) < 0)
		return -errno;
	if (!S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	if (shk_sdk_after_check_hook)
		shk_sdk_after_check_hook(sdk->path);
	if (sdk->cfg.set_owner && fchownat(pfd, "", sdk->cfg.uid, sdk->cfg.gid, AT_EMPTY_PATH) < 0)
		return -errno;
	/* Born 0600 under bind's umask, unless a default ACL of the directory
	 * decided otherwise; chmod has no O_PATH form before fchmodat2(2),
	 * and /proc/self/fd names this inode, not a path. */
	if ((st.st_mode & 07777) != 0600) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
		if (chmod(proc, 0600) < 0)
			return -errno;
	}
	sdk->dev = st.st_dev;
	sdk->ino = st.st_ino;
	return 0;
}

static int listen_on(struct shk_sdk *sdk)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	_cleanup_close_ int fd = -EBADF;
	mode_t mask;
	int r;

	memcpy(sa.sun_path, sdk->path, strlen(sdk->path) + 1);
	/* Non-blocking: poll() may wake for a connection that is gone (the
	 * peer gave up) by the time accept() runs. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* The file is 0600 from its first moment. The umask is the process's:
	 * a file another thread makes meanwhile comes out narrower, never wider. */
	mask = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(mask);
	if (r < 0)
		return r == -EADDRINUSE ? -EEXIST : r;
	/* Owned and private before listen() lets anyone connect. */
	r = own_socket_file(sdk);
	if (r == 0 && listen(fd, BACKLOG) < 0)
		r = -errno;
	if (r < 0) {
		unlink(sdk->path);
		return r;
	}
	sdk->listen_fd = shk_take_fd(&fd);
	return 0;
}

static int set_defaults(struct shk_sdk *sdk, const struct shk_sdk_config *cfg)
{
	sdk->cfg = *cfg;
	if (!sdk->cfg.max_conns)
		sdk->cfg.max_conns = 32;
	if (!sdk->cfg.max_line)
		sdk->cfg.max_line = 1u << 20;
	if (!sdk->cfg.heartbeat_ms)
		sdk->cfg.heartbeat_ms = 30000;
	if (!sdk->cfg.send_timeout_ms)
		sdk->cfg.send_timeout_ms = 5000;
	if (!cfg->socket_path)
		return make_dir(sdk);
	if (strlen(cfg->socket_path) >= sizeof(sdk->path))
		return -ENAMETOOLONG;
	snprintf(sdk->path, sizeof(sdk->path), "%s", cfg->socket_path);
	return 0;
}

static int start_threads(struct shk_sdk *sdk)
{
	sigset_t all, old;
	int r;

	sdk->slots = calloc(sdk->cfg.max_conns, sizeof(*sdk->slots));
	sdk->nregs = 2 * sdk->cfg.max_conns;
	sdk->regs = calloc(sdk->nregs, sizeof(*sdk->regs));
	if (!sdk->slots || !sdk->regs)
		return -ENOMEM;
	for (unsigned i = 0; i < sdk->cfg.max_conns; i++)
		sdk->slots[i].sdk = sdk;
	sdk->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sdk->stop_fd < 0)
		return -errno;
	/* born with every signal blocked (its connection threads too): the
	 * supervisor's signals belong to its loop thread (supervise/wait.c) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = pthread_create(&sdk->acceptor, NULL, acceptor_main, sdk);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r != 0 ? -EAGAIN : 0;
}

static void release(struct shk_sdk *sdk)
{
	if (sdk->listen_fd >= 0) {
		close(sdk->listen_fd);
		unlink(sdk->path);
	}
	if (sdk->dir[0])
		rmdir(sdk->dir);
	if (sdk->stop_fd >= 0)
		close(sdk->stop_fd);
	pthread_mutex_destroy(&sdk->lock);
	free(sdk->slots);
	free(sdk->regs);
	free(sdk);
}

int shk_sdk_start(const struct shk_sdk_config *config, const struct shk_source_judge *judge,
                  struct shk_sdk **ret_sdk)
{
	struct shk_sdk *sdk;
	int r;

	if (!config || !judge || !judge->judge || !judge->settle || !judge->info || !ret_sdk)
		return -EINVAL;
	sdk = calloc(1, sizeof(*sdk));
	if (!sdk)
		return -ENOMEM;
	sdk->judge = *judge;
	sdk->listen_fd = sdk->stop_fd = -EBADF;
	pthread_mutex_init(&sdk->lock, NULL);
	r = set_defaults(sdk, config);
	if (r == 0)
		r = listen_on(sdk);
	if (r == 0)
		r = start_threads(sdk);
	if (r < 0) {
		release(sdk);
		return r;
	}
	*ret_sdk = sdk;
	return 0;
}

const char *shk_sdk_path(const struct shk_sdk *sdk)
{
	return sdk->path;
}

void shk_sdk_socket_id(const struct shk_sdk *sdk, dev_t *ret_dev, ino_t *ret_ino)
{
	*ret_dev = sdk->dev;
	*ret_ino = sdk->ino;
}

void shk_sdk_stop(struct shk_sdk *sdk)
{
	uint64_t one = 1;

	if (!sdk)
		return;
	(void)!write(sdk->stop_fd, &one, sizeof(one));
	pthread_join(sdk->acceptor, NULL);
	/* Wake the connection threads out of read(); one inside judge()
	 * finishes its call first. The threads close their own fds, under
	 * the lock, so none of these is a number already reused. */
	pthread_mutex_lock(&sdk->lock);
	for (unsigned i = 0; i < sdk->cfg.max_conns; i++) {
		struct slot *s = &sdk->slots[i];

		s->join = s->state != SLOT_FREE;
		if (s->state == SLOT_RUNNING && s->fd >= 0)
			shutdown(s->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&sdk->lock);
	for (unsigned i = 0; i < sdk->cfg.max_conns; i++)
		if (sdk->slots[i].join)
			pthread_join(sdk->slots[i].thread, NULL);
	release(sdk);
}
