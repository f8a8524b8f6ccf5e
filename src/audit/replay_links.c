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
 */
#include <stdio.h>
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
	shk_proplink_take(ring, at, NULL);
	return LINK_OK;
}

int shk_replay_link(shk_proplink_ring *ring, const shk_val *e, struct link_why *w)
{
	const shk_val *in = shk_object_get(e, "inputs"), *params = shk_object_get(e, "params");
	const shk_val *link = shk_object_get(in, "proposal");
	bool redacted = shk_val_bool(shk_object_get(e, "redacted"));
	const char *src = shk_val_str(shk_object_get(in, "source"), NULL);

	memset(w, 0, sizeof(*w));
	if (src && !strcmp(src, "proposal"))
		proposal(ring, e, redacted);
	if (!src && shk_val_str(shk_object_get(params, "path"), NULL) &&
	    shk_val_type(shk_object_get(params, "argv")) == SHK_ARRAY)
		return exec_link(ring, e, link, redacted, w);
	if (link)
		return why(w, LINK_MALFORMED, "inputs.proposal", "on a call that is no exec", "");
	return LINK_OK;
}
