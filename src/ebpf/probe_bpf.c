/* SPDX-License-Identifier: MIT */
/*
 * eBPF probes with raw bpf(2): each loads the smallest program of the kind
 * and, where it can be done without effect on the rest of the machine,
 * attaches it and watches it work.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf/probe.h"
#include "util/linux.h"

#define MOV64_IMM(dst, v) ((struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, \
					      .dst_reg = (dst), .imm = (v) })
#define CALL(fn) ((struct bpf_insn){ .code = BPF_JMP | BPF_CALL, .imm = (fn) })
#define EXIT() ((struct bpf_insn){ .code = BPF_JMP | BPF_EXIT })

static int sys_bpf(int cmd, union bpf_attr *a)
{
	return (int)syscall(__NR_bpf, cmd, a, sizeof(*a));
}

static int prog_load(uint32_t type, uint32_t attach_type, uint32_t btf_id,
		     const struct bpf_insn *insns, size_t n)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = type;
	a.expected_attach_type = attach_type;
	a.attach_btf_id = btf_id;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = (uint32_t)n;
	a.license = (uint64_t)(uintptr_t)"GPL";
	return sys_bpf(BPF_PROG_LOAD, &a);
}

/* Attach a tracing/LSM/raw-tracepoint program; name NULL for BTF-targeted ones. */
static int raw_tp_open(const char *name, int prog)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.raw_tracepoint.name = (uint64_t)(uintptr_t)name;
	a.raw_tracepoint.prog_fd = (uint32_t)prog;
	return sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
}

static int cg_attach(int cmd, int cg, int prog, uint32_t type, uint32_t flags)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)cg;
	a.attach_bpf_fd = (uint32_t)prog;
	a.attach_type = type;
	a.attach_flags = flags;
	return sys_bpf(cmd, &a);
}

static int cg_count(int cg, uint32_t type)
{
	uint32_t ids[8];
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)cg;
	a.query.attach_type = type;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = 8;
	if (sys_bpf(BPF_PROG_QUERY, &a) < 0)
		return -errno;
	return (int)a.query.prog_cnt;
}

/* Bounded wait for a child; its exit status, or -1 after killing it. */
static int wait_child(pid_t pid)
{
	int status;

	for (int i = 0; i < 300; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* In the cgroup, connect to 127.0.0.1:9 and exit with the errno (0: connected). */
static int connect_in(const char *cg_dir)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(9),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd;

		if (shk_cgroup_enter(cg_dir, getpid()) < 0)
			_exit(255);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		_exit(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno & 0xff);
	}
	return pid < 0 ? -1 : wait_child(pid);
}

static int probe_sock_addr(struct shk_probe_result *res, const char *cg_dir)
{
	const struct bpf_insn deny[] = { MOV64_IMM(BPF_REG_0, 0), EXIT() };
	_cleanup_close_ int prog = -EBADF, cg = -EBADF;
	int got;

	prog = prog_load(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, BPF_CGROUP_INET4_CONNECT, 0, deny, 2);
	if (prog < 0)
		return shk_probe_set(res, SHK_PROBE_NO, errno, "cannot load a cgroup/connect4 program");
	if (!cg_dir)
		return shk_probe_set(res, SHK_PROBE_UNKNOWN, 0,
				     "program loads; no temporary cgroup to attach it to");
	cg = open(cg_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0 || cg_attach(BPF_PROG_ATTACH, cg, prog, BPF_CGROUP_INET4_CONNECT,
				BPF_F_ALLOW_MULTI) < 0)
		return shk_probe_set(res, SHK_PROBE_NO, errno,
				     "program loads but cannot be attached to a cgroup");
	got = connect_in(cg_dir);
	if (cg_attach(BPF_PROG_DETACH, cg, prog, BPF_CGROUP_INET4_CONNECT, 0) < 0 ||
	    cg_count(cg, BPF_CGROUP_INET4_CONNECT) != 0)
		return shk_probe_set(res, SHK_PROBE_PARTIAL, errno,
				     "attached, but detaching it failed");
	if (got != EPERM)
		return shk_probe_set(res, SHK_PROBE_NO, 0,
				     "attached, but connect() in the cgroup was not refused (got %d)",
				     got);
	return shk_probe_set(res, SHK_PROBE_YES, 0,
			     "attached to a temporary cgroup: connect(127.0.0.1:9) there got EPERM");
}

static void probe_raw_tp(struct shk_probe_report *rep)
{
	const struct bpf_insn ret0[] = { MOV64_IMM(BPF_REG_0, 0), EXIT() };
	const struct bpf_insn sig[] = { MOV64_IMM(BPF_REG_1, 0), CALL(BPF_FUNC_send_signal),
					MOV64_IMM(BPF_REG_0, 0), EXIT() };
	_cleanup_close_ int prog = -EBADF, link = -EBADF, sprog = -EBADF;

	prog = prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, 0, 0, ret0, 2);
	if (prog < 0)
		shk_probe_set(&rep->r[SHK_PROBE_BPF_RAW_TP], SHK_PROBE_NO, errno,
			      "cannot load a raw tracepoint program");
	else if ((link = raw_tp_open("sched_process_exec", prog)) < 0)
		shk_probe_set(&rep->r[SHK_PROBE_BPF_RAW_TP], SHK_PROBE_NO, errno,
			      "cannot attach to raw tracepoint sched_process_exec");
	else
		shk_probe_set(&rep->r[SHK_PROBE_BPF_RAW_TP], SHK_PROBE_YES, 0,
			      "attached to sched_process_exec (no tracefs needed)");
	/* Loaded, never attached: the verifier alone says whether the helper exists. */
	sprog = prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, 0, 0, sig, 4);
	if (sprog < 0)
		shk_probe_set(&rep->r[SHK_PROBE_BPF_SEND_SIGNAL], SHK_PROBE_NO, errno,
			      "bpf_send_signal() refused by the verifier");
	else
		shk_probe_set(&rep->r[SHK_PROBE_BPF_SEND_SIGNAL], SHK_PROBE_YES, 0,
			      "bpf_send_signal() available to tracing programs");
}

static int probe_ringbuf(struct shk_probe_result *res)
{
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_RINGBUF;
	a.max_entries = (uint32_t)sysconf(_SC_PAGESIZE);
	fd = sys_bpf(BPF_MAP_CREATE, &a);
	if (fd < 0)
		return shk_probe_set(res, SHK_PROBE_NO, errno, "cannot create a ring buffer map");
	close(fd);
	return shk_probe_set(res, SHK_PROBE_YES, 0, "ring buffer map created");
}

/*
 * An EPERM from a BTF-attached load, explained: did the verifier run (it
 * writes its log; a refusal before it leaves the log empty), and does a
 * tp_btf program load? That one passes the same capability check (CAP_BPF +
 * CAP_PERFMON) and is BTF-attached too, but needs no trampoline.
 */
static void explain_eperm(uint32_t type, uint32_t attach_type, uint32_t id, char *what,
			  size_t len)
{
	const struct bpf_insn ret0[] = { MOV64_IMM(BPF_REG_0, 0), EXIT() };
	_cleanup_close_ int fd = -EBADF, tp = -EBADF;
	char log[512] = "";
	size_t n = strlen(what);
	union bpf_attr a;
	uint32_t tp_id;
	bool early;

	memset(&a, 0, sizeof(a));
	a.prog_type = type;
	a.expected_attach_type = attach_type;
	a.attach_btf_id = id;
	a.insns = (uint64_t)(uintptr_t)ret0;
	a.insn_cnt = 2;
	a.license = (uint64_t)(uintptr_t)"GPL";
	a.log_buf = (uint64_t)(uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	fd = sys_bpf(BPF_PROG_LOAD, &a);
	early = fd < 0 && errno == EPERM && !log[0];
	if (shk_btf_find("btf_trace_sched_process_exec", BTF_KIND_TYPEDEF, &tp_id) == 0)
		tp = prog_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, tp_id, ret0, 2);
	snprintf(what + n, len - n, "%s; %s", early ? " before the verifier ran (its log stays empty)" : "",
		 tp >= 0 ? "a tp_btf program (same capability check, no trampoline) loads: this "
			   "kernel refuses trampoline-attached programs (fentry/fexit/fmod_ret/LSM), "
			   "no capability is missing"
			 : "a tp_btf program is refused too (missing CAP_BPF/CAP_PERFMON?)");
}

/* Load a BTF-targeted program and attach it for an instant (it returns 0). */
static int btf_attach(uint32_t type, uint32_t attach_type, const char *func, char *what,
		      size_t len)
{
	const struct bpf_insn ret0[] = { MOV64_IMM(BPF_REG_0, 0), EXIT() };
	_cleanup_close_ int prog = -EBADF, link = -EBADF;
	uint32_t id;
	int r = shk_btf_find_func(func, &id);

	if (r < 0) {
		snprintf(what, len, "%s not found in the kernel's BTF", func);
		return r;
	}
	prog = prog_load(type, attach_type, id, ret0, 2);
	if (prog < 0) {
		r = -errno;
		snprintf(what, len, "loading a program for %s refused", func);
		if (r == -EPERM)
			explain_eperm(type, attach_type, id, what, len);
		return r;
	}
	link = raw_tp_open(NULL, prog);
	if (link < 0) {
		snprintf(what, len, "program for %s loads, attaching is refused", func);
		return -errno;
	}
	snprintf(what, len, "attached to %s", func);
	return 0;
}

int shk_probe_bpf_lsm_prog(char *what, size_t len)
{
	return btf_attach(BPF_PROG_TYPE_LSM, BPF_LSM_MAC, "bpf_lsm_bprm_check_security", what, len);
}

void shk_probe_bpf(struct shk_probe_report *rep, const char *cg_dir)
{
	char what[sizeof(rep->r[0].detail)];
	int r;

	probe_sock_addr(&rep->r[SHK_PROBE_BPF_SOCK_ADDR], cg_dir);
	probe_ringbuf(&rep->r[SHK_PROBE_BPF_RINGBUF]);
	probe_raw_tp(rep);
	r = btf_attach(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, "do_nanosleep", what, sizeof(what));
	shk_probe_set(&rep->r[SHK_PROBE_BPF_FENTRY], r == 0 ? SHK_PROBE_YES : SHK_PROBE_NO, -r,
		      "%s", what);
}

/* ---- tracepoints through tracefs, in a child with a private mount namespace ---- */

struct tp_result {
	int already;       /* tracefs was mounted in our namespace */
	int mount_err;
	int id;            /* sched_process_exec tracepoint id, or -errno */
	int load_err;
	int perf_err;
	int setbpf_err;
};

static int find_tracefs(char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - tracefs "), mnt[1024];

		if (sep && sscanf(line, "%*s %*s %*s %*s %1023s", mnt) == 1 &&
		    strlen(mnt) < len) {
			strcpy(buf, mnt);
			return 0;
		}
	}
	return -ENOENT;
}

static void tp_child(struct tp_result *t)
{
	const struct bpf_insn ret0[] = { MOV64_IMM(BPF_REG_0, 0), EXIT() };
	struct perf_event_attr pa = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(pa),
				      .sample_period = 1, .wakeup_events = 1 };
	char dir[1024] = "/sys/kernel/tracing", p[1200];
	_cleanup_fclose_ FILE *f = NULL;
	int prog, pfd;

	t->already = find_tracefs(dir, sizeof(dir)) == 0;
	if (!t->already && (unshare(CLONE_NEWNS) < 0 ||
			    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
			    mount("nodev", dir, "tracefs", 0, NULL) < 0)) {
		t->mount_err = errno;
		return;
	}
	snprintf(p, sizeof(p), "%s/events/sched/sched_process_exec/id", dir);
	f = fopen(p, "re");
	if (!f || fscanf(f, "%d", &t->id) != 1) {
		t->id = -(f ? EPROTO : errno);
		return;
	}
	prog = prog_load(BPF_PROG_TYPE_TRACEPOINT, 0, 0, ret0, 2);
	if (prog < 0) {
		t->load_err = errno;
		return;
	}
	pa.config = (uint64_t)t->id;
	pfd = (int)syscall(__NR_perf_event_open, &pa, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (pfd < 0) {
		t->perf_err = errno;
		return;
	}
	if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog) < 0)
		t->setbpf_err = errno;
}

void shk_probe_tracefs(struct shk_probe_report *rep)
{
	struct tp_result t = { 0 };
	int pfd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		tp_child(&t);
		_exit(write(pfd[1], &t, sizeof(t)) == (ssize_t)sizeof(t) ? 0 : 1);
	}
	close(pfd[1]);
	if (pid < 0 || read(pfd[0], &t, sizeof(t)) != (ssize_t)sizeof(t) || wait_child(pid) != 0) {
		close(pfd[0]);
		shk_probe_set(&rep->r[SHK_PROBE_TRACEFS], SHK_PROBE_UNKNOWN, errno,
			      "the probe child failed");
		return;
	}
	close(pfd[0]);
	if (t.mount_err)
		shk_probe_set(&rep->r[SHK_PROBE_TRACEFS], SHK_PROBE_NO, t.mount_err,
			      "not mounted, and mounting it failed");
	else
		shk_probe_set(&rep->r[SHK_PROBE_TRACEFS], t.already ? SHK_PROBE_YES : SHK_PROBE_PARTIAL,
			      0, t.already ? "mounted" :
			      "not mounted; mountable (mount -t tracefs nodev /sys/kernel/tracing)");
	if (t.mount_err)
		shk_probe_set(&rep->r[SHK_PROBE_BPF_TRACEPOINT], SHK_PROBE_UNKNOWN, 0,
			      "needs tracefs for the tracepoint id");
	else if (t.id < 0 || t.load_err || t.perf_err || t.setbpf_err)
		shk_probe_set(&rep->r[SHK_PROBE_BPF_TRACEPOINT], SHK_PROBE_NO,
			      t.id < 0 ? -t.id : t.load_err ? t.load_err : t.perf_err ? t.perf_err
											: t.setbpf_err,
			      "sched/sched_process_exec: %s",
			      t.id < 0 ? "no tracepoint id" : t.load_err ? "program load refused"
			      : t.perf_err ? "perf_event_open refused" : "PERF_EVENT_IOC_SET_BPF refused");
	else
		shk_probe_set(&rep->r[SHK_PROBE_BPF_TRACEPOINT], SHK_PROBE_YES, 0,
			      "attached to sched/sched_process_exec (id %d)", t.id);
}
