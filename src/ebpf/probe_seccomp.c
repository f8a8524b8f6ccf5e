/* SPDX-License-Identifier: MIT */
/*
 * seccomp user-notify and pidfd probes: a forked child installs a filter
 * that notifies on getppid(2), hands the listener over a socket and calls
 * getppid; we receive the notification, inject an fd with ADDFD (atomically
 * answering with SEND where the kernel has it) and check that the child saw
 * the injected descriptor as the syscall's return value. Every wait is
 * bounded; the child is killed on any failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>


#include "ebpf/probe.h"
#include "util/linux.h"
#include "util/linux.h"

#if defined(__x86_64__)
#define PROBE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PROBE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp probe: add this architecture's AUDIT_ARCH"
#endif

#define TIMEOUT_MS 3000

struct child_msg {
	int sock_fd;     /* the child's socket fd number, for pidfd_getfd */
	int wk_accepted; /* WAIT_KILLABLE_RECV accepted */
	int wk_errno;
	int listener_errno;
};

static int install_filter(unsigned flags)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static int send_fd(int sock, const void *data, size_t len, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

__attribute__((noreturn)) static void child(int sock)
{
	struct child_msg m = { .sock_fd = sock };
	long out[2];
	int fd;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(2);
	fd = install_filter(SECCOMP_FILTER_FLAG_NEW_LISTENER |
			    SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV);
	if (fd >= 0) {
		m.wk_accepted = 1;
	} else {
		m.wk_errno = errno;
		fd = install_filter(SECCOMP_FILTER_FLAG_NEW_LISTENER);
		if (fd < 0)
			m.listener_errno = errno;
	}
	if (send_fd(sock, &m, sizeof(m), fd) < 0 || fd < 0)
		_exit(1);
	close(fd);
	out[0] = syscall(__NR_getppid);
	out[1] = errno;
	(void)!write(sock, out, sizeof(out));
	_exit(0);
}

static int wait_in(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

static int recv_msg(int sock, struct child_msg *m, int *ret_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int r = wait_in(sock, TIMEOUT_MS);

	*ret_fd = -EBADF;
	if (r < 0)
		return r;
	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(*m))
		return -EPROTO;
	c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(ret_fd, CMSG_DATA(c), sizeof(int));
	return 0;
}

static void reap(pid_t pid)
{
	for (int i = 0; i < TIMEOUT_MS / 10; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Answer the held getppid with an injected fd; returns the fd number the child gets. */
static long answer_with_fd(struct shk_probe_report *rep, int listener, uint64_t id)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct seccomp_notif_addfd a = { .id = id, .flags = SECCOMP_ADDFD_FLAG_SEND,
					 .srcfd = (uint32_t)devnull };
	struct seccomp_notif_resp resp = { .id = id };
	int nfd = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);

	if (nfd >= 0) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_ADDFD], SHK_PROBE_YES, 0,
			      "fd injected and returned atomically (SECCOMP_ADDFD_FLAG_SEND)");
		return nfd;
	}
	a.flags = 0;
	nfd = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	if (nfd >= 0)
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_ADDFD], SHK_PROBE_PARTIAL, 0,
			      "ADDFD works, but not ADDFD_FLAG_SEND (needs Linux 5.14)");
	else
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_ADDFD], SHK_PROBE_NO, errno,
			      "SECCOMP_IOCTL_NOTIF_ADDFD failed (needs Linux 5.9)");
	resp.val = nfd >= 0 ? nfd : 4242;
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return -1;
	return resp.val;
}

static void probe_notify(struct shk_probe_report *rep, int sock, int listener, int pidfd,
			 const struct child_msg *m)
{
	struct seccomp_notif_sizes sz;
	_cleanup_free_ struct seccomp_notif *req = NULL;
	long expect, out[2];
	int fd;

	if (pidfd >= 0) {
		fd = (int)syscall(__NR_pidfd_getfd, pidfd, m->sock_fd, 0);
		if (fd >= 0) {
			shk_probe_set(&rep->r[SHK_PROBE_PIDFD_GETFD], SHK_PROBE_YES, 0,
				      "copied a descriptor out of a child");
			close(fd);
		} else {
			shk_probe_set(&rep->r[SHK_PROBE_PIDFD_GETFD], SHK_PROBE_NO, errno,
				      "pidfd_getfd failed (needs Linux 5.6 and ptrace access)");
		}
	}
	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0 ||
	    !(req = calloc(1, sz.seccomp_notif > sizeof(*req) ? sz.seccomp_notif : sizeof(*req)))) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_NO, errno,
			      "SECCOMP_GET_NOTIF_SIZES failed");
		return;
	}
	if (wait_in(listener, TIMEOUT_MS) < 0 ||
	    ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) < 0 || req->data.nr != __NR_getppid) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_NO, errno,
			      "no notification received for the child's getppid()");
		return;
	}
	expect = answer_with_fd(rep, listener, req->id);
	if (expect < 0 || wait_in(sock, TIMEOUT_MS) < 0 ||
	    read(sock, out, sizeof(out)) != (ssize_t)sizeof(out) || out[0] != expect) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_NO, errno,
			      "the held syscall was not answered as sent");
		return;
	}
	shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_YES, 0,
		      "listener installed, getppid() held and answered with %ld", expect);
}

void shk_probe_seccomp(struct shk_probe_report *rep)
{
	_cleanup_close_ int listener = -EBADF, pidfd = -EBADF;
	struct child_msg m = { 0 };
	int sv[2], r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_UNKNOWN, errno,
			      "socketpair failed");
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		child(sv[1]);
	}
	close(sv[1]);
	if (pid < 0) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_UNKNOWN, errno, "fork");
		close(sv[0]);
		return;
	}
	pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (pidfd >= 0)
		shk_probe_set(&rep->r[SHK_PROBE_PIDFD_OPEN], SHK_PROBE_YES, 0, "pidfd of a child");
	else
		shk_probe_set(&rep->r[SHK_PROBE_PIDFD_OPEN], SHK_PROBE_NO, errno,
			      "pidfd_open failed (needs Linux 5.3)");
	r = recv_msg(sv[0], &m, &listener);
	if (r < 0 || listener < 0) {
		shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_NOTIFY], SHK_PROBE_NO,
			      r < 0 ? -r : m.listener_errno,
			      "could not install a filter with SECCOMP_FILTER_FLAG_NEW_LISTENER");
	} else {
		if (m.wk_accepted)
			shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_WAIT_KILLABLE], SHK_PROBE_YES, 0,
				      "filter flag accepted");
		else
			shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_WAIT_KILLABLE], SHK_PROBE_NO,
				      m.wk_errno, "filter flag refused (needs Linux 5.19)");
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
			  (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) == 0)
			shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_SYNC_WAKE], SHK_PROBE_YES, 0,
				      "listener flag accepted: same-CPU wakeups");
		else
			shk_probe_set(&rep->r[SHK_PROBE_SECCOMP_SYNC_WAKE], SHK_PROBE_NO, errno,
				      "listener flag refused (needs Linux 6.6)");
		probe_notify(rep, sv[0], listener, pidfd, &m);
	}
	close(sv[0]);
	if (listener >= 0) {
		close(listener);
		listener = -EBADF;
	}
	reap(pid);
}
