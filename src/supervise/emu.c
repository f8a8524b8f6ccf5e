/* SPDX-License-Identifier: MIT */
/*
 * Performing an approved network call on the agent's behalf, on our copy of
 * its socket with our copy of the address and data. Blocking calls run on
 * worker threads so that a slow peer never stalls the notification loop;
 * when the agent runs under another uid the workers hold that uid (creds.c).
 * The workers exist before the agent does, so the seccomp filter can forbid
 * the agent to signal them.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "supervise/internal.h"

void shk_emu_msg_release(struct shk_emu_msg *m)
{
	if (m->pathfd >= 0)
		close(m->pathfd);
	for (size_t k = 0; k < m->nfds; k++)
		close(m->fds[k]);
	free(m->fds);
	free(m->data);
	free(m->control);
	*m = (struct shk_emu_msg){ .pathfd = -1 };
}

void shk_emu_job_release(struct shk_emu_job *j)
{
	for (size_t i = 0; i < j->nmsgs; i++)
		shk_emu_msg_release(&j->msgs[i]);
	if (j->msgs != &j->one)
		free(j->msgs);
	if (j->sock >= 0)
		close(j->sock);
	if (j->pidfd >= 0)
		close(j->pidfd);
	if (j->memfd >= 0)
		close(j->memfd);
}

void shk_emu_job_free(struct shk_emu_job *j)
{
	if (!j)
		return;
	shk_emu_job_release(j);
	free(j);
}

/* The address to use: a unix socket file goes through the O_PATH fd we
 * resolved and judged, so a renamed or replaced path cannot redirect it. */
static const struct sockaddr *target(struct shk_emu_msg *m, struct sockaddr_un *tmp,
                                     socklen_t *len)
{
	if (!m->has_addr)
		return *len = 0, NULL;
	if (m->pathfd < 0)
		return *len = m->addrlen, (const struct sockaddr *)&m->addr;
	memset(tmp, 0, sizeof(*tmp));
	tmp->sun_family = AF_UNIX;
	snprintf(tmp->sun_path, sizeof(tmp->sun_path), "/proc/thread-self/fd/%d", m->pathfd);
	*len = offsetof(struct sockaddr_un, sun_path) + strlen(tmp->sun_path) + 1;
	return (const struct sockaddr *)tmp;
}

static bool has_creds(const struct shk_emu_msg *m)
{
	struct msghdr mh = { .msg_control = m->control, .msg_controllen = m->controllen };

	for (struct cmsghdr *c = m->control ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS)
			return true;
	return false;
}

static long send_one(struct shk_sup *s, struct shk_emu_job *j, struct shk_emu_msg *m)
{
	struct sockaddr_un tmp;
	struct iovec iov = { .iov_base = m->data, .iov_len = m->datalen };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} own;
	_cleanup_free_ char *ctl = NULL;
	ssize_t n;

	mh.msg_name = (void *)target(m, &tmp, &mh.msg_namelen);
	mh.msg_control = m->control;
	mh.msg_controllen = m->controllen;
	/* A unix receiver with SO_PASSCRED is told the sender's REAL uid unless
	 * the message names one: a worker's is 0 (creds.c), so a datagram the
	 * agent sent would arrive as root's. Name the agent's ids. */
	if (j->family == AF_UNIX && s->drop_creds && !has_creds(m)) {
		struct ucred cr = { getpid(), s->cfg->run_uid, s->cfg->run_gid };
		struct cmsghdr *c = (struct cmsghdr *)own.buf;

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof(cr));
		memcpy(CMSG_DATA(c), &cr, sizeof(cr));
		size_t at = CMSG_ALIGN(m->controllen);

		if (!(ctl = calloc(1, at + sizeof(own.buf))))
			return -ENOMEM;
		if (m->controllen)
			memcpy(ctl, m->control, m->controllen);
		memcpy(ctl + at, own.buf, sizeof(own.buf));
		mh.msg_control = ctl;
		mh.msg_controllen = at + sizeof(own.buf);
	}
	/* EPIPE must not kill the supervisor: SIGPIPE goes to the agent below */
	n = sendmsg(j->sock, &mh, j->flags | MSG_NOSIGNAL);
	if (n < 0 && errno == EPIPE && !(j->flags & MSG_NOSIGNAL))
		syscall(SYS_pidfd_send_signal, j->pidfd, SIGPIPE, NULL, 0);
	return n < 0 ? -errno : n;
}

/* sendmmsg reports each message's length in place, as the kernel does. The
 * sends may have blocked for long: the thread may have died and its tid
 * been reused, so the notification must still be pending (the thread still
 * waits in this very call) right before we write into its memory. The write
 * goes through /proc/TID/mem, opened by the loop thread: the kernel checks
 * ptrace access when that file is opened, and a worker, which acts with the
 * agent's uid and no capabilities, would be refused process_vm_writev. The
 * file stays bound to the memory of the thread that made the call. */
static bool write_back_len(struct shk_sup *s, struct shk_emu_job *j, size_t i, unsigned len32)
{
	uint64_t at = j->mmsg_addr + i * sizeof(struct mmsghdr) + offsetof(struct mmsghdr, msg_len);

	if (j->memfd < 0 || ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &j->id) < 0)
		return false;
	return pwrite(j->memfd, &len32, sizeof(len32), (off_t)at) == sizeof(len32);
}

/* Is the socket listening where its listen() was judged? The address was
 * read with getsockname() before the call; another thread's shutdown() of a
 * connecting socket in between puts it back to 0.0.0.0 unbound, and listen()
 * then autobinds every address (judged 127.0.0.1:P, listening on
 * 0.0.0.0:Q). A listener that moved is shut down again. */
static bool listens_where_judged(struct shk_emu_job *j)
{
	const struct sockaddr_storage *was = &j->msgs[0].addr;
	struct sockaddr_storage now;
	socklen_t len = sizeof(now);
	bool same = getsockname(j->sock, (struct sockaddr *)&now, &len) == 0 &&
	            now.ss_family == was->ss_family;

	if (same && was->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)was, *b = (const void *)&now;

		same = a->sin_addr.s_addr == b->sin_addr.s_addr &&
		       (a->sin_port == 0 || a->sin_port == b->sin_port);
	} else if (same && was->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)was, *b = (const void *)&now;

		same = !memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(a->sin6_addr)) &&
		       (a->sin6_port == 0 || a->sin6_port == b->sin6_port);
	} else if (same && was->ss_family == AF_UNIX) {
		/* judged unbound (listen() then fails with EINVAL anyway) */
		same = j->msgs[0].addrlen <= sizeof(sa_family_t) ||
		       (len == j->msgs[0].addrlen && !memcmp(was, &now, len));
	}
	if (!same)
		shutdown(j->sock, SHUT_RDWR);
	return same;
}

static long perform(struct shk_sup *s, struct shk_emu_job *j)
{
	struct sockaddr_un tmp;
	const struct sockaddr *sa;
	socklen_t len;
	long r = 0;

	switch (j->nr) {
	case SYS_connect:
		sa = target(&j->msgs[0], &tmp, &len);
		return connect(j->sock, sa, len) < 0 ? -errno : 0;
	case SYS_bind:
		sa = target(&j->msgs[0], &tmp, &len);
		return bind(j->sock, sa, len) < 0 ? -errno : 0;
	case SYS_listen:
		if (listen(j->sock, j->backlog) < 0)
			return -errno;
		return listens_where_judged(j) ? 0 : -EPERM;
	case SYS_sendto:
	case SYS_sendmsg:
		return send_one(s, j, &j->msgs[0]);
	case SYS_sendmmsg:
		for (size_t i = 0; i < j->nmsgs; i++) {
			long n = send_one(s, j, &j->msgs[i]);

			if (n < 0)
				return i == 0 ? n : (long)i;
			if (!write_back_len(s, j, i, (unsigned)n))
				return i == 0 ? -EFAULT : (long)i;
			r = (long)i + 1;
		}
		return r;
	}
	return -ENOSYS;
}

void shk_emu_run(struct shk_sup *s, struct shk_emu_job *j)
{
	long r = j->done ? j->res : perform(s, j);
	int e = shk_notify_respond(s->notify_fd, j->id, r < 0 ? 0 : r, r < 0 ? (int)r : 0, false);

	if (e == -ENOENT)
		__atomic_add_fetch(&s->stats.gone, 1, __ATOMIC_RELAXED);
	shk_emu_job_free(j);
}

struct worker_arg {
	struct shk_sup *s;
	pid_t tid;
	int err;
	bool ready;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	struct shk_sup *s = a->s;
	sigset_t all;
	int err = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (s->drop_creds)
		err = shk_creds_become(s->cfg->run_uid, s->cfg->run_gid);
	pthread_mutex_lock(&s->emu.q_lock);
	a->tid = (pid_t)syscall(SYS_gettid);
	a->err = err;
	a->ready = true;
	pthread_cond_broadcast(&s->emu.q_cond);
	while (!err) {
		struct shk_emu_job *j;

		while (!s->emu.q_head && !s->emu.q_stop)
			pthread_cond_wait(&s->emu.q_cond, &s->emu.q_lock);
		if (!s->emu.q_head)
			break;
		j = s->emu.q_head;
		s->emu.q_head = j->next;
		if (!s->emu.q_head)
			s->emu.q_tail = NULL;
		s->emu.q_len--;
		pthread_mutex_unlock(&s->emu.q_lock);
		shk_emu_run(s, j);
		pthread_mutex_lock(&s->emu.q_lock);
	}
	pthread_mutex_unlock(&s->emu.q_lock);
	return NULL;
}

int shk_emu_start(struct shk_sup *s)
{
	int n = s->cfg->emu_threads > 0 ? s->cfg->emu_threads : 4;
	struct worker_arg *args = calloc(n, sizeof(*args));
	int r = 0;

	s->emu.workers = calloc(n, sizeof(*s->emu.workers));
	s->emu.worker_tids = calloc(n, sizeof(*s->emu.worker_tids));
	if (!args || !s->emu.workers || !s->emu.worker_tids) {
		free(args);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->emu.q_lock, NULL);
	pthread_cond_init(&s->emu.q_cond, NULL);
	for (int i = 0; i < n; i++) {
		args[i].s = s;
		if (pthread_create(&s->emu.workers[i], NULL, worker, &args[i]) != 0) {
			r = -EAGAIN;
			break;
		}
		s->emu.nworkers++;
	}
	pthread_mutex_lock(&s->emu.q_lock);
	for (int i = 0; i < s->emu.nworkers; i++) {
		while (!args[i].ready)
			pthread_cond_wait(&s->emu.q_cond, &s->emu.q_lock);
		s->emu.worker_tids[i] = args[i].tid;
		if (args[i].err)
			r = args[i].err;
	}
	pthread_mutex_unlock(&s->emu.q_lock);
	free(args);
	return r;
}

int shk_emu_stop(struct shk_sup *s)
{
	struct timespec deadline;
	bool all = true;

	if (!s->emu.workers)
		return 0;
	pthread_mutex_lock(&s->emu.q_lock);
	s->emu.q_stop = true;
	pthread_cond_broadcast(&s->emu.q_cond);
	pthread_mutex_unlock(&s->emu.q_lock);
	/* a worker may sit in a blocking connect to a host that never
	 * answers; its agent is gone, so it is not waited for long */
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 2;
	for (int i = 0; i < s->emu.nworkers; i++)
		if (pthread_timedjoin_np(s->emu.workers[i], NULL, &deadline) != 0)
			all = false;
	if (!all)
		return -EBUSY; /* the caller must leave the shared state alone */
	/* jobs left behind belong to agents that are gone: answer and free */
	while (s->emu.q_head) {
		struct shk_emu_job *j = s->emu.q_head;
		s->emu.q_head = j->next;
		s->emu.q_len--;
		shk_notify_respond(s->notify_fd, j->id, 0, -EPERM, false);
		shk_emu_job_free(j);
	}
	free(s->emu.workers);
	free(s->emu.worker_tids);
	s->emu.workers = NULL;
	s->emu.worker_tids = NULL;
	return 0;
}

/* Each agent thread has at most one call outstanding (it waits in it), but
 * the agent may make any number of threads: a job holds up to
 * SHK_SUP_MAX_SEND bytes and SCM_MAX_FD fds, so the queue is bounded and a
 * call beyond it fails as a busy kernel would (EAGAIN). */
void shk_emu_submit(struct shk_sup *s, struct shk_emu_job *j)
{
	pthread_mutex_lock(&s->emu.q_lock);
	if (s->emu.q_len >= SHK_EMU_MAX_QUEUED) {
		pthread_mutex_unlock(&s->emu.q_lock);
		j->done = true;
		j->res = -EAGAIN;
		shk_emu_run(s, j); /* answers and frees */
		return;
	}
	s->emu.q_len++;
	j->next = NULL;
	if (s->emu.q_tail)
		s->emu.q_tail->next = j;
	else
		s->emu.q_head = j;
	s->emu.q_tail = j;
	pthread_cond_signal(&s->emu.q_cond);
	pthread_mutex_unlock(&s->emu.q_lock);
}
