/* SPDX-License-Identifier: MIT */
/* Replay of the links from execs to proposals (shackle/proplink.h). Private. */
#ifndef SHACKLE_AUDIT_REPLAY_LINKS_H
#define SHACKLE_AUDIT_REPLAY_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <shackle/json.h>
#include <shackle/proplink.h>

enum { LINK_OK = 0, LINK_DIVERGED, LINK_MALFORMED };

struct link_why {
	char field[32];
	char logged[160], recomputed[160];
	bool from_log;   /* a redacted exec: its link was taken from the log */
	bool linked;     /* the entry recorded a link that was re-derived */
	int64_t member_of; /* > 0: the exec carries out the proposal of that seq */
};

/* An exec held for a person that took a proposal: its later decisions
 * (the person's answer) carry the same link. */
struct held_link {
	uint64_t nonce;
	int64_t seq;
	char tool[SHK_PROPLINK_TOOL_MAX];
};

struct shk_replay_links {
	shk_proplink_ring ring;  /* proposals waiting for their exec, as the judge kept them */
	struct held_link *held;
	size_t nheld, cheld;
};

/* One decision entry e, whose verdict replay reproduced: a proposal
 * allowed joins the ring as the judge's did, an exec's inputs.proposal is
 * re-derived from its argv and the ring. rejudged: e answers a call held
 * before (its nonce was pending), whose link was taken when it was held.
 * LINK_OK, or why not in *w; -ENOMEM. */
int shk_replay_link(struct shk_replay_links *l, const shk_val *e, uint64_t nonce, bool rejudged,
                    struct link_why *w);
void shk_replay_links_reset(struct shk_replay_links *l);
void shk_replay_links_free(struct shk_replay_links *l);

#endif
