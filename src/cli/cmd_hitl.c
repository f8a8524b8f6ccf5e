/* SPDX-License-Identifier: MIT */
/*
 * The operator's commands for held calls of running shackle-run sessions:
 *   shackle pending [--json]
 *   shackle approve|reject|defer|escalate ID [--as OPERATOR] [--digest HEX] [--json]
 *   shackle modify ID --connect ADDR:PORT [--as OPERATOR] [--json]
 *   shackle reset [--as OPERATOR] [--json]
 *   shackle watch [--wait] [--json]
 * Sessions are found in the control directories (judge/control.h); with
 * several running, --session ID chooses one. docs/hitl.md is the manual.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <shackle/canon.h>

#include "cli/commands.h"
#include "cli/display.h"
#include "judge/control.h"

#define MAX_SESSIONS 64
/* A string from a session, a socket name or the agent: safe to print
 * (display.c); every one goes through it */
#define SAFE(b, v) shk_cli_text((v), (b), sizeof(b))
#define TIMEOUT_MS 10000

struct opts {
	const char *cmd, *session, *as, *digest, *connect, *id;
	bool json, wait;
};

struct target {
	char session[80];
	char path[256];
};

static void usage(FILE *f, const char *cmd)
{
	fprintf(f,
	        "usage: shackle pending [--json] [--session ID]\n"
	        "       shackle approve ID [--as OPERATOR] [--digest HEX] [--json] [--session ID]\n"
	        "       shackle reject ID | defer ID | escalate ID   (same options)\n"
	        "       shackle modify ID --connect ADDR:PORT [--as OPERATOR] [--json] [--session ID]\n"
	        "       shackle reset [--as OPERATOR] [--json] [--session ID]\n"
	        "       shackle watch [--wait] [--json] [--session ID]\n"
	        "\n"
	        "Decide on calls that running shackle-run sessions hold for a human.\n"
	        "ID is the id `shackle pending` prints. --as names the operator in the audit log\n"
	        "(default: your login name). --digest binds the decision to the args digest\n"
	        "you reviewed: a call with other arguments is not released by it. modify\n"
	        "applies to held connect() calls only: the supervisor connects to ADDR:PORT\n"
	        "instead (the policy must allow it). reset closes a tripped circuit breaker.\n"
	        "--json prints the session's answer as one JSON object (id, verdict, reason,\n"
	        "state, session). watch lists the calls already waiting, then every event;\n"
	        "--wait waits for a session to start.\n"
	        "Sessions are found in %s (SHACKLE_CONTROL_DIR overrides;\n"
	        "root also looks in every user's); --session ID chooses one when several run.\n"
	        "Exit status: 0 done as asked (approve, modify: released; reject: denied;\n"
	        "defer, escalate: held), 1 refused, not found, or answered otherwise (an\n"
	        "approval decide() denied, a second resume without effect), 2 bad usage.\n",
	        "$XDG_RUNTIME_DIR/shackle, /run/shackle for root");
	(void)cmd;
}

static int parse(int argc, char **argv, struct opts *o)
{
	enum { O_SESSION = 256, O_AS, O_DIGEST, O_CONNECT, O_JSON, O_HELP, O_WAIT };
	static const struct option lo[] = {
		{ "session", required_argument, 0, O_SESSION }, { "as", required_argument, 0, O_AS },
		{ "digest", required_argument, 0, O_DIGEST }, { "connect", required_argument, 0, O_CONNECT },
		{ "json", no_argument, 0, O_JSON }, { "help", no_argument, 0, O_HELP },
		{ "wait", no_argument, 0, O_WAIT }, { 0, 0, 0, 0 },
	};
	bool takes_id = strcmp(o->cmd, "pending") && strcmp(o->cmd, "watch") && strcmp(o->cmd, "reset");
	bool decides = takes_id || !strcmp(o->cmd, "reset");
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_SESSION: o->session = optarg; break;
		case O_AS: o->as = optarg; break;
		case O_DIGEST: o->digest = optarg; break;
		case O_CONNECT: o->connect = optarg; break;
		case O_JSON: o->json = true; break;
		case O_WAIT: o->wait = true; break;
		case 'h':
		case O_HELP: usage(stdout, o->cmd); exit(0);
		default: usage(stderr, o->cmd); return -1;
		}
	}
	if (takes_id && optind < argc)
		o->id = argv[optind++];
	if (optind != argc || (takes_id && !o->id)) {
		shk_cli_error(o->cmd, takes_id ? "expected exactly one ID" : "unexpected argument '%s'",
		              optind < argc ? argv[optind] : "");
		return -1;
	}
	if ((o->as && !decides) || (o->wait && strcmp(o->cmd, "watch")) ||
	    (o->digest && (!takes_id || !strcmp(o->cmd, "modify")))) {
		shk_cli_error(o->cmd, "option not valid for this command (see --help)");
		return -1;
	}
	if (!strcmp(o->cmd, "modify") != !!o->connect) {
		shk_cli_error(o->cmd, !o->connect ? "modify needs --connect ADDR:PORT"
		                                  : "--connect belongs to modify only");
		return -1;
	}
	return 0;
}

/* ---- finding sessions ----------------------------------------------------------- */

struct found {
	const struct opts *o;
	struct target *t;
	size_t max, n;
};

/* The sessions of one directory: *.sock named as a session id that
 * something listens on (a socket nobody listens on is left over by a
 * session that died); with --session, only that one. */
static int scan_dir(void *ctx, const char *dir)
{
	static const char id_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
	struct found *f = ctx;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		int r = errno == ENOENT ? 0 : -errno;

		if (r < 0)
			shk_cli_error(f->o->cmd, "cannot read %s: %s", dir, strerror(-r));
		return r;
	}
	while ((de = readdir(d)) && f->n < f->max) {
		struct target *t = &f->t[f->n];
		size_t len = strlen(de->d_name);
		struct shk_control_client cl;
		int w, r;

		if (len < 6 || strcmp(de->d_name + len - 5, ".sock"))
			continue;
		w = snprintf(t->path, sizeof(t->path), "%s/%s", dir, de->d_name);
		/* A truncated path would name another socket: skip it. */
		if (w < 0 || (size_t)w >= sizeof(t->path))
			continue;
		snprintf(t->session, sizeof(t->session), "%.*s", (int)(len - 5), de->d_name);
		/* a session id is [A-Za-z0-9._-] (control_client.c): another name
		 * is no session's, and would reach the terminal as it is */
		if (strspn(t->session, id_chars) != len - 5 || (f->o->session && strcmp(t->session, f->o->session)))
			continue;
		r = shk_control_connect(t->path, &cl);
		shk_control_disconnect(&cl);
		/* a named session served from another user namespace is kept:
		 * call() says why it is not talked to */
		if (r == 0 || (r == -EPERM && f->o->session))
			f->n++;
	}
	closedir(d);
	return 0;
}

/* Live sessions in the directories an operator looks in (control.h). */
static int find_sessions(const struct opts *o, struct target *t, size_t max, size_t *ret_n)
{
	struct found f = { .o = o, .t = t, .max = max };
	char path[256];
	int r;

	*ret_n = 0;
	if (o->session && shk_control_path(o->session, path, sizeof(path)) < 0) {
		shk_cli_error(o->cmd, "--session %s: not a session id", o->session);
		return -EINVAL;
	}
	if ((r = shk_control_each_dir(scan_dir, &f)) < 0)
		return r;
	*ret_n = f.n;
	return 0;
}

/* Where sessions were looked for, for a message. */
static const char *looked_in(char *buf, size_t len)
{
	char dir[200] = "";

	shk_control_dir(dir, sizeof(dir));
	snprintf(buf, len, "%s%s", dir, getenv("SHACKLE_CONTROL_DIR") ? "" : geteuid() == 0 ?
	         " or another user's /run/user/UID/shackle, /tmp/shackle-UID" : " or your other default directory");
	return buf;
}

/* Exactly one session, or an error that says what to do. none_ok: no
 * session is not an error (watch --wait tries again). */
static int one_session(const struct opts *o, struct target *ret, bool none_ok)
{
	struct target t[MAX_SESSIONS];
	char where[320];
	size_t n;
	int r;

	if ((r = find_sessions(o, t, MAX_SESSIONS, &n)) < 0)
		return r;
	if (n == 0) {
		if (!none_ok)
			shk_cli_error(o->cmd, "no running shackle-run session%s%s found in %s", o->session ? " " : "",
			              o->session ? o->session : "", looked_in(where, sizeof(where)));
		return -ENOENT;
	}
	if (n > 1) {
		fprintf(stderr, "shackle %s: %zu sessions are running; choose one with --session ID%s:\n", o->cmd, n,
		        o->session ? " and SHACKLE_CONTROL_DIR=DIR" : "");
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "  %-20s %s\n", t[i].session, t[i].path);
		return -EINVAL;
	}
	*ret = t[0];
	return 0;
}

/* A member of a session's answer, escaped for the terminal (a session
 * socket may be a fake one's). Buffers in turn: one printf
 * shows several. */
static const char *str(const shk_val *o, const char *k, const char *dflt)
{
	static char bufs[8][256];
	static unsigned next;
	const char *s = shk_val_str(shk_object_get(o, k), NULL);

	return shk_cli_text(s ? s : dflt, bufs[next++ % 8], sizeof(bufs[0]));
}

/* ---- talking to a session ------------------------------------------------------ */

static int call(const struct opts *o, const struct target *t, const shk_val *req, shk_doc *d,
                struct shk_control_client *cl, shk_val **ret)
{
	int r = shk_control_connect(t->path, cl);

	if (r < 0) {
		char sess[96], path[512];

		shk_cli_error(o->cmd, "cannot reach session %s (%s): %s", SAFE(sess, t->session),
		              SAFE(path, t->path),
		              r == -EPERM ? "the socket is served from another user namespace, not "
		                            "by a shackle-run of yours (an agent's?)" : strerror(-r));
		return r;
	}
	r = shk_control_send(cl, req);
	/* a refused peer finds the socket closed, with the reason to read */
	if (r == 0 || r == -EPIPE || r == -ECONNRESET)
		r = shk_control_recv(cl, d, TIMEOUT_MS, ret);
	if (r < 0) {
		shk_cli_error(o->cmd, "session %s: %s", t->session,
		              r == -ETIMEDOUT ? "no answer within 10 s" :
		              r == -EPROTO ? "the answer is not a JSON object" : strerror(-r));
		shk_control_disconnect(cl);
		return r;
	}
	if (!shk_val_bool(shk_object_get(*ret, "ok"))) {
		shk_cli_error(o->cmd, "session %s: %s", t->session, str(*ret, "error", "refused"));
		shk_control_disconnect(cl);
		return -EPERM;
	}
	return 0;
}


static void print_json(const shk_val *v)
{
	char *text = NULL;
	size_t len;

	if (shk_canon_dump(v, &text, &len) == 0)
		printf("%s\n", text);
	free(text);
	fflush(stdout);
}

/* HH:MM:SS of a CLOCK_REALTIME nanosecond time (UTC). */
static void hms(const shk_val *ns, char *buf, size_t len)
{
	time_t t = shk_val_type(ns) == SHK_INT ? (time_t)(shk_val_int(ns) / 1000000000LL) : time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

/* How much of a call a row or an event line shows (the server cuts too:
 * hitl.c; the audit log has every byte). */
#define SUMMARY_MAX 400


static void print_pending_row(const char *session, const shk_val *p)
{
	char when[16], sess[96];
	const char *digest = str(p, "args_digest", "");
	char *what = shk_cli_summary(shk_object_get(p, "params"), SUMMARY_MAX);

	hms(shk_object_get(p, "since_ns"), when, sizeof(when));
	printf("%-6s %-18s %-8lld %s  %-14s %-22s %.12s  %s\n", str(p, "id", "?"), SAFE(sess, session),
	       (long long)shk_val_int(shk_object_get(p, "pid")), when, str(p, "tool", "?"),
	       str(p, "reason", "?"), digest, what ? what : "(out of memory)");
	free(what);
}

static int cmd_pending(const struct opts *o)
{
	struct target t[MAX_SESSIONS];
	shk_doc *d = NULL;
	shk_val *all, *req;
	size_t n, shown = 0;
	int r, failed = 0;

	if ((r = find_sessions(o, t, MAX_SESSIONS, &n)) < 0)
		return 1;
	if (n == 0 && o->session) {
		char where[320];

		shk_cli_error(o->cmd, "no running shackle-run session %s found in %s", o->session,
		              looked_in(where, sizeof(where)));
		return 1;
	}
	if ((r = shk_doc_new(&d)) < 0 || !(all = shk_array(d)) || !(req = shk_object(d)) ||
	    shk_object_set_str(req, "cmd", shk_cstring(d, "list")) < 0) {
		shk_doc_free(d);
		shk_cli_error(o->cmd, "out of memory");
		return 1;
	}
	if (!o->json && n > 0)
		printf("%-6s %-18s %-8s %-8s  %-14s %-22s %-12s  %s\n", "ID", "SESSION", "PID", "SINCE", "TOOL",
		       "REASON", "DIGEST", "CALL");
	for (size_t i = 0; i < n; i++) {
		struct shk_control_client cl;
		const shk_val *list;
		shk_val *resp;

		if (call(o, &t[i], req, d, &cl, &resp) < 0) {
			failed++;
			continue;
		}
		shk_control_disconnect(&cl);
		list = shk_object_get(resp, "pending");
		for (size_t k = 0; k < shk_val_len(list); k++, shown++) {
			const shk_val *p = shk_array_at(list, k);
			shk_val *copy = shk_val_copy(d, p);
			if (copy && !shk_object_get(copy, "session"))
				shk_object_set_str(copy, "session", shk_cstring(d, t[i].session));
			if (copy)
				shk_array_append(all, copy);
			if (!o->json)
				print_pending_row(t[i].session, p);
		}
	}
	if (o->json)
		print_json(all);
	else if (n == 0)
		printf("no running shackle-run session\n");
	else if (shown == 0 && !failed)
		printf("(no calls are waiting)\n");
	shk_doc_free(d);
	return failed ? 1 : 0;
}

/* What the session says of the call after a decision that did what was
 * asked (hitl.c: released, denied, held). */
static const char *wanted_state(const char *cmd)
{
	return !strcmp(cmd, "approve") || !strcmp(cmd, "modify") ? "released" : !strcmp(cmd, "reject") ? "denied"
	                                                                                                 : "held";
}

/* The session's answer, as a person or (--json) a program reads it. 0: it
 * did what was asked; 1: answered otherwise (an approval decide() denied,
 * a second resume without effect). */
static int report(const struct opts *o, const struct target *t, shk_doc *d, shk_val *resp)
{
	const char *state = shk_val_str(shk_object_get(resp, "state"), NULL);
	char idb[96];
	bool done = !o->id || (state && !strcmp(state, wanted_state(o->cmd)));

	if (o->json) {
		if (!shk_object_get(resp, "session"))
			shk_object_set_str(resp, "session", shk_cstring(d, t->session));
		print_json(resp);
	} else if (o->id) {
		printf("%s %s (session %s): %s %s%s%s\n", o->cmd, SAFE(idb, o->id), t->session, str(resp, "verdict", ""),
		       str(resp, "reason", ""), state ? ", now " : "", str(resp, "state", ""));
	} else {
		printf("breaker of session %s: %s\n", t->session, str(resp, "state", "reset"));
	}
	if (!done)
		shk_cli_error(o->cmd, "call %s is %s, not %s (%s)", SAFE(idb, o->id), str(resp, "state", "?"),
		              wanted_state(o->cmd), str(resp, "reason", "?"));
	return done ? 0 : 1;
}

static int cmd_decide(const struct opts *o)
{
	struct shk_control_client cl;
	struct target t;
	shk_doc *d = NULL;
	shk_val *req, *resp = NULL;
	int r;

	if (one_session(o, &t, false) < 0)
		return 1;
	if ((r = shk_doc_new(&d)) < 0 || !(req = shk_object(d))) {
		shk_doc_free(d);
		return 1;
	}
	shk_object_set_str(req, "cmd", shk_cstring(d, o->cmd));
	if (o->id)
		shk_object_set_str(req, "id", shk_cstring(d, o->id));
	if (o->as)
		shk_object_set_str(req, "operator", shk_cstring(d, o->as));
	if (o->digest)
		shk_object_set_str(req, "digest", shk_cstring(d, o->digest));
	if (o->connect)
		shk_object_set_str(req, "connect", shk_cstring(d, o->connect));
	r = call(o, &t, req, d, &cl, &resp);
	if (r == 0) {
		shk_control_disconnect(&cl);
		r = report(o, &t, d, resp);
	} else if (o->json && resp) {
		/* a refusal the session worded: for a program too */
		shk_object_set_str(resp, "session", shk_cstring(d, t.session));
		print_json(resp);
	}
	shk_doc_free(d);
	return r == 0 ? 0 : 1;
}

/* One event, as a person reads it. */
static void print_event(const shk_val *e)
{
	const char *kind = str(e, "event", "?");
	char when[16], tool[96], op[96];
	char *what = shk_cli_summary(shk_object_get(e, "params"), SUMMARY_MAX);

	hms(shk_object_get(e, "time_ns"), when, sizeof(when));
	/* str() has escaped them: copied, not escaped twice; an event without
	 * an operator (null) shows none */
	snprintf(tool, sizeof(tool), "%s", str(e, "tool", "?"));
	snprintf(op, sizeof(op), "%s", str(e, "operator", ""));
	if (!strcmp(kind, "pending"))
		printf("%s  WAIT   id %s pid %lld %s %s (%s) -> shackle approve %s\n", when, str(e, "id", "?"),
		       (long long)shk_val_int(shk_object_get(e, "pid")), tool, what ? what : "?",
		       str(e, "reason", "?"), str(e, "id", "?"));
	else if (!strcmp(kind, "resolved"))
		printf("%s  %-6s id %s by %s: %s %s\n", when, str(e, "state", "?"), str(e, "id", "?"),
		       op[0] ? op : "nobody", str(e, "verdict", ""), str(e, "reason", ""));
	else if (!strcmp(kind, "decision"))
		printf("%s  %-6s pid %lld %s %s (%s)%s%s\n", when, str(e, "verdict", "?"),
		       (long long)shk_val_int(shk_object_get(e, "pid")), tool, what ? what : "?",
		       str(e, "reason", "?"), op[0] ? " by " : "", op);
	else if (!strcmp(kind, "breaker"))
		printf("%s  BREAKER %s (%s)%s%s\n", when, str(e, "state", "?"), str(e, "reason", ""),
		       op[0] ? " by " : "", op);
	else
		printf("%s  %s\n", when, kind);
	free(what);
	fflush(stdout);
}

/* The session to watch; with --wait, until one runs (the agent may not
 * have been started yet). */
static int wait_session(const struct opts *o, struct target *t)
{
	char where[320];
	bool said = false;
	int r;

	while ((r = one_session(o, t, o->wait)) == -ENOENT && o->wait) {
		if (!said)
			fprintf(stderr, "shackle watch: waiting for a shackle-run session%s%s in %s (Ctrl-C to stop)\n",
			        o->session ? " " : "", o->session ? o->session : "", looked_in(where, sizeof(where)));
		said = true;
		nanosleep(&(struct timespec){ .tv_nsec = 200 * 1000 * 1000 }, NULL);
	}
	return r;
}

static int cmd_watch(const struct opts *o)
{
	struct shk_control_client cl;
	struct target t;
	shk_doc *d = NULL;
	shk_val *req, *resp;
	int r;

	if ((r = wait_session(o, &t)) < 0)
		return 1;
	if (shk_doc_new(&d) < 0 || !(req = shk_object(d)) ||
	    shk_object_set_str(req, "cmd", shk_cstring(d, "watch")) < 0 || call(o, &t, req, d, &cl, &resp) < 0) {
		shk_doc_free(d);
		return 1;
	}
	if (!o->json)
		printf("watching session %s (Ctrl-C to stop)\n", t.session);
	/* what waits already (the answer to watch lists it), then the events */
	for (size_t i = 0; i < shk_val_len(shk_object_get(resp, "pending")); i++) {
		const shk_val *p = shk_array_at(shk_object_get(resp, "pending"), i);
		o->json ? print_json(p) : print_event(p);
	}
	fflush(stdout);
	for (bool ended = false; !ended;) {
		shk_doc *ed = NULL;
		shk_val *e;

		if (shk_doc_new(&ed) < 0) {
			r = -ENOMEM;
			break;
		}
		r = shk_control_recv(&cl, ed, -1, &e);
		ended = r == 0 && shk_val_str_eq(shk_object_get(e, "event"), "session_end");
		if (r == 0 && (o->json || !ended))
			o->json ? print_json(e) : print_event(e);
		shk_doc_free(ed);
		if (r < 0)
			break;
	}
	shk_control_disconnect(&cl);
	shk_doc_free(d);
	if (r == 0) {
		if (!o->json)
			printf("session %s ended\n", t.session);
		return 0;
	}
	/* the end of the stream without "session_end": this watcher was
	 * dropped (it fell 4 MiB behind) or shackle-run died */
	if (r == -ECONNRESET)
		shk_cli_error(o->cmd, "session %s: the connection was lost before the session "
		              "ended (this watcher fell behind and was dropped, or shackle-run "
		              "died): events may be missing", t.session);
	else
		shk_cli_error(o->cmd, "session %s: %s", t.session, strerror(-r));
	return 1;
}

static int run(int argc, char **argv)
{
	struct opts o = { .cmd = argv[0] };

	if (parse(argc, argv, &o) < 0)
		return 2;
	if (!strcmp(o.cmd, "pending"))
		return cmd_pending(&o);
	if (!strcmp(o.cmd, "watch"))
		return cmd_watch(&o);
	return cmd_decide(&o);
}

int shk_cmd_pending(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_approve(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_reject(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_defer(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_escalate(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_modify(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_reset(int argc, char **argv) { return run(argc, argv); }
int shk_cmd_watch(int argc, char **argv) { return run(argc, argv); }
