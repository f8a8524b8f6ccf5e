/* SPDX-License-Identifier: MIT */
/*
 * judge/obs.h — what an observer hands the judge: one call of the agent as
 * it was seen (an exec, a network call), and the verdict it gets back.
 *
 * The supervisor (src/supervise) and attach (src/attach) observe calls in
 * the kernel and fill these; the judge (judge/pipeline.h) turns one into a
 * tool call. Kernel-independent: a source that is not the kernel asks
 * through judge/source.h instead.
 */
#ifndef SHACKLE_JUDGE_OBS_H
#define SHACKLE_JUDGE_OBS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

typedef enum shk_obs_kind {
	SHK_OBS_EXEC = 1,
	SHK_OBS_NET,
	SHK_OBS_SOURCE,         /* asked by a source other than the kernel (judge/source.h) */
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
	struct timespec ctime;  /* any write changes it (exec.c: first bytes cached) */
	uid_t uid;              /* owner and mode when opened (scriptbind.c) */
	mode_t mode;
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
	 * shackle/loaders.h), NULL if none; a userland loader's target is bound
	 * by its name (scriptbind.c), not by a first-open check (openwatch.c:
	 * its first open is another file) */
	const char *loader_name;
	bool loader_userland;
	char *loader_given;     /* a userland loader's target as its argv names it (owned) */
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

struct shk_source_call;

struct shk_obs_source {
	const struct shk_source_call *call; /* the source's, while it is judged */
};

struct shk_obs {
	shk_obs_kind kind;
	pid_t pid;              /* thread group id */
	pid_t tid;              /* the thread that made the call */
	int nr;                 /* syscall number */
	char exe[PATH_MAX];     /* executable of the caller, "" if unknown */
	uint64_t notif_id;      /* the seccomp notification (shk_sup_release) */
	bool can_hold;          /* a HOLD verdict is possible for this call */
	/* The tool call the caller belongs to: the seq of the decision that
	 * allowed the exec of a process it descends from, or of the model's
	 * proposal that exec carried out (0: the agent's own call, a new tool
	 * call; docs/decide.md, "Tool calls at syscall level"). */
	uint64_t tool_call;
	union {
		struct shk_obs_exec exec;
		struct shk_obs_net net;
		struct shk_obs_source source;
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
	/* ALLOW of an exec of the agent's: the seq of its decision (a new tool
	 * call), or of the proposal it carries out (judge/links.h), which the
	 * process and its descendants belong to from its exec on (0: none, the
	 * exec belongs to obs->tool_call already) */
	uint64_t tool_call;
};

/*
 * Called on the supervisor's loop thread for every observation. Must fill
 * *ret and return 0; a negative return denies with EPERM. The judge is
 * responsible for writing the audit entry BEFORE it returns ALLOW.
 */
typedef int (*shk_judge_fn)(void *ctx, const struct shk_obs *obs, struct shk_judgement *ret);
/* Called once per loop wakeup (at least every 50 ms); it reads the clock it
 * needs itself: a loop wakeup per call would otherwise read one for nothing. */
typedef void (*shk_tick_fn)(void *ctx);

#endif
