/* SPDX-License-Identifier: MIT */
/*
 * How the loop thread waits (docs/supervisor.md, "Waiting").
 *
 * It blocks in SECCOMP_IOCTL_NOTIF_RECV itself, not in epoll: with
 * SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6) the kernel then wakes it on
 * the CPU of the agent thread that trapped, and our answer wakes that thread
 * back on ours. On this VM a cross-CPU wakeup costs tens of µs (an IPI into a
 * halted vCPU), two of them per call; epoll never gets the same-CPU wakeup.
 *
 * Everything else that must wake the loop is a signal to the loop thread:
 * SIGCHLD (ptrace stops, exits) and the forwarded signals directly; the
 * control channel, the watchdog socket and the tick through a waker thread
 * that polls them and sends the kick signal. The signals stay blocked except
 * while we wait, and their handler only records them. Between unblocking and
 * entering the ioctl a signal would be handled and the ioctl would then block
 * regardless; the handler closes that window with siglongjmp back to before
 * the wait, and a notification the ioctl had already returned is kept.
 * A process-directed signal (SIGCHLD above all) that comes while the loop
 * thread has them blocked goes to any thread that does not block it: the
 * other modules' threads are started with every signal blocked, but a
 * library's thread started before shk_wait_init may not be. Its handler
 * records the signal there, so every wait looks at what was recorded once
 * the signals are let in, before it blocks; and since that thread may run
 * the handler only after the wait has looked, the handler kicks the loop
 * thread too. Without both the loop slept until the next tick (50 ms): at a
 * start, at the end of a session, and at exec stops with the image stopped.
 *
 * One supervisor per process: the handler's state is static.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "supervise/internal.h"


#define TICK_MS 50

static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGQUIT, SIGUSR1, SIGUSR2 };

static _Atomic uint64_t pending;         /* bit N: signal N; SHK_KICK_*: the waker */
static atomic_bool kick_sent;           /* a kick is on its way: no second one */
static volatile sig_atomic_t in_window;
static __thread bool loop_thread;       /* only its own wait may be jumped out of */
static pid_t loop_pid, loop_tid;
static sigjmp_buf window_jmp;
static sigset_t our_set;                /* SIGCHLD, forwarded, kick */
static sigset_t window_mask;            /* the loop's mask while it waits */
static struct sigaction saved[64];      /* the dispositions we replaced */
static bool replaced[64];

static int kick_signal(void)
{
	return SIGRTMIN + 1;
}

static void on_signal(int sig)
{
	int e = errno;

	if (sig != kick_signal())
		atomic_fetch_or(&pending, (uint64_t)1 << sig);
	if (!loop_thread && sig != kick_signal() && !atomic_exchange(&kick_sent, true) &&
	    syscall(SYS_tgkill, loop_pid, loop_tid, kick_signal()) < 0)
		atomic_store(&kick_sent, false);
	errno = e;
	if (in_window && loop_thread) {
		in_window = 0;
		siglongjmp(window_jmp, 1);
	}
}

/*
 * Called on the loop thread. A forwarded signal that we inherited ignored
 * (nohup, a background job of a non-interactive shell) stays ignored, for
 * us and for the agent, as it did when the loop read a signalfd: the kernel
 * discards an ignored signal before anyone could read it.
 */
int shk_wait_init(sigset_t *ret_old)
{
	struct sigaction sa = { .sa_handler = on_signal, .sa_flags = SA_RESTART };

	loop_thread = true;
	loop_pid = getpid();
	loop_tid = (pid_t)syscall(SYS_gettid);
	sigemptyset(&our_set);
	sigaddset(&our_set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&our_set, forwarded[i]);
	sigaddset(&our_set, kick_signal());
	if (sigprocmask(SIG_BLOCK, &our_set, ret_old) < 0)
		return -errno;
	if (sigprocmask(SIG_BLOCK, NULL, &window_mask) < 0)
		return -errno;
	for (int sig = 1; sig < 64; sig++)
		if (sigismember(&our_set, sig) == 1)
			sigdelset(&window_mask, sig);
	/* one handler at a time: the longjmp must not leave a nested one */
	sa.sa_mask = our_set;
	for (int sig = 1; sig < 64; sig++) {
		if (sigismember(&our_set, sig) != 1)
			continue;
		if (sigaction(sig, NULL, &saved[sig]) < 0)
			return -errno;
		if (shk_wait_is_forwarded(sig) && saved[sig].sa_handler == SIG_IGN)
			continue;
		if (sigaction(sig, &sa, NULL) < 0)
			return -errno;
		replaced[sig] = true;
	}
	signal(SIGPIPE, SIG_IGN);
	atomic_store(&pending, 0);
	atomic_store(&kick_sent, false);
	return 0;
}

/* The dispositions from before shk_wait_init (the agent's child, and the
 * caller after the run: both would otherwise keep our handler). */
void shk_wait_restore(void)
{
	for (int sig = 1; sig < 64; sig++)
		if (replaced[sig]) {
			sigaction(sig, &saved[sig], NULL);
			replaced[sig] = false;
		}
}

/* The kick flag first: a waker that sets bits after this sends a new kick. */
uint64_t shk_wait_take(void)
{
	atomic_store(&kick_sent, false);
	return atomic_exchange(&pending, 0);
}

bool shk_wait_is_forwarded(int sig)
{
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		if (forwarded[i] == sig)
			return true;
	return false;
}

bool shk_wait_sync(int notify_fd)
{
	return ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	             (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0;
}

/*
 * Same-CPU wakeups pay off while one agent thread makes call after call (a
 * connect loop: 2x faster) and cost while a shell forks a new process per
 * exec (it would pull the loop thread onto every child's CPU: fork+exec 5-15 %
 * slower, docs/supervisor.md). The flag is read when a call traps and when
 * it is answered, so it follows the kind of the last call: on for network
 * calls, off for exec; a syscall only when the kind changes.
 */
void shk_wait_prefer_sync(struct shk_sup *s, bool on)
{
	if (!s->stats.sync_wake || s->sync_on == on)
		return;
	if (ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
	          on ? (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP : 0UL) == 0)
		s->sync_on = on;
}

/*
 * 1: s->req holds a notification; 0: a signal or kick came first (see
 * shk_wait_take); -ENOENT: none to take (its target died, or no task uses
 * the filter any more: POLLHUP tells); other -errno: the listener is broken.
 */
int shk_wait_notif(struct shk_sup *s)
{
	struct seccomp_notif *req = s->req;
	int r;

	memset(req, 0, s->sizes.seccomp_notif);
	/* no mask saved (a syscall): the handler's own mask, ours
	 * plus the window's, is what a longjmp out of it leaves */
	if (sigsetjmp(window_jmp, 0))
		return req->data.arch != 0;
	in_window = 1;
	pthread_sigmask(SIG_SETMASK, &window_mask, NULL);
	if (atomic_load(&pending))
		r = -EINTR; /* taken on another thread: see the top */
	else if ((r = ioctl(s->notify_fd, SECCOMP_IOCTL_NOTIF_RECV, req)) < 0)
		r = -errno;
	in_window = 0;
	pthread_sigmask(SIG_BLOCK, &our_set, NULL);
	if (r == 0)
		return 1;
	return r == -EINTR || r == -EAGAIN ? 0 : r;
}

/* Until a signal or kick: poll on fds with the signals let in, as above. */
int shk_wait_poll(struct pollfd *fds, nfds_t n)
{
	int r;

	if (sigsetjmp(window_jmp, 0))
		return 0;
	in_window = 1;
	pthread_sigmask(SIG_SETMASK, &window_mask, NULL);
	/* a signal taken on another thread: what is ready, without waiting */
	if ((r = poll(fds, n, atomic_load(&pending) ? 0 : -1)) < 0)
		r = errno == EINTR ? 0 : -errno;
	in_window = 0;
	pthread_sigmask(SIG_BLOCK, &our_set, NULL);
	return r > 0 ? 1 : r;
}

/* ---- the waker thread ------------------------------------------------------ */
struct shk_waker {
	pthread_t thread;
	int efd, stop_fd;
	pid_t loop_tid, tid;
	bool ready;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *waker_main(void *p)
{
	struct shk_waker *w = p;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&w->lock);
	w->tid = (pid_t)syscall(SYS_gettid);
	w->ready = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (;;) {
		struct epoll_event ev[4];
		uint64_t bits = 0;
		int n = epoll_wait(w->efd, ev, 4, TICK_MS);

		if (n < 0) {
			/* cannot happen on our epoll fd (all signals are blocked
			 * here): keep ticking, but never spin */
			nanosleep(&(struct timespec){ .tv_nsec = TICK_MS * 1000000L }, NULL);
			n = 0;
		}
		if (n == 0)
			bits |= SHK_KICK_TICK;
		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == 0)
				return NULL; /* stop */
			bits |= ev[i].data.u64;
		}
		/* one kick in flight at most: they would queue (and count
		 * against RLIMIT_SIGPENDING) while the loop is busy */
		if (bits) {
			atomic_fetch_or(&pending, bits);
			if (!atomic_exchange(&kick_sent, true) &&
			    syscall(SYS_tgkill, getpid(), w->loop_tid, kick_signal()) < 0)
				atomic_store(&kick_sent, false); /* EAGAIN: the next tick tries again */
		}
	}
}

int shk_waker_start(struct shk_sup *s)
{
	struct shk_waker *w = calloc(1, sizeof(*w));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
	int r;

	if (!w)
		return -ENOMEM;
	w->loop_tid = (pid_t)syscall(SYS_gettid);
	w->efd = epoll_create1(EPOLL_CLOEXEC);
	w->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (w->efd < 0 || w->stop_fd < 0 || epoll_ctl(w->efd, EPOLL_CTL_ADD, w->stop_fd, &ev) < 0) {
		r = -errno;
		goto fail;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if ((r = -pthread_create(&w->thread, NULL, waker_main, w)) < 0)
		goto fail;
	pthread_mutex_lock(&w->lock);
	while (!w->ready)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	s->waker = w;
	return 0;
fail:
	if (w->efd >= 0)
		close(w->efd);
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	free(w);
	return r;
}

pid_t shk_waker_tid(const struct shk_sup *s)
{
	return s->waker ? s->waker->tid : 0;
}

/* One shot: after a kick for fd the loop handles it and re-arms. */
int shk_waker_watch(struct shk_sup *s, int fd, uint64_t bit, bool rearm)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLONESHOT, .data.u64 = bit };

	if (!s->waker || fd < 0)
		return -EBADF;
	if (epoll_ctl(s->waker->efd, rearm ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) < 0)
		return -errno;
	return 0;
}

void shk_waker_unwatch(struct shk_sup *s, int fd)
{
	if (s->waker && fd >= 0)
		epoll_ctl(s->waker->efd, EPOLL_CTL_DEL, fd, NULL);
}

void shk_waker_stop(struct shk_sup *s)
{
	struct shk_waker *w = s->waker;
	uint64_t one = 1;

	if (!w)
		return;
	if (write(w->stop_fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		pthread_join(w->thread, NULL);
	else
		pthread_cancel(w->thread), pthread_join(w->thread, NULL);
	close(w->efd);
	close(w->stop_fd);
	free(w);
	s->waker = NULL;
}
