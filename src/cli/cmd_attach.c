/* SPDX-License-Identifier: MIT */
/*
 * `shackle attach --cgroup PATH --policy FILE [--audit LOG --key FILE]
 *                 [--session ID] [--exec] [--pin DIR] [--duration SECONDS]
 *                 [--fsync none|checkpoint|entry]`
 * `shackle detach --pin DIR`
 *
 * Attaches the eBPF programs to a running cgroup with the policy's static
 * network rules in the kernel, then turns every event into a tool call for
 * the same session / decide() / audit pipeline shackle-run uses, and pushes
 * stateful verdicts back: a decide() deny becomes a stateful deny of that
 * destination, a tripped breaker denies every network call in the kernel.
 * The kernel has already answered the call that produced an event; what
 * decide() concludes applies from the next call on (docs/ebpf.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/magic.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/ebpf.h>
#include <shackle/json.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#include "cli/commands.h"

#ifndef SHACKLE_VERSION
#define SHACKLE_VERSION "unknown"
#endif

struct attach {
	const char *cgroup, *policy_path, *audit_path, *key_path, *session_id, *pin;
	bool exec;
	long duration_s;
	shk_fsync_policy fsync;
	shk_policy *policy;
	shk_doc *policy_doc;
	shk_val *policy_val;
	shk_session *session;
	shk_ledger *ledger;
	shk_ebpf *ebpf;
	uint64_t nonce, calls, pushed;
	bool ran;
	int failed; /* first fatal error: the loop stops, the breaker is opened */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Host rules get their addresses now; a name that does not resolve matches nothing. */
static int resolve_hosts(struct attach *a)
{
	for (size_t i = 0; i < shk_policy_net_rule_count(a->policy); i++) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
		shk_net_addr addrs[32];
		shk_net_rule_info info;
		size_t n = 0;
		int r;

		if (shk_policy_net_rule(a->policy, i, &info) < 0 || info.selector != SHK_NET_SEL_HOST)
			continue;
		if (getaddrinfo(info.host, NULL, &hints, &res) != 0) {
			fprintf(stderr, "shackle attach: warning: host '%s' does not resolve: the "
				"rule matches nothing\n", info.host);
			continue;
		}
		for (struct addrinfo *p = res; p && n < 32; p = p->ai_next) {
			memset(&addrs[n], 0, sizeof(addrs[n]));
			if (p->ai_family == AF_INET) {
				addrs[n].family = SHK_NET_INET4;
				memcpy(addrs[n++].addr, &((struct sockaddr_in *)p->ai_addr)->sin_addr, 4);
			} else if (p->ai_family == AF_INET6) {
				addrs[n].family = SHK_NET_INET6;
				memcpy(addrs[n++].addr, &((struct sockaddr_in6 *)p->ai_addr)->sin6_addr, 16);
			}
		}
		freeaddrinfo(res);
		r = shk_policy_set_host_addrs(a->policy, i, addrs, n);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Exec rules must name files: globs and argv patterns cannot be judged by inode. */
static int exec_rules(struct attach *a)
{
	for (size_t i = 0; i < shk_policy_exec_rule_count(a->policy); i++) {
		shk_exec_rule_info info;
		int r;

		if (shk_policy_exec_rule(a->policy, i, &info) < 0)
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


static int set_str(shk_doc *doc, shk_val *o, const char *k, const char *v)
{
	shk_val *s = shk_cstring(doc, v);

	return s ? shk_object_set_str(o, k, s) : -ENOMEM;
}

static int set_int(shk_doc *doc, shk_val *o, const char *k, int64_t v)
{
	shk_val *i = shk_int(doc, v);

	return i ? shk_object_set_str(o, k, i) : -ENOMEM;
}

static const char *proto_name(uint8_t p)
{
	return p == IPPROTO_TCP ? "tcp" : p == IPPROTO_UDP ? "udp" : "other";
}

/* The tool call of a network event: params {family, addr, port, proto}. */
static int net_call(struct attach *a, shk_doc *doc, const struct shk_ebpf_event *ev,
		    shk_policy_match *m, shk_val **ret_params)
{
	struct shk_net_dest d = { 0 };
	char addr[INET6_ADDRSTRLEN];
	shk_val *o = shk_object(doc);
	int r;

	d.family = ev->dest.family == AF_INET ? SHK_NET_INET4 : SHK_NET_INET6;
	memcpy(d.addr, ev->dest.addr, 16);
	d.port = ev->dest.port;
	d.proto = ev->dest.proto == IPPROTO_TCP ? SHK_NET_PROTO_TCP
		  : ev->dest.proto == IPPROTO_UDP ? SHK_NET_PROTO_UDP : SHK_NET_PROTO_OTHER;
	d.op = (shk_net_op)ev->dest.op;
	r = shk_policy_match_net(a->policy, &d, m);
	if (r < 0)
		return r;
	if (!o || !inet_ntop(ev->dest.family, ev->dest.addr, addr, sizeof(addr)))
		return -ENOMEM;
	if ((r = set_str(doc, o, "family", ev->dest.family == AF_INET ? "inet" : "inet6")) < 0 ||
	    (r = set_str(doc, o, "addr", addr)) < 0 || (r = set_int(doc, o, "port", d.port)) < 0 ||
	    (r = set_str(doc, o, "proto", proto_name(ev->dest.proto))) < 0)
		return r;
	*ret_params = o;
	return 0;
}

/* The tool call of an exec event: params {path, argv} (the kernel gives no cwd). */
static int exec_call(struct attach *a, shk_doc *doc, const struct shk_ebpf_event *ev,
		     shk_policy_match *m, shk_val **ret_params)
{
	const char *argv[64];
	size_t argc = shk_ebpf_event_argv(ev, argv, 64);
	shk_val *o = shk_object(doc), *arr = shk_array(doc);
	int r;

	if (argc == 0)
		argv[argc++] = ev->filename;
	r = shk_policy_match_exec(a->policy, ev->filename, argv, argc, m);
	if (r < 0)
		return r;
	if (!o || !arr)
		return -ENOMEM;
	for (size_t i = 0; i < argc; i++) {
		shk_val *s = shk_cstring(doc, argv[i]);

		if (!s || (r = shk_array_append(arr, s)) < 0)
			return s ? r : -ENOMEM;
	}
	if ((r = set_str(doc, o, "path", ev->filename)) < 0 ||
	    (r = shk_object_set_str(o, "argv", arr)) < 0)
		return r;
	*ret_params = o;
	return 0;
}

static const char *const kverdict[] = { "allow", "deny", "hitl" };
static const char *const kreason[] = { "?", "rule", "default", "breaker", "stateful", "tool",
				       "once" };

static int audit(struct attach *a, shk_doc *doc, const struct shk_ebpf_event *ev,
		 const shk_toolcall *tc, const shk_policy_match *m, const shk_outcome *o,
		 bool first_trip, int64_t now)
{
	shk_audit_decision d = { .time_ns = now, .pid = (int32_t)ev->tgid, .tid = (int32_t)ev->pid,
				 .exe = ev->comm, .call_number = ++a->calls, .call = tc,
				 .action = m->action, .rule = m->rule_name, .outcome = o };
	shk_val *in = shk_object(doc);
	int r;

	if (!a->ledger)
		return 0;
	if (!in || (r = set_str(doc, in, "source", "ebpf")) < 0 ||
	    (r = set_str(doc, in, "kernel_verdict", kverdict[ev->verdict % 3])) < 0 ||
	    (r = set_str(doc, in, "kernel_reason", kreason[ev->reason % 7])) < 0 ||
	    (r = set_int(doc, in, "cgroup_id", (int64_t)ev->cgroup_id)) < 0)
		return in ? r : -ENOMEM;
	d.inputs = in;
	r = shk_ledger_append_decision(a->ledger, &d);
	if (r == 0 && first_trip) {
		shk_val *counters = shk_object(doc);
		shk_audit_breaker_trip b = { .time_ns = now, .call_number = a->calls,
					     .trigger = shk_reason_str(o->reason),
					     .counters = counters, .containment = "deny_all" };

		if (!counters || set_int(doc, counters, "total_calls", (int64_t)o->total_calls) < 0)
			return -ENOMEM;
		r = shk_ledger_append_breaker_trip(a->ledger, &b);
	}
	return r;
}

/* What decide() concluded reaches the kernel for the next calls. */
static int push(struct attach *a, const struct shk_ebpf_event *ev, const shk_outcome *o)
{
	shk_session_info info;

	if (o->verdict == SHK_ALLOW)
		return 0;
	shk_session_get_info(a->session, &info);
	if (info.circuit_tripped)
		return shk_ebpf_set_breaker(a->ebpf, true);
	if (ev->kind == SHK_EBPF_EV_NET && (ev->verdict == SHK_EBPF_ALLOW || o->layer != SHK_LAYER_POLICY)) {
		a->pushed++;
		return shk_ebpf_deny_dest(a->ebpf, &ev->dest, (uint32_t)o->reason);
	}
	return 0;
}

static int on_event(const struct shk_ebpf_event *ev, void *ud)
{
	struct attach *a = ud;
	shk_policy_match m;
	shk_toolcall tc = { 0 };
	shk_session_info before;
	shk_outcome o;
	shk_val *params = NULL;
	shk_doc *doc = NULL;
	int64_t now = realtime_ns();
	int r;

	if (a->failed)
		return 0; /* draining: the breaker is open, nothing more is judged */
	if (ev->kind != SHK_EBPF_EV_NET && ev->kind != SHK_EBPF_EV_EXEC) {
		a->failed = -EPROTO; /* a record we do not understand: fail closed */
		(void)shk_ebpf_set_breaker(a->ebpf, true);
		return 0;
	}
	r = shk_doc_new(&doc);
	if (r == 0)
		r = ev->kind == SHK_EBPF_EV_NET ? net_call(a, doc, ev, &m, &params)
						: exec_call(a, doc, ev, &m, &params);
	if (r == 0) {
		tc.tool_name = m.tool;
		tc.params = params;
		tc.nonce = ++a->nonce;
		tc.estimated_cost_usd = m.cost_usd;
		(void)shk_toolcall_prepare(&tc); /* unpreparable params: evaluate denies */
		r = shk_session_evaluate(a->session, &tc, m.action, now, &o);
	}
	if (r == 0) {
		shk_session_get_info(a->session, &before);
		r = shk_session_commit(a->session, &tc, &o, now);
	}
	if (r == 0)
		r = audit(a, doc, ev, &tc, &m, &o, o.trips && !before.circuit_tripped, now);
	if (r == 0)
		r = push(a, ev, &o);
	shk_doc_free(doc);
	if (r < 0) {
		/* Fail closed: whatever broke, the workload loses the network. */
		a->failed = r;
		(void)shk_ebpf_set_breaker(a->ebpf, true);
	}
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

static int usage(void)
{
	fprintf(stderr, "usage: shackle attach --cgroup PATH --policy FILE [--audit LOG --key FILE]\n"
			"                      [--session ID] [--exec] [--pin DIR] [--duration SECONDS]\n"
			"                      [--fsync none|checkpoint|entry]\n");
	return 2;
}

static int parse(struct attach *a, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' }, { "policy", required_argument, NULL, 'p' },
		{ "audit", required_argument, NULL, 'a' },  { "key", required_argument, NULL, 'k' },
		{ "session", required_argument, NULL, 's' }, { "exec", no_argument, NULL, 'x' },
		{ "pin", required_argument, NULL, 'P' },    { "duration", required_argument, NULL, 'd' },
		{ "fsync", required_argument, NULL, 'f' }, { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char *end;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'c': a->cgroup = optarg; break;
		case 'p': a->policy_path = optarg; break;
		case 'a': a->audit_path = optarg; break;
		case 'k': a->key_path = optarg; break;
		case 's': a->session_id = optarg; break;
		case 'x': a->exec = true; break;
		case 'P': a->pin = optarg; break;
		case 'd':
			errno = 0;
			a->duration_s = strtol(optarg, &end, 10);
			if (errno || *end || a->duration_s <= 0) {
				shk_cli_error("attach", "--duration: '%s' is not a positive number of "
					      "seconds", optarg);
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
		case 'h': usage(); return 1;
		default: return -EINVAL;
		}
	}
	if (optind != argc || !a->cgroup || !a->policy_path) {
		shk_cli_error("attach", "--cgroup and --policy are required");
		return -EINVAL;
	}
	if (!!a->audit_path != !!a->key_path) {
		shk_cli_error("attach", "--audit and --key go together");
		return -EINVAL;
	}
	return 0;
}

static int open_ledger(struct attach *a, const shk_session_config *cfg)
{
	const char *argv[] = { "shackle", "attach", "--cgroup", a->cgroup };
	char sid[64];
	shk_key_error kerr = { { 0 } };
	shk_key *key = NULL;
	shk_ledger_session ls = { .policy = a->policy_val,
				  .policy_digest = shk_policy_digest_hex(a->policy),
				  .argv = argv, .argc = 4, .version = SHACKLE_VERSION,
				  .start_ns = realtime_ns(), .config = cfg };
	shk_ledger_options lo = { .fsync = a->fsync };
	int r = shk_key_load_file(a->key_path, &key, &kerr);

	if (r < 0) {
		shk_cli_error("attach", "%s: %s", a->key_path, kerr.text[0] ? kerr.text : strerror(-r));
		return r;
	}
	snprintf(sid, sizeof(sid), "attach-%d-%lld", (int)getpid(), (long long)ls.start_ns);
	ls.session_id = a->session_id ? a->session_id : sid;
	r = shk_ledger_open(a->audit_path, key, &ls, &lo, &a->ledger);
	shk_key_free(key);
	if (r < 0)
		shk_cli_error("attach", "%s: cannot open the audit log: %s", a->audit_path, strerror(-r));
	return r;
}

static int load_policy(struct attach *a)
{
	shk_parse_error perr = { .line = 0 };
	int r = shk_policy_load_file(a->policy_path, &a->policy, &perr);

	if (r == 0 && (r = shk_doc_new(&a->policy_doc)) == 0)
		r = shk_json_load_file(a->policy_doc, a->policy_path, &a->policy_val, &perr);
	if (r < 0) {
		shk_cli_error("attach", "%s:%d:%d: %s", perr.source[0] ? perr.source : a->policy_path,
			      perr.line, perr.column, perr.text[0] ? perr.text : strerror(-r));
		return r;
	}
	r = resolve_hosts(a);
	if (r < 0)
		shk_cli_error("attach", "%s: installing host addresses: %s", a->policy_path,
			      strerror(-r));
	return r;
}

static int load_programs(struct attach *a)
{
	struct shk_ebpf_opts o = { .net_default = (uint8_t)shk_policy_net_default(a->policy),
				   .exec_default = (uint8_t)shk_policy_exec_default(a->policy),
				   .exec = a->exec, .report_allowed = true,
				   /* ~9800 records: bursts wait here instead of being refused */
				   .ring_bytes = 8u << 20 };
	struct shk_ebpf_net_rule *rules = NULL;
	size_t n = 0, skipped = 0;
	int r = shk_ebpf_rules_from_policy(a->policy, &rules, &n, &skipped);

	if (r < 0)
		shk_cli_error("attach", "%s: network rules: %s", a->policy_path, strerror(-r));
	else if ((r = shk_ebpf_open(&o, &a->ebpf)) < 0)
		shk_cli_error("attach", "loading the eBPF programs: %s%s%s", strerror(-r),
			      r == -EOPNOTSUPP ? ": " : "",
			      r == -EOPNOTSUPP ? shk_ebpf_off_reason() : "");
	else if (r == 0 && (r = shk_ebpf_set_net_rules(a->ebpf, rules, n)) < 0)
		shk_cli_error("attach", "%s: network rules do not fit the kernel maps: %s",
			      a->policy_path, strerror(-r));
	else if (r == 0 && a->exec)
		r = exec_rules(a);
	if (r == 0 && skipped)
		fprintf(stderr, "shackle attach: note: %zu unix-socket or listen-only rule(s) have no "
			"kernel hook here and are not enforced\n", skipped);
	free(rules);
	return r;
}

static void teardown(struct attach *a)
{
	struct shk_ebpf_stats st = { 0 };

	if (a->ran && shk_ebpf_stats(a->ebpf, &st) == 0)
		fprintf(stderr, "shackle attach: %lu events judged, %lu stateful denies pushed, "
			"%lu events lost in the kernel, %lu calls refused because they could not "
			"be reported\n", (unsigned long)a->calls, (unsigned long)a->pushed,
			(unsigned long)st.kernel_drops, (unsigned long)st.refused_unreported);
	if (a->ledger) {
		shk_audit_session_end e = { .time_ns = realtime_ns(), .exit_status = a->failed ? 1 : 0 };

		if (shk_ledger_end(a->ledger, &e) < 0 || shk_ledger_close(a->ledger) < 0)
			shk_cli_error("attach", "%s: closing the audit log failed", a->audit_path);
		a->ledger = NULL;
	}
	shk_ebpf_free(a->ebpf); /* detaches, unless pinned */
	shk_session_free(a->session);
	shk_policy_free(a->policy);
	shk_doc_free(a->policy_doc);
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
		int r = shk_ebpf_poll(a->ebpf, 100, on_event, a);

		if (r < 0 && !a->failed) {
			a->failed = r;
			(void)shk_ebpf_set_breaker(a->ebpf, true);
		}
		if (a->ledger)
			(void)shk_ledger_tick(a->ledger, realtime_ns());
		if (a->failed && !told) {
			/* Staying attached with the breaker open is the closed state. */
			shk_cli_error("attach", "judging failed (%s): every network call in %s is now "
				      "denied; stop this command to detach", strerror(-a->failed),
				      a->cgroup);
			told = true;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (a->duration_s && t.tv_sec - t0.tv_sec >= a->duration_s)
			break;
	}
	/* What is still in the ring is judged and logged before leaving. */
	while (!a->failed && shk_ebpf_poll(a->ebpf, 0, on_event, a) > 0)
		;
	return a->failed ? 1 : 0;
}

int shk_cmd_attach(int argc, char **argv)
{
	struct attach a = { 0 };
	shk_session_config cfg = { 0 };
	int fd, r, status;

	r = parse(&a, argc, argv);
	if (r)
		return r > 0 ? 0 : usage();
	if (load_policy(&a) < 0 || load_programs(&a) < 0) {
		teardown(&a);
		return 2;
	}
	cfg.guard = *shk_policy_guard(a.policy);
	r = shk_session_new(&cfg, &a.session);
	if (r == 0 && a.audit_path)
		r = open_ledger(&a, &cfg);
	if (r < 0) {
		shk_cli_error("attach", "session setup: %s", strerror(-r));
		teardown(&a);
		return 1;
	}
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
	a.ran = true;
	status = run(&a);
	teardown(&a);
	return status;
}

int shk_cmd_detach(int argc, char **argv)
{
	int r;

	if (argc != 3 || strcmp(argv[1], "--pin") != 0) {
		fprintf(stderr, "usage: shackle detach --pin DIR\n");
		return 2;
	}
	r = shk_ebpf_unpin(argv[2]);
	if (r < 0) {
		shk_cli_error("detach", "%s: %s", argv[2], strerror(-r));
		return 1;
	}
	return 0;
}
