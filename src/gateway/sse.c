/* SPDX-License-Identifier: MIT */
/*
 * Server-sent events (the WHATWG "text/event-stream" framing): lines ended by
 * CRLF, LF or CR; "field: value"; a blank line dispatches the event. Every
 * byte of an event is kept so that an event passed on is the one received.
 */
#include <errno.h>
#include <string.h>

#include "gateway/internal.h"

static void field(struct gw_sse *s, const char *line, size_t len)
{
	const char *colon = memchr(line, ':', len);
	size_t nlen = colon ? (size_t)(colon - line) : len;
	const char *v = colon ? colon + 1 : line + len;
	size_t vlen = len - (size_t)(v - line);

	if (vlen && *v == ' ')
		v++, vlen--;
	if (nlen == 5 && !memcmp(line, "event", 5)) {
		if (vlen >= sizeof(s->name))
			vlen = sizeof(s->name) - 1;
		memcpy(s->name, v, vlen);
		s->name[vlen] = 0;
	} else if (nlen == 4 && !memcmp(line, "data", 4)) {
		if (s->has_data)
			gw_buf_add(&s->data, "\n", 1);
		gw_buf_add(&s->data, v, vlen);
		s->has_data = true;
	}
	/* "id", "retry", comments (nlen 0) and unknown fields: kept in raw only. */
}

static int dispatch(struct gw_sse *s, gw_sse_cb cb, void *ctx)
{
	struct gw_sse_event ev = {
		.name = s->name, .data = s->data.p ? s->data.p : "", .data_len = s->data.len,
		.raw = s->raw.p ? s->raw.p : "", .raw_len = s->raw.len,
	};
	int r = 0;

	if (s->has_data || s->name[0])
		r = cb(ctx, &ev);
	s->raw.len = s->data.len = 0;
	s->name[0] = 0;
	s->has_data = false;
	return r;
}

static int end_line(struct gw_sse *s, gw_sse_cb cb, void *ctx)
{
	int r = 0;

	if (s->line.len == 0)
		r = dispatch(s, cb, ctx);
	else
		field(s, s->line.p, s->line.len);
	s->line.len = 0;
	return r;
}

/* A CR ends its line only once the next byte is known: the LF of a CRLF
 * belongs to the same line, so that an event's raw bytes end with it. */
int gw_sse_feed(struct gw_sse *s, const char *p, size_t n, gw_sse_cb cb, void *ctx)
{
	size_t max = s->max_event ? s->max_event : (16u << 20);

	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		int r;

		if (s->cr) {
			s->cr = false;
			if (c == '\n' && gw_buf_add(&s->raw, &c, 1) < 0)
				return -ENOMEM;
			if ((r = end_line(s, cb, ctx)) < 0)
				return r;
			if (c == '\n')
				continue;
		}
		if (gw_buf_add(&s->raw, &c, 1) < 0)
			return -ENOMEM;
		if (s->raw.len > max)
			return -E2BIG;
		if (c == '\r') {
			s->cr = true;
		} else if (c == '\n') {
			if ((r = end_line(s, cb, ctx)) < 0)
				return r;
		} else if (gw_buf_add(&s->line, &c, 1) < 0) {
			return -ENOMEM;
		}
	}
	return 0;
}

void gw_sse_free(struct gw_sse *s)
{
	gw_buf_free(&s->raw);
	gw_buf_free(&s->line);
	gw_buf_free(&s->data);
}
