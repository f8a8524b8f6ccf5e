/* SPDX-License-Identifier: MIT */
/* Replay of the links from execs to proposals (shackle/proplink.h). Private. */
#ifndef SHACKLE_AUDIT_REPLAY_LINKS_H
#define SHACKLE_AUDIT_REPLAY_LINKS_H

#include <stdbool.h>
#include <stddef.h>

#include <shackle/json.h>
#include <shackle/proplink.h>

enum { LINK_OK = 0, LINK_DIVERGED, LINK_MALFORMED };

struct link_why {
	char field[32];
	char logged[160], recomputed[160];
	bool from_log;   /* a redacted exec: its link was taken from the log */
	bool linked;     /* the entry recorded a link that was re-derived */
};

/* One decision entry e, whose verdict replay reproduced: a proposal
 * allowed joins the ring as the judge's did, an exec's inputs.proposal is
 * re-derived from its argv and the ring. LINK_OK, or why not in *w. */
int shk_replay_link(shk_proplink_ring *ring, const shk_val *e, struct link_why *w);

#endif
