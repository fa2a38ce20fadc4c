/* value.c - making, querying and printing values (see value.h). */
#include "tinspect/value.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/known_globals.h"
#include "core/value_build.h"
#include "util/strsort.h"
#include "tinspect/tensor.h"

/* ---- making ---- */

/* Every empty dict without attributes: ti_dict_push gives a dict its own on its first item. */
static ti_dict empty_dict;

#define NOMEM(err) TI_FAIL((err), TI_E_LIMIT, "metadata exceeds the memory ceiling")

ti_value *ti_value_new(ti_arena *a, ti_kind kind)
{
	ti_value *v = ti_arena_alloc(a, sizeof(*v));
	if (!v)
		return NULL;
	v->kind = kind;
	switch (kind) {
	case TI_DICT:
		v->as.dict = &empty_dict;
		break;
	case TI_GLOBAL:
		if (!(v->as.global = ti_arena_alloc(a, sizeof(*v->as.global))))
			return NULL;
		break;
	case TI_OBJECT:
		if (!(v->as.object = ti_arena_alloc(a, sizeof(*v->as.object))))
			return NULL;
		break;
	default:
		break;
	}
	return v;
}

ti_value *ti_value_new_int(ti_arena *a, int64_t i)
{
	ti_value *v = ti_value_new(a, TI_INT);
	if (v)
		v->as.integer = i;
	return v;
}

/* The bytes follow the value in one allocation; handing the value back leaves them where they are. */
ti_value *ti_value_new_str(ti_arena *a, ti_kind kind, const char *data, size_t size)
{
	if (size > SIZE_MAX - sizeof(ti_value) - 1)
		return NULL;
	ti_value *v = ti_arena_alloc(a, sizeof(*v) + size + 1);
	if (!v)
		return NULL;
	char *copy = (char *)(v + 1);
	if (size)
		memcpy(copy, data, size);
	v->kind = kind;
	v->as.bytes.data = copy;
	v->as.bytes.size = size;
	return v;
}

/*
 * A tuple of up to this many items has them right after it, in one piece
 * the arena can take back whole: a torch.save pickle makes four small
 * tuples a tensor (persistent id, size, stride, arguments) and drops them.
 */
enum { TUPLE_INLINE_MAX = (TI_ARENA_RECYCLE_MAX - sizeof(ti_value)) / sizeof(ti_value *) };

static bool items_inline(const ti_value *v) { return v->as.seq.items == (ti_value **)(uintptr_t)(v + 1); }

static ti_value *new_seq(ti_arena *a, ti_kind kind, ti_value *const *items, size_t count, bool take)
{
	if (count > UINT32_MAX)
		return NULL;
	ti_value *v;
	if (kind == TI_TUPLE && count && count <= TUPLE_INLINE_MAX) {
		if (!(v = ti_arena_alloc(a, sizeof(*v) + count * sizeof(*items))))
			return NULL;
		v->kind = kind;
		v->as.seq.items = (ti_value **)(v + 1);
	} else {
		if (!(v = ti_value_new(a, kind)))
			return NULL;
		if (count && !(v->as.seq.items = ti_arena_array(a, count, sizeof(*items))))
			return NULL;
	}
	for (size_t i = 0; i < count; i++)
		v->as.seq.items[i] = take ? items[i] : ti_value_ref(items[i]);
	v->as.seq.count = v->as.seq.capacity = (uint32_t)count;
	return v;
}

ti_value *ti_value_new_seq(ti_arena *a, ti_kind kind, ti_value *const *items, size_t count)
{
	return new_seq(a, kind, items, count, false);
}

ti_value *ti_value_new_seq_taking(ti_arena *a, ti_kind kind, ti_value *const *items, size_t count)
{
	return new_seq(a, kind, items, count, true);
}

ti_status ti_seq_push(ti_arena *a, ti_seq *seq, ti_value *item, size_t max_items, ti_error *err)
{
	if (max_items > UINT32_MAX)
		max_items = UINT32_MAX;
	if (seq->count >= max_items)
		return TI_FAIL(err, TI_E_LIMIT, "container holds more than %zu items", max_items);
	if (seq->count == seq->capacity) {
		size_t cap = seq->capacity;
		if (ti_arena_array_grow(a, (void **)&seq->items, &cap, sizeof(*seq->items), cap + 1))
			return NOMEM(err);
		seq->capacity = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	}
	seq->items[seq->count++] = ti_value_ref(item);
	return TI_OK;
}

/* The dict's own ti_dict, made on its first change. */
static ti_dict *own_dict(ti_arena *a, ti_value *dict)
{
	if (dict->as.dict == &empty_dict && !(dict->as.dict = ti_arena_alloc(a, sizeof(ti_dict)))) {
		dict->as.dict = &empty_dict;
		return NULL;
	}
	return dict->as.dict;
}

ti_status ti_dict_push(ti_arena *a, ti_value *dict, ti_value *key, ti_value *value,
                       size_t max_items, ti_error *err)
{
	ti_dict *d = own_dict(a, dict);
	if (!d)
		return NOMEM(err);
	if (d->count >= max_items)
		return TI_FAIL(err, TI_E_LIMIT, "dict holds more than %zu items", max_items);
	if (d->count == d->capacity) {
		size_t cap = d->capacity;
		if (ti_arena_array_grow(a, (void **)&d->keys, &cap, sizeof(*d->keys), d->count + 1) ||
		    ti_arena_array_grow(a, (void **)&d->values, &d->capacity, sizeof(*d->values), d->count + 1))
			return NOMEM(err);
	}
	if (key && key->kind == TI_STR && (d->hashes || !d->count)) { /* every key a str so far */
		if (ti_arena_array_grow(a, (void **)&d->hashes, &d->hashes_capacity, sizeof(*d->hashes), d->count + 1))
			return NOMEM(err);
		d->hashes[d->count] = ti_strsort_hash(key->as.bytes.data);
	} else {
		d->hashes = NULL; /* left in the arena */
	}
	d->keys[d->count] = ti_value_ref(key);
	d->values[d->count++] = ti_value_ref(value);
	return TI_OK;
}

ti_status ti_dict_set_attributes(ti_arena *a, ti_value *dict, ti_value *attributes, ti_error *err)
{
	ti_dict *d = own_dict(a, dict);
	if (!d)
		return NOMEM(err);
	ti_value_ref(attributes);
	ti_value_unref(a, d->attributes);
	d->attributes = attributes;
	return TI_OK;
}

/*
 * Items are followed through a small stack of their own: past it, what is
 * left simply stays in the arena, which is always safe.
 */
void ti_value_release(ti_arena *a, ti_value *v)
{
	enum { PENDING_MAX = 64 };
	ti_value *pending[PENDING_MAX];
	size_t n = 0;
	pending[n++] = v;
	while (n) {
		ti_value *dead = pending[--n];
		ti_value **items = NULL;
		size_t count = 0, items_size = 0, size = sizeof(*dead);
		switch (dead->kind) {
		case TI_TUPLE: case TI_LIST: case TI_SET: case TI_FROZENSET:
			items = dead->as.seq.items;
			count = dead->as.seq.count;
			items_size = (size_t)dead->as.seq.capacity * sizeof(*items);
			if (items && items_inline(dead)) { /* one piece with the tuple */
				size += items_size;
				items_size = 0;
			}
			break;
		case TI_PERSID:
			items = &dead->as.persid;
			count = 1;
			break;
		default:
			break;
		}
		for (size_t i = 0; i < count; i++) {
			ti_value *item = items[i];
			if (!item || item->refs == TI_REFS_KEPT || item->refs == 0 || --item->refs)
				continue;
			if (n < PENDING_MAX)
				pending[n++] = item;
			else
				item->refs = TI_REFS_KEPT;
		}
		if (items_size)
			ti_arena_recycle(a, items, items_size);
		ti_arena_recycle(a, dead, size);
	}
}

/* ---- querying ---- */

const char *ti_kind_name(ti_kind kind)
{
	static const char *const names[TI_KIND_COUNT] = {
		[TI_NONE] = "None", [TI_BOOL] = "bool", [TI_INT] = "int", [TI_BIGINT] = "int",
		[TI_FLOAT] = "float", [TI_COMPLEX] = "complex", [TI_STR] = "str",
		[TI_BYTES] = "bytes", [TI_TUPLE] = "tuple", [TI_LIST] = "list",
		[TI_DICT] = "dict", [TI_SET] = "set", [TI_FROZENSET] = "frozenset",
		[TI_GLOBAL] = "global", [TI_OBJECT] = "object", [TI_PERSID] = "persistent id",
		[TI_TENSOR] = "tensor", [TI_STORAGE] = "storage", [TI_DEVICE] = "device",
		[TI_MARK] = "mark",
	};
	return (unsigned)kind < TI_KIND_COUNT ? names[kind] : "?";
}

static ti_status wrong_kind(const ti_value *v, const char *want, ti_error *err)
{
	return TI_FAIL(err, TI_E_CORRUPT, "expected %s, got %s", want, v ? ti_kind_name(v->kind) : "nothing");
}

ti_status ti_value_as_int(const ti_value *v, int64_t *out, ti_error *err)
{
	if (v && v->kind == TI_INT) {
		*out = v->as.integer;
		return TI_OK;
	}
	if (v && v->kind == TI_BOOL) {
		*out = v->as.boolean;
		return TI_OK;
	}
	if (v && v->kind == TI_BIGINT)
		return TI_FAIL(err, TI_E_CORRUPT, "integer does not fit in 64 bits");
	return wrong_kind(v, "int", err);
}

ti_status ti_value_as_bool(const ti_value *v, bool *out, ti_error *err)
{
	if (v && v->kind == TI_BOOL) {
		*out = v->as.boolean;
		return TI_OK;
	}
	if (v && v->kind == TI_INT) {
		*out = v->as.integer != 0;
		return TI_OK;
	}
	return wrong_kind(v, "bool", err);
}

ti_status ti_value_as_float(const ti_value *v, double *out, ti_error *err)
{
	if (v && v->kind == TI_FLOAT) {
		*out = v->as.real;
		return TI_OK;
	}
	if (v && v->kind == TI_INT) {
		*out = (double)v->as.integer;
		return TI_OK;
	}
	return wrong_kind(v, "float", err);
}

ti_status ti_value_as_str(const ti_value *v, const char **out, ti_error *err)
{
	if (v && v->kind == TI_STR) {
		*out = v->as.bytes.data;
		return TI_OK;
	}
	return wrong_kind(v, "str", err);
}

ti_status ti_value_as_seq(const ti_value *v, const ti_seq **out, ti_error *err)
{
	if (v && (v->kind == TI_TUPLE || v->kind == TI_LIST)) {
		*out = &v->as.seq;
		return TI_OK;
	}
	return wrong_kind(v, "tuple", err);
}

ti_status ti_value_as_int_array(const ti_value *v, int64_t *out, size_t max_count,
                                size_t *count, ti_error *err)
{
	const ti_seq *seq = NULL;
	if (ti_value_as_seq(v, &seq, err))
		return err->code;
	if (seq->count > max_count)
		return TI_FAIL(err, TI_E_LIMIT, "%zu dimensions, more than the %zu allowed", (size_t)seq->count, max_count);
	for (size_t i = 0; i < seq->count; i++) {
		const ti_value *item = seq->items[i];
		if (item && item->kind == TI_INT) /* a size or a stride: read here, without a call each */
			out[i] = item->as.integer;
		else if (ti_value_as_int(item, &out[i], err))
			return err->code;
	}
	*count = seq->count;
	return TI_OK;
}

const ti_value *ti_dict_get(const ti_value *dict, const char *key)
{
	if (!dict || dict->kind != TI_DICT)
		return NULL;
	for (size_t i = dict->as.dict->count; i-- > 0;) { /* the last duplicate wins, as in Python */
		const ti_value *k = dict->as.dict->keys[i];
		if (k->kind == TI_STR && !strcmp(k->as.bytes.data, key))
			return dict->as.dict->values[i];
	}
	return NULL;
}

static const char *global_path(const ti_value *g, char *buf, size_t size)
{
	snprintf(buf, size, "%s.%s", g->as.global->module, g->as.global->name);
	return buf;
}

const char *ti_value_type_name(const ti_value *v, char *buf, size_t size)
{
	switch (v->kind) {
	case TI_NONE: return "NoneType";
	case TI_DICT: return v->flags & TI_F_ORDERED ? "collections.OrderedDict" : "dict";
	case TI_TUPLE: return v->flags & TI_F_TORCH_SIZE ? "torch.Size" : "tuple";
	case TI_BYTES: return v->flags & TI_F_BYTEARRAY ? "bytearray" : "bytes";
	case TI_DEVICE: return "torch.device";
	case TI_TENSOR: return v->as.tensor->is_parameter ? "torch.nn.parameter.Parameter" : "torch.Tensor";
	case TI_STORAGE: return "torch.storage.UntypedStorage";
	case TI_GLOBAL: {
		const char *type = ti_known_global_type_name(v->as.global->known);
		return type ? type : "type";
	}
	case TI_OBJECT:
		if (v->as.object->callable && v->as.object->callable->kind == TI_GLOBAL)
			return global_path(v->as.object->callable, buf, size);
		return "object";
	default: return ti_kind_name(v->kind);
	}
}

/* ---- repr ---- */

enum { REPR_DEPTH_MAX = 32 };

typedef struct out {
	char *buf;
	size_t size, len, max; /* len may pass size: we count what would have been written */
	int depth;
	const ti_value *open[REPR_DEPTH_MAX + 1]; /* containers being printed, to spot cycles */
} out;

static void put(out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++, o->len++)
		if (o->len + 1 < o->size)
			o->buf[o->len] = s[i];
}

static void puts_(out *o, const char *s) { put(o, s, strlen(s)); }

static void putf(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(out *o, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/*
 * Python's float repr: the shortest digits that read back as the same
 * double, in fixed notation for decimal exponents -4 to 15 and scientific
 * otherwise (Python/pystrtod.c, format code 'r'). force_point adds ".0" to
 * integral values, as float.__repr__ does and complex.__repr__ does not.
 */
static void format_float(double d, char *buf, size_t size, bool force_point)
{
	if (isnan(d)) {
		snprintf(buf, size, "nan");
		return;
	}
	if (isinf(d)) {
		snprintf(buf, size, d < 0 ? "-inf" : "inf");
		return;
	}
	char sci[40];
	int prec = 1;
	for (; prec <= 17; prec++) {
		snprintf(sci, sizeof(sci), "%.*e", prec - 1, d);
		if (strtod(sci, NULL) == d)
			break;
	}
	/* sci is [-]D[.DDD]e[+-]XX: take its digits and exponent. */
	const char *p = sci;
	bool neg = *p == '-';
	if (neg)
		p++;
	char digits[24];
	int n = 0;
	for (; *p && *p != 'e'; p++)
		if (*p != '.')
			digits[n++] = *p;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = '\0';
	int e = atoi(p + 1);
	char out[64];
	size_t len = 0;
	if (neg)
		out[len++] = '-';
	if (e >= -4 && e < 16) {
		if (e < 0) {
			out[len++] = '0';
			out[len++] = '.';
			for (int i = 0; i < -e - 1; i++)
				out[len++] = '0';
			memcpy(out + len, digits, (size_t)n);
			len += (size_t)n;
		} else if (n <= e + 1) {
			memcpy(out + len, digits, (size_t)n);
			len += (size_t)n;
			for (int i = n; i < e + 1; i++)
				out[len++] = '0';
			if (force_point) {
				out[len++] = '.';
				out[len++] = '0';
			}
		} else {
			memcpy(out + len, digits, (size_t)e + 1);
			len += (size_t)e + 1;
			out[len++] = '.';
			memcpy(out + len, digits + e + 1, (size_t)(n - e - 1));
			len += (size_t)(n - e - 1);
		}
		out[len] = '\0';
	} else {
		out[len++] = digits[0];
		if (n > 1) {
			out[len++] = '.';
			memcpy(out + len, digits + 1, (size_t)n - 1);
			len += (size_t)n - 1;
		}
		snprintf(out + len, sizeof(out) - len, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	}
	snprintf(buf, size, "%s", out);
}

void ti_format_float(double d, char *buf, size_t size) { format_float(d, buf, size, true); }

/*
 * Code points str.isprintable() rejects beyond ASCII controls: C1 controls,
 * separators other than space (Zs/Zl/Zp) and common format characters (Cf).
 * Python's repr escapes them; so do we, so a name cannot hide or reorder text.
 */
static bool unprintable(uint32_t cp)
{
	static const uint32_t ranges[][2] = {
		{0x80, 0xa0}, {0xad, 0xad}, {0x61c, 0x61c}, {0x1680, 0x1680}, {0x180e, 0x180e},
		{0x2000, 0x200f}, {0x2028, 0x202f}, {0x205f, 0x2064}, {0x2066, 0x206f},
		{0x3000, 0x3000}, {0xd800, 0xdfff}, {0xe000, 0xf8ff}, {0xfeff, 0xfeff}, {0xfff9, 0xfffb},
		{0xe0000, 0xe007f}, {0xf0000, 0x10ffff},
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (cp >= ranges[i][0] && cp <= ranges[i][1])
			return true;
	return false;
}

static void repr_string(out *o, const char *s, size_t n, bool bytes)
{
	bool dq = memchr(s, '\'', n) && !memchr(s, '"', n);
	if (bytes)
		put(o, "b", 1);
	put(o, dq ? "\"" : "'", 1);
	for (size_t i = 0; i < n && o->len < o->max + 8; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\\') puts_(o, "\\\\");
		else if (c == '\'' && !dq) puts_(o, "\\'");
		else if (c == '\n') puts_(o, "\\n");
		else if (c == '\r') puts_(o, "\\r");
		else if (c == '\t') puts_(o, "\\t");
		else if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) putf(o, "\\x%02x", c);
		else if (c >= 0xc0 && !bytes) {
			/* Strings were checked as UTF-8 when read: decode one code point. */
			size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
			if (i + len > n)
				len = n - i;
			uint32_t cp = c & (0x7f >> len);
			for (size_t k = 1; k < len; k++)
				cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3f);
			if (!unprintable(cp))
				put(o, s + i, len);
			else if (cp < 0x100)
				putf(o, "\\x%02x", (unsigned)cp);
			else if (cp < 0x10000)
				putf(o, "\\u%04x", (unsigned)cp);
			else
				putf(o, "\\U%08x", (unsigned)cp);
			i += len - 1;
		} else put(o, (const char *)&c, 1);
	}
	put(o, dq ? "\"" : "'", 1);
}

static void repr_bigint(out *o, const ti_value *v)
{
	/* Little-endian two's complement to decimal, by repeated division. */
	size_t n = v->as.bytes.size;
	unsigned char mag[512];
	if (n > sizeof(mag)) {
		putf(o, "<int of %zu bytes>", n);
		return;
	}
	const unsigned char *src = (const unsigned char *)v->as.bytes.data;
	bool neg = n && (src[n - 1] & 0x80);
	unsigned carry = 1;
	for (size_t i = 0; i < n; i++) {
		unsigned b = neg ? (unsigned)(~src[i] & 0xff) + carry : src[i];
		if (neg)
			carry = b >> 8;
		mag[i] = (unsigned char)b;
	}
	char digits[1300];
	size_t nd = 0;
	size_t top = n;
	while (top > 0 && nd < sizeof(digits)) {
		unsigned rem = 0;
		for (size_t i = top; i-- > 0;) {
			unsigned cur = (rem << 8) | mag[i];
			mag[i] = (unsigned char)(cur / 10);
			rem = cur % 10;
		}
		digits[nd++] = (char)('0' + rem);
		while (top > 0 && mag[top - 1] == 0)
			top--;
	}
	if (nd == 0)
		digits[nd++] = '0';
	if (neg)
		put(o, "-", 1);
	while (nd > 0)
		put(o, &digits[--nd], 1);
}

static void repr(out *o, const ti_value *v);

static void repr_items(out *o, ti_value *const *items, size_t n, const char *open, const char *close)
{
	puts_(o, open);
	for (size_t i = 0; i < n && o->len <= o->max; i++) {
		if (i)
			puts_(o, ", ");
		repr(o, items[i]);
	}
	if (n == 1 && !strcmp(open, "("))
		puts_(o, ",");
	puts_(o, close);
}

/* True if two keys are the same str or int: a later one replaces the earlier in Python. */
static bool same_key(const ti_value *a, const ti_value *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == TI_INT)
		return a->as.integer == b->as.integer;
	if (a->kind == TI_STR)
		return a->as.bytes.size == b->as.bytes.size && !memcmp(a->as.bytes.data, b->as.bytes.data, a->as.bytes.size);
	return a == b;
}

static void repr_dict(out *o, const ti_dict *d)
{
	puts_(o, "{");
	bool first = true;
	for (size_t i = 0; i < d->count && o->len <= o->max; i++) {
		/* A repeated key keeps its first place and its last value. */
		bool seen = false;
		size_t last = i;
		for (size_t j = 0; j < d->count && j < 4096; j++)
			if (j != i && same_key(d->keys[i], d->keys[j])) {
				if (j < i)
					seen = true;
				else
					last = j;
			}
		if (seen)
			continue;
		if (!first)
			puts_(o, ", ");
		first = false;
		repr(o, d->keys[i]);
		puts_(o, ": ");
		repr(o, d->values[last]);
	}
	puts_(o, "}");
}

static void repr_tensor(out *o, const ti_tensor *t)
{
	puts_(o, t->is_parameter ? "Parameter(" : "tensor(");
	puts_(o, ti_dtype_name(t->dtype));
	puts_(o, "[");
	for (int i = 0; i < t->ndim; i++)
		putf(o, i ? ", %" PRId64 : "%" PRId64, t->shape[i]);
	puts_(o, "])");
}

static void repr_object(out *o, const ti_value *v)
{
	const ti_value *c = v->as.object->callable;
	const ti_value *state = v->as.object->state;
	if (c && c->kind == TI_GLOBAL)
		puts_(o, c->as.global->name);
	else
		puts_(o, "<call>");
	/* argparse.Namespace and plain objects: show attributes like Namespace(a=1, b=2). */
	if (state && state->kind == TI_DICT && (!v->as.object->args || v->as.object->args->as.seq.count == 0)) {
		puts_(o, "(");
		for (size_t i = 0; i < state->as.dict->count && o->len <= o->max; i++) {
			const ti_value *k = state->as.dict->keys[i];
			if (i)
				puts_(o, ", ");
			if (k->kind == TI_STR)
				put(o, k->as.bytes.data, k->as.bytes.size);
			else
				repr(o, k);
			puts_(o, "=");
			repr(o, state->as.dict->values[i]);
		}
		puts_(o, ")");
		return;
	}
	const ti_value *args = v->as.object->args;
	if (args && (args->kind == TI_TUPLE || args->kind == TI_LIST)) {
		puts_(o, "(");
		for (size_t i = 0; i < args->as.seq.count && o->len <= o->max; i++) {
			if (i)
				puts_(o, ", ");
			repr(o, args->as.seq.items[i]);
		}
		puts_(o, ")");
	}
	if (state) {
		puts_(o, " state=");
		repr(o, state);
	}
}

static void repr(out *o, const ti_value *v)
{
	char tmp[64];
	if (o->len > o->max)
		return;
	if (o->depth > REPR_DEPTH_MAX) {
		puts_(o, "...");
		return;
	}
	for (int i = 0; i < o->depth; i++)
		if (o->open[i] == v) { /* a cycle: Python prints [...] and {...} */
			puts_(o, v->kind == TI_DICT ? "{...}" : v->kind == TI_LIST ? "[...]" : "...");
			return;
		}
	o->open[o->depth++] = v;
	switch (v->kind) {
	case TI_NONE: puts_(o, "None"); break;
	case TI_BOOL: puts_(o, v->as.boolean ? "True" : "False"); break;
	case TI_INT: putf(o, "%" PRId64, v->as.integer); break;
	case TI_BIGINT: repr_bigint(o, v); break;
	case TI_FLOAT: ti_format_float(v->as.real, tmp, sizeof(tmp)); puts_(o, tmp); break;
	case TI_COMPLEX:
		/* complex.__repr__: "2j" when the real part is +0, else "(1+2j)" */
		if (v->as.complex.re == 0 && !signbit(v->as.complex.re)) {
			format_float(v->as.complex.im, tmp, sizeof(tmp), false);
			puts_(o, tmp);
			puts_(o, "j");
			break;
		}
		format_float(v->as.complex.re, tmp, sizeof(tmp), false);
		puts_(o, "(");
		puts_(o, tmp);
		format_float(v->as.complex.im, tmp, sizeof(tmp), false);
		puts_(o, tmp[0] == '-' ? "" : "+");
		puts_(o, tmp);
		puts_(o, "j)");
		break;
	case TI_STR: repr_string(o, v->as.bytes.data, v->as.bytes.size, false); break;
	case TI_BYTES:
		if (v->flags & TI_F_BYTEARRAY)
			puts_(o, "bytearray(");
		repr_string(o, v->as.bytes.data, v->as.bytes.size, true);
		if (v->flags & TI_F_BYTEARRAY)
			puts_(o, ")");
		break;
	case TI_TUPLE:
		if (v->flags & TI_F_TORCH_SIZE) {
			puts_(o, "torch.Size(");
			repr_items(o, v->as.seq.items, v->as.seq.count, "[", "]");
			puts_(o, ")");
		} else {
			repr_items(o, v->as.seq.items, v->as.seq.count, "(", ")");
		}
		break;
	case TI_LIST: repr_items(o, v->as.seq.items, v->as.seq.count, "[", "]"); break;
	case TI_SET:
		if (v->as.seq.count == 0)
			puts_(o, "set()");
		else
			repr_items(o, v->as.seq.items, v->as.seq.count, "{", "}");
		break;
	case TI_FROZENSET:
		puts_(o, "frozenset(");
		if (v->as.seq.count)
			repr_items(o, v->as.seq.items, v->as.seq.count, "{", "}");
		puts_(o, ")");
		break;
	case TI_DICT:
		if (v->flags & TI_F_ORDERED) {
			puts_(o, "OrderedDict(");
			if (v->as.dict->count)
				repr_dict(o, v->as.dict);
			puts_(o, ")");
		} else {
			repr_dict(o, v->as.dict);
		}
		break;
	case TI_GLOBAL: {
		if (v->as.global->known) { /* torch.float32, torch.FloatStorage: as Python prints them */
			puts_(o, v->as.global->module);
			puts_(o, ".");
			puts_(o, v->as.global->name);
		} else {
			puts_(o, "<global ");
			puts_(o, v->as.global->module);
			puts_(o, ".");
			puts_(o, v->as.global->name);
			puts_(o, ">");
		}
		break;
	}
	case TI_OBJECT: repr_object(o, v); break;
	case TI_PERSID: puts_(o, "<persistent id "); repr(o, v->as.persid); puts_(o, ">"); break;
	case TI_TENSOR: repr_tensor(o, v->as.tensor); break;
	case TI_STORAGE:
		putf(o, "<storage %s", ti_dtype_name(v->as.storage->dtype));
		putf(o, "[%" PRId64 "]>", v->as.storage->numel);
		break;
	case TI_DEVICE: {
		const char *colon = strchr(v->as.bytes.data, ':');
		puts_(o, "device(type='");
		put(o, v->as.bytes.data, colon ? (size_t)(colon - v->as.bytes.data) : v->as.bytes.size);
		puts_(o, "'");
		if (colon) {
			puts_(o, ", index=");
			puts_(o, colon + 1);
		}
		puts_(o, ")");
		break;
	}
	default: puts_(o, "<?>"); break;
	}
	o->depth--;
}

size_t ti_value_str(const ti_value *v, char *buf, size_t size)
{
	out o = {buf, size, 0, SIZE_MAX, 0, {0}};
	if (v->kind == TI_STR) {
		put(&o, v->as.bytes.data, v->as.bytes.size);
	} else if (v->kind == TI_GLOBAL && !v->as.global->known) {
		/* str() of a class: what old Lightning checkpoints key their callbacks by */
		puts_(&o, "<class '");
		puts_(&o, v->as.global->module);
		puts_(&o, ".");
		puts_(&o, v->as.global->name);
		puts_(&o, "'>");
	} else {
		repr(&o, v);
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return o.len;
}

const char *ti_value_repr(const ti_value *v, char *buf, size_t size, size_t max_chars)
{
	if (size == 0)
		return buf;
	/* The text fits in size - 1 bytes and in max_chars (0: no limit but the buffer). */
	size_t limit = max_chars && max_chars < size - 1 ? max_chars : size - 1;
	out o = {buf, size, 0, limit, 0, {0}};
	repr(&o, v);
	if (o.len <= limit) {
		buf[o.len] = '\0';
		return buf;
	}
	/* Too long: cut on a UTF-8 boundary and end with "...", all within limit. */
	if (limit < 3) {
		memset(buf, '.', limit);
		buf[limit] = '\0';
		return buf;
	}
	size_t cut = limit - 3;
	while (cut > 0 && ((unsigned char)buf[cut] & 0xc0) == 0x80)
		cut--;
	memcpy(buf + cut, "...", 4);
	return buf;
}
