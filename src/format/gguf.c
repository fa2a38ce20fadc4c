/*
 * gguf.c - the GGUF header reader (see tinspect/gguf.h for the format and
 * the checks). The header is read through a small buffer with pread; every
 * length read from the file is checked against what remains of the file
 * before anything is allocated for it.
 */
#include "tinspect/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/json_scan.h"
#include "tinspect/arena.h"

/*
 * Ceilings. ggml's own (gguf.cpp) are SIZE_MAX-based: these are tighter,
 * and far above any real file (llama.cpp models hold under 10,000 tensors
 * and a few dozen pairs; a vocabulary is ~256,000 strings).
 */
enum {
	TENSORS_MAX = 1000000,
	KVS_MAX = 1000000,
	KEY_MAX = 65535,              /* the specification: keys are at most 2^16 - 1 bytes */
	NAME_MAX_BYTES = 65535,       /* ggml allows 64 (GGML_MAX_NAME); others write longer */
	STRING_SHOWN_MAX = 65536,     /* bytes of a string value kept as its text */
	ARRAY_SHOWN = 8,              /* elements of an array kept in its summary */
	ARRAY_DEPTH_MAX = 8,          /* arrays in arrays */
	ALIGNMENT_MAX = 1 << 30,
	BUFFER = 64 * 1024,
};
#define ARENA_MAX ((size_t)1 << 30)

/*
 * ggml's type traits (ggml.c type_traits[], block layouts in
 * ggml-common.h): elements per block and bytes per block. Ids 4, 5 and
 * 31-33, 36-38 were removed from ggml and are refused.
 */
static const ti_ggml_type ggml_types[] = {
	[0] = {"F32", 1, 4, TI_DT_FLOAT32},
	[1] = {"F16", 1, 2, TI_DT_FLOAT16},
	[2] = {"Q4_0", 32, 18, TI_DT_INVALID},     /* fp16 d, 16 bytes of nibbles */
	[3] = {"Q4_1", 32, 20, TI_DT_INVALID},     /* fp16 d, m, 16 bytes */
	[6] = {"Q5_0", 32, 22, TI_DT_INVALID},     /* fp16 d, 4 bytes of 5th bits, 16 bytes */
	[7] = {"Q5_1", 32, 24, TI_DT_INVALID},
	[8] = {"Q8_0", 32, 34, TI_DT_INVALID},     /* fp16 d, 32 int8 */
	[9] = {"Q8_1", 32, 36, TI_DT_INVALID},     /* fp16 d, s, 32 int8 */
	[10] = {"Q2_K", 256, 84, TI_DT_INVALID},
	[11] = {"Q3_K", 256, 110, TI_DT_INVALID},
	[12] = {"Q4_K", 256, 144, TI_DT_INVALID},
	[13] = {"Q5_K", 256, 176, TI_DT_INVALID},
	[14] = {"Q6_K", 256, 210, TI_DT_INVALID},
	[15] = {"Q8_K", 256, 292, TI_DT_INVALID},
	[16] = {"IQ2_XXS", 256, 66, TI_DT_INVALID},
	[17] = {"IQ2_XS", 256, 74, TI_DT_INVALID},
	[18] = {"IQ3_XXS", 256, 98, TI_DT_INVALID},
	[19] = {"IQ1_S", 256, 50, TI_DT_INVALID},
	[20] = {"IQ4_NL", 32, 18, TI_DT_INVALID},
	[21] = {"IQ3_S", 256, 110, TI_DT_INVALID},
	[22] = {"IQ2_S", 256, 82, TI_DT_INVALID},
	[23] = {"IQ4_XS", 256, 136, TI_DT_INVALID},
	[24] = {"I8", 1, 1, TI_DT_INT8},
	[25] = {"I16", 1, 2, TI_DT_INT16},
	[26] = {"I32", 1, 4, TI_DT_INT32},
	[27] = {"I64", 1, 8, TI_DT_INT64},
	[28] = {"F64", 1, 8, TI_DT_FLOAT64},
	[29] = {"IQ1_M", 256, 56, TI_DT_INVALID},
	[30] = {"BF16", 1, 2, TI_DT_BFLOAT16},
	[34] = {"TQ1_0", 256, 54, TI_DT_INVALID},
	[35] = {"TQ2_0", 256, 66, TI_DT_INVALID},
	[39] = {"MXFP4", 32, 17, TI_DT_INVALID},   /* e8m0 scale, 16 bytes of fp4 */
	[40] = {"NVFP4", 64, 36, TI_DT_INVALID},   /* 4 ue4m3 scales, 32 bytes of fp4 */
	[41] = {"Q1_0", 128, 18, TI_DT_INVALID},
	[42] = {"Q2_0", 64, 18, TI_DT_INVALID},
};
enum { GGML_TYPE_IDS = sizeof(ggml_types) / sizeof(ggml_types[0]) };

const ti_ggml_type *ti_ggml_type_of(uint32_t id)
{
	return id < GGML_TYPE_IDS && ggml_types[id].name ? &ggml_types[id] : NULL;
}

int ti_ggml_type_from_name(const char *name)
{
	for (size_t i = 0; i < GGML_TYPE_IDS; i++)
		if (ggml_types[i].name && !strcasecmp(ggml_types[i].name, name))
			return (int)i;
	return -1;
}

int ti_ggml_type_from_dtype(ti_dtype dtype)
{
	for (size_t i = 0; dtype != TI_DT_INVALID && i < GGML_TYPE_IDS; i++)
		if (ggml_types[i].name && ggml_types[i].dtype == dtype)
			return (int)i;
	return -1;
}

/* Bytes of one element of a scalar value type; 0 for strings and arrays. */
static const uint8_t value_sizes[TI_GGUF_VALUE_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *ti_gguf_value_type_name(uint32_t type)
{
	static const char *const names[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	                                    "bool", "string", "array", "uint64", "int64", "float64"};
	return type < TI_GGUF_VALUE_TYPE_COUNT ? names[type] : "?";
}

bool ti_gguf_sniff(const void *head, size_t n)
{
	return n >= 4 && !memcmp(head, "GGUF", 4);
}

/* ---- reading through a buffer ---- */

typedef struct reader {
	ti_io *io;
	uint64_t size;          /* of the file */
	uint64_t pos;           /* next byte to read */
	unsigned char *buf;
	uint64_t buf_start;
	size_t buf_len;
} reader;

struct ti_gguf_file {
	ti_io *io;
	ti_arena arena;
	ti_gguf_info info;
	ti_gguf_tensor *tensors;
	size_t tensor_count;
	ti_gguf_kv *kvs;
	size_t kv_count;
};

static ti_status fail_at(ti_error *err, ti_status code, uint64_t offset)
{
	ti_error_at(err, "", (int64_t)offset);
	return code;
}

static ti_status truncated(reader *r, uint64_t need, const char *what, ti_error *err)
{
	TI_FAIL(err, TI_E_CORRUPT, "GGUF header cut short: %s needs %" PRIu64 " bytes, the file has %" PRIu64 " left",
	        what, need, r->size - r->pos);
	return fail_at(err, TI_E_CORRUPT, r->pos);
}

static uint64_t remaining(const reader *r) { return r->size - r->pos; }

/* Copies n bytes at the reader's position into out (NULL: skips them). */
static ti_status take(reader *r, void *out, uint64_t n, const char *what, ti_error *err)
{
	if (n > remaining(r))
		return truncated(r, n, what, err);
	unsigned char *o = out;
	while (n) {
		if (r->pos < r->buf_start || r->pos >= r->buf_start + r->buf_len) {
			if (!o && n >= BUFFER) { /* a long skip needs no read */
				r->pos += n;
				return TI_OK;
			}
			uint64_t want = remaining(r) < BUFFER ? remaining(r) : BUFFER;
			size_t got = 0;
			ti_status rs = ti_io_read(r->io, r->pos, r->buf, (size_t)want, &got, err);
			if (rs)
				return fail_at(err, rs, r->pos);
			if (got < want)
				return truncated(r, n, what, err); /* the file shrank */
			r->buf_start = r->pos;
			r->buf_len = got;
		}
		size_t at = (size_t)(r->pos - r->buf_start), here = r->buf_len - at;
		if (here > n)
			here = (size_t)n;
		if (o) {
			memcpy(o, r->buf + at, here);
			o += here;
		}
		r->pos += here;
		n -= here;
	}
	return TI_OK;
}

static uint64_t le(const unsigned char *b, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

static ti_status read_u32(reader *r, uint32_t *v, const char *what, ti_error *err)
{
	unsigned char b[4];
	ti_status st = take(r, b, 4, what, err);
	*v = (uint32_t)le(b, 4);
	return st;
}

static ti_status read_u64(reader *r, uint64_t *v, const char *what, ti_error *err)
{
	unsigned char b[8];
	ti_status st = take(r, b, 8, what, err);
	*v = le(b, 8);
	return st;
}

/*
 * A string: its u64 length, checked against max and the file, then its
 * bytes; keep (when not NULL) gets at most keep_max of them, NUL-ended, in
 * the arena. nul_ok: a NUL inside is allowed (values), else refused.
 */
static ti_status read_string(reader *r, ti_arena *a, uint64_t max, size_t keep_max, bool nul_ok, char **keep,
                             uint64_t *length, const char *what, ti_error *err)
{
	uint64_t at = r->pos, n;
	ti_status st = read_u64(r, &n, what, err);
	if (st)
		return st;
	if (n > max) {
		TI_FAIL(err, TI_E_LIMIT, "GGUF %s of %" PRIu64 " bytes, over the ceiling of %" PRIu64, what, n, max);
		return fail_at(err, TI_E_LIMIT, at);
	}
	if (n > remaining(r))
		return truncated(r, n, what, err);
	if (length)
		*length = n;
	if (!keep)
		return take(r, NULL, n, what, err);
	size_t kept = n < keep_max ? (size_t)n : keep_max;
	char *s = ti_arena_alloc(a, kept + 1);
	if (!s)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading the GGUF header");
	st = take(r, s, kept, what, err);
	if (!st)
		st = take(r, NULL, n - kept, what, err);
	if (st)
		return st;
	s[kept] = '\0';
	if (!nul_ok && strlen(s) != kept) {
		TI_FAIL(err, TI_E_CORRUPT, "GGUF %s holds a NUL byte", what);
		return fail_at(err, TI_E_CORRUPT, at);
	}
	if (!nul_ok && !ti_utf8_valid(s, kept)) {
		TI_FAIL(err, TI_E_CORRUPT, "GGUF %s is not UTF-8", what);
		return fail_at(err, TI_E_CORRUPT, at);
	}
	if (nul_ok && (strlen(s) != kept || !ti_utf8_valid(s, kept))) {
		/* a value is shown, as JSON too: a NUL or a byte that is no UTF-8 becomes U+FFFD */
		char *clean = ti_arena_alloc(a, 3 * kept + 1), *o = clean;
		if (!clean)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory reading the GGUF header");
		for (size_t i = 0; i < kept;) {
			size_t len = s[i] ? ti_utf8_sequence((const unsigned char *)s + i, kept - i) : 0;
			if (len) {
				memcpy(o, s + i, len);
				o += len;
				i += len;
			} else {
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
				i++;
			}
		}
		*o = '\0';
		s = clean;
	}
	*keep = s;
	return TI_OK;
}

/* ---- metadata values ---- */

/* A bounded text being built: what a value shows. */
typedef struct text {
	char *buf;
	size_t len, cap;
	bool cut;
} text;

static void text_add(text *t, const char *s, size_t n)
{
	if (t->len + n >= t->cap) {
		n = t->cap - 1 - t->len;
		t->cut = true;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

static void text_printf(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_printf(text *t, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	text_add(t, tmp, n < 0 ? 0 : (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void scalar_text(uint32_t type, const unsigned char *b, text *t)
{
	uint64_t u = le(b, value_sizes[type]);
	switch (type) {
	case TI_GGUF_UINT8: case TI_GGUF_UINT16: case TI_GGUF_UINT32: case TI_GGUF_UINT64:
		text_printf(t, "%" PRIu64, u);
		break;
	case TI_GGUF_INT8:
		text_printf(t, "%d", (int)(int8_t)u);
		break;
	case TI_GGUF_INT16:
		text_printf(t, "%d", (int)(int16_t)u);
		break;
	case TI_GGUF_INT32:
		text_printf(t, "%" PRId32, (int32_t)u);
		break;
	case TI_GGUF_INT64:
		text_printf(t, "%" PRId64, (int64_t)u);
		break;
	case TI_GGUF_BOOL:
		text_printf(t, "%s", u == 0 ? "false" : u == 1 ? "true" : "bool?");
		break;
	case TI_GGUF_FLOAT32: {
		uint32_t bits = (uint32_t)u;
		float f;
		memcpy(&f, &bits, 4);
		text_printf(t, "%.9g", (double)f);
		break;
	}
	case TI_GGUF_FLOAT64: {
		double d;
		memcpy(&d, &u, 8);
		text_printf(t, "%.17g", d);
		break;
	}
	}
}

typedef struct parser {
	reader r;
	ti_gguf_file *f;
	ti_error *err;
} parser;

static ti_status read_value(parser *p, uint32_t type, int depth, bool shown, text *t, uint64_t type_at);

/* An array: u32 element type, u64 count, the elements; its first ARRAY_SHOWN go into the text. */
static ti_status read_array(parser *p, int depth, bool shown, text *t, uint32_t *elem_type, uint64_t *count)
{
	reader *r = &p->r;
	uint64_t at = r->pos, n;
	uint32_t type;
	ti_status st = read_u32(r, &type, "array type", p->err);
	if (!st)
		st = read_u64(r, &n, "array length", p->err);
	if (st)
		return st;
	if (type >= TI_GGUF_VALUE_TYPE_COUNT) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF array of unknown value type %" PRIu32, type);
		return fail_at(p->err, TI_E_CORRUPT, at);
	}
	if (type == TI_GGUF_ARRAY && depth >= ARRAY_DEPTH_MAX) {
		TI_FAIL(p->err, TI_E_LIMIT, "GGUF arrays nested deeper than %d", ARRAY_DEPTH_MAX);
		return fail_at(p->err, TI_E_LIMIT, at);
	}
	/* each element takes at least this many bytes: a count the file cannot hold is refused at once */
	uint64_t least = value_sizes[type] ? value_sizes[type] : type == TI_GGUF_STRING ? 8 : 12;
	if (n > remaining(r) / least) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF array of %" PRIu64 " %s elements, more than the %" PRIu64
		        " bytes left in the file hold", n, ti_gguf_value_type_name(type), remaining(r));
		return fail_at(p->err, TI_E_CORRUPT, at + 4);
	}
	if (elem_type)
		*elem_type = type;
	if (count)
		*count = n;
	/* the pair's own array says its length and type; one inside another is bracketed */
	if (shown && depth <= 1)
		text_printf(t, "[%" PRIu64 " x %s]", n, ti_gguf_value_type_name(type));
	else if (shown)
		text_add(t, "[", 1);
	if (value_sizes[type] && n > ARRAY_SHOWN) { /* fixed-size elements past those shown: skipped at once */
		for (uint64_t i = 0; i < ARRAY_SHOWN && !st; i++) {
			if (shown)
				text_add(t, i ? ", " : depth <= 1 ? " " : "", i ? 2 : depth <= 1);
			st = read_value(p, type, depth + 1, shown, t, at);
		}
		if (!st)
			st = take(r, NULL, (n - ARRAY_SHOWN) * value_sizes[type], "array", p->err);
	} else {
		for (uint64_t i = 0; i < n && !st; i++) {
			bool show = shown && i < ARRAY_SHOWN;
			if (show)
				text_add(t, i ? ", " : depth <= 1 ? " " : "", i ? 2 : depth <= 1);
			st = read_value(p, type, depth + 1, show, t, at);
		}
	}
	if (!st && shown && n > ARRAY_SHOWN)
		text_add(t, ", ...", 5);
	if (!st && shown && depth > 1)
		text_add(t, "]", 1);
	return st;
}

static void quoted(text *t, const char *s, size_t n)
{
	text_add(t, "\"", 1);
	text_add(t, s, n);
	text_add(t, "\"", 1);
}

/* One value of type; shown: its text is added to t. */
static ti_status read_value(parser *p, uint32_t type, int depth, bool shown, text *t, uint64_t type_at)
{
	reader *r = &p->r;
	if (type >= TI_GGUF_VALUE_TYPE_COUNT) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF value of unknown type %" PRIu32, type);
		return fail_at(p->err, TI_E_CORRUPT, type_at);
	}
	if (type == TI_GGUF_ARRAY)
		return read_array(p, depth, shown, t, NULL, NULL);
	if (type == TI_GGUF_STRING) {
		char *s = NULL;
		uint64_t n = 0;
		/* nested in an array: only the start of a string is shown */
		size_t keep = !shown ? 0 : depth ? 64 : STRING_SHOWN_MAX;
		ti_status st = read_string(r, &p->f->arena, UINT64_MAX, keep, true, shown ? &s : NULL, &n, "string value",
		                           p->err);
		if (st || !shown)
			return st;
		if (depth)
			quoted(t, s, strlen(s));
		else
			text_add(t, s, strlen(s));
		if (n > keep)
			t->cut = true;
		return TI_OK;
	}
	unsigned char b[8];
	ti_status st = take(r, b, value_sizes[type], "value", p->err);
	if (!st && shown)
		scalar_text(type, b, t);
	return st;
}

static ti_status read_kv(parser *p, ti_gguf_kv *kv)
{
	reader *r = &p->r;
	kv->offset = r->pos;
	char *key;
	ti_status st = read_string(r, &p->f->arena, KEY_MAX, KEY_MAX, false, &key, NULL, "metadata key", p->err);
	if (st)
		return st;
	kv->key = key;
	uint64_t type_at = r->pos;
	st = read_u32(r, &kv->type, "value type", p->err);
	if (st)
		return st;
	char buf[STRING_SHOWN_MAX + 64];
	text t = {buf, 0, sizeof(buf), false};
	buf[0] = '\0';
	kv->count = 1;
	if (kv->type == TI_GGUF_ARRAY) {
		t.cap = 1024; /* an array's summary */
		st = read_array(p, 1, true, &t, &kv->array_type, &kv->count);
	} else {
		st = read_value(p, kv->type, 0, true, &t, type_at);
	}
	if (st)
		return st;
	if (!strcmp(key, "general.alignment") && kv->type != TI_GGUF_UINT32) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF general.alignment is a %s, not a uint32", ti_gguf_value_type_name(kv->type));
		return fail_at(p->err, TI_E_CORRUPT, type_at);
	}
	if (t.cut && t.len + 4 < sizeof(buf) && kv->type != TI_GGUF_ARRAY)
		text_add(&t, "...", 3);
	kv->text = ti_arena_strndup(&p->f->arena, buf, t.len);
	return kv->text ? TI_OK : TI_FAIL(p->err, TI_E_NOMEM, "out of memory reading the GGUF header");
}

static int compare_tensor_offsets(const void *a, const void *b)
{
	const ti_gguf_tensor *x = *(const ti_gguf_tensor *const *)a, *y = *(const ti_gguf_tensor *const *)b;
	if (x->data_offset != y->data_offset)
		return x->data_offset < y->data_offset ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int compare_names(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	return strcmp(x, y);
}

/* A name appearing twice among n (sorted copies), or NULL. */
static const char *duplicate_name(const char **names, size_t n)
{
	qsort(names, n, sizeof(*names), compare_names);
	for (size_t i = 1; i < n; i++)
		if (!strcmp(names[i - 1], names[i]))
			return names[i];
	return NULL;
}

static ti_status read_tensor_info(parser *p, ti_gguf_tensor *t)
{
	reader *r = &p->r;
	t->info_offset = r->pos;
	char *name;
	ti_status st = read_string(r, &p->f->arena, NAME_MAX_BYTES, NAME_MAX_BYTES, false, &name, NULL, "tensor name",
	                           p->err);
	if (st)
		return st;
	t->name = name;
	uint64_t at = r->pos;
	uint32_t ndim;
	if ((st = read_u32(r, &ndim, "n_dims", p->err)))
		return st;
	if (ndim > TI_GGUF_MAX_DIMS) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor '%s' has %" PRIu32 " dimensions, more than ggml's %d", name, ndim,
		        TI_GGUF_MAX_DIMS);
		return fail_at(p->err, TI_E_CORRUPT, at);
	}
	int64_t *shape = ti_arena_calloc(&p->f->arena, ndim + 1, sizeof(*shape));
	if (!shape)
		return TI_FAIL(p->err, TI_E_NOMEM, "out of memory reading the GGUF header");
	uint64_t ne[TI_GGUF_MAX_DIMS] = {0};
	int64_t numel = 1;
	for (uint32_t d = 0; d < ndim; d++) {
		at = r->pos;
		if ((st = read_u64(r, &ne[d], "dimension", p->err)))
			return st;
		if (ne[d] > INT64_MAX || (ne[d] && (uint64_t)numel > (uint64_t)INT64_MAX / ne[d])) {
			TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor '%s' has dimensions whose product overflows int64", name);
			return fail_at(p->err, TI_E_CORRUPT, at);
		}
		numel *= (int64_t)ne[d];
		shape[ndim - 1 - d] = (int64_t)ne[d]; /* PyTorch order: slowest first */
	}
	t->ndim = (int)ndim;
	t->shape = shape;
	t->numel = numel;
	at = r->pos;
	if ((st = read_u32(r, &t->type, "tensor type", p->err)))
		return st;
	const ti_ggml_type *ty = ti_ggml_type_of(t->type);
	if (!ty) {
		TI_FAIL(p->err, TI_E_UNSUPPORTED, "GGUF tensor '%s' has ggml type %" PRIu32 ", which ggml does not define (or "
		        "no longer)", name, t->type);
		return fail_at(p->err, TI_E_UNSUPPORTED, at);
	}
	uint64_t row = ndim ? ne[0] : 1;
	if (row % ty->block_size) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor '%s' of type %s has rows of %" PRIu64 " elements, not a multiple "
		        "of its blocks of %" PRIu32, name, ty->name, row, ty->block_size);
		return fail_at(p->err, TI_E_CORRUPT, at);
	}
	/* numel / block_size blocks; numel < 2^63 and block_bytes < 2^9 */
	uint64_t blocks = (uint64_t)numel / ty->block_size;
	if (blocks > UINT64_MAX / ty->block_bytes) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor '%s' is too large", name);
		return fail_at(p->err, TI_E_CORRUPT, at);
	}
	t->nbytes = blocks * ty->block_bytes;
	return read_u64(r, &t->data_offset, "tensor offset", p->err);
}

static ti_status parse(parser *p)
{
	reader *r = &p->r;
	ti_gguf_file *f = p->f;
	unsigned char magic[4];
	ti_status st = take(r, magic, 4, "magic", p->err);
	if (st)
		return st;
	if (memcmp(magic, "GGUF", 4)) {
		TI_FAIL(p->err, TI_E_CORRUPT, "not a GGUF file: no 'GGUF' magic");
		return fail_at(p->err, TI_E_CORRUPT, 0);
	}
	if ((st = read_u32(r, &f->info.version, "version", p->err)))
		return st;
	uint32_t v = f->info.version;
	if (v == 1) {
		TI_FAIL(p->err, TI_E_UNSUPPORTED, "GGUF version 1, with 32-bit counts and lengths: not read (only versions "
		        "2 and 3)");
		return fail_at(p->err, TI_E_UNSUPPORTED, 4);
	}
	if (v != 2 && v != 3) {
		/* a big-endian file's version reads byte-swapped: 0x03000000 */
		bool swapped = v == 0x02000000u || v == 0x03000000u;
		TI_FAIL(p->err, TI_E_UNSUPPORTED, swapped ? "a big-endian GGUF file: not read (ggml writes little-endian)"
		                                          : "GGUF version %" PRIu32 ": not read (versions 2 and 3 are)", v);
		return fail_at(p->err, TI_E_UNSUPPORTED, 4);
	}
	uint64_t n_tensors, n_kv;
	if ((st = read_u64(r, &n_tensors, "tensor count", p->err)) || (st = read_u64(r, &n_kv, "metadata count", p->err)))
		return st;
	/* a pair takes at least 12 bytes (key length, type), a tensor info 24 (name length, n_dims, type, offset) */
	if (n_kv > KVS_MAX || n_kv > remaining(r) / 12) {
		TI_FAIL(p->err, n_kv > KVS_MAX ? TI_E_LIMIT : TI_E_CORRUPT, "GGUF metadata count %" PRIu64 " is more than %s",
		        n_kv, n_kv > KVS_MAX ? "the ceiling of 1000000" : "the file can hold");
		return fail_at(p->err, n_kv > KVS_MAX ? TI_E_LIMIT : TI_E_CORRUPT, 16);
	}
	if (n_tensors > TENSORS_MAX || n_tensors > remaining(r) / 24) {
		TI_FAIL(p->err, n_tensors > TENSORS_MAX ? TI_E_LIMIT : TI_E_CORRUPT, "GGUF tensor count %" PRIu64
		        " is more than %s", n_tensors, n_tensors > TENSORS_MAX ? "the ceiling of 1000000" : "the file can hold");
		return fail_at(p->err, n_tensors > TENSORS_MAX ? TI_E_LIMIT : TI_E_CORRUPT, 8);
	}
	f->kvs = ti_arena_calloc(&f->arena, (size_t)n_kv + 1, sizeof(*f->kvs));
	f->tensors = ti_arena_calloc(&f->arena, (size_t)n_tensors + 1, sizeof(*f->tensors));
	const char **names = calloc((size_t)(n_kv > n_tensors ? n_kv : n_tensors) + 1, sizeof(*names));
	if (!f->kvs || !f->tensors || !names) {
		free(names);
		return TI_FAIL(p->err, TI_E_NOMEM, "out of memory reading the GGUF header");
	}
	f->info.alignment = TI_GGUF_DEFAULT_ALIGNMENT;
	for (uint64_t i = 0; i < n_kv && !st; i++) {
		ti_gguf_kv *kv = &f->kvs[i];
		if ((st = read_kv(p, kv)))
			break;
		f->kv_count++;
		names[i] = kv->key;
		if (!strcmp(kv->key, "general.alignment")) {
			uint64_t a = strtoull(kv->text, NULL, 10);
			if (!a || a & (a - 1) || a > ALIGNMENT_MAX) {
				TI_FAIL(p->err, TI_E_CORRUPT, "GGUF general.alignment %" PRIu64 " is not a power of two up to 2^30", a);
				st = fail_at(p->err, TI_E_CORRUPT, kv->offset);
				break;
			}
			f->info.alignment = a;
		}
	}
	const char *dup = st ? NULL : duplicate_name(names, f->kv_count);
	if (dup) {
		const ti_gguf_kv *k = ti_gguf_kv_find(f, dup);
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF metadata key '%s' appears twice", dup);
		st = fail_at(p->err, TI_E_CORRUPT, k ? k->offset : 0);
	}
	for (uint64_t i = 0; i < n_tensors && !st; i++) {
		f->tensors[i].index = (size_t)i;
		if ((st = read_tensor_info(p, &f->tensors[i])))
			break;
		f->tensor_count++;
		names[i] = f->tensors[i].name;
	}
	dup = st ? NULL : duplicate_name(names, f->tensor_count);
	free(names);
	if (dup) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor name '%s' appears twice", dup);
		return fail_at(p->err, TI_E_CORRUPT, r->pos);
	}
	if (st)
		return st;
	uint64_t align = f->info.alignment, end = r->pos;
	uint64_t start = end % align ? end + (align - end % align) : end;
	if (n_tensors && start > r->size) {
		TI_FAIL(p->err, TI_E_CORRUPT, "GGUF data section would begin at %" PRIu64 ", past the end of the %" PRIu64
		        "-byte file", start, r->size);
		return fail_at(p->err, TI_E_CORRUPT, end);
	}
	f->info.data_start = start;
	uint64_t data_size = start <= r->size ? r->size - start : 0;
	/* each tensor aligned, inside the data section, and none overlapping the next */
	const ti_gguf_tensor **order = calloc(f->tensor_count + 1, sizeof(*order));
	if (!order)
		return TI_FAIL(p->err, TI_E_NOMEM, "out of memory reading the GGUF header");
	for (size_t i = 0; i < f->tensor_count; i++)
		order[i] = &f->tensors[i];
	qsort(order, f->tensor_count, sizeof(*order), compare_tensor_offsets);
	for (size_t i = 0; i < f->tensor_count && !st; i++) {
		ti_gguf_tensor *t = &f->tensors[order[i]->index];
		uint64_t field = t->info_offset; /* errors point at the tensor's info */
		if (t->data_offset % align) {
			TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor '%s' at data offset %" PRIu64 " is not aligned to %" PRIu64,
			        t->name, t->data_offset, align);
			st = fail_at(p->err, TI_E_CORRUPT, field);
		} else if (t->data_offset > data_size || t->nbytes > data_size - t->data_offset) {
			TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensor '%s' (%" PRIu64 " bytes at data offset %" PRIu64 ") ends past "
			        "the file's %" PRIu64 "-byte data section", t->name, t->nbytes, t->data_offset, data_size);
			st = fail_at(p->err, TI_E_CORRUPT, field);
		} else if (i + 1 < f->tensor_count && t->nbytes &&
		           t->data_offset + t->nbytes > order[i + 1]->data_offset) {
			TI_FAIL(p->err, TI_E_CORRUPT, "GGUF tensors '%s' and '%s' overlap", t->name, order[i + 1]->name);
			st = fail_at(p->err, TI_E_CORRUPT, order[i + 1]->info_offset);
		}
		t->offset = start + t->data_offset;
	}
	free(order);
	return st;
}

ti_status ti_gguf_open_fd(int fd, ti_gguf_file **out, ti_error *err)
{
	*out = NULL;
	ti_io *io;
	ti_status st = ti_io_wrap_fd(fd, &io, err);
	if (st)
		return st;
	st = ti_gguf_open_io(io, out, err);
	ti_io_close(io);
	return st;
}

ti_status ti_gguf_open_io(ti_io *io, ti_gguf_file **out, ti_error *err)
{
	*out = NULL;
	ti_gguf_file *f = calloc(1, sizeof(*f));
	unsigned char *buf = malloc(BUFFER);
	if (!f || !buf) {
		free(f);
		free(buf);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading the GGUF header");
	}
	ti_arena_init(&f->arena, ARENA_MAX);
	f->io = ti_io_ref(io);
	f->info.file_size = io->size;
	parser p = {.r = {.io = io, .size = io->size, .buf = buf}, .f = f, .err = err};
	ti_status st = parse(&p);
	free(buf);
	if (st) {
		ti_gguf_close(f);
		return st;
	}
	*out = f;
	return TI_OK;
}

ti_status ti_gguf_open(const char *path, ti_gguf_file **out, ti_error *err)
{
	ti_io *io;
	ti_status st = ti_io_open(path, &io, err);
	if (st)
		return st;
	st = ti_gguf_open_io(io, out, err);
	ti_io_close(io);
	return st;
}

void ti_gguf_close(ti_gguf_file *f)
{
	if (!f)
		return;
	ti_io_close(f->io);
	ti_arena_release(&f->arena);
	free(f);
}

const ti_gguf_info *ti_gguf_file_info(const ti_gguf_file *f) { return &f->info; }
size_t ti_gguf_tensor_count(const ti_gguf_file *f) { return f->tensor_count; }
size_t ti_gguf_kv_count(const ti_gguf_file *f) { return f->kv_count; }

const ti_gguf_tensor *ti_gguf_tensor_at(const ti_gguf_file *f, size_t i)
{
	return i < f->tensor_count ? &f->tensors[i] : NULL;
}

const ti_gguf_kv *ti_gguf_kv_at(const ti_gguf_file *f, size_t i)
{
	return i < f->kv_count ? &f->kvs[i] : NULL;
}

const ti_gguf_kv *ti_gguf_kv_find(const ti_gguf_file *f, const char *key)
{
	for (size_t i = 0; i < f->kv_count; i++)
		if (!strcmp(f->kvs[i].key, key))
			return &f->kvs[i];
	return NULL;
}
