/* SPDX-License-Identifier: MIT */
/*
 * `shackle attach --cgroup PATH --policy FILE [--audit LOG] [--key FILE]
 *                 [--session ID] [--exec] [--pin DIR] [--duration SECONDS]
 *                 [--fsync none|checkpoint|entry] [--control SOCKET]
 *                 [--non-interactive] [--resolve-every SECONDS]`
 * `shackle detach --pin DIR`
 *
 * Attaches the eBPF programs to a running cgroup with the policy's static
 * network rules in the kernel, then turns every event into the observation
 * shackle-run's judge takes (src/supervise/pipeline.h: tool call, session,
 * decide(), audit entry, breaker trace), and pushes
 * stateful verdicts back: a decide() deny becomes a stateful deny of that
 * destination, a tripped breaker denies every network call in the kernel.
 * The kernel has already answered the call that produced an event; what
 * decide() concludes applies from the next call on (docs/ebpf.md). Calls
 * that need a person are offered on shackle-run's operator channel and an
 * approval lets the retry pass once (attach_hitl.c). Host rules are
 * re-resolved periodically and the kernel's copy is replaced in place.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

#include "cli/attach.h"
#include "cli/commands.h"
#include "cli/display.h"
#include "supervise/logfiles.h"
#include "supervise/pipeline.h"
#include "util/linux.h"

#ifndef SHACKLE_VERSION
#define SHACKLE_VERSION "unknown"
#endif

struct attach {
	const char *cgroup, *policy_path, *audit_path, *key_path, *session_id, *pin, *control;
	bool exec, non_interactive;
	long duration_s, resolve_s;
	char sid[80];
	struct shk_logfiles files;  /* the log and its key */
	shk_fsync_policy fsync;
	struct shk_pipeline pipe;   /* shackle-run's judge: policy, session, ledger */
	shk_session_config cfg;
	shk_doc *policy_doc;
	shk_val *policy_val;
	shk_ebpf *ebpf;
	struct attach_hitl *hitl;   /* NULL: non-interactive, HITL is a block */
	struct shk_ebpf_net_rule *rules; /* what the kernel has */
	size_t nrules;
	uint64_t events, pushed, refreshed;
	uint64_t unlogged; /* events received that could not be judged and logged */
	bool ran, breaker;
	int failed; /* first fatal error: the breaker is opened, the audit goes on */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Exec rules must name files: globs and argv patterns cannot be judged by inode. */
static int exec_rules(struct attach *a)
{
	for (size_t i = 0; i < shk_policy_exec_rule_count(a->pipe.policy); i++) {
		shk_exec_rule_info info;
		int r;

		if (shk_policy_exec_rule(a->pipe.policy, i, &info) < 0)
			return -EINVAL;
		if (!info.path || info.has_argv || strpbrk(info.path, "*?[")) {
			shk_cli_error("attach", "%s: exec rule %zu%s%s%s cannot be enforced in the kernel "
				      "(needs a literal path and no argv patterns); drop --exec or the rule",
				      a->policy_path, i, info.name ? " (" : "", info.name ? info.name : "",
				      info.name ? ")" : "");
			return -EINVAL;
		}
		r = shk_ebpf_set_exec_rule(a->ebpf, info.path, (uint8_t)info.action);
		if (r < 0) {
			shk_cli_error("attach", "%s: exec rule %zu: %s: %s", a->policy_path, i, info.path,
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
	return shk_policy_match_net(a->pipe.policy, &nd, &m) == 0 && m.action == SHK_ACTION_ALLOW;
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

	shk_session_get_info(a->pipe.session, &info);
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
			shk_cli_error("attach", "a stateful deny could not be pushed to the kernel (%s%s): "
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
	if (!a->pipe.ledger || a->pipe.ledger_failed) {
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
	a->pipe.kernel_answer = kernel;
	r = shk_pipeline_judge(&a->pipe, &obs, &j);
	a->pipe.kernel_answer = NULL;
	if (r < 0)
		a->unlogged++;
	if (r == 0 && a->pipe.ledger_failed)
		r = -a->pipe.ledger_errno ? -a->pipe.ledger_errno : -EIO;
	if (r == 0)
		r = attach_hitl_after(a->hitl, ev, &j);
	if (r == 0)
		r = push(a, ev, j.verdict);
	if (r < 0)
		fail(a, r);
	return 0;
}

/* A v1 hierarchy or a plain directory would take no programs: say where v2 is. */
static int check_cgroup2(int fd, const char *path)
{
	struct statfs sfs;
	char mnt[1024];

	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type == CGROUP2_SUPER_MAGIC)
		return 0;
	if (shk_cgroup2_mount(mnt, sizeof(mnt)) == 0)
		shk_cli_error("attach", "%s is not a cgroup v2 directory (the v2 hierarchy is "
			      "mounted at %s)", path, mnt);
	else
		shk_cli_error("attach", "%s is not a cgroup v2 directory (no cgroup2 file system "
			      "is mounted)", path);
	return -ENOTDIR;
}

static const struct shk_usage attach_usage = { "attach",
	"usage: shackle attach --cgroup PATH --policy FILE [--audit LOG] [--key FILE]\n"
	"                      [--session ID] [--exec] [--pin DIR] [--duration SECONDS]\n"
	"                      [--fsync none|checkpoint|entry] [--control SOCKET]\n"
	"                      [--non-interactive] [--resolve-every SECONDS]\n\n"
	"Enforces the policy on every process of a cgroup v2 with eBPF programs and\n"
	"records each decision in a signed audit log, until Ctrl-C or --duration.\n"
	"Without --audit/--key the log and its key go where shackle-run puts them.\n"
	"--exec also judges execs (rules with literal paths only); --pin keeps the\n"
	"programs attached after exit (shackle detach --pin DIR removes them);\n"
	"--resolve-every re-resolves host rules; --control/--non-interactive as for\n"
	"shackle-run. docs/ebpf.md is the manual.\n" };

static const struct shk_usage detach_usage = { "detach",
	"usage: shackle detach --pin DIR\n\n"
	"Removes the eBPF programs and maps that `shackle attach --pin DIR` left\n"
	"pinned under DIR, and DIR. Nothing is removed unless DIR is on bpffs and\n"
	"holds only what attach pinned.\n" };

static int parse(struct attach *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' }, { "policy", required_argument, NULL, 'p' },
		{ "audit", required_argument, NULL, 'a' },  { "key", required_argument, NULL, 'k' },
		{ "session", required_argument, NULL, 's' }, { "exec", no_argument, NULL, 'x' },
		{ "pin", required_argument, NULL, 'P' },    { "duration", required_argument, NULL, 'd' },
		{ "fsync", required_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
		{ "control", required_argument, NULL, 'C' }, { "non-interactive", no_argument, NULL, 'n' },
		{ "resolve-every", required_argument, NULL, 'r' },
		{ 0 },
	};
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->cgroup = optarg; break;
		case 'p': a->policy_path = optarg; break;
		case 'a': a->audit_path = optarg; break;
		case 'k': a->key_path = optarg; break;
		case 's': a->session_id = optarg; break;
		case 'x': a->exec = true; break;
		case 'P': a->pin = optarg; break;
		case 'C': a->control = optarg; break;
		case 'n': a->non_interactive = true; break;
		case 'd':
		case 'r':
			errno = 0;
			*(c == 'd' ? &a->duration_s : &a->resolve_s) = strtol(optarg, &end, 10);
			if (errno || *end || (c == 'd' ? a->duration_s : a->resolve_s) <= 0) {
				shk_cli_error("attach", "--%s: '%s' is not a positive number of seconds",
					      c == 'd' ? "duration" : "resolve-every", optarg);
				return -EINVAL;
			}
			break;
		case 'f':
			if (shk_fsync_policy_parse(optarg, &a->fsync) < 0) {
				shk_cli_error("attach", "--fsync: '%s' is not none, checkpoint or entry",
					      optarg);
				return -EINVAL;
			}
			break;
		case 'h': return 1;
		default: return -EINVAL;
		}
	}
	if (optind != argc || !a->cgroup || !a->policy_path) {
		shk_cli_error("attach", "--cgroup and --policy are required");
		return -EINVAL;
	}
	return 0;
}

/* The log and its key with shackle-run's defaults (logfiles.h): STATE/audit-
 * SESSION.jsonl, the key kept beside it; a log given again is continued. */
static int open_ledger(struct attach *a, const shk_session_config *cfg)
{
	const char *argv[] = { "shackle", "attach", "--cgroup", a->cgroup };
	shk_ledger_session ls = { .policy = a->policy_val,
				  .policy_digest = shk_policy_digest_hex(a->pipe.policy),
				  .argv = argv, .argc = 4, .version = SHACKLE_VERSION,
				  .start_ns = shk_realtime_ns(), .config = cfg };
	shk_ledger_options lo = { .fsync = a->fsync };
	int r;

	snprintf(a->sid, sizeof(a->sid), "%s", a->session_id ? a->session_id : "");
	if (!a->session_id)
		snprintf(a->sid, sizeof(a->sid), "attach-%d-%lld", (int)getpid(), (long long)ls.start_ns);
	ls.session_id = a->sid;
	r = shk_logfiles_prepare(&a->files, a->audit_path, a->key_path, a->sid);
	if (r == 0)
		r = shk_logfiles_open(&a->files, &ls, &lo, &a->pipe.ledger);
	shk_logfiles_free(&a->files);
	if (r < 0)
		shk_cli_error("attach", "%s", a->files.err);
	else if (!a->audit_path || (!a->key_path && a->files.write_key))
		fprintf(stderr, "shackle attach: audit log %s (key %s)\n", a->files.log, a->files.key);
	a->audit_path = a->files.log;
	return r;
}

static int load_policy(struct attach *a)
{
	shk_parse_error perr = { .line = 0 };
	int r = shk_doc_new(&a->policy_doc);

	/* one read: the document logged is the policy enforced */
	if (r == 0)
		r = shk_policy_load_file_doc(a->policy_path, a->policy_doc, &a->pipe.policy,
		                             &a->policy_val, &perr);
	if (r < 0) {
		shk_cli_error("attach", "%s:%d:%d: %s", perr.source[0] ? perr.source : a->policy_path,
			      perr.line, perr.column, perr.text[0] ? perr.text : strerror(-r));
		return r;
	}
	r = shk_pipeline_load_aliases(&a->pipe);
	if (r < 0) {
		shk_cli_error("attach", "%s: exec rule files: %s", a->policy_path, strerror(-r));
		return r;
	}
	r = shk_pipeline_resolve_hosts(&a->pipe);
	if (r > 0)
		fprintf(stderr, "shackle attach: warning: %d host rule(s) resolve to nothing and "
			"match nothing until a refresh resolves them\n", r);
	/* getaddrinfo gives no TTL: as shackle-run, every 5 minutes by default */
	r = shk_pipeline_resolver_start(&a->pipe, (a->resolve_s ? a->resolve_s : 300) * 1000000000LL);
	if (r < 0)
		shk_cli_error("attach", "cannot start the host resolver: %s", strerror(-r));
	return r;
}

/* The operator channel, as shackle-run opens it (same socket scheme, same
 * non-interactive rule); without it a HITL verdict is a block (SP/1.0 §3.4). */
static void open_channel(struct attach *a)
{
	const char *ci = getenv("CI");
	struct attach_hitl_options o = { .session_id = a->sid, .control_path = a->control,
					 .cgroup = a->cgroup, .max_pending = a->cfg.max_pending };
	int r;

	if (!a->non_interactive && !(ci && strcmp(ci, "true") == 0 && !a->control)) {
		r = attach_hitl_open(&a->pipe, a->ebpf, &o, &a->hitl);
		if (r < 0)
			shk_cli_error("attach", "cannot open the operator channel (%s): calls that "
				      "need a human are blocked", strerror(-r));
		else
			fprintf(stderr, "shackle attach: operator channel: %s\n",
				shk_hitl_socket_path(a->pipe.hitl));
	}
	a->pipe.non_interactive = a->hitl == NULL;
}

static int load_programs(struct attach *a)
{
	struct shk_ebpf_opts o = { .net_default = (uint8_t)shk_policy_net_default(a->pipe.policy),
				   .exec_default = (uint8_t)shk_policy_exec_default(a->pipe.policy),
				   .exec = a->exec, .report_allowed = true,
				   /* ~9800 records: bursts wait here instead of being refused */
				   .ring_bytes = 8u << 20 };
	size_t skipped = 0;
	int r = shk_ebpf_rules_from_policy(a->pipe.policy, &a->rules, &a->nrules, &skipped);

	if (r < 0)
		shk_cli_error("attach", "%s: network rules: %s", a->policy_path, strerror(-r));
	else if ((r = shk_ebpf_open(&o, &a->ebpf)) < 0)
		shk_cli_error("attach", "loading the eBPF programs: %s%s%s", strerror(-r),
			      r == -EOPNOTSUPP ? ": " : "",
			      r == -EOPNOTSUPP ? shk_ebpf_off_reason() : "");
	else if (r == 0 && (r = shk_ebpf_set_net_rules(a->ebpf, a->rules, a->nrules)) < 0)
		shk_cli_error("attach", "%s: network rules do not fit the kernel maps: %s",
			      a->policy_path, strerror(-r));
	else if (r == 0 && a->exec)
		r = exec_rules(a);
	if (r == 0 && skipped)
		fprintf(stderr, "shackle attach: note: %zu unix-socket or listen-only rule(s) have no "
			"kernel hook here and are not enforced\n", skipped);
	/* the exec hooks see the image, not the environment */
	if (r == 0 && a->exec && (shk_policy_exec_loader_env(a->pipe.policy) != SHK_ACTION_ALLOW ||
				  shk_policy_exec_interp_env(a->pipe.policy) != SHK_ACTION_ALLOW))
		fprintf(stderr, "shackle attach: note: exec.loader_env and exec.interp_env are not "
			"enforced in attach mode (the kernel hooks do not see the environment)\n");
	return r;
}

static void teardown(struct attach *a)
{
	struct shk_ebpf_stats st = { 0 };

	if (a->ran && shk_ebpf_stats(a->ebpf, &st) == 0)
		fprintf(stderr, "shackle attach: %lu events judged, %lu stateful denies pushed, "
			"%lu host rule refreshes, %lu events lost in the kernel, %lu calls refused "
			"because they could not be reported\n", (unsigned long)a->events,
			(unsigned long)a->pushed, (unsigned long)a->refreshed,
			(unsigned long)st.kernel_drops, (unsigned long)st.refused_unreported);
	if (a->unlogged)
		shk_cli_error("attach", "%lu event(s) could not be judged and logged (%s): calls "
			      "the kernel let through may be missing from %s", (unsigned long)a->unlogged,
			      a->pipe.ledger_failed ? "the audit log failed" : "see above",
			      a->audit_path);
	attach_hitl_close(a->hitl); /* held calls are cancelled in the log first */
	a->hitl = NULL;
	if (a->pipe.ledger) {
		shk_audit_session_end e = { .time_ns = shk_realtime_ns(), .exit_status = a->failed ? 1 : 0 };
		shk_doc *cd = NULL;
		shk_val *c = NULL;

		/* Which exec hook was in force (docs/ebpf.md, "Exec"). */
		if (shk_doc_new(&cd) == 0 && (c = shk_object(cd)) &&
		    shk_ebpf_exec_counters(a->ebpf, cd, c) == 0 &&
		    shk_object_set_str(c, "events_unlogged", shk_int(cd, (int64_t)a->unlogged)) == 0 &&
		    shk_object_set_str(c, "events_lost_in_kernel", shk_int(cd, (int64_t)st.kernel_drops)) == 0)
			e.counters = c;
		if (shk_ledger_end(a->pipe.ledger, &e) < 0 || shk_ledger_close(a->pipe.ledger) < 0)
			shk_cli_error("attach", "%s: closing the audit log failed", a->audit_path);
		a->pipe.ledger = NULL;
		shk_doc_free(cd);
	}
	shk_ebpf_free(a->ebpf); /* detaches, unless pinned */
	shk_session_free(a->pipe.session);
	shk_pipeline_resolver_stop(&a->pipe);
	free(a->rules);
	shk_pipeline_free_aliases(&a->pipe);
	shk_policy_free(a->pipe.policy);
	shk_doc_free(a->policy_doc);
}

/*
 * The resolver thread refreshed the policy's host addresses (installed by
 * shk_pipeline_tick): when the kernel rules they make differ from the ones
 * loaded, the kernel's copy is replaced in place (shk_ebpf_update_net_rules:
 * each address goes from its old verdict to its new one, never through a
 * third). Checked on every wakeup, right after the tick, so that the judge
 * and the kernel change rules together (no event is judged in between).
 */
static void refresh_rules(struct attach *a)
{
	struct shk_ebpf_net_rule *rules = NULL;
	size_t n = 0;
	int r;

	if (shk_ebpf_rules_from_policy(a->pipe.policy, &rules, &n, NULL) < 0)
		return; /* out of memory: the old rules stay, tried again in a second */
	if (n == a->nrules && (!n || !memcmp(rules, a->rules, n * sizeof(*rules)))) {
		free(rules);
		return;
	}
	r = shk_ebpf_update_net_rules(a->ebpf, rules, n);
	if (r < 0) {
		/* every address keeps its old or its new verdict; tried again */
		shk_cli_error("attach", "refreshing the host rules in the kernel failed: %s",
			      strerror(-r));
		free(rules);
		return;
	}
	free(a->rules);
	a->rules = rules;
	a->nrules = n;
	a->refreshed++;
}

/* `shackle reset` closed the session's breaker: close the kernel's too (never
 * after a failure: that breaker is the fail-closed state). */
static void sync_breaker(struct attach *a)
{
	shk_session_info info;

	if (!a->breaker || a->failed)
		return;
	shk_session_get_info(a->pipe.session, &info);
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
	r = shk_ebpf_poll(a->ebpf, 0, on_event, a);
	if (r >= 0 && a->hitl && attach_hitl_handle(a->hitl) < 0) {
		shk_cli_error("attach", "the operator channel failed: held calls are cancelled, "
			      "unused approvals withdrawn, new ones are blocked");
		if (attach_hitl_withdraw(a->hitl) < 0)
			fail(a, -EIO); /* an approval may still pass: nobody would log it */
	}
	return r < 0 ? r : 0;
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

		if (r < 0)
			fail(a, r);
		shk_pipeline_tick(&a->pipe, monotonic_ns());
		if (a->hitl)
			attach_hitl_tick(a->hitl);
		sync_breaker(a);
		if (!a->failed)
			refresh_rules(a);
		if (a->pipe.ledger_failed && !a->failed)
			fail(a, -EIO);
		if (a->failed && !told) {
			/* Staying attached with the breaker open is the closed state. */
			shk_cli_error("attach", "judging failed (%s): every network call in %s is now "
				      "denied (with --exec every exec killed), events are still logged; "
				      "stop this command to detach", strerror(-a->failed), a->cgroup);
			told = true;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (a->duration_s && t.tv_sec - t0.tv_sec >= a->duration_s)
			break;
	}
	/* Approvals nobody took go first (a retry that took one stays known),
	 * then what is still in the ring is judged and logged before leaving
	 * (after a failure too: counted when the log cannot take it). */
	if (attach_hitl_withdraw(a->hitl) < 0)
		fail(a, -EIO);
	while (shk_ebpf_poll(a->ebpf, 0, on_event, a) > 0)
		;
	return a->failed ? 1 : 0;
}

int shk_cmd_attach(int argc, char **argv)
{
	struct attach a = { 0 };
	int fd, r, status;

	r = parse(&a, argc, argv);
	if (r)
		return r > 0 ? shk_cli_help(&attach_usage) : shk_cli_synopsis(&attach_usage);
	/* a closed stderr must not kill us: dying would detach the programs
	 * with the session unfinished in the log */
	signal(SIGPIPE, SIG_IGN);
	if (load_policy(&a) < 0 || load_programs(&a) < 0) {
		teardown(&a);
		return 2;
	}
	a.cfg.guard = *shk_policy_guard(a.pipe.policy);
	r = shk_session_new(&a.cfg, &a.pipe.session);
	if (r == 0)
		r = open_ledger(&a, &a.cfg);
	if (r < 0) {
		shk_cli_error("attach", "session setup: %s", strerror(-r));
		teardown(&a);
		return 1;
	}
	open_channel(&a);
	fd = open(a.cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || check_cgroup2(fd, a.cgroup) < 0) {
		if (fd < 0)
			shk_cli_error("attach", "%s: %s", a.cgroup, strerror(errno));
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
		shk_cli_error("attach", "%s: %s: %s", a.cgroup, a.pin ? "attach/pin" : "attach",
			      strerror(-r));
		teardown(&a);
		return 1;
	}
	fprintf(stderr, "shackle attach: enforcing %s on %s%s%s\n", a.policy_path, a.cgroup,
		a.pin ? ", pinned under " : "", a.pin ? a.pin : "");
	if (a.exec) {
		const char *why;
		int path = shk_ebpf_exec_path(a.ebpf, &why);

		fprintf(stderr, "shackle attach: exec hook: %s%s%s\n",
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

/* Why detach left dir alone, for a person (r from shk_ebpf_unpin). */
static const char *unpin_refusal(int r, const char *entry)
{
	static char buf[512];

	switch (r) {
	case -ENOTDIR:
		return "not a directory (a symbolic link is not followed)";
	case -EMEDIUMTYPE:
		return "not on a BPF file system (bpffs): shackle attach --pin never made it";
	case -ENODATA:
		return "holds no pins of shackle attach";
	case -EEXIST: {
		char name[300];

		snprintf(buf, sizeof(buf), "holds %s, which shackle attach did not pin",
			 shk_cli_text(entry, name, sizeof(name)));
		return buf;
	}
	default:
		return strerror(-r);
	}
}

int shk_cmd_detach(int argc, char **argv)
{
	char entry[256], dir[600];
	int r;

	if (argc >= 2 && shk_cli_is_help(argv[1]))
		return shk_cli_help(&detach_usage);
	if (argc != 3 || strcmp(argv[1], "--pin") != 0)
		return shk_cli_synopsis(&detach_usage);
	r = shk_ebpf_unpin(argv[2], entry, sizeof(entry));
	if (r == -ENOTDIR || r == -EMEDIUMTYPE || r == -ENODATA || r == -EEXIST) {
		shk_cli_error("detach", "%s: %s; nothing was removed",
			      shk_cli_text(argv[2], dir, sizeof(dir)), unpin_refusal(r, entry));
		return 1;
	}
	if (r < 0) {
		shk_cli_error("detach", "%s: %s", shk_cli_text(argv[2], dir, sizeof(dir)), unpin_refusal(r, entry));
		return 1;
	}
	return 0;
}
