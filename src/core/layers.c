/* SPDX-License-Identifier: MIT */
#include <string.h>

#include <shackle/canon.h>
#include <shackle/layers.h>

#define NS_PER_S INT64_C(1000000000)

static bool window_expired(const shk_window *w, uint32_t duration_s, int64_t now_ns)
{
	if (w->count == 0)
		return true;
	/* Written as a subtraction that cannot overflow for any int64 pair we
	 * accept: a clock before start_ns keeps the window open. */
	if (now_ns <= w->start_ns)
		return false;
	return (uint64_t)now_ns - (uint64_t)w->start_ns >= (uint64_t)duration_s * (uint64_t)NS_PER_S;
}

uint32_t shk_window_count_at(const shk_window *w, uint32_t duration_s, int64_t now_ns)
{
	if (!w || duration_s == 0 || window_expired(w, duration_s, now_ns))
		return 0;
	return w->count;
}

bool shk_window_exceeded(const shk_window *w, uint32_t duration_s, uint32_t max_calls, int64_t now_ns)
{
	if (duration_s == 0 || max_calls == 0)
		return false;
	return shk_window_count_at(w, duration_s, now_ns) >= max_calls;
}

void shk_window_record(shk_window *w, uint32_t duration_s, int64_t now_ns)
{
	if (!w || duration_s == 0)
		return;
	if (window_expired(w, duration_s, now_ns)) {
		w->start_ns = now_ns;
		w->count = 0;
	}
	if (w->count < UINT32_MAX)
		w->count++;
}

bool shk_global_exceeded(uint64_t total_calls, uint64_t max_total_calls)
{
	return max_total_calls > 0 && total_calls >= max_total_calls;
}

struct signal {
	const char *text;
	size_t len;
};

#define SIG(s) { s, sizeof(s) - 1 }
static const struct signal signals[] = {
	SIG("401"), SIG("unauthorized"), SIG("403"), SIG("forbidden"), SIG("500"), SIG("502"),
	SIG("503"), SIG("504"), SIG("timeout"), SIG("connection refused"), SIG("connection reset"),
	SIG("permission denied"), SIG("rate limit"), SIG("quota exceeded"), SIG("invalid api key"),
	SIG("token expired"), SIG("model not found"), SIG("resource exhausted"),
	SIG("deadline exceeded"),
};
#undef SIG

static unsigned char lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

static const bool starts[256] = {
	['4'] = true, ['5'] = true, ['t'] = true, ['u'] = true, ['c'] = true, ['f'] = true,
	['p'] = true, ['q'] = true, ['r'] = true, ['i'] = true, ['m'] = true, ['d'] = true,
};

bool shk_error_signal_in(const char *text, size_t len)
{
	const unsigned char *t = (const unsigned char *)text;

	if (!text)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = lower(t[i]);

		/* Every signal starts with one of "45tucfpqrimd": skip others fast. */
		if (!starts[c])
			continue;
		for (size_t k = 0; k < sizeof(signals) / sizeof(signals[0]); k++) {
			const struct signal *sg = &signals[k];
			size_t j = 1;

			if ((unsigned char)sg->text[0] != c || sg->len > len - i)
				continue;
			while (j < sg->len && lower(t[i + j]) == (unsigned char)sg->text[j])
				j++;
			if (j == sg->len)
				return true;
		}
	}
	return false;
}

/* Decimal text of i (no printf: it may allocate). Returns the length. */
static int format_int(int64_t i, char *out)
{
	uint64_t u = i < 0 ? 0 - (uint64_t)i : (uint64_t)i;
	char tmp[24];
	int n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (i < 0)
		out[k++] = '-';
	while (n)
		out[k++] = tmp[--n];
	return k;
}

static bool signal_walk(const shk_val *v, int depth)
{
	char buf[40];
	const char *s;
	size_t len;
	int n;

	if (depth > SHK_CANON_MAX_DEPTH)
		return false;
	switch (shk_val_type(v)) {
	case SHK_STRING:
		s = shk_val_str(v, &len);
		return shk_error_signal_in(s, len);
	case SHK_INT:
		n = format_int(shk_val_int(v), buf);
		return shk_error_signal_in(buf, (size_t)n);
	case SHK_REAL:
		n = shk_canon_format_real(shk_val_real(v), buf, sizeof(buf));
		return n > 0 && shk_error_signal_in(buf, (size_t)n);
	case SHK_ARRAY:
		for (size_t i = 0; i < shk_val_len(v); i++)
			if (signal_walk(shk_array_at(v, i), depth + 1))
				return true;
		return false;
	case SHK_OBJECT:
		for (size_t i = 0; i < shk_val_len(v); i++)
			if (signal_walk(shk_object_key_at(v, i), depth + 1) ||
			    signal_walk(shk_object_value_at(v, i), depth + 1))
				return true;
		return false;
	default:
		return false;
	}
}

bool shk_error_signal_in_val(const shk_val *v)
{
	return signal_walk(v, 0);
}

uint32_t shk_effective_repeat_limit(uint32_t max_repeat_calls, bool amplification, bool signal)
{
	if (max_repeat_calls == 0 || !amplification || !signal)
		return max_repeat_calls;
	return max_repeat_calls > 1 ? max_repeat_calls - 1 : 1;
}
