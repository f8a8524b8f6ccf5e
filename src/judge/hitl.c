/* SPDX-License-Identifier: MIT */
/*
 * Held calls: parked notifications, the operator's decisions turned into
 * §3.6 transitions and judged again by decide(), audit entries for both,
 * then the kernel's answer. Timeouts and cancellation run from the tick.
 * Every failure on the way answers the held call with a denial.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shackle/canon.h>
#include <shackle/redact.h>

#include "judge/hitl.h"
#include "judge/kinds.h"
#include "judge/links.h"
#include "judge/source.h"

struct held {
	bool used, answered;
	uint64_t nonce, notif_id, order;
	pid_t pid, tid;
	char *exe;
	char tool[SHK_POLICY_TOOL_MAX];
	char *rule;
	shk_action action;
	shk_doc *doc;
	shk_toolcall tc;
	shk_reason reason;
	int64_t since_ns, since_mono;
	bool connect;                /* a connect() the supervisor performs: modifiable */
	const struct shk_call_kind *kind; /* how it is answered (judge/kinds.h) */
	const char *state;           /* waiting deferred escalated approved rejected ... */
	bool exec;                   /* an exec: once allowed, maybe a new tool call */
	uint64_t tool_call;          /* obs->tool_call: the tool call it belongs to */
	bool no_repeat_guard;        /* its rule's "repeat_guard": false */
	uint64_t allowed_seq;        /* the seq of the decision that allowed it */
	bool settled_later;          /* shk_pipeline_settled_later() of its obs */
	/* what its source's decision said of it (kind->inputs), said again
	 * in every later decision on it: replay reads the source there */
	shk_val *src_inputs;
	bool proposal;               /* a model's proposal: once approved, an exec links to it */
	bool linked;                 /* an exec that carries out a proposal (judge/links.h) */
	shk_proplink_entry link;
};

struct shk_hitl {
	struct shk_pipeline *p;
	struct shk_control *ctl;
	struct shk_hitl_kernel k;
	void (*notice)(void *ctx, const shk_val *event);
	void *notice_ctx;
	char session[80];
	int64_t timeout_ns;
	struct held *held;
	size_t cap;
	uint64_t order;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void held_clear(struct held *r)
{
	free(r->exe);
	free(r->rule);
	shk_doc_free(r->doc);
	memset(r, 0, sizeof(*r));
}

static struct held *find(struct shk_hitl *h, uint64_t nonce)
{
	for (size_t i = 0; i < h->cap; i++)
		if (h->held[i].used && h->held[i].nonce == nonce)
			return &h->held[i];
	return NULL;
}

/* A free record, else the oldest answered one (kept for a second resume). */
static struct held *slot(struct shk_hitl *h)
{
	struct held *old = NULL;

	for (size_t i = 0; i < h->cap; i++) {
		if (!h->held[i].used)
			return &h->held[i];
		if (h->held[i].answered && (!old || h->held[i].order < old->order))
			old = &h->held[i];
	}
	if (old)
		held_clear(old);
	return old;
}

static void id_str(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* ---- events -------------------------------------------------------------------- */

static shk_val *event(shk_doc *d, const char *kind, int64_t now)
{
	shk_val *e = shk_object(d);

	if (e) {
		shk_object_set_str(e, "event", shk_cstring(d, kind));
		shk_object_set_str(e, "time_ns", shk_int(d, now));
	}
	return e;
}

/*
 * Held calls and events carry at most this much of a string and of an
 * array: 64 held calls of 250 KB argv each would make a listing over the
 * channel's 4 MiB per client, and the operator would be dropped and told
 * "no calls are waiting". Cut values end with a note of what is missing;
 * args_digest is always the whole call's.
 */
#define SHOWN_STR_MAX 512
#define SHOWN_ARRAY_MAX 32

static shk_val *bounded(shk_doc *d, const shk_val *v, int depth, bool *cut)
{
	size_t n = shk_val_len(v), len = 0;
	const char *str = shk_val_str(v, &len);
	shk_val *o;

	if (str && len > SHOWN_STR_MAX) {
		char buf[SHOWN_STR_MAX + 64];
		size_t k = SHOWN_STR_MAX;

		while (k > 0 && ((unsigned char)str[k] & 0xc0) == 0x80)
			k--; /* not inside a UTF-8 sequence */
		memcpy(buf, str, k);
		*cut = true;
		return shk_string(d, buf, k + (size_t)snprintf(buf + k, sizeof(buf) - k,
		                                               "...[%zu more bytes]", len - k));
	}
	if (depth > 8 || (shk_val_type(v) != SHK_ARRAY && shk_val_type(v) != SHK_OBJECT))
		return shk_val_copy(d, v);
	if (shk_val_type(v) == SHK_OBJECT) {
		if (!(o = shk_object(d)))
			return NULL;
		for (size_t i = 0; i < n; i++) {
			const char *k = shk_val_str(shk_object_key_at(v, i), NULL);
			shk_val *x = bounded(d, shk_object_value_at(v, i), depth + 1, cut);

			if (!k || !x || shk_object_set_str(o, k, x) < 0)
				return NULL;
		}
		return o;
	}
	if (!(o = shk_array(d)))
		return NULL;
	for (size_t i = 0; i < n && i < SHOWN_ARRAY_MAX; i++) {
		shk_val *x = bounded(d, shk_array_at(v, i), depth + 1, cut);

		if (!x || shk_array_append(o, x) < 0)
			return NULL;
	}
	if (n > SHOWN_ARRAY_MAX) {
		char note[64];

		*cut = true;
		snprintf(note, sizeof(note), "...[%zu more elements]", n - SHOWN_ARRAY_MAX);
		if (shk_array_append(o, shk_cstring(d, note)) < 0)
			return NULL;
	}
	return o;
}

/* What operators see of params: the policy's redacted form (null when even
 * that cannot be made: never the secret), bounded; a cut is marked on the
 * event. */
static shk_val *shown(struct shk_hitl *h, shk_doc *d, const shk_val *params, shk_val *event)
{
	shk_val *red = NULL, *v;
	bool cut = false;

	if (shk_policy_redact_params(h->p->policy, d, params, &red) < 0)
		return shk_null(d);
	if (!(v = bounded(d, red ? red : params, 0, &cut)))
		return shk_null(d);
	if (cut && event)
		shk_object_set_str(event, "params_cut", shk_bool(d, true));
	return v;
}

/* The public view of a held call (list entries and "pending" events). */
static shk_val *describe(struct shk_hitl *h, shk_doc *d, const struct held *r, int64_t now)
{
	shk_val *o = event(d, "pending", r->since_ns);
	char ids[24];

	if (!o)
		return NULL;
	id_str(r->nonce, ids, sizeof(ids));
	shk_object_set_str(o, "id", shk_cstring(d, ids));
	shk_object_set_str(o, "nonce", shk_cstring(d, ids));
	shk_object_set_str(o, "session", shk_cstring(d, h->session));
	shk_object_set_str(o, "pid", shk_int(d, r->pid));
	shk_object_set_str(o, "tid", shk_int(d, r->tid));
	shk_object_set_str(o, "exe", r->exe ? shk_cstring(d, r->exe) : shk_null(d));
	shk_object_set_str(o, "tool", shk_cstring(d, r->tool));
	shk_object_set_str(o, "rule", r->rule ? shk_cstring(d, r->rule) : shk_null(d));
	shk_object_set_str(o, "params", shown(h, d, r->tc.params, o));
	shk_object_set_str(o, "args_digest", shk_cstring(d, r->tc.params_digest));
	shk_object_set_str(o, "reason", shk_cstring(d, shk_reason_str(r->reason)));
	shk_object_set_str(o, "since_ns", shk_int(d, r->since_ns));
	shk_object_set_str(o, "state", shk_cstring(d, r->state));
	shk_object_set_str(o, "modifiable", shk_bool(d, r->connect));
	shk_object_set_str(o, "expires_in_s",
	                   shk_int(d, (r->since_mono + h->timeout_ns - now) / 1000000000LL));
	return o;
}

static void broadcast(struct shk_hitl *h, shk_doc *d, const shk_val *e)
{
	if (e && shk_control_watchers(h->ctl) > 0)
		shk_control_broadcast(h->ctl, e);
	(void)d;
}

/* Does anyone want to hear of held calls (watchers, the notice hook)? */
static bool told(const struct shk_hitl *h)
{
	return h->notice || shk_control_watchers(h->ctl) > 0;
}

/* A held call's "pending" or "resolved" event: to watchers and the hook.
 * An outcome is told before the kernel is answered: the agent shares
 * shackle-run's stderr, and once released it writes its own lines (dash
 * writes an error in pieces) that would otherwise land inside ours. */
static void tell(struct shk_hitl *h, shk_doc *d, const shk_val *e)
{
	if (e && h->notice)
		h->notice(h->notice_ctx, e);
	broadcast(h, d, e);
}

static void note_decision(struct shk_hitl *h, pid_t pid, const shk_toolcall *tc, const shk_outcome *o,
                          int64_t now, const char *op)
{
	shk_doc *d = NULL;
	shk_val *e;

	if (!h || shk_control_watchers(h->ctl) == 0 || shk_doc_new(&d) < 0)
		return;
	if ((e = event(d, "decision", now))) {
		shk_object_set_str(e, "pid", shk_int(d, pid));
		shk_object_set_str(e, "operator", op ? shk_cstring(d, op) : shk_null(d));
		shk_object_set_str(e, "tool", shk_cstring(d, tc->tool_name));
		shk_object_set_str(e, "params", shown(h, d, tc->params, e));
		shk_object_set_str(e, "verdict", shk_cstring(d, shk_verdict_str(o->verdict)));
		shk_object_set_str(e, "reason", shk_cstring(d, shk_reason_str(o->reason)));
		shk_object_set_str(e, "layer", shk_cstring(d, shk_layer_str(o->layer)));
		broadcast(h, d, e);
	}
	shk_doc_free(d);
}

void shk_hitl_note(struct shk_hitl *h, const struct shk_obs *obs, const shk_toolcall *tc,
                   const shk_outcome *o, int64_t now)
{
	note_decision(h, obs ? obs->pid : 0, tc, o, now, NULL);
}

static void note_resolved(struct shk_hitl *h, const struct held *r, const char *op, const shk_outcome *o)
{
	shk_doc *d = NULL;
	shk_val *e;
	char ids[24];

	if (!told(h) || shk_doc_new(&d) < 0)
		return;
	if ((e = event(d, "resolved", clock_ns(CLOCK_REALTIME)))) {
		id_str(r->nonce, ids, sizeof(ids));
		shk_object_set_str(e, "id", shk_cstring(d, ids));
		shk_object_set_str(e, "tool", shk_cstring(d, r->tool));
		shk_object_set_str(e, "state", shk_cstring(d, r->state));
		shk_object_set_str(e, "operator", op ? shk_cstring(d, op) : shk_null(d));
		if (o) {
			shk_object_set_str(e, "verdict", shk_cstring(d, shk_verdict_str(o->verdict)));
			shk_object_set_str(e, "reason", shk_cstring(d, shk_reason_str(o->reason)));
		}
		tell(h, d, e);
	}
	shk_doc_free(d);
}

/* ---- audit ----------------------------------------------------------------------- */

static int ledger_err(struct shk_hitl *h, int r)
{
	if (r < 0 && r != -ENOMEM && r != -EINVAL) {
		h->p->ledger_failed = true; /* from now on nothing passes */
		h->p->ledger_errno = -r;
	}
	return r;
}

static int log_hitl(struct shk_hitl *h, const struct held *r, const char *state, const char *op, int64_t now)
{
	shk_audit_hitl e = {
		.time_ns = now, .call_number = h->p->calls, .state = state, .operator_id = op,
		.nonce = r->nonce, .args_digest = r->tc.params_digest,
		.transition = shk_session_pending_transition(h->p->session, r->nonce),
	};

	if (!h->p->ledger || h->p->ledger_failed)
		return -EIO;
	return ledger_err(h, shk_ledger_append_hitl(h->p->ledger, &e));
}

/* evaluate (or evaluate_resume), decision entry, commit: decide()'s answer
 * to a human decision. inputs: the operator's peer, for accountability. */
static int judge_again(struct shk_hitl *h, struct held *r, const shk_toolcall *tc, shk_action action,
                       const char *op, const struct shk_control_peer *peer, bool resume, shk_outcome *o)
{
	int64_t now = clock_ns(CLOCK_REALTIME);
	shk_audit_decision d;
	shk_doc *doc = NULL;
	shk_val *in = NULL, *red = NULL, *shared = NULL;
	shk_session_shared sv;
	shk_scope_read rd;
	/* a second resume is answered, never executed: nothing to reserve */
	bool scoped = h->p->scope && !resume;
	size_t carried = 0;
	int ret;

	if (!h->p->ledger || h->p->ledger_failed)
		return -EIO;
	if ((ret = shk_doc_new(&doc)) < 0)
		return ret;
	/* the approved call reserves again, now: its first reservation was
	 * given back when it was held */
	if (scoped)
		ret = shk_pipeline_shared_read(h->p, tc, &rd, &sv, doc, &shared, &carried);
	if (ret == 0)
		ret = resume ? shk_session_evaluate_resume(h->p->session, tc, now, o)
		             : shk_session_evaluate_shared(h->p->session, tc, action, now, scoped ? &sv : NULL, o);
	if (ret == 0)
		ret = shk_policy_redact_logged(h->p->policy, doc, tc->params, &red);
	if (ret < 0) {
		if (scoped)
			shk_pipeline_shared_done(h->p, false, tc, NULL, &rd, false);
		shk_doc_free(doc);
		return ret;
	}
	if ((in = r->src_inputs ? shk_val_copy(doc, r->src_inputs) : shk_object(doc))) {
		if (resume)
			shk_object_set_str(in, "resume_attempt", shk_bool(doc, true));
		if (peer) {
			shk_object_set_str(in, "operator_uid", shk_int(doc, peer->uid));
			shk_object_set_str(in, "operator_pid", shk_int(doc, peer->pid));
		}
	}
	/* replay must see the call out of the repeat guard as it was judged */
	if ((tc->repeat_exempt && (!in || shk_pipeline_ident_inputs(r->tool_call, r->no_repeat_guard, doc, in) < 0)) ||
	    (r->linked && (!in || shk_links_inputs(&r->link, doc, in) < 0))) {
		if (scoped)
			shk_pipeline_shared_done(h->p, false, tc, NULL, &rd, false);
		shk_doc_free(doc);
		return -ENOMEM;
	}
	h->p->calls++;
	d = (shk_audit_decision){ .time_ns = now, .pid = r->pid, .tid = r->tid, .exe = r->exe,
	                          .call_number = h->p->calls, .call = tc, .action = action,
	                          .rule = r->rule, .outcome = o, .operator_id = op, .inputs = in,
	                          .params_redacted = red, .shared = shared };
	/* answered before the entry, which records what Redis said */
	ret = scoped ? shk_pipeline_shared_then(h->p, r->settled_later, tc, o, &rd, doc, shared) : 0;
	if (ret == 0)
		ret = ledger_err(h, shk_ledger_append_decision(h->p->ledger, &d));
	if (ret == 0 && scoped)
		shk_pipeline_shared_logged(h->p, carried);
	/* read after: a checkpoint due may have gone in before the entry */
	if (ret == 0 && o->verdict == SHK_ALLOW)
		r->allowed_seq = shk_ledger_next_seq(h->p->ledger) - 1;
	if (ret == 0)
		ret = shk_session_commit(h->p->session, tc, o, now);
	if (scoped)
		shk_pipeline_shared_done(h->p, r->settled_later, tc, ret == 0 ? o : NULL, &rd, true);
	if (ret == 0)
		note_decision(h, r->pid, tc, o, now, op);
	shk_doc_free(doc);
	return ret;
}

/* ---- answering the kernel --------------------------------------------------------- */

/* o: decide()'s answer the release follows, NULL when there is none */
static int release(struct shk_hitl *h, struct held *r, bool allow, const struct sockaddr_storage *to,
                   socklen_t tolen, const shk_outcome *o)
{
	/* an allowed exec that belongs to no tool call starts one, or joins
	 * the proposal's it carries out */
	uint64_t tc = allow && r->exec && !r->tool_call ? (r->linked ? (uint64_t)r->link.seq : r->allowed_seq) : 0;
	int ret;

	/* an approved proposal waits for its exec from now on: before its
	 * caller is woken, so before the agent can run it */
	if (allow && r->proposal && o && o->verdict == SHK_ALLOW)
		shk_links_remember(h->p, r->tool, r->tc.params, (int64_t)r->allowed_seq);
	ret = r->kind->release ? r->kind->release(r->notif_id, allow, o)
	                       : h->k.release(h->k.ctx, r->notif_id, allow, allow ? 0 : EPERM, to, tolen, tc);
	r->answered = true;
	return ret;
}

static bool waiting(struct shk_hitl *h, const struct held *r)
{
	return r->kind->waiting ? r->kind->waiting(r->notif_id) : h->k.waiting(h->k.ctx, r->notif_id);
}

/* A call answered while its session entry is not terminal (a release that
 * decide() refused, a failure on the way) would stay in the session's table
 * for good: it is cancelled, and that is logged. */
static void settle(struct shk_hitl *h, struct held *r)
{
	shk_pending p;

	if (shk_session_pending_get(h->p->session, r->nonce, &p) == 0 && p.status != SHK_PENDING_CONSUMED &&
	    p.status != SHK_PENDING_REJECTED && p.status != SHK_PENDING_EXPIRED && p.status != SHK_PENDING_CANCELLED &&
	    shk_session_pending_set(h->p->session, r->nonce, SHK_PENDING_CANCELLED) == 0)
		log_hitl(h, r, "cancelled", NULL, clock_ns(CLOCK_REALTIME));
}

static void fail_closed(struct shk_hitl *h, struct held *r)
{
	if (!r->answered)
		release(h, r, false, NULL, 0, NULL);
	r->state = "cancelled";
	settle(h, r);
}

/* ---- decisions ------------------------------------------------------------------- */

__attribute__((format(printf, 2, 3)))
static void reply_error(struct shk_control_reply *rep, const char *fmt, ...)
{
	va_list ap;

	rep->ok = false;
	va_start(ap, fmt);
	vsnprintf(rep->error, sizeof(rep->error), fmt, ap);
	va_end(ap);
}

/* A second resume of a call that was already answered. */
static int resume_again(struct shk_hitl *h, struct held *r, const struct shk_control_request *req,
                        struct shk_control_reply *rep)
{
	shk_outcome o;
	int ret = judge_again(h, r, &r->tc, r->action, req->operator_id, &req->peer, true, &o);

	if (ret == -EBUSY || ret == -ENOENT) {
		char ids[24];
		id_str(r->nonce, ids, sizeof(ids));
		reply_error(rep, "call %s was answered, but the session no longer knows it", ids);
		return 0;
	}
	if (ret < 0)
		return ret;
	rep->ok = rep->has_verdict = true;
	rep->verdict = o.verdict;
	rep->reason = o.reason;
	snprintf(rep->state, sizeof(rep->state), "%s (no effect)", r->state);
	return 0;
}

/* The successor of a held connect: same family/proto, the operator's address. */
static int successor(struct shk_hitl *h, struct held *r, const struct shk_control_request *req,
                     shk_toolcall *tc, shk_policy_match *m, struct shk_control_reply *rep)
{
	const char *proto = shk_val_str(shk_object_get(r->tc.params, "proto"), NULL);
	struct shk_net_dest dest = { .op = SHK_NET_OP_CONNECT };
	char addr[INET6_ADDRSTRLEN];
	shk_val *params = shk_object(r->doc);
	uint16_t port;
	int ret;

	if (req->addr.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&req->addr;
		dest.family = SHK_NET_INET4;
		memcpy(dest.addr, &in->sin_addr, 4);
		port = ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&req->addr;
		dest.family = SHK_NET_INET6;
		memcpy(dest.addr, &in6->sin6_addr, 16);
		port = ntohs(in6->sin6_port);
	}
	inet_ntop(req->addr.ss_family, dest.addr, addr, sizeof(addr));
	dest.port = port;
	dest.proto = proto && !strcmp(proto, "tcp") ? SHK_NET_PROTO_TCP :
	             proto && !strcmp(proto, "udp") ? SHK_NET_PROTO_UDP : SHK_NET_PROTO_OTHER;
	if (!params || (ret = shk_policy_match_net(h->p->policy, &dest, m)) < 0)
		return params ? ret : -ENOMEM;
	if (m->action == SHK_ACTION_DENY) {
		reply_error(rep, "the policy denies %.64s (rule %.64s): choose a destination it allows; "
		            "the call stays held", req->connect, m->rule_name ? m->rule_name : "default");
		return 1;
	}
	shk_object_set_str(params, "family", shk_cstring(r->doc, dest.family == SHK_NET_INET4 ? "inet" : "inet6"));
	shk_object_set_str(params, "addr", shk_cstring(r->doc, addr));
	shk_object_set_str(params, "port", shk_int(r->doc, port));
	shk_object_set_str(params, "proto", shk_cstring(r->doc, proto ? proto : "other"));
	memset(tc, 0, sizeof(*tc));
	tc->tool_name = m->tool;
	tc->params = params;
	tc->nonce = ++h->p->next_nonce;
	tc->estimated_cost_usd = m->cost_usd;
	tc->repeat_exempt = r->tool_call || m->no_repeat_guard;
	return shk_audit_prepare_call(h->p->policy, tc);
}

static int do_modify(struct shk_hitl *h, struct held *r, const struct shk_control_request *req,
                     struct shk_control_reply *rep, shk_outcome *o)
{
	shk_pending_decision pd = { .status = SHK_PENDING_MODIFIED };
	struct held succ_rec;
	shk_policy_match m;
	shk_toolcall tc;
	int ret;

	if (!r->connect) {
		reply_error(rep, "modify applies to held connect() calls, which the supervisor performs "
		            "itself; %.48s is run by the kernel as it was asked: approve or reject it", r->tool);
		return 1;
	}
	/* an IPv4 socket cannot connect to an IPv6 address (a v4-mapped call
	 * is judged, and listed, as IPv4 too) */
	if (req->addr.ss_family == AF_INET6 &&
	    shk_val_str_eq(shk_object_get(r->tc.params, "family"), "inet")) {
		reply_error(rep, "call %llu connects over IPv4: give an IPv4 destination; the call stays held",
		            (unsigned long long)r->nonce);
		return 1;
	}
	if ((ret = successor(h, r, req, &tc, &m, rep)) != 0)
		return ret;
	pd.successor_nonce = tc.nonce;
	pd.successor_digest = tc.params_digest;
	if ((ret = shk_session_pending_resolve(h->p->session, r->nonce, &pd)) < 0)
		return ret;
	r->state = "modified";
	if ((ret = log_hitl(h, r, "modified", req->operator_id, clock_ns(CLOCK_REALTIME))) < 0)
		return ret;
	succ_rec = *r; /* the successor is logged with the held call's pid/exe */
	snprintf(succ_rec.tool, sizeof(succ_rec.tool), "%s", m.tool);
	succ_rec.rule = (char *)m.rule_name;
	succ_rec.no_repeat_guard = m.no_repeat_guard;
	return judge_again(h, &succ_rec, &tc, m.action, req->operator_id, &req->peer, false, o);
}

static int decide_held(struct shk_hitl *h, struct held *r, const struct shk_control_request *req,
                       struct shk_control_reply *rep)
{
	static const struct {
		shk_control_action a;
		shk_pending_status st;
		const char *state;
	} map[] = {
		{ SHK_CTL_APPROVE, SHK_PENDING_APPROVED, "approved" }, { SHK_CTL_REJECT, SHK_PENDING_REJECTED, "rejected" },
		{ SHK_CTL_DEFER, SHK_PENDING_DEFERRED, "deferred" }, { SHK_CTL_ESCALATE, SHK_PENDING_ESCALATED, "escalated" },
	};
	shk_pending_decision pd = { .args_digest = req->digest };
	shk_outcome o;
	size_t i;
	int ret;

	if (req->action == SHK_CTL_MODIFY) {
		if ((ret = do_modify(h, r, req, rep, &o)) == 0) {
			note_resolved(h, r, req->operator_id, &o);
			release(h, r, o.verdict == SHK_ALLOW, &req->addr, req->addrlen, &o);
		}
	} else {
		for (i = 0; map[i].a != req->action; i++)
			;
		pd.status = map[i].st;
		if ((ret = shk_session_pending_resolve(h->p->session, r->nonce, &pd)) == -EINVAL) {
			reply_error(rep, "--digest %.80s: expected the 64 lower-case hex digits `shackle pending --json` "
			            "shows", req->digest ? req->digest : "");
			return 0;
		}
		if (ret == 0) {
			r->state = map[i].state;
			ret = log_hitl(h, r, map[i].state, req->operator_id, clock_ns(CLOCK_REALTIME));
		}
		if (ret == 0)
			ret = judge_again(h, r, &r->tc, r->action, req->operator_id, &req->peer, false, &o);
		if (ret == 0)
			note_resolved(h, r, req->operator_id, &o);
		/* defer/escalate: decide() holds it again; anything else is answered */
		if (ret == 0 && o.verdict != SHK_HITL)
			release(h, r, o.verdict == SHK_ALLOW, NULL, 0, &o);
	}
	if (ret < 0 || (ret == 0 && r->answered)) {
		if (ret < 0)
			fail_closed(h, r);
		else
			settle(h, r);
	}
	if (ret != 0)
		return ret < 0 ? ret : 0;
	rep->ok = rep->has_verdict = true;
	rep->verdict = o.verdict;
	rep->reason = o.reason;
	snprintf(rep->state, sizeof(rep->state), "%s", r->answered ? (o.verdict == SHK_ALLOW ? "released" : "denied")
	                                                           : "held");
	return 0;
}

static int on_resolve(void *ctx, const struct shk_control_request *req, struct shk_control_reply *rep)
{
	struct shk_hitl *h = ctx;
	struct held *r = find(h, req->id);
	char ids[24];
	int ret;

	id_str(req->id, ids, sizeof(ids));
	if (!r) {
		reply_error(rep, "no call %s is held in session %.64s (see shackle pending)", ids, h->session);
		return 0;
	}
	if (r->answered)
		ret = resume_again(h, r, req, rep);
	else
		ret = decide_held(h, r, req, rep);
	if (ret < 0)
		reply_error(rep, "the decision could not be recorded (%s): the call was denied", strerror(-ret));
	return 0;
}

static int on_list(void *ctx, shk_doc *d, shk_val **ret)
{
	struct shk_hitl *h = ctx;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	shk_val *a = shk_array(d);

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++) {
		shk_val *o;
		if (!h->held[i].used || h->held[i].answered)
			continue;
		if (!(o = describe(h, d, &h->held[i], now)) || shk_array_append(a, o) < 0)
			return -ENOMEM;
	}
	*ret = a;
	return 0;
}

/* A breaker the scope shares is reset for the whole scope: a trip in any
 * of its sessions opened it for all of them. */
static int on_reset(void *ctx, const char *op, const struct shk_control_peer *peer, struct shk_control_reply *rep)
{
	struct shk_hitl *h = ctx;
	bool scope_open;
	const char *scope = shk_pipeline_shared_breaker(h->p, &scope_open);
	shk_audit_hitl e = { .time_ns = clock_ns(CLOCK_REALTIME), .call_number = h->p->calls,
	                     .state = "breaker_reset", .operator_id = op, .scope = scope };
	shk_session_info info;
	char why[SHK_SCOPE_WHY_MAX];
	shk_doc *d = NULL;
	shk_val *ev;

	(void)peer;
	shk_session_get_info(h->p->session, &info);
	if (!info.circuit_tripped && !scope_open) {
		reply_error(rep, "the breaker of session %.64s is not tripped%s%s", h->session,
		            scope ? ", nor that of its scope " : "", scope ? scope : "");
		return 0;
	}
	/* logged first: a reset that is not in the log does not happen */
	if (!h->p->ledger || h->p->ledger_failed || ledger_err(h, shk_ledger_append_hitl(h->p->ledger, &e)) < 0) {
		reply_error(rep, "the reset could not be written to the audit log; the breaker stays open");
		return 0;
	}
	shk_session_reset(h->p->session);
	if (scope && shk_pipeline_shared_reset(h->p, op, why, sizeof(why)) < 0) {
		reply_error(rep, "the session's breaker is closed, but the breaker of its scope %s stays "
		            "open: Redis did not take the reset (%s); run reset again", scope, why);
		return 0;
	}
	rep->ok = true;
	snprintf(rep->state, sizeof(rep->state), "closed%s%s (was %s)", scope ? " for the scope " : "",
	         scope ? scope : "", info.circuit_tripped ? shk_reason_str(info.trip_reason) : "open in the scope");
	if (shk_control_watchers(h->ctl) && shk_doc_new(&d) == 0 && (ev = event(d, "breaker", e.time_ns))) {
		shk_object_set_str(ev, "state", shk_cstring(d, "reset"));
		shk_object_set_str(ev, "reason", shk_cstring(d, shk_reason_str(info.trip_reason)));
		shk_object_set_str(ev, "operator", shk_cstring(d, op));
		if (scope)
			shk_object_set_str(ev, "scope", shk_cstring(d, scope));
		broadcast(h, d, ev);
	}
	shk_doc_free(d);
	return 0;
}

static const struct shk_control_ops control_ops = { on_list, on_resolve, on_reset };

/* ---- holding ------------------------------------------------------------------------ */

int shk_hitl_hold(struct shk_hitl *h, const struct shk_obs *obs, uint64_t notif_id, const shk_toolcall *tc,
                  const shk_policy_match *m, const shk_outcome *o, int64_t now)
{
	const struct shk_call_kind *kind = shk_call_kind_of(obs->kind);
	const shk_proplink_entry *link = shk_links_taken(h->p);
	struct held *r = slot(h);
	shk_doc *d = NULL;
	int ret;

	if (!kind)
		return -EINVAL;
	if (!r)
		return -ENOSPC;
	if ((ret = shk_doc_new(&r->doc)) < 0)
		return ret;
	r->used = true;
	r->order = ++h->order;
	r->nonce = tc->nonce;
	r->notif_id = notif_id;
	r->pid = obs->pid;
	r->tid = obs->tid;
	r->exe = obs->exe[0] ? strdup(obs->exe) : NULL;
	r->rule = m->rule_name ? strdup(m->rule_name) : NULL;
	snprintf(r->tool, sizeof(r->tool), "%s", tc->tool_name);
	r->action = m->action;
	r->reason = o->reason;
	r->since_ns = now;
	r->since_mono = clock_ns(CLOCK_MONOTONIC);
	r->kind = kind;
	r->connect = kind->modifiable && kind->modifiable(obs);
	r->state = "waiting";
	r->exec = obs->kind == SHK_OBS_EXEC;
	r->tool_call = obs->tool_call;
	r->no_repeat_guard = m->no_repeat_guard;
	r->allowed_seq = 0;
	r->settled_later = shk_pipeline_settled_later(obs);
	r->proposal = obs->kind == SHK_OBS_SOURCE && obs->source.call->kind == SHK_SOURCE_PROPOSAL;
	r->linked = link != NULL;
	if (link)
		r->link = *link;
	r->src_inputs = kind->inputs ? shk_object(r->doc) : NULL;
	if (kind->inputs && (!r->src_inputs || kind->inputs(obs, r->doc, r->src_inputs) < 0)) {
		held_clear(r);
		return -ENOMEM;
	}
	r->tc = *tc;
	r->tc.tool_name = r->tool;
	r->tc.params = shk_val_copy(r->doc, tc->params);
	if (!r->tc.params || (obs->exe[0] && !r->exe) || (m->rule_name && !r->rule)) {
		held_clear(r);
		return -ENOMEM;
	}
	shk_audit_prepare_call(h->p->policy, &r->tc); /* the (keyed) digest it was judged with */
	if ((ret = log_hitl(h, r, "pending", NULL, now)) < 0) {
		held_clear(r);
		return ret;
	}
	if (told(h) && shk_doc_new(&d) == 0)
		tell(h, d, describe(h, d, r, r->since_mono));
	shk_doc_free(d);
	return 0;
}

/* Nobody answered in time: decide() sees an expired transition. */
static void expire(struct shk_hitl *h, struct held *r)
{
	shk_outcome o;
	int ret = shk_session_pending_set(h->p->session, r->nonce, SHK_PENDING_EXPIRED);

	r->state = "expired";
	if (ret == 0)
		ret = log_hitl(h, r, "expired", NULL, clock_ns(CLOCK_REALTIME));
	if (ret == 0)
		ret = judge_again(h, r, &r->tc, r->action, NULL, NULL, false, &o);
	note_resolved(h, r, NULL, ret == 0 ? &o : NULL);
	/* whatever happened, an expired call is denied */
	release(h, r, false, NULL, 0, ret == 0 ? &o : NULL);
	if (ret < 0)
		settle(h, r);
}

/* The thread left the syscall (a signal) or died: nothing to answer. */
static void cancel(struct shk_hitl *h, struct held *r)
{
	r->answered = true;
	r->state = "cancelled";
	if (shk_session_pending_set(h->p->session, r->nonce, SHK_PENDING_CANCELLED) == 0)
		log_hitl(h, r, "cancelled", NULL, clock_ns(CLOCK_REALTIME));
	note_resolved(h, r, NULL, NULL);
}

void shk_hitl_tick(struct shk_hitl *h)
{
	int64_t now = clock_ns(CLOCK_MONOTONIC);

	for (size_t i = 0; h && i < h->cap; i++) {
		struct held *r = &h->held[i];

		if (!r->used || r->answered)
			continue;
		if (!waiting(h, r))
			cancel(h, r);
		else if (now - r->since_mono >= h->timeout_ns)
			expire(h, r);
	}
}

/* ---- lifetime ------------------------------------------------------------------------ */

int shk_hitl_open(struct shk_pipeline *p, const struct shk_hitl_options *o, struct shk_hitl **ret)
{
	struct shk_control_options co = { .session_id = o->session_id, .path = o->control_path,
	                                  .supervisor_pid = o->supervisor_pid, .info = o->info };
	struct shk_hitl *h;
	int r;

	*ret = NULL;
	if (!p || !o->kernel.release || !o->kernel.waiting)
		return -EINVAL;
	if (!(h = calloc(1, sizeof(*h))))
		return -ENOMEM;
	h->p = p;
	h->k = o->kernel;
	h->notice = o->notice;
	h->notice_ctx = o->notice_ctx;
	h->timeout_ns = (int64_t)o->timeout_s * 1000000000LL;
	snprintf(h->session, sizeof(h->session), "%s", o->session_id);
	h->cap = o->max_held ? o->max_held : 64;
	h->held = calloc(h->cap, sizeof(*h->held));
	r = h->held ? shk_control_open(&co, &control_ops, h, &h->ctl) : -ENOMEM;
	if (r < 0) {
		free(h->held);
		free(h);
		return r;
	}
	*ret = h;
	return 0;
}

/* Watchers learn that the session ended, not that they were dropped (a
 * watcher more than 4 MiB behind is: it sees EOF without this). */
static void say_end(struct shk_hitl *h)
{
	struct timespec ts;
	shk_doc *d = NULL;
	shk_val *e;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (shk_doc_new(&d) == 0 &&
	    (e = event(d, "session_end", (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec)) &&
	    shk_object_set_str(e, "session", shk_cstring(d, h->session)) == 0)
		shk_control_broadcast(h->ctl, e);
	shk_doc_free(d);
}

void shk_hitl_close(struct shk_hitl *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->cap; i++) {
		struct held *r = &h->held[i];

		/* a kernel call is gone with the tree by now; a source's caller
		 * still waits for its answer */
		if (r->used && !r->answered && r->kind->release)
			r->kind->release(r->notif_id, false, NULL);
		if (r->used && !r->answered)
			cancel(h, r);
		held_clear(r);
	}
	say_end(h);
	shk_control_close(h->ctl);
	free(h->held);
	free(h);
}

void shk_hitl_set_agent(struct shk_hitl *h, pid_t pid, const char *cgroup)
{
	shk_control_set_agent(h->ctl, pid, cgroup);
}

int shk_hitl_fd(const struct shk_hitl *h)
{
	return shk_control_fd(h->ctl);
}

const char *shk_hitl_socket_path(const struct shk_hitl *h)
{
	return shk_control_socket_path(h->ctl);
}

int shk_hitl_handle(struct shk_hitl *h)
{
	return shk_control_handle(h->ctl);
}

size_t shk_hitl_waiting(const struct shk_hitl *h)
{
	size_t n = 0;

	for (size_t i = 0; h && i < h->cap; i++)
		n += h->held[i].used && !h->held[i].answered;
	return n;
}

bool shk_hitl_refuses(const struct shk_hitl *h, const char *canon_path, int pathfd)
{
	return shk_control_refuses(h ? h->ctl : NULL, canon_path, pathfd);
}
