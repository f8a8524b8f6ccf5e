/* SPDX-License-Identifier: MIT */
/*
 * Human approval for `shackle attach` (attach/hitl.c): the kernel has already
 * denied a call (or killed an exec) that needs a person; the call is parked on shackle-run's
 * operator channel (judge/hitl.c, control.c) as a held call, and an
 * approval installs a single-use allow entry in the kernel so that the
 * agent's retry of exactly that call passes once. docs/ebpf.md, docs/hitl.md.
 */
#ifndef SHACKLE_ATTACH_HITL_H
#define SHACKLE_ATTACH_HITL_H

#include <shackle/ebpf.h>

#include "attach/attach.h"
#include "judge/judged.h"

struct attach_hitl;

/* One line for the operator (io->say). */
__attribute__((format(printf, 2, 3)))
void attach_say(const struct shk_attach_io *io, const char *fmt, ...);

struct attach_hitl_options {
	const char *session_id;
	const char *control_path;    /* NULL: shk_control_path(session_id) */
	const char *cgroup;          /* peers inside it are refused */
	const struct shk_attach_io *io; /* what the operator is told */
};

/* Opens the session's operator channel (js->pipe.hitl; js->err says why not). */
int attach_hitl_open(struct shk_judged *js, shk_ebpf *e, const struct attach_hitl_options *o,
                     struct attach_hitl **ret_ah);
/*
 * The channel is gone or attach failed: cancels what is still held (logged),
 * closes the channel and takes every approval no call has taken yet back out
 * of the kernel, so that no retry passes that nobody would log as approved.
 * Approvals a retry took already stay known until their event is judged.
 * Later calls are not held (a HITL verdict is a block). Returns the first
 * error of a withdrawal that failed (said on stderr): the caller fails
 * closed. NULL: 0.
 */
int attach_hitl_withdraw(struct attach_hitl *ah);
/* Withdraws (above) and frees. NULL: no-op. */
void attach_hitl_close(struct attach_hitl *ah);
int attach_hitl_fd(const struct attach_hitl *ah);

/*
 * Around shk_pipeline_judge for one event: before, whether the call may be
 * held (a call the kernel refused, no other held call for the same
 * destination, or for an exec the same image and argv, and an exec argv the
 * kernel can bind) and, for a retry that took an approval, the approval's rule;
 * after, the held call is remembered or the approval is settled. The after
 * step returns a negative errno when the retry does not match its approval.
 */
void attach_hitl_before(struct attach_hitl *ah, const struct shk_ebpf_event *ev, struct shk_obs *obs);
int attach_hitl_after(struct attach_hitl *ah, const struct shk_ebpf_event *ev,
                      const struct shk_judgement *j);

/* Control traffic (never blocks); negative errno: the channel broke. */
int attach_hitl_handle(struct attach_hitl *ah);
/* Expiry of held calls, withdrawal of approvals nobody used. */
void attach_hitl_tick(struct attach_hitl *ah);

#endif
