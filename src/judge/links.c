/* SPDX-License-Identifier: MIT */
/*
 * Proposals and the execs that carry them out (judge/links.h). The exec's
 * commands are only hashed while the ring holds a proposal: a session
 * without a gateway pays nothing.
 */
#include <errno.h>

#include <shackle/proplink.h>

#include "judge/links.h"
#include "judge/pipeline.h"

void shk_links_remember(struct shk_pipeline *p, const char *tool, const shk_val *params, int64_t seq)
{
	shk_proplink_cmd cmd;

	if (seq >= 0 && tool && shk_proplink_proposed(params, &cmd))
		shk_proplink_add(&p->links, seq, tool, &cmd);
}

void shk_links_exec(struct shk_pipeline *p, const struct shk_obs_exec *x)
{
	shk_proplink_cmd cmds[SHK_PROPLINK_CANDIDATES];
	size_t n;
	int i;

	if (!p->links.n)
		return;
	n = shk_proplink_exec_cmds(x->file.path, x->argv, x->argc, cmds, SHK_PROPLINK_CANDIDATES);
	if ((i = shk_proplink_find(&p->links, cmds, n)) < 0)
		return;
	shk_proplink_take(&p->links, i, &p->link);
	p->linked = true;
}

const shk_proplink_entry *shk_links_taken(const struct shk_pipeline *p)
{
	return p->linked ? &p->link : NULL;
}

int shk_links_inputs(const shk_proplink_entry *link, shk_doc *doc, shk_val *in)
{
	shk_val *o = shk_object(doc);
	int r;

	if (!o)
		return -ENOMEM;
	if ((r = shk_object_set_str(o, "seq", shk_int(doc, link->seq))) < 0 ||
	    (r = shk_object_set_str(o, "tool", shk_cstring(doc, link->tool))) < 0)
		return r;
	return shk_object_set_str(in, "proposal", o);
}
