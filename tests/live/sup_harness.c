/* SPDX-License-Identifier: MIT */
/*
 * Test harness for the Linux layer alone: runs a command under
 * shk_supervise_run with a small rule-driven judge instead of the policy
 * pipeline, and logs every observation to stderr ("obs exec /usr/bin/true"),
 * so live tests can check interception, enforcement and exit codes without
 * depending on the policy, decide() and audit code.
 *
 *   sup_harness [--deny-exec SUBSTR]... [--deny-port N]... [--deny-unix SUBSTR]...
 *               [--user UID] -- CMD ARGS...
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "supervise/supervise.h"

struct rules {
	const char *deny_exec[16];
	int ndeny_exec;
	int deny_port[16];
	int ndeny_port;
	const char *deny_unix[16];
	int ndeny_unix;
};

static int judge(void *ctx, const struct shk_obs *o, struct shk_judgement *ret)
{
	struct rules *r = ctx;

	ret->verdict = SHK_JUDGE_ALLOW;
	if (o->kind == SHK_OBS_EXEC) {
		const struct shk_obs_exec *x = &o->exec;
		fprintf(stderr, "obs exec %s interp=%s loader=%s argc=%zu argv0=%s\n", x->file.path,
		        x->ninterp ? x->interp[x->ninterp - 1].path : "",
		        x->has_loader_target ? x->loader_target.path : "", x->argc, x->argv[0]);
		for (int i = 0; i < r->ndeny_exec; i++) {
			bool hit = strstr(x->file.path, r->deny_exec[i]) ||
			           (x->has_loader_target && strstr(x->loader_target.path, r->deny_exec[i]));
			for (size_t k = 0; k < x->ninterp; k++)
				hit = hit || strstr(x->interp[k].path, r->deny_exec[i]);
			if (hit)
				ret->verdict = SHK_JUDGE_DENY;
		}
	} else {
		fprintf(stderr, "obs net op=%d family=%d addr=%s port=%u unix=%s%s\n", o->net.op,
		        o->net.family, o->net.addr_str, o->net.port, o->net.unix_abstract ? "@" : "",
		        o->net.unix_name);
		for (int i = 0; i < r->ndeny_port; i++)
			if (o->net.port == r->deny_port[i] && o->net.op != SHK_OBS_BIND &&
			    o->net.op != SHK_OBS_LISTEN &&
			    (o->net.family == AF_INET || o->net.family == AF_INET6))
				ret->verdict = SHK_JUDGE_DENY;
		for (int i = 0; i < r->ndeny_unix; i++)
			if (o->net.family == AF_UNIX && strstr(o->net.unix_name, r->deny_unix[i]))
				ret->verdict = SHK_JUDGE_DENY;
	}
	fprintf(stderr, "verdict %s\n", ret->verdict == SHK_JUDGE_ALLOW ? "allow" : "deny");
	return 0;
}

int main(int argc, char **argv)
{
	static struct rules rules;
	struct shk_sup_config cfg = { .judge = judge, .judge_ctx = &rules };
	struct shk_sup_stats st;
	int i, status = 0, r;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (i + 1 >= argc)
			break;
		if (strcmp(argv[i], "--deny-exec") == 0 && rules.ndeny_exec < 16)
			rules.deny_exec[rules.ndeny_exec++] = argv[++i];
		else if (strcmp(argv[i], "--deny-port") == 0 && rules.ndeny_port < 16)
			rules.deny_port[rules.ndeny_port++] = atoi(argv[++i]);
		else if (strcmp(argv[i], "--deny-unix") == 0 && rules.ndeny_unix < 16)
			rules.deny_unix[rules.ndeny_unix++] = argv[++i];
		else if (strcmp(argv[i], "--user") == 0) {
			cfg.drop_privs = true;
			cfg.run_uid = (uid_t)atoi(argv[++i]);
			cfg.run_gid = (gid_t)cfg.run_uid;
		} else {
			fprintf(stderr, "sup_harness: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	if (i >= argc - 1) {
		fprintf(stderr, "usage: sup_harness [rules] -- CMD ARGS...\n");
		return 2;
	}
	cfg.argv = argv + i + 1;
	r = shk_supervise_run(&cfg, &status, &st);
	if (r < 0) {
		fprintf(stderr, "sup_harness: %s\n", strerror(-r));
		return 125;
	}
	fprintf(stderr,
	        "stats notifications=%llu allowed=%llu denied=%llu failed=%llu exec_verified=%llu "
	        "exec_killed=%llu processes=%llu killed_at_end=%llu gone=%llu cgroup=%d killable=%d\n",
	        (unsigned long long)st.notifications, (unsigned long long)st.allowed,
	        (unsigned long long)st.denied, (unsigned long long)st.failed,
	        (unsigned long long)st.exec_verified,
	        (unsigned long long)st.exec_killed, (unsigned long long)st.processes_seen,
	        (unsigned long long)st.killed_at_end, (unsigned long long)st.gone, st.cgroup,
	        st.wait_killable);
	return shk_sup_exit_code(status);
}
