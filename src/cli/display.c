/* SPDX-License-Identifier: MIT */
/*
 * What an operator's terminal may be shown of a string the agent chose: an
 * argv element, a program name, a unix path. A terminal acts on escape
 * sequences (erase the line, move the cursor, retitle the window), and
 * Unicode bidirectional controls reorder what is displayed: a held
 * `git push --force https://evil…` can be shown as `git push origin` that way. So only printable ASCII is shown as itself; every
 * other byte, UTF-8 included, is written \xNN. argv elements that a shell
 * would split or expand are quoted, so that word boundaries are visible,
 * and a summary cut short says how much is missing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/display.h"

static bool shown_as_is(unsigned char c)
{
	return c >= 0x20 && c < 0x7f;
}

/* Characters a shell takes literally in a word. */
static bool word_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("@%+=:,./_-", c) != NULL;
}

void shk_cli_put_text(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (shown_as_is(c) && c != '\\')
			fputc(c, f);
		else if (c == '\\')
			fputs("\\\\", f);
		else
			fprintf(f, "\\x%02x", c);
	}
}

/* One argv element (n bytes: a unix name may hold NULs) as a shell would
 * read it back: plain, '…', or $'…' with \xNN escapes when it holds bytes
 * that are not printable ASCII. */
static void put_arg_n(FILE *f, const char *s, size_t n)
{
	bool plain = n != 0, printable = true;

	for (size_t i = 0; i < n; i++) {
		plain = plain && word_char((unsigned char)s[i]);
		printable = printable && shown_as_is((unsigned char)s[i]);
	}
	if (plain) {
		fwrite(s, 1, n, f);
		return;
	}
	if (printable) {
		fputc('\'', f);
		for (size_t i = 0; i < n; i++)
			s[i] == '\'' ? fputs("'\\''", f) : fputc(s[i], f);
		fputc('\'', f);
		return;
	}
	fputs("$'", f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\'' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (shown_as_is(c))
			fputc(c, f);
		else
			fprintf(f, "\\x%02x", c);
	}
	fputc('\'', f);
}

static void put_arg(FILE *f, const char *s)
{
	put_arg_n(f, s, strlen(s));
}

const char *shk_cli_text(const char *s, char *buf, size_t len)
{
	FILE *f;
	long n;

	if (len == 0)
		return "?";
	/* fmemopen writes the terminating NUL after a write only: for "" the
	 * buffer would keep what it held (another field of the same line) */
	buf[0] = 0;
	if (!(f = fmemopen(buf, len, "w")))
		return "?";
	setvbuf(f, NULL, _IONBF, 0);
	shk_cli_put_text(f, s ? s : "?");
	n = ftell(f);
	fclose(f);
	buf[n >= 0 && (size_t)n < len ? (size_t)n : len - 1] = 0;
	return buf;
}

static const char *str(const shk_val *o, const char *k)
{
	const char *s = shk_val_str(shk_object_get(o, k), NULL);
	return s ? s : "?";
}

char *shk_cli_summary(const shk_val *params, size_t max)
{
	const shk_val *argv = shk_object_get(params, "argv");
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	if (shk_val_type(argv) == SHK_ARRAY) {
		for (size_t i = 0; i < shk_val_len(argv); i++) {
			if (i)
				fputc(' ', f);
			put_arg(f, shk_val_str(shk_array_at(argv, i), NULL) ?: "?");
		}
	} else if (shk_object_get(params, "unix")) {
		size_t ul = 0;
		const char *u = shk_val_str(shk_object_get(params, "unix"), &ul);

		fputs("unix ", f);
		u ? put_arg_n(f, u, ul) : put_arg(f, "?");
	} else if (shk_object_get(params, "addr")) {
		shk_cli_put_text(f, str(params, "proto"));
		fputc(' ', f);
		shk_cli_put_text(f, str(params, "addr"));
		fprintf(f, " port %lld", (long long)shk_val_int(shk_object_get(params, "port")));
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	if (len > max) {
		/* never cut silently: what follows may be what matters */
		char tail[96], *cut;
		int n = snprintf(tail, sizeof(tail), " ...[%zu more bytes here; the audit log has all]",
		                 len - max);

		if (!(cut = realloc(out, max + (size_t)n + 1))) {
			free(out);
			return NULL;
		}
		out = cut;
		memcpy(out + max, tail, (size_t)n + 1);
	}
	return out;
}

static void put_field(FILE *f, const shk_val *o, const char *k)
{
	shk_cli_put_text(f, str(o, k));
}

/* "held ID: WHAT -- shackle approve ID --session S (or reject; expires in N s)" */
static void put_pending(FILE *f, const shk_val *e)
{
	const shk_val *params = shk_object_get(e, "params");
	char *what = shk_cli_summary(params, 400);

	fputs("held ", f);
	put_field(f, e, "id");
	fputs(": ", f);
	if (!shk_object_get(params, "argv")) {
		put_field(f, e, "tool");
		fputc(' ', f);
	}
	fputs(what ? what : "(out of memory)", f);
	fputs(" -- shackle approve ", f);
	put_field(f, e, "id");
	fputs(" --session ", f);
	put_field(f, e, "session");
	fprintf(f, " (or reject; expires in %lld s)\n", (long long)shk_val_int(shk_object_get(e, "expires_in_s")));
	free(what);
}

/* "held ID STATE [by OP]: EFFECT (VERDICT REASON)" */
static void put_resolved(FILE *f, const shk_val *e, bool retry)
{
	const char *v = shk_val_str(shk_object_get(e, "verdict"), NULL);
	const char *op = shk_val_str(shk_object_get(e, "operator"), NULL);

	fputs("held ", f);
	put_field(f, e, "id");
	fputc(' ', f);
	put_field(f, e, "state");
	if (op) {
		fputs(" by ", f);
		shk_cli_put_text(f, op);
	}
	if (shk_val_str_eq(shk_object_get(e, "state"), "cancelled") && !v) {
		fputs(" (interrupted, or its process or the session ended)\n", f);
		return;
	}
	if (v && !strcmp(v, "ALLOW"))
		fputs(retry ? ": released, its retry passes once" : ": released", f);
	else
		fputs(v && !strcmp(v, "HITL") ? ": still held" : ": denied", f);
	if (v) {
		fputs(" (", f);
		shk_cli_put_text(f, v);
		fputc(' ', f);
		put_field(f, e, "reason");
		fputc(')', f);
	}
	fputc('\n', f);
}

void shk_cli_held_notice(FILE *f, const char *prog, const shk_val *event, bool retry)
{
	const shk_val *kind = shk_object_get(event, "event");

	char *line = NULL;
	size_t len = 0;
	FILE *m;

	if (!shk_val_str_eq(kind, "pending") && !shk_val_str_eq(kind, "resolved"))
		return;
	/* One write for the whole line: the agent shares this stderr, and its
	 * own writes would land between the pieces of an unbuffered stream. */
	m = open_memstream(&line, &len);
	if (!m)
		return;
	fprintf(m, "%s: ", prog);
	if (shk_val_str_eq(kind, "pending"))
		put_pending(m, event);
	else
		put_resolved(m, event, retry);
	if (fclose(m) == 0 && len)
		fwrite(line, 1, len, f);
	fflush(f);
	free(line);
}
