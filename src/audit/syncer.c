/* SPDX-License-Identifier: MIT */
/*
 * The ledger's checkpoint fdatasync, on a thread of its own. Under the
 * default policy a checkpoint is synced to disk; done on the writer's
 * thread, that sync (hundreds of microseconds, milliseconds on real disks)
 * held up whatever call the agent made next. Here the writer only asks and
 * goes on (unless the previous sync still runs); the end of a session, a
 * rotation and close wait for every sync
 * asked for (shk_syncer_drain). A failed sync is kept and handed to the
 * writer at its next request or drain, which poisons the ledger: the next
 * append fails and the supervisor denies. What power loss can take is
 * unchanged in kind: entries after the last sync that completed.
 *
 * Started with files to flush first (a new log's key files and their
 * directory, shk_ledger_sync_first), the thread's first job is theirs:
 * a request or a drain waits for it like for any sync in flight, so no
 * sync of the log completes, and nothing signed is reported durable,
 * before the key that signed it is on disk.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/internal.h"

struct shk_syncer {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work;  /* the thread waits for a request or stop */
	pthread_cond_t idle;  /* drain waits for done == want */
	int fd;
	int first[SHK_SYNC_FIRST_MAX]; /* fsynced and closed before anything else */
	size_t nfirst;
	uint64_t want, done;
	int err;              /* first failed fdatasync, -errno */
	bool stop;
};

int shk_sync_close_all(const int *fds, size_t n)
{
	int r = 0;

	/* Writeback of every file started first (a hint; a directory refuses
	 * it): on ext4 the first fsync then commits the blocks of all of them
	 * in one journal transaction, and the others find little left to do
	 * (measured: the second fsync 0.03-0.4 ms instead of 0.1-1.0) */
	for (size_t i = 0; i < n; i++)
		(void)sync_file_range(fds[i], 0, 0, SYNC_FILE_RANGE_WRITE);
	for (size_t i = 0; i < n; i++) {
		/* EINVAL: a directory on a file system that cannot sync one */
		if (fsync(fds[i]) < 0 && errno != EINVAL && r == 0)
			r = -errno;
		if (close(fds[i]) < 0 && r == 0)
			r = -errno;
	}
	return r;
}

static void *syncer_main(void *arg)
{
	struct shk_syncer *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		int fd, r, first[SHK_SYNC_FIRST_MAX];
		size_t nfirst;
		uint64_t goal;

		while (s->done == s->want && !s->stop)
			pthread_cond_wait(&s->work, &s->mu);
		if (s->done == s->want)
			break; /* stopped with nothing left */
		goal = s->want;
		fd = s->fd;
		nfirst = s->nfirst;
		memcpy(first, s->first, nfirst * sizeof(first[0]));
		s->nfirst = 0;
		pthread_mutex_unlock(&s->mu);
		if (nfirst)
			r = shk_sync_close_all(first, nfirst);
		else
			r = fdatasync(fd) < 0 ? -errno : 0;
		pthread_mutex_lock(&s->mu);
		if (r < 0 && !s->err)
			__atomic_store_n(&s->err, r, __ATOMIC_RELEASE);
		__atomic_store_n(&s->done, goal, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&s->idle);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

int shk_syncer_start(int fd, const int *first, size_t nfirst, struct shk_syncer **ret)
{
	struct shk_syncer *s;
	sigset_t all, old;
	int r;

	if (nfirst > SHK_SYNC_FIRST_MAX)
		return -E2BIG;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	s->fd = fd;
	/* the first job, pending from the start */
	if (nfirst) {
		memcpy(s->first, first, nfirst * sizeof(first[0]));
		s->nfirst = nfirst;
		s->want = 1;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->idle, NULL);
	/* No signal may land on this thread: the supervisor's handlers wake
	 * its loop thread, and a signal taken here would wake nobody. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&s->thread, NULL, syncer_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		pthread_cond_destroy(&s->idle);
		pthread_cond_destroy(&s->work);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/*
 * One sync in flight at most: a checkpoint that comes while the previous
 * one's sync still runs waits for it (on a slow disk the writer is held up
 * as before). So what power loss can take stays within two checkpoint
 * intervals, however slow the disk.
 */
int shk_syncer_request(struct shk_syncer *s)
{
	int r;

	pthread_mutex_lock(&s->mu);
	while (s->done != s->want)
		pthread_cond_wait(&s->idle, &s->mu);
	r = s->err;
	if (!r)
		s->want++;
	pthread_mutex_unlock(&s->mu);
	/* After the unlock: woken on the other CPU while we still held the
	 * mutex, the thread would block on it at once and our unlock would
	 * have to wake it a second time. It tests want under the mutex, so
	 * a request made before it waits is not lost. */
	if (!r)
		pthread_cond_signal(&s->work);
	return r;
}

int shk_syncer_drain(struct shk_syncer *s)
{
	int r;

	pthread_mutex_lock(&s->mu);
	while (s->done != s->want)
		pthread_cond_wait(&s->idle, &s->mu);
	r = s->err;
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* Asked before every entry: no lock (the only writer stores it, under the
 * mutex, atomically; once set it never changes). */
int shk_syncer_error(struct shk_syncer *s)
{
	return __atomic_load_n(&s->err, __ATOMIC_ACQUIRE);
}

/* No lock: want is the writer's own (it asks), done only grows. */
bool shk_syncer_busy(struct shk_syncer *s)
{
	return __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) != s->want;
}

int shk_syncer_set_fd(struct shk_syncer *s, int fd)
{
	int r = shk_syncer_drain(s);

	pthread_mutex_lock(&s->mu);
	s->fd = fd;
	pthread_mutex_unlock(&s->mu);
	return r;
}

void shk_syncer_stop(struct shk_syncer *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->work);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
