/* SPDX-License-Identifier: MIT */
/*
 * The operator channel, the parts both ends need: where the sockets live,
 * the client's line framing, and destination parsing for `modify`.
 * Linked into shackle-run and into `shackle` (which has no supervisor).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <shackle/canon.h>

#include "judge/control.h"
#include "util/linux.h"

int shk_control_dir(char *buf, size_t len)
{
	const char *over = getenv("SHACKLE_CONTROL_DIR"), *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (over && over[0] == '/')
		n = snprintf(buf, len, "%s", over);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/shackle");
	else if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/shackle", xdg);
	else
		n = snprintf(buf, len, "/tmp/shackle-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A session directory of uid: a real directory (not a symlink) of that
 * owner, closed to group and others, as the server makes it. */
static int visit(const char *dir, uid_t owner, int (*fn)(void *ctx, const char *dir), void *ctx)
{
	struct stat st;

	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != owner || (st.st_mode & 077))
		return 0;
	return fn(ctx, dir);
}

/* Every DIR/PREFIXUID[SUFFIX] with a numeric UID, as uid's directory. */
static int visit_users(const char *dir, const char *prefix, const char *suffix,
                       int (*fn)(void *ctx, const char *dir), void *ctx)
{
	size_t pl = strlen(prefix);
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	while (d && r == 0 && (de = readdir(d))) {
		const char *num = de->d_name + pl;
		char path[sizeof(((struct sockaddr_un *)0)->sun_path)], *end;
		unsigned long uid;
		int n;

		if (strncmp(de->d_name, prefix, pl) || *num < '0' || *num > '9')
			continue;
		errno = 0;
		uid = strtoul(num, &end, 10);
		if (errno || *end || uid == 0 || uid > 0xfffffffeUL)
			continue;
		n = snprintf(path, sizeof(path), "%s/%s%s", dir, de->d_name, suffix);
		if (n > 0 && (size_t)n < sizeof(path))
			r = visit(path, (uid_t)uid, fn, ctx);
	}
	if (d)
		closedir(d);
	return r;
}

int shk_control_each_dir(int (*fn)(void *ctx, const char *dir), void *ctx)
{
	const char *over = getenv("SHACKLE_CONTROL_DIR");
	char own[sizeof(((struct sockaddr_un *)0)->sun_path)], alt[sizeof(own)];
	uid_t me = geteuid();
	int r;

	if ((r = shk_control_dir(own, sizeof(own))) < 0)
		return r;
	if (over && over[0] == '/')
		return fn(ctx, own);
	if ((r = visit(own, me, fn, ctx)) != 0)
		return r;
	/* root operates every session (docs/hitl.md): those of other users
	 * live in their directories, not in /run/shackle */
	if (me == 0)
		return (r = visit_users("/run/user", "", "/shackle", fn, ctx)) != 0
		               ? r : visit_users("/tmp", "shackle-", "", fn, ctx);
	/* the same user's other default: a session started with another
	 * XDG_RUNTIME_DIR, or without one */
	snprintf(alt, sizeof(alt), "/run/user/%u/shackle", (unsigned)me);
	if (strcmp(alt, own) && (r = visit(alt, me, fn, ctx)) != 0)
		return r;
	snprintf(alt, sizeof(alt), "/tmp/shackle-%u", (unsigned)me);
	return strcmp(alt, own) ? visit(alt, me, fn, ctx) : 0;
}

static bool session_name_ok(const char *s)
{
	size_t n = 0;

	for (; s && s[n]; n++)
		if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
		      (s[n] >= '0' && s[n] <= '9') || s[n] == '-' || s[n] == '_' || s[n] == '.'))
			return false;
	return n > 0 && n <= 64 && s[0] != '.';
}

int shk_control_path(const char *session_id, char *buf, size_t len)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int r, n;

	if (!session_name_ok(session_id))
		return -EINVAL;
	if ((r = shk_control_dir(dir, sizeof(dir))) < 0)
		return r;
	n = snprintf(buf, len, "%s/%s.sock", dir, session_id);
	if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(dir))
		return -ENAMETOOLONG;
	return 0;
}

int shk_control_parse_dest(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = s;
	size_t hlen;
	char *end;
	long port;

	memset(ret, 0, sizeof(*ret));
	if (!s || !(colon = strrchr(s, ':')) || colon == s)
		return -EINVAL;
	hlen = (size_t)(colon - s);
	if (s[0] == '[') {
		if (hlen < 3 || s[hlen - 1] != ']')
			return -EINVAL;
		h = s + 1;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = 0;
	if (colon[1] < '0' || colon[1] > '9')
		return -EINVAL;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port < 1 || port > 65535)
		return -EINVAL;
	if (s[0] != '[' && inet_pton(AF_INET, host, &((struct sockaddr_in *)ret)->sin_addr) == 1) {
		((struct sockaddr_in *)ret)->sin_family = AF_INET;
		((struct sockaddr_in *)ret)->sin_port = htons((uint16_t)port);
		*ret_len = sizeof(struct sockaddr_in);
		return 0;
	}
	if (s[0] == '[' && inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)ret)->sin6_addr) == 1) {
		((struct sockaddr_in6 *)ret)->sin6_family = AF_INET6;
		((struct sockaddr_in6 *)ret)->sin6_port = htons((uint16_t)port);
		*ret_len = sizeof(struct sockaddr_in6);
		return 0;
	}
	return -EINVAL;
}

/* ---- client ------------------------------------------------------------------ */

void shk_control_disconnect(struct shk_control_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	c->fd = -1;
	c->buf = NULL;
	c->len = c->cap = 0;
}

static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

/*
 * Is the process serving the socket in our user namespace (same uid map)?
 * Without root the agent runs in a user namespace of its own: a socket it
 * put in place of a session's (by renaming a directory above the covered
 * control directory, or as a second name in a SHACKLE_CONTROL_DIR) was
 * listed and answered as a session. A real session runs
 * where its operator does. uid_map is readable for any process.
 */
static bool peer_is_outside_sandboxes(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char p[64], mine[512], theirs[512];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.pid <= 0)
		return false;
	/* a session is run by the operator's own uid or by root; root may
	 * operate anyone's (docs/hitl.md) */
	if (cr.uid != geteuid() && cr.uid != 0 && geteuid() != 0)
		return false;
	snprintf(p, sizeof(p), "/proc/%d/uid_map", (int)cr.pid);
	return read_small(p, theirs, sizeof(theirs)) > 0 &&
	       read_small("/proc/self/uid_map", mine, sizeof(mine)) > 0 && !strcmp(mine, theirs);
}

int shk_control_connect(const char *path, struct shk_control_client *ret)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->fd = -1;
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path));
	ret->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ret->fd < 0)
		return -errno;
	if (connect(ret->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r = -errno;
		shk_control_disconnect(ret);
		return r;
	}
	if (!peer_is_outside_sandboxes(ret->fd)) {
		shk_control_disconnect(ret);
		return -EPERM;
	}
	return 0;
}

int shk_control_send(struct shk_control_client *c, const shk_val *request)
{
	char *text = NULL;
	size_t len = 0;
	int r = shk_canon_dump(request, &text, &len);

	if (r == 0)
		r = shk_send_all(c->fd, text, len);
	if (r == 0)
		r = shk_send_all(c->fd, "\n", 1);
	free(text);
	return r;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One more chunk into the buffer; -ETIMEDOUT, -ECONNRESET at EOF. */
static int fill(struct shk_control_client *c, int64_t deadline)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	ssize_t n;
	int wait = deadline < 0 ? -1 : (int)(deadline > mono_ms() ? deadline - mono_ms() : 0);

	if (c->cap - c->len < 4096) {
		size_t cap = c->cap ? c->cap * 2 : 8192;
		char *b;

		if (cap > SHK_CONTROL_MAX_OUT + 2)
			return -EPROTO;
		if (!(b = realloc(c->buf, cap)))
			return -ENOMEM;
		c->buf = b;
		c->cap = cap;
	}
	n = poll(&p, 1, wait);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return -ETIMEDOUT;
	n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (n == 0)
		return -ECONNRESET;
	c->len += (size_t)n;
	return 0;
}

int shk_control_recv(struct shk_control_client *c, shk_doc *doc, int timeout_ms, shk_val **ret)
{
	int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
	shk_parse_error perr;
	char *nl;
	size_t len;
	int r;

	*ret = NULL;
	while (!(nl = c->len ? memchr(c->buf, '\n', c->len) : NULL))
		if ((r = fill(c, deadline)) < 0)
			return r;
	len = (size_t)(nl - c->buf);
	r = shk_json_parse(doc, c->buf, len, "control", ret, &perr);
	memmove(c->buf, nl + 1, c->len - len - 1);
	c->len -= len + 1;
	if (r < 0 || shk_val_type(*ret) != SHK_OBJECT)
		return r == -ENOMEM ? r : -EPROTO;
	return 0;
}
