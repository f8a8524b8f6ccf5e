/* SPDX-License-Identifier: MIT */
/*
 * The attach engine (attach.h). Attaches the eBPF programs to a running
 * cgroup with the policy's static network rules in the kernel, then turns
 * every event into the observation shackle-run's judge takes
 * (judge/pipeline.h: tool call, session, decide(), audit entry, breaker
 * trace), and pushes stateful verdicts back: a decide() deny becomes a stateful deny of that
 * destination, a tripped breaker denies every network call in the kernel.
 * The kernel has already answered the call that produced an event; what
 * decide() concludes applies from the next call on (docs/ebpf.md). Calls
 * that need a person are offered on shackle-run's operator channel and an
 * approval lets the retry pass once (hitl.c). Host rules are
 * re-resolved periodically and the kernel's copy is replaced in place.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/ebpf.h>
#include <shackle/json.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#include "attach/attach.h"
#include "attach/hitl.h"
#include "judge/judged.h"
#include "sources/sources.h"
#include "util/linux.h"

struct attach {
	const char *cgroup, *policy_path, *audit_path, *key_path, *session_id, *pin, *control;
	bool exec, non_interactive;
	long duration_s, resolve_s;
	char sid[80];
	shk_fsync_policy fsync;
	const char *version;
	struct shk_attach_io io;
	struct shk_judged js;       /* shackle-run's judge: policy, session, log, channel */
	struct shk_sources src;     /* the model gateway, the SDK socket */
	uint32_t gw_addr;
	uint16_t gw_port;
	bool gw_set;
	const char *sdk_socket;
	shk_ebpf *ebpf;
	struct attach_hitl *hitl;   /* NULL: non-interactive, HITL is a block */
	struct shk_ebpf_net_rule *rules; /* what the kernel has */
	size_t nrules;
	uint64_t events, pushed, refreshed;
	uint64_t unlogged; /* events received that could not be judged and logged */
	uint64_t unmarked_told; /* listeners_unmarked said and logged so far */
	uint64_t unentered_told; /* netns_unentered said and logged so far */
	int64_t stats_due_ns; /* CLOCK_MONOTONIC: when report_unmarked reads the counters next */
	bool ran, breaker;
	int failed; /* first fatal error: the breaker is opened, the audit goes on */
};

static volatile sig_atomic_t stop;


static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Exec rules must name files: globs and argv patterns cannot be judged by inode. */
static int exec_rules(struct attach *a)
{
	for (size_t i = 0; i < shk_policy_exec_rule_count(a->js.pipe.policy); i++) {
		shk_exec_rule_info info;
		int r;

		if (shk_policy_exec_rule(a->js.pipe.policy, i, &info) < 0)
			return -EINVAL;
		if (!info.path || info.has_argv || strpbrk(info.path, "*?[")) {
			attach_say(&a->io, "%s: exec rule %zu%s%s%s cannot be enforced in the kernel "
				      "(needs a literal path and no argv patterns); drop --exec or the rule",
				      a->policy_path, i, info.name ? " (" : "", info.name ? info.name : "",
				      info.name ? ")" : "");
			return -EINVAL;
		}
		r = shk_ebpf_set_exec_rule(a->ebpf, info.path, (uint8_t)info.action);
		if (r < 0) {
			attach_say(&a->io, "%s: exec rule %zu: %s: %s", a->policy_path, i, info.path,
				      strerror(-r));
			return r;
		}
	}
	return 0;
}


static void proc_link(pid_t pid, const char *what, char *buf, size_t len)
{
	char p[64];
	ssize_t n;

	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
	n = readlink(p, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
}

/* A network event as the observation shackle-run's judge takes. */
static void net_obs(const struct shk_ebpf_event *ev, struct shk_obs *obs)
{
	struct shk_obs_net *n = &obs->net;

	obs->kind = SHK_OBS_NET;
	/* sendto and sendmsg share one hook: both are SHK_OBS_SENDMSG (tool net:send) */
	n->op = ev->dest.op == SHK_EBPF_OP_SEND ? SHK_OBS_SENDMSG
		: ev->dest.op == SHK_EBPF_OP_BIND ? SHK_OBS_BIND : SHK_OBS_CONNECT;
	obs->nr = n->op == SHK_OBS_SENDMSG ? __NR_sendmsg
		  : n->op == SHK_OBS_BIND ? __NR_bind : __NR_connect;
	n->family = ev->dest.family;
	n->socktype = ev->sock_type;
	n->protocol = ev->dest.proto;
	memcpy(n->addr, ev->dest.addr, 16);
	n->port = ev->dest.port;
	if (!inet_ntop(n->family, n->addr, n->addr_str, sizeof(n->addr_str)))
		n->addr_str[0] = 0;
}

/*
 * An exec event: the name as passed (made absolute with the process's cwd
 * when it still has one), argv, and the device and inode of the image the
 * kernel loaded (for a script: its last interpreter).
 */
static void exec_obs(const struct shk_ebpf_event *ev, struct shk_obs *obs, const char **argv,
		     size_t max)
{
	struct shk_obs_exec *x = &obs->exec;
	size_t argc = shk_ebpf_event_argv(ev, argv, max);

	obs->kind = SHK_OBS_EXEC;
	obs->nr = __NR_execve;
	proc_link((pid_t)ev->tgid, "cwd", x->cwd, sizeof(x->cwd));
	if (ev->filename[0] == '/' || !x->cwd[0] ||
	    strlen(x->cwd) + 1 + strlen(ev->filename) >= sizeof(x->file.path)) {
		snprintf(x->file.path, sizeof(x->file.path), "%s", ev->filename);
	} else {
		strcpy(x->file.path, x->cwd);
		strcat(x->file.path, "/");
		strcat(x->file.path, ev->filename);
	}
	x->file.dev = makedev((unsigned)(ev->dev >> 20), (unsigned)(ev->dev & 0xfffff));
	x->file.ino = (ino_t)ev->ino;
	x->file.fd = -1;
	if (argc == 0)
		argv[argc++] = ev->filename;
	x->argv = argv;
	x->argc = argc;
}

/*
 * Fail closed: whatever broke, the workload loses the network and exec, held
 * calls are cancelled and unused approvals withdrawn (nobody may approve
 * what the open breaker would refuse anyway). Events keep being judged and
 * logged while the log works: the calls the kernel let through before the
 * breaker opened happened.
 */
static void fail(struct attach *a, int r)
{
	bool first = !a->failed;

	if (first)
		a->failed = r;
	(void)shk_ebpf_set_breaker(a->ebpf, true);
	a->breaker = true;
	if (first)
		(void)attach_hitl_withdraw(a->hitl); /* what it could not withdraw: on stderr */
}

/* Does the policy's own rule (as the kernel has it now) allow this destination? */
static bool statically_allowed(struct attach *a, const struct shk_ebpf_dest *d)
{
	struct shk_net_dest nd = { .family = d->family == AF_INET ? SHK_NET_INET4 : SHK_NET_INET6,
				   .port = d->port, .op = (shk_net_op)d->op,
				   .proto = d->proto == IPPROTO_TCP ? SHK_NET_PROTO_TCP :
					    d->proto == IPPROTO_UDP ? SHK_NET_PROTO_UDP : SHK_NET_PROTO_OTHER };
	shk_policy_match m;

	memcpy(nd.addr, d->addr, sizeof(nd.addr));
	return shk_policy_match_net(a->js.pipe.policy, &nd, &m) == 0 && m.action == SHK_ACTION_ALLOW;
}

/*
 * What the judge concluded reaches the kernel for the next calls: a tripped
 * breaker opens the kernel's; a denial of a call the kernel let through (a
 * repeat, a budget, a window) becomes a stateful deny of that destination --
 * unless the rules already deny it: the kernel judged the call by the host
 * addresses before a refresh, and a stateful deny would outlive the next one.
 */
static int push(struct attach *a, const struct shk_ebpf_event *ev, shk_judge_verdict v)
{
	shk_session_info info;
	int r = 0;

	shk_session_get_info(a->js.pipe.session, &info);
	if (info.circuit_tripped && !a->breaker) {
		a->breaker = true;
		r = shk_ebpf_set_breaker(a->ebpf, true);
	}
	/* also under the breaker: after `shackle reset` the denial still holds */
	if (r == 0 && v == SHK_JUDGE_DENY && ev->kind == SHK_EBPF_EV_NET &&
	    ev->verdict == SHK_EBPF_ALLOW && statically_allowed(a, &ev->dest)) {
		r = shk_ebpf_deny_dest(a->ebpf, &ev->dest, SHK_EBPF_R_STATEFUL);
		a->pushed += r == 0;
		/* the table is full (many destinations denied by budget or rate):
		 * the denial cannot be kept per destination, so everything is */
		if (r < 0 && !a->failed)
			attach_say(&a->io, "a stateful deny could not be pushed to the kernel (%s%s): "
				      "failing closed", strerror(-r),
				      r == -E2BIG ? ": the table of denied destinations is full" : "");
	}
	return r;
}

/* What the kernel did with the call, for its decision entry (inputs.kernel):
 * decide()'s verdict applies from the next call on, this is what happened. */
static void kernel_answer(const struct shk_ebpf_event *ev, char *buf, size_t len)
{
	static const char *const why[] = { [SHK_EBPF_R_RULE] = "rule", [SHK_EBPF_R_DEFAULT] = "default",
					   [SHK_EBPF_R_BREAKER] = "breaker",
					   [SHK_EBPF_R_STATEFUL] = "stateful deny",
					   [SHK_EBPF_R_TOOL] = "tool denied", [SHK_EBPF_R_ONCE] = "approval" };
	const char *done = ev->verdict == SHK_EBPF_ALLOW ? "allowed"
			   : ev->kind == SHK_EBPF_EV_EXEC && !ev->lsm ? "killed" : "refused";

	snprintf(buf, len, "%s (%s)", done,
		 ev->reason < sizeof(why) / sizeof(why[0]) && why[ev->reason] ? why[ev->reason] : "?");
}

static int on_event(const struct shk_ebpf_event *ev, void *ud)
{
	static struct shk_obs obs; /* large; one thread */
	struct attach *a = ud;
	struct shk_judgement j;
	const char *argv[sizeof(ev->args)]; /* every string of a bounded argv, even empty ones */
	char kernel[48];
	int r;

	/* Judged and logged also after a failure (the breaker is open, the
	 * calls before it happened); what cannot be logged is counted. */
	if (!a->js.pipe.ledger || a->js.pipe.ledger_failed) {
		a->unlogged++;
		return 0;
	}
	if (ev->kind != SHK_EBPF_EV_NET && ev->kind != SHK_EBPF_EV_EXEC) {
		a->unlogged++;
		fail(a, -EPROTO); /* a record we do not understand */
		return 0;
	}
	memset(&obs, 0, sizeof(obs));
	obs.pid = (pid_t)ev->tgid;
	obs.tid = (pid_t)ev->pid;
	proc_link(obs.pid, "exe", obs.exe, sizeof(obs.exe));
	if (ev->kind == SHK_EBPF_EV_NET)
		net_obs(ev, &obs);
	else
		exec_obs(ev, &obs, argv, sizeof(argv) / sizeof(argv[0]));
	a->events++;
	attach_hitl_before(a->hitl, ev, &obs);
	kernel_answer(ev, kernel, sizeof(kernel));
	a->js.pipe.kernel_answer = kernel;
	r = shk_pipeline_judge(&a->js.pipe, &obs, &j);
	a->js.pipe.kernel_answer = NULL;
	if (r < 0)
		a->unlogged++;
	if (r == 0 && a->js.pipe.ledger_failed)
		r = -a->js.pipe.ledger_errno ? -a->js.pipe.ledger_errno : -EIO;
	if (r == 0)
		r = attach_hitl_after(a->hitl, ev, &j);
	if (r == 0)
		r = push(a, ev, j.verdict);
	if (r < 0)
		fail(a, r);
	return 0;
}

/* A v1 hierarchy or a plain directory would take no programs: say where v2 is. */
static int check_cgroup2(struct attach *a, int fd, const char *path)
{
	struct statfs sfs;
	char mnt[1024];

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type == CGROUP2_SUPER_MAGIC)
		return 0;
	if (shk_cgroup2_mount(mnt, sizeof(mnt)) == 0)
		attach_say(&a->io, "%s is not a cgroup v2 directory (the v2 hierarchy is "
			      "mounted at %s)", path, mnt);
	else
		attach_say(&a->io, "%s is not a cgroup v2 directory (no cgroup2 file system "
			      "is mounted)", path);
	return -ENOTDIR;
}

/* The shared scope's lines, also from its subscriber thread: stderr, whose
 * stdio lock makes each line whole. */
static void scope_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "shackle attach: %s\n", line);
}

/* The log and its key with shackle-run's defaults (judge/logfiles.h): STATE/audit-
 * SESSION.jsonl, the key kept beside it; a log given again is continued. */
static int open_ledger(struct attach *a)
{
	const char *argv[] = { "shackle", "attach", "--cgroup", a->cgroup };
	struct shk_judged_log lo = { .audit = a->audit_path, .key = a->key_path, .argv = argv, .argc = 4,
	                             .version = a->version, .fsync = a->fsync, .scope_log = scope_line };
	int r;

	snprintf(a->sid, sizeof(a->sid), "%s", a->session_id ? a->session_id : "");
	if (!a->session_id)
		snprintf(a->sid, sizeof(a->sid), "attach-%d-%lld", (int)getpid(), (long long)shk_realtime_ns());
	lo.session_id = a->sid;
	r = shk_judged_open_log(&a->js, &lo);
	if (r < 0)
		attach_say(&a->io, "%s", a->js.err);
	else if (!a->audit_path || (!a->key_path && a->js.files.write_key))
		attach_say(&a->io, "audit log %s (key %s)", a->js.files.log, a->js.files.key);
	a->audit_path = a->js.files.log;
	return r;
}

static int load_policy(struct attach *a)
{
	int r = shk_judged_load(&a->js, a->policy_path, a->resolve_s * 1000000000LL);

	if (r < 0) {
		attach_say(&a->io, "%s", a->js.err);
		return r;
	}
	if (a->js.unresolved > 0)
		attach_say(&a->io, "warning: %d host rule(s) resolve to nothing and "
			"match nothing until a refresh resolves them", a->js.unresolved);
	return 0;
}

/* What the operator points the workload at (attach cannot set the
 * environment of processes already running): one line. */
static void tell_gateway(struct attach *a)
{
	char line[2048];
	int r = shk_sources_gateway_env(&a->src, line, sizeof(line));

	if (r < 0)
		snprintf(line, sizeof(line), " (the variables could not be listed: %s)", strerror(-r));
	attach_say(&a->io, "model gateway: http://%u.%u.%u.%u:%u; point the workload at it:%s",
	           a->js.pipe.gateway_addr[0], a->js.pipe.gateway_addr[1], a->js.pipe.gateway_addr[2],
	           a->js.pipe.gateway_addr[3], (unsigned)a->js.pipe.gateway_port, line);
}

/* The gateway (a policy with "models") and the SDK socket (--sdk-socket),
 * judged in this session. Before the programs: the gateway's address goes
 * into the kernel rules. A call that arrives before the log is open is
 * denied (nothing is allowed without a log). */
static int start_sources(struct attach *a)
{
	struct shk_sources_options so = { .sdk = a->sdk_socket != NULL, .sdk_path = a->sdk_socket,
	                                  .gateway_addr = a->gw_addr, .gateway_port = a->gw_port };
	int r;

	if (a->gw_set && !shk_policy_models(a->js.pipe.policy)->present) {
		attach_say(&a->io, "--gateway: %s has no \"models\" section: there is no gateway to "
		           "serve", a->policy_path);
		return -EINVAL;
	}
	if ((r = shk_sources_start(&a->src, &a->js, &so, a->js.err, sizeof(a->js.err))) < 0) {
		attach_say(&a->io, "%s", a->js.err);
		return r;
	}
	if (a->js.pipe.gateway_port)
		tell_gateway(a);
	if (a->js.pipe.sdk_path)
		attach_say(&a->io, "SDK socket: %s", a->js.pipe.sdk_path);
	return 0;
}

/* The operator channel, as shackle-run opens it (same socket scheme, same
 * non-interactive rule); without it a HITL verdict is a block (SP/1.0 §3.4). */
static void open_channel(struct attach *a)
{
	struct attach_hitl_options o = { .session_id = a->sid, .control_path = a->control,
					 .cgroup = a->cgroup, .io = &a->io };

	if (shk_judged_interactive(a->non_interactive, a->control)) {
		if (attach_hitl_open(&a->js, a->ebpf, &o, &a->hitl) < 0)
			attach_say(&a->io, "%s", a->js.err);
		else
			attach_say(&a->io, "operator channel: %s",
				shk_hitl_socket_path(a->js.pipe.hitl));
	}
}

/*
 * The policy's rules, after one for the session's gateway: a connect to its
 * address and port (TCP) is the transport of model requests judged there
 * (judge/pipeline.h), so it passes whatever the policy says of that
 * address; nothing else is exempted (the breaker still refuses it).
 */
static int kernel_rules(struct attach *a, struct shk_ebpf_net_rule **ret, size_t *ret_n, size_t *skipped)
{
	struct shk_ebpf_net_rule *rules = NULL, *all;
	size_t n = 0;
	int r = shk_ebpf_rules_from_policy(a->js.pipe.policy, &rules, &n, skipped);

	if (r < 0 || !a->js.pipe.gateway_port) {
		*ret = rules;
		*ret_n = n;
		return r;
	}
	if (!(all = calloc(n + 1, sizeof(*all)))) {
		free(rules);
		return -ENOMEM;
	}
	all[0] = (struct shk_ebpf_net_rule){ .family = AF_INET, .prefix = 32,
	                                     .port_lo = a->js.pipe.gateway_port,
	                                     .port_hi = a->js.pipe.gateway_port, .proto = IPPROTO_TCP,
	                                     .ops = SHK_EBPF_OP_CONNECT, .action = SHK_EBPF_ALLOW,
	                                     .tool_id = SHK_EBPF_NO_TOOL };
	memcpy(all[0].addr, a->js.pipe.gateway_addr, sizeof(a->js.pipe.gateway_addr));
	if (n)
		memcpy(all + 1, rules, n * sizeof(*rules));
	free(rules);
	*ret = all;
	*ret_n = n + 1;
	return 0;
}

static int load_programs(struct attach *a)
{
	struct shk_ebpf_opts o = { .net_default = (uint8_t)shk_policy_net_default(a->js.pipe.policy),
				   .exec_default = (uint8_t)shk_policy_exec_default(a->js.pipe.policy),
				   .exec = a->exec, .report_allowed = true,
				   /* ~9800 records: bursts wait here instead of being refused */
				   .ring_bytes = 8u << 20 };
	size_t skipped = 0;
	int r = kernel_rules(a, &a->rules, &a->nrules, &skipped);

	if (r < 0)
		attach_say(&a->io, "%s: network rules: %s", a->policy_path, strerror(-r));
	else if ((r = shk_ebpf_open(&o, &a->ebpf)) < 0)
		attach_say(&a->io, "loading the eBPF programs: %s%s%s", strerror(-r),
			      r == -EOPNOTSUPP ? ": " : "",
			      r == -EOPNOTSUPP ? shk_ebpf_off_reason() : "");
	else if (r == 0 && (r = shk_ebpf_set_net_rules(a->ebpf, a->rules, a->nrules)) < 0)
		attach_say(&a->io, "%s: network rules do not fit the kernel maps: %s",
			      a->policy_path, strerror(-r));
	else if (r == 0 && a->exec)
		r = exec_rules(a);
	if (r == 0 && skipped)
		attach_say(&a->io, "note: %zu unix-socket or listen-only rule(s) have no "
			"kernel hook here and are not enforced", skipped);
	/* the exec hooks see the image, not the environment */
	if (r == 0 && a->exec && (shk_policy_exec_loader_env(a->js.pipe.policy) != SHK_ACTION_ALLOW ||
				  shk_policy_exec_interp_env(a->js.pipe.policy) != SHK_ACTION_ALLOW))
		attach_say(&a->io, "note: exec.loader_env and exec.interp_env are not "
			"enforced in attach mode (the kernel hooks do not see the environment)");
	return r;
}

static int refresh_rules(struct attach *a);

static void teardown(struct attach *a)
{
	struct shk_ebpf_stats st = { 0 };
	bool gateway;

	if (a->ran && shk_ebpf_stats(a->ebpf, &st) == 0)
		attach_say(&a->io, "%lu events judged, %lu stateful denies pushed, "
			"%lu host rule refreshes, %lu events lost in the kernel, %lu calls refused "
			"because they could not be reported, %lu TCP listeners unmarked (the listen "
			"gate drops for them), %lu processes' network namespaces not scanned for "
			"listeners", (unsigned long)a->events,
			(unsigned long)a->pushed, (unsigned long)a->refreshed,
			(unsigned long)st.kernel_drops, (unsigned long)st.refused_unreported,
			(unsigned long)st.listeners_unmarked, (unsigned long)st.netns_unentered);
	if (a->unlogged)
		attach_say(&a->io, "%lu event(s) could not be judged and logged (%s): calls "
			      "the kernel let through may be missing from %s", (unsigned long)a->unlogged,
			      a->js.pipe.ledger_failed ? "the audit log failed" : "see above",
			      a->audit_path);
	attach_hitl_close(a->hitl); /* held calls are cancelled in the log first */
	a->hitl = NULL;
	gateway = a->js.pipe.gateway_port != 0;
	shk_sources_stop(&a->src, &a->js); /* waits for their calls in flight */
	/* Pinned rules outlive attach, its gateway does not: nothing may listen
	 * on that port later with the cgroup let through to it. Where the rule
	 * cannot go, the pinned breaker is opened instead. */
	if (gateway && a->ran && a->pin && refresh_rules(a) < 0) {
		(void)shk_ebpf_set_breaker(a->ebpf, true);
		attach_say(&a->io, "the gateway's kernel rule could not be removed from %s: its "
		           "breaker is open instead (every network call is refused)", a->pin);
	}
	if (a->js.pipe.ledger) {
		shk_audit_session_end e = { .time_ns = shk_realtime_ns(), .exit_status = a->failed ? 1 : 0 };
		shk_doc *cd = NULL;
		shk_val *c = NULL;

		/* Which exec hook was in force (docs/ebpf.md, "Exec"). */
		if (shk_doc_new(&cd) == 0 && (c = shk_object(cd)) &&
		    shk_ebpf_exec_counters(a->ebpf, cd, c) == 0 &&
		    shk_object_set_str(c, "events_unlogged", shk_int(cd, (int64_t)a->unlogged)) == 0 &&
		    shk_object_set_str(c, "events_lost_in_kernel", shk_int(cd, (int64_t)st.kernel_drops)) == 0 &&
		    shk_object_set_str(c, "listeners_unmarked",
				       shk_int(cd, (int64_t)st.listeners_unmarked)) == 0 &&
		    shk_object_set_str(c, "netns_unentered",
				       shk_int(cd, (int64_t)st.netns_unentered)) == 0 &&
		    shk_sources_counters(&a->src, cd, c) == 0)
			e.counters = c;
		if (shk_judged_end(&a->js, e.exit_status, e.counters) < 0)
			attach_say(&a->io, "%s: closing the audit log failed", a->audit_path);
		shk_doc_free(cd);
	}
	shk_ebpf_free(a->ebpf); /* detaches, unless pinned */
	free(a->rules);
	shk_judged_free(&a->js);
}

/*
 * The resolver thread refreshed the policy's host addresses (installed by
 * shk_pipeline_tick): when the kernel rules they make differ from the ones
 * loaded, the kernel's copy is replaced in place (shk_ebpf_update_net_rules:
 * each address goes from its old verdict to its new one, never through a
 * third). Checked on every wakeup, right after the tick, so that the judge
 * and the kernel change rules together (no event is judged in between).
 */
static int refresh_rules(struct attach *a)
{
	struct shk_ebpf_net_rule *rules = NULL;
	size_t n = 0;
	int r;

	if ((r = kernel_rules(a, &rules, &n, NULL)) < 0)
		return r; /* out of memory: the old rules stay, tried again in a second */
	if (n == a->nrules && (!n || !memcmp(rules, a->rules, n * sizeof(*rules)))) {
		free(rules);
		return 0;
	}
	r = shk_ebpf_update_net_rules(a->ebpf, rules, n);
	if (r < 0) {
		/* every address keeps its old or its new verdict; tried again */
		attach_say(&a->io, "refreshing the host rules in the kernel failed: %s",
			      strerror(-r));
		free(rules);
		return r;
	}
	free(a->rules);
	a->rules = rules;
	a->nrules = n;
	a->refreshed++;
	return 0;
}

/* `shackle reset` closed the session's breaker: close the kernel's too (never
 * after a failure: that breaker is the fail-closed state). */
static void sync_breaker(struct attach *a)
{
	shk_session_info info;

	if (!a->breaker || a->failed)
		return;
	shk_session_get_info(a->js.pipe.session, &info);
	if (!info.circuit_tripped && shk_ebpf_set_breaker(a->ebpf, false) == 0)
		a->breaker = false;
}

/* Ring buffer and operator channel; at most 100 ms (allowed calls do not wake us). */
static int wait_events(struct attach *a)
{
	struct pollfd fds[2] = { { .fd = shk_ebpf_ring_fd(a->ebpf), .events = POLLIN },
				 { .fd = a->hitl ? attach_hitl_fd(a->hitl) : -1, .events = POLLIN } };
	int r;

	if (poll(fds, 2, 100) < 0 && errno != EINTR)
		return -errno;
	shk_judged_lock(&a->js);
	r = shk_ebpf_poll(a->ebpf, 0, on_event, a);
	if (r >= 0 && a->hitl && attach_hitl_handle(a->hitl) < 0) {
		attach_say(&a->io, "the operator channel failed: held calls are cancelled, "
			      "unused approvals withdrawn, new ones are blocked");
		if (attach_hitl_withdraw(a->hitl) < 0)
			fail(a, -EIO); /* an approval may still pass: nobody would log it */
	}
	shk_judged_unlock(&a->js);
	return r < 0 ? r : 0;
}

/* Said on stderr and logged as a kernel `refusal`, so that the timeouts of
 * clients of listeners the gate drops for have a reason on record. */
static void report_kernel(struct attach *a, const char *what, const char *msg)
{
	struct shk_source_judge j = shk_judged_source(&a->js);

	attach_say(&a->io, "%s (in %s)", msg, a->cgroup);
	if (shk_source_refuse(&j, "kernel", what, -1, msg) < 0)
		attach_say(&a->io, "%s: logging the %s failed", a->audit_path, what);
}

/* Reading the counters takes an allocation and three bpf() map lookups:
 * once per wake-up would be once per batch of events under load. A rise is
 * said within this, and once more before the session ends. */
#define STATS_PERIOD_NS (250 * 1000000LL)

/*
 * A TCP listener below the attach point whose mark could not be made (no
 * memory), or one from before the attach in a network namespace the scan
 * could not enter, gets no connection from the listen gate: reported as
 * the counts rise. now_ns: CLOCK_MONOTONIC, or 0 to read them regardless.
 */
static void report_unmarked(struct attach *a, int64_t now_ns)
{
	struct shk_ebpf_stats st;
	char msg[256];

	if (now_ns && now_ns < a->stats_due_ns)
		return;
	a->stats_due_ns = now_ns + STATS_PERIOD_NS;
	if (shk_ebpf_stats(a->ebpf, &st) < 0)
		return;
	if (st.netns_unentered > a->unentered_told) {
		snprintf(msg, sizeof(msg), "the network namespaces of %lu process(es) could not be "
			 "entered to mark their TCP listeners (%s): listeners from before the attach "
			 "in them, if below it, get no connection from the listen gate",
			 (unsigned long)st.netns_unentered, strerror(st.netns_unentered_errno));
		report_kernel(a, "netns_unentered", msg);
		a->unentered_told = st.netns_unentered;
	}
	if (st.listeners_unmarked > a->unmarked_told) {
		snprintf(msg, sizeof(msg), "%lu TCP listener(s) could not be marked: the listen "
			 "gate drops every connection to them", (unsigned long)st.listeners_unmarked);
		report_kernel(a, "listener_unmarked", msg);
		a->unmarked_told = st.listeners_unmarked;
	}
}

static int run(struct attach *a)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec t0, t;
	bool told = false;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!stop) {
		int r = wait_events(a);

		shk_judged_lock(&a->js);
		if (r < 0)
			fail(a, r);
		shk_pipeline_tick(&a->js.pipe);
		if (a->hitl)
			attach_hitl_tick(a->hitl);
		sync_breaker(a);
		if (!a->failed)
			refresh_rules(a);
		if (a->js.pipe.ledger_failed && !a->failed)
			fail(a, -EIO);
		if (a->failed && !told) {
			/* Staying attached with the breaker open is the closed state. */
			attach_say(&a->io, "judging failed (%s): every network call in %s is now "
				      "denied (with --exec every exec killed), events are still logged; "
				      "stop this command to detach", strerror(-a->failed), a->cgroup);
			told = true;
		}
		shk_judged_unlock(&a->js);
		clock_gettime(CLOCK_MONOTONIC, &t);
		/* takes the lock to log */
		report_unmarked(a, (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec);
		if (a->duration_s && t.tv_sec - t0.tv_sec >= a->duration_s)
			break;
	}
	/* Approvals nobody took go first (a retry that took one stays known),
	 * then what is still in the ring is judged and logged before leaving
	 * (after a failure too: counted when the log cannot take it). */
	shk_judged_lock(&a->js);
	if (attach_hitl_withdraw(a->hitl) < 0)
		fail(a, -EIO);
	while (shk_ebpf_poll(a->ebpf, 0, on_event, a) > 0)
		;
	shk_judged_unlock(&a->js);
	report_unmarked(a, 0); /* a rise since the last read is logged before the end */
	return a->failed ? 1 : 0;
}

int shk_attach_run(const struct shk_attach_options *o)
{
	struct attach a = { .cgroup = o->cgroup, .policy_path = o->policy_path, .audit_path = o->audit_path,
	                    .key_path = o->key_path, .session_id = o->session_id, .pin = o->pin,
	                    .control = o->control, .exec = o->exec, .non_interactive = o->non_interactive,
	                    .duration_s = o->duration_s, .resolve_s = o->resolve_s, .fsync = o->fsync,
	                    .version = o->version, .io = o->io, .gw_addr = o->gateway_addr,
	                    .gw_port = o->gateway_port, .gw_set = o->gateway_set,
	                    .sdk_socket = o->sdk_socket };
	int fd, r, status;

	/* a closed stderr must not kill us: dying would detach the programs
	 * with the session unfinished in the log */
	signal(SIGPIPE, SIG_IGN);
	if (load_policy(&a) < 0) {
		teardown(&a);
		return 2;
	}
	if ((r = start_sources(&a)) < 0) {
		teardown(&a);
		return r == -EINVAL ? 2 : 1;
	}
	if (load_programs(&a) < 0) {
		teardown(&a);
		return 2;
	}
	if (open_ledger(&a) < 0) {
		teardown(&a);
		return 1;
	}
	open_channel(&a);
	fd = open(a.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || check_cgroup2(&a, fd, a.cgroup) < 0) {
		if (fd < 0)
			attach_say(&a.io, "%s: %s", a.cgroup, strerror(errno));
		else
			close(fd);
		teardown(&a);
		return 2;
	}
	r = shk_ebpf_attach(a.ebpf, fd);
	close(fd);
	if (r == 0 && a.pin)
		r = shk_ebpf_pin(a.ebpf, a.pin);
	if (r < 0) {
		attach_say(&a.io, "%s: %s: %s", a.cgroup, a.pin ? "attach/pin" : "attach",
			      strerror(-r));
		teardown(&a);
		return 1;
	}
	attach_say(&a.io, "enforcing %s on %s%s%s", a.policy_path, a.cgroup,
		a.pin ? ", pinned under " : "", a.pin ? a.pin : "");
	if (a.exec) {
		const char *why;
		int path = shk_ebpf_exec_path(a.ebpf, &why);

		attach_say(&a.io, "exec hook: %s%s%s",
			path == SHK_EBPF_EXEC_LSM ? "lsm (bprm_check_security: a denied exec fails "
						    "with EPERM)"
						  : "tracepoint (sched_process_exec + SIGKILL)",
			why[0] ? "; BPF LSM not used: " : "", why);
	}
	a.ran = true;
	status = run(&a);
	teardown(&a);
	return status;
}

