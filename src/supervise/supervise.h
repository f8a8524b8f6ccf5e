/* SPDX-License-Identifier: MIT */
/*
 * supervise.h — the Linux layer of shackle-run: its API for the CLI.
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

#include "judge/obs.h"

#define SHK_SUP_MAX_ARGS 4096
#define SHK_SUP_MAX_ARGBYTES (256 * 1024)
#define SHK_SUP_MAX_SEND (256 * 1024)

struct shk_sup;

/* Called once the agent runs (before its first exec is judged). cgroup_path
 * is the agent's cgroup leaf, or NULL. */
typedef void (*shk_started_fn)(void *ctx, struct shk_sup *sup, pid_t agent_pid,
                               const char *cgroup_path);

/*
 * Answer a held call: allow (a connect may be redirected to another
 * address: the emulation connects there instead) or deny with deny_errno.
 * tool_call: what an allowed exec of the agent's and its descendants
 * belong to from then on (shk_judgement.tool_call), else 0.
 * On the loop thread only (from the judge, tick or extra-fd callbacks).
 * Returns 0, -ENOENT (no such held call) or -ESRCH (the target is gone).
 */
int shk_sup_release(struct shk_sup *sup, uint64_t notif_id, bool allow, int deny_errno,
                    const struct sockaddr_storage *redirect, socklen_t redirect_len,
                    uint64_t tool_call);
/* Is the thread still waiting in that held call? */
bool shk_sup_waiting(struct shk_sup *sup, uint64_t notif_id);

/* How an approved connect reaches the kernel (docs/supervisor.md, "Network"). */
typedef enum shk_net_verify {
	SHK_NET_VERIFY_AUTO = 0, /* bpf when it loads and attaches, else emulate */
	SHK_NET_VERIFY_BPF,      /* CONTINUE checked by the kernel hook; start fails without it */
	SHK_NET_VERIFY_EMULATE,  /* the supervisor performs the call on a copy */
} shk_net_verify;

typedef enum shk_exec_check {
	SHK_EXEC_VERIFY_AUTO = 0, /* bpf from the second exec on when it loads, else ptrace */
	SHK_EXEC_VERIFY_BPF,      /* bpf from the start; the start fails without it */
	SHK_EXEC_VERIFY_PTRACE,   /* every exec at a ptrace exec stop */
} shk_exec_check;

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
	shk_exec_check exec_verify;
};

/* Counters for the session_end entry and for tests. */
struct shk_sup_stats {
	uint64_t notifications;
	uint64_t allowed, denied;
	uint64_t failed;         /* answered with the kernel's own errno, no tool call */
	uint64_t exec_verified, exec_killed;
	/* of those, checked in the kernel (execfast.c) instead of at an exec stop */
	uint64_t exec_in_kernel, exec_killed_in_kernel;
	int exec_kernel_err;     /* errno: the kernel check could not be loaded */
	bool exec_bpf;           /* the kernel check was attached (execfast.c) */
	/* "#!" execs whose script names were watched up to their open, and
	 * those whose names are out of the agent's reach (scriptbind.c) */
	uint64_t script_watched, script_unwatched;
	uint64_t loader_watched, loader_unwatched; /* userland loaders' programs (scriptbind.c) */
	uint64_t processes_seen;
	uint64_t killed_at_end;  /* processes still alive when the main child exited */
	uint64_t gone;           /* targets that disappeared while held */
	bool cgroup;             /* tree held in its own cgroup v2 leaf */
	bool cgroup_clone;       /* the agent was born in it (clone3 CLONE_INTO_CGROUP) */
	bool wait_killable;      /* SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV in use */
	bool sync_wake;          /* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP in use (wait.c) */
	int masked;              /* 1: mask_paths hidden; 0: not needed; <0: -errno of the failure */
	bool proc_guard;         /* Landlock: no writes under /proc for the agent (launch.c) */
	bool net_bpf;            /* connects verified by the kernel hook (else emulated) */
	uint64_t net_continued;  /* connects answered CONTINUE under the hook */
	int cgroup_refused;      /* errno: the agent could not enter its leaf (not started, said) */
	char program[4096];      /* when the start failed: the program refused, or "" */
};

/*
 * Run the command under supervision until it exits. Returns 0 and the
 * command's wait status in *ret_status, or a negative errno when the agent
 * could not be started (nothing ran then). *ret_stats is set on every
 * return, zeroed when nothing was tried. Messages go to stderr prefixed
 * with "shackle-run: " unless cfg->quiet (the CLI reports errors once).
 */
int shk_supervise_run(const struct shk_sup_config *cfg, int *ret_status,
                      struct shk_sup_stats *ret_stats);

/* Convert a wait status into the shell convention (code, or 128+signal). */
int shk_sup_exit_code(int wstatus);

#endif
