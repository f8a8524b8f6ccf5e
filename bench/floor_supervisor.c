/* SPDX-License-Identifier: MIT */
/*
 * floor_supervisor: the least a seccomp user-notify supervisor can do.
 *
 *   floor_supervisor [--sync] [--spec-allow] [--log FILE [--entry-bytes N]] [--verify] [--exec-stop] [--set connect|shackle] -- CMD [ARGS...]
 *   floor_supervisor --check-chain FILE
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
 * --verify (with --log) adds, for a connect, what a kernel-verified CONTINUE
 * cannot do without (docs/supervisor.md, "Kernel-verified connect"): our own
 * reference to the very socket the call names (pidfd_getfd, through a pidfd
 * of the calling thread kept while the same thread calls), its cookie
 * (getsockopt SO_COOKIE), one single-use approval keyed by cookie and thread
 * written into an LRU hash map of its own (bpf(2) BPF_MAP_UPDATE_ELEM, the
 * map's shape that of bpf/verify.bpf.c's), and the close of the reference
 * before the answer. No program reads the map: the cgroup hooks' own cost,
 * on the agent's socket() and connect(), is not in this floor.
 * --exec-stop (with --log, not with --sync) adds, for an execve or
 * execveat, what verifying the loaded image cannot do without
 * (docs/exec.md, "Verification at the exec event"): the calling thread is
 * seized (PTRACE_SEIZE with PTRACE_O_TRACEEXEC, before the log line's
 * ID_VALID, which then proves the tid was that thread), and once the answer
 * let the exec run, its PTRACE_EVENT_EXEC stop is waited for, /proc/PID/exe
 * read once and the thread detached, as shackle-run's lazy tracing does for
 * an agent under another uid. Nothing is compared: the exec stop and the
 * ptrace round trips are the cost. Stops come as SIGCHLD on a signalfd
 * polled with the listener, so a thread whose exec failed and that calls
 * again is still answered; a tracee that exits is waited for (its parent
 * then reaps it).
 * --entry-bytes N (with --log) makes each line the least an audit log
 * that chains its entries must write: a line of N bytes (the newline
 * included) from a fixed template, its sequence number patched in, the
 * previous line's hash in it, and the SHA-256 of the line without its own
 * hash member (shackle's shk_sha256, the ledger's hash: the CPU's SHA
 * extensions where present) patched in before the one write(). No
 * rendering of the call, no canonical JSON, no params hash, no signature,
 * no fsync: shackle-run's ledger does all of that and more, so this stays
 * a lower bound. --check-chain FILE verifies such a log with libsodium's
 * SHA-256 (not the code that wrote it): every line N bytes, the numbers
 * 1, 2, ..., every hash that of its line, every prev_hash the line
 * before's; it prints the count and exits 0, or 1 at the first bad line.
 *
 * Exit status: CMD's (128+N when killed by signal N).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/bpf.h>
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
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "core/sha256.h"
#include "util/linux.h"

static const int set_connect[] = { SYS_connect };
static const int set_shackle[] = { SYS_execve, SYS_execveat, SYS_connect, SYS_sendto,
				   SYS_sendmsg, SYS_sendmmsg, SYS_bind, SYS_listen };

static int spec_allow;
static int sync_wake;
static int log_fd = -1;
static int verify_map = -1;
static int exec_stop;
static char *entry; /* --entry-bytes: the line, rewritten in place */
static size_t entry_len;
static uint64_t entry_seq;
static pid_t cmd_pid;
static int cmd_status = -1; /* CMD's wait status when the drain reaped it */

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif
#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* The approvals map of bpf/verify.bpf.c: key cookie + tid (16 bytes),
 * value the judged address (32 bytes), 8192 entries. */
struct verify_key {
	uint64_t cookie;
	uint32_t tid, pad;
};
struct verify_appr {
	uint32_t armed, tid, family;
	uint16_t port, op;
	uint32_t addr[4];
};

static int make_verify_map(void)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_LRU_HASH;
	a.key_size = sizeof(struct verify_key);
	a.value_size = sizeof(struct verify_appr);
	a.max_entries = 8192;
	return (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
}

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

/* --verify, before the address is read: our reference to the socket the
 * call names and its cookie (0: none). The pidfd of the caller is kept
 * while the same thread calls, as shackle-run caches it. */
static int verify_grab(const struct seccomp_notif *req, uint64_t *ret_cookie)
{
	static pid_t cached_tid;
	static int pidfd = -1;
	socklen_t l = sizeof(*ret_cookie);
	int sock;

	*ret_cookie = 0;
	if (cached_tid != (pid_t)req->pid) {
		if (pidfd >= 0)
			close(pidfd);
		pidfd = (int)syscall(SYS_pidfd_open, req->pid, PIDFD_THREAD);
		if (pidfd < 0)
			pidfd = (int)syscall(SYS_pidfd_open, req->pid, 0); /* before 6.9 */
		cached_tid = pidfd < 0 ? 0 : (pid_t)req->pid;
	}
	sock = (int)syscall(SYS_pidfd_getfd, pidfd, (int)req->data.args[0], 0);
	if (sock >= 0 && getsockopt(sock, SOL_SOCKET, SO_COOKIE, ret_cookie, &l) < 0)
		*ret_cookie = 0;
	return sock;
}

/* --verify, after the line is written: the single-use approval of this
 * socket and thread armed with the address read, then our reference
 * closed before the answer (as shackle-run does). */
static void verify_arm(const struct seccomp_notif *req, int sock, uint64_t cookie,
		       const unsigned char *sa)
{
	struct verify_key k = { .cookie = cookie, .tid = req->pid };
	struct verify_appr v = { .armed = 1, .tid = req->pid, .family = AF_INET };
	union bpf_attr a;

	if (cookie) {
		memcpy(&v.port, sa + 2, 2);
		memcpy(v.addr, sa + 4, 4);
		memset(&a, 0, sizeof(a));
		a.map_fd = (uint32_t)verify_map;
		a.key = (uint64_t)(uintptr_t)&k;
		a.value = (uint64_t)(uintptr_t)&v;
		a.flags = BPF_ANY;
		syscall(SYS_bpf, BPF_MAP_UPDATE_ELEM, &a, sizeof(a));
	}
	if (sock >= 0)
		close(sock);
}

/*
 * --entry-bytes: the line is
 *   {"seq":<20 digits>,"prev_hash":"<64 hex>","pad":"x...","hash":"<64 hex>"}\n
 * and its hash is that of the line without its hash member (the bytes up
 * to the pad's closing quote, then "}"), as the ledger hashes an entry.
 */
#define ENTRY_SEQ "{\"seq\":"
#define ENTRY_PREV ",\"prev_hash\":\""
#define ENTRY_PAD "\",\"pad\":\""
#define ENTRY_HASH "\",\"hash\":\""
#define ENTRY_END "\"}\n"
#define LIT(s) (sizeof(s) - 1)
#define ENTRY_DIGITS 20
#define ENTRY_SEQ_OFF LIT(ENTRY_SEQ)
#define ENTRY_PREV_OFF (ENTRY_SEQ_OFF + ENTRY_DIGITS + LIT(ENTRY_PREV))
#define ENTRY_PAD_OFF (ENTRY_PREV_OFF + 64 + LIT(ENTRY_PAD))
#define ENTRY_TAIL (LIT(ENTRY_HASH) + 64 + LIT(ENTRY_END))
#define ENTRY_MIN (ENTRY_PAD_OFF + ENTRY_TAIL)
#define ENTRY_MAX 65536
/* the hashed bytes: up to the pad's closing quote, then "}" */
#define ENTRY_BODY(len) ((len) - ENTRY_TAIL + 1)
#define ENTRY_HASH_OFF(len) ((len) - LIT(ENTRY_END) - 64)

static void hex32(const uint8_t h[32], char *out)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
}

static int entry_make(size_t n)
{
	if (n < ENTRY_MIN || n > ENTRY_MAX || !(entry = malloc(n)))
		return -1;
	memcpy(entry, ENTRY_SEQ, LIT(ENTRY_SEQ));
	memset(entry + ENTRY_SEQ_OFF, '0', ENTRY_DIGITS);
	memcpy(entry + ENTRY_SEQ_OFF + ENTRY_DIGITS, ENTRY_PREV, LIT(ENTRY_PREV));
	memset(entry + ENTRY_PREV_OFF, '0', 64);
	memcpy(entry + ENTRY_PREV_OFF + 64, ENTRY_PAD, LIT(ENTRY_PAD));
	memset(entry + ENTRY_PAD_OFF, 'x', n - ENTRY_MIN);
	memcpy(entry + n - ENTRY_TAIL, ENTRY_HASH, LIT(ENTRY_HASH));
	memset(entry + ENTRY_HASH_OFF(n), '0', 64);
	memcpy(entry + n - LIT(ENTRY_END), ENTRY_END, LIT(ENTRY_END));
	entry_len = n;
	return 0;
}

/* One chained entry: the number patched in, the hash computed and patched
 * in, one write(), the hash kept as the next line's prev_hash. */
static void entry_write(void)
{
	char *hp = entry + ENTRY_HASH_OFF(entry_len);
	uint64_t v = ++entry_seq;
	shk_sha256 st;
	uint8_t h[32];

	for (int i = ENTRY_DIGITS - 1; i >= 0; i--, v /= 10)
		entry[ENTRY_SEQ_OFF + (size_t)i] = (char)('0' + v % 10);
	shk_sha256_init(&st);
	shk_sha256_update(&st, entry, ENTRY_BODY(entry_len));
	shk_sha256_update(&st, "}", 1);
	shk_sha256_final(&st, h);
	hex32(h, hp);
	if (write(log_fd, entry, entry_len) != (ssize_t)entry_len)
		exit(125); /* a log that cannot be written must not answer */
	memcpy(entry + ENTRY_PREV_OFF, hp, 64);
}

/* --check-chain: one line of a chain, the hash of the line before in prev;
 * libsodium's SHA-256, not the writer's. */
static int chain_line(const char *line, size_t len, uint64_t k, char prev[64])
{
	crypto_hash_sha256_state st;
	uint64_t seq = 0;
	uint8_t h[32];
	char want[64];

	if (len < ENTRY_MIN || memcmp(line, ENTRY_SEQ, LIT(ENTRY_SEQ)) ||
	    memcmp(line + ENTRY_SEQ_OFF + ENTRY_DIGITS, ENTRY_PREV, LIT(ENTRY_PREV)) ||
	    memcmp(line + ENTRY_PREV_OFF + 64, ENTRY_PAD, LIT(ENTRY_PAD)) ||
	    memcmp(line + len - ENTRY_TAIL, ENTRY_HASH, LIT(ENTRY_HASH)) ||
	    memcmp(line + len - LIT(ENTRY_END), ENTRY_END, LIT(ENTRY_END)))
		return -1;
	for (int i = 0; i < ENTRY_DIGITS; i++) {
		char c = line[ENTRY_SEQ_OFF + (size_t)i];

		if (c < '0' || c > '9')
			return -1;
		seq = seq * 10 + (uint64_t)(c - '0');
	}
	if (seq != k || memcmp(line + ENTRY_PREV_OFF, prev, 64))
		return -1;
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const unsigned char *)line, ENTRY_BODY(len));
	crypto_hash_sha256_update(&st, (const unsigned char *)"}", 1);
	crypto_hash_sha256_final(&st, h);
	hex32(h, want);
	if (memcmp(line + ENTRY_HASH_OFF(len), want, 64))
		return -1;
	memcpy(prev, want, 64);
	return 0;
}

static int check_chain(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, prev[64];
	size_t cap = 0, len0 = 0;
	uint64_t k = 0;
	ssize_t n;

	if (!f || sodium_init() < 0) {
		perror(path);
		return 2;
	}
	memset(prev, '0', sizeof(prev));
	while ((n = getline(&line, &cap, f)) > 0) {
		if (++k == 1)
			len0 = (size_t)n;
		if ((size_t)n != len0 || chain_line(line, (size_t)n, k, prev) < 0) {
			printf("%s: line %llu breaks the chain\n", path, (unsigned long long)k);
			free(line);
			fclose(f);
			return 1;
		}
	}
	free(line);
	fclose(f);
	printf("%s: chain verified: %llu entries of %zu bytes\n", path, (unsigned long long)k, len0);
	return k ? 0 : 1;
}

/* --log without --entry-bytes: the call's number and argument, in hex */
static void line_write(const struct seccomp_notif *req, const unsigned char *arg, ssize_t got)
{
	static const char hex[] = "0123456789abcdef";
	char line[512];
	int n;

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

/* --log: copy the argument, revalidate, append a line. A failure is not
 * an error here (the target may be gone): the cost is what is measured. */
static void log_call(int lfd, const struct seccomp_notif *req)
{
	unsigned char arg[128];
	struct iovec local = { arg, sizeof(arg) };
	struct iovec remote = { (void *)(uintptr_t)req->data.args[req->data.nr == SYS_connect ? 1 : 0],
				sizeof(arg) };
	__u64 id = req->id;
	uint64_t cookie = 0;
	int sock = -1;
	ssize_t got;

	if (verify_map >= 0 && req->data.nr == SYS_connect)
		sock = verify_grab(req, &cookie);
	got = process_vm_readv((pid_t)req->pid, &local, 1, &remote, 1, 0);
	if (req->data.nr == SYS_connect && req->data.args[2] < sizeof(arg) && got > 0)
		got = got < (ssize_t)req->data.args[2] ? got : (ssize_t)req->data.args[2];
	if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0) {
		if (sock >= 0)
			close(sock);
		return;
	}
	if (entry)
		entry_write();
	else
		line_write(req, arg, got);
	if (verify_map >= 0 && req->data.nr == SYS_connect)
		verify_arm(req, sock, got >= 8 ? cookie : 0, arg);
}

/* --exec-stop, before the answer: the caller becomes a tracee whose exec
 * stops. EPERM: already ours (an exec of it that failed); anything else:
 * it is gone, and the answer fails too. */
static void exec_seize(const struct seccomp_notif *req)
{
	const long opts = PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD;

	if (req->data.nr == SYS_execve || req->data.nr == SYS_execveat)
		ptrace(PTRACE_SEIZE, (pid_t)req->pid, 0, (void *)opts);
}

/* --exec-stop: every stop and exit pending. At the exec stop the new image
 * is loaded and has not run: read its exe link once, let it go. Any other
 * stop is resumed (a signal re-injected); a tracee's exit is only noted. */
static void exec_drain(int sfd)
{
	struct signalfd_siginfo si;
	char path[64], exe[4096];
	pid_t pid;
	int st;

	while (read(sfd, &si, sizeof(si)) == sizeof(si))
		;
	while ((pid = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
		if (pid == cmd_pid && !WIFSTOPPED(st)) {
			cmd_status = st;
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
			snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
			if (readlink(path, exe, sizeof(exe)) < 0)
				exe[0] = 0;
			ptrace(PTRACE_DETACH, pid, 0, 0);
		} else {
			ptrace(PTRACE_CONT, pid, 0,
			       (void *)(long)(st >> 16 ? 0 : WSTOPSIG(st) & 0x7f));
		}
	}
}

/* --exec-stop: SIGCHLD (a tracee's stop or exit) as a file descriptor to
 * poll with the listener. Blocked only here, after the fork: CMD keeps the
 * signal mask it was given. */
static int exec_sigfd(void)
{
	sigset_t m;
	int fd;

	sigemptyset(&m);
	sigaddset(&m, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &m, NULL) < 0 ||
	    (fd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
		perror("floor_supervisor: --exec-stop: signalfd");
		exit(125);
	}
	return fd;
}

/* Answer CONTINUE to everything until the last filtered task is gone. */
static void serve(int lfd)
{
	struct seccomp_notif_sizes sz;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	int sfd;

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
	sfd = exec_stop ? exec_sigfd() : -1;
	while (!sync_wake) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN }, { .fd = sfd, .events = POLLIN } };

		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN))
			exec_drain(sfd);
		if (p[0].revents & POLLIN) {
			memset(req, 0, sz.seccomp_notif);
			if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
				continue; /* EINTR, or ENOENT: the target is gone */
			if (exec_stop)
				exec_seize(req);
			if (log_fd >= 0)
				log_call(lfd, req);
			memset(resp, 0, sz.seccomp_notif_resp);
			resp->id = req->id;
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
			ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp); /* ENOENT: gone */
		} else if (p[0].revents & (POLLHUP | POLLERR)) {
			break;
		}
	}
	if (sfd >= 0) {
		exec_drain(sfd);
		close(sfd);
	}
	free(req);
	free(resp);
}

int main(int argc, char **argv)
{
	const int *nrs = set_connect;
	int n = 1, c2p[2], p2c[2], lfd, st, i = 1;
	pid_t pid;

	if (argc == 3 && !strcmp(argv[1], "--check-chain"))
		return check_chain(argv[2]);
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
		} else if (argc > 1 && !strcmp(argv[1], "--verify")) {
			verify_map = make_verify_map();
			if (verify_map < 0) {
				perror("floor_supervisor: --verify: BPF_MAP_CREATE");
				return 125;
			}
		} else if (argc > 2 && !strcmp(argv[1], "--entry-bytes")) {
			char *end;
			unsigned long v = strtoul(argv[2], &end, 10);

			if (*end || end == argv[2] || entry_make(v) < 0) {
				fprintf(stderr, "floor_supervisor: --entry-bytes %zu..%d\n",
					(size_t)ENTRY_MIN, ENTRY_MAX);
				return 2;
			}
			argv++;
			argc--;
		} else if (argc > 1 && !strcmp(argv[1], "--exec-stop"))
			exec_stop = 1;
		else
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
	if (verify_map >= 0 && log_fd < 0) {
		fprintf(stderr, "floor_supervisor: --verify needs --log\n");
		return 2;
	}
	if (entry && log_fd < 0) {
		fprintf(stderr, "floor_supervisor: --entry-bytes needs --log\n");
		return 2;
	}
	if (exec_stop && (log_fd < 0 || sync_wake)) {
		fprintf(stderr, "floor_supervisor: --exec-stop needs --log, and not --sync\n");
		return 2;
	}
	if (i >= argc || strcmp(argv[i], "--") || i + 1 >= argc) {
		fprintf(stderr, "usage: floor_supervisor [--sync] [--spec-allow] [--log FILE [--entry-bytes N]] [--verify] [--exec-stop] [--set connect|shackle] -- CMD [ARGS...]\n");
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
	cmd_pid = pid;
	serve(lfd);
	if (cmd_status >= 0)
		st = cmd_status;
	else if (waitpid(pid, &st, 0) < 0)
		return 125;
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}
