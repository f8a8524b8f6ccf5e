/* SPDX-License-Identifier: MIT */
/*
 * hitl.h — calls held for a human in shackle-run (internal API).
 *
 * When the pipeline's verdict is HITL and an operator channel exists, the
 * notification is not answered: the call is parked here (id = its nonce) and
 * offered on the control socket. An operator's decision becomes a §3.6
 * pending transition in the session (shk_session_pending_resolve), the held
 * call is evaluated again by decide() (Rule 4), both the human decision (hitl
 * entry, with the operator) and decide()'s answer (decision entry) are
 * written to the audit log, and only then is the kernel answered through the
 * supervisor's release hook. Unanswered calls expire after the policy's
 * hitl_timeout_s; a held thread that is interrupted (fatal signal, or any
 * signal without WAIT_KILLABLE_RECV) or dies is cancelled. docs/hitl.md.
 *
 * Everything runs on the supervisor's loop thread.
 */
#ifndef SHACKLE_JUDGE_HITL_H
#define SHACKLE_JUDGE_HITL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "judge/control.h"
#include "judge/pipeline.h"
#include "judge/obs.h"

/* How a held notification is answered: provided by the supervisor. */
struct shk_hitl_kernel {
	void *ctx;
	/* allow (with redirect: perform the held connect to that address
	 * instead) or deny with deny_errno. 0, or a negative errno (the target
	 * is gone: nothing was done). */
	int (*release)(void *ctx, uint64_t notif_id, bool allow, int deny_errno,
	               const struct sockaddr_storage *redirect, socklen_t redirect_len,
	               uint64_t tool_call);
	/* Is the thread still waiting in that syscall (SECCOMP_IOCTL_NOTIF_ID_VALID)? */
	bool (*waiting)(void *ctx, uint64_t notif_id);
};

struct shk_hitl_options {
	const char *session_id;
	const char *control_path;     /* NULL: shk_control_path(session_id) */
	uint32_t timeout_s;           /* the policy's hitl_timeout_s (0: the caller does not hold) */
	size_t max_held;              /* the session's max_pending (0: 64) */
	pid_t supervisor_pid;
	const shk_val *info;          /* merged into the control socket's hello (argv, pid) */
	struct shk_hitl_kernel kernel;
	/* Told of each held call and of what became of it (the "pending" and
	 * "resolved" events watchers get), whether anyone watches or not: the
	 * CLI prints them where the agent runs. NULL: nobody is told. */
	void (*notice)(void *ctx, const shk_val *event);
	void *notice_ctx;
};

struct shk_hitl;

/* Opens the control socket. The pipeline must outlive the hitl object. */
int shk_hitl_open(struct shk_pipeline *p, const struct shk_hitl_options *o, struct shk_hitl **ret_hitl);
/* Frees everything; calls still held are cancelled in the audit log (the
 * supervisor has killed the tree by then). NULL is a no-op. */
void shk_hitl_close(struct shk_hitl *h);

void shk_hitl_set_agent(struct shk_hitl *h, pid_t agent_pid, const char *agent_cgroup);
int shk_hitl_fd(const struct shk_hitl *h);
const char *shk_hitl_socket_path(const struct shk_hitl *h);
/* Control traffic (never blocks). A negative errno: the channel broke. */
int shk_hitl_handle(struct shk_hitl *h);
/* Expiry and cancellation; call on every loop wakeup (reads the clocks). */
void shk_hitl_tick(struct shk_hitl *h);

/*
 * Park a call that evaluate/commit answered HITL (its decision entry is
 * already in the log): writes the hitl "pending" entry and tells watchers.
 * net_connect: the call is a connect() the supervisor performs itself, so
 * `modify` can redirect it. 0, or a negative errno (the caller denies).
 */
int shk_hitl_hold(struct shk_hitl *h, const struct shk_obs *obs, uint64_t notif_id, const shk_toolcall *tc,
                  const shk_policy_match *m, const shk_outcome *o, int64_t now_ns);
/* A decision event for watchers (cheap when nobody watches). */
void shk_hitl_note(struct shk_hitl *h, const struct shk_obs *obs, const shk_toolcall *tc,
                   const shk_outcome *o, int64_t now_ns);
/* Calls waiting for a human right now. */
size_t shk_hitl_waiting(const struct shk_hitl *h);
/* The agent may not connect there (built-in rule of the interception). */
bool shk_hitl_refuses(const struct shk_hitl *h, const char *canon_path, int pathfd);

#endif
