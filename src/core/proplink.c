/* SPDX-License-Identifier: MIT */
/*
 * Which exec carries out which proposed command (shackle/proplink.h).
 * Pure: commands are hashed as they are read, nothing is copied.
 */
#include <string.h>

#include <shackle/proplink.h>

#include "core/sha256.h"

/* A command line and an argv are hashed apart: "s" + bytes, "a" + each
 * element and its NUL. */
static void cmd_line(const char *s, size_t len, shk_proplink_cmd *ret)
{
	shk_sha256 h;

	shk_sha256_init(&h);
	shk_sha256_update(&h, "s", 1);
	shk_sha256_update(&h, s, len);
	shk_sha256_final(&h, ret->sha256);
}

static bool input_argv(const shk_val *a, shk_proplink_cmd *ret)
{
	size_t n = shk_val_len(a), len;
	shk_sha256 h;

	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *s = shk_val_str(shk_array_at(a, i), &len);

		/* an element with a NUL is no argv an exec can have */
		if (!s || memchr(s, 0, len))
			return false;
	}
	shk_sha256_init(&h);
	shk_sha256_update(&h, "a", 1);
	for (size_t i = 0; i < n; i++) {
		const char *s = shk_val_str(shk_array_at(a, i), &len);

		shk_sha256_update(&h, s, len + 1);
	}
	shk_sha256_final(&h, ret->sha256);
	return true;
}

static const shk_val *command_member(const shk_val *input)
{
	const shk_val *v;

	if (shk_val_type(input) != SHK_OBJECT)
		return NULL;
	v = shk_object_get(input, "command");
	return v ? v : shk_object_get(input, "cmd");
}

bool shk_proplink_names_command(const shk_val *input)
{
	return command_member(input) != NULL;
}

bool shk_proplink_proposed(const shk_val *input, shk_proplink_cmd *ret)
{
	const shk_val *v = command_member(input);
	size_t len;
	const char *s;

	if (shk_val_type(v) == SHK_ARRAY)
		return input_argv(v, ret);
	if (!(s = shk_val_str(v, &len)) || len == 0 || memchr(s, 0, len))
		return false;
	cmd_line(s, len, ret);
	return true;
}

/* ---- shells ---------------------------------------------------------------- */

static bool is_shell(const char *path)
{
	static const char *const shells[] = { "sh", "bash", "rbash", "dash", "zsh", "ksh", "mksh", "pdksh",
	                                       "ash", "yash", "posh" };
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (!strcmp(base, shells[i]))
			return true;
	return false;
}

/* The command string of `SHELL [options] -c STRING ...`, or NULL. Options
 * as bash and dash read them: clusters of -x / +x, where -c asks for a
 * command string and o / O take the next word; --rcfile and --init-file
 * take one too; the first word that is no option is the string. */
static const char *command_string(const char *const *argv, size_t argc)
{
	bool c = false;
	size_t i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--") || !strcmp(a, "-")) {
			i++;
			break;
		}
		if (!strncmp(a, "--", 2)) {
			if (!strcmp(a, "--rcfile") || !strcmp(a, "--init-file"))
				i++;
			continue;
		}
		if ((a[0] != '-' && a[0] != '+') || !a[1])
			break;
		for (const char *p = a + 1; *p; p++) {
			if (*p == 'c' && a[0] == '-')
				c = true;
			else if (*p == 'o' || *p == 'O')
				i++;
		}
	}
	return c && i < argc ? argv[i] : NULL;
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* A character that ends an unquoted word. */
static bool word_end(char ch)
{
	return !ch || blank(ch) || ch == '\n' || strchr(";&|<>()", ch);
}

/* Hash the shell word at *ps with its quoting taken off ('...', "..." with
 * \ before $ ` " \ newline, \x outside quotes); *ps ends after it. false for
 * an unterminated quote or an empty word. */
static bool unquote_word(const char **ps, shk_proplink_cmd *ret)
{
	const char *p = *ps;
	shk_sha256 h;
	size_t n = 0;

	shk_sha256_init(&h);
	shk_sha256_update(&h, "s", 1);
	while (!word_end(*p)) {
		if (*p == '\'') {
			const char *q = strchr(p + 1, '\'');

			if (!q)
				return false;
			shk_sha256_update(&h, p + 1, (size_t)(q - p - 1));
			n += (size_t)(q - p - 1);
			p = q + 1;
		} else if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (!*p)
					return false;
				if (*p == '\\' && p[1] == '\n') { /* a line continued */
					p++;
					continue;
				}
				if (*p == '\\' && p[1] && strchr("$`\"\\", p[1]))
					p++;
				shk_sha256_update(&h, p, 1);
				n++;
			}
			p++;
		} else if (*p == '\\') {
			if (!p[1])
				return false;
			if (p[1] != '\n') {
				shk_sha256_update(&h, p + 1, 1);
				n++;
			}
			p += 2;
		} else {
			shk_sha256_update(&h, p, 1);
			n++;
			p++;
		}
	}
	*ps = p;
	if (n == 0)
		return false;
	shk_sha256_final(&h, ret->sha256);
	return true;
}

/* Every `eval WORD` of a command string: the word, unquoted. */
static size_t eval_words(const char *s, shk_proplink_cmd *out, size_t max)
{
	size_t n = 0;

	for (const char *p = s; n < max && (p = strstr(p, "eval")); p += 4) {
		const char *w = p + 4;

		if ((p != s && !blank(p[-1]) && !strchr("\n;&|(", p[-1])) || !blank(*w))
			continue;
		while (blank(*w))
			w++;
		if (unquote_word(&w, &out[n]))
			n++;
	}
	return n;
}

size_t shk_proplink_exec_cmds(const char *path, const char *const *argv, size_t argc,
                              shk_proplink_cmd *out, size_t max)
{
	shk_sha256 h;
	const char *cs;
	size_t n = 0;

	if (!argc || !max)
		return 0;
	shk_sha256_init(&h);
	shk_sha256_update(&h, "a", 1);
	for (size_t i = 0; i < argc; i++)
		shk_sha256_update(&h, argv[i], strlen(argv[i]) + 1);
	shk_sha256_final(&h, out[n++].sha256);
	if (!path || !is_shell(path) || !(cs = command_string(argv, argc)) || !*cs)
		return n;
	if (n < max)
		cmd_line(cs, strlen(cs), &out[n++]);
	return n + eval_words(cs, out + n, max - n);
}

/* ---- the ring --------------------------------------------------------------- */

void shk_proplink_add(shk_proplink_ring *r, int64_t seq, const char *tool, const shk_proplink_cmd *cmd)
{
	shk_proplink_entry *e;
	size_t len = strnlen(tool, SHK_PROPLINK_TOOL_MAX - 1);

	/* cut on a character: the name goes into the log, which is UTF-8 */
	while (len && tool[len] && ((unsigned char)tool[len] & 0xc0) == 0x80)
		len--;
	if (r->n == SHK_PROPLINK_RING)
		shk_proplink_take(r, 0, NULL);
	e = &r->e[r->n++];
	memset(e, 0, sizeof(*e));
	e->seq = seq;
	e->known = cmd != NULL;
	if (cmd)
		e->cmd = *cmd;
	memcpy(e->tool, tool, len);
}

int shk_proplink_find(const shk_proplink_ring *r, const shk_proplink_cmd *cmds, size_t n)
{
	for (size_t i = 0; i < r->n; i++)
		for (size_t k = 0; r->e[i].known && k < n; k++)
			if (!memcmp(r->e[i].cmd.sha256, cmds[k].sha256, sizeof(cmds[k].sha256)))
				return (int)i;
	return -1;
}

int shk_proplink_index(const shk_proplink_ring *r, int64_t seq)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].seq == seq)
			return (int)i;
	return -1;
}

void shk_proplink_take(shk_proplink_ring *r, int i, shk_proplink_entry *ret)
{
	if (i < 0 || (size_t)i >= r->n)
		return;
	if (ret)
		*ret = r->e[i];
	memmove(&r->e[i], &r->e[i + 1], (r->n - (size_t)i - 1) * sizeof(r->e[0]));
	r->n--;
}
