/* SPDX-License-Identifier: MIT */
/*
 * shackle-run: run an agent under the supervisor, with the policy → decide()
 * → audit pipeline as its judge. docs/supervisor.md is the manual.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shackle/audit.h>
#include <shackle/canon.h>
#include <shackle/policy.h>
#include <shackle/session.h>

#include "cli/display.h"
#include "sources/sources.h"
#include "judge/judged.h"
#include "supervise/stale.h"
#include "supervise/supervise.h"

#ifndef SHACKLE_VERSION
#define SHACKLE_VERSION "unknown"
#endif
#ifndef SHACKLE_POLICY_DIRS
#define SHACKLE_POLICY_DIRS "/usr/local/share/shackle/policies"
#endif

#define EXIT_SETUP 125

struct opts {
	const char *policy, *audit, *key, *session, *control, *user, *fsync;
	bool non_interactive, print_paths, quiet, verbose;
	shk_net_verify net_verify;
	shk_exec_check exec_verify;
	char **argv;
};

__attribute__((format(printf, 1, 2)))
static void err(const char *fmt, ...)
{
	va_list ap;

	fputs("shackle-run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void usage(FILE *f)
{
	fputs("usage: shackle-run [OPTIONS] -- CMD [ARGS...]\n"
	      "\n"
	      "Run CMD under seccomp user-notify supervision: every exec and network call of\n"
	      "its process tree is judged by the policy and SHACKLE SP/1.0 decide(), enforced\n"
	      "in the kernel and recorded in a signed, hash-chained audit log.\n"
	      "\n"
	      "  --policy FILE       policy (default: coding-agent.json from the installed or\n"
	      "                      source policies/ directory)\n"
	      "  --audit LOG         audit log to create (default: STATE/audit-SESSION.jsonl,\n"
	      "                      STATE = $XDG_STATE_HOME/shackle, ~/.local/state/shackle,\n"
	      "                      or /var/lib/shackle for root)\n"
	      "  --key FILE          Ed25519 signing key (shackle keygen); default: an ephemeral\n"
	      "                      key whose public half is written to LOG.pub\n"
	      "  --session ID        session id (default: 16 random hex digits)\n"
	      "  --fsync MODE        audit durability: checkpoint (default), entry, none\n"
	      "  --user USER|UID     as root: run CMD as this user (default: nobody)\n"
	      "  --non-interactive   no operator channel: HITL verdicts are blocks at once\n"
	      "                      (also when CI=true and no --control is given)\n"
	      "  --control SOCKET    operator channel socket (default: per session in\n"
	      "                      $SHACKLE_CONTROL_DIR or the runtime dir; see `shackle\n"
	      "                      pending`, `shackle approve ID`, docs/hitl.md)\n"
	      "  --print-audit-path  print 'audit: LOG' and 'pubkey: FILE' on stderr at start\n"
	      "  --quiet             no warnings or held-call notices on stderr (errors are\n"
	      "                      still reported)\n"
	      "  --verbose           notes on stderr: the operator channel, what is weaker\n"
	      "                      without root or without a cgroup (never on stdout)\n"
	      "  --net-verify MODE   approved connects: bpf (CONTINUE, the address checked\n"
	      "                      again by a cgroup hook on the kernel's copy), emulate\n"
	      "                      (performed by shackle-run on a copy), auto (default: bpf\n"
	      "                      when it loads and the policy can allow an IPv4/IPv6 call,\n"
	      "                      else emulate; `shackle doctor` says which)\n"
	      "  --exec-verify MODE  approved execs: bpf (checked by the kernel when the image\n"
	      "                      is loaded), ptrace (at an exec stop), auto (default: bpf\n"
	      "                      from the second exec when it loads, for what it can\n"
	      "                      check; docs/exec.md)\n"
	      "  --help, --version\n"
	      "\n"
	      "Exit status: CMD's own, or 128+N when CMD was killed by signal N; 125 when\n"
	      "shackle-run itself failed (nothing ran, supervision broke and the tree was\n"
	      "killed, or the audit log failed); 126/127 when CMD could not be executed (denied / not found); 2 for bad\n"
	      "usage. The agent sees EPERM for every denied call.\n", f);
}

static int parse(int argc, char **argv, struct opts *o)
{
	enum { OPT_POLICY = 256, OPT_AUDIT, OPT_KEY, OPT_SESSION, OPT_CONTROL, OPT_USER, OPT_FSYNC, OPT_NONINT,
	       OPT_PRINT, OPT_QUIET, OPT_HELP, OPT_VERSION, OPT_NETV, OPT_VERBOSE, OPT_EXECV };
	static const struct option lo[] = {
		{ "policy", required_argument, 0, OPT_POLICY }, { "audit", required_argument, 0, OPT_AUDIT },
		{ "key", required_argument, 0, OPT_KEY }, { "session", required_argument, 0, OPT_SESSION },
		{ "control", required_argument, 0, OPT_CONTROL }, { "user", required_argument, 0, OPT_USER },
		{ "fsync", required_argument, 0, OPT_FSYNC }, { "non-interactive", no_argument, 0, OPT_NONINT },
		{ "print-audit-path", no_argument, 0, OPT_PRINT }, { "quiet", no_argument, 0, OPT_QUIET },
		{ "net-verify", required_argument, 0, OPT_NETV }, { "verbose", no_argument, 0, OPT_VERBOSE },
		{ "exec-verify", required_argument, 0, OPT_EXECV },
		{ "help", no_argument, 0, OPT_HELP }, { "version", no_argument, 0, OPT_VERSION }, { 0, 0, 0, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		switch (c) {
		case OPT_POLICY: o->policy = optarg; break;
		case OPT_AUDIT: o->audit = optarg; break;
		case OPT_KEY: o->key = optarg; break;
		case OPT_SESSION: o->session = optarg; break;
		case OPT_CONTROL: o->control = optarg; break;
		case OPT_USER: o->user = optarg; break;
		case OPT_FSYNC: o->fsync = optarg; break;
		case OPT_NONINT: o->non_interactive = true; break;
		case OPT_PRINT: o->print_paths = true; break;
		case OPT_QUIET: o->quiet = true; break;
		case OPT_VERBOSE: o->verbose = true; break;
		case OPT_NETV:
			if (!strcmp(optarg, "auto"))
				o->net_verify = SHK_NET_VERIFY_AUTO;
			else if (!strcmp(optarg, "bpf"))
				o->net_verify = SHK_NET_VERIFY_BPF;
			else if (!strcmp(optarg, "emulate"))
				o->net_verify = SHK_NET_VERIFY_EMULATE;
			else {
				err("--net-verify: '%s' is not auto, bpf or emulate", optarg);
				return -1;
			}
			break;
		case OPT_EXECV:
			if (!strcmp(optarg, "auto"))
				o->exec_verify = SHK_EXEC_VERIFY_AUTO;
			else if (!strcmp(optarg, "bpf"))
				o->exec_verify = SHK_EXEC_VERIFY_BPF;
			else if (!strcmp(optarg, "ptrace"))
				o->exec_verify = SHK_EXEC_VERIFY_PTRACE;
			else {
				err("--exec-verify: '%s' is not auto, bpf or ptrace", optarg);
				return -1;
			}
			break;
		case 'h':
		case OPT_HELP: usage(stdout); exit(0);
		case OPT_VERSION: printf("shackle-run %s\n", SHACKLE_VERSION); exit(0);
		default: usage(stderr); return -1;
		}
	}
	if (optind >= argc) {
		err("no command given (usage: shackle-run [OPTIONS] -- CMD [ARGS...])");
		return -1;
	}
	o->argv = argv + optind;
	o->verbose = o->verbose && !o->quiet;
	return 0;
}

static int default_policy(char *out, size_t len)
{
	char dirs[] = SHACKLE_POLICY_DIRS;

	for (char *d = strtok(dirs, ":"); d; d = strtok(NULL, ":")) {
		snprintf(out, len, "%s/coding-agent.json", d);
		if (access(out, R_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static int resolve_user(const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(name);
	char *end;

	if (pw) {
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
		return 0;
	}
	errno = 0;
	unsigned long v = strtoul(name, &end, 10);
	if (errno || *end || end == name)
		return -ENOENT;
	*uid = (uid_t)v;
	pw = getpwuid(*uid);
	*gid = pw ? pw->pw_gid : (gid_t)v;
	return 0;
}

struct run {
	struct opts o;
	char policy_path[PATH_MAX];
	char session_id[128];
	struct shk_judged js;        /* policy, session, log, operator channel */
	struct shk_sources src;      /* the model gateway, the SDK socket */
	struct shk_sup_config sup;
	struct shk_sup *running;     /* set once the agent runs (started hook) */
};

/* ---- the supervisor's hooks for the operator channel ---------------------- */

static int k_release(void *ctx, uint64_t id, bool allow, int err, const struct sockaddr_storage *to,
                     socklen_t tolen, uint64_t tool_call)
{
	struct run *R = ctx;

	return R->running ? shk_sup_release(R->running, id, allow, err, to, tolen, tool_call) : -ESRCH;
}

static bool k_waiting(void *ctx, uint64_t id)
{
	struct run *R = ctx;

	return R->running && shk_sup_waiting(R->running, id);
}

static void on_started(void *ctx, struct shk_sup *sup, pid_t agent, const char *cgroup)
{
	struct run *R = ctx;

	R->running = sup;
	shk_judged_lock(&R->js);
	if (R->js.pipe.hitl)
		shk_hitl_set_agent(R->js.pipe.hitl, agent, cgroup);
	shk_judged_unlock(&R->js);
}

static int on_control(void *ctx)
{
	struct run *R = ctx;
	int r;

	shk_judged_lock(&R->js);
	r = shk_hitl_handle(R->js.pipe.hitl);
	shk_judged_unlock(&R->js);
	if (r < 0)
		err("operator channel failed (%s): held calls expire, new ones are held "
		    "until their timeout", strerror(-r));
	return r;
}

static int judge(void *ctx, const struct shk_obs *obs, struct shk_judgement *ret)
{
	struct run *R = ctx;
	int r;

	shk_judged_lock(&R->js);
	r = shk_pipeline_judge(&R->js.pipe, obs, ret);
	shk_judged_unlock(&R->js);
	return r;
}

static void tick(void *ctx)
{
	struct run *R = ctx;

	shk_judged_lock(&R->js);
	shk_pipeline_tick(&R->js.pipe);
	if (R->js.pipe.hitl)
		shk_hitl_tick(R->js.pipe.hitl);
	shk_judged_unlock(&R->js);
}

/* What covers the operator channel in the agent's view: the default
 * directory, or a --control socket. -ENOENT: nothing to cover. */
static int control_cover(struct run *R, char *buf, size_t len)
{
	const char *sock = shk_hitl_socket_path(R->js.pipe.hitl);
	int n;

	if (!sock || !sock[0])
		return -ENOENT;
	/* a directory given by SHACKLE_CONTROL_DIR may hold what the agent
	 * needs: only the built-in one is known to be ours alone */
	if (!R->o.control && !getenv("SHACKLE_CONTROL_DIR") && shk_control_dir(buf, len) == 0)
		return 0;
	n = snprintf(buf, len, "%s", sock);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static void on_stale(void *ctx, const char *path, int e)
{
	if (e == 0 && ((struct run *)ctx)->o.verbose)
		err("note: removed %s, left by a shackle-run that was killed", path);
}

/* A held call and its outcome, on stderr: where the agent runs, a call
 * that waits for a person would otherwise look like a hang (docs/hitl.md). */
static void held_notice(void *ctx, const shk_val *event)
{
	(void)ctx;
	shk_cli_held_notice(stderr, "shackle-run", event, false);
}

/* Open the operator channel unless the run is non-interactive. */
static void setup_hitl(struct run *R)
{
	struct shk_hitl_options ho = {
		.control_path = R->o.control,
		.kernel = { .ctx = R, .release = k_release, .waiting = k_waiting },
		.notice = R->o.quiet ? NULL : held_notice,
	};
	char dir[PATH_MAX];

	if (shk_control_dir(dir, sizeof(dir)) == 0)
		shk_stale_sockets(dir, on_stale, R);
	if (!shk_judged_interactive(R->o.non_interactive, R->o.control))
		return;
	if (shk_judged_open_channel(&R->js, R->session_id, ho) < 0)
		err("%s", R->js.err);
	else if (R->o.verbose)
		err("operator channel: %s", shk_hitl_socket_path(R->js.pipe.hitl));
}

static int setup_paths(struct run *R)
{
	if (R->o.policy)
		snprintf(R->policy_path, sizeof(R->policy_path), "%s", R->o.policy);
	else if (default_policy(R->policy_path, sizeof(R->policy_path)) < 0)
		return err("no default policy found in %s; give one with --policy", SHACKLE_POLICY_DIRS), -ENOENT;
	if (R->o.session) {
		snprintf(R->session_id, sizeof(R->session_id), "%s", R->o.session);
	} else {
		uint8_t rnd[8];
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			return err("getrandom: %m"), -EIO;
		shk_hex(rnd, sizeof(rnd), R->session_id);
	}
	return 0;
}

static int setup_policy(struct run *R)
{
	int r = shk_judged_load(&R->js, R->policy_path, 0);

	if (r < 0)
		return err("%s", R->js.err), r;
	if (R->js.unresolved > 0 && R->o.verbose)
		err("note: some host rules did not resolve; they match nothing until the next refresh");
	return 0;
}

/* The shared scope's lines: from the loop and from its subscriber thread
 * (stdio locks the stream per call). */
static void scope_line(void *ctx, const char *line)
{
	(void)ctx;
	err("%s", line);
}

/* The log and its key (logfiles.h), session_start. */
static int setup_ledger(struct run *R)
{
	struct shk_judged_log lo = { .audit = R->o.audit, .key = R->o.key, .session_id = R->session_id,
	                             .argv = (const char *const *)R->o.argv, .version = SHACKLE_VERSION,
	                             .scope_log = scope_line };
	int r;

	if (R->o.fsync && shk_fsync_policy_parse(R->o.fsync, &lo.fsync) < 0)
		return err("--fsync: unknown mode '%s' (checkpoint, entry, none)", R->o.fsync), -EINVAL;
	while (R->o.argv[lo.argc])
		lo.argc++;
	if ((r = shk_judged_open_log(&R->js, &lo)) < 0)
		err("%s", R->js.err);
	else if (shk_ledger_prior_state(R->js.pipe.ledger) == SHK_LEDGER_AFTER_UNFINISHED && !R->o.quiet)
		err("%s: its last session did not end (shackle-run was killed?); this session is "
		    "appended after it, and verify reports the unfinished one", R->js.files.log);
	return r;
}

static int setup_identity(struct run *R)
{
	R->sup.drop_privs = false;
	if (geteuid() != 0) {
		if (R->o.user)
			return err("--user needs root"), -EPERM;
		if (R->o.verbose)
			err("note: not root: the agent runs under your uid, in a user namespace that "
			    "hides the audit log and key; it can still signal shackle-run through a "
			    "/proc pidfd (which kills its own tree) — docs/supervisor.md");
		return 0;
	}
	if (resolve_user(R->o.user ? R->o.user : "nobody", &R->sup.run_uid, &R->sup.run_gid) < 0)
		return err("unknown user '%s'", R->o.user ? R->o.user : "nobody"), -ENOENT;
	R->sup.drop_privs = R->sup.run_uid != 0;
	R->sup.run_user = R->o.user ? R->o.user : "nobody";
	if (!R->sup.drop_privs && R->o.verbose)
		err("note: the agent runs as root: it can read the key and the audit log");
	return 0;
}

static int end_session(struct run *R, int status, const struct shk_sup_stats *st)
{
	shk_val *c = shk_object(R->js.doc);

	if (c) {
		shk_object_set_str(c, "notifications", shk_int(R->js.doc, (int64_t)st->notifications));
		shk_object_set_str(c, "allowed", shk_int(R->js.doc, (int64_t)st->allowed));
		shk_object_set_str(c, "denied", shk_int(R->js.doc, (int64_t)st->denied));
		shk_object_set_str(c, "exec_verified", shk_int(R->js.doc, (int64_t)st->exec_verified));
		shk_object_set_str(c, "exec_killed", shk_int(R->js.doc, (int64_t)st->exec_killed));
		/* of those, checked in the kernel instead of at an exec stop (docs/exec.md) */
		shk_object_set_str(c, "exec_in_kernel", shk_int(R->js.doc, (int64_t)st->exec_in_kernel));
		shk_object_set_str(c, "exec_killed_in_kernel",
		                   shk_int(R->js.doc, (int64_t)st->exec_killed_in_kernel));
		shk_object_set_str(c, "script_watched", shk_int(R->js.doc, (int64_t)st->script_watched));
		shk_object_set_str(c, "script_unwatched", shk_int(R->js.doc, (int64_t)st->script_unwatched));
		shk_object_set_str(c, "loader_watched", shk_int(R->js.doc, (int64_t)st->loader_watched));
		shk_object_set_str(c, "loader_unwatched", shk_int(R->js.doc, (int64_t)st->loader_unwatched));
		shk_object_set_str(c, "processes_seen", shk_int(R->js.doc, (int64_t)st->processes_seen));
		shk_object_set_str(c, "killed_at_end", shk_int(R->js.doc, (int64_t)st->killed_at_end));
		shk_object_set_str(c, "targets_gone", shk_int(R->js.doc, (int64_t)st->gone));
		shk_object_set_str(c, "cgroup", shk_bool(R->js.doc, st->cgroup));
		/* born in the leaf, or moved in (launch.c shk_launch_fork) */
		shk_object_set_str(c, "cgroup_clone", shk_bool(R->js.doc, st->cgroup && st->cgroup_clone));
		/* how approved connects reached the kernel (docs/supervisor.md) */
		shk_object_set_str(c, "exec_verify", shk_cstring(R->js.doc, st->exec_bpf ? "bpf" : "ptrace"));
		/* why --exec-verify=auto kept the exec stop */
		if (st->exec_kernel_err)
			shk_object_set_str(c, "exec_verify_error",
			                   shk_cstring(R->js.doc, strerror(st->exec_kernel_err)));
		shk_object_set_str(c, "net_verify", shk_cstring(R->js.doc, st->net_bpf ? "bpf" : "emulate"));
		/* SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux >= 6.6) */
		shk_object_set_str(c, "sync_wake", shk_bool(R->js.doc, st->sync_wake));
		shk_object_set_str(c, "proc_guard", shk_bool(R->js.doc, st->proc_guard));
		shk_object_set_str(c, "net_continued", shk_int(R->js.doc, (int64_t)st->net_continued));
		shk_object_set_str(c, "hitl_blocked", shk_int(R->js.doc, (int64_t)R->js.pipe.hitl_blocked));
		shk_sources_counters(&R->src, R->js.doc, c);
	}
	return shk_judged_end(&R->js, WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status), c);
}

/* Why the agent did not start; CMD was looked up as the agent's user.
 * Returns the exit status: 127 not found, 126 not executable, else 125. */
static int report_start(const struct run *R, int r, const struct shk_sup_stats *st)
{
	const char *u = R->sup.drop_privs ? R->sup.run_user : NULL;

	/* the supervisor named the leaf and both errnos; its EACCES or
	 * ENOENT is about cgroup.procs, not CMD */
	if (st->cgroup_refused)
		return EXIT_SETUP;
	if (r == -EACCES && st->program[0])
		err("%s: %s%s%s", st->program, strerror(-r), u ? " for user " : "", u ? u : "");
	else if (r == -ENOENT && !strchr(R->o.argv[0], '/'))
		err("%s: not found in PATH%s%s", R->o.argv[0], u ? " for user " : "", u ? u : "");
	else
		err("%s: %s", R->o.argv[0], strerror(-r));
	return r == -ENOENT ? 127 : r == -EACCES ? 126 : EXIT_SETUP;
}

int main(int argc, char **argv)
{
	static struct run R;
	struct shk_sup_stats st;
	int status = 0, r;
	bool failed;

	if (parse(argc, argv, &R.o) < 0)
		return 2;
	if (setup_identity(&R) < 0 || setup_paths(&R) < 0 || setup_policy(&R) < 0)
		return EXIT_SETUP;
	if (setup_ledger(&R) < 0)
		return EXIT_SETUP;
	setup_hitl(&R);
	if (shk_sources_start(&R.src, &R.js, &(struct shk_sources_options){ .set_env = true, .sdk = true,
	                      .set_owner = R.sup.drop_privs, .uid = R.sup.run_uid, .gid = R.sup.run_gid },
	                      R.js.err, sizeof(R.js.err)) < 0) {
		err("%s", R.js.err);
		shk_judged_close_channel(&R.js);
		shk_sources_stop(&R.src, &R.js);
		end_session(&R, 0, &(struct shk_sup_stats){ 0 });
		shk_judged_free(&R.js);
		return EXIT_SETUP;
	}
	if (R.o.verbose && R.src.gw)
		err("model gateway: http://127.0.0.1:%u", (unsigned)R.js.pipe.gateway_port);
	if (R.o.verbose)
		err("SDK socket: %s", R.js.pipe.sdk_path);
	if (R.o.print_paths) {
		fprintf(stderr, "audit: %s\n", R.js.files.log);
		if (R.js.files.pub[0])
			fprintf(stderr, "pubkey: %s\n", R.js.files.pub);
	}
	R.sup.argv = R.o.argv;
	R.sup.judge = judge;
	R.sup.tick = tick;
	R.sup.judge_ctx = &R;
	R.sup.started = on_started;
	if (R.js.pipe.hitl) {
		R.sup.extra_fd = shk_hitl_fd(R.js.pipe.hitl);
		R.sup.on_extra = on_control;
	}
	R.sup.quiet = R.o.quiet;
	R.sup.verbose = R.o.verbose;
	R.sup.net_verify = R.o.net_verify;
	R.sup.exec_verify = R.o.exec_verify;
	/* The verify programs only check calls this run lets through: when
	 * the policy can let no IPv4/IPv6 call through, loading and attaching
	 * them would buy nothing but their cost. Every network call is then
	 * judged and denied, as under the emulation. */
	if (R.o.net_verify == SHK_NET_VERIFY_AUTO && !shk_pipeline_may_allow_ip(&R.js.pipe))
		R.sup.net_verify = SHK_NET_VERIFY_EMULATE;
	/* the default state directory is covered whole (older logs too) */
	const char *mask[4] = { R.js.files.state_dir[0] ? R.js.files.state_dir : R.js.files.log };
	size_t nmask = 1;
	char ctl_dir[PATH_MAX];

	/* the key (--key, or LOG.key beside a log --audit named) and LOG.pub */
	if (R.o.key || !R.js.files.state_dir[0])
		mask[nmask++] = R.js.files.key;
	if (R.js.files.beside && !R.js.files.state_dir[0])
		mask[nmask++] = R.js.files.pub;
	/* Without root the agent has the operator's uid: the filter refuses its
	 * connects to the channel, but it could rename the socket aside and
	 * put its own in its place, then show the operator a harmless call
	 * for a held one. So the channel is covered too: the default directory
	 * whole (every session's socket), a --control socket itself. */
	if (R.js.pipe.hitl && control_cover(&R, ctl_dir, sizeof(ctl_dir)) == 0)
		mask[nmask++] = ctl_dir;
	R.sup.mask_paths = mask;
	R.sup.nmask = nmask;
	r = shk_supervise_run(&R.sup, &status, &st);
	R.running = NULL;
	/* calls still held are cancelled in the log before session_end */
	shk_judged_close_channel(&R.js);
	shk_sources_stop(&R.src, &R.js);
	if (r < 0) {
		status = report_start(&R, r, &st);
		end_session(&R, 0, &st);
		return status;
	}
	if (R.js.pipe.ledger_failed)
		err("the audit log failed (%s): every call after that was denied; the agent's "
		    "exit status was %d, shackle-run exits %d", strerror(R.js.pipe.ledger_errno),
		    shk_sup_exit_code(status), EXIT_SETUP);
	if ((r = end_session(&R, status, &st)) < 0)
		err("%s: closing the audit log: %s (the agent's exit status was %d)", R.js.files.log,
		    strerror(-r), shk_sup_exit_code(status));
	/* a run whose evidence is incomplete must not look like a success */
	failed = R.js.pipe.ledger_failed || r < 0;
	shk_judged_free(&R.js);
	return failed ? EXIT_SETUP : shk_sup_exit_code(status);
}
