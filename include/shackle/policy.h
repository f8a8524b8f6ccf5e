/* SPDX-License-Identifier: MIT */
/*
 * shackle/policy.h — policy file v1: load, validate, match, explain.
 *
 * A policy (docs/policy.md describes the file field by field) says which exec
 * and network calls of a supervised agent become which tool calls, with which
 * static action (allow / deny / hitl) and estimated cost, and carries the
 * guard configuration that decide() and the non-normative layers use.
 *
 * A loaded shk_policy is immutable, with one documented exception: the
 * addresses of host rules, which the caller resolves (the pure core never
 * touches DNS) and installs with shk_policy_set_host_addrs(). Matching is
 * pure and allocation-free: no syscalls, no clock, no heap.
 *
 * Functions return 0 or a negative errno; out-parameters come last.
 */
#ifndef SHACKLE_POLICY_H
#define SHACKLE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/json.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct shk_policy shk_policy;

/* Static action of a rule or a section default. */
typedef enum shk_action {
	SHK_ACTION_ALLOW = 0,
	SHK_ACTION_DENY,
	SHK_ACTION_HITL,
} shk_action;

typedef enum shk_hitl_mode {
	SHK_HITL_NEVER = 0,
	SHK_HITL_ALWAYS,
	SHK_HITL_ON_THRESHOLD,
} shk_hitl_mode;

/*
 * The "guard" section. Every field is optional in the file; the defaults are
 * those of an empty "guard" object (docs/policy.md):
 *   budget_usd 0 (budget rules off), max_repeat_calls 0 (repeat guard off),
 *   error_amplification false, hitl_mode never, hitl_budget_threshold 0.2,
 *   hitl_timeout_s 300, window_duration_s 0 and window_max_calls 0 (window
 *   off), max_total_calls 0 (cap off), trip_on_deny true.
 */
typedef struct shk_guard_config {
	double budget_usd;            /* >= 0; 0 disables budget_exhausted/overrun */
	uint32_t max_repeat_calls;    /* 0 disables the repeat guard */
	bool error_amplification;     /* lower the repeat threshold by 1 on error signals */
	shk_hitl_mode hitl_mode;
	double hitl_budget_threshold; /* 0..1, used by on_threshold */
	uint32_t hitl_timeout_s;      /* held call denied after this; 0 = deny at once */
	uint32_t window_duration_s;   /* both window fields 0, or both > 0 */
	uint32_t window_max_calls;
	uint64_t max_total_calls;     /* 0 disables the session-wide cap */
	bool trip_on_deny;            /* a decide() DENY trips the breaker */
} shk_guard_config;

/* ---- loading ------------------------------------------------------------ */

/*
 * Load and validate a policy. On failure returns -EINVAL (invalid JSON or an
 * invalid policy; *ret_err names source:line:column and the field), -ENOMEM,
 * -EFBIG (file larger than SHK_POLICY_MAX_BYTES) or the -errno of reading the
 * file; ret_err is filled on every failure (line/column 0 when not about a
 * position). ret_err may be NULL.
 */
#define SHK_POLICY_MAX_BYTES (4u << 20)
int shk_policy_load_file(const char *path, shk_policy **ret_policy, shk_parse_error *ret_err);
/*
 * The same, and the document itself parsed into doc (*ret_val) from the
 * very bytes the policy was built from: the file is read once, so the
 * document a log records is the policy that was enforced, even when the
 * file changes meanwhile.
 */
int shk_policy_load_file_doc(const char *path, shk_doc *doc, shk_policy **ret_policy,
                             shk_val **ret_val, shk_parse_error *ret_err);
int shk_policy_load_buffer(const char *text, size_t len, const char *source,
                           shk_policy **ret_policy, shk_parse_error *ret_err);
void shk_policy_free(shk_policy *policy);

const shk_guard_config *shk_policy_guard(const shk_policy *policy);

/*
 * SHA-256 of the canonical JSON (shackle/canon.h) of the whole policy
 * document as written, so that the audit log can name the exact policy.
 * Key order and whitespace do not change it; any value does.
 */
void shk_policy_digest(const shk_policy *policy, uint8_t ret_digest[32]);
/* The same as 64 lower-case hex digits, NUL-terminated, owned by the policy. */
const char *shk_policy_digest_hex(const shk_policy *policy);

/* The "redact" list: parameter keys whose values the audit log must hide. */
size_t shk_policy_redact_count(const shk_policy *policy);
const char *shk_policy_redact_key(const shk_policy *policy, size_t i);
/* The whole list (count in *ret_n), owned by the policy; shackle/redact.h
 * applies it. */
const char *const *shk_policy_redact_keys(const shk_policy *policy, size_t *ret_n);

/* ---- "shared": budgets and breakers on Redis (docs/shared-state.md) -------- */

/* Who shares a budget or a breaker. NONE: it stays in the session (local). */
typedef enum shk_scope_level {
	SHK_SCOPE_NONE = 0,
	SHK_SCOPE_SESSION, /* the sessions of one session id (shackle-run and attach) */
	SHK_SCOPE_AGENT,   /* every session of one agent name (within its org) */
	SHK_SCOPE_ORG,     /* every session of one organisation */
} shk_scope_level;

#define SHK_SCOPE_NAME_MAX 64   /* org and agent names: [A-Za-z0-9._-]{1,64} */
#define SHK_SCOPE_HOST_MAX 253
#define SHK_SCOPE_PATH_MAX 107  /* sun_path less its NUL */

typedef struct shk_shared_config {
	bool is_unix;                        /* "unix:/path" rather than "redis://host:port" */
	char host[SHK_SCOPE_HOST_MAX + 1];   /* redis://: name or IPv4 / [IPv6] address */
	uint16_t port;                       /* redis://: default 6379 */
	char path[SHK_SCOPE_PATH_MAX + 1];   /* unix: an absolute path */
	uint32_t timeout_ms;                 /* connect and each command; 1..60000, default 200 */
	uint32_t lease_s;                    /* a reservation nobody settles is charged after this */
	shk_scope_level budget, breaker;     /* "scopes": NONE when absent */
	char org[SHK_SCOPE_NAME_MAX + 1];    /* "" when absent */
	char agent[SHK_SCOPE_NAME_MAX + 1];
} shk_shared_config;

/* The policy's "shared" section, or NULL when it has none. */
const shk_shared_config *shk_policy_shared(const shk_policy *policy);
const char *shk_scope_level_name(shk_scope_level level); /* "none", "session", "agent", "org" */

/* ---- rules ---------------------------------------------------------------- */

shk_action shk_policy_exec_default(const shk_policy *policy);
shk_action shk_policy_net_default(const shk_policy *policy);
/* "exec.loader_env": the least strict action an exec gets when its
 * environment sets a dynamic-loader variable (LD_PRELOAD, LD_AUDIT,
 * LD_LIBRARY_PATH, GCONV_PATH); absent: the same as the exec default. */
shk_action shk_policy_exec_loader_env(const shk_policy *policy);
/* "exec.interp_env": the same for an environment that sets a variable of
 * the interpreter the exec runs (PYTHONPATH for python, BASH_ENV for a
 * shell, ...: shackle/execenv.h); absent: the same as the exec default. */
shk_action shk_policy_exec_interp_env(const shk_policy *policy);
/* "exec.interp_env_scope": true for "interpreter" (interpreter variables
 * are judged only on an exec of their own interpreter); false for "exec",
 * the default (judged on every exec). */
bool shk_policy_exec_interp_scoped(const shk_policy *policy);
/* True when the section (or its "default") was absent and the default applies. */
bool shk_policy_exec_default_implicit(const shk_policy *policy);
bool shk_policy_net_default_implicit(const shk_policy *policy);
/* Whether some IPv4 or IPv6 connect or send with an address can be let
 * through (an allow or hitl action for it: the default or a host or cidr
 * rule). False: every such call is denied whatever its address. */
bool shk_policy_net_may_allow_ip(const shk_policy *policy);

typedef struct shk_exec_rule_info {
	const char *name;         /* NULL if unnamed */
	const char *tool;         /* NULL: default naming exec:<basename> */
	const char *path;         /* path glob, NULL: any path */
	const char *const *argv;  /* argv patterns, NULL when has_argv is false */
	size_t argc;
	bool has_argv;
	shk_action action;
	double cost_usd;
	bool repeat_guard;        /* false: its calls are out of the repeat guard */
} shk_exec_rule_info;

size_t shk_policy_exec_rule_count(const shk_policy *policy);
/* -ERANGE if i is out of range. */
int shk_policy_exec_rule(const shk_policy *policy, size_t i, shk_exec_rule_info *ret_info);
/* Line and column (1-based) of exec rule i in the policy text it was loaded
 * from, for messages about the rule: 0, or -ENOENT (then the position of
 * the deepest value found on the way). */
int shk_policy_exec_rule_locate(const char *text, size_t len, size_t i, int *ret_line,
                                int *ret_column);

typedef enum shk_net_family {
	SHK_NET_UNSPEC = 0,
	SHK_NET_UNIX,
	SHK_NET_INET4,
	SHK_NET_INET6,
} shk_net_family;

/* Transport of a destination. Rules use ANY (the default) or TCP/UDP. */
typedef enum shk_net_proto {
	SHK_NET_PROTO_ANY = 0,
	SHK_NET_PROTO_TCP,
	SHK_NET_PROTO_UDP,
	SHK_NET_PROTO_OTHER, /* raw, packet, SCTP...: only proto "any" matches */
} shk_net_proto;

/* Operations, as bits: a rule holds a set, a destination exactly one. */
typedef enum shk_net_op {
	SHK_NET_OP_CONNECT = 1u << 0,
	SHK_NET_OP_SEND = 1u << 1,   /* sendto/sendmsg/sendmmsg with an address */
	SHK_NET_OP_BIND = 1u << 2,
	SHK_NET_OP_LISTEN = 1u << 3, /* the socket's bound address */
	SHK_NET_OP_ANY = 0xf,
} shk_net_op;

/* An IP address: INET4 uses addr[0..3], INET6 all 16 bytes; network order. */
typedef struct shk_net_addr {
	shk_net_family family;
	uint8_t addr[16];
} shk_net_addr;

/*
 * What the supervisor observed. For INET4/INET6: addr and port (host byte
 * order); an INET6 v4-mapped address (::ffff:a.b.c.d) is matched as the IPv4
 * address a.b.c.d. For UNIX: unix_name/unix_len (no terminating NUL needed),
 * unix_abstract for the abstract namespace (name without the leading NUL).
 * proto is TCP, UDP or OTHER (a destination left at ANY matches only rules
 * with proto "any"); op is exactly one shk_net_op bit.
 */
struct shk_net_dest {
	shk_net_family family;
	uint8_t addr[16];
	uint16_t port;
	shk_net_proto proto;
	shk_net_op op;
	const char *unix_name;
	size_t unix_len;
	bool unix_abstract;
};

typedef enum shk_net_selector {
	SHK_NET_SEL_HOST = 1,
	SHK_NET_SEL_CIDR,
	SHK_NET_SEL_UNIX,
} shk_net_selector;

typedef struct shk_net_rule_info {
	const char *name;            /* NULL if unnamed */
	const char *tool;            /* NULL: default naming net:<op> */
	shk_net_selector selector;
	const char *host;            /* HOST: the name as written */
	const shk_net_addr *addrs;   /* HOST: installed addresses (may be 0) */
	size_t naddrs;
	shk_net_addr cidr;           /* CIDR: network address, host bits zero */
	unsigned prefix;             /* CIDR: 0..32 or 0..128 */
	const char *unix_pattern;    /* UNIX: path glob, or name glob if abstract */
	bool unix_abstract;
	uint16_t port_lo, port_hi;   /* HOST/CIDR: inclusive; 0-65535 when omitted */
	shk_net_proto proto;         /* ANY, TCP or UDP */
	unsigned ops;                /* set of shk_net_op bits */
	shk_action action;
	double cost_usd;
	bool repeat_guard;           /* false: its calls are out of the repeat guard */
} shk_net_rule_info;

size_t shk_policy_net_rule_count(const shk_policy *policy);
int shk_policy_net_rule(const shk_policy *policy, size_t i, shk_net_rule_info *ret_info);

/*
 * A file-system unix rule (i-th net rule) also matches this pattern: the
 * rule's pattern with its literal directory (or the whole literal path)
 * as the kernel resolves it. The supervisor judges a socket by its
 * canonical name, so a rule written through a symlinked directory
 * (/var/run/docker.sock where /var/run -> /run) would otherwise never
 * match. The caller computes it (this core makes no syscalls). -EINVAL:
 * not such a rule, or not an absolute pattern.
 */
int shk_policy_set_unix_alias(shk_policy *policy, size_t i, const char *pattern);

/*
 * Install the resolved addresses of host rule i (replacing earlier ones; n 0
 * clears them). A host rule without addresses matches nothing. Copies addrs;
 * the only mutation of a loaded policy: call it from the thread that matches,
 * or with matching stopped. -ERANGE (bad index), -EINVAL (not a host rule or a
 * bad family), -ENOMEM.
 */
int shk_policy_set_host_addrs(shk_policy *policy, size_t i, const shk_net_addr *addrs, size_t n);

/* ---- models: what the model gateway charges and where it forwards ------------ */

/* The providers' own API base URLs: the gateway's upstreams when a policy names none. */
#define SHK_UPSTREAM_ANTHROPIC "https://api.anthropic.com"
#define SHK_UPSTREAM_OPENAI "https://api.openai.com"

/* The "models" section (docs/gateway.md). Absent: no prices (every model
 * request is refused for want of a price), the providers' own upstreams,
 * max_request_bytes 32 MiB, upstream_timeout_s 300. */

typedef struct shk_models_config {
	bool present;
	const char *anthropic_upstream; /* base URL without trailing '/'; NULL: the provider's,
	                                 * SHK_UPSTREAM_ANTHROPIC / SHK_UPSTREAM_OPENAI */
	const char *openai_upstream;
	uint64_t max_request_bytes;     /* a larger request body is refused */
	uint32_t upstream_timeout_s;    /* an upstream silent this long is cut off */
	const char *source;             /* "source" and "date" of the prices as written; NULL: absent */
	const char *date;
} shk_models_config;

const shk_models_config *shk_policy_models(const shk_policy *policy);


/* One price: USD per million tokens of each kind. */
typedef struct shk_model_price {
	const char *pattern; /* the model glob as written ('*' and '?' match any byte) */
	double input, output, cache_write, cache_read;
} shk_model_price;

size_t shk_policy_model_price_count(const shk_policy *policy);
int shk_policy_model_price_at(const shk_policy *policy, size_t i, shk_model_price *ret_price);
/* The first price in file order whose pattern matches model[0..len): 0,
 * -ENOENT (no price: the gateway refuses the request), -EINVAL. Pure. */
int shk_policy_model_price(const shk_policy *policy, const char *model, size_t len,
                           shk_model_price *ret_price);

/* One "models.rules" entry, as written (owned by the policy). */
typedef struct shk_model_rule_info {
	const char *name;                /* NULL if unnamed */
	const char *tool;                /* the tool glob: "model:<model>" or a proposed tool's name */
	shk_action action;
	const char *const *ignore_input; /* NULL-terminated; NULL when the rule has none */
	size_t nignore_input;
} shk_model_rule_info;

size_t shk_policy_model_rule_count(const shk_policy *policy);
/* -ERANGE if i is out of range. Pure. */
int shk_policy_model_rule(const shk_policy *policy, size_t i, shk_model_rule_info *ret_info);
/* "models.default"; when absent (implicit true) the exec default, which the
 * gateway applies then. Pure. */
shk_action shk_policy_models_default(const shk_policy *policy);
bool shk_policy_models_default_implicit(const shk_policy *policy);
/* Line and column (1-based) of models.rules[i].ignore_input[k] in the policy
 * text, as shk_policy_exec_rule_locate. */
int shk_policy_model_ignore_input_locate(const char *text, size_t len, size_t i, size_t k,
                                         int *ret_line, int *ret_column);

/* ---- matching --------------------------------------------------------------- */

/* Longest tool name: "exec:" + a 255-byte file name + NUL fits. */
#define SHK_POLICY_TOOL_MAX 272

typedef struct shk_policy_match {
	long rule_index;       /* index in its section, -1 for the section default */
	const char *rule_name; /* the rule's name; NULL if unnamed or default */
	shk_action action;
	double cost_usd;       /* 0 for the default */
	char tool[SHK_POLICY_TOOL_MAX]; /* rule's "tool", else exec:<basename> / net:<op> */
	/* the rule says "repeat_guard": false (never for a default): the
	 * runtime takes the call out of the repeat guard (docs/policy.md) */
	bool no_repeat_guard;
} shk_policy_match;

/*
 * First matching exec rule in file order, else the exec default. path is the
 * executable as the supervisor resolved it; argv[0..argc-1] must be non-NULL.
 * Returns 0, -EINVAL (NULL arguments, a path without a file name) or
 * -ENAMETOOLONG (default tool name does not fit); the caller denies on error.
 */
int shk_policy_match_exec(const shk_policy *policy, const char *path, const char *const *argv,
                          size_t argc, shk_policy_match *ret_match);

/*
 * The static action of a call the model gateway judges: a model request
 * ("model:<model>") or a proposed tool call (the agent's tool name). The
 * first "models.rules" entry whose tool glob matches the name, else
 * "models.default", else the exec default (docs/decide.md, "Calls of other
 * sources"). Fills rule_index (-1 for a default), rule_name (NULL when
 * unnamed or a default) and action of *ret; nothing else. Pure, no heap.
 */
int shk_policy_match_model_call(const shk_policy *policy, const char *tool, size_t len,
                                shk_policy_match *ret);

/*
 * The "ignore_input" list of models rule rule_index (the rule_index
 * shk_policy_match_model_call gave): the top-level input members the
 * gateway leaves out of a proposal's params (docs/gateway.md). *ret_n of
 * them, NULL-terminated, owned by the policy; NULL with *ret_n 0 for a
 * default (-1), an index out of range or a rule without the list. Pure.
 */
const char *const *shk_policy_model_ignore_input(const shk_policy *policy, long rule_index,
                                                 size_t *ret_n);

/* First matching net rule, else the net default. -EINVAL on a malformed dest. */
int shk_policy_match_net(const shk_policy *policy, const struct shk_net_dest *dest,
                         shk_policy_match *ret_match);

/* Names used in the file: "allow", "deny", "hitl"; "never", ...; "connect", ... */
const char *shk_action_name(shk_action action);
const char *shk_hitl_mode_name(shk_hitl_mode mode);
const char *shk_net_op_name(shk_net_op op);       /* one bit, or "any" */
const char *shk_net_proto_name(shk_net_proto proto);

#ifdef __cplusplus
}
#endif
#endif
