/* SPDX-License-Identifier: MIT */
/*
 * floor_supervisor: the least a seccomp user-notify supervisor can do.
 *
 *   floor_supervisor [--sync] [--spec-allow] [--log FILE] [--set connect|shackle] -- CMD [ARGS...]
 *
 * Installs a filter that notifies on connect (or, with --set shackle, on the
 * syscalls shackle-run notifies on: execve, execveat, connect, sendto,
 * sendmsg, sendmmsg, bind, listen) and answers SECCOMP_USER_NOTIF_FLAG_CONTINUE
 * to every notification without looking at it. Its added cost per notified
 * syscall is the floor that shackle-run is measured against. It is NOT a
 * security mechanism (CONTINUE re-reads user memory; nothing is checked).
 * --spec-allow installs the filter with SECCOMP_FILTER_FLAG_SPEC_ALLOW: by
 * default the kernel turns on the speculative-store-bypass mitigation for
 * seccomp'd tasks, which alone slows every syscall down.
 * --sync sets SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6) and blocks in
 * RECV instead of poll, as shackle-run does: the kernel then wakes the
 * supervisor on the trapping thread's CPU and the thread back on the
 * supervisor's, with no cross-CPU wakeup. Without it this is the plain
 * poll-and-receive loop of seccomp_unotify(2).
 * --log FILE adds, before each answer, the least that any supervisor which
 * logs a call before letting it run must do: copy the call's pointer
 * argument out of the agent (process_vm_readv: the sockaddr, or the exec
 * path), check that the notification is still valid (ID_VALID, against pid
 * reuse), and append one line to FILE with one write(). No judgement, no
 * hashing, no signature: a lower bound for shackle-run, not a supervisor.
 *
 * Exit status: CMD's (128+N when killed by signal N).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/linux.h"

static const int set_connect[] = { SYS_connect };
static const int set_shackle[] = { SYS_execve, SYS_execveat, SYS_connect, SYS_sendto,
				   SYS_sendmsg, SYS_sendmmsg, SYS_bind, SYS_listen };

static int spec_allow;
static int sync_wake;
static int log_fd = -1;

static int install_filter(const int *nrs, int n)
{
	struct sock_filter f[32];
	struct sock_fprog prog;
	int k = 0;

	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (int i = 0; i < n; i++)
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nrs[i],
						      (unsigned char)(n - i), 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
	prog.len = (unsigned short)k;
	prog.filter = f;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER |
				    (spec_allow ? SECCOMP_FILTER_FLAG_SPEC_ALLOW : 0),
			    &prog);
}

/*
 * The listener fd is fetched with pidfd_getfd(): passing it over a socket
 * would need sendmsg(), which the "shackle" set notifies on before anyone
 * listens.
 */
static int grab_fd(pid_t pid, int remote_fd)
{
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int fd;

	if (pfd < 0)
		return -1;
	fd = (int)syscall(SYS_pidfd_getfd, pfd, remote_fd, 0);
	close(pfd);
	return fd;
}

/* --log: copy the argument, revalidate, append a line. A failure is not
 * an error here (the target may be gone): the cost is what is measured. */
static void log_call(int lfd, const struct seccomp_notif *req)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char arg[128];
	char line[512];
	struct iovec local = { arg, sizeof(arg) };
	struct iovec remote = { (void *)(uintptr_t)req->data.args[req->data.nr == SYS_connect ? 1 : 0],
				sizeof(arg) };
	ssize_t got = process_vm_readv((pid_t)req->pid, &local, 1, &remote, 1, 0);
	__u64 id = req->id;
	int n;

	if (req->data.nr == SYS_connect && req->data.args[2] < sizeof(arg) && got > 0)
		got = got < (ssize_t)req->data.args[2] ? got : (ssize_t)req->data.args[2];
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0)
		return;
	n = snprintf(line, sizeof(line), "{\"pid\":%u,\"nr\":%d,\"id\":%llu,\"arg\":\"",
		     req->pid, req->data.nr, (unsigned long long)req->id);
	for (ssize_t i = 0; i < got && n + 4 < (int)sizeof(line); i++) {
		line[n++] = hex[arg[i] >> 4];
		line[n++] = hex[arg[i] & 15];
	}
	line[n++] = '"';
	line[n++] = '}';
	line[n++] = '\n';
	if (write(log_fd, line, (size_t)n) != n)
		exit(125); /* a log that cannot be written must not answer */
}

/* Answer CONTINUE to everything until the last filtered task is gone. */
static void serve(int lfd)
{
	struct seccomp_notif_sizes sz;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;

	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0) {
		perror("floor_supervisor: SECCOMP_GET_NOTIF_SIZES");
		exit(125);
	}
	req = calloc(1, sz.seccomp_notif);
	resp = calloc(1, sz.seccomp_notif_resp);
	if (!req || !resp)
		exit(125);
	if (sync_wake) {
		if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) < 0) {
			perror("floor_supervisor: SECCOMP_IOCTL_NOTIF_SET_FLAGS");
			exit(125);
		}
		for (;;) {
			memset(req, 0, sz.seccomp_notif);
			if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0) {
				struct pollfd p = { .fd = lfd, .events = POLLIN };

				/* ENOENT: the target died, or no task is left */
				if (errno != EINTR && poll(&p, 1, 0) == 1 &&
				    (p.revents & (POLLHUP | POLLERR)))
					break;
				continue;
			}
			if (log_fd >= 0)
				log_call(lfd, req);
			memset(resp, 0, sz.seccomp_notif_resp);
			resp->id = req->id;
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp);
		}
	}
	while (!sync_wake) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };

		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p.revents & POLLIN) {
			memset(req, 0, sz.seccomp_notif);
			if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
				continue; /* EINTR, or ENOENT: the target is gone */
			if (log_fd >= 0)
				log_call(lfd, req);
			memset(resp, 0, sz.seccomp_notif_resp);
			resp->id = req->id;
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp); /* ENOENT: gone */
		} else if (p.revents & (POLLHUP | POLLERR)) {
			break;
		}
	}
	free(req);
	free(resp);
}

int main(int argc, char **argv)
{
	const int *nrs = set_connect;
	int n = 1, c2p[2], p2c[2], lfd, st, i = 1;
	pid_t pid;

	for (;;) {
		if (argc > 1 && !strcmp(argv[1], "--spec-allow"))
			spec_allow = 1;
		else if (argc > 1 && !strcmp(argv[1], "--sync"))
			sync_wake = 1;
		else if (argc > 2 && !strcmp(argv[1], "--log")) {
			log_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
			if (log_fd < 0) {
				perror(argv[2]);
				return 125;
			}
			argv++;
			argc--;
		} else
			break;
		argv++;
		argc--;
	}
	if (argc > 2 && !strcmp(argv[1], "--set")) {
		if (!strcmp(argv[2], "shackle")) {
			nrs = set_shackle;
			n = (int)(sizeof(set_shackle) / sizeof(set_shackle[0]));
		} else if (strcmp(argv[2], "connect")) {
			fprintf(stderr, "floor_supervisor: --set connect|shackle\n");
			return 2;
		}
		i = 3;
	}
	if (i >= argc || strcmp(argv[i], "--") || i + 1 >= argc) {
		fprintf(stderr, "usage: floor_supervisor [--sync] [--spec-allow] [--log FILE] [--set connect|shackle] -- CMD [ARGS...]\n");
		return 2;
	}
	if (pipe2(c2p, O_CLOEXEC) < 0 || pipe2(p2c, O_CLOEXEC) < 0) {
		perror("floor_supervisor: pipe");
		return 125;
	}
	pid = fork();
	if (pid < 0) {
		perror("floor_supervisor: fork");
		return 125;
	}
	if (pid == 0) {
		char go;
		int fd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = install_filter(nrs, n);
		if (fd < 0 || write(c2p[1], &fd, sizeof(fd)) != sizeof(fd) ||
		    read(p2c[0], &go, 1) != 1) {
			perror("floor_supervisor: seccomp listener");
			_exit(125);
		}
		close(fd);
		execvp(argv[i + 1], argv + i + 1);
		perror("floor_supervisor: exec");
		_exit(127);
	}
	close(c2p[1]);
	close(p2c[0]);
	if (read(c2p[0], &lfd, sizeof(lfd)) != sizeof(lfd))
		lfd = -1;
	else
		lfd = grab_fd(pid, lfd);
	if (lfd < 0 || write(p2c[1], "g", 1) != 1) {
		fprintf(stderr, "floor_supervisor: no listener fd from the child\n");
		waitpid(pid, &st, 0);
		return 125;
	}
	serve(lfd);
	if (waitpid(pid, &st, 0) < 0)
		return 125;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}
