/* SPDX-License-Identifier: MIT */
/*
 * Replay of inputs.proposal: the ring the judge kept is rebuilt from the
 * log's decisions (shackle/proplink.h), and every exec's link is derived
 * again from its logged path and argv. A link is evidence, not a verdict,
 * but one the log invents, omits or points elsewhere is a divergence all
 * the same: a reader is told what the model asked for by it.
 *
 * Redacted params hide commands: a redacted proposal that names a command
 * joins the ring as unknown (an exec may have linked to it; the log says),
 * a redacted exec's link is taken from the log when it names a proposal
 * of the ring.
 *
 * A link makes the exec a member of the proposal's tool call, so it is
 * what replay judged the exec with (out of the repeat guard): a link that
 * does not hold diverges here, after the verdicts it led to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/replay_links.h"

static int why(struct link_why *w, int res, const char *field, const char *logged, const char *rec)
{
	snprintf(w->field, sizeof(w->field), "%s", field);
	snprintf(w->logged, sizeof(w->logged), "%s", logged);
	snprintf(w->recomputed, sizeof(w->recomputed), "%s", rec);
	return res;
}

static void proposal(shk_proplink_ring *ring, const shk_val *e, bool redacted)
{
	const shk_val *params = shk_object_get(e, "params");
	const char *tool = shk_val_str(shk_object_get(e, "tool"), NULL);
	int64_t seq = shk_val_int(shk_object_get(e, "seq"));
	shk_proplink_cmd cmd;

	if (!tool || !shk_val_str_eq(shk_object_get(e, "verdict"), "ALLOW"))
		return;
	if (!redacted && shk_proplink_proposed(params, &cmd))
		shk_proplink_add(ring, seq, tool, &cmd);
	else if (redacted && shk_proplink_names_command(params))
		shk_proplink_add(ring, seq, tool, NULL);
}

/* The logged argv as C strings, or 0 when it is not one (or longer than
 * max: then its link is taken from the log, like a redacted one's). */
static size_t argv_of(const shk_val *av, const char **out, size_t max)
{
	size_t n = shk_val_len(av);

	if (n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t len;

		if (!(out[i] = shk_val_str(shk_array_at(av, i), &len)) || memchr(out[i], 0, len))
			return 0;
	}
	return n;
}

#define ARGV_MAX 512

static int seq_text(struct link_why *w, int res, const char *field, const shk_proplink_ring *ring,
                    int logged, int derived)
{
	char a[64] = "none", b[96] = "none (its argv carries out no proposal waiting)";

	if (logged >= 0)
		snprintf(a, sizeof(a), "seq %lld", (long long)ring->e[logged].seq);
	if (derived >= 0)
		snprintf(b, sizeof(b), "seq %lld", (long long)ring->e[derived].seq);
	return why(w, res, field, a, b);
}

static int exec_link(shk_proplink_ring *ring, const shk_val *e, const shk_val *link, bool redacted,
                     struct link_why *w)
{
	const shk_val *params = shk_object_get(e, "params");
	const char *path = shk_val_str(shk_object_get(params, "path"), NULL);
	const shk_val *lseq = shk_object_get(link, "seq");
	const char *argv[ARGV_MAX];
	shk_proplink_cmd cmds[SHK_PROPLINK_CANDIDATES];
	size_t argc = 0, n = 0;
	int at = -1, found = -1;
	bool ok;
	char got[64];

	if (link && (shk_val_type(link) != SHK_OBJECT || shk_val_type(lseq) != SHK_INT ||
	             !shk_val_str(shk_object_get(link, "tool"), NULL)))
		return why(w, LINK_MALFORMED, "inputs.proposal", "not {seq, tool}", "");
	if (link && (at = shk_proplink_index(ring, shk_val_int(lseq))) < 0) {
		snprintf(got, sizeof(got), "seq %lld", (long long)shk_val_int(lseq));
		return why(w, LINK_DIVERGED, "inputs.proposal", got,
		           "no allowed proposal of that seq waiting for its exec");
	}
	if (!redacted && (argc = argv_of(shk_object_get(params, "argv"), argv, ARGV_MAX)))
		n = shk_proplink_exec_cmds(path, argv, argc, cmds, SHK_PROPLINK_CANDIDATES);
	if (!argc) /* the commands are not in the log: the log says */
		ok = true;
	else if ((found = shk_proplink_find(ring, cmds, n)) == at)
		ok = true;
	else /* an unknown proposal before the first known match may be the one taken */
		ok = at >= 0 && !ring->e[at].known && (found < 0 || found > at);
	if (!ok)
		return seq_text(w, LINK_DIVERGED, "inputs.proposal", ring, at, found);
	if (at < 0)
		return LINK_OK;
	if (!shk_val_str_eq(shk_object_get(link, "tool"), ring->e[at].tool))
		return why(w, LINK_DIVERGED, "inputs.proposal.tool",
		           shk_val_str(shk_object_get(link, "tool"), NULL), ring->e[at].tool);
	w->linked = true;
	w->from_log = !argc || !ring->e[at].known;
	w->member_of = ring->e[at].seq;
	shk_proplink_take(ring, at, NULL);
	return LINK_OK;
}

static struct held_link *held_find(struct shk_replay_links *l, uint64_t nonce)
{
	for (size_t i = 0; i < l->nheld; i++)
		if (l->held[i].nonce == nonce)
			return &l->held[i];
	return NULL;
}

/* A linked exec held for a person: its answer is logged with the link. */
static int held_add(struct shk_replay_links *l, uint64_t nonce, const shk_val *link, int64_t seq)
{
	struct held_link *h;

	if (l->nheld == l->cheld) {
		size_t c = l->cheld ? l->cheld * 2 : 8;

		if (!(h = realloc(l->held, c * sizeof(*h))))
			return -ENOMEM;
		l->held = h;
		l->cheld = c;
	}
	h = &l->held[l->nheld++];
	h->nonce = nonce;
	h->seq = seq;
	snprintf(h->tool, sizeof(h->tool), "%s", shk_val_str(shk_object_get(link, "tool"), NULL));
	return LINK_OK;
}

/* A later decision on a held exec: the link it was held with, or none. */
static int held_link(struct shk_replay_links *l, const shk_val *link, uint64_t nonce, struct link_why *w)
{
	const struct held_link *h = held_find(l, nonce);
	const shk_val *lseq = shk_object_get(link, "seq");
	const char *tool = shk_val_str(shk_object_get(link, "tool"), NULL);
	char a[64] = "none", b[64] = "none (it took no proposal when it was held)";

	if (link && (shk_val_type(link) != SHK_OBJECT || shk_val_type(lseq) != SHK_INT || !tool))
		return why(w, LINK_MALFORMED, "inputs.proposal", "not {seq, tool}", "");
	if (link)
		snprintf(a, sizeof(a), "seq %lld", (long long)shk_val_int(lseq));
	if (h)
		snprintf(b, sizeof(b), "seq %lld (taken when it was held)", (long long)h->seq);
	if (!h && !link)
		return LINK_OK;
	if (!h || !link || shk_val_int(lseq) != h->seq)
		return why(w, LINK_DIVERGED, "inputs.proposal", a, b);
	if (strcmp(tool, h->tool))
		return why(w, LINK_DIVERGED, "inputs.proposal.tool", tool, h->tool);
	w->member_of = h->seq;
	return LINK_OK;
}

int shk_replay_link(struct shk_replay_links *l, const shk_val *e, uint64_t nonce, bool rejudged,
                    struct link_why *w)
{
	const shk_val *in = shk_object_get(e, "inputs"), *params = shk_object_get(e, "params");
	const shk_val *link = shk_object_get(in, "proposal");
	bool redacted = shk_val_bool(shk_object_get(e, "redacted"));
	const char *src = shk_val_str(shk_object_get(in, "source"), NULL);
	int r;

	memset(w, 0, sizeof(*w));
	/* a proposal allowed, at once or on a person's approval (the judge
	 * remembers it as it releases the call) */
	if (src && !strcmp(src, "proposal"))
		proposal(&l->ring, e, redacted);
	if (!src && shk_val_str(shk_object_get(params, "path"), NULL) &&
	    shk_val_type(shk_object_get(params, "argv")) == SHK_ARRAY) {
		if (rejudged)
			return held_link(l, link, nonce, w);
		r = exec_link(&l->ring, e, link, redacted, w);
		if (r == LINK_OK && w->linked && shk_val_str_eq(shk_object_get(e, "verdict"), "HITL"))
			r = held_add(l, nonce, link, w->member_of);
		return r;
	}
	if (link)
		return why(w, LINK_MALFORMED, "inputs.proposal", "on a call that is no exec", "");
	return LINK_OK;
}

void shk_replay_links_reset(struct shk_replay_links *l)
{
	l->ring.n = 0;
	l->nheld = 0;
}

void shk_replay_links_free(struct shk_replay_links *l)
{
	free(l->held);
	memset(l, 0, sizeof(*l));
}
