/*
 * diff.c - two sources compared by name (diff.h).
 *
 * Reading: the pairs in the order their bytes lie in A's files
 * (ti_source_read_order), each view in chunks through view.h (one pread
 * per chunk of a contiguous view, gathered through the strides
 * otherwise), A's chunk then B's; the kernel reads ahead in both files
 * meanwhile (view.c). A chunk whose bytes are the same on both sides
 * costs one memcmp. The comparison loop has a vector body per dtype pair
 * that matters (float32, float64); everything else is cast to float64 by
 * ti_cast first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tinspect/cast.h"
#include "tinspect/checkpoint.h"
#include "tinspect/diff.h"
#include "tinspect/value.h"
#include "tinspect/view.h"
#include "util/strmap.h"
#include "util/vec.h"

/* Each side's raw buffer: TI_DIFF_CHUNK float64 values, or fewer of a wider dtype. */
#define RAW_BYTES (TI_DIFF_CHUNK * 8)
/* A non-tensor value's repr is compared up to this many characters. */
#define REPR_MAX 4096

typedef struct scratch {
	unsigned char *raw[2];
	double *dbl[2];
	ti_view_reader view; /* both sides' strided reads, one at a time */
} scratch;

static void scratch_release(scratch *s)
{
	for (int i = 0; i < 2; i++) {
		free(s->raw[i]);
		free(s->dbl[i]);
	}
	ti_view_reader_release(&s->view);
	memset(s, 0, sizeof(*s));
}

static ti_status scratch_need(scratch *s, bool doubles, ti_error *err)
{
	for (int i = 0; i < 2; i++) {
		if (!s->raw[i] && !(s->raw[i] = malloc(RAW_BYTES)))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a %zu-byte read buffer", (size_t)RAW_BYTES);
		if (doubles && !s->dbl[i] && !(s->dbl[i] = malloc(TI_DIFF_CHUNK * sizeof(double))))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the comparison buffers");
	}
	return TI_OK;
}

static ti_status check_view(ti_source *src, const ti_source_tensor *t, ti_error *err)
{
	return ti_view_check(src, t, err);
}

/* Elements first .. first+n-1 of view t, in logical (row-major) order, into out. */
static ti_status read_view(ti_source *src, const ti_source_tensor *t, int64_t first, size_t n, unsigned char *out,
                           scratch *s, ti_error *err)
{
	return ti_view_read(&s->view, src, t, first, n, out, err);
}

/* How many elements of each side one chunk holds: a multiple of 8, so that a sub-byte dtype's chunk ends on a byte. */
static size_t chunk_elements(ti_dtype a, ti_dtype b)
{
	size_t bits = ti_dtype_bits(a) > ti_dtype_bits(b) ? ti_dtype_bits(a) : ti_dtype_bits(b);
	size_t n = RAW_BYTES * 8 / bits;
	n = n < TI_DIFF_CHUNK ? n : TI_DIFF_CHUNK;
	return n - n % 8;
}

/* The bytes k elements of dt fill (packed for a sub-byte dtype, whose reads end on a byte). */
static size_t bytes_of(ti_dtype dt, size_t k)
{
	uint64_t n = 0;
	ti_dtype_nbytes(dt, k, &n);
	return (size_t)n;
}

/*
 * How many of k elements of dt differ, bit for bit. A sub-byte dtype's
 * element i is bits [i * bits, (i + 1) * bits) counted from the lowest bit
 * of the first byte (F4: the low nibble first, as PyTorch's
 * float4_e2m1fn_x2 pairs them; safetensors fixes no order within a byte,
 * and only the count of a float6 depends on it).
 */
static uint64_t differing_elements(ti_dtype dt, const unsigned char *a, const unsigned char *b, size_t k)
{
	size_t es = ti_dtype_size(dt), bits = ti_dtype_bits(dt);
	uint64_t n = 0;
	for (size_t i = 0; i < k; i++) {
		if (es) {
			n += memcmp(a + i * es, b + i * es, es) != 0;
			continue;
		}
		unsigned differ = 0;
		for (size_t p = i * bits; p < (i + 1) * bits; p++)
			differ |= (unsigned)((a[p / 8] ^ b[p / 8]) >> (p % 8)) & 1;
		n += differ;
	}
	return n;
}

typedef struct stats {
	double max_abs, max_rel;
	uint64_t not_close;
	bool nan;
} stats;

/*
 * The comparison loop, one body per element type: equal elements (and two
 * NaNs) count nothing. Two elements at a time as float64 vectors
 * (util/vec.h), each lane the plain loop's body without its branches:
 *
 *     if (x == y) continue;                       one NaN: not close, and NaN
 *     d = |x - y|, ay = |y|, r = d / ay           (d > 0 here, so ay == 0 gives +inf)
 *     max_abs = max(d), max_rel = max(r)          r is NaN for inf against -inf: skipped
 *     not_close += !(d <= atol + rtol * ay)
 *
 * Neither d nor a kept r is ever NaN, so the largest values of the lanes
 * are the plain loop's, whatever the order. r is computed only where it
 * may pass m = max_rel (m >= 0, not NaN): if fl(d / ay) > m then d / ay > m
 * (rounding is monotone and m a double), so d > m * ay; p = fl(m * ay) is
 * the double nearest m * ay, so when p >= m * ay no double lies between
 * them and d >= p, and when p < m * ay, d > p. Hence d >= p is a test that
 * keeps every element whose r passes m (overflow to inf included: then
 * d is inf too), and r itself decides.
 */
typedef struct compare_lanes {
	ti_f64x2 atol, rtol, max_abs, max_rel;
	ti_i64x2 not_close, one_nan; /* minus the counts: a true compare is -1 */
} compare_lanes;

static inline void compare_f64x2(ti_f64x2 x, ti_f64x2 y, compare_lanes *l)
{
	ti_i64x2 x_nan = x != x, y_nan = y != y, one_nan = x_nan ^ y_nan;
	ti_i64x2 differ = (x != y) & ~(x_nan | y_nan);
	ti_f64x2 d = ti_abs_f64x2(x - y), ay = ti_abs_f64x2(y);
	l->max_abs = ti_select_f64x2(differ & (d > l->max_abs), d, l->max_abs);
	ti_i64x2 may_pass = differ & (d >= l->max_rel * ay);
	if (ti_any_i64x2(may_pass)) { /* rare once max_rel has grown: the division is the loop's slowest step */
		ti_f64x2 r = d / ay;
		l->max_rel = ti_select_f64x2(may_pass & (r > l->max_rel), r, l->max_rel);
	}
	l->not_close += (differ & ~(d <= l->atol + l->rtol * ay)) + one_nan;
	l->one_nan |= one_nan;
}

static void compare_begin(compare_lanes *l, double atol, double rtol, const stats *s)
{
	*l = (compare_lanes){.atol = {atol, atol}, .rtol = {rtol, rtol}, .max_abs = {s->max_abs, s->max_abs},
	                     .max_rel = {s->max_rel, s->max_rel}};
}

static void compare_end(const compare_lanes *l, stats *s)
{
	for (int k = 0; k < 2; k++) {
		s->max_abs = l->max_abs[k] > s->max_abs ? l->max_abs[k] : s->max_abs;
		s->max_rel = l->max_rel[k] > s->max_rel ? l->max_rel[k] : s->max_rel;
		s->not_close += (uint64_t)-l->not_close[k];
		s->nan |= l->one_nan[k] != 0;
	}
}

/*
 * Two lane sets side by side, four elements a step: each set's maxima and
 * counts are a chain from one step to the next, and two chains keep the
 * processor busy while one waits (the lanes' order does not change the
 * result, above). Compiled for AVX2 as well (TI_AVX2_CLONES): its
 * three-operand forms drop the register copies SSE2's two-operand ones
 * need.
 */
#define COMPARE_LOOP(LOAD, a, b, n, atol, rtol, s)                                                                    \
	do {                                                                                                          \
		compare_lanes l0, l1;                                                                                 \
		compare_begin(&l0, atol, rtol, s);                                                                    \
		compare_begin(&l1, atol, rtol, s);                                                                    \
		size_t i = 0;                                                                                         \
		for (; i + 4 <= n; i += 4) {                                                                          \
			compare_f64x2(LOAD(a + i), LOAD(b + i), &l0);                                                 \
			compare_f64x2(LOAD(a + i + 2), LOAD(b + i + 2), &l1);                                         \
		}                                                                                                     \
		for (; i + 2 <= n; i += 2)                                                                            \
			compare_f64x2(LOAD(a + i), LOAD(b + i), &l0);                                                 \
		if (i < n) /* the last, alone: the other lane equal, 0 against 0 */                                   \
			compare_f64x2((ti_f64x2){a[i], 0}, (ti_f64x2){b[i], 0}, &l1);                                 \
		compare_end(&l0, s);                                                                                  \
		compare_end(&l1, s);                                                                                  \
	} while (0)

TI_AVX2_CLONES static void compare_float(const float *a, const float *b, size_t n, double atol, double rtol,
                                         stats *s)
{
	COMPARE_LOOP(ti_widen_f64x2, a, b, n, atol, rtol, s);
}

TI_AVX2_CLONES static void compare_double(const double *a, const double *b, size_t n, double atol, double rtol,
                                          stats *s)
{
	COMPARE_LOOP(ti_load_f64x2, a, b, n, atol, rtol, s);
}

/* A 64-bit hash of bytes, for pairing renamed tensors (a match is then compared byte for byte). */
static uint64_t hash_bytes(uint64_t h, const unsigned char *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9E3779B97F4A7C15ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 0x100000001B3ull;
	return h;
}

static ti_status hash_view(ti_source *src, const ti_source_tensor *t, scratch *s, uint64_t *out, ti_error *err)
{
	ti_status st = scratch_need(s, false, err);
	if (st || (st = check_view(src, t, err)))
		return st;
	size_t n = chunk_elements(t->dtype, t->dtype);
	uint64_t h = 0xCBF29CE484222325ull;
	for (int64_t first = 0; first < t->numel; first += (int64_t)n) {
		size_t k = (uint64_t)(t->numel - first) < n ? (size_t)(t->numel - first) : n;
		if ((st = read_view(src, t, first, k, s->raw[0], s, err)))
			return st;
		h = hash_bytes(h, s->raw[0], bytes_of(t->dtype, k));
	}
	*out = h;
	return TI_OK;
}

/* Bytes read of both sides so far and in all, for options.progress. */
typedef struct read_count {
	uint64_t done, total;
} read_count;

/*
 * Reads ta (of a) and tb (of b), same numel, chunk by chunk and compares
 * them into e, counting the bytes into count. which is set to the side
 * whose read failed.
 */
static ti_status compare_values(ti_source *a, const ti_source_tensor *ta, ti_source *b, const ti_source_tensor *tb,
                                const ti_diff_options *o, scratch *s, ti_diff_tensor *e, int *which,
                                read_count *count, ti_error *err)
{
	bool same_dtype = ta->dtype == tb->dtype;
	bool fast = same_dtype && (ta->dtype == TI_DT_FLOAT32 || ta->dtype == TI_DT_FLOAT64);
	bool numeric = fast || (ti_cast_supported(ta->dtype, TI_DT_FLOAT64) && ti_cast_supported(tb->dtype, TI_DT_FLOAT64));
	ti_status st = scratch_need(s, numeric && !fast, err);
	if (st)
		return st;
	*which = 0;
	if ((st = check_view(a, ta, err)))
		return st;
	*which = 1;
	if ((st = check_view(b, tb, err)))
		return st;
	size_t n = chunk_elements(ta->dtype, tb->dtype);
	stats acc = {.max_abs = 0, .max_rel = 0};
	bool identical = same_dtype;
	for (int64_t first = 0; first < ta->numel; first += (int64_t)n) {
		size_t k = (uint64_t)(ta->numel - first) < n ? (size_t)(ta->numel - first) : n;
		*which = 0;
		if ((st = read_view(a, ta, first, k, s->raw[0], s, err)))
			return st;
		*which = 1;
		if ((st = read_view(b, tb, first, k, s->raw[1], s, err)))
			return st;
		if (o->progress) {
			count->done += bytes_of(ta->dtype, k) + bytes_of(tb->dtype, k);
			o->progress(o->progress_user, count->done, count->total);
		}
		if (same_dtype && !memcmp(s->raw[0], s->raw[1], bytes_of(ta->dtype, k)))
			continue; /* the same bytes: the same values, NaNs included */
		identical = false;
		if (fast && ta->dtype == TI_DT_FLOAT32) {
			compare_float((const float *)(void *)s->raw[0], (const float *)(void *)s->raw[1], k, o->atol, o->rtol,
			              &acc);
		} else if (fast) {
			compare_double((const double *)(void *)s->raw[0], (const double *)(void *)s->raw[1], k, o->atol,
			               o->rtol, &acc);
		} else if (numeric) {
			*which = 0;
			if ((st = ti_cast(ta->dtype, s->raw[0], TI_DT_FLOAT64, s->dbl[0], k, 0, err)))
				return st;
			*which = 1;
			if ((st = ti_cast(tb->dtype, s->raw[1], TI_DT_FLOAT64, s->dbl[1], k, 0, err)))
				return st;
			compare_double(s->dbl[0], s->dbl[1], k, o->atol, o->rtol, &acc);
		} else { /* same dtype that has no float64 reading (complex, float8, quantized, sub-byte): bits only */
			acc.not_close += differing_elements(ta->dtype, s->raw[0], s->raw[1], k);
		}
	}
	e->compared = true;
	e->bit_identical = identical;
	e->has_max = numeric;
	e->max_abs = acc.nan ? NAN : acc.max_abs;
	e->max_rel = acc.nan ? NAN : acc.max_rel;
	e->not_close = acc.not_close;
	if (acc.not_close)
		e->changes |= TI_DIFF_VALUES;
	return TI_OK;
}

static bool same_shape(const ti_source_tensor *x, const ti_source_tensor *y)
{
	if (x->ndim != y->ndim)
		return false;
	for (int i = 0; i < x->ndim; i++)
		if (x->shape[i] != y->shape[i])
			return false;
	return true;
}

static bool has_data(ti_source *src, const ti_source_tensor *t)
{
	const ti_source_storage *s = ti_source_storage_at(src, t->storage);
	return s && (s->has_data || ti_source_generator_of(src, t->storage, NULL));
}

/* Why the values of a pair cannot be compared, or NULL. */
static const char *why_not_comparable(ti_source *a, const ti_source_tensor *ta, ti_source *b,
                                      const ti_source_tensor *tb)
{
	if (!same_shape(ta, tb))
		return "shape changed";
	if (ta->unsupported || tb->unsupported)
		return ta->unsupported ? ta->unsupported : tb->unsupported;
	if (!has_data(a, ta))
		return "no data in A";
	if (!has_data(b, tb))
		return "no data in B";
	if (ta->dtype != tb->dtype &&
	    !(ti_cast_supported(ta->dtype, TI_DT_FLOAT64) && ti_cast_supported(tb->dtype, TI_DT_FLOAT64)))
		return "dtypes cannot be compared as numbers";
	return NULL;
}

static const int64_t *copy_dims(ti_arena *arena, const int64_t *d, int n)
{
	int64_t *c = ti_arena_calloc(arena, n > 0 ? (size_t)n : 1, sizeof(int64_t));
	if (c && n > 0)
		memcpy(c, d, (size_t)n * sizeof(int64_t));
	return c;
}

static ti_status fill_side(ti_diff_tensor *e, const ti_source_tensor *t, bool side_b, ti_arena *arena, ti_error *err)
{
	const int64_t *shape = copy_dims(arena, t->shape, t->ndim);
	if (!shape)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the diff");
	if (side_b) {
		e->in_b = true;
		e->dtype_b = t->dtype;
		e->ndim_b = t->ndim;
		e->shape_b = shape;
	} else {
		e->in_a = true;
		e->dtype_a = t->dtype;
		e->ndim_a = t->ndim;
		e->shape_a = shape;
	}
	return TI_OK;
}

/* name -> index + 1 of src's tensors. */
static ti_status index_names(ti_source *src, ti_strmap *map, ti_error *err)
{
	size_t n = ti_source_tensor_count(src);
	for (size_t i = 0; i < n; i++) {
		void *old;
		if (ti_strmap_add(map, ti_source_tensor_at(src, i)->name, (void *)(uintptr_t)(i + 1), &old) < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the tensor names");
	}
	return TI_OK;
}

static size_t lookup(const ti_strmap *map, const char *name)
{
	return (size_t)(uintptr_t)ti_strmap_get(map, name); /* 0: absent */
}

/*
 * Ties: for each tensor in both, the first tensor in both (A's order) that
 * shares its storage in A, and in B. first[] maps a storage to it.
 */
static ti_status find_ties(ti_source *src, const size_t *tensor_of, size_t n, ti_diff_tensor *rows, bool side_b,
                           ti_error *err)
{
	size_t ns = ti_source_storage_count(src);
	size_t *first = malloc((ns ? ns : 1) * sizeof(size_t));
	if (!first)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ties");
	for (size_t i = 0; i < ns; i++)
		first[i] = SIZE_MAX;
	for (size_t r = 0; r < n; r++) {
		if (!rows[r].in_a || !rows[r].in_b || tensor_of[r] == SIZE_MAX)
			continue;
		size_t storage = ti_source_tensor_at(src, tensor_of[r])->storage;
		if (storage >= ns)
			continue;
		if (first[storage] == SIZE_MAX)
			first[storage] = r;
		else if (side_b)
			rows[r].tie_b = rows[first[storage]].name;
		else
			rows[r].tie_a = rows[first[storage]].name;
	}
	free(first);
	return TI_OK;
}

static bool same_str(const char *x, const char *y)
{
	return x == y || (x && y && !strcmp(x, y));
}

/* Non-tensor values of src by name, as reprs, into names[]/reprs[] (arena). */
typedef struct value_list {
	const char **names, **reprs;
	size_t count;
} value_list;

static ti_status list_values(ti_source *src, const char *prefix, ti_arena *arena, value_list *out, ti_error *err)
{
	size_t plen = prefix ? strlen(prefix) : 0;
	size_t n_entries = 0, n_meta = ti_source_metadata_count(src);
	const ti_entry *entries = ti_source_entries(src, &n_entries, err);
	if (!entries && err->code)
		return err->code;
	size_t cap = n_entries + n_meta;
	out->names = ti_arena_calloc(arena, cap ? cap : 1, sizeof(char *));
	out->reprs = ti_arena_calloc(arena, cap ? cap : 1, sizeof(char *));
	out->count = 0;
	if (!out->names || !out->reprs)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the values");
	char *buf = malloc(REPR_MAX + 1);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the values");
	for (size_t i = 0; i < n_entries; i++) {
		if (entries[i].value->kind == TI_TENSOR || (plen && strncmp(entries[i].name, prefix, plen)))
			continue;
		out->names[out->count] = entries[i].name + plen;
		out->reprs[out->count] = ti_arena_strdup(arena, ti_value_repr(entries[i].value, buf, REPR_MAX + 1, REPR_MAX));
		if (!out->reprs[out->count++]) {
			free(buf);
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the values");
		}
	}
	free(buf);
	for (size_t i = 0; i < n_meta; i++) {
		const ti_source_pair *p = ti_source_metadata_at(src, i);
		out->names[out->count] = ti_arena_printf(arena, "__metadata__.%s", p->key);
		out->reprs[out->count] = p->value;
		if (!out->names[out->count++])
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the values");
	}
	return TI_OK;
}

static ti_status diff_values(ti_source *a, ti_source *b, const ti_diff_options *o, ti_arena *arena,
                             ti_diff_report *r, ti_error *err)
{
	value_list va, vb;
	ti_status st;
	r->failed_input = 0;
	if ((st = list_values(a, o->value_prefix[0], arena, &va, err)))
		return st;
	r->failed_input = 1;
	if ((st = list_values(b, o->value_prefix[1], arena, &vb, err)))
		return st;
	ti_strmap in_a, in_b;
	ti_strmap_init(&in_a);
	ti_strmap_init(&in_b);
	r->values = ti_arena_calloc(arena, va.count + vb.count + 1, sizeof(ti_diff_value));
	if (!r->values)
		goto nomem;
	for (size_t i = 0; i < va.count; i++)
		if (ti_strmap_put(&in_a, va.names[i], (void *)(uintptr_t)(i + 1)) < 0)
			goto nomem;
	for (size_t i = 0; i < vb.count; i++)
		if (ti_strmap_put(&in_b, vb.names[i], (void *)(uintptr_t)(i + 1)) < 0)
			goto nomem;
	for (size_t i = 0; i < va.count; i++) {
		size_t j = lookup(&in_b, va.names[i]);
		const char *other = j ? vb.reprs[j - 1] : NULL;
		if (lookup(&in_a, va.names[i]) != i + 1 || same_str(va.reprs[i], other))
			continue; /* a name given twice is compared once */
		r->values[r->value_count++] = (ti_diff_value){.name = va.names[i], .a = va.reprs[i], .b = other};
	}
	for (size_t j = 0; j < vb.count; j++)
		if (!lookup(&in_a, vb.names[j]) && lookup(&in_b, vb.names[j]) == j + 1)
			r->values[r->value_count++] = (ti_diff_value){.name = vb.names[j], .a = NULL, .b = vb.reprs[j]};
	ti_strmap_release(&in_a);
	ti_strmap_release(&in_b);
	return TI_OK;
nomem:
	ti_strmap_release(&in_a);
	ti_strmap_release(&in_b);
	return TI_FAIL(err, TI_E_NOMEM, "out of memory for the values");
}

/* Pairs removed and added tensors with the same dtype, shape and bytes. */
static ti_status find_renames(ti_source *a, ti_source *b, ti_diff_tensor *rows, const size_t *ta_of,
                              const size_t *tb_of, size_t n, scratch *s, ti_diff_report *r, ti_error *err)
{
	ti_status st = TI_OK;
	uint64_t *hash = calloc(n ? n : 1, sizeof(uint64_t));
	bool *hashed = calloc(n ? n : 1, sizeof(bool));
	if (!hash || !hashed) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the renames");
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		if (!(rows[i].changes & TI_DIFF_REMOVED))
			continue;
		const ti_source_tensor *x = ti_source_tensor_at(a, ta_of[i]);
		if (!has_data(a, x) || x->unsupported)
			continue;
		for (size_t j = 0; j < n; j++) {
			if (!(rows[j].changes & TI_DIFF_ADDED) || rows[j].renamed_to)
				continue;
			const ti_source_tensor *y = ti_source_tensor_at(b, tb_of[j]);
			if (y->dtype != x->dtype || !same_shape(x, y) || !has_data(b, y) || y->unsupported)
				continue;
			r->failed_input = 0;
			if (!hashed[i] && (st = hash_view(a, x, s, &hash[i], err)))
				goto done;
			hashed[i] = true;
			r->failed_input = 1;
			if (!hashed[j] && (st = hash_view(b, y, s, &hash[j], err)))
				goto done;
			hashed[j] = true;
			if (hash[i] != hash[j])
				continue;
			ti_diff_tensor probe = {.name = x->name};
			ti_diff_options exact = {.values = true};
			if ((st = compare_values(a, x, b, y, &exact, s, &probe, &r->failed_input, &(read_count){0}, err)))
				goto done;
			if (!probe.bit_identical)
				continue;
			rows[i].changes = TI_DIFF_RENAMED;
			rows[i].renamed_to = y->name;
			rows[j].renamed_to = x->name; /* marks it taken; the row is dropped */
			break;
		}
	}
done:
	free(hash);
	free(hashed);
	return st;
}

ti_status ti_diff_run(ti_source *a, ti_source *b, const ti_diff_options *options, ti_arena *arena,
                      ti_diff_report *out, ti_error *err)
{
	ti_diff_options o = *options;
	memset(out, 0, sizeof(*out));
	if (!(o.atol >= 0) || !(o.rtol >= 0) || isinf(o.atol) || isinf(o.rtol))
		return TI_FAIL(err, TI_E_INVALID, "a tolerance must be a finite number of 0 or more");
	size_t na = ti_source_tensor_count(a), nb = ti_source_tensor_count(b), n = 0;
	ti_strmap names_a, names_b;
	ti_strmap_init(&names_a);
	ti_strmap_init(&names_b);
	scratch s = {0};
	ti_status st;
	size_t *pairs = NULL, *which = NULL, *order = NULL;
	read_count count = {0, 0};
	ti_diff_tensor *rows = ti_arena_calloc(arena, na + nb + 1, sizeof(ti_diff_tensor));
	size_t *ta_of = malloc((na + nb + 1) * sizeof(size_t)), *tb_of = malloc((na + nb + 1) * sizeof(size_t));
	if (!rows || !ta_of || !tb_of) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the diff");
		goto done;
	}
	if ((st = index_names(a, &names_a, err)) || (st = index_names(b, &names_b, err)))
		goto done;
	/* Rows: A's tensors in order (a name given twice counts once), then B's additions. */
	for (size_t i = 0; i < na; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(a, i);
		if (lookup(&names_a, t->name) != i + 1)
			continue;
		ti_diff_tensor *e = &rows[n];
		e->name = t->name;
		e->numel = t->numel;
		ta_of[n] = i;
		tb_of[n] = SIZE_MAX;
		if ((st = fill_side(e, t, false, arena, err)))
			goto done;
		size_t j = lookup(&names_b, t->name);
		if (j) {
			const ti_source_tensor *u = ti_source_tensor_at(b, j - 1);
			tb_of[n] = j - 1;
			if ((st = fill_side(e, u, true, arena, err)))
				goto done;
			if (!same_shape(t, u))
				e->changes |= TI_DIFF_SHAPE;
			if (t->dtype != u->dtype)
				e->changes |= TI_DIFF_DTYPE;
		} else {
			e->changes = TI_DIFF_REMOVED;
		}
		n++;
	}
	for (size_t j = 0; j < nb; j++) {
		const ti_source_tensor *u = ti_source_tensor_at(b, j);
		if (lookup(&names_a, u->name) || lookup(&names_b, u->name) != j + 1)
			continue;
		ti_diff_tensor *e = &rows[n];
		e->name = u->name;
		e->numel = u->numel;
		e->changes = TI_DIFF_ADDED;
		ta_of[n] = SIZE_MAX;
		tb_of[n] = j;
		if ((st = fill_side(e, u, true, arena, err)))
			goto done;
		n++;
	}
	if ((st = find_ties(a, ta_of, n, rows, false, err)) || (st = find_ties(b, tb_of, n, rows, true, err)))
		goto done;
	for (size_t i = 0; i < n; i++)
		if (rows[i].in_a && rows[i].in_b && !same_str(rows[i].tie_a, rows[i].tie_b))
			rows[i].changes |= TI_DIFF_TIES;
	if ((st = find_renames(a, b, rows, ta_of, tb_of, n, &s, out, err)))
		goto done;
	if (o.values) {
		/*
		 * The pairs are read in the order their bytes lie in A's files, not
		 * in the rows' order of names: "layer10" sorts before "layer2", and a
		 * 1 GB checkpoint read in that order is read back and forth, so the
		 * kernel's read-ahead never gets ahead (docs/speed.md, Diff).
		 */
		size_t m = 0;
		if (!(pairs = malloc((n + 1) * sizeof(*pairs))) || !(which = malloc((n + 1) * sizeof(*which))) ||
		    !(order = malloc((n + 1) * sizeof(*order)))) {
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the diff");
			goto done;
		}
		for (size_t i = 0; i < n; i++) {
			if (!rows[i].in_a || !rows[i].in_b)
				continue;
			const ti_source_tensor *x = ti_source_tensor_at(a, ta_of[i]), *y = ti_source_tensor_at(b, tb_of[i]);
			if ((rows[i].not_compared = why_not_comparable(a, x, b, y)))
				continue;
			pairs[m] = i;
			which[m++] = ta_of[i];
			count.total += bytes_of(x->dtype, (size_t)x->numel) + bytes_of(y->dtype, (size_t)y->numel);
		}
		if ((st = ti_source_read_order(a, which, m, order, err)))
			goto done;
		for (size_t k = 0; k < m; k++) {
			size_t i = pairs[order[k]];
			const ti_source_tensor *x = ti_source_tensor_at(a, ta_of[i]), *y = ti_source_tensor_at(b, tb_of[i]);
			if ((st = compare_values(a, x, b, y, &o, &s, &rows[i], &out->failed_input, &count, err)))
				goto done;
		}
	}
	/* Keep the rows that stand for a tensor: an added one paired as a rename goes. */
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		ti_diff_tensor *e = &rows[i];
		if ((e->changes & TI_DIFF_ADDED) && e->renamed_to)
			continue;
		out->common += e->in_a && e->in_b;
		out->added += !!(e->changes & TI_DIFF_ADDED);
		out->removed += !!(e->changes & TI_DIFF_REMOVED);
		out->renamed += !!(e->changes & TI_DIFF_RENAMED);
		out->shape += !!(e->changes & TI_DIFF_SHAPE);
		out->dtype += !!(e->changes & TI_DIFF_DTYPE);
		out->ties += !!(e->changes & TI_DIFF_TIES);
		out->changed_values += !!(e->changes & TI_DIFF_VALUES);
		out->bit_different += e->compared && !e->bit_identical;
		rows[kept++] = *e;
	}
	out->tensors = rows;
	out->tensor_count = kept;
	if ((st = diff_values(a, b, options, arena, out, err)))
		goto done;
	out->same = !out->added && !out->removed && !out->renamed && !out->shape && !out->dtype && !out->ties &&
	            !out->changed_values && !out->value_count;
done:
	scratch_release(&s);
	free(pairs);
	free(which);
	free(order);
	free(ta_of);
	free(tb_of);
	ti_strmap_release(&names_a);
	ti_strmap_release(&names_b);
	return st;
}
