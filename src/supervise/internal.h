/* SPDX-License-Identifier: MIT */
/* Shared internals of src/supervise. Not installed. */
#ifndef SHACKLE_SUPERVISE_INTERNAL_H
#define SHACKLE_SUPERVISE_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "supervise/supervise.h"
#include "util/linux.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* pidfd_open: of the thread, not its process */
#endif

/* ---- filter.c ------------------------------------------------------------- */
struct shk_filter_opts {
	pid_t sup_pid, sup_pgid;
	/* the kernel-verified connect is on: no socket whose connect the
	 * hooks cannot see may be made (see netverify.c) */
	bool hooked_families_only;
	const pid_t *tids; /* supervisor threads (main + workers) */
	size_t ntids;
};
int shk_filter_build(const struct shk_filter_opts *o, struct sock_fprog *ret_prog);

/* ---- cgroup.c ------------------------------------------------------------- */
struct shk_cgroup {
	int dirfd;          /* the leaf, -1 when there is none */
	char path[4096];
};
int shk_cgroup_create(struct shk_cgroup *cg, const char *name);
int shk_cgroup_add(struct shk_cgroup *cg, pid_t pid);
int shk_cgroup_kill(struct shk_cgroup *cg);  /* cgroup.kill, or SIGKILL per pid */
int shk_cgroup_count(struct shk_cgroup *cg); /* processes inside, or -errno */
void shk_cgroup_destroy(struct shk_cgroup *cg);

/* ---- mem.c: reading the target's memory ---------------------------------- */
int shk_mem_read(pid_t tid, uint64_t addr, void *buf, size_t len);
/* strings and argv/envp: through windows (mem.h) */

/* Owned argv copy: strings packed in buf. */
struct shk_argv {
	char *buf;
	size_t len, cap;
	const char **v;
	size_t n, vcap;
};
void shk_argv_free(struct shk_argv *a);

/* ---- emu.c: network emulation ------------------------------------------- */
struct shk_sup;

/* One message (or one address, for connect/bind) of an emulated call. */
struct shk_emu_msg {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool has_addr;
	int pathfd;            /* O_PATH fd of a unix socket file, or -1 */
	char *data;
	size_t datalen;
	char *control;         /* cmsgs with SCM_RIGHTS fds translated to ours */
	size_t controllen;
	int *fds;              /* our copies of the fds passed with SCM_RIGHTS */
	size_t nfds;
};

struct shk_emu_job {
	struct shk_emu_job *next;
	uint64_t id;           /* notification id */
	int nr;                /* syscall */
	pid_t tid;
	int pidfd;             /* the calling thread (SIGPIPE, sendmmsg write-back) */
	int sock;              /* our copy of the agent's socket */
	int flags;             /* send flags as the agent gave them */
	int backlog;
	uint64_t mmsg_addr;    /* sendmmsg vector, for msg_len write-back */
	int memfd;             /* sendmmsg: /proc/TID/mem, opened by the loop, or -1 */
	struct shk_emu_msg *msgs; /* &one, or allocated (sendmmsg) */
	size_t nmsgs;
	struct shk_emu_msg one;   /* every call but sendmmsg: no allocation */
	bool judged_deny;      /* denied by the judge (not a plain failure) */
	bool held;             /* parked by a HOLD verdict (shk_sup_release) */
	size_t nfds;           /* SCM_RIGHTS fds held over all msgs (capped) */
	bool pinned;           /* address rewritten to where it goes: emulate */
	int family;            /* SO_DOMAIN of the socket */
	uint64_t cookie;       /* the leaf hook's mark (netverify), 0: none */
	bool done;             /* result already known (res) */
	long res;
};

int shk_emu_start(struct shk_sup *s);
int shk_emu_stop(struct shk_sup *s); /* -EBUSY: a worker is still busy */
#define SHK_EMU_MAX_QUEUED 256 /* blocking calls waiting for a worker */
void shk_emu_submit(struct shk_sup *s, struct shk_emu_job *job); /* full: EAGAIN */
void shk_emu_run(struct shk_sup *s, struct shk_emu_job *job); /* performs and answers */
void shk_emu_job_free(struct shk_emu_job *job);
/* What the job holds closed and freed; the job itself stays (net.c). */
void shk_emu_job_release(struct shk_emu_job *job);
/* Close and free what one message holds; leaves it empty (pathfd -1). */
void shk_emu_msg_release(struct shk_emu_msg *m);

/* ---- the supervisor ------------------------------------------------------- */
struct shk_exec_approval {
	pid_t tid;
	uint64_t notif_id;     /* the exec notification (lazy tracing re-checks it) */
	dev_t dev;
	ino_t ino;
	char *cmdline;         /* expected /proc/PID/cmdline bytes */
	size_t cmdline_len;
	size_t loader_env_len; /* the judged loader variables follow cmdline */
	size_t env_len;        /* then the whole environment block as judged */
	dev_t cwd_dev;         /* the working directory judged, by identity */
	ino_t cwd_ino;
	bool watch_open;       /* ld.so's program: its first open is checked */
	dev_t open_dev;        /* (openwatch.c) against this identity */
	ino_t open_ino;
	bool script_via_fd;    /* a script run by execveat(fd, "", AT_EMPTY_PATH): */
	int script_fd;         /* its interpreter reads /dev/fd/N, which must be */
	dev_t script_dev;      /* the judged script at the exec stop */
	ino_t script_ino;
	uint64_t tool_call;    /* a new tool call: recorded for the process once verified */
	pid_t pid;             /* tid's process (tgid) at judgement */
	int pidfd;             /* of that process, -1: none yet (toolproc.c) */
	bool script;           /* a "#!" exec */
	uint8_t nbind;         /* its scripts (and a userland loader's program) */
	struct {               /* whose names the image opens, in reach of the */
		dev_t dev;     /* agent: watched (scriptbind.c) */
		ino_t ino;
		bool zip;      /* a zip archive: watched to the end */
	} bind[SHK_SUP_MAX_INTERP + 1];
	size_t bind_len;       /* their "name\0abs\0canonical\0" follow the env */
	uint8_t bind_opens;    /* how often the program opens its script, 0: unknown */
	bool userland;         /* a userland loader's program judged: */
	bool userland_bound;   /* its name watched */
	bool bind_canon;       /* it opens a canonical path it computes */
};

/* ptrace options of the two tracing modes (tracer.c). TRACESYSGOOD marks
 * syscall stops (SIGTRAP | 0x80), which only a watched image has. */
#define SHK_PTRACE_TRACED (PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | \
                           PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD)
#define SHK_PTRACE_LAZY (PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD)

/* An image whose first open must be the judged file, or whose opens of
 * script names must return the judged scripts (openwatch.c). */
#define SHK_WATCH_NAMES 8
struct shk_open_watch {
	pid_t pid;
	bool in_open;          /* stopped at the entry of an open */
	int in_name;           /* ... of names[in_name], or -1 */
	bool in_opath;         /* ... with O_PATH (counts no open of it) */
	bool first_open;       /* ld.so: its first open must be dev/ino */
	dev_t dev;
	ino_t ino;
	size_t nnames;
	struct shk_watch_name {
		char *str;     /* "name\0abs\0canonical\0" */
		dev_t dev;
		ino_t ino;
		uint8_t opens_left; /* 0: until exit or exec */
		bool zip;      /* a zip application: opened at every import */
	} names[SHK_WATCH_NAMES];
};

/* A call left waiting by a HOLD verdict. */
struct shk_held {
	uint64_t id;
	bool exec;
	struct shk_exec_approval ap;  /* exec: verified at the exec stop once released */
	struct shk_emu_job *job;      /* network: performed once released */
};

#define SHK_PIDFD_CACHE 64

/* The supervisor's state, in the parts each file owns; struct shk_sup
 * holds one of each and what the loop (run.c) shares with every file. */

/* exec.c: exec approvals awaiting their ptrace exec stop */
struct shk_sup_approvals {
	struct shk_exec_approval *appr;
	size_t nappr, cappr;
};

/* openwatch.c: verified images resumed with PTRACE_SYSCALL until their
 * first open */
struct shk_sup_openwatch {
	struct shk_open_watch *watch;
	size_t nwatch, cwatch;
};

/* path.c: tgid and executable per thread, for the audit entry: /proc reads
 * cost tens of µs, so they are cached until the thread execs or exits */
struct shk_sup_tids {
	struct shk_tidinfo {
		pid_t tid, tgid;
		char *exe;
		int pidfd;     /* lazy tracing: tells whether the thread is gone */
	} *tinfo;
	size_t ntinfo, ctinfo;
};

/* toolproc.c: processes whose exec started a tool call (pid, a pidfd of
 * the process, the seq of the decision), for the calls of their descendants */
#define SHK_TOOLPROC_MAX 256
struct shk_sup_toolprocs {
	struct shk_toolproc {
		pid_t pid;
		int pidfd;
		uint64_t tool_call;
	} *procs;
	size_t n, cap;
	int closing[SHK_TOOLPROC_MAX]; /* pidfds of exited ones, closed after the answer */
	size_t nclosing;
};
/* pid: a process stopped at its verified exec stop; pidfd: one of it
 * opened since it was our tracee, or -1. Takes pidfd. */
void shk_toolproc_add(struct shk_sup *s, pid_t pid, uint64_t tool_call, int pidfd);
/* The closes left from the last calls (after the answer). */
void shk_toolproc_release(struct shk_sup *s);
/* After the CONTINUE answer to tid's approved exec, before anything is reaped. */
void shk_toolproc_answered(struct shk_sup *s, pid_t tid);
/* The tool call pid's calls belong to; 0: the agent's own. Called after
 * the notification of the call was received (toolproc.c). */
uint64_t shk_toolproc_of(struct shk_sup *s, pid_t pid);
void shk_toolproc_forget(struct shk_sup *s, pid_t pid);
void shk_toolproc_free(struct shk_sup *s);

/* execfast.c: execs verified in the kernel (lazy mode), awaiting their
 * event; the program is loaded on a thread of its own */
#define SHK_XF_MAX 256
#define SHK_XF_FS 8
struct shk_sup_execfast {
	bool started;          /* its load was started (or failed to start) */
	unsigned execs;        /* allowed execs before that */
	struct shk_xf_load *load;
	struct shk_execverify *ev; /* attached, NULL: not (yet) */
	uint64_t cookie;
	struct shk_xf_pending {
		uint64_t cookie;
		pid_t tid, pid;
		uint64_t tool_call;
		int pidfd;     /* of its process, for a tool call (toolproc.c) */
	} pend[SHK_XF_MAX];
	size_t npend;
	struct {
		dev_t dev;
		bool ok;       /* stat() gives the kernel's device and inode */
	} fs[SHK_XF_FS];
	unsigned nfs, fs_next;
};
/* 1: armed and answered (or the thread is gone); 0: use the exec stop */
/* After lazy mode is decided: --exec-verify=bpf loads the check now (and
 * fails the start without it), ptrace never does. */
int shk_execfast_setup(struct shk_sup *s);
/* takes ap->pidfd when it is the tool call's process's */
int shk_execfast_try(struct shk_sup *s, const struct seccomp_notif *req,
                     struct shk_exec_approval *ap);
void shk_execfast_drain(struct shk_sup *s); /* events written so far */
void shk_execfast_forget(struct shk_sup *s, pid_t tid);
void shk_execfast_end(struct shk_sup *s);  /* last drain; frees */

/* held.c: calls left waiting by a HOLD verdict */
struct shk_sup_held {
	struct shk_held *held;
	size_t nheld, cheld;
};

/* tracer.c: live tracees (tids), for the kill fallback and accounting, and
 * tids seized by a reused number: let go at their next stop */
struct shk_sup_tree {
	pid_t *tracees;
	size_t ntracees, ctracees;
	pid_t strays[16];
	size_t nstrays;
};

/* emu.c: the emulation workers and their queue */
struct shk_sup_emu {
	pthread_t *workers;
	pid_t *worker_tids;
	int nworkers;
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	struct shk_emu_job *q_head, *q_tail;
	size_t q_len;          /* queued, not yet taken by a worker (capped) */
	bool q_stop;
};

struct shk_sup {
	const struct shk_sup_config *cfg;
	struct shk_sup_stats stats;
	int notify_fd;
	struct shk_waker *waker; /* wait.c */
	bool sync_on;          /* the listener's SYNC_WAKE_UP flag is set now */
	pid_t child;           /* main child */
	pid_t self;            /* our own pid */
	pid_t child_pgid;
	bool child_exited;
	int child_status;
	bool tree_killed;
	bool reap_pending;     /* SIGCHLD seen: drain waitpid */
	struct shk_cgroup cg;
	struct seccomp_notif_sizes sizes;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	struct shk_sup_approvals ex;
	struct shk_sup_openwatch ow;
	struct shk_sup_tids tids;
	struct shk_sup_toolprocs tools;
	/* thread pidfds for pidfd_getfd on network calls (net.c): opening one
	 * makes a pidfs inode (~5 µs); a stale one only fails with ESRCH */
	struct shk_pidfd_slot {
		pid_t tid;     /* 0: empty */
		int fd;
	} pidfds[SHK_PIDFD_CACHE];
	/* A network call's job finished on the loop thread, kept for the next
	 * one (net.c): a connect answered by the kernel check needs no
	 * allocation. Loop thread only; workers free theirs. */
	struct shk_emu_job *spare_job;
	struct shk_sup_held hold;
	struct shk_sup_execfast xf;
	struct shk_sup_tree tree;
	/* lazy tracing (docs/exec.md): threads are seized at their exec
	 * notification and let go after the verified exec stop; the watchdog
	 * kills the cgroup if we die. Else every task is auto-attached. */
	bool lazy;
	int wd_fd;             /* socket to the watchdog, -1 without one */
	/* observation scratch, reused for every call */
	struct shk_obs obs;
	struct shk_argv argv;
	char loader_env[32768]; /* obs.exec.loader_env points here */
	struct shk_sup_emu emu;
	bool drop_creds;       /* workers and unix lookups take the agent's creds */
	char mask_dir[64];     /* made for the child's cover mount, removed at the end */
	struct shk_netverify *nv; /* kernel-verified connect, NULL: emulate */
	int saved_tty_fd;
	pid_t saved_tty_pgrp;
};

/* classes.c: the notified syscalls, one row each */
typedef enum shk_notify_when {
	SHK_NOTIFY_ALWAYS = 1,
	SHK_NOTIFY_SENDTO_DEST,  /* only with an address or MSG_FASTOPEN (filter.c) */
} shk_notify_when;

struct shk_sys_class {
	int nr;
	const char *name;        /* libseccomp's name (filter.c) */
	shk_obs_kind kind;       /* the observation it becomes */
	shk_obs_netop op;        /* SHK_OBS_NET: the operation judged */
	shk_notify_when when;    /* how the filter notifies it */
	/* observe, judge, answer (or hold) one notification of it */
	int (*handle)(struct shk_sup *s, const struct seccomp_notif *req);
	bool sync_wake;          /* the loop prefers a synchronous wake-up (wait.c) */
};

const struct shk_sys_class *shk_sys_class_of(int nr); /* NULL: not a class of ours */
const struct shk_sys_class *shk_sys_class_at(size_t i); /* NULL past the end */

/* notify.c: one notification dispatched on its class */
int shk_notify_dispatch(struct shk_sup *s);
int shk_exec_handle(struct shk_sup *s, const struct seccomp_notif *req);
int shk_judge(struct shk_sup *s, struct shk_judgement *ret);

/* answer.c: the bottom, every answer to the kernel */
int shk_notify_respond(int notify_fd, uint64_t id, int64_t val, int err, bool cont);
int shk_notify_deny(struct shk_sup *s, uint64_t id, int err);
int shk_notify_fail(struct shk_sup *s, uint64_t id, int err); /* the kernel's own errno */

/* held.c */
int shk_held_add(struct shk_sup *s, const struct shk_held *h);
void shk_held_drop_all(struct shk_sup *s);

/* exec.c */
int shk_exec_observe(struct shk_sup *s, const struct seccomp_notif *req,
                     struct shk_exec_approval *ret_appr);
void shk_exec_obs_release(struct shk_sup *s);
int shk_exec_approve(struct shk_sup *s, struct shk_exec_approval *appr);
void shk_exec_forget(struct shk_sup *s, pid_t tid);
/* 0: verified; 1: verified, and its first open must be checked (watched);
 * -EPERM: not what was approved. */
int shk_exec_verify(struct shk_sup *s, pid_t pid, pid_t former_tid);
/* 1: watched, 0: nothing to watch, <0: the image must not run */
int shk_openwatch_add(struct shk_sup *s, pid_t pid, const struct shk_exec_approval *ap);
void shk_openwatch_exec(struct shk_sup *s, pid_t former, pid_t pid);
void shk_openwatch_forget(struct shk_sup *s, pid_t pid);
void shk_openwatch_free(struct shk_sup *s);
/* scriptbind.c */
int shk_script_bind(struct shk_sup *s, pid_t tid, const char *name0, struct shk_exec_approval *ap);
void shk_script_normalise(const char *in, char *out, size_t len);
bool shk_script_zip(int fd, int64_t size);
/* A SIGTRAP stop of pid: 1 when it was a watched syscall stop (handled and
 * resumed), 0 when it is something else. */
int shk_openwatch_stop(struct shk_sup *s, pid_t pid);
/* Lazy mode: pid was let go (PTRACE_DETACH): no longer a tracee. */
void shk_tracer_untrack(struct shk_sup *s, pid_t pid);

/* netverify.c: the kernel-verified CONTINUE for connect */
int shk_netv_setup(struct shk_sup *s);   /* after the cgroup leaf exists */
void shk_netv_teardown(struct shk_sup *s);
/* 1: answered (CONTINUE under an armed approval), 0: emulate instead */
int shk_netv_try(struct shk_sup *s, struct shk_emu_job *j, int type, int proto);

/* net.c */
int shk_net_handle(struct shk_sup *s, const struct seccomp_notif *req);
void shk_net_pidfds_free(struct shk_sup *s);
/* A job done on the loop thread: released, kept as the spare or freed. */
void shk_net_job_done(struct shk_sup *s, struct shk_emu_job *j);
void shk_net_perform(struct shk_sup *s, struct shk_emu_job *j); /* inline or worker */

/* creds.c: the loop thread borrows the agent's filesystem identity */
int shk_creds_enter(struct shk_sup *s);
void shk_creds_leave(struct shk_sup *s);
int shk_creds_become(uid_t uid, gid_t gid); /* per-thread: effective ids only */

/* tidinfo (path.c) */
/* s->obs.pid and s->obs.exe. alive: the caller has just seen alive the very
 * thread a cached entry was made for (net.c's pidfd cache forgets the entry
 * whenever it opens a new pidfd for tid), so the entry needs no check. */
void shk_tidinfo_fill(struct shk_sup *s, pid_t tid, bool alive);
void shk_tidinfo_forget(struct shk_sup *s, pid_t tid);
void shk_tidinfo_free(struct shk_sup *s);

/* wait.c: how the loop thread waits (signals and kicks in shk_wait_take) */
#define SHK_KICK_EXTRA (1ULL << 40) /* cfg->extra_fd is readable */
#define SHK_KICK_WD    (1ULL << 41) /* the watchdog socket: it died */
#define SHK_KICK_TICK  (1ULL << 42) /* TICK_MS passed without another kick */
int shk_wait_init(sigset_t *ret_old);
void shk_wait_restore(void);              /* dispositions from before init */
uint64_t shk_wait_take(void);
bool shk_wait_is_forwarded(int sig);
bool shk_wait_sync(int notify_fd);        /* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP */
void shk_wait_prefer_sync(struct shk_sup *s, bool on); /* per kind of call */
int shk_wait_notif(struct shk_sup *s);
int shk_wait_poll(struct pollfd *fds, nfds_t n);
int shk_waker_start(struct shk_sup *s);
pid_t shk_waker_tid(const struct shk_sup *s);
int shk_waker_watch(struct shk_sup *s, int fd, uint64_t bit, bool rearm);
void shk_waker_unwatch(struct shk_sup *s, int fd);
void shk_waker_stop(struct shk_sup *s);

/* run.c */
void shk_sup_job_stopped(struct shk_sup *s);
void shk_sup_forward(struct shk_sup *s, uint64_t bits); /* recorded signals to the agent */

/* tracer.c */
int shk_tracer_reap(struct shk_sup *s);
void shk_tracer_kill_tree(struct shk_sup *s);
int shk_tracer_seize(struct shk_sup *s, pid_t tid, uint64_t notif_id);
int shk_tracer_watchdog_start(struct shk_sup *s);
void shk_tracer_watchdog_stop(struct shk_sup *s);

#endif
