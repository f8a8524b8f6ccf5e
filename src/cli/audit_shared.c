/* SPDX-License-Identifier: MIT */
/* `shackle audit verify --shared`: several hosts' logs of shared scopes, each
 * verified with its key, then checked to add up across them. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shackle/audit.h>
#include <shackle/canon.h>

#include "cli/audit_shared.h"
#include "cli/commands.h"

/* LOG is one host's chain: its files, rotated ones first, joined by ','. */
static int split_chain(char *arg, const char **files, size_t max, size_t *ret_n)
{
	size_t n = 0;

	for (char *save = NULL, *f = strtok_r(arg, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
		if (n == max)
			return -E2BIG;
		files[n++] = f;
	}
	*ret_n = n;
	return n ? 0 : -EINVAL;
}

static shk_val *scope_json(shk_doc *d, const shk_verify_shared_scope *s)
{
	shk_val *o = shk_object(d);
	int r = o ? 0 : -ENOMEM;

#define SET(k, v) do { if (r == 0) r = shk_object_set_str(o, k, v); } while (0)
	SET("scope", shk_cstring(d, s->id));
	SET("key", shk_cstring(d, s->key));
	SET("budget", shk_bool(d, s->budget));
	SET("breaker", shk_bool(d, s->breaker));
	SET("sessions", shk_int(d, (int64_t)s->sessions));
	SET("reads", shk_int(d, (int64_t)s->reads));
	SET("ops", shk_int(d, (int64_t)s->ops));
	SET("granted", shk_int(d, (int64_t)s->granted));
	SET("settled", shk_int(d, (int64_t)s->settled));
	SET("left", shk_int(d, (int64_t)s->left));
	SET("released", shk_int(d, (int64_t)s->released));
	SET("expired", shk_int(d, (int64_t)s->expired));
	SET("open", shk_int(d, (int64_t)s->open));
	SET("epochs", shk_int(d, (int64_t)s->epochs));
	SET("limit_uusd", shk_int(d, s->limit_uusd));
	SET("spent_uusd", shk_int(d, s->spent_uusd));
	SET("reserved_uusd", shk_int(d, s->reserved_uusd));
#undef SET
	return r == 0 ? o : NULL;
}

static int print_json(const shk_verify_shared_report *rep, const char *bad_log, const shk_verify_report *vr)
{
	shk_doc *d = NULL;
	shk_val *o, *arr, *f = NULL;
	char *text = NULL;
	size_t len;
	int r = shk_doc_new(&d);

	if (r < 0)
		return r;
	o = shk_object(d);
	arr = shk_array(d);
	r = o && arr ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && !bad_log && i < rep->nscopes; i++) {
		shk_val *s = scope_json(d, &rep->scopes[i]);
		r = s ? shk_array_append(arr, s) : -ENOMEM;
	}
	if (r == 0 && (bad_log || !rep->ok) && !(f = shk_object(d)))
		r = -ENOMEM;
	if (r == 0 && f && bad_log) {
		const shk_verify_finding *x = &vr->findings[0];
		shk_object_set_str(f, "log", shk_cstring(d, bad_log));
		shk_object_set_str(f, "class", shk_cstring(d, shk_verify_class_id(vr->result)));
		shk_object_set_str(f, "file", shk_cstring(d, vr->nfindings ? x->file : bad_log));
		shk_object_set_str(f, "line", shk_int(d, vr->nfindings ? (int64_t)x->line : 0));
		shk_object_set_str(f, "detail", shk_cstring(d, vr->nfindings ? x->detail : ""));
	} else if (r == 0 && f) {
		shk_object_set_str(f, "class", shk_cstring(d, "shared_spend_mismatch"));
		shk_object_set_str(f, "file", shk_cstring(d, rep->file));
		shk_object_set_str(f, "line", shk_int(d, (int64_t)rep->line));
		shk_object_set_str(f, "field", shk_cstring(d, rep->field));
		shk_object_set_str(f, "detail", shk_cstring(d, rep->detail));
	}
	if (r == 0 && ((r = shk_object_set_str(o, "ok", shk_bool(d, !bad_log && rep->ok))) < 0 ||
		       (r = shk_object_set_str(o, "scopes", arr)) < 0 ||
		       (r = shk_object_set_str(o, "finding", f ? f : shk_null(d))) < 0))
		r = -ENOMEM;
	if (r == 0 && (r = shk_canon_dump(o, &text, &len)) == 0)
		printf("%s\n", text);
	free(text);
	shk_doc_free(d);
	return r;
}

static void print_text(const shk_verify_shared_report *rep, size_t nlogs)
{
	for (size_t i = 0; i < rep->nscopes; i++) {
		const shk_verify_shared_scope *s = &rep->scopes[i];

		printf("scope %s (%s): %" PRIu64 " session(s)", s->id, s->key, s->sessions);
		if (s->budget)
			printf("; budget: %" PRIu64 " answers, %" PRIu64 " operations chained; %" PRIu64
			       " reservations granted, %" PRIu64 " settled by a report, %" PRIu64 " released, %"
			       PRIu64 " charged by the sweep, %" PRIu64 " still open (%" PRIu64 " reports left to "
			       "the lease at a session's end); after the last: %" PRId64 " uUSD spent, %" PRId64
			       " reserved (limit %" PRId64 ")", s->reads, s->ops, s->granted, s->settled, s->released,
			       s->expired, s->open, s->left, s->spent_uusd, s->reserved_uusd, s->limit_uusd);
		if (s->breaker)
			printf("; breaker: %" PRIu64 " epochs, recorded alike", s->epochs);
		printf("\n");
	}
	if (rep->ok)
		printf("adds up: %zu log(s), %" PRIu64 " entries, %" PRIu64 " session(s) with a shared "
		       "scope, %zu scope(s)\n", nlogs, rep->entries, rep->sessions, rep->nscopes);
	else
		printf("DOES NOT ADD UP: %s:%" PRIu64 ": %s: %s\n", rep->file, rep->line, rep->field, rep->detail);
}

#define CHAIN_MAX 64

/* Each log with its key (keys[0] for all when one is given), then across. */
int shk_audit_verify_shared(const uint8_t (*keys)[SHK_ED25519_PUBLIC_LEN], size_t nkeys, char **logs,
			    size_t nlogs, bool live, bool json)
{
	shk_verify_options vo = { .live = live };
	shk_verify_shared_report *rep = calloc(1, sizeof(*rep));
	shk_verify_report vr;
	const char **all = calloc(nlogs * CHAIN_MAX, sizeof(*all));
	char **dups = calloc(nlogs, sizeof(*dups));
	const char *bad = NULL;
	size_t nall = 0, n;
	int r = rep && all && dups ? 0 : -ENOMEM, status = 2;

	for (size_t i = 0; r == 0 && i < nlogs; i++) {
		char *name = logs[i];

		if (!(dups[i] = strdup(name)) || (r = split_chain(dups[i], all + nall, CHAIN_MAX, &n)) < 0) {
			r = r < 0 ? r : -ENOMEM;
			shk_cli_error("audit", "%s: %s", name, r == -ENOMEM ? strerror(ENOMEM) :
				      r == -E2BIG ? "more than 64 files in one chain" : "expected FILE[,FILE...]");
			break;
		}
		r = shk_verify_files(all + nall, n, keys[nkeys == 1 ? 0 : i], &vo, &vr);
		nall += n;
		if (r < 0)
			shk_cli_error("audit", "verify %s: %s", name, strerror(-r));
		else if (vr.result != SHK_VERIFY_OK) {
			bad = name;
			status = vr.result == SHK_VERIFY_IO ? 2 : 1;
			break;
		}
	}
	if (r == 0 && !bad && (r = shk_verify_shared(all, nall, rep)) < 0)
		shk_cli_error("audit", "verify --shared: %s%s%s", rep->file, rep->file[0] ? ": " : "", strerror(-r));
	if (r == 0) {
		if (json)
			print_json(rep, bad, &vr);
		else if (bad)
			printf("NOT INTACT: %s: %s%s%s:%" PRIu64 ": %s\n", bad, shk_verify_class_name(vr.result),
			       vr.nfindings ? ": " : "", vr.nfindings ? vr.findings[0].file : "",
			       vr.nfindings ? vr.findings[0].line : 0, vr.nfindings ? vr.findings[0].detail : "");
		else
			print_text(rep, nlogs);
		if (!bad)
			status = rep->ok ? 0 : 1;
	}
	for (size_t i = 0; dups && i < nlogs; i++)
		free(dups[i]);
	free(dups);
	free(rep);
	free(all);
	return status;
}
