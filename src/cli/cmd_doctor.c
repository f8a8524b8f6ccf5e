/* SPDX-License-Identifier: MIT */
/*
 * `shackle doctor [--json]`: probe the kernel once, for real (src/ebpf/probe.h),
 * and say which enforcement mode shackle-run and shackle attach get on this
 * machine and what is weaker in it. Exit 0 when the probes ran, 2 for bad
 * usage, 1 when the report could not be written.
 */
#include <errno.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include <shackle/ebpf.h>

#include "cli/commands.h"
#include "cli/doctor_shared.h"
#include "ebpf/execverify.h"
#include "ebpf/netverify.h"
#include "ebpf/probe.h"
#include "judge/control.h"
#include "supervise/stale.h"

#define MAX_NOTES 12

struct mode {
	const char *name;
	bool available;
	char summary[1024];
	const char *weaker[MAX_NOTES];
	size_t nweaker;
};

static bool yes(const struct shk_probe_report *r, int id)
{
	return r->r[id].state == SHK_PROBE_YES;
}

static void note(struct mode *m, const char *text)
{
	if (m->nweaker < MAX_NOTES)
		m->weaker[m->nweaker++] = text;
}

/* shackle-run as the supervisor (src/supervise) is designed: see docs/supervisor.md. */
static void mode_run(const struct shk_probe_report *r, struct mode *m)
{
	static char nv_note[400];
	char why[256] = "";
	/* what --net-verify=auto picks: the verify programs really load here */
	bool nv = yes(r, SHK_PROBE_CGROUP_CREATE) && shk_netverify_probe(why, sizeof(why)) == 0;
	/* what --exec-verify=auto picks: lazy mode, and the exec check loads */
	bool lazy = r->root && yes(r, SHK_PROBE_CGROUP_CREATE) && yes(r, SHK_PROBE_CGROUP_KILL);
	int xv = lazy ? shk_execverify_probe() : 0;
	char xv_what[200];

	if (!why[0] && !nv)
		snprintf(why, sizeof(why), "no cgroup of its own for the agent");
	m->name = "shackle-run";
	m->available = yes(r, SHK_PROBE_SECCOMP_NOTIFY);
	if (!m->available) {
		snprintf(m->summary, sizeof(m->summary),
			 "unavailable: seccomp user notification does not work here");
		return;
	}
	if (lazy && xv == 0)
		snprintf(xv_what, sizeof(xv_what), "by a sched_process_exec program when the agent "
			 "runs as another user, else and for scripts and loaders at the ptrace exec "
			 "stop (--exec-verify=auto uses bpf)");
	else
		snprintf(xv_what, sizeof(xv_what), "at the ptrace exec stop (--exec-verify=auto uses "
			 "ptrace: %s)", !lazy ? "needs root and a cgroup with cgroup.kill"
			 : strerror(-xv));
	snprintf(m->summary, sizeof(m->summary),
		 "seccomp user-notify supervisor; exec verified %s; network "
		 "calls %s%s; agent tree held %s", xv_what,
		 yes(r, SHK_PROBE_PIDFD_GETFD) ? "performed on the validated copy (pidfd_getfd)"
					       : "judged without emulation",
		 nv ? ", except TCP/UDP connects and UDP sends to an address: answered CONTINUE "
		      "and checked again by a cgroup hook on the kernel's copy of the address "
		      "(--net-verify=auto uses bpf)"
		    : " (--net-verify=auto uses emulate)",
		 yes(r, SHK_PROBE_CGROUP_CREATE) && yes(r, SHK_PROBE_CGROUP_KILL)
			 ? "in its own cgroup (cgroup.kill on supervisor death)"
			 : "by PR_SET_PDEATHSIG only");
	if (!yes(r, SHK_PROBE_PIDFD_GETFD))
		note(m, "no pidfd_getfd: network calls cannot be performed on a validated copy, "
			"CONTINUE would re-read memory the agent controls");
	if (!yes(r, SHK_PROBE_SECCOMP_ADDFD))
		note(m, "no atomic ADDFD+SEND: descriptors cannot be injected as a syscall result");
	if (!yes(r, SHK_PROBE_SECCOMP_SYNC_WAKE))
		note(m, "no SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: every intercepted call may wake the "
			"supervisor and the agent on other CPUs (slower, not weaker)");
	if (!yes(r, SHK_PROBE_LANDLOCK))
		note(m, "no Landlock: the agent's tree may write under /proc, so a process can "
			"rewrite a child's argv and environment through /proc/PID/mem after the exec "
			"check (shackle-run warns)");
	if (!yes(r, SHK_PROBE_SECCOMP_WAIT_KILLABLE))
		note(m, "no WAIT_KILLABLE_RECV: a signal interrupts a held call and the retry is "
			"judged again");
	if (!yes(r, SHK_PROBE_CGROUP_CREATE))
		note(m, "no cgroup of its own: setsid/double-fork descendants can outlive the "
			"supervisor");
	else if (!yes(r, SHK_PROBE_CGROUP_KILL))
		note(m, "no cgroup.kill: the tree is killed pid by pid, racing with forks");
	if (!r->root)
		note(m, "not root: the agent runs under the same uid; key and log are protected "
			"only by what the supervisor can mask");
	if (!r->root && !yes(r, SHK_PROBE_USERNS))
		note(m, "no unprivileged user namespaces: no mount-namespace masking either");
	if (nv) {
		note(m, "with --net-verify=bpf the agent cannot make sockets the connect hooks do "
			"not see (other families, UDP-Lite, SCTP, ping) nor use pidfd_getfd; a socket "
			"handed in over SCM_RIGHTS by a process outside the tree could still be "
			"swapped in behind an approved fd number (--net-verify=emulate closes that)");
	} else {
		snprintf(nv_note, sizeof(nv_note), "no kernel-verified connect (%s): every "
			 "approved connect is performed by shackle-run (slower, same guarantee)", why);
		note(m, nv_note);
	}
}

static void mode_attach(const struct shk_probe_report *r, struct mode *m)
{
	bool net = yes(r, SHK_PROBE_BPF_PROGRAMS) && r->root && yes(r, SHK_PROBE_CGROUP2) &&
		   yes(r, SHK_PROBE_BPF_SOCK_ADDR) && yes(r, SHK_PROBE_BPF_RINGBUF);
	bool exec_tp = yes(r, SHK_PROBE_BPF_RAW_TP) && yes(r, SHK_PROBE_BPF_SEND_SIGNAL);
	bool exec_lsm = exec_tp && yes(r, SHK_PROBE_BPF_LSM);

	m->name = "attach";
	m->available = net;
	if (!net) {
		snprintf(m->summary, sizeof(m->summary), "unavailable: needs %s",
			 !yes(r, SHK_PROBE_BPF_PROGRAMS) ? "a build with the eBPF programs"
			 : !r->root ? "root (CAP_BPF + CAP_NET_ADMIN + CAP_SYS_ADMIN)"
			 : !yes(r, SHK_PROBE_CGROUP2) ? "a cgroup v2 hierarchy"
			 : !yes(r, SHK_PROBE_BPF_SOCK_ADDR) ? "cgroup sock_addr hooks"
							    : "the BPF ring buffer");
		return;
	}
	snprintf(m->summary, sizeof(m->summary),
		 "cgroup sock_addr hooks (connect/sendmsg/bind, IPv4+IPv6) judge from maps in the "
		 "kernel; exec: %s",
		 exec_lsm ? "BPF LSM bprm_check_security (a denied exec fails with EPERM), the raw "
			    "tracepoint sched_process_exec reports allowed ones"
		 : exec_tp ? "raw tracepoint sched_process_exec + bpf_send_signal(SIGKILL) (BPF LSM "
			     "unusable here: see its probe line)"
			   : "not enforced (no raw tracepoint or bpf_send_signal)");
	if (exec_lsm)
		note(m, "with BPF LSM the event of a refused exec names the file but carries no argv "
			"(the new argv is not in the task's memory yet)");
	if (exec_tp && !yes(r, SHK_PROBE_BPF_LSM))
		note(m, "no BPF LSM: a denied exec is not refused with EPERM; the image is loaded "
			"and the process killed before its first instruction");
	note(m, "decide() runs in user space after the kernel answered: budget, repeat and "
		"breaker verdicts apply from the next call on (pushed into maps)");
	note(m, "a socket is judged by the cgroup it was created in: sockets made before a "
		"process joined the cgroup, or passed in, are not seen");
	note(m, "AF_UNIX connects, listen() and sends on connected sockets without an address "
		"are not seen by sock_addr hooks");
	note(m, "human approval: a HITL call is refused (EPERM; a HITL exec is killed) first "
		"and the agent must retry it after `shackle approve`; one retry passes: a network "
		"call to exactly that destination, or an exec of exactly that image with exactly "
		"that argv (at most 511 bytes, longer ones cannot be approved; its environment and "
		"cwd are not bound)");
	if (exec_lsm)
		note(m, "with BPF LSM a HITL exec is refused before its argv is readable: it cannot "
			"be approved (only execs killed by the tracepoint can)");
	note(m, "exec rules are enforced by device+inode for literal paths only (--exec); path "
		"globs and argv patterns are judged in user space after the fact");
#ifndef SHK_HAVE_CMD_ATTACH
	note(m, "`shackle attach` is not in this binary's command table yet (the executable does "
		"not link the eBPF library)");
#endif
}

static const char *err_text(int e)
{
	return e > 0 ? strerror(e) : "";
}

static int print_text(const struct shk_probe_report *rep, const struct utsname *u,
		      const struct mode *modes, size_t nmodes, const shk_scope_status *shared)
{
	printf("shackle doctor: Linux %s (%s), %s\n\n", u->release, u->machine,
	       rep->root ? "running as root" : "not root");
	for (int i = 0; i < SHK_PROBE__COUNT; i++) {
		const struct shk_probe_result *p = &rep->r[i];

		printf("  %-40s %-8s %s%s%s%s\n", shk_probe_title(i), shk_probe_state_name(p->state),
		       p->detail, p->err ? " [" : "", err_text(p->err), p->err ? "]" : "");
	}
	printf("\nenforcement modes\n");
	for (size_t k = 0; k < nmodes; k++) {
		printf("  %s: %s\n", modes[k].name, modes[k].summary);
		for (size_t j = 0; j < modes[k].nweaker; j++)
			printf("    weaker: %s\n", modes[k].weaker[j]);
	}
	if (shared)
		shk_doctor_shared_print(shared);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -EIO;
}

static int print_json(const struct shk_probe_report *rep, const struct utsname *u,
		      const struct mode *modes, size_t nmodes, const shk_scope_status *shared)
{
	json_t *root = json_object(), *probes = json_object(), *jm = json_object();
	int r = -ENOMEM;

	if (!root || !probes || !jm)
		goto out;
	for (int i = 0; i < SHK_PROBE__COUNT; i++) {
		const struct shk_probe_result *p = &rep->r[i];

		json_object_set_new(probes, shk_probe_key(i),
				    json_pack("{s:s, s:i, s:s, s:s}", "state",
					      shk_probe_state_name(p->state), "errno", p->err,
					      "error", err_text(p->err), "detail", p->detail));
	}
	for (size_t k = 0; k < nmodes; k++) {
		json_t *w = json_array();

		for (size_t j = 0; j < modes[k].nweaker; j++)
			json_array_append_new(w, json_string(modes[k].weaker[j]));
		json_object_set_new(jm, modes[k].name,
				    json_pack("{s:b, s:s, s:o}", "available", modes[k].available,
					      "summary", modes[k].summary, "weaker", w));
	}
	json_object_set_new(root, "kernel", json_string(u->release));
	json_object_set_new(root, "machine", json_string(u->machine));
	json_object_set_new(root, "root", json_boolean(rep->root));
	json_object_set_new(root, "cgroup2_mount", json_string(rep->cgroup2_mount));
	json_object_set_new(root, "landlock_abi", json_integer(rep->landlock_abi));
	json_object_set(root, "probes", probes);
	json_object_set(root, "modes", jm);
	if (shared && json_object_set_new(root, "shared", shk_doctor_shared_json(shared)) < 0)
		goto out;
	r = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) == 0 ? 0 : -EIO;
	if (r == 0 && (fputc('\n', stdout) == EOF || fflush(stdout) != 0))
		r = -EIO;
out:
	json_decref(probes);
	json_decref(jm);
	json_decref(root);
	return r;
}

static void cleaned(void *ctx, const char *path, int e)
{
	(void)ctx;
	if (e == 0)
		printf("removed %s\n", path);
	else
		printf("kept %s: %s\n", path, e == EBUSY ? "processes are still inside" : strerror(e));
}

/* --clean: what killed shackle-runs left behind, in the whole cgroup
 * hierarchy and in this user's operator directory (src/supervise/stale.c). */
static int clean(void)
{
	char mnt[2048], dir[PATH_MAX];
	int n = 0, r;

	if (shk_cgroup2_mount(mnt, sizeof(mnt)) == 0) {
		if ((r = shk_stale_cgroups(mnt, true, cleaned, NULL)) < 0)
			shk_cli_error("doctor", "%s: %s", mnt, strerror(-r));
		else
			n += r;
	}
	if (shk_control_dir(dir, sizeof(dir)) == 0) {
		if ((r = shk_stale_sockets(dir, cleaned, NULL)) < 0)
			shk_cli_error("doctor", "%s: %s", dir, strerror(-r));
		else
			n += r;
	}
	printf("clean: %d left-over(s) of killed sessions removed\n", n);
	return fflush(stdout) == 0 ? 0 : 1;
}

static const struct shk_usage doctor_usage = { "doctor",
	"usage: shackle doctor [--json] [--policy FILE] | --clean\n\n"
	"Probes kernel features once, for real, and reports which enforcement mode\n"
	"shackle-run and shackle attach get on this machine and what is weaker in it.\n"
	"--json: the same as one JSON document. --clean removes what killed\n"
	"shackle-runs left behind (empty cgroups, operator sockets nobody serves).\n"
	"--policy FILE: also the Redis server and the scopes of the policy's \"shared\"\n"
	"section (connection, round trip, persistence, spend and breaker of each scope).\n"
	"Exit status: 0 the probes ran, 1 the report could not be written or the shared\n"
	"state is not reachable, 2 bad usage or a bad policy.\n" };

/* The policy's shared scopes, for the report: 0 (none when the policy has
 * no "shared" section), or 2 after telling why the policy is bad. */
static int shared_status(const char *path, shk_scope_status *st, bool *has)
{
	shk_parse_error err;
	shk_policy *p = NULL;
	int r = shk_policy_load_file(path, &p, &err);

	*has = false;
	if (r < 0) {
		shk_cli_error("doctor", "%s:%d:%d: %s", err.source, err.line, err.column, err.text);
		return 2;
	}
	if (shk_policy_shared(p)) {
		shk_scope_doctor(shk_policy_shared(p), NULL, st);
		*has = true;
	}
	shk_policy_free(p);
	return 0;
}

int shk_cmd_doctor(int argc, char **argv)
{
	struct shk_probe_report rep;
	struct mode modes[2] = { 0 };
	struct utsname u;
	shk_scope_status shared;
	const char *policy = NULL;
	bool json = false, has_shared = false;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--policy") && i + 1 < argc) {
			policy = argv[++i];
		} else if (!strcmp(argv[i], "--clean")) {
			return clean();
		} else if (shk_cli_is_help(argv[i])) {
			return shk_cli_help(&doctor_usage);
		} else {
			return shk_cli_usage_error(&doctor_usage, "unknown argument '%s'", argv[i]);
		}
	}
	if (policy && (r = shared_status(policy, &shared, &has_shared)) != 0)
		return r;
	if (uname(&u) < 0) {
		shk_cli_error("doctor", "uname: %m");
		return 1;
	}
	/* Probes fork: flush first so that nothing buffered is written twice. */
	fflush(NULL);
	shk_probe_run(&rep);
	mode_run(&rep, &modes[0]);
	mode_attach(&rep, &modes[1]);
	r = json ? print_json(&rep, &u, modes, 2, has_shared ? &shared : NULL)
		 : print_text(&rep, &u, modes, 2, has_shared ? &shared : NULL);
	if (r < 0) {
		shk_cli_error("doctor", "writing the report: %s", strerror(-r));
		return 1;
	}
	return has_shared && shared.err ? 1 : 0;
}
