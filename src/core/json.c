/* SPDX-License-Identifier: MIT */
/*
 * The immutable JSON value model: an arena document, constructors, sorted
 * objects, Python-`==` equality and the jansson-based parser.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/json_internal.h"
#include "core/policy_pos.h"

/* ---- arena --------------------------------------------------------------- */

#define CHUNK_SIZE 8192
#define ALIGN 16

struct shk_chunk {
	struct shk_chunk *next;
	size_t used, size;
	_Alignas(ALIGN) unsigned char data[];
};

struct shk_doc {
	struct shk_chunk *head; /* the chunk new small allocations come from */
	void *last;             /* most recent allocation in head (grown in place) */
	size_t last_size;
	void *scratch;          /* jansson's blocks during a parse (json_scratch.c) */
	size_t scratch_size;    /* kept across resets, for the next line */
};

static inline size_t round_up(size_t n)
{
	return (n + (ALIGN - 1)) & ~(size_t)(ALIGN - 1);
}

static struct shk_chunk *chunk_new(size_t size)
{
	struct shk_chunk *c;

	if (size > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + size);
	if (!c)
		return NULL;
	c->next = NULL;
	c->used = 0;
	c->size = size;
	return c;
}

static void *arena_alloc(shk_doc *doc, size_t n)
{
	struct shk_chunk *c = doc->head;
	void *p;

	if (n == 0)
		n = 1;
	if (n > SIZE_MAX - ALIGN)
		return NULL;
	n = round_up(n);
	if (n > CHUNK_SIZE / 4) {
		/* Big blocks get a chunk of their own behind head, so the free
		 * space left in head is not thrown away. */
		struct shk_chunk *big = chunk_new(n);
		if (!big)
			return NULL;
		big->used = n;
		if (c) {
			big->next = c->next;
			c->next = big;
		} else {
			doc->head = big;
			doc->last = NULL;
		}
		return big->data;
	}
	if (!c || c->size - c->used < n) {
		c = chunk_new(CHUNK_SIZE);
		if (!c)
			return NULL;
		c->next = doc->head;
		doc->head = c;
	}
	p = c->data + c->used;
	c->used += n;
	doc->last = p;
	doc->last_size = n;
	return p;
}

/* Grow a block to new_size bytes, in place when it is the newest one. */
static void *arena_grow(shk_doc *doc, void *old, size_t old_size, size_t new_size)
{
	struct shk_chunk *c = doc->head;
	void *p;

	if (old && old == doc->last && new_size <= SIZE_MAX - ALIGN) {
		size_t want = round_up(new_size);
		size_t start = (size_t)((unsigned char *)old - c->data);
		if (want <= CHUNK_SIZE / 4 && c->used == start + doc->last_size &&
		    c->size - start >= want) {
			c->used = start + want;
			doc->last_size = want;
			return old;
		}
	}
	p = arena_alloc(doc, new_size);
	if (p && old && old_size)
		memcpy(p, old, old_size);
	return p;
}

int shk_doc_new(shk_doc **ret_doc)
{
	shk_doc *doc;

	if (!ret_doc)
		return -EINVAL;
	doc = calloc(1, sizeof(*doc));
	if (!doc)
		return -ENOMEM;
	*ret_doc = doc;
	return 0;
}

void shk_doc_free(shk_doc *doc)
{
	struct shk_chunk *c, *next;

	if (!doc)
		return;
	for (c = doc->head; c; c = next) {
		next = c->next;
		free(c);
	}
	free(doc->scratch);
	free(doc);
}

void shk_doc_reset(shk_doc *doc)
{
	struct shk_chunk *keep = NULL, *c, *next;

	if (!doc)
		return;
	for (c = doc->head; c; c = next) {
		next = c->next;
		if (!keep && c->size == CHUNK_SIZE)
			keep = c;
		else
			free(c);
	}
	if (keep) {
		keep->next = NULL;
		keep->used = 0;
	}
	doc->head = keep;
	doc->last = NULL;
	doc->last_size = 0;
}

/* ---- constructors -------------------------------------------------------- */

static shk_val *val_new(shk_doc *doc, shk_type t)
{
	shk_val *v;

	if (!doc)
		return NULL;
	v = arena_alloc(doc, sizeof(*v));
	if (!v)
		return NULL;
	memset(v, 0, sizeof(*v));
	v->type = t;
	v->doc = doc;
	return v;
}

shk_val *shk_null(shk_doc *doc)
{
	return val_new(doc, SHK_NULL);
}

shk_val *shk_bool(shk_doc *doc, bool b)
{
	shk_val *v = val_new(doc, SHK_BOOL);
	if (v)
		v->u.b = b;
	return v;
}

shk_val *shk_int(shk_doc *doc, int64_t i)
{
	shk_val *v = val_new(doc, SHK_INT);
	if (v)
		v->u.i = i;
	return v;
}

shk_val *shk_real(shk_doc *doc, double d)
{
	shk_val *v = val_new(doc, SHK_REAL);
	if (v)
		v->u.d = d;
	return v;
}

shk_val *shk_string(shk_doc *doc, const char *s, size_t len)
{
	shk_val *v;
	char *copy;

	if (!doc || (!s && len) || len == SIZE_MAX)
		return NULL;
	v = val_new(doc, SHK_STRING);
	copy = v ? arena_alloc(doc, len + 1) : NULL;
	if (!copy)
		return NULL;
	if (len)
		memcpy(copy, s, len);
	copy[len] = '\0'; /* for callers that want a C string; len is authoritative */
	v->u.str.s = copy;
	v->u.str.len = len;
	return v;
}

shk_val *shk_cstring(shk_doc *doc, const char *s)
{
	return s ? shk_string(doc, s, strlen(s)) : NULL;
}

shk_val *shk_array(shk_doc *doc)
{
	return val_new(doc, SHK_ARRAY);
}

shk_val *shk_object(shk_doc *doc)
{
	return val_new(doc, SHK_OBJECT);
}

shk_val *shk_foreign(shk_doc *doc)
{
	return val_new(doc, SHK_FOREIGN);
}

/* ---- containers ---------------------------------------------------------- */

/* Make room for one more element of size elem in a container array. */
static int grow(shk_doc *doc, void **items, size_t len, size_t *cap, size_t elem)
{
	size_t ncap;
	void *p;

	if (len < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 4;
	if (ncap < *cap || ncap > SIZE_MAX / elem)
		return -ENOMEM;
	p = arena_grow(doc, *items, len * elem, ncap * elem);
	if (!p)
		return -ENOMEM;
	*items = p;
	*cap = ncap;
	return 0;
}

int shk_array_append(shk_val *array, shk_val *item)
{
	void *items;
	int r;

	if (!array || !item || array->type != SHK_ARRAY || item->doc != array->doc)
		return -EINVAL;
	items = array->u.arr.items;
	r = grow(array->doc, &items, array->u.arr.len, &array->u.arr.cap, sizeof(shk_val *));
	if (r < 0)
		return r;
	array->u.arr.items = items;
	array->u.arr.items[array->u.arr.len++] = item;
	return 0;
}

/* Binary search among the string keys; *ret_pos is the insertion point. */
static bool obj_find(const shk_val *o, const char *key, size_t keylen, size_t *ret_pos)
{
	size_t lo = 0, hi = o->u.obj.nstr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const shk_val *k = o->u.obj.m[mid].key;
		int c = shk_key_cmp(k->u.str.s, k->u.str.len, key, keylen);
		if (c == 0) {
			*ret_pos = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_pos = lo;
	return false;
}

int shk_object_set(shk_val *object, shk_val *key, shk_val *value)
{
	shk_member *m;
	size_t pos;
	void *items;
	int r;

	if (!object || !key || !value || object->type != SHK_OBJECT ||
	    key->doc != object->doc || value->doc != object->doc)
		return -EINVAL;
	if (key->type == SHK_STRING) {
		if (obj_find(object, key->u.str.s, key->u.str.len, &pos))
			return -EEXIST;
	} else {
		pos = object->u.obj.len;
	}
	items = object->u.obj.m;
	r = grow(object->doc, &items, object->u.obj.len, &object->u.obj.cap, sizeof(shk_member));
	if (r < 0)
		return r;
	m = object->u.obj.m = items;
	memmove(m + pos + 1, m + pos, (object->u.obj.len - pos) * sizeof(*m));
	m[pos].key = key;
	m[pos].value = value;
	object->u.obj.len++;
	if (key->type == SHK_STRING)
		object->u.obj.nstr++;
	return 0;
}

int shk_object_set_str(shk_val *object, const char *key, shk_val *value)
{
	shk_val *k;

	if (!object || !key || object->type != SHK_OBJECT)
		return -EINVAL;
	k = shk_cstring(object->doc, key);
	if (!k)
		return -ENOMEM;
	return shk_object_set(object, k, value);
}

int shk_object_put(shk_val *object, const char *key, shk_val *value)
{
	return value ? shk_object_set_str(object, key, value) : -ENOMEM;
}

/* ---- accessors ----------------------------------------------------------- */

shk_type shk_val_type(const shk_val *v)
{
	/* NULL is not a value JSON can carry. */
	return v ? v->type : SHK_FOREIGN;
}

bool shk_val_bool(const shk_val *v)
{
	return v && v->type == SHK_BOOL ? v->u.b : false;
}

int64_t shk_val_int(const shk_val *v)
{
	return v && v->type == SHK_INT ? v->u.i : 0;
}

double shk_val_real(const shk_val *v)
{
	return v && v->type == SHK_REAL ? v->u.d : 0.0;
}

bool shk_val_number(const shk_val *v, double *ret_d)
{
	double d;

	if (!v)
		return false;
	switch (v->type) {
	case SHK_BOOL: d = v->u.b ? 1.0 : 0.0; break;
	case SHK_INT: d = (double)v->u.i; break;
	case SHK_REAL: d = v->u.d; break;
	default: return false;
	}
	if (ret_d)
		*ret_d = d;
	return true;
}

const char *shk_val_str(const shk_val *v, size_t *ret_len)
{
	if (!v || v->type != SHK_STRING) {
		if (ret_len)
			*ret_len = 0;
		return NULL;
	}
	if (ret_len)
		*ret_len = v->u.str.len;
	return v->u.str.s;
}

size_t shk_val_len(const shk_val *v)
{
	if (!v)
		return 0;
	if (v->type == SHK_ARRAY)
		return v->u.arr.len;
	if (v->type == SHK_OBJECT)
		return v->u.obj.len;
	return 0;
}

const shk_val *shk_array_at(const shk_val *array, size_t i)
{
	if (!array || array->type != SHK_ARRAY || i >= array->u.arr.len)
		return NULL;
	return array->u.arr.items[i];
}

const shk_val *shk_object_key_at(const shk_val *object, size_t i)
{
	if (!object || object->type != SHK_OBJECT || i >= object->u.obj.len)
		return NULL;
	return object->u.obj.m[i].key;
}

const shk_val *shk_object_value_at(const shk_val *object, size_t i)
{
	if (!object || object->type != SHK_OBJECT || i >= object->u.obj.len)
		return NULL;
	return object->u.obj.m[i].value;
}

const shk_val *shk_object_getn(const shk_val *object, const char *key, size_t keylen)
{
	size_t pos;

	if (!object || object->type != SHK_OBJECT || (!key && keylen))
		return NULL;
	if (!obj_find(object, key, keylen, &pos))
		return NULL;
	return object->u.obj.m[pos].value;
}

const shk_val *shk_object_get(const shk_val *object, const char *key)
{
	return key ? shk_object_getn(object, key, strlen(key)) : NULL;
}

bool shk_val_str_eq(const shk_val *v, const char *s)
{
	size_t n;

	if (!v || !s || v->type != SHK_STRING)
		return false;
	n = strlen(s);
	return v->u.str.len == n && memcmp(v->u.str.s, s, n) == 0;
}

/* ---- equality ------------------------------------------------------------ */

/* Python compares int and float exactly, never through a rounded double. */
static bool int_eq_real(int64_t i, double d)
{
	int64_t t;

	if (!(d >= -0x1p63 && d < 0x1p63)) /* also false for NaN */
		return false;
	t = (int64_t)d;
	return (double)t == d && t == i;
}

static bool num_equal(const shk_val *a, const shk_val *b)
{
	if (a->type == SHK_REAL && b->type == SHK_REAL)
		return a->u.d == b->u.d;
	if (a->type == SHK_REAL || b->type == SHK_REAL) {
		const shk_val *r = a->type == SHK_REAL ? a : b;
		const shk_val *o = a->type == SHK_REAL ? b : a;
		return int_eq_real(o->type == SHK_INT ? o->u.i : (int64_t)o->u.b, r->u.d);
	}
	return (a->type == SHK_INT ? a->u.i : (int64_t)a->u.b) ==
	       (b->type == SHK_INT ? b->u.i : (int64_t)b->u.b);
}

static bool is_num(const shk_val *v)
{
	return v->type == SHK_BOOL || v->type == SHK_INT || v->type == SHK_REAL;
}

static bool val_equal(const shk_val *a, const shk_val *b, int depth);

/* Members with non-string keys (only built through the API) have no order:
 * each one of a must find an equal key with an equal value in b. */
static bool odd_members_equal(const shk_val *a, const shk_val *b, int depth)
{
	for (size_t i = a->u.obj.nstr; i < a->u.obj.len; i++) {
		bool found = false;
		for (size_t j = b->u.obj.nstr; j < b->u.obj.len && !found; j++)
			found = val_equal(a->u.obj.m[i].key, b->u.obj.m[j].key, depth) &&
				val_equal(a->u.obj.m[i].value, b->u.obj.m[j].value, depth);
		if (!found)
			return false;
	}
	return true;
}

static bool val_equal(const shk_val *a, const shk_val *b, int depth)
{
	if (!a || !b || depth > SHK_JSON_HARD_DEPTH)
		return false;
	if (is_num(a) && is_num(b))
		return num_equal(a, b);
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case SHK_NULL:
		return true;
	case SHK_STRING:
		return a->u.str.len == b->u.str.len &&
		       (a->u.str.len == 0 || memcmp(a->u.str.s, b->u.str.s, a->u.str.len) == 0);
	case SHK_ARRAY:
		if (a->u.arr.len != b->u.arr.len)
			return false;
		for (size_t i = 0; i < a->u.arr.len; i++)
			if (!val_equal(a->u.arr.items[i], b->u.arr.items[i], depth + 1))
				return false;
		return true;
	case SHK_OBJECT:
		if (a->u.obj.len != b->u.obj.len || a->u.obj.nstr != b->u.obj.nstr)
			return false;
		for (size_t i = 0; i < a->u.obj.nstr; i++) {
			const shk_member *x = &a->u.obj.m[i], *y = &b->u.obj.m[i];
			if (!val_equal(x->key, y->key, depth + 1) ||
			    !val_equal(x->value, y->value, depth + 1))
				return false;
		}
		return odd_members_equal(a, b, depth + 1);
	default: /* FOREIGN: unequal even to itself */
		return false;
	}
}

bool shk_val_equal(const shk_val *a, const shk_val *b)
{
	return val_equal(a, b, 0);
}

/* ---- copy ---------------------------------------------------------------- */

static shk_val *val_copy(shk_doc *doc, const shk_val *v, int depth)
{
	shk_val *c;

	if (!doc || !v || depth > SHK_JSON_HARD_DEPTH)
		return NULL;
	if (v->type == SHK_STRING)
		return shk_string(doc, v->u.str.s, v->u.str.len);
	c = val_new(doc, v->type);
	if (!c)
		return NULL;
	c->u = v->u;
	if (v->type == SHK_ARRAY && v->u.arr.len) {
		size_t n = v->u.arr.len;
		c->u.arr.cap = n;
		c->u.arr.items = n <= SIZE_MAX / sizeof(shk_val *) ?
			arena_alloc(doc, n * sizeof(shk_val *)) : NULL;
		if (!c->u.arr.items)
			return NULL;
		for (size_t i = 0; i < n; i++)
			if (!(c->u.arr.items[i] = val_copy(doc, v->u.arr.items[i], depth + 1)))
				return NULL;
	} else if (v->type == SHK_OBJECT && v->u.obj.len) {
		size_t n = v->u.obj.len;
		c->u.obj.cap = n;
		c->u.obj.m = n <= SIZE_MAX / sizeof(shk_member) ?
			arena_alloc(doc, n * sizeof(shk_member)) : NULL;
		if (!c->u.obj.m)
			return NULL;
		/* Already in sorted order: copy member by member, no re-sort. */
		for (size_t i = 0; i < n; i++) {
			c->u.obj.m[i].key = val_copy(doc, v->u.obj.m[i].key, depth + 1);
			c->u.obj.m[i].value = val_copy(doc, v->u.obj.m[i].value, depth + 1);
			if (!c->u.obj.m[i].key || !c->u.obj.m[i].value)
				return NULL;
		}
	} else if (v->type == SHK_ARRAY || v->type == SHK_OBJECT) {
		memset(&c->u, 0, sizeof(c->u));
	}
	return c;
}

shk_val *shk_val_copy(shk_doc *doc, const shk_val *v)
{
	return val_copy(doc, v, 0);
}

/* ---- parsing ------------------------------------------------------------- */

__attribute__((format(printf, 5, 6)))
static void set_error(shk_parse_error *err, const char *source, int line, int column,
                      const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	snprintf(err->source, sizeof(err->source), "%s", source ? source : "<input>");
	err->line = line > 0 ? line : 0;
	err->column = column > 0 ? column : 0;
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
}

static int member_cmp(const void *x, const void *y)
{
	const shk_member *a = x, *b = y;

	return shk_key_cmp(a->key->u.str.s, a->key->u.str.len, b->key->u.str.s, b->key->u.str.len);
}

/* Sorting once is O(n log n); sorted insertion would be quadratic. Up to
 * a few members (every SDK message), insertion is cheaper than qsort's
 * setup and indirect calls. */
static void sort_members(shk_member *m, size_t n)
{
	if (n > 12) {
		qsort(m, n, sizeof(*m), member_cmp);
		return;
	}
	for (size_t i = 1; i < n; i++) {
		shk_member x = m[i];
		size_t k = i;

		for (; k > 0 && member_cmp(&m[k - 1], &x) > 0; k--)
			m[k] = m[k - 1];
		m[k] = x;
	}
}

static shk_val *from_jansson(shk_doc *doc, json_t *j, int *ret_err);

static shk_val *object_from_jansson(shk_doc *doc, json_t *j, int *ret_err)
{
	size_t n = json_object_size(j), i = 0;
	shk_val *o = shk_object(doc);
	shk_member *m;

	if (!o || n > SIZE_MAX / sizeof(*m))
		return NULL;
	if (n == 0)
		return o;
	m = arena_alloc(doc, n * sizeof(*m));
	if (!m)
		return NULL;
	for (void *it = json_object_iter(j); it && i < n; it = json_object_iter_next(j, it), i++) {
		m[i].key = shk_string(doc, json_object_iter_key(it), json_object_iter_key_len(it));
		m[i].value = m[i].key ? from_jansson(doc, json_object_iter_value(it), ret_err) : NULL;
		if (!m[i].value)
			return NULL;
	}
	sort_members(m, i);
	for (size_t k = 1; k < i; k++)
		if (member_cmp(&m[k - 1], &m[k]) == 0) {
			*ret_err = -EEXIST;
			return NULL;
		}
	o->u.obj.m = m;
	o->u.obj.len = o->u.obj.cap = o->u.obj.nstr = i;
	return o;
}

static shk_val *from_jansson(shk_doc *doc, json_t *j, int *ret_err)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return object_from_jansson(doc, j, ret_err);
	case JSON_ARRAY: {
		size_t n = json_array_size(j);
		shk_val *a = shk_array(doc);
		if (!a || n > SIZE_MAX / sizeof(shk_val *))
			return NULL;
		if (n == 0)
			return a;
		a->u.arr.items = arena_alloc(doc, n * sizeof(shk_val *));
		if (!a->u.arr.items)
			return NULL;
		for (size_t i = 0; i < n; i++)
			if (!(a->u.arr.items[i] = from_jansson(doc, json_array_get(j, i), ret_err)))
				return NULL;
		a->u.arr.len = a->u.arr.cap = n;
		return a;
	}
	case JSON_STRING:
		return shk_string(doc, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
		return shk_int(doc, (int64_t)json_integer_value(j));
	case JSON_REAL:
		return shk_real(doc, json_real_value(j));
	case JSON_TRUE:
		return shk_bool(doc, true);
	case JSON_FALSE:
		return shk_bool(doc, false);
	case JSON_NULL:
		return shk_null(doc);
	}
	return NULL;
}

static void jansson_error(shk_parse_error *err, const char *source, const char *text, size_t len,
			  const json_error_t *je)
{
	const char *what = NULL;
	char msg[sizeof(err->text)];
	int line, col;

	shk_json_explain_error(text, len, je, &line, &col, msg, sizeof(msg));
	if (json_error_code(je) == json_error_numeric_overflow)
		what = strstr(je->text, "integer") ?
			"integer outside the 64-bit signed range (-2^63..2^63-1)" :
			"number outside the range of a double";
	if (what)
		set_error(err, source, line, col, "%s (%s)", what, msg);
	else
		set_error(err, source, line, col, "%s", msg);
}

/*
 * jansson takes 6 to 10 bytes of blocks per byte of input; past the
 * scratch kept in the document they are malloc's, so that a large input
 * does not leave a large buffer behind in a document that lives on.
 */
#define SCRATCH_MIN 4096
#define SCRATCH_MAX 16384

static bool scratch_begin(shk_doc *doc, size_t len)
{
	size_t want = len < (SCRATCH_MAX - 1024) / 8 ? 8 * len + 1024 : SCRATCH_MAX;

	want = want < SCRATCH_MIN ? SCRATCH_MIN : want;
	if (doc->scratch_size < want) {
		void *p = malloc(want);

		if (!p)
			return false;
		free(doc->scratch);
		doc->scratch = p;
		doc->scratch_size = want;
	}
	return shk_json_scratch_begin(doc->scratch, doc->scratch_size);
}

int shk_json_parse(shk_doc *doc, const char *text, size_t len, const char *source,
                   shk_val **ret_val, shk_parse_error *err)
{
	const size_t flags = JSON_DECODE_ANY | JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES;
	json_error_t je;
	json_t *j;
	shk_val *v;
	bool scratch;
	int r = -ENOMEM;

	if (!source)
		source = "<input>";
	if (!doc || (!text && len) || !ret_val) {
		set_error(err, source, 0, 0, "invalid arguments");
		return -EINVAL;
	}
	scratch = scratch_begin(doc, len);
	j = json_loadb(text ? text : "", len, flags, &je);
	if (!j) {
		if (scratch)
			shk_json_scratch_end();
		jansson_error(err, source, text, len, &je);
		return json_error_code(&je) == json_error_out_of_memory ? -ENOMEM : -EINVAL;
	}
	v = from_jansson(doc, j, &r);
	json_decref(j);
	if (scratch)
		shk_json_scratch_end();
	if (!v) {
		if (r == -EEXIST) {
			set_error(err, source, 0, 0, "duplicate object key");
			return -EINVAL;
		}
		set_error(err, source, 0, 0, "out of memory");
		return -ENOMEM;
	}
	*ret_val = v;
	return 0;
}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

int shk_json_load_file(shk_doc *doc, const char *path, shk_val **ret_val, shk_parse_error *err)
{
	__attribute__((cleanup(fclosep))) FILE *f = NULL;
	__attribute__((cleanup(freep))) char *buf = NULL;
	size_t len = 0, cap = 0;

	if (!path) {
		set_error(err, "<null>", 0, 0, "no file name");
		return -EINVAL;
	}
	f = fopen(path, "rbe");
	if (!f) {
		int e = errno;
		set_error(err, path, 0, 0, "cannot open: %s", strerror(e));
		return -e;
	}
	for (;;) {
		size_t n;
		if (cap - len < 4096) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nbuf = ncap > cap ? realloc(buf, ncap) : NULL;
			if (!nbuf) {
				set_error(err, path, 0, 0, "out of memory reading the file");
				return -ENOMEM;
			}
			buf = nbuf;
			cap = ncap;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				int e = errno ? errno : EIO;
				set_error(err, path, 0, 0, "cannot read: %s", strerror(e));
				return -e;
			}
			break;
		}
	}
	return shk_json_parse(doc, buf, len, path, ret_val, err);
}
