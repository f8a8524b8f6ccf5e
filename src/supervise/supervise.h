/* SPDX-License-Identifier: MIT */
/*
 * supervise.h — the Linux layer of shackle-run (internal API).
 *
 * The supervisor launches the agent under a seccomp user-notify filter, traces
 * its tree with ptrace (exec verification, tree accounting), turns every
 * notified syscall into an observation (shk_obs), asks a judge for a verdict
 * and enforces it: CONTINUE for an approved exec (verified again at the ptrace
 * exec stop), emulation on a validated copy for every network call, an errno
 * for everything else. docs/supervisor.md describes the design and the races.
 *
 * The judge is an interface so that the Linux layer can be tested on its own;
 * shackle-run plugs the policy → decide() → audit pipeline into it.
 */
#ifndef SHACKLE_SUPERVISE_H
#define SHACKLE_SUPERVISE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#define SHK_SUP_MAX_ARGS 4096
#define SHK_SUP_MAX_ARGBYTES (256 * 1024)
#define SHK_SUP_MAX_SEND (256 * 1024)

typedef enum shk_obs_kind {
	SHK_OBS_EXEC = 1,
	SHK_OBS_NET,
} shk_obs_kind;

typedef enum shk_obs_netop {
	SHK_OBS_CONNECT = 1,
	SHK_OBS_SENDTO,   /* sendto with an address, or MSG_FASTOPEN */
	SHK_OBS_SENDMSG,  /* sendmsg / sendmmsg */
	SHK_OBS_BIND,
	SHK_OBS_LISTEN,   /* judged on the socket's bound address */
} shk_obs_netop;

#define SHK_SUP_MAX_INTERP 4

/* A file the kernel will read for an exec: named by the call, a "#!"
 * interpreter, or the program ld.so is asked to run. */
struct shk_exec_file {
	char path[PATH_MAX];    /* canonical name */
	dev_t dev;
	ino_t ino;
	int64_t size;
	struct timespec ctime;  /* any write changes it (exec.c: files known not to be scripts) */
	int fd;                 /* O_PATH fd, valid while the judge runs; -1 otherwise */
};

struct shk_obs_exec {
	struct shk_exec_file file;  /* the file named by the call */
	struct shk_exec_file interp[SHK_SUP_MAX_INTERP]; /* "#!" chain, outermost first */
	size_t ninterp;
	/* the argv the kernel gives each interpreter ("name\0arg\0script\0
	 * argv[1]\0..."), owned by the supervisor: judged with that, not with
	 * the script's own argv */
	char *interp_cmd[SHK_SUP_MAX_INTERP];
	size_t interp_cmd_len[SHK_SUP_MAX_INTERP];
	/* the program ld.so is asked to run gets ld.so's argv from its own
	 * name on (a copy, owned by the supervisor) */
	char *loader_cmd;
	size_t loader_cmd_len;
	struct shk_exec_file loader_target; /* ld.so ARGV: the program, when has_loader_target */
	bool has_loader_target;
	bool loader_code_opts;  /* ld.so's options load code: --preload, --audit, --library-path */
	/* the loader the exec runs ("ld.so", or a userland loader of
	 * shackle/loaders.h), NULL if none; a userland loader's target is not
	 * watched up to its open (openwatch.c: its first open is another file) */
	const char *loader_name;
	bool loader_userland;
	/* a userland loader's command line not understood: why, and the
	 * argument (truncated); the exec is denied (builtin:loader-cmdline) */
	const char *loader_refused;
	char loader_bad[256];
	char cwd[PATH_MAX];
	const char *const *argv; /* argc strings, owned by the supervisor */
	size_t argc;
	bool via_fd;            /* execveat with AT_EMPTY_PATH (fd/memfd) */
	/* "NAME=value\0" of each judged variable in envp, in order: the
	 * dynamic-loader and interpreter variables of shackle/execenv.h (of any
	 * interpreter: the judge picks those of the program's); len 0: none */
	const char *loader_env;
	size_t loader_env_len;
};

struct shk_obs_net {
	shk_obs_netop op;
	int family;             /* AF_INET, AF_INET6, AF_UNIX, AF_UNSPEC */
	int socktype;           /* SOCK_STREAM, SOCK_DGRAM, ... */
	int protocol;           /* SO_PROTOCOL of the socket */
	uint8_t addr[16];       /* network order; a v4-mapped v6 is reported as v4 */
	uint16_t port;          /* host order */
	char addr_str[64];      /* printable address */
	char unix_name[PATH_MAX]; /* canonical path, or the abstract name without its NUL */
	size_t unix_len;
	bool unix_abstract;
	bool unix_unnamed;      /* AF_UNIX with no name (autobind / unbound) */
	int unix_pathfd;        /* O_PATH fd of the socket file judged, -1 if none */
};

struct shk_obs {
	shk_obs_kind kind;
	pid_t pid;              /* thread group id */
	pid_t tid;              /* the thread that made the call */
	int nr;                 /* syscall number */
	char exe[PATH_MAX];     /* executable of the caller, "" if unknown */
	uint64_t notif_id;      /* the seccomp notification (shk_sup_release) */
	bool can_hold;          /* a HOLD verdict is possible for this call */
	union {
		struct shk_obs_exec exec;
		struct shk_obs_net net;
	};
};

typedef enum shk_judge_verdict {
	SHK_JUDGE_DENY = 0,     /* zero value denies */
	SHK_JUDGE_ALLOW,
	SHK_JUDGE_HOLD,         /* leave the call waiting; shk_sup_release answers it
	                         * later (only when obs->can_hold) */
} shk_judge_verdict;

struct shk_judgement {
	shk_judge_verdict verdict;
	int deny_errno;         /* errno the agent sees on DENY (EPERM if 0) */
};

/*
 * Called on the supervisor's loop thread for every observation. Must fill
 * *ret and return 0; a negative return denies with EPERM. The judge is
 * responsible for writing the audit entry BEFORE it returns ALLOW.
 */
typedef int (*shk_judge_fn)(void *ctx, const struct shk_obs *obs, struct shk_judgement *ret);
/* Called once per loop wakeup (at least every 50 ms) with the monotonic time. */
typedef void (*shk_tick_fn)(void *ctx, int64_t now_ns);

struct shk_sup;

/* Called once the agent runs (before its first exec is judged). cgroup_path
 * is the agent's cgroup leaf, or NULL. */
typedef void (*shk_started_fn)(void *ctx, struct shk_sup *sup, pid_t agent_pid,
                               const char *cgroup_path);

/*
 * Answer a held call: allow (a connect may be redirected to another
 * address: the emulation connects there instead) or deny with deny_errno.
 * On the loop thread only (from the judge, tick or extra-fd callbacks).
 * Returns 0, -ENOENT (no such held call) or -ESRCH (the target is gone).
 */
int shk_sup_release(struct shk_sup *sup, uint64_t notif_id, bool allow, int deny_errno,
                    const struct sockaddr_storage *redirect, socklen_t redirect_len);
/* Is the thread still waiting in that held call? */
bool shk_sup_waiting(struct shk_sup *sup, uint64_t notif_id);

/* How an approved connect reaches the kernel (docs/supervisor.md, "Network"). */
typedef enum shk_net_verify {
	SHK_NET_VERIFY_AUTO = 0, /* bpf when it loads and attaches, else emulate */
	SHK_NET_VERIFY_BPF,      /* CONTINUE checked by the kernel hook; start fails without it */
	SHK_NET_VERIFY_EMULATE,  /* the supervisor performs the call on a copy */
} shk_net_verify;

struct shk_sup_config {
	char *const *argv;      /* command to run; argv[0] looked up in PATH */
	shk_judge_fn judge;
	shk_tick_fn tick;       /* may be NULL */
	void *judge_ctx;
	uid_t run_uid;          /* used when running as root and drop_privs */
	gid_t run_gid;
	bool drop_privs;
	bool quiet;             /* no warnings on stderr */
	bool verbose;           /* notes too: what is weaker here (no cgroup, no Landlock) */
	const char *run_user;   /* the agent's user, named in errors when it is not ours */
	/* Files the agent must neither read nor write (audit log, key). As
	 * root the agent's other uid protects them; otherwise they are
	 * covered by an unreadable read-only file in a private mount namespace
	 * (user namespace), when the kernel allows one. */
	const char *const *mask_paths;
	size_t nmask;
	int emu_threads;        /* network emulation workers (0 = default 4) */
	shk_started_fn started; /* may be NULL */
	/* One more fd for the loop's epoll (the operator channel), -1 for none;
	 * on_extra runs when it is readable; a negative return removes it. */
	int extra_fd;
	int (*on_extra)(void *ctx);
	shk_net_verify net_verify;
};

/* Counters for the session_end entry and for tests. */
struct shk_sup_stats {
	uint64_t notifications;
	uint64_t allowed, denied;
	uint64_t failed;         /* answered with the kernel's own errno, no tool call */
	uint64_t exec_verified, exec_killed;
	uint64_t processes_seen;
	uint64_t killed_at_end;  /* processes still alive when the main child exited */
	uint64_t gone;           /* targets that disappeared while held */
	bool cgroup;             /* tree held in its own cgroup v2 leaf */
	bool wait_killable;      /* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV in use */
	bool sync_wake;          /* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP in use (wait.c) */
	int masked;              /* 1: mask_paths hidden; 0: not needed; <0: -errno of the failure */
	bool proc_guard;         /* Landlock: no writes under /proc for the agent (launch.c) */
	bool net_bpf;            /* connects verified by the kernel hook (else emulated) */
	uint64_t net_continued;  /* connects answered CONTINUE under the hook */
	char program[4096];      /* when the start failed: the program refused, or "" */
};

/*
 * Run the command under supervision until it exits. Returns 0 and the
 * command's wait status in *ret_status, or a negative errno when the agent
 * could not be started (nothing ran then). Messages go to stderr prefixed
 * with "shackle-run: " unless cfg->quiet (the CLI reports errors once).
 */
int shk_supervise_run(const struct shk_sup_config *cfg, int *ret_status,
                      struct shk_sup_stats *ret_stats);

/* Convert a wait status into the shell convention (code, or 128+signal). */
int shk_sup_exit_code(int wstatus);

#endif
