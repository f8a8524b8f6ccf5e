/* SPDX-License-Identifier: MIT */
/*
 * shackle-run's exec check in the kernel (bpf/execverify.bpf.c, docs/exec.md
 * "Verification in the kernel"). Internal to the Linux layer.
 *
 * shk_execverify_open() finds the offsets the program reads in the kernel's
 * BTF, loads the program and attaches it to sched_process_exec for the
 * tasks of one cgroup: it takes tens of milliseconds (the BTF), so it is
 * not called on a thread anybody waits for. From then on an exec of a
 * thread armed by shk_execverify_arm() runs only if its image, working
 * directory, argv and environment are the armed ones; otherwise the kernel
 * kills it before its first instruction. Either way one event says so.
 * Thread ids are global: the caller runs in the initial pid namespace.
 */
#ifndef SHACKLE_EBPF_EXECVERIFY_H
#define SHACKLE_EBPF_EXECVERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct shk_execverify;

int shk_execverify_open(int cgroup_fd, struct shk_execverify **ret_ev);
void shk_execverify_free(struct shk_execverify *ev); /* detaches */
/* Whether the program loads here (the BTF offsets found, the verifier
 * satisfied), without attaching it: 0 or a negative errno. */
int shk_execverify_probe(void);

/* What one approved exec must be (devices as stat() gives them). */
struct shk_execverify_want {
	uint64_t cookie;        /* echoed by its event */
	dev_t dev;
	ino_t ino;
	dev_t cwd_dev;
	ino_t cwd_ino;
	const char *argv;       /* the NUL-terminated strings, as /proc/PID/cmdline */
	size_t argv_len;
	const char *env;        /* likewise, as /proc/PID/environ */
	size_t env_len;
};

/* Whether strings of these lengths can be armed at all. */
bool shk_execverify_fits(size_t argv_len, size_t env_len);
/* Arm (or replace) the approval of thread tid; one map update. */
int shk_execverify_arm(struct shk_execverify *ev, pid_t tid, const struct shk_execverify_want *w);
/* Drop an approval whose exec never came (the kernel failed it). */
int shk_execverify_disarm(struct shk_execverify *ev, pid_t tid);

/* why: 0 the exec runs, else SHK_EXECV_* bits (bpf/execv.h): killed. */
typedef void (*shk_execverify_fn)(void *ctx, uint64_t cookie, pid_t tid, pid_t pid, unsigned why);
/* Hand every event written so far to fn, in order; reads shared memory
 * only (no syscall). Returns how many, or a negative errno. */
int shk_execverify_drain(struct shk_execverify *ev, shk_execverify_fn fn, void *ctx);
/* execs killed because their event could not be written (a full ring) */
uint64_t shk_execverify_lost(struct shk_execverify *ev);

#endif
