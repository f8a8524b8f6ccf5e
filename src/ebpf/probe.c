/* SPDX-License-Identifier: MIT */
/* Probe driver: cgroup v2, LSM list, Landlock, user namespaces; see probe.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/landlock.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/ebpf.h>

#include "ebpf/probe.h"
#include "util/linux.h"

static const struct {
	const char *key;
	const char *title;
} names[SHK_PROBE__COUNT] = {
	[SHK_PROBE_SECCOMP_NOTIFY] = { "seccomp_user_notify", "seccomp user notification" },
	[SHK_PROBE_SECCOMP_ADDFD] = { "seccomp_addfd", "SECCOMP_IOCTL_NOTIF_ADDFD" },
	[SHK_PROBE_SECCOMP_WAIT_KILLABLE] = { "seccomp_wait_killable_recv",
					      "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV" },
	[SHK_PROBE_SECCOMP_SYNC_WAKE] = { "seccomp_sync_wake",
					  "SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP" },
	[SHK_PROBE_PIDFD_OPEN] = { "pidfd_open", "pidfd_open" },
	[SHK_PROBE_PIDFD_GETFD] = { "pidfd_getfd", "pidfd_getfd" },
	[SHK_PROBE_CGROUP2] = { "cgroup2", "cgroup v2 hierarchy" },
	[SHK_PROBE_CGROUP_CREATE] = { "cgroup_create", "create a child cgroup" },
	[SHK_PROBE_CGROUP_KILL] = { "cgroup_kill", "cgroup.kill" },
	[SHK_PROBE_CGROUP_DELEGATION] = { "cgroup_delegation", "cgroup delegation" },
	[SHK_PROBE_BPF_SOCK_ADDR] = { "bpf_sock_addr", "eBPF cgroup sock_addr hooks" },
	[SHK_PROBE_BPF_RINGBUF] = { "bpf_ringbuf", "eBPF ring buffer" },
	[SHK_PROBE_BPF_RAW_TP] = { "bpf_raw_tracepoint", "eBPF raw tracepoints" },
	[SHK_PROBE_BPF_SEND_SIGNAL] = { "bpf_send_signal", "eBPF bpf_send_signal()" },
	[SHK_PROBE_TRACEFS] = { "tracefs", "tracefs" },
	[SHK_PROBE_BPF_TRACEPOINT] = { "bpf_tracepoint", "eBPF tracepoints (perf)" },
	[SHK_PROBE_BPF_LSM] = { "bpf_lsm", "BPF LSM" },
	[SHK_PROBE_BPF_FENTRY] = { "bpf_fentry", "eBPF fentry" },
	[SHK_PROBE_LANDLOCK] = { "landlock", "Landlock" },
	[SHK_PROBE_USERNS] = { "unprivileged_userns", "unprivileged user namespaces" },
	[SHK_PROBE_BPF_PROGRAMS] = { "bpf_programs_built", "shackle's eBPF programs (this build)" },
};

const char *shk_probe_key(int id)
{
	return id >= 0 && id < SHK_PROBE__COUNT ? names[id].key : "?";
}

const char *shk_probe_title(int id)
{
	return id >= 0 && id < SHK_PROBE__COUNT ? names[id].title : "?";
}

const char *shk_probe_state_name(int state)
{
	static const char *const s[] = { "no", "yes", "partial", "unknown" };

	return state >= 0 && state <= SHK_PROBE_UNKNOWN ? s[state] : "?";
}

int shk_probe_set(struct shk_probe_result *r, int state, int err, const char *fmt, ...)
{
	va_list ap;

	r->state = state;
	r->err = err;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
	return 0;
}

static void sleep_ms(long ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 }, NULL);
}

/* A child parked in the temporary cgroup, then killed with cgroup.kill. */
static int probe_cgroup_kill(struct shk_probe_result *res, const char *tmp)
{
	char p[1200];
	_cleanup_close_ int fd = -EBADF;
	int status = 0;
	pid_t pid;

	snprintf(p, sizeof(p), "%s/cgroup.kill", tmp);
	if (access(p, F_OK) < 0)
		return shk_probe_set(res, SHK_PROBE_NO, errno,
					   "no cgroup.kill file (needs Linux 5.14)");
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 100; i++)
			sleep_ms(100);
		_exit(0);
	}
	if (pid < 0)
		return shk_probe_set(res, SHK_PROBE_UNKNOWN, errno, "fork");
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (shk_cgroup_enter(tmp, pid) < 0 || fd < 0 || write(fd, "1", 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return shk_probe_set(res, SHK_PROBE_NO, errno, "writing cgroup.kill failed");
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		shk_probe_set(res, SHK_PROBE_YES, 0, "killed a process in a temporary cgroup");
	else
		shk_probe_set(res, SHK_PROBE_NO, 0, "cgroup.kill did not kill (status %#x)", status);
	return 0;
}

static int probe_delegation(struct shk_probe_report *rep, const char *self)
{
	struct shk_probe_result *res = &rep->r[SHK_PROBE_CGROUP_DELEGATION];
	struct stat st;

	if (stat(self, &st) < 0)
		return shk_probe_set(res, SHK_PROBE_UNKNOWN, errno, "cannot stat %s", self);
	if (rep->root)
		shk_probe_set(res, SHK_PROBE_YES, 0,
			      "running as root: cgroups may be created anywhere under the mount");
	else if (st.st_uid == getuid() && access(self, W_OK) == 0)
		shk_probe_set(res, SHK_PROBE_YES, 0, "own cgroup %s is delegated to uid %u", self,
			      (unsigned)getuid());
	else
		shk_probe_set(res, SHK_PROBE_NO, EACCES,
			      "own cgroup %s belongs to uid %u: start under a delegated cgroup, "
			      "e.g. systemd-run --user -p Delegate=yes", self, (unsigned)st.st_uid);
	return 0;
}

/* Creates the temporary cgroup the eBPF probe attaches to (tmp, or "" on failure). */
static int probe_cgroup(struct shk_probe_report *rep, char *tmp, size_t len)
{
	char self[900];
	int r;

	tmp[0] = 0;
	r = shk_cgroup2_mount(rep->cgroup2_mount, sizeof(rep->cgroup2_mount));
	if (r < 0)
		return shk_probe_set(&rep->r[SHK_PROBE_CGROUP2], SHK_PROBE_NO, -r,
					   "no cgroup2 file system in /proc/self/mountinfo");
	shk_probe_set(&rep->r[SHK_PROBE_CGROUP2], SHK_PROBE_YES, 0, "mounted at %s%s",
		      rep->cgroup2_mount, strcmp(rep->cgroup2_mount, "/sys/fs/cgroup") ?
		      " (not /sys/fs/cgroup: hybrid or custom layout)" : "");
	r = shk_cgroup2_self(self, sizeof(self));
	if (r < 0)
		return shk_probe_set(&rep->r[SHK_PROBE_CGROUP_CREATE], SHK_PROBE_UNKNOWN, -r,
					   "own cgroup not found in /proc/self/cgroup");
	probe_delegation(rep, self);
	snprintf(tmp, len, "%s/shackle-doctor-%d", self, (int)getpid());
	if (mkdir(tmp, 0755) < 0) {
		shk_probe_set(&rep->r[SHK_PROBE_CGROUP_CREATE], SHK_PROBE_NO, errno,
			      "cannot create %s", tmp);
		tmp[0] = 0;
		return 0;
	}
	shk_probe_set(&rep->r[SHK_PROBE_CGROUP_CREATE], SHK_PROBE_YES, 0,
		      "created (and removed) %s", tmp);
	probe_cgroup_kill(&rep->r[SHK_PROBE_CGROUP_KILL], tmp);
	return 0;
}

/* One line of a securityfs file, "" when it cannot be read. */
static void read_line(const char *path, char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (f && fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
}

/*
 * /sys/kernel/security/lsm and .../lockdown, mounting securityfs in a private
 * namespace if needed; buf gets "LSM-LIST\nLOCKDOWN".
 */
static int read_security(char *buf, size_t len)
{
	int pfd[2], status = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		char lsm[512], lockdown[128], out[sizeof(lsm) + sizeof(lockdown)];

		close(pfd[0]);
		if (access("/sys/kernel/security/lsm", R_OK) < 0 &&
		    (unshare(CLONE_NEWNS) < 0 ||
		     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		     mount("securityfs", "/sys/kernel/security", "securityfs", 0, NULL) < 0))
			_exit(errno & 0xff);
		read_line("/sys/kernel/security/lsm", lsm, sizeof(lsm));
		read_line("/sys/kernel/security/lockdown", lockdown, sizeof(lockdown));
		if (!lsm[0])
			_exit(EIO);
		snprintf(out, sizeof(out), "%s\n%s", lsm, lockdown[0] ? lockdown : "absent");
		_exit(write(pfd[1], out, strlen(out)) < 0 ? EIO : 0);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return -EAGAIN;
	}
	n = read(pfd[0], buf, len - 1);
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (n <= 0)
		return WIFEXITED(status) && WEXITSTATUS(status) ? -WEXITSTATUS(status) : -EIO;
	buf[n] = 0;
	return 0;
}

int shk_probe_bpf_lsm(char *why, size_t len)
{
	char sec[640], tried[400];
	const char *lockdown = "unknown";
	int r = read_security(sec, sizeof(sec));
	int p = shk_probe_bpf_lsm_prog(tried, sizeof(tried));
	bool active;

	if (r < 0) {
		snprintf(why, len, "active LSM list unreadable (%s); program: %s", strerror(-r),
			 tried);
		return r;
	}
	if (strchr(sec, '\n')) {
		*strchr(sec, '\n') = 0;
		lockdown = sec + strlen(sec) + 1;
	}
	active = strstr(sec, "bpf") != NULL;
	snprintf(why, len, "active LSMs: %s (%s); lockdown: %s; %s", sec,
		 active ? "bpf listed" : "no bpf: programs would attach and never run", lockdown,
		 tried);
	if (p < 0)
		return p;
	return active ? 0 : -EOPNOTSUPP;
}

static int probe_lsm(struct shk_probe_report *rep)
{
	struct shk_probe_result *res = &rep->r[SHK_PROBE_BPF_LSM];
	char why[sizeof(res->detail)];
	int r = shk_probe_bpf_lsm(why, sizeof(why));

	return shk_probe_set(res, r == 0 ? SHK_PROBE_YES : SHK_PROBE_NO, -r, "%s", why);
}

static void probe_landlock(struct shk_probe_report *rep)
{
	long abi = syscall(__NR_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	rep->landlock_abi = abi > 0 ? (int)abi : 0;
	if (abi > 0)
		shk_probe_set(&rep->r[SHK_PROBE_LANDLOCK], SHK_PROBE_YES, 0, "ABI version %ld", abi);
	else
		shk_probe_set(&rep->r[SHK_PROBE_LANDLOCK], SHK_PROBE_NO, errno, "%s",
			      errno == EOPNOTSUPP ? "built in but not enabled (lsm= boot list)"
						  : "not available in this kernel");
}

static void read_sysctl(const char *path, char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");

	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "absent");
	buf[strcspn(buf, "\n")] = 0;
}

static int probe_userns(struct shk_probe_report *rep)
{
	char max[32], clone[32], aa[32];
	int status = 0;
	pid_t pid;

	read_sysctl("/proc/sys/user/max_user_namespaces", max, sizeof(max));
	read_sysctl("/proc/sys/kernel/unprivileged_userns_clone", clone, sizeof(clone));
	read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", aa, sizeof(aa));
	pid = fork();
	if (pid == 0) {
		/* As root, try it as nobody: that is what an unprivileged agent would get. */
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
			_exit(errno & 0xff);
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : errno & 0xff);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return shk_probe_set(&rep->r[SHK_PROBE_USERNS], SHK_PROBE_UNKNOWN, errno,
					   "probe child failed");
	shk_probe_set(&rep->r[SHK_PROBE_USERNS],
		      WEXITSTATUS(status) == 0 ? SHK_PROBE_YES : SHK_PROBE_NO, WEXITSTATUS(status),
		      "unshare(CLONE_NEWUSER) as an unprivileged uid %s; max_user_namespaces=%s "
		      "unprivileged_userns_clone=%s apparmor_restrict_unprivileged_userns=%s",
		      WEXITSTATUS(status) == 0 ? "works" : "refused", max, clone, aa);
	return 0;
}

void shk_probe_run(struct shk_probe_report *rep)
{
	char tmp[1024];

	memset(rep, 0, sizeof(*rep));
	for (int i = 0; i < SHK_PROBE__COUNT; i++)
		shk_probe_set(&rep->r[i], SHK_PROBE_UNKNOWN, 0, "not probed: an earlier step failed");
	rep->root = geteuid() == 0;
	shk_probe_seccomp(rep);
	probe_cgroup(rep, tmp, sizeof(tmp));
	shk_probe_bpf(rep, tmp[0] ? tmp : NULL);
	shk_probe_tracefs(rep);
	probe_lsm(rep);
	probe_landlock(rep);
	probe_userns(rep);
	if (shk_ebpf_built())
		shk_probe_set(&rep->r[SHK_PROBE_BPF_PROGRAMS], SHK_PROBE_YES, 0, "compiled in");
	else
		shk_probe_set(&rep->r[SHK_PROBE_BPF_PROGRAMS], SHK_PROBE_NO, 0, "%s",
			      shk_ebpf_off_reason());
	if (tmp[0] && shk_cgroup_remove(tmp) < 0)
		shk_probe_set(&rep->r[SHK_PROBE_CGROUP_CREATE], SHK_PROBE_PARTIAL, errno,
			      "created %s but could not remove it", tmp);
}
