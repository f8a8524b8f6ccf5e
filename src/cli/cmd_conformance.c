/* SPDX-License-Identifier: MIT */
/*
 * `shackle conformance [--verbose] FILE...` runs SHACKLE vector files;
 * `shackle conformance --seal FILE...` rewrites their canonical_hash and
 * vector_hash (for authoring the project's own fixtures).
 *
 * Exit status: 0 every vector passed, 1 at least one failed, 2 a file could
 * not be read or is not a vector file (reported as FILE:LINE:COLUMN or with
 * the fixture and field).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shackle/canon.h>
#include <shackle/decide.h>
#include <shackle/json.h>
#include <shackle/vector.h>

#include "cli/commands.h"

struct tally {
	unsigned passed, failed;
	bool verbose;
};

static void doc_freep(shk_doc **d)
{
	shk_doc_free(*d);
}
#define _cleanup_doc_ __attribute__((cleanup(doc_freep)))

/* The fixtures array of a file: {"fixtures": [...]} or a top-level array. */
static const shk_val *fixtures_of(const shk_val *top)
{
	if (shk_val_type(top) == SHK_ARRAY)
		return top;
	top = shk_object_get(top, "fixtures");
	return shk_val_type(top) == SHK_ARRAY ? top : NULL;
}

static bool check_hash(const char *file, const char *name, const char *what, const shk_val *want,
		       const shk_val *v, const char *skip)
{
	char got[SHK_SHA256_HEX_LEN + 1];

	if (!want)
		return true;
	if (shk_vector_digest_hex(v, skip, got) < 0) {
		printf("%s: %s: %s: cannot be computed (value not canonicalizable)\n", file, name, what);
		return false;
	}
	if (!shk_val_str_eq(want, got)) {
		printf("%s: %s: %s mismatch: vector says %s, computed %s\n", file, name, what,
		       shk_val_type(want) == SHK_STRING ? shk_val_str(want, NULL) : "(not a string)", got);
		return false;
	}
	return true;
}

static bool run_vector(const char *file, const shk_vector *vec, bool verbose)
{
	const shk_val *call = shk_object_get(vec->raw, "call");
	bool ok = check_hash(file, vec->name, "canonical_hash", vec->canonical_hash,
			     shk_object_get(call, "params"), NULL);
	shk_decision d;

	ok = check_hash(file, vec->name, "vector_hash", vec->vector_hash, vec->raw, "vector_hash") && ok;
	d = shk_decide(&vec->config, &vec->state, &vec->call);
	if (d.verdict != vec->expected_verdict || d.reason != vec->expected_reason) {
		printf("%s: %s: expected %s %s, got %s %s\n", file, vec->name, vec->expected_verdict_str,
		       vec->expected_reason_str, shk_verdict_str(d.verdict), shk_reason_str(d.reason));
		ok = false;
	} else if (verbose) {
		printf("%s: %s: %s %s%s\n", file, vec->name, shk_verdict_str(d.verdict),
		       shk_reason_str(d.reason), ok ? "" : " (hash failure above)");
	}
	return ok;
}

static int load(const char *file, shk_doc **ret_doc, const shk_val **ret_fixtures)
{
	shk_parse_error perr;
	shk_val *top = NULL;
	int r;

	memset(&perr, 0, sizeof(perr));
	if ((r = shk_doc_new(ret_doc)) < 0) {
		shk_cli_error("conformance", "%s: %s", file, strerror(-r));
		return r;
	}
	if ((r = shk_json_load_file(*ret_doc, file, &top, &perr)) < 0) {
		shk_cli_error("conformance", "%s:%d:%d: %s", perr.source[0] ? perr.source : file, perr.line,
			      perr.column, perr.text);
		return r;
	}
	*ret_fixtures = fixtures_of(top);
	if (!*ret_fixtures) {
		shk_cli_error("conformance", "%s:1:1: expected an array of vectors or an object with a \"fixtures\" array",
			      file);
		return -EINVAL;
	}
	return 0;
}

static int run_file(const char *file, struct tally *t)
{
	_cleanup_doc_ shk_doc *doc = NULL;
	const shk_val *fx = NULL;
	char err[512];
	int r;

	if ((r = load(file, &doc, &fx)) < 0)
		return r;
	for (size_t i = 0; i < shk_val_len(fx); i++) {
		shk_vector vec;

		if (shk_vector_load(shk_array_at(fx, i), &vec, err, sizeof(err)) < 0) {
			const char *n = shk_val_str(shk_object_get(shk_array_at(fx, i), "name"), NULL);
			shk_cli_error("conformance", "%s: fixture %zu (\"%s\"): %s", file, i, n ? n : "", err);
			return -EINVAL;
		}
		if (run_vector(file, &vec, t->verbose))
			t->passed++;
		else
			t->failed++;
	}
	return 0;
}

/* ---- --seal --------------------------------------------------------------- */

static int put(FILE *f, const shk_val *v)
{
	char *buf = NULL;
	size_t len;
	int r = shk_canon_dump(v, &buf, &len);

	if (r == 0)
		fwrite(buf, 1, len, f);
	free(buf);
	return r;
}

/* Indented JSON, keys in canonical order; scalars in canonical form. */
static int pretty(FILE *f, const shk_val *v, int ind)
{
	shk_type t = shk_val_type(v);
	size_t n = shk_val_len(v);
	int r = 0;

	if ((t != SHK_ARRAY && t != SHK_OBJECT) || n == 0)
		return put(f, v);
	fputc(t == SHK_ARRAY ? '[' : '{', f);
	for (size_t i = 0; r == 0 && i < n; i++) {
		fprintf(f, "%s\n%*s", i ? "," : "", ind + 2, "");
		if (t == SHK_OBJECT) {
			r = put(f, shk_object_key_at(v, i));
			fputs(": ", f);
			if (r == 0)
				r = pretty(f, shk_object_value_at(v, i), ind + 2);
		} else {
			r = pretty(f, shk_array_at(v, i), ind + 2);
		}
	}
	fprintf(f, "\n%*s%c", ind, "", t == SHK_ARRAY ? ']' : '}');
	return r;
}

/* A copy of fixture v in doc with fresh canonical_hash and vector_hash. */
static shk_val *sealed(shk_doc *doc, const shk_val *v)
{
	char hex[SHK_SHA256_HEX_LEN + 1];
	shk_val *o = shk_object(doc);

	for (size_t i = 0; o && i < shk_val_len(v); i++) {
		const shk_val *k = shk_object_key_at(v, i);
		if (shk_val_str_eq(k, "canonical_hash") || shk_val_str_eq(k, "vector_hash"))
			continue;
		if (shk_object_set(o, shk_val_copy(doc, k), shk_val_copy(doc, shk_object_value_at(v, i))) < 0)
			return NULL;
	}
	if (o && shk_vector_digest_hex(shk_object_get(shk_object_get(v, "call"), "params"), NULL, hex) == 0 &&
	    shk_object_set_str(o, "canonical_hash", shk_cstring(doc, hex)) < 0)
		return NULL;
	if (!o || shk_vector_digest_hex(o, NULL, hex) < 0 ||
	    shk_object_set_str(o, "vector_hash", shk_cstring(doc, hex)) < 0)
		return NULL;
	return o;
}

static int seal_file(const char *file)
{
	_cleanup_doc_ shk_doc *doc = NULL;
	const shk_val *fx = NULL;
	char tmp[4096];
	shk_val *arr;
	FILE *f;
	int r;

	if ((r = load(file, &doc, &fx)) < 0)
		return r;
	arr = shk_array(doc);
	for (size_t i = 0; arr && i < shk_val_len(fx); i++)
		if (shk_array_append(arr, sealed(doc, shk_array_at(fx, i))) < 0)
			arr = NULL;
	if (!arr) {
		shk_cli_error("conformance", "%s: cannot seal (out of memory or a vector is not canonicalizable)", file);
		return -EINVAL;
	}
	snprintf(tmp, sizeof(tmp), "%s.seal-tmp", file);
	f = fopen(tmp, "we");
	if (!f) {
		shk_cli_error("conformance", "%s: %m", tmp);
		return -errno;
	}
	fputs("{\"fixtures\": ", f);
	r = pretty(f, arr, 0);
	fputs("}\n", f);
	if (fclose(f) != 0 || r < 0 || rename(tmp, file) < 0) {
		shk_cli_error("conformance", "%s: cannot write the sealed file", file);
		unlink(tmp);
		return -EIO;
	}
	printf("%s: sealed %zu vectors\n", file, shk_val_len(fx));
	return 0;
}

static const struct shk_usage conformance_usage = { "conformance",
	"usage: shackle conformance [--verbose] FILE...\n"
	"       shackle conformance --seal FILE...\n\n"
	"Runs SHACKLE conformance vector files through decide() and prints\n"
	"`N passed, N failed`; --verbose names every vector. --seal rewrites the\n"
	"canonical_hash and vector_hash of each vector in place. Exit status: 0 all\n"
	"passed, 1 a vector failed, 2 bad usage or an unreadable file.\n" };

int shk_cmd_conformance(int argc, char **argv)
{
	struct tally t = { 0, 0, false };
	bool seal = false, bad = false;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
			t.verbose = true;
		} else if (!strcmp(argv[i], "--seal")) {
			seal = true;
		} else if (shk_cli_is_help(argv[i])) {
			return shk_cli_help(&conformance_usage);
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			return shk_cli_usage_error(&conformance_usage, "unknown option '%s'", argv[i]);
		}
	}
	if (i >= argc)
		return shk_cli_usage_error(&conformance_usage, "no vector files given");
	for (; i < argc; i++)
		if ((seal ? seal_file(argv[i]) : run_file(argv[i], &t)) < 0)
			bad = true;
	if (seal)
		return bad ? 2 : 0;
	printf("%u passed, %u failed\n", t.passed, t.failed);
	if (bad)
		return 2;
	return t.failed ? 1 : 0;
}
