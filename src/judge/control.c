/* SPDX-License-Identifier: MIT */
/*
 * The operator channel's server: a listening Unix socket, peers checked at
 * accept (uid, and never a process of the agent), JSON-lines requests turned
 * into calls of the supervisor's callbacks, and a stream of events for watch
 * clients. Everything is non-blocking and driven by one internal epoll fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include <shackle/canon.h>

#include "judge/control.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

struct client {
	int fd;
	char *in;
	size_t inlen, incap;
	char *out;
	size_t outlen, outcap;
	bool watch, closing, want_out;
	struct shk_control_peer peer;
};

struct shk_control {
	int lfd, efd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char session[65];
	dev_t dev;
	ino_t ino;
	pid_t supervisor_pid, agent_pid;
	char agent_cgroup[4096];
	char cgroup_mount[4096];     /* the cgroup2 mount agent_cgroup lies in */
	const struct shk_control_ops *ops;
	void *ctx;
	shk_doc *info_doc;
	const shk_val *info;
	struct client *clients[SHK_CONTROL_MAX_CLIENTS];
};

static const char *const action_names[] = {
	[SHK_CTL_APPROVE] = "approve", [SHK_CTL_REJECT] = "reject", [SHK_CTL_DEFER] = "defer",
	[SHK_CTL_ESCALATE] = "escalate", [SHK_CTL_MODIFY] = "modify",
};

const char *shk_control_action_name(shk_control_action a)
{
	return a >= SHK_CTL_APPROVE && a <= SHK_CTL_MODIFY ? action_names[a] : "?";
}

/* ---- who is calling ------------------------------------------------------------ */

/* The parent of pid from /proc/PID/stat (after the last ')'), or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (!(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

/* Does pid descend from a or b (pid itself included)? Unknown counts as yes. */
static bool descends(pid_t pid, pid_t a, pid_t b)
{
	for (int depth = 0; depth < 4096 && pid > 1; depth++) {
		if ((a > 0 && pid == a) || (b > 0 && pid == b))
			return true;
		pid = parent_of(pid);
	}
	return pid < 0;
}

/* The cgroup2 mount a directory lies in: its topmost cgroup2 ancestor. Not
 * always /sys/fs/cgroup (/sys/fs/cgroup/unified on a hybrid layout), and
 * /proc/PID/cgroup paths are relative to it. */
static void cgroup_mount_of(const char *dir, char *buf, size_t len)
{
	struct statfs sfs;
	char *slash;

	snprintf(buf, len, "%s", dir);
	if (statfs(buf, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC) {
		snprintf(buf, len, "/sys/fs/cgroup");
		return;
	}
	while ((slash = strrchr(buf, '/')) && slash != buf) {
		*slash = 0;
		if (statfs(buf, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC) {
			*slash = '/';
			return;
		}
	}
}

/* Is pid inside the cgroup v2 directory cg (or below it)? Unknown: yes. */
static bool in_cgroup(pid_t pid, const char *cg, const char *mount)
{
	char path[64], line[4096], full[8192 + 32];
	bool inside = true;
	size_t n = strlen(cg);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (!(f = fopen(path, "re")))
		return true;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3))
			continue;
		line[strcspn(line, "\n")] = 0;
		snprintf(full, sizeof(full), "%s%s", mount, strcmp(line + 3, "/") ? line + 3 : "");
		inside = !strncmp(full, cg, n) && (full[n] == 0 || full[n] == '/');
		break;
	}
	fclose(f);
	return inside;
}

void shk_control_peer_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *pwp = NULL;
	char pwbuf[1024];

	/* without a passwd entry: a name the operator grammar accepts (no
	 * space), so that a decision without --as is not refused */
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp)
		snprintf(buf, len, "%s", pw.pw_name);
	else
		snprintf(buf, len, "uid-%u", (unsigned)uid);
}

/* Why this peer may not talk to us, or NULL. */
static const char *refuse_peer(struct shk_control *c, int fd, struct shk_control_peer *peer)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	const char *why = NULL;
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return "cannot read the peer's credentials";
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0)
		pidfd = -1; /* before 6.5: the pid alone */
	peer->uid = cr.uid;
	peer->pid = cr.pid;
	shk_control_peer_name(cr.uid, peer->user, sizeof(peer->user));
	if (cr.uid != 0 && cr.uid != geteuid())
		why = "the peer runs as another user";
	else if (cr.pid <= 0)
		why = "the peer process cannot be identified (another pid namespace)";
	else if (c->agent_cgroup[0] && in_cgroup(cr.pid, c->agent_cgroup, c->cgroup_mount))
		why = "the peer is a process of the supervised agent (its cgroup)";
	else if (descends(cr.pid, c->agent_pid, c->supervisor_pid) && cr.pid != c->supervisor_pid)
		why = "the peer is a process of the supervised agent (its process tree)";
	/* The checks read /proc by pid: make sure it was still the peer then.
	 * EPERM says it is alive: a root operator of a session run by another
	 * user may not be signalled by it (only ESRCH means gone). */
	else if (pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0 && errno != EPERM)
		why = "the peer exited while it was being checked";
	if (pidfd >= 0)
		close(pidfd);
	return why;
}

/* ---- clients ------------------------------------------------------------------- */

static void drop(struct shk_control *c, size_t i)
{
	struct client *cl = c->clients[i];

	if (!cl)
		return;
	epoll_ctl(c->efd, EPOLL_CTL_DEL, cl->fd, NULL);
	close(cl->fd);
	free(cl->in);
	free(cl->out);
	free(cl);
	c->clients[i] = NULL;
}

static size_t index_of(struct shk_control *c, struct client *cl)
{
	for (size_t i = 0; i < SHK_CONTROL_MAX_CLIENTS; i++)
		if (c->clients[i] == cl)
			return i;
	return SHK_CONTROL_MAX_CLIENTS;
}

static void want_out(struct shk_control *c, struct client *cl, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = cl };

	if (cl->want_out != on && epoll_ctl(c->efd, EPOLL_CTL_MOD, cl->fd, &ev) == 0)
		cl->want_out = on;
}

/* Write what is buffered; false when the client is gone. */
static bool flush(struct shk_control *c, struct client *cl)
{
	while (cl->outlen > 0) {
		ssize_t n = send(cl->fd, cl->out, cl->outlen, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			want_out(c, cl, true);
			return true;
		}
		if (n < 0)
			return false;
		memmove(cl->out, cl->out + n, cl->outlen - (size_t)n);
		cl->outlen -= (size_t)n;
	}
	want_out(c, cl, false);
	return !cl->closing;
}

/* Queue one canonical JSON line (and try to send it). */
static void put(struct client *cl, const shk_val *v)
{
	char *text = NULL;
	size_t len = 0;

	if (shk_canon_dump(v, &text, &len) < 0 || cl->outlen + len + 1 > SHK_CONTROL_MAX_OUT) {
		/* a watcher that does not read is dropped, never waited for */
		free(text);
		cl->closing = true;
		cl->outlen = 0;
		return;
	}
	if (cl->outcap < cl->outlen + len + 1) {
		size_t cap = (cl->outlen + len + 1) * 2;
		char *o = realloc(cl->out, cap);
		if (!o) {
			free(text);
			cl->closing = true;
			return;
		}
		cl->out = o;
		cl->outcap = cap;
	}
	memcpy(cl->out + cl->outlen, text, len);
	cl->out[cl->outlen + len] = '\n';
	cl->outlen += len + 1;
	free(text);
}

static void put_error(struct client *cl, const char *text)
{
	char msg[320];
	shk_doc *d = NULL;
	shk_val *o;
	size_t i;

	/* echoed request bytes may be cut mid-character: ASCII only */
	for (i = 0; text[i] && i + 1 < sizeof(msg); i++)
		msg[i] = (unsigned char)text[i] < 0x20 || (unsigned char)text[i] > 0x7e ? '?' : text[i];
	msg[i] = 0;

	if (shk_doc_new(&d) < 0 || !(o = shk_object(d)) ||
	    shk_object_set_str(o, "ok", shk_bool(d, false)) < 0 ||
	    shk_object_set_str(o, "error", shk_cstring(d, msg)) < 0)
		cl->closing = true;
	else
		put(cl, o);
	shk_doc_free(d);
}

static void on_accept(struct shk_control *c)
{
	for (;;) {
		int fd = accept4(c->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN };
		struct client *cl;
		const char *why;
		size_t i;

		if (fd < 0)
			return; /* EAGAIN, or a peer that went away */
		for (i = 0; i < SHK_CONTROL_MAX_CLIENTS && c->clients[i]; i++)
			;
		cl = i < SHK_CONTROL_MAX_CLIENTS ? calloc(1, sizeof(*cl)) : NULL;
		if (!cl) {
			close(fd);
			continue;
		}
		cl->fd = fd;
		ev.data.ptr = cl;
		if (epoll_ctl(c->efd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			free(cl);
			continue;
		}
		c->clients[i] = cl;
		if ((why = refuse_peer(c, fd, &cl->peer)) != NULL) {
			char msg[160];
			snprintf(msg, sizeof(msg), "refused: %s", why);
			put_error(cl, msg);
			cl->closing = true;
			if (!flush(c, cl))
				drop(c, i);
		}
	}
}

/* ---- requests -------------------------------------------------------------------- */

static bool operator_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e)
			return false;
	return n > 0 && n <= SHK_CONTROL_OPERATOR_MAX;
}

static int get_id(const shk_val *v, uint64_t *ret)
{
	const char *s = shk_val_str(v, NULL);
	char *end;

	if (shk_val_type(v) == SHK_INT && shk_val_int(v) > 0) {
		*ret = (uint64_t)shk_val_int(v);
		return 0;
	}
	if (!s || *s < '1' || *s > '9')
		return -EINVAL;
	errno = 0;
	*ret = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static void id_str(uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long)id);
}

/* The reply of a callback as a response line. */
static void put_reply(struct client *cl, const struct shk_control_reply *rep,
                      const uint64_t *id)
{
	shk_doc *d = NULL;
	shk_val *o;
	char ids[24];

	if (!rep->ok) {
		put_error(cl, rep->error[0] ? rep->error : "refused by the supervisor");
		return;
	}
	if (shk_doc_new(&d) < 0 || !(o = shk_object(d))) {
		shk_doc_free(d);
		put_error(cl, "out of memory");
		return;
	}
	shk_object_set_str(o, "ok", shk_bool(d, true));
	if (id) {
		id_str(*id, ids, sizeof(ids));
		shk_object_set_str(o, "id", shk_cstring(d, ids));
	}
	if (rep->has_verdict) {
		shk_object_set_str(o, "verdict", shk_cstring(d, shk_verdict_str(rep->verdict)));
		shk_object_set_str(o, "reason", shk_cstring(d, shk_reason_str(rep->reason)));
	}
	if (rep->state[0])
		shk_object_set_str(o, "state", shk_cstring(d, rep->state));
	put(cl, o);
	shk_doc_free(d);
}

static void do_decision(struct shk_control *c, struct client *cl, const shk_val *req, shk_control_action a)
{
	struct shk_control_request r = { .action = a, .peer = cl->peer };
	struct shk_control_reply rep = { 0 };
	const shk_val *op = shk_object_get(req, "operator"), *dg = shk_object_get(req, "digest");
	const shk_val *to = shk_object_get(req, "connect");

	if (get_id(shk_object_get(req, "id"), &r.id) < 0)
		{ put_error(cl, "\"id\": expected the id of a pending call (a decimal number)"); return; }
	r.operator_id = op ? shk_val_str(op, NULL) : cl->peer.user;
	if (!r.operator_id || !operator_ok(r.operator_id))
		{ put_error(cl, "\"operator\": expected 1 to 64 printable ASCII characters without spaces"); return; }
	if (dg && !(r.digest = shk_val_str(dg, NULL)))
		{ put_error(cl, "\"digest\": expected a hex string"); return; }
	if (a == SHK_CTL_MODIFY) {
		r.connect = shk_val_str(to, NULL);
		if (!r.connect || shk_control_parse_dest(r.connect, &r.addr, &r.addrlen) < 0)
			{ put_error(cl, "\"connect\": expected ADDR:PORT or [IPV6]:PORT with a numeric address"); return; }
	} else if (to) {
		{ put_error(cl, "\"connect\" applies to modify only"); return; }
	}
	if (c->ops->resolve(c->ctx, &r, &rep) < 0 && rep.ok)
		rep.ok = false;
	put_reply(cl, &rep, &r.id);
}

static void do_reset(struct shk_control *c, struct client *cl, const shk_val *req)
{
	const shk_val *op = shk_object_get(req, "operator");
	const char *who = op ? shk_val_str(op, NULL) : cl->peer.user;
	struct shk_control_reply rep = { 0 };

	if (!who || !operator_ok(who))
		{ put_error(cl, "\"operator\": expected 1 to 64 printable ASCII characters without spaces"); return; }
	if (c->ops->reset(c->ctx, who, &cl->peer, &rep) < 0 && rep.ok)
		rep.ok = false;
	put_reply(cl, &rep, NULL);
}

/* hello, list and watch: answered here. */
static void do_query(struct shk_control *c, struct client *cl, const char *cmd)
{
	shk_doc *d = NULL;
	shk_val *o, *pending = NULL;
	int r = shk_doc_new(&d);

	if (r < 0 || !(o = shk_object(d))) {
		shk_doc_free(d);
		{ put_error(cl, "out of memory"); return; }
	}
	shk_object_set_str(o, "ok", shk_bool(d, true));
	shk_object_set_str(o, "session", shk_cstring(d, c->session));
	if (!strcmp(cmd, "hello")) {
		shk_object_set_str(o, "socket", shk_cstring(d, c->path));
		for (size_t i = 0; c->info && i < shk_val_len(c->info); i++)
			shk_object_set(o, shk_val_copy(d, shk_object_key_at(c->info, i)),
			               shk_val_copy(d, shk_object_value_at(c->info, i)));
	} else {
		/* watch answers with what already waits: taken on the loop thread
		 * together with turning the stream on, so that no call is missed
		 * or shown twice between a listing and the first event */
		r = c->ops->list(c->ctx, d, &pending);
		if (r < 0 || shk_val_type(pending) != SHK_ARRAY) {
			shk_doc_free(d);
			{ put_error(cl, "the supervisor could not list its pending calls"); return; }
		}
		shk_object_set_str(o, "pending", pending);
		if (!strcmp(cmd, "watch")) {
			cl->watch = true;
			shk_object_set_str(o, "watching", shk_bool(d, true));
		}
	}
	put(cl, o);
	shk_doc_free(d);
}

static void request(struct shk_control *c, struct client *cl, const char *line, size_t len)
{
	static const struct {
		const char *name;
		shk_control_action a;
	} decisions[] = {
		{ "approve", SHK_CTL_APPROVE }, { "reject", SHK_CTL_REJECT }, { "defer", SHK_CTL_DEFER },
		{ "escalate", SHK_CTL_ESCALATE }, { "modify", SHK_CTL_MODIFY },
	};
	shk_parse_error perr;
	shk_doc *d = NULL;
	shk_val *req = NULL;
	const char *cmd;

	if (shk_doc_new(&d) < 0)
		{ put_error(cl, "out of memory"); return; }
	if (shk_json_parse(d, line, len, "request", &req, &perr) < 0) {
		char msg[256];
		snprintf(msg, sizeof(msg), "request: not a JSON object (column %d: %.180s)", perr.column, perr.text);
		put_error(cl, msg);
	} else if (shk_val_type(req) != SHK_OBJECT) {
		put_error(cl, "request: not a JSON object");
	} else if (!(cmd = shk_val_str(shk_object_get(req, "cmd"), NULL))) {
		put_error(cl, "\"cmd\": expected a command name");
	} else if (!strcmp(cmd, "hello") || !strcmp(cmd, "list") || !strcmp(cmd, "watch")) {
		do_query(c, cl, cmd);
	} else if (!strcmp(cmd, "reset")) {
		do_reset(c, cl, req);
	} else {
		size_t i;
		for (i = 0; i < sizeof(decisions) / sizeof(decisions[0]); i++)
			if (!strcmp(cmd, decisions[i].name))
				break;
		if (i < sizeof(decisions) / sizeof(decisions[0])) {
			do_decision(c, cl, req, decisions[i].a);
		} else {
			char msg[128];
			snprintf(msg, sizeof(msg), "unknown command '%.64s'", cmd);
			put_error(cl, msg);
		}
	}
	shk_doc_free(d);
}

/* Read what is there and answer every complete line; false: drop it. */
static bool on_readable(struct shk_control *c, struct client *cl)
{
	char *nl;

	for (;;) {
		ssize_t n;

		if (cl->incap - cl->inlen < 4096) {
			size_t cap = cl->incap ? cl->incap * 2 : 8192;
			char *b = cap <= 2 * SHK_CONTROL_MAX_LINE ? realloc(cl->in, cap) : NULL;
			if (!b)
				return false;
			cl->in = b;
			cl->incap = cap;
		}
		n = recv(cl->fd, cl->in + cl->inlen, cl->incap - cl->inlen, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return false;
		cl->inlen += (size_t)n;
		while (!cl->closing && (nl = memchr(cl->in, '\n', cl->inlen))) {
			size_t len = (size_t)(nl - cl->in);
			request(c, cl, cl->in, len);
			memmove(cl->in, nl + 1, cl->inlen - len - 1);
			cl->inlen -= len + 1;
		}
		if (cl->inlen > SHK_CONTROL_MAX_LINE) {
			put_error(cl, "request line too long");
			cl->closing = true;
		}
		if (cl->closing)
			break;
	}
	return flush(c, cl);
}

/* ---- server ------------------------------------------------------------------------ */

/* The directory: created 0700, or an existing one that is ours and private. */
static int ensure_dir(const char *sock_path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", sock_path);
	if (!(slash = strrchr(dir, '/')) || slash == dir)
		return -EINVAL;
	*slash = 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

/* A socket file left by a dead session is removed; a live one is not ours. */
static int clear_stale(const char *path)
{
	struct shk_control_client probe;
	struct stat st;
	int r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	r = shk_control_connect(path, &probe);
	shk_control_disconnect(&probe);
	if (r == 0)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

static int listen_on(struct shk_control *c)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct stat st;
	mode_t old;
	int r;

	if ((r = ensure_dir(c->path)) < 0 || (r = clear_stale(c->path)) < 0)
		return r;
	memcpy(a.sun_path, c->path, strlen(c->path));
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->lfd < 0)
		return -errno;
	old = umask(0177); /* the file is created 0600, not widened later */
	r = bind(c->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
	umask(old);
	if (r < 0)
		return r;
	if (chmod(c->path, 0600) < 0 || stat(c->path, &st) < 0 || listen(c->lfd, 16) < 0) {
		r = -errno;
		unlink(c->path);
		return r;
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	if ((c->efd = epoll_create1(EPOLL_CLOEXEC)) < 0 || epoll_ctl(c->efd, EPOLL_CTL_ADD, c->lfd, &ev) < 0) {
		r = -errno;
		unlink(c->path);
		return r;
	}
	return 0;
}

int shk_control_open(const struct shk_control_options *o, const struct shk_control_ops *ops, void *ctx,
                     struct shk_control **ret)
{
	struct shk_control *c;
	int r;

	*ret = NULL;
	if (!o || !ops || !ops->list || !ops->resolve || !ops->reset)
		return -EINVAL;
	if (!(c = calloc(1, sizeof(*c))))
		return -ENOMEM;
	c->lfd = c->efd = -1;
	c->ops = ops;
	c->ctx = ctx;
	c->supervisor_pid = o->supervisor_pid;
	r = o->session_id && strlen(o->session_id) < sizeof(c->session) ? 0 : -EINVAL;
	if (r == 0) {
		snprintf(c->session, sizeof(c->session), "%s", o->session_id);
		shk_control_set_agent(c, o->agent_pid, o->agent_cgroup);
		if (o->path && strlen(o->path) < sizeof(c->path))
			snprintf(c->path, sizeof(c->path), "%s", o->path);
		else
			r = o->path ? -ENAMETOOLONG : shk_control_path(o->session_id, c->path, sizeof(c->path));
	}
	if (r == 0 && o->info && (r = shk_doc_new(&c->info_doc)) == 0 &&
	    !(c->info = shk_val_copy(c->info_doc, o->info)))
		r = -ENOMEM;
	if (r == 0)
		r = listen_on(c);
	if (r < 0) {
		c->path[0] = 0; /* not ours to unlink */
		shk_control_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

void shk_control_set_agent(struct shk_control *c, pid_t agent_pid, const char *agent_cgroup)
{
	c->agent_pid = agent_pid;
	snprintf(c->agent_cgroup, sizeof(c->agent_cgroup), "%s", agent_cgroup ? agent_cgroup : "");
	if (c->agent_cgroup[0])
		cgroup_mount_of(c->agent_cgroup, c->cgroup_mount, sizeof(c->cgroup_mount));
}

int shk_control_fd(const struct shk_control *c)
{
	return c ? c->efd : -EBADF;
}

const char *shk_control_socket_path(const struct shk_control *c)
{
	return c ? c->path : NULL;
}

int shk_control_handle(struct shk_control *c)
{
	struct epoll_event evs[16];
	int n;

	while ((n = epoll_wait(c->efd, evs, 16, 0)) > 0) {
		for (int i = 0; i < n; i++) {
			struct client *cl = evs[i].data.ptr;
			size_t k;
			bool keep = true;

			if (!cl) {
				/* a broken listener is taken out, not polled forever */
				if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
					epoll_ctl(c->efd, EPOLL_CTL_DEL, c->lfd, NULL);
					return -EPIPE;
				}
				on_accept(c);
				continue;
			}
			if ((k = index_of(c, cl)) == SHK_CONTROL_MAX_CLIENTS)
				continue; /* dropped earlier in this batch */
			if (evs[i].events & EPOLLIN)
				keep = on_readable(c, cl);
			else if (evs[i].events & EPOLLOUT)
				keep = flush(c, cl);
			if (keep && (evs[i].events & (EPOLLERR | EPOLLHUP)) && !(evs[i].events & EPOLLIN))
				keep = false;
			if (!keep)
				drop(c, k);
		}
	}
	return n < 0 && errno != EINTR ? -errno : 0;
}

void shk_control_broadcast(struct shk_control *c, const shk_val *event)
{
	for (size_t i = 0; c && i < SHK_CONTROL_MAX_CLIENTS; i++) {
		struct client *cl = c->clients[i];
		if (!cl || !cl->watch || cl->closing)
			continue;
		put(cl, event);
		if (!flush(c, cl))
			drop(c, i);
	}
}

size_t shk_control_watchers(const struct shk_control *c)
{
	size_t n = 0;

	for (size_t i = 0; c && i < SHK_CONTROL_MAX_CLIENTS; i++)
		n += c->clients[i] && c->clients[i]->watch;
	return n;
}

void shk_control_close(struct shk_control *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < SHK_CONTROL_MAX_CLIENTS; i++)
		drop(c, i);
	if (c->lfd >= 0)
		close(c->lfd);
	if (c->efd >= 0)
		close(c->efd);
	if (c->path[0] && c->dev) {
		struct stat st;
		/* only the file we bound: a later session may own the name now */
		if (lstat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
			unlink(c->path);
	}
	shk_doc_free(c->info_doc);
	free(c);
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return n > 0 && !strncmp(path, dir, n) && (path[n] == '/' || path[n] == 0);
}

bool shk_control_refuses(const struct shk_control *c, const char *canon_path, int pathfd)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat st;

	if (canon_path && (under(canon_path, "/run/shackle") ||
	                   (shk_control_dir(dir, sizeof(dir)) == 0 && under(canon_path, dir)) ||
	                   (c && under(canon_path, c->path))))
		return true;
	if (c && c->dev && pathfd >= 0 && fstat(pathfd, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		return true;
	if (c && c->dev && canon_path && stat(canon_path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
		return true;
	return false;
}
