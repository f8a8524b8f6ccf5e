/* SPDX-License-Identifier: MIT */
/*
 * The operator channel against a fake supervisor: the server runs in a thread
 * that drives shk_control_handle() from poll(), the client side is the one
 * `shackle` uses. Socket mode, peer checks, every command, malformed requests,
 * watch streams, a watcher that does not read, stale sockets, and the
 * "is this a control socket?" question the seccomp interception asks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include <shackle/canon.h>

#include "judge/control.h"
#include "testutil.h"
#include "checkrun.h"

static char base[64], dir[128];
static struct shk_control *ctl;
static pthread_t server;
static int stop_pipe[2];

/* what the fake supervisor saw */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int calls, resets;
	shk_control_action action;
	uint64_t id;
	char op[80], digest[80], connect[80];
	int family;
	uint16_t port;
	uid_t uid;
} seen;

static int fake_list(void *ctx, shk_doc *d, shk_val **ret)
{
	shk_val *a = shk_array(d), *o = shk_object(d);

	(void)ctx;
	shk_object_set_str(o, "id", shk_cstring(d, "5"));
	shk_object_set_str(o, "tool", shk_cstring(d, "exec:git"));
	shk_array_append(a, o);
	*ret = a;
	return 0;
}

static int fake_resolve(void *ctx, const struct shk_control_request *r, struct shk_control_reply *ret)
{
	(void)ctx;
	pthread_mutex_lock(&seen_lock);
	seen.calls++;
	seen.action = r->action;
	seen.id = r->id;
	seen.uid = r->peer.uid;
	snprintf(seen.op, sizeof(seen.op), "%s", r->operator_id);
	snprintf(seen.digest, sizeof(seen.digest), "%s", r->digest ? r->digest : "");
	snprintf(seen.connect, sizeof(seen.connect), "%s", r->connect ? r->connect : "");
	seen.family = r->addr.ss_family;
	seen.port = r->addr.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&r->addr)->sin_port) : 0;
	pthread_mutex_unlock(&seen_lock);
	if (r->id != 5) {
		snprintf(ret->error, sizeof(ret->error), "no pending call %llu", (unsigned long long)r->id);
		return 0;
	}
	ret->ok = true;
	ret->has_verdict = true;
	ret->verdict = r->action == SHK_CTL_APPROVE ? SHK_ALLOW : r->action == SHK_CTL_REJECT ? SHK_DENY : SHK_HITL;
	ret->reason = r->action == SHK_CTL_APPROVE ? SHK_R_HT_APPROVE : SHK_R_HT_REJECT;
	snprintf(ret->state, sizeof(ret->state), "%s", shk_control_action_name(r->action));
	return 0;
}

static int fake_reset(void *ctx, const char *op, const struct shk_control_peer *peer, struct shk_control_reply *ret)
{
	(void)ctx;
	(void)peer;
	pthread_mutex_lock(&seen_lock);
	seen.resets++;
	snprintf(seen.op, sizeof(seen.op), "%s", op);
	pthread_mutex_unlock(&seen_lock);
	ret->ok = true;
	snprintf(ret->state, sizeof(ret->state), "closed");
	return 0;
}

static const struct shk_control_ops ops = { fake_list, fake_resolve, fake_reset };

static void *serve(void *arg)
{
	struct pollfd p[2] = { { .fd = shk_control_fd(ctl), .events = POLLIN },
	                       { .fd = stop_pipe[0], .events = POLLIN } };

	(void)arg;
	while (poll(p, 2, -1) >= 0 && !(p[1].revents & POLLIN))
		if (p[0].revents & POLLIN)
			ck_assert_int_eq(shk_control_handle(ctl), 0);
	return NULL;
}

static void start(const struct shk_control_options *o)
{
	ck_assert_int_eq(shk_control_open(o, &ops, NULL, &ctl), 0);
	ck_assert_int_eq(pipe(stop_pipe), 0);
	ck_assert_int_eq(pthread_create(&server, NULL, serve, NULL), 0);
}

static void stop(void)
{
	ck_assert_int_eq(write(stop_pipe[1], "x", 1), 1);
	pthread_join(server, NULL);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	shk_control_close(ctl);
	ctl = NULL;
}

static void setup(void)
{
	snprintf(base, sizeof(base), "/tmp/shk-ctl-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	snprintf(dir, sizeof(dir), "%s/run", base);
	setenv("SHACKLE_CONTROL_DIR", dir, 1);
	memset(&seen, 0, sizeof(seen));
	{
		struct shk_control_options o = { .session_id = "t1" };
		start(&o);
	}
}

static void teardown(void)
{
	char cmd[256];

	if (ctl)
		stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	ck_assert_int_eq(system(cmd), 0);
}

/* One request, one response; the response's "ok" must be want_ok. */
static const shk_val *ask(shk_doc *d, const char *req_json, bool want_ok)
{
	struct shk_control_client cl;
	shk_parse_error pe;
	shk_val *req = NULL, *resp = NULL;
	int r;

	ck_assert_int_eq(shk_json_parse(d, req_json, strlen(req_json), "req", &req, &pe), 0);
	ck_assert_int_eq(shk_control_connect(shk_control_socket_path(ctl), &cl), 0);
	/* a refused peer may find the connection closed before it writes;
	 * the answer is still there to read */
	r = shk_control_send(&cl, req);
	ck_assert(r == 0 || r == -EPIPE || r == -ECONNRESET);
	r = shk_control_recv(&cl, d, 5000, &resp);
	ck_assert_msg(r == 0, "%s: no answer (%s)", req_json, strerror(-r));
	shk_control_disconnect(&cl);
	ck_assert_msg(shk_val_bool(shk_object_get(resp, "ok")) == want_ok, "%s -> ok=%d (%s)", req_json,
	              shk_val_bool(shk_object_get(resp, "ok")),
	              shk_val_str(shk_object_get(resp, "error"), NULL) ?: "");
	return resp;
}

static const char *str(const shk_val *o, const char *k)
{
	const char *s = shk_val_str(shk_object_get(o, k), NULL);
	return s ? s : "(none)";
}

START_TEST(socket_is_private)
{
	struct stat st;
	char want[256];

	ck_assert_int_eq(shk_control_path("t1", want, sizeof(want)), 0);
	ck_assert_str_eq(shk_control_socket_path(ctl), want);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(stat(want, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(shk_control_path("../x", want, sizeof(want)), -EINVAL);
	ck_assert_int_eq(shk_control_path("", want, sizeof(want)), -EINVAL);
}
END_TEST

START_TEST(commands)
{
	shk_doc *d;
	const shk_val *r;

	ck_assert_int_eq(shk_doc_new(&d), 0);
	r = ask(d, "{\"cmd\":\"hello\"}", true);
	ck_assert_str_eq(str(r, "session"), "t1");
	r = ask(d, "{\"cmd\":\"list\"}", true);
	ck_assert_str_eq(str(shk_array_at(shk_object_get(r, "pending"), 0), "tool"), "exec:git");
	r = ask(d, "{\"cmd\":\"approve\",\"id\":\"5\",\"operator\":\"alice\",\"digest\":\"ab\"}", true);
	ck_assert_str_eq(str(r, "verdict"), "ALLOW");
	ck_assert_str_eq(str(r, "reason"), "hitl_transition:approve");
	ck_assert_str_eq(str(r, "id"), "5");
	ck_assert_int_eq(seen.action, SHK_CTL_APPROVE);
	ck_assert_str_eq(seen.op, "alice");
	ck_assert_str_eq(seen.digest, "ab");
	ck_assert_uint_eq(seen.uid, geteuid());
	/* without --as, the peer's login name */
	ask(d, "{\"cmd\":\"reject\",\"id\":5}", true);
	ck_assert_int_eq(seen.action, SHK_CTL_REJECT);
	ck_assert_str_ne(seen.op, "alice");
	ck_assert_int_gt(strlen(seen.op), 0);
	ask(d, "{\"cmd\":\"defer\",\"id\":\"5\"}", true);
	ck_assert_int_eq(seen.action, SHK_CTL_DEFER);
	ask(d, "{\"cmd\":\"escalate\",\"id\":\"5\"}", true);
	ck_assert_int_eq(seen.action, SHK_CTL_ESCALATE);
	r = ask(d, "{\"cmd\":\"modify\",\"id\":\"5\",\"connect\":\"127.0.0.1:8080\"}", true);
	ck_assert_int_eq(seen.action, SHK_CTL_MODIFY);
	ck_assert_int_eq(seen.family, AF_INET);
	ck_assert_int_eq(seen.port, 8080);
	ck_assert_str_eq(seen.connect, "127.0.0.1:8080");
	/* the supervisor's refusal reaches the operator as it was worded */
	r = ask(d, "{\"cmd\":\"approve\",\"id\":\"6\"}", false);
	ck_assert_str_eq(str(r, "error"), "no pending call 6");
	ask(d, "{\"cmd\":\"reset\",\"operator\":\"bob\"}", true);
	ck_assert_int_eq(seen.resets, 1);
	ck_assert_str_eq(seen.op, "bob");
	ck_assert_int_eq(seen.calls, 6);
	shk_doc_free(d);
}
END_TEST

START_TEST(malformed_requests)
{
	static const char *bad[] = {
		"[1]", "{\"cmd\":1}", "{\"cmd\":\"launch\"}", "{\"cmd\":\"approve\"}",
		"{\"cmd\":\"approve\",\"id\":\"0\"}", "{\"cmd\":\"approve\",\"id\":\"5x\"}",
		"{\"cmd\":\"approve\",\"id\":-5}", "{\"cmd\":\"approve\",\"id\":\"5\",\"operator\":\"a b\"}",
		"{\"cmd\":\"approve\",\"id\":\"5\",\"operator\":\"\"}", "{\"cmd\":\"approve\",\"id\":\"5\",\"digest\":1}",
		"{\"cmd\":\"approve\",\"id\":\"5\",\"connect\":\"1.2.3.4:5\"}", "{\"cmd\":\"modify\",\"id\":\"5\"}",
		"{\"cmd\":\"modify\",\"id\":\"5\",\"connect\":\"example.org:80\"}",
		"{\"cmd\":\"modify\",\"id\":\"5\",\"connect\":\"1.2.3.4:70000\"}", "{\"cmd\":\"reset\",\"operator\":7}",
		("{\"cmd\":\"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
		"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9x\"}"),
		"{\"cmd\":\"approve\",\"id\":\"5\",\"operator\":\"\u00e9\"}", "17", "null",
	};
	shk_doc *d;

	ck_assert_int_eq(shk_doc_new(&d), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const shk_val *r = ask(d, bad[i], false);
		ck_assert_int_gt(strlen(str(r, "error")), 5);
	}
	ck_assert_int_eq(seen.calls, 0);
	ck_assert_int_eq(seen.resets, 0);
	shk_doc_free(d);
}
END_TEST

START_TEST(not_json_and_too_long)
{
	struct shk_control_client cl;
	shk_doc *d;
	shk_val *resp;
	char *big;

	ck_assert_int_eq(shk_doc_new(&d), 0);
	ck_assert_int_eq(shk_control_connect(shk_control_socket_path(ctl), &cl), 0);
	ck_assert_int_eq(write(cl.fd, "{nope\n", 6), 6);
	ck_assert_int_eq(shk_control_recv(&cl, d, 5000, &resp), 0);
	ck_assert(!shk_val_bool(shk_object_get(resp, "ok")));
	ck_assert_ptr_nonnull(strstr(str(resp, "error"), "not a JSON object"));
	/* the connection survives a bad line */
	ck_assert_int_eq(write(cl.fd, "{\"cmd\":\"hello\"}\n", 16), 16);
	ck_assert_int_eq(shk_control_recv(&cl, d, 5000, &resp), 0);
	ck_assert(shk_val_bool(shk_object_get(resp, "ok")));
	/* a line without end is refused and the connection closed */
	big = malloc(SHK_CONTROL_MAX_LINE + 10);
	memset(big, 'x', SHK_CONTROL_MAX_LINE + 10);
	ck_assert_int_eq(write(cl.fd, big, SHK_CONTROL_MAX_LINE + 10), SHK_CONTROL_MAX_LINE + 10);
	free(big);
	ck_assert_int_eq(shk_control_recv(&cl, d, 5000, &resp), 0);
	ck_assert_str_eq(str(resp, "error"), "request line too long");
	ck_assert_int_eq(shk_control_recv(&cl, d, 5000, &resp), -ECONNRESET);
	shk_control_disconnect(&cl);
	shk_doc_free(d);
}
END_TEST

START_TEST(watch_stream_and_slow_watcher)
{
	shk_doc *d;
	shk_val *ev, *got;
	char *fat;
	int i;

	/* broadcast is called from the loop thread in shackle-run: drive the
	 * server from this thread only */
	stop();
	ck_assert_int_eq(shk_doc_new(&d), 0);
	{
		struct shk_control_options o = { .session_id = "t2" };
		struct shk_control_client c1, c2;
		shk_val *req = NULL;
		shk_parse_error pe;

		ck_assert_int_eq(shk_control_open(&o, &ops, NULL, &ctl), 0);
		ck_assert_int_eq(shk_json_parse(d, "{\"cmd\":\"watch\"}", 15, "req", &req, &pe), 0);
		ck_assert_int_eq(shk_control_connect(shk_control_socket_path(ctl), &c1), 0);
		ck_assert_int_eq(shk_control_connect(shk_control_socket_path(ctl), &c2), 0);
		ck_assert_int_eq(shk_control_send(&c1, req), 0);
		ck_assert_int_eq(shk_control_send(&c2, req), 0);
		for (i = 0; i < 50 && shk_control_watchers(ctl) < 2; i++) {
			poll(&(struct pollfd){ .fd = shk_control_fd(ctl), .events = POLLIN }, 1, 100);
			ck_assert_int_eq(shk_control_handle(ctl), 0);
		}
		ck_assert_uint_eq(shk_control_watchers(ctl), 2);
		ck_assert_int_eq(shk_control_recv(&c1, d, 5000, &got), 0);
		/* the answer lists what already waits, then the events follow */
		ck_assert(shk_val_bool(shk_object_get(got, "watching")));
		ck_assert_uint_eq(shk_val_len(shk_object_get(got, "pending")), 1);
		ck_assert_str_eq(str(shk_array_at(shk_object_get(got, "pending"), 0), "id"), "5");
		ev = shk_object(d);
		shk_object_set_str(ev, "event", shk_cstring(d, "pending"));
		shk_object_set_str(ev, "id", shk_cstring(d, "9"));
		shk_control_broadcast(ctl, ev);
		ck_assert_int_eq(shk_control_recv(&c1, d, 5000, &got), 0);
		ck_assert_str_eq(str(got, "event"), "pending");
		ck_assert_str_eq(str(got, "id"), "9");
		/* c2 never reads: after 4 MiB it is dropped, c1 keeps going */
		fat = malloc(60000);
		memset(fat, 'y', 59999);
		fat[59999] = 0;
		shk_object_set_str(ev, "pad", shk_cstring(d, fat));
		free(fat);
		for (i = 0; i < 200 && shk_control_watchers(ctl) == 2; i++) {
			shk_control_broadcast(ctl, ev);
			ck_assert_int_eq(shk_control_recv(&c1, d, 5000, &got), 0);
		}
		ck_assert_uint_eq(shk_control_watchers(ctl), 1);
		shk_control_disconnect(&c1);
		shk_control_disconnect(&c2);
		shk_control_close(ctl);
		ctl = NULL;
	}
	shk_doc_free(d);
}
END_TEST

/* A peer that belongs to the agent is refused with a reason. */
static void expect_refused(const char *why_part)
{
	shk_doc *d;
	const shk_val *r;

	ck_assert_int_eq(shk_doc_new(&d), 0);
	r = ask(d, "{\"cmd\":\"approve\",\"id\":\"5\"}", false);
	ck_assert_msg(strstr(str(r, "error"), why_part), "error: %s", str(r, "error"));
	ck_assert_int_eq(seen.calls, 0);
	shk_doc_free(d);
}

START_TEST(agent_peers_refused)
{
	char line[4096], cg[4200];
	FILE *f;

	/* this process plays the agent: its tree is refused */
	shk_control_set_agent(ctl, getpid(), NULL);
	expect_refused("process tree");
	/* a process of the agent's cgroup */
	f = fopen("/proc/self/cgroup", "r");
	ck_assert_ptr_nonnull(f);
	cg[0] = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(cg, sizeof(cg), "/sys/fs/cgroup%s", strcmp(line + 3, "/") ? line + 3 : "");
		}
	fclose(f);
	if (cg[0]) {
		shk_control_set_agent(ctl, 0, cg);
		expect_refused("cgroup");
	}
	/* not the agent any more: accepted */
	shk_control_set_agent(ctl, 1 << 30, "/sys/fs/cgroup/no-such-agent");
	{
		shk_doc *d;
		ck_assert_int_eq(shk_doc_new(&d), 0);
		ask(d, "{\"cmd\":\"approve\",\"id\":\"5\"}", true);
		shk_doc_free(d);
	}
}
END_TEST

START_TEST(other_user_cannot_connect)
{
	pid_t pid;
	int st;

	if (geteuid() != 0)
		return; /* needs a second uid; the mode check in socket_is_private still runs */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct shk_control_client cl;
		int r;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		r = shk_control_connect(shk_control_socket_path(ctl), &cl);
		_exit(r == -EACCES ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

START_TEST(refuses_control_destinations)
{
	char other[256], hard[256], sock_dir[256];
	int fd;

	ck_assert(shk_control_refuses(ctl, shk_control_socket_path(ctl), -1));
	ck_assert(shk_control_refuses(NULL, "/run/shackle/x.sock", -1));
	ck_assert(shk_control_refuses(NULL, "/run/shackle", -1));
	ck_assert(!shk_control_refuses(NULL, "/run/shackle2/x.sock", -1));
	snprintf(sock_dir, sizeof(sock_dir), "%s/other.sock", dir);
	ck_assert(shk_control_refuses(NULL, sock_dir, -1)); /* any session's socket */
	snprintf(other, sizeof(other), "%s/unrelated.sock", base);
	ck_assert(!shk_control_refuses(ctl, other, -1));
	/* a hard link to our socket elsewhere is still ours */
	snprintf(hard, sizeof(hard), "%s/alias.sock", base);
	ck_assert_int_eq(link(shk_control_socket_path(ctl), hard), 0);
	ck_assert(shk_control_refuses(ctl, hard, -1));
	fd = open(hard, O_PATH);
	ck_assert_int_ge(fd, 0);
	ck_assert(shk_control_refuses(ctl, "/somewhere/else", fd));
	close(fd);
}
END_TEST

START_TEST(stale_and_live_sockets)
{
	struct shk_control_options o = { .session_id = "t1" };
	struct shk_control *second = NULL;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char path[256];
	int fd;

	/* a live session's socket is never taken over */
	ck_assert_int_eq(shk_control_open(&o, &ops, NULL, &second), -EADDRINUSE);
	ck_assert_ptr_null(second);
	/* a socket file left by a dead session is replaced */
	ck_assert_int_eq(shk_control_path("dead", path, sizeof(path)), 0);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memcpy(a.sun_path, path, strlen(path));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	o.session_id = "dead";
	ck_assert_int_eq(shk_control_open(&o, &ops, NULL, &second), 0);
	shk_control_close(second);
	ck_assert_int_eq(access(path, F_OK), -1);
	/* a directory others may enter is refused */
	ck_assert_int_eq(chmod(dir, 0755), 0);
	o.session_id = "t3";
	ck_assert_int_eq(shk_control_open(&o, &ops, NULL, &second), -EPERM);
	ck_assert_int_eq(chmod(dir, 0700), 0);
}
END_TEST

START_TEST(parse_dest)
{
	struct sockaddr_storage ss;
	socklen_t len;

	ck_assert_int_eq(shk_control_parse_dest("10.1.2.3:443", &ss, &len), 0);
	ck_assert_int_eq(ss.ss_family, AF_INET);
	ck_assert_int_eq(ntohs(((struct sockaddr_in *)&ss)->sin_port), 443);
	ck_assert_int_eq(shk_control_parse_dest("[::1]:5432", &ss, &len), 0);
	ck_assert_int_eq(ss.ss_family, AF_INET6);
	ck_assert_int_eq(len, sizeof(struct sockaddr_in6));
	ck_assert_int_eq(shk_control_parse_dest("::1:5432", &ss, &len), -EINVAL);
	ck_assert_int_eq(shk_control_parse_dest("10.1.2.3", &ss, &len), -EINVAL);
	ck_assert_int_eq(shk_control_parse_dest("10.1.2.3:0", &ss, &len), -EINVAL);
	ck_assert_int_eq(shk_control_parse_dest("10.1.2.3:+80", &ss, &len), -EINVAL);
	ck_assert_int_eq(shk_control_parse_dest("host:80", &ss, &len), -EINVAL);
	ck_assert_int_eq(shk_control_parse_dest("[10.1.2.3]:80", &ss, &len), -EINVAL);
	ck_assert_int_eq(shk_control_parse_dest(":80", &ss, &len), -EINVAL);
}
END_TEST

/* A uid without a passwd entry still gets a name a decision accepts. */
START_TEST(peer_name_without_passwd_entry)
{
	char name[64], want[32];
	uid_t uid = 54321;

	while (getpwuid(uid))
		uid++;
	shk_control_peer_name(uid, name, sizeof(name));
	snprintf(want, sizeof(want), "uid-%u", (unsigned)uid);
	ck_assert_str_eq(name, want);
	ck_assert_ptr_null(strchr(name, ' '));
	shk_control_peer_name(0, name, sizeof(name));
	ck_assert_str_eq(name, getpwuid(0)->pw_name);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("server");

	signal(SIGPIPE, SIG_IGN);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, socket_is_private);
	tcase_add_test(tc, commands);
	tcase_add_test(tc, malformed_requests);
	tcase_add_test(tc, not_json_and_too_long);
	tcase_add_test(tc, watch_stream_and_slow_watcher);
	tcase_add_test(tc, agent_peers_refused);
	tcase_add_test(tc, other_user_cannot_connect);
	tcase_add_test(tc, refuses_control_destinations);
	tcase_add_test(tc, stale_and_live_sockets);
	tcase_add_test(tc, parse_dest);
	tcase_add_test(tc, peer_name_without_passwd_entry);
	suite_add_tcase(s, tc);
	return shk_test_run(s);
}
