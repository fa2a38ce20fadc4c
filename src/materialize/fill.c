/*
 * fill.c - fill policies: parsing, checking, and filling chunks deterministically (see fill.h).
 *
 * Values are made a chunk at a time in a stack buffer (int64 for arange;
 * float32 or float64 for random fills) and converted with ti_cast(), so every
 * dtype rounds exactly as a cast to it does. Random values come from
 * Philox4x32-10, one block per 4 (or, in float64, 2) elements, addressed by the
 * element's index in its tensor, and are drawn a batch of blocks at a time by
 * the vectorised loops of draw.c.
 */
#include "tinspect/fill.h"

#include <errno.h>
#include <float.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "materialize/draw.h"
#include "materialize/philox.h"
#include "tinspect/cast.h"

/* Elements per chunk of doubles: 2 KiB of stack. */
#define FILL_CHUNK 256
/* A number in a policy: longer than any double needs. */
#define FILL_NUMBER_MAX 64

/* FNV-1a, 64 bits (Fowler, Noll, Vo): the offset basis and the prime of the published algorithm. */
#define FNV64_OFFSET_BASIS UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME UINT64_C(0x100000001b3)

/* ---- the policy table ---- */

static const struct {
	const char *name;
	ti_fill_kind kind;
	int args;
	const char *usage;
} kinds[] = {
	{"empty", TI_FILL_EMPTY, 0, "empty"},
	{"zeros", TI_FILL_ZEROS, 0, "zeros"},
	{"ones", TI_FILL_ONES, 0, "ones"},
	{"full", TI_FILL_FULL, 1, "full:V"},
	{"rand", TI_FILL_RAND, 0, "rand"},
	{"randn", TI_FILL_RANDN, 0, "randn"},
	{"uniform", TI_FILL_UNIFORM, 2, "uniform:A,B"},
	{"normal", TI_FILL_NORMAL, 2, "normal:MEAN,STD"},
	{"arange", TI_FILL_ARANGE, 0, "arange"},
	{"init", TI_FILL_INIT, 0, "init"},
	{"load", TI_FILL_LOAD, 0, "load"},
};
#define KIND_COUNT (sizeof(kinds) / sizeof(kinds[0]))

static int kind_row(ti_fill_kind kind)
{
	for (size_t i = 0; i < KIND_COUNT; i++)
		if (kinds[i].kind == kind)
			return (int)i;
	return -1;
}

/* ---- text ---- */

/* One number of a policy: all of s[0, len), as strtod reads it; integers also exactly. */
static bool parse_number(const char *s, size_t len, double *value, bool *exact, int64_t *as_int)
{
	char text[FILL_NUMBER_MAX];
	if (len == 0 || len >= sizeof(text) || s[0] == ' ' || s[0] == '\t' || s[0] == '\n')
		return false;
	memcpy(text, s, len);
	text[len] = '\0';
	char *end;
	*value = strtod(text, &end); /* "1e999" is inf, as Python's float() has it */
	if (end != text + len)
		return false;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	*exact = end == text + len && errno == 0;
	*as_int = *exact ? (int64_t)v : 0;
	return true;
}

static ti_status bad_policy(const char *text, int row, ti_error *err)
{
	return TI_FAIL(err, TI_E_INVALID, "bad fill policy '%s': expected %s", text, kinds[row].usage);
}

ti_status ti_fill_parse(const char *text, ti_fill_policy *out, ti_error *err)
{
	if (!text || !out)
		return TI_FAIL(err, TI_E_INVALID, "fill policy without text");
	const char *colon = strchr(text, ':');
	size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
	int row = -1;
	for (size_t i = 0; i < KIND_COUNT; i++)
		if (strlen(kinds[i].name) == name_len && !memcmp(kinds[i].name, text, name_len))
			row = (int)i;
	if (row < 0) {
		char list[256] = "";
		for (size_t i = 0; i < KIND_COUNT; i++) {
			size_t used = strlen(list);
			snprintf(list + used, sizeof(list) - used, "%s%s", i == 0 ? "" : i + 1 == KIND_COUNT ? " or " : ", ",
			         kinds[i].usage);
		}
		return TI_FAIL(err, TI_E_INVALID, "unknown fill policy '%s': expected %s", text, list);
	}
	ti_fill_policy p = ti_fill_constant(kinds[row].kind);
	if (kinds[row].args == 0) {
		if (colon)
			return bad_policy(text, row, err);
		*out = p;
		return TI_OK;
	}
	if (!colon)
		return bad_policy(text, row, err);
	const char *args = colon + 1, *comma = strchr(args, ',');
	bool exact;
	int64_t as_int;
	if (kinds[row].args == 1) {
		if (comma || !parse_number(args, strlen(args), &p.a, &p.exact, &p.a_int))
			return bad_policy(text, row, err);
		*out = p;
		return TI_OK;
	}
	if (!comma || !parse_number(args, (size_t)(comma - args), &p.a, &exact, &as_int) ||
	    !parse_number(comma + 1, strlen(comma + 1), &p.b, &exact, &as_int))
		return bad_policy(text, row, err);
	if (p.kind == TI_FILL_UNIFORM && !(p.a <= p.b))
		return TI_FAIL(err, TI_E_INVALID,
		               "bad fill policy '%s': uniform_ expects to return a [from, to) range, but found from=%g > to=%g",
		               text, p.a, p.b);
	if (p.kind == TI_FILL_NORMAL && !(p.b >= 0.0))
		return TI_FAIL(err, TI_E_INVALID, "bad fill policy '%s': normal expects std >= 0.0, but found std %g",
		               text, p.b);
	*out = p;
	return TI_OK;
}

/* The shortest %g that reads back as the same double. */
static void format_number(double v, char *buf, size_t size)
{
	for (int precision = 1; precision <= 17; precision++) {
		snprintf(buf, size, "%.*g", precision, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void ti_fill_format(const ti_fill_policy *policy, char *buf, size_t size)
{
	if (!buf || size == 0)
		return;
	int row = policy ? kind_row(policy->kind) : -1;
	if (row < 0) {
		snprintf(buf, size, "invalid");
		return;
	}
	char a[32], b[32];
	switch (kinds[row].args) {
	case 0:
		snprintf(buf, size, "%s", kinds[row].name);
		return;
	case 1:
		if (policy->exact)
			snprintf(a, sizeof(a), "%lld", (long long)policy->a_int);
		else
			format_number(policy->a, a, sizeof(a));
		snprintf(buf, size, "%s:%s", kinds[row].name, a);
		return;
	default:
		format_number(policy->a, a, sizeof(a));
		format_number(policy->b, b, sizeof(b));
		snprintf(buf, size, "%s:%s,%s", kinds[row].name, a, b);
		return;
	}
}

/* ---- checks ---- */

static bool is_float(ti_dtype dt)
{
	return dt == TI_DT_FLOAT32 || dt == TI_DT_FLOAT64 || dt == TI_DT_FLOAT16 || dt == TI_DT_BFLOAT16;
}

/* The largest finite value of a float dtype. */
static double float_max(ti_dtype dt)
{
	switch (dt) {
	case TI_DT_FLOAT16: return 65504.0;
	case TI_DT_BFLOAT16: return 0x1.fep127; /* 0x7F7F */
	case TI_DT_FLOAT32: return FLT_MAX;
	default: return DBL_MAX;
	}
}

/* An integer dtype's range, as int64 bounds (uint64's top is clipped: it only matters for exact values). */
static void int_range(ti_dtype dt, int64_t *lo, uint64_t *hi)
{
	size_t bits = 8 * ti_dtype_size(dt);
	bool is_unsigned = dt == TI_DT_UINT8 || dt == TI_DT_UINT16 || dt == TI_DT_UINT32 || dt == TI_DT_UINT64;
	if (is_unsigned) {
		*lo = 0;
		*hi = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
	} else {
		*lo = bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
		*hi = bits == 64 ? (uint64_t)INT64_MAX : (UINT64_C(1) << (bits - 1)) - 1;
	}
}

/* c10's overflows<To, From>(): what torch.full refuses. */
static bool full_overflows(const ti_fill_policy *p, ti_dtype dt)
{
	if (dt == TI_DT_BOOL)
		return false;
	if (is_float(dt)) {
		double max = float_max(dt), v = p->exact ? (double)p->a_int : p->a;
		return isfinite(v) && (v > max || v < -max); /* inf and NaN are values of a float */
	}
	int64_t lo;
	uint64_t hi;
	int_range(dt, &lo, &hi);
	if (!p->exact) /* NaN and inf overflow; uint64's top is 2^64 exclusive, where the cast is defined */
		return !(p->a >= (double)lo && (dt == TI_DT_UINT64 ? p->a < 0x1p64 : p->a <= (double)hi));
	if (lo == 0) /* unsigned: negative values may wrap, down to -max */
		return (p->a_int >= 0 && (uint64_t)p->a_int > hi) || (p->a_int < 0 && -(uint64_t)p->a_int > hi);
	return p->a_int < lo || (p->a_int > 0 && (uint64_t)p->a_int > hi);
}

/* Refuses a policy for a dtype: "fill policy 'TEXT': WHY". */
static ti_status refuse(ti_error *err, ti_status code, const ti_fill_policy *policy, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static ti_status refuse(ti_error *err, ti_status code, const ti_fill_policy *policy, const char *fmt, ...)
{
	char text[TI_FILL_TEXT_MAX], why[256];
	ti_fill_format(policy, text, sizeof(text));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return TI_FAIL(err, code, "fill policy '%s': %s", text, why);
}

ti_status ti_fill_check(const ti_fill_policy *policy, ti_dtype dtype, ti_error *err)
{
	if (!policy || kind_row(policy->kind) < 0)
		return TI_FAIL(err, TI_E_INVALID, "bad fill policy kind %d", policy ? (int)policy->kind : -1);
	if (ti_dtype_is_sub_byte(dtype)) /* packed elements: no fill computes them, only 'load' copies them */
		return refuse(err, TI_E_UNSUPPORTED, policy, "cannot write %s tensors (a sub-byte dtype, whose bytes only 'load' copies)",
		              ti_dtype_name(dtype));
	if (ti_dtype_size(dtype) == 0)
		return refuse(err, TI_E_INVALID, policy, "invalid dtype");
	switch (policy->kind) {
	case TI_FILL_EMPTY:
	case TI_FILL_ZEROS:
		return TI_OK;
	case TI_FILL_INIT:
		return refuse(err, TI_E_INVALID, policy, "a module's initialisation is resolved per tensor before filling");
	case TI_FILL_LOAD:
		return refuse(err, TI_E_INVALID, policy, "the checkpoint's bytes are copied, not filled");
	default:
		break;
	}
	if (!ti_cast_supported(TI_DT_INT64, dtype))
		return refuse(err, TI_E_UNSUPPORTED, policy, "cannot write %s tensors", ti_dtype_name(dtype));
	const char *scalar = ti_cast_scalar_type_name(dtype);
	switch (policy->kind) {
	case TI_FILL_ONES:
		return TI_OK;
	case TI_FILL_FULL:
		if (full_overflows(policy, dtype))
			return refuse(err, TI_E_INVALID, policy, "value cannot be converted to type %s without overflow",
			              ti_dtype_name(dtype));
		return TI_OK;
	case TI_FILL_ARANGE:
		if (dtype == TI_DT_BOOL)
			return refuse(err, TI_E_INVALID, policy, "\"arange_cpu\" not implemented for '%s'", scalar);
		return TI_OK;
	case TI_FILL_RANDN:
	case TI_FILL_NORMAL:
		if (!is_float(dtype))
			return refuse(err, TI_E_INVALID, policy, "\"normal_kernel_cpu\" not implemented for '%s'", scalar);
		if (!(policy->b >= 0.0))
			return refuse(err, TI_E_INVALID, policy, "normal expects std >= 0.0, but found std %g", policy->b);
		return TI_OK;
	default: { /* rand, uniform: uniform_'s checks */
		if (!is_float(dtype))
			return refuse(err, TI_E_INVALID, policy, "\"check_uniform_bounds\" not implemented for '%s'", scalar);
		double max = float_max(dtype), from = policy->a, to = policy->b;
		if (!(from >= -max && from <= max))
			return refuse(err, TI_E_INVALID, policy, "from is out of bounds for %s", ti_dtype_name(dtype));
		if (!(to >= -max && to <= max))
			return refuse(err, TI_E_INVALID, policy, "to is out of bounds for %s", ti_dtype_name(dtype));
		if (!(from <= to))
			return refuse(err, TI_E_INVALID, policy,
			              "uniform_ expects to return a [from, to) range, but found from=%g > to=%g", from, to);
		if (!(to - from <= max))
			return refuse(err, TI_E_INVALID, policy, "to - from exceeds the largest %s", ti_dtype_name(dtype));
		return TI_OK;
	}
	}
}

/* ---- the generator ---- */

ti_fill_key ti_fill_key_of(uint64_t seed, const char *name)
{
	uint64_t h = FNV64_OFFSET_BASIS;
	for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++) {
		h ^= *p;
		h *= FNV64_PRIME;
	}
	return (ti_fill_key){.seed = seed, .stream = h};
}

/* ---- filling ---- */

/* One element of the constant a policy writes. */
static ti_status constant_element(const ti_fill_policy *p, ti_dtype dt, unsigned char *out, ti_error *err)
{
	if (is_float(dt))
		return p->exact ? ti_cast(TI_DT_INT64, &p->a_int, dt, out, 1, TI_CAST_NAN_SCALAR, err)
		                : ti_cast(TI_DT_FLOAT64, &p->a, dt, out, 1, TI_CAST_NAN_SCALAR, err);
	if (dt == TI_DT_BOOL) {
		out[0] = p->exact ? p->a_int != 0 : p->a != 0; /* NaN is true */
		return TI_OK;
	}
	/* in range (checked), so truncation is static_cast's; 2^63 into int64 is x86's INT64_MIN, as in torch */
	if (!p->exact && p->a >= 0x1p63 && dt == TI_DT_UINT64) {
		uint64_t u = (uint64_t)p->a;
		return ti_cast(TI_DT_UINT64, &u, dt, out, 1, 0, err);
	}
	int64_t v = p->exact ? p->a_int : p->a >= 0x1p63 ? INT64_MIN : (int64_t)p->a;
	return ti_cast(TI_DT_INT64, &v, dt, out, 1, 0, err);
}

static ti_status fill_constant(const ti_fill_policy *p, ti_dtype dt, size_t n, unsigned char *buf, ti_error *err)
{
	size_t size = ti_dtype_size(dt);
	unsigned char element[16];
	ti_status st = constant_element(p, dt, element, err);
	if (st)
		return st;
	for (size_t i = 0; i < n; i++)
		memcpy(buf + i * size, element, size);
	return TI_OK;
}

static ti_status fill_arange(ti_dtype dt, uint64_t offset, size_t n, unsigned char *buf, ti_error *err)
{
	size_t size = ti_dtype_size(dt);
	int64_t index[FILL_CHUNK];
	for (size_t done = 0; done < n;) {
		size_t k = n - done < FILL_CHUNK ? n - done : FILL_CHUNK;
		for (size_t j = 0; j < k; j++)
			index[j] = (int64_t)(offset + done + j);
		ti_status st = ti_cast(TI_DT_INT64, index, dt, buf + done * size, k, 0, err);
		if (st)
			return st;
		done += k;
	}
	return TI_OK;
}

/*
 * Elements [offset, offset + n), a batch of TI_PHILOX_BATCH blocks at a time:
 * each batch is drawn whole (draw.c) and the part of it in the range kept, so
 * that an element's value depends on its index alone.
 */
static ti_status fill_random(const ti_fill_policy *p, ti_dtype dt, ti_fill_key key, uint64_t offset, size_t n,
                             unsigned char *buf, ti_error *err)
{
	size_t size = ti_dtype_size(dt);
	bool normal = p->kind == TI_FILL_RANDN || p->kind == TI_FILL_NORMAL, wide = dt == TI_DT_FLOAT64;
	int bits = dt == TI_DT_FLOAT16 ? 11 : dt == TI_DT_BFLOAT16 ? 8 : 24; /* the dtype's significand */
	/* value = a + scale * x */
	double a = p->a, scale = normal ? p->b : p->b - p->a;
	/* elements per batch: a block gives four, or two in float64 */
	size_t per_batch = wide ? TI_DRAW_WORDS / 2 : TI_DRAW_WORDS, per_block = per_batch / TI_PHILOX_BATCH;
	const uint32_t seed[2] = {(uint32_t)key.seed, (uint32_t)(key.seed >> 32)};
	uint64_t block = offset / per_block;
	size_t skip = (size_t)(offset % per_block);
	uint32_t w[TI_DRAW_WORDS];
	float f[TI_DRAW_WORDS];
	double d[TI_DRAW_WORDS / 2];
	for (size_t done = 0; done < n; block += TI_PHILOX_BATCH, skip = 0) {
		size_t k = n - done < per_batch - skip ? n - done : per_batch - skip;
		ti_philox4x32_10_batch(block, key.stream, seed, w);
		ti_status st;
		if (wide) {
			if (normal)
				ti_draw_normal_f64(w, d);
			else
				ti_draw_uniform_f64(w, d);
			ti_draw_affine_f64(a, scale, d);
			st = ti_cast(TI_DT_FLOAT64, d + skip, dt, buf + done * size, k, TI_CAST_NAN_SCALAR, err);
		} else {
			if (normal)
				ti_draw_normal_f32(w, f);
			else
				ti_draw_uniform_f32(w, bits, f);
			ti_draw_affine_f32(a, scale, f);
			st = ti_cast(TI_DT_FLOAT32, f + skip, dt, buf + done * size, k, TI_CAST_NAN_SCALAR, err);
		}
		if (st)
			return st;
		done += k;
	}
	return TI_OK;
}

/*
 * Random fills of many elements run on every core: element i's value depends
 * only on i, so splitting the range changes no byte, only the time taken.
 */
enum { THREADS_MAX = 16, PARALLEL_MIN = 1 << 20 };

typedef struct fill_job {
	const ti_fill_policy *policy;
	ti_dtype dtype;
	ti_fill_key key;
	uint64_t offset;
	size_t n;
	unsigned char *buf;
	ti_status status;
	ti_error err;
} fill_job;

static void *run_job(void *arg)
{
	fill_job *j = arg;
	ti_error_clear(&j->err);
	j->status = fill_random(j->policy, j->dtype, j->key, j->offset, j->n, j->buf, &j->err);
	return NULL;
}

static ti_status fill_random_parallel(const ti_fill_policy *p, ti_dtype dt, ti_fill_key key, uint64_t offset,
                                      size_t n, unsigned char *buf, ti_error *err)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cores < 1 ? 1 : cores > THREADS_MAX ? THREADS_MAX : (int)cores;
	if (n < PARALLEL_MIN || threads == 1)
		return fill_random(p, dt, key, offset, n, buf, err);
	fill_job jobs[THREADS_MAX];
	pthread_t ids[THREADS_MAX];
	bool started[THREADS_MAX] = {false};
	size_t size = ti_dtype_size(dt), per = (n + (size_t)threads - 1) / (size_t)threads;
	for (int t = 0; t < threads; t++) {
		size_t first = (size_t)t * per, count = first >= n ? 0 : n - first < per ? n - first : per;
		jobs[t] = (fill_job){p, dt, key, offset + first, count, buf + first * size, TI_OK, {0}};
		if (t && count)
			started[t] = !pthread_create(&ids[t], NULL, run_job, &jobs[t]);
		if (t && count && !started[t])
			run_job(&jobs[t]); /* no thread to be had: do it here */
	}
	run_job(&jobs[0]);
	ti_status st = jobs[0].status;
	if (st)
		*err = jobs[0].err;
	for (int t = 1; t < threads; t++) {
		if (started[t])
			pthread_join(ids[t], NULL);
		if (!st && jobs[t].status) {
			st = jobs[t].status;
			*err = jobs[t].err;
		}
	}
	return st;
}

ti_status ti_fill(const ti_fill_policy *policy, ti_dtype dtype, ti_fill_key key, uint64_t offset, size_t n,
                  void *buf, ti_error *err)
{
	ti_status st = ti_fill_check(policy, dtype, err);
	if (st)
		return st;
	size_t size = ti_dtype_size(dtype);
	if (n > UINT64_MAX - offset || n > SIZE_MAX / size)
		return TI_FAIL(err, TI_E_INVALID, "fill of %zu elements at %llu runs past the largest index", n,
		               (unsigned long long)offset);
	if (n == 0 || policy->kind == TI_FILL_EMPTY)
		return TI_OK;
	if (!buf)
		return TI_FAIL(err, TI_E_INVALID, "fill of %zu elements without a buffer", n);
	unsigned char *out = buf;
	switch (policy->kind) {
	case TI_FILL_ZEROS:
		memset(out, 0, n * size);
		break;
	case TI_FILL_ONES:
	case TI_FILL_FULL:
		st = fill_constant(policy, dtype, n, out, err);
		break;
	case TI_FILL_ARANGE:
		st = fill_arange(dtype, offset, n, out, err);
		break;
	default:
		st = fill_random_parallel(policy, dtype, key, offset, n, out, err);
		break;
	}
	if (st)
		return st;
	/* the zeroed rows that fall in this chunk */
	uint64_t begin = policy->zero_begin > offset ? policy->zero_begin : offset;
	uint64_t end = policy->zero_end < offset + n ? policy->zero_end : offset + n;
	if (begin < end)
		memset(out + (begin - offset) * size, 0, (end - begin) * size);
	return TI_OK;
}

/* ---- overrides ---- */

void ti_fill_table_init(ti_fill_table *table, ti_arena *arena)
{
	table->arena = arena;
	table->items = NULL;
	table->count = table->capacity = 0;
}

ti_status ti_fill_table_add(ti_fill_table *table, const char *spec, ti_error *err)
{
	const char *eq = spec ? strrchr(spec, '=') : NULL;
	if (!eq || eq == spec)
		return TI_FAIL(err, TI_E_INVALID, "bad fill override '%s': expected GLOB=POLICY", spec ? spec : "");
	ti_fill_policy policy;
	ti_error inner;
	ti_error_clear(&inner);
	if (ti_fill_parse(eq + 1, &policy, &inner))
		return TI_FAIL(err, inner.code, "bad fill override '%s': %s", spec, inner.message);
	if (table->count == TI_FILL_TABLE_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "too many fill overrides: at most %d", TI_FILL_TABLE_MAX);
	if (table->count == table->capacity) {
		size_t capacity = table->capacity ? 2 * table->capacity : 8;
		if (capacity > TI_FILL_TABLE_MAX)
			capacity = TI_FILL_TABLE_MAX;
		ti_fill_override *items = ti_arena_calloc(table->arena, capacity, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for fill overrides");
		if (table->count)
			memcpy(items, table->items, table->count * sizeof(*items));
		table->items = items;
		table->capacity = capacity;
	}
	const char *glob = ti_arena_strndup(table->arena, spec, (size_t)(eq - spec));
	const char *text = ti_arena_strdup(table->arena, eq + 1);
	if (!glob || !text)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for fill overrides");
	table->items[table->count++] = (ti_fill_override){.glob = glob, .text = text, .policy = policy};
	return TI_OK;
}

const ti_fill_override *ti_fill_table_lookup(const ti_fill_table *table, const char *name)
{
	for (size_t i = table->count; i-- > 0;)
		if (fnmatch(table->items[i].glob, name, 0) == 0)
			return &table->items[i];
	return NULL;
}
