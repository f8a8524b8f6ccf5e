/* SPDX-License-Identifier: MIT */
/*
 * attach/attach.h — `shackle attach`: the policy enforced on every process of
 * a running cgroup v2 by the eBPF programs, each event judged by the session's
 * judge (judge/judged.h) and logged, stateful verdicts pushed back into the
 * kernel, held calls offered on the operator channel. docs/ebpf.md.
 */
#ifndef SHACKLE_ATTACH_H
#define SHACKLE_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/audit.h>
#include <shackle/json.h>

/* What the engine tells the operator: the CLI decides how it looks. */
struct shk_attach_io {
	void *ctx;
	void (*say)(void *ctx, const char *line);         /* one line: a note or an error */
	void (*notice)(void *ctx, const shk_val *event);  /* a held call and its outcome */
	/* a name from the workload made printable (terminal escapes) */
	const char *(*text)(const char *s, char *buf, size_t len);
};

struct shk_attach_options {
	const char *cgroup, *policy_path;
	const char *audit_path, *key_path;  /* NULL: shackle-run's defaults */
	const char *session_id;             /* NULL: attach-PID-TIME */
	const char *pin;                    /* keep the programs under this bpffs dir */
	const char *control;                /* the operator channel's socket, or NULL */
	bool exec, non_interactive;
	long duration_s;                    /* 0: until SIGINT, SIGTERM or SIGHUP */
	long resolve_s;                     /* host rules refreshed every ..., 0: default */
	/* The model gateway (a policy with "models"): IPv4 address, network
	 * byte order (0: 127.0.0.1), and port (0: ephemeral); gateway_set: the
	 * operator named them (refused without "models"). */
	uint32_t gateway_addr;
	uint16_t gateway_port;
	bool gateway_set;
	const char *sdk_socket;             /* serve the SDK socket here, or NULL */
	shk_fsync_policy fsync;
	const char *version;                /* logged in session_start */
	struct shk_attach_io io;
};

/* Runs until a signal or the duration: 0; 1 when judging failed (the
 * breaker was opened) or the session could not start; 2 for a policy or
 * cgroup that cannot be enforced. */
int shk_attach_run(const struct shk_attach_options *o);

#endif
