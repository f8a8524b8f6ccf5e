/* SPDX-License-Identifier: MIT */
/*
 * control.h — the operator channel of a shackle-run session (internal API).
 *
 * One Unix stream socket per session, mode 0600 in a directory of mode 0700
 * owned by the supervisor's user:
 *   root:        /run/shackle/SESSION.sock
 *   other users: $XDG_RUNTIME_DIR/shackle/SESSION.sock, or
 *                /tmp/shackle-UID/SESSION.sock without XDG_RUNTIME_DIR
 * (SHACKLE_CONTROL_DIR overrides the directory). `shackle pending` & co.
 * find sessions by scanning that directory.
 *
 * Protocol: JSON lines, one request object per line, one canonical JSON
 * response object per line ({"ok": true, ...} or {"ok": false, "error": "..."}).
 * Requests: {"cmd": "hello"|"list"|"approve"|"reject"|"defer"|"escalate"|
 * "modify"|"reset"|"watch", "id": "NONCE", "operator": "NAME",
 * "digest": "HEX", "connect": "ADDR:PORT"}. After "watch" the server streams
 * event objects (one per line) until either side closes. docs/hitl.md has the
 * full description.
 *
 * Who may talk: SO_PEERCRED uid equal to the supervisor's euid, or 0; and the
 * peer must not be a process of the supervised agent (its cgroup, its
 * ancestry through the agent or the supervisor, which reaps orphans). The
 * supervisor also refuses the agent's connect() to any control socket
 * (shk_control_refuses), so that the check does not rest on one mechanism.
 *
 * The server never blocks the event loop: one internal epoll fd (hand it to
 * the loop's epoll), non-blocking clients, watch clients that do not read are
 * dropped instead of buffered without bound.
 */
#ifndef SHACKLE_JUDGE_CONTROL_H
#define SHACKLE_JUDGE_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <shackle/decide.h>
#include <shackle/json.h>

#define SHK_CONTROL_MAX_LINE (64 * 1024)
#define SHK_CONTROL_MAX_OUT (4 * 1024 * 1024) /* per client, then it is dropped */
#define SHK_CONTROL_MAX_CLIENTS 64
#define SHK_CONTROL_OPERATOR_MAX 64

struct shk_control;

struct shk_control_peer {
	uid_t uid;
	pid_t pid;
	char user[64];               /* login name of uid, or "uid-N" */
};

typedef enum shk_control_action {
	SHK_CTL_APPROVE = 1,
	SHK_CTL_REJECT,
	SHK_CTL_DEFER,
	SHK_CTL_ESCALATE,
	SHK_CTL_MODIFY,
} shk_control_action;

const char *shk_control_action_name(shk_control_action a); /* "approve", ... */
/* The operator name of a peer without --as: its login name, or "uid-N"
 * for a uid without a passwd entry. */
void shk_control_peer_name(uid_t uid, char *buf, size_t len);

struct shk_control_request {
	shk_control_action action;
	uint64_t id;                 /* the held call's id (its nonce) */
	const char *operator_id;     /* --as, else the peer's login name; never NULL */
	const char *digest;          /* args digest the operator reviewed, or NULL */
	/* MODIFY: the destination the operator gave ("ADDR:PORT", "[V6]:PORT") */
	const char *connect;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct shk_control_peer peer;
};

/* What the supervisor answers; becomes the response. */
struct shk_control_reply {
	bool ok;
	char error[256];             /* when !ok: shown to the operator as is */
	bool has_verdict;            /* decide()'s answer to the decision */
	shk_verdict verdict;
	shk_reason reason;
	char state[256]; /* the pending entry's state, the breaker's, afterwards */
};

struct shk_control_ops {
	/* Array of pending calls (objects), built in doc. */
	int (*list)(void *ctx, shk_doc *doc, shk_val **ret_pending);
	int (*resolve)(void *ctx, const struct shk_control_request *req, struct shk_control_reply *ret);
	int (*reset)(void *ctx, const char *operator_id, const struct shk_control_peer *peer,
	             struct shk_control_reply *ret);
};

struct shk_control_options {
	const char *session_id;      /* [A-Za-z0-9._-], at most 64 bytes */
	const char *path;            /* NULL: shk_control_path(session_id) */
	pid_t supervisor_pid;        /* peers that descend from it are refused (0: not checked) */
	pid_t agent_pid;             /* peers that descend from it are refused (0: none yet) */
	const char *agent_cgroup;    /* cgroup v2 directory of the agent, or NULL */
	const shk_val *info;         /* object merged into the hello answer, or NULL */
};

/* The directory of control sockets for this euid (not created). */
int shk_control_dir(char *buf, size_t len);
int shk_control_path(const char *session_id, char *buf, size_t len);
/*
 * Where an operator looks for sessions: SHACKLE_CONTROL_DIR alone when it
 * is set; else this euid's directory and the same user's other default
 * ($XDG_RUNTIME_DIR/shackle or /run/user/UID/shackle, /tmp/shackle-UID);
 * root also every user's /run/user/UID/shackle and /tmp/shackle-UID. Each
 * only when it is a real directory owned by that uid and closed to group
 * and others (the override: as it is). fn's non-zero return stops the walk
 * and is returned; 0 at the end.
 */
int shk_control_each_dir(int (*fn)(void *ctx, const char *dir), void *ctx);

int shk_control_open(const struct shk_control_options *opts, const struct shk_control_ops *ops, void *ctx,
                     struct shk_control **ret_control);
/* Readable when shk_control_handle has work: add it to the loop's epoll. */
int shk_control_fd(const struct shk_control *c);
const char *shk_control_socket_path(const struct shk_control *c);
/* Later knowledge of the agent (its pid once started, its cgroup). */
void shk_control_set_agent(struct shk_control *c, pid_t agent_pid, const char *agent_cgroup);
/* Accept, read, answer, flush; never blocks. 0 or a negative errno (the
 * listener broke: the channel is gone, held calls must be denied). */
int shk_control_handle(struct shk_control *c);
/* One event to every watch client. */
void shk_control_broadcast(struct shk_control *c, const shk_val *event);
size_t shk_control_watchers(const struct shk_control *c);
/* Closes every client and unlinks the socket. NULL is a no-op. */
void shk_control_close(struct shk_control *c);

/*
 * Is this AF_UNIX destination an operator channel the agent must not reach?
 * canon_path: the canonical path the supervisor resolved (as the agent would);
 * pathfd: an O_PATH fd of it, or -1. True for anything inside a control
 * directory (this euid's, /run/shackle) and for this session's socket inode
 * wherever it appears (a hard link). c may be NULL.
 */
bool shk_control_refuses(const struct shk_control *c, const char *canon_path, int pathfd);

/* ---- client side (shackle pending/approve/...) ----------------------------- */

struct shk_control_client {
	int fd;
	char *buf;                   /* bytes received, not yet returned */
	size_t len, cap;
};

/* Connect to a control socket: 0, or -errno (the client is then closed). */
int shk_control_connect(const char *path, struct shk_control_client *ret_client);
void shk_control_disconnect(struct shk_control_client *c);
/* Send one request line (canonical JSON). */
int shk_control_send(struct shk_control_client *c, const shk_val *request);
/* Read one response/event line into doc; -ETIMEDOUT, -ECONNRESET at EOF,
 * -EPROTO for a line that is not a JSON object or is too long. timeout_ms < 0:
 * wait as long as it takes. */
int shk_control_recv(struct shk_control_client *c, shk_doc *doc, int timeout_ms, shk_val **ret);

/* "ADDR:PORT" / "[V6]:PORT" into a sockaddr. 0 or -EINVAL. */
int shk_control_parse_dest(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len);

#endif
