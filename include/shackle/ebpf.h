/* SPDX-License-Identifier: MIT */
/*
 * shackle/ebpf.h — kernel-side enforcement with eBPF (docs/ebpf.md).
 *
 * One shk_ebpf is one loaded copy of bpf/shackle.bpf.c with its own maps:
 * cgroup sock_addr hooks (connect, sendmsg and bind for IPv4 and IPv6) that
 * answer from a static rule set plus the stateful verdicts user space pushes
 * down, and an exec hook (raw tracepoint sched_process_exec) that kills a
 * denied image in the attached cgroup before it runs, plus, where the kernel
 * allows BPF LSM, lsm/bprm_check_security (bpf/lsm.bpf.c) refusing it with
 * EPERM before it is loaded (shk_ebpf_exec_path()). Every call the hooks
 * see is reported through a ring buffer.
 *
 * When shackle was built without the BPF toolchain, shk_ebpf_built() is
 * false and every function that would load or touch a program returns
 * -EOPNOTSUPP. The cgroup helpers work either way.
 *
 * Functions return 0 (or a count) or a negative errno; out-parameters last.
 * Nothing here prints.
 */
#ifndef SHACKLE_EBPF_H
#define SHACKLE_EBPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- build ---------------------------------------------------------------- */

/* True when the BPF programs were compiled into this build. */
bool shk_ebpf_built(void);
/* Why not, when shk_ebpf_built() is false ("" otherwise). */
const char *shk_ebpf_off_reason(void);

/* ---- cgroup v2 ------------------------------------------------------------ */

/*
 * Mount point of the cgroup v2 hierarchy, discovered from
 * /proc/self/mountinfo (it is not always /sys/fs/cgroup). -ENOENT when no
 * cgroup2 file system is mounted, -ENAMETOOLONG when buf is too small.
 */
int shk_cgroup2_mount(char *buf, size_t len);
/* Absolute path of the caller's own cgroup v2 directory ("0::" line). */
int shk_cgroup2_self(char *buf, size_t len);
/* The cgroup id (what bpf_get_current_cgroup_id() returns) of a directory. */
int shk_cgroup_id(const char *path, uint64_t *ret_id);
/* Move a process into the cgroup at path (writes cgroup.procs). */
int shk_cgroup_enter(const char *path, pid_t pid);
/*
 * Remove a cgroup: kill what is left in it (cgroup.kill when the kernel has
 * it, SIGKILL per pid otherwise), wait for it to empty (bounded), rmdir.
 */
int shk_cgroup_remove(const char *path);

/* ---- rules ---------------------------------------------------------------- */

enum {
	SHK_EBPF_ALLOW = 0, /* same order as shk_action in shackle/policy.h */
	SHK_EBPF_DENY = 1,
	SHK_EBPF_HITL = 2,  /* denied in the kernel, reported for approval */
};

enum {
	SHK_EBPF_OP_CONNECT = 1u, /* same bits as shk_net_op */
	SHK_EBPF_OP_SEND = 2u,
	SHK_EBPF_OP_BIND = 4u,
	SHK_EBPF_OP_ALL = 7u,
};

#define SHK_EBPF_NO_TOOL 0xffffffffu
#define SHK_EBPF_NO_RULE 0xffffffffu
/* Rules that may cover one address prefix (nested CIDRs share the bound). */
#define SHK_EBPF_RULES_PER_PREFIX 16

/*
 * One static network rule. Rules are matched in array order, first match
 * wins, like the policy's. An AF_INET6 rule inside ::ffff:0:0/96 is turned
 * into the IPv4 rule it means; other IPv6 rules never match IPv4 traffic.
 * Operations without a sock_addr hook (listen) cannot be expressed here: bind
 * is the gate for servers.
 */
struct shk_ebpf_net_rule {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t addr[16];    /* network byte order; AF_INET uses addr[0..3] */
	unsigned prefix;     /* 0..32 or 0..128; host bits of addr are ignored */
	uint16_t port_lo;    /* inclusive, host byte order */
	uint16_t port_hi;
	uint8_t proto;       /* 0 any, IPPROTO_TCP or IPPROTO_UDP */
	uint8_t ops;         /* SHK_EBPF_OP_* bits, at least one */
	uint8_t action;      /* SHK_EBPF_ALLOW / DENY / HITL */
	uint32_t tool_id;    /* caller's tool class for shk_ebpf_deny_tool(), or SHK_EBPF_NO_TOOL */
};

/* 0 or -EINVAL when a field is out of range. */
int shk_ebpf_net_rule_check(const struct shk_ebpf_net_rule *rule);

struct shk_policy;
/*
 * The IP rules of a policy's network section (CIDR rules, and host rules with
 * the addresses installed by shk_policy_set_host_addrs()), in policy order,
 * with tool_id = the rule's index in the section. Unix-socket and listen-only
 * rules have no sock_addr hook: they are left out and counted in
 * *ret_skipped (may be NULL). The caller frees *ret_rules. Needs libshackle.
 */
int shk_ebpf_rules_from_policy(const struct shk_policy *policy,
                               struct shk_ebpf_net_rule **ret_rules, size_t *ret_n,
                               size_t *ret_skipped);

/* ---- programs ------------------------------------------------------------- */

typedef struct shk_ebpf shk_ebpf;

struct shk_ebpf_opts {
	uint8_t net_default;  /* action when no network rule matches */
	uint8_t exec_default; /* action for an image without an exec rule */
	bool exec;            /* load and attach the exec hook */
	bool report_allowed;  /* report allowed calls too (attach mode accounts them); a
	                       * call that cannot be reported (ring full) is then refused */
	uint32_t ring_bytes;  /* ring buffer size, a power of two >= page size; 0: 1 MiB */
	uint8_t exec_lsm;     /* SHK_EBPF_LSM_AUTO (0) or SHK_EBPF_LSM_OFF; see shk_ebpf_exec_path() */
};

enum { SHK_EBPF_LSM_AUTO = 0, SHK_EBPF_LSM_OFF = 1 };

/* Open and load the programs (needs CAP_BPF/CAP_SYS_ADMIN). */
int shk_ebpf_open(const struct shk_ebpf_opts *opts, shk_ebpf **ret_ebpf);
/* Detach (unless pinned), close links and maps, free. NULL is a no-op. */
void shk_ebpf_free(shk_ebpf *e);

/*
 * Replace the static network rules (call before attach: the maps are filled
 * one entry at a time). -EINVAL for a bad rule, -E2BIG when more than
 * SHK_EBPF_RULES_PER_PREFIX rules cover one prefix or the maps are full.
 */
int shk_ebpf_set_net_rules(shk_ebpf *e, const struct shk_ebpf_net_rule *rules, size_t n);
/*
 * Replace the static network rules while attached (host rules re-resolved):
 * new and changed map entries go in longest prefix first, stale ones go out
 * shortest prefix first, so every address is judged by the old rule set until
 * it is judged by the new one, never by neither or by a mix. Not atomic over
 * several addresses: for a moment one address may already have its new verdict
 * while another still has its old one. Errors as shk_ebpf_set_net_rules(); a
 * failure part way leaves every address with its old or its new verdict.
 */
int shk_ebpf_update_net_rules(shk_ebpf *e, const struct shk_ebpf_net_rule *rules, size_t n);
/* Exec rule for the file at path (device + inode of what it resolves to). */
int shk_ebpf_set_exec_rule(shk_ebpf *e, const char *path, uint8_t action);

/*
 * Attach every hook to the cgroup directory (an open O_DIRECTORY fd) as bpf
 * links, which coexist with other programs attached with BPF_F_ALLOW_MULTI.
 * The hooks then apply to the cgroup and all its descendants. The TCP
 * listeners already there are then marked as listening before the attach
 * (the listen gate drops for every unmarked one); -errno of that scan fails
 * the attach too.
 */
int shk_ebpf_attach(shk_ebpf *e, int cgroup_fd);
/* Destroy the links (pinned ones too: unpins them). Idempotent. */
int shk_ebpf_detach(shk_ebpf *e);

/*
 * Which hook stops a denied exec, once attached with opts.exec:
 * SHK_EBPF_EXEC_LSM: lsm/bprm_check_security (bpf/lsm.bpf.c) refuses it with
 * EPERM before the image is loaded; the tracepoint stays attached as the
 * reporter of allowed execs. SHK_EBPF_EXEC_TRACEPOINT: raw tracepoint
 * sched_process_exec + SIGKILL only. shk_ebpf_attach() attaches the
 * tracepoint first and then tries BPF LSM (with SHK_EBPF_LSM_AUTO, where
 * shk_probe_bpf_lsm() says it is usable), so a failure there leaves the
 * tracepoint path, never no path. *ret_why (may be NULL) says why not LSM,
 * "" otherwise. SHK_EBPF_EXEC_NONE: no exec hook attached.
 */
enum shk_ebpf_exec_path {
	SHK_EBPF_EXEC_NONE = 0,
	SHK_EBPF_EXEC_TRACEPOINT,
	SHK_EBPF_EXEC_LSM,
};
int shk_ebpf_exec_path(const shk_ebpf *e, const char **ret_why);
/* "none", "tracepoint", "lsm". */
const char *shk_ebpf_exec_path_name(int path);

struct shk_doc;
struct shk_val;
/*
 * Put the exec path into an audit counters object (session_end): "exec_hook"
 * = shk_ebpf_exec_path_name(), and with the tracepoint path
 * "exec_lsm_unused" = why not BPF LSM. e may be NULL ("none"). Needs
 * libshackle. 0 or -ENOMEM.
 */
int shk_ebpf_exec_counters(const shk_ebpf *e, struct shk_doc *doc, struct shk_val *counters);

/*
 * Pin the maps and links under dir (a new directory on bpffs, normally under
 * /sys/fs/bpf) so that enforcement survives this process. Remove them with
 * shk_ebpf_unpin(dir): unlinking the link pins detaches (the kernel drops the
 * last reference from a work queue, a moment later).
 */
int shk_ebpf_pin(shk_ebpf *e, const char *dir);

/*
 * Remove what shk_ebpf_pin(dir) made, and dir. Nothing is touched unless all
 * of dir checks out first: -ENOTDIR: not a directory (a symbolic link to
 * one is not followed); -EMEDIUMTYPE: not on bpffs; -EEXIST: an entry that shackle did not
 * pin (its name in ret_entry, entry_len bytes, may be 0); -ENODATA: dir holds
 * no pins of shackle's; other negative errno from the file system.
 */
int shk_ebpf_unpin(const char *dir, char *ret_entry, size_t entry_len);

/* ---- stateful verdicts ------------------------------------------------------ */

/*
 * A destination as the hooks see it. family AF_INET covers v4-mapped IPv6
 * too. cgroup_id 0 in shk_ebpf_deny_dest() means every cgroup below the
 * attach point.
 */
struct shk_ebpf_dest {
	uint64_t cgroup_id;
	int family;
	uint8_t addr[16];
	uint16_t port;  /* host byte order */
	uint8_t proto;  /* IPPROTO_TCP / IPPROTO_UDP / ... as the socket has it */
	uint8_t op;     /* exactly one SHK_EBPF_OP_* */
};

/* decide() denied this destination: the next calls fail in the kernel. */
int shk_ebpf_deny_dest(shk_ebpf *e, const struct shk_ebpf_dest *d, uint32_t why);
int shk_ebpf_undeny_dest(shk_ebpf *e, const struct shk_ebpf_dest *d);
/* decide() denied a tool class: rules carrying tool_id now deny. */
int shk_ebpf_deny_tool(shk_ebpf *e, uint32_t tool_id, bool deny);
/* The breaker: every network call below the attach point is denied. */
int shk_ebpf_set_breaker(shk_ebpf *e, bool open);
/*
 * A human approved a call: the next call to exactly this destination (cgroup,
 * address, port, protocol, operation) passes once, whatever the rules say
 * (the breaker still wins). The entry is consumed atomically by the first
 * matching call; its event carries digest so that the retry can be tied to the
 * approval. cgroup_id 0 approves the call from any cgroup below the attach
 * point. -EEXIST if an approval for d is already waiting.
 */
int shk_ebpf_allow_once(shk_ebpf *e, const struct shk_ebpf_dest *d, uint64_t digest);

/* Withdraw a single-use approval nobody used: 0, or -ENOENT when a call
 * already took it (its event, reason SHK_EBPF_R_ONCE, is on the way). */
int shk_ebpf_revoke_once(shk_ebpf *e, const struct shk_ebpf_dest *d);

/*
 * A human approved an exec (attach mode): the next exec in cgroup cgroup_id
 * (exactly that cgroup, never 0) of the image dev/ino (kernel encoding, as in
 * shk_ebpf_event) whose argv is byte for byte args (args_len bytes:
 * NUL-separated, the final NUL included, as shk_ebpf_event.args has them)
 * passes once, whatever the rules say (the breaker still wins). The exec
 * tracepoint compares the argv in the new image's memory and consumes the
 * entry atomically; an exec of that image with another argv is judged as
 * before. Its event has reason SHK_EBPF_R_ONCE and once_digest = digest.
 * -E2BIG when args_len > SHK_EBPF_EXEC_ONCE_ARGS_MAX (such an exec cannot be
 * approved this way), -EINVAL for an empty argv or cgroup 0, -EEXIST if an
 * approval for that image, cgroup and argv is already waiting (approvals of
 * one image with different argv wait side by side: the kernel finds them by
 * a hash of the argv, then compares the bytes).
 */
#define SHK_EBPF_EXEC_ONCE_ARGS_MAX 511
struct shk_ebpf_exec_key {
	uint64_t cgroup_id;
	uint64_t dev;
	uint64_t ino;
};
int shk_ebpf_allow_exec_once(shk_ebpf *e, const struct shk_ebpf_exec_key *x, const char *args,
                             size_t args_len, uint64_t digest);
/* Withdraw the approval of x with exactly this argv: 0, or -ENOENT when an
 * exec already took it. */
int shk_ebpf_revoke_exec_once(shk_ebpf *e, const struct shk_ebpf_exec_key *x, const char *args,
                              size_t args_len);

/* ---- events ------------------------------------------------------------------ */

enum { SHK_EBPF_EV_NET = 1, SHK_EBPF_EV_EXEC = 2 };

enum shk_ebpf_reason {
	SHK_EBPF_R_RULE = 1,
	SHK_EBPF_R_DEFAULT,
	SHK_EBPF_R_BREAKER,
	SHK_EBPF_R_STATEFUL,
	SHK_EBPF_R_TOOL,
	SHK_EBPF_R_ONCE,
};

struct shk_ebpf_event {
	int kind;            /* SHK_EBPF_EV_* */
	uint8_t verdict;     /* SHK_EBPF_ALLOW / DENY / HITL, as enforced */
	uint8_t reason;      /* enum shk_ebpf_reason */
	uint32_t rule;       /* index into the rules, SHK_EBPF_NO_RULE */
	uint32_t tool_id;
	uint32_t pid;        /* thread */
	uint32_t tgid;       /* process */
	bool lsm;            /* exec refused with EPERM by lsm/bprm_check_security (no argv) */
	uint64_t cgroup_id;
	char comm[16];       /* SHK_EBPF_EV_EXEC only: network records carry no name */
	/* SHK_EBPF_EV_NET */
	struct shk_ebpf_dest dest;
	int sock_type;
	uint64_t once_digest; /* reason SHK_EBPF_R_ONCE (net and exec): the approval's */
	/* SHK_EBPF_EV_EXEC: device (kernel encoding) and inode of the image */
	uint64_t dev;
	uint64_t ino;
	char filename[256];  /* as passed to exec, NUL-terminated */
	char args[512];      /* argv, NUL-separated, args_len bytes */
	size_t args_len;
	bool args_truncated;
};

/* Split ev->args into at most max pointers (into ev); returns argc. */
size_t shk_ebpf_event_argv(const struct shk_ebpf_event *ev, const char **ret_argv, size_t max);

typedef int (*shk_ebpf_event_fn)(const struct shk_ebpf_event *ev, void *userdata);

/*
 * Deliver waiting events, waiting up to timeout_ms (0: do not wait, -1:
 * forever). Returns the number of events delivered, or the callback's
 * negative return value (which stops delivery), or -errno. Denials wake the
 * ring fd at once; allowed calls only when a quarter of the ring is full, so
 * call this with a bounded timeout (<= 100 ms) to collect them promptly.
 */
int shk_ebpf_poll(shk_ebpf *e, int timeout_ms, shk_ebpf_event_fn fn, void *userdata);
/* A descriptor that becomes readable when events wait (for epoll). */
int shk_ebpf_ring_fd(const shk_ebpf *e);

struct shk_ebpf_stats {
	uint64_t delivered;     /* events handed to callbacks */
	uint64_t kernel_drops;  /* events lost because the ring was full */
	/*
	 * Of those, calls refused for it: with report_allowed every allowed call
	 * must reach user space, so a call that cannot be reported fails with
	 * EPERM (an exec is killed) instead of passing unaccounted.
	 */
	uint64_t refused_unreported;
	uint64_t malformed;     /* records of the wrong size (never expected) */
	/*
	 * TCP listeners below the attach point that could not be marked (no
	 * memory for the mark, or still locked after the attach's scans): the
	 * listen gate drops everything that arrives for them (docs/ebpf.md).
	 */
	uint64_t listeners_unmarked;
	/*
	 * Processes whose network namespace the attach's listener scan could
	 * not open or enter (EACCES/EPERM: netns_unentered_errno, the last
	 * one's): listeners from before the attach in such a namespace, if any
	 * is below the attach point, are unmarked and not counted above.
	 */
	uint64_t netns_unentered;
	int netns_unentered_errno;
};
int shk_ebpf_stats(const shk_ebpf *e, struct shk_ebpf_stats *ret_stats);

#ifdef __cplusplus
}
#endif

#endif
