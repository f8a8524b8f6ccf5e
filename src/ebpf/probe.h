/* SPDX-License-Identifier: MIT */
/*
 * Kernel feature probes for `shackle doctor` (and for whoever must choose an
 * enforcement mode). Each probe exercises the exact feature once: a listener
 * is installed and a notification answered, a program is loaded and attached
 * and its effect observed. No libbpf: raw bpf(2), seccomp(2) and friends.
 *
 * Probes change nothing that outlives them: temporary cgroups are removed,
 * file systems are mounted only inside a forked child's private mount
 * namespace, programs are detached and closed.
 */
#ifndef SHACKLE_EBPF_PROBE_H
#define SHACKLE_EBPF_PROBE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

enum shk_probe_id {
	SHK_PROBE_SECCOMP_NOTIFY,
	SHK_PROBE_SECCOMP_ADDFD,
	SHK_PROBE_SECCOMP_WAIT_KILLABLE,
	SHK_PROBE_SECCOMP_SYNC_WAKE,
	SHK_PROBE_PIDFD_OPEN,
	SHK_PROBE_PIDFD_GETFD,
	SHK_PROBE_CGROUP2,
	SHK_PROBE_CGROUP_CREATE,
	SHK_PROBE_CGROUP_KILL,
	SHK_PROBE_CGROUP_DELEGATION,
	SHK_PROBE_BPF_SOCK_ADDR,
	SHK_PROBE_BPF_RINGBUF,
	SHK_PROBE_BPF_RAW_TP,
	SHK_PROBE_BPF_SEND_SIGNAL,
	SHK_PROBE_TRACEFS,
	SHK_PROBE_BPF_TRACEPOINT,
	SHK_PROBE_BPF_LSM,
	SHK_PROBE_BPF_FENTRY,
	SHK_PROBE_LANDLOCK,
	SHK_PROBE_USERNS,
	SHK_PROBE_BPF_PROGRAMS, /* bpf/ compiled into this build */
	SHK_PROBE__COUNT
};

enum shk_probe_state {
	SHK_PROBE_NO = 0,
	SHK_PROBE_YES,
	SHK_PROBE_PARTIAL, /* present with a limit the detail names */
	SHK_PROBE_UNKNOWN, /* could not be probed (the detail says why) */
};

struct shk_probe_result {
	int state;         /* enum shk_probe_state */
	int err;           /* errno of the decisive failure, 0 */
	char detail[512];
};

struct shk_probe_report {
	struct shk_probe_result r[SHK_PROBE__COUNT];
	char cgroup2_mount[1024];
	int landlock_abi;  /* 0: none */
	bool root;
};

/* Stable machine name ("seccomp_user_notify") and a title for people. */
const char *shk_probe_key(int id);
const char *shk_probe_title(int id);
const char *shk_probe_state_name(int state);

/* Run every probe once. Never fails: what cannot be probed says so. */
void shk_probe_run(struct shk_probe_report *ret_report);

/*
 * Can BPF LSM enforce here? 0 when "bpf" is an active LSM and a program for
 * bpf_lsm_bprm_check_security loads and attaches (for an instant); else a
 * negative errno (of the decisive failure). why gets the active LSM list,
 * the lockdown mode and what was tried, either way. Forks a child (securityfs
 * may have to be mounted in a private mount namespace to read the list).
 */
int shk_probe_bpf_lsm(char *why, size_t len);

/* ---- internal to the probes ---- */
/* Fill a result; returns 0 so that probes can `return shk_probe_set(...)`. */
__attribute__((format(printf, 4, 5)))
int shk_probe_set(struct shk_probe_result *r, int state, int err, const char *fmt, ...);
void shk_probe_seccomp(struct shk_probe_report *rep);
/* cg_dir: an empty temporary cgroup to attach to, or NULL. */
void shk_probe_bpf(struct shk_probe_report *rep, const char *cg_dir);
void shk_probe_tracefs(struct shk_probe_report *rep);
/* Load and attach (for an instant) a bprm_check_security program; see btf_attach(). */
int shk_probe_bpf_lsm_prog(char *what, size_t len);
int shk_btf_find_func(const char *name, uint32_t *ret_id);
/* BTF id of the vmlinux type of this kind (BTF_KIND_*) and name. */
int shk_btf_find(const char *name, int kind, uint32_t *ret_id);

#endif
