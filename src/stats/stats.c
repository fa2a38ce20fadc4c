/*
 * stats.c - per-tensor statistics, streamed in chunks (stats.h).
 *
 * Tensors are read in the order their bytes lie in the files
 * (ti_source_read_order), each view's chunks in logical order (view.h),
 * hashed as read, and widened: float32 as it is, float16 and bfloat16 to
 * float32 by bits in a plain loop, integers and bool to int64 and float64
 * to itself (ti_cast for those). The float loops assume every value finite and
 * check that on the way (x - x is 0 only for a finite x: no branch); a
 * chunk that holds a NaN or an infinity is done again by the careful loop.
 */
#include "tinspect/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinspect/cast.h"
#include "tinspect/cuda.h"
#include "tinspect/place.h"
#include "util/vec.h"
#include "util/xxh64.h"

/* Independent partial sums: the additions of one chunk are not one chain. */
#define LANES 8

/* The running totals of one tensor: finite values' count, mean and squared deviations. */
typedef struct acc {
	uint64_t finite, nan, posinf, neginf, zeros;
	double min, max, mean, m2;
	int64_t min_int, max_int;
} acc;

/* Chan, Golub and LeVeque: a chunk of nb finite values (its mean and m2) joins the totals. */
static void merge(acc *a, uint64_t nb, double mean_b, double m2_b)
{
	if (!nb)
		return;
	if (!a->finite) { /* the first: no cross term, which could be inf * 0 */
		a->finite = nb;
		a->mean = mean_b;
		a->m2 = m2_b;
		return;
	}
	uint64_t n = a->finite + nb;
	double d = mean_b - a->mean;
	a->mean += d * ((double)nb / (double)n);
	a->m2 += m2_b + d * d * ((double)a->finite * (double)nb / (double)n);
	a->finite = n;
}

/*
 * The fast bodies work on vectors (util/vec.h). The additions
 * keep the plain loop's order exactly: LANES float64 partial sums, element
 * i of a group of LANES into sum i, what is left over into sum 0, the sums
 * added 0 to LANES-1. min, max, zeros and the finite check take any order
 * (a chunk with a NaN is done again by the careful body): only the sign of
 * a zero found as min or max depends on it (first_zero).
 */

/*
 * The plain loop (lo = x < lo ? x : lo from p[0] on) keeps the first of
 * equal values: a min or max of zero is the first zero's sign, -0.0 or 0.0.
 */
#define FIRST_ZERO(TYPE, NAME)                                                                              \
	static TYPE first_zero_##NAME(const TYPE *p, size_t n)                                                \
	{                                                                                                     \
		for (size_t i = 0; i < n; i++)                                                                    \
			if (p[i] == 0)                                                                                \
				return p[i];                                                                              \
		return 0;                                                                                         \
	}
FIRST_ZERO(float, float)
FIRST_ZERO(double, double)

/* What a fast body's first pass found, before it joins the totals. */
typedef struct chunk_sums {
	double s[LANES], lo, hi;
	uint64_t zeros;
	bool bad; /* a NaN or an infinity: the careful body does the chunk */
} chunk_sums;

_Static_assert(TI_STATS_CHUNK / LANES < INT32_MAX, "the zero counts of a chunk fit int32 lanes");

/*
 * float32: two vectors of 4 a group, and four of 2 widened to float64.
 * With hash, the group's 32 bytes are also one XXH64 stripe of sum, folded
 * here rather than in a pass of their own: the hash's four multiplication
 * chains leave the vector units idle, and the sums fill them.
 */
static inline __attribute__((always_inline)) void pass1_float_body(const float *p, size_t n, chunk_sums *c,
                                                                    ti_checksum *sum, bool hash)
{
	uint64_t v0 = sum->lane[0], v1 = sum->lane[1], v2 = sum->lane[2], v3 = sum->lane[3];
	ti_f64x2 s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0;
	ti_f32x4 lo = {p[0], p[0], p[0], p[0]}, hi = lo, nonfinite = {0, 0, 0, 0}, zero = nonfinite;
	ti_i32x4 z = {0, 0, 0, 0}; /* minus the zeros: a true compare is -1 */
	size_t i = 0;
	for (; i + LANES <= n; i += LANES) {
		ti_f32x4 x0 = ti_load_f32x4(p + i), x1 = ti_load_f32x4(p + i + 4);
		nonfinite += (x0 - x0) + (x1 - x1);
		lo = ti_min_f32x4(ti_min_f32x4(x0, x1), lo);
		hi = ti_max_f32x4(ti_max_f32x4(x0, x1), hi);
		z += (x0 == zero) + (x1 == zero);
		s0 += ti_widen_f64x2(p + i);
		s1 += ti_widen_f64x2(p + i + 2);
		s2 += ti_widen_f64x2(p + i + 4);
		s3 += ti_widen_f64x2(p + i + 6);
		if (hash) {
			const unsigned char *b = (const unsigned char *)(p + i);
			v0 = ti_xxh64_round(v0, ti_xxh64_read64(b));
			v1 = ti_xxh64_round(v1, ti_xxh64_read64(b + 8));
			v2 = ti_xxh64_round(v2, ti_xxh64_read64(b + 16));
			v3 = ti_xxh64_round(v3, ti_xxh64_read64(b + 24));
		}
	}
	if (hash) {
		sum->lane[0] = v0, sum->lane[1] = v1, sum->lane[2] = v2, sum->lane[3] = v3;
		sum->total += i * sizeof(*p);
	}
	float low = p[0], high = p[0];
	bool bad = false;
	for (int k = 0; k < 4; k++) {
		bad |= nonfinite[k] != 0;
		low = lo[k] < low ? lo[k] : low;
		high = hi[k] > high ? hi[k] : high;
		c->zeros += (uint64_t)-(int64_t)z[k];
	}
	double s00 = s0[0];
	for (; i < n; i++) {
		float x = p[i];
		bad |= x - x != 0;
		low = x < low ? x : low;
		high = x > high ? x : high;
		c->zeros += x == 0;
		s00 += (double)x;
	}
	c->bad = bad;
	c->s[0] = s00, c->s[1] = s0[1], c->s[2] = s1[0], c->s[3] = s1[1];
	c->s[4] = s2[0], c->s[5] = s2[1], c->s[6] = s3[0], c->s[7] = s3[1];
	c->lo = low == 0 ? first_zero_float(p, n) : low;
	c->hi = high == 0 ? first_zero_float(p, n) : high;
}

/* The sum of squared deviations from mean, in the same lanes and order. */
static double pass2_float(const float *p, size_t n, double mean)
{
	const ti_f64x2 m = {mean, mean};
	ti_f64x2 q0 = {0, 0}, q1 = q0, q2 = q0, q3 = q0;
	size_t i = 0;
	for (; i + LANES <= n; i += LANES) {
		ti_f64x2 d0 = ti_widen_f64x2(p + i) - m, d1 = ti_widen_f64x2(p + i + 2) - m, d2 = ti_widen_f64x2(p + i + 4) - m,
		      d3 = ti_widen_f64x2(p + i + 6) - m;
		q0 += d0 * d0;
		q1 += d1 * d1;
		q2 += d2 * d2;
		q3 += d3 * d3;
	}
	double q00 = q0[0];
	for (; i < n; i++) {
		double d = (double)p[i] - mean;
		q00 += d * d;
	}
	double lanes[LANES] = {q00, q0[1], q1[0], q1[1], q2[0], q2[1], q3[0], q3[1]}, sum = 0;
	for (int k = 0; k < LANES; k++)
		sum += lanes[k];
	return sum;
}

/* float64: four vectors of 2 a group, and with hash two stripes of sum. */
static inline __attribute__((always_inline)) void pass1_double_body(const double *p, size_t n, chunk_sums *c,
                                                                     ti_checksum *sum, bool hash)
{
	uint64_t v0 = sum->lane[0], v1 = sum->lane[1], v2 = sum->lane[2], v3 = sum->lane[3];
	ti_f64x2 s0 = {0, 0}, s1 = s0, s2 = s0, s3 = s0, nonfinite = s0, zero = s0;
	ti_f64x2 lo = {p[0], p[0]}, hi = lo;
	ti_i64x2 z = {0, 0}; /* minus the zeros */
	size_t i = 0;
	for (; i + LANES <= n; i += LANES) {
		ti_f64x2 x0 = ti_load_f64x2(p + i), x1 = ti_load_f64x2(p + i + 2), x2 = ti_load_f64x2(p + i + 4),
		      x3 = ti_load_f64x2(p + i + 6);
		nonfinite += ((x0 - x0) + (x1 - x1)) + ((x2 - x2) + (x3 - x3));
		lo = ti_min_f64x2(ti_min_f64x2(ti_min_f64x2(x0, x1), ti_min_f64x2(x2, x3)), lo);
		hi = ti_max_f64x2(ti_max_f64x2(ti_max_f64x2(x0, x1), ti_max_f64x2(x2, x3)), hi);
		z += ((x0 == zero) + (x1 == zero)) + ((x2 == zero) + (x3 == zero));
		s0 += x0;
		s1 += x1;
		s2 += x2;
		s3 += x3;
		if (hash) {
			const unsigned char *b = (const unsigned char *)(p + i);
			for (int stripe = 0; stripe < 64; stripe += 32) {
				v0 = ti_xxh64_round(v0, ti_xxh64_read64(b + stripe));
				v1 = ti_xxh64_round(v1, ti_xxh64_read64(b + stripe + 8));
				v2 = ti_xxh64_round(v2, ti_xxh64_read64(b + stripe + 16));
				v3 = ti_xxh64_round(v3, ti_xxh64_read64(b + stripe + 24));
			}
		}
	}
	if (hash) {
		sum->lane[0] = v0, sum->lane[1] = v1, sum->lane[2] = v2, sum->lane[3] = v3;
		sum->total += i * sizeof(*p);
	}
	double low = p[0], high = p[0];
	bool bad = false;
	for (int k = 0; k < 2; k++) {
		bad |= nonfinite[k] != 0;
		low = lo[k] < low ? lo[k] : low;
		high = hi[k] > high ? hi[k] : high;
		c->zeros += (uint64_t)-z[k];
	}
	double s00 = s0[0];
	for (; i < n; i++) {
		double x = p[i];
		bad |= x - x != 0;
		low = x < low ? x : low;
		high = x > high ? x : high;
		c->zeros += x == 0;
		s00 += x;
	}
	c->bad = bad;
	c->s[0] = s00, c->s[1] = s0[1], c->s[2] = s1[0], c->s[3] = s1[1];
	c->s[4] = s2[0], c->s[5] = s2[1], c->s[6] = s3[0], c->s[7] = s3[1];
	c->lo = low == 0 ? first_zero_double(p, n) : low;
	c->hi = high == 0 ? first_zero_double(p, n) : high;
}

static double pass2_double(const double *p, size_t n, double mean)
{
	const ti_f64x2 m = {mean, mean};
	ti_f64x2 q0 = {0, 0}, q1 = q0, q2 = q0, q3 = q0;
	size_t i = 0;
	for (; i + LANES <= n; i += LANES) {
		ti_f64x2 d0 = ti_load_f64x2(p + i) - m, d1 = ti_load_f64x2(p + i + 2) - m, d2 = ti_load_f64x2(p + i + 4) - m,
		      d3 = ti_load_f64x2(p + i + 6) - m;
		q0 += d0 * d0;
		q1 += d1 * d1;
		q2 += d2 * d2;
		q3 += d3 * d3;
	}
	double q00 = q0[0];
	for (; i < n; i++) {
		double d = p[i] - mean;
		q00 += d * d;
	}
	double lanes[LANES] = {q00, q0[1], q1[0], q1[1], q2[0], q2[1], q3[0], q3[1]}, sum = 0;
	for (int k = 0; k < LANES; k++)
		sum += lanes[k];
	return sum;
}

/*
 * The first pass over a chunk; with sum, the chunk's bytes also go into it,
 * folded in the same loop while nothing is buffered (a chunk of whole
 * stripes: every chunk but a tensor's last), and after the loop the bytes
 * past the last group.
 */
#define PASS1(TYPE, NAME)                                                                                  \
	static void pass1_##NAME(const TYPE *p, size_t n, chunk_sums *c, ti_checksum *sum)                   \
	{                                                                                                    \
		if (sum && !sum->buffered) {                                                                     \
			pass1_##NAME##_body(p, n, c, sum, true);                                                     \
			size_t folded = n - n % LANES;                                                               \
			ti_checksum_update(sum, p + folded, (n - folded) * sizeof(TYPE));                            \
			return;                                                                                      \
		}                                                                                                \
		if (sum)                                                                                         \
			ti_checksum_update(sum, p, n * sizeof(TYPE));                                                \
		ti_checksum none = {.buffered = 0};                                                              \
		pass1_##NAME##_body(p, n, c, &none, false);                                                      \
	}
PASS1(float, float)
PASS1(double, double)

/*
 * One chunk of floats of TYPE: the fast body when every value is finite
 * (returns false, changing nothing but hash, when one is not), and the
 * careful one. hash, when not NULL, takes the chunk's bytes (the first
 * pass always runs, so once).
 */
#define FLOAT_CHUNK(TYPE, NAME)                                                                            \
	static bool fast_##NAME(const TYPE *p, size_t n, acc *a, ti_checksum *hash)                          \
	{                                                                                                    \
		chunk_sums c = {.zeros = 0};                                                                     \
		pass1_##NAME(p, n, &c, hash);                                                                    \
		if (c.bad)                                                                                       \
			return false;                                                                                \
		double sum = 0;                                                                                  \
		for (int k = 0; k < LANES; k++)                                                                  \
			sum += c.s[k];                                                                               \
		double mean = sum / (double)n;                                                                   \
		double m2sum = pass2_##NAME(p, n, mean);                                                         \
		if (!a->finite || c.lo < a->min)                                                                 \
			a->min = c.lo;                                                                               \
		if (!a->finite || c.hi > a->max)                                                                 \
			a->max = c.hi;                                                                               \
		a->zeros += c.zeros;                                                                             \
		merge(a, n, mean, m2sum);                                                                        \
		return true;                                                                                     \
	}                                                                                                    \
	static void careful_##NAME(const TYPE *p, size_t n, acc *a)                                          \
	{                                                                                                    \
		double sum = 0, m2 = 0;                                                                          \
		uint64_t finite = 0;                                                                             \
		for (size_t i = 0; i < n; i++) {                                                                 \
			double x = (double)p[i];                                                                     \
			if (isnan(x)) {                                                                              \
				a->nan++;                                                                                \
				continue;                                                                                \
			}                                                                                            \
			if (isinf(x)) {                                                                              \
				if (x > 0)                                                                               \
					a->posinf++;                                                                         \
				else                                                                                     \
					a->neginf++;                                                                         \
				continue;                                                                                \
			}                                                                                            \
			a->zeros += x == 0;                                                                          \
			if (!a->finite && !finite) {                                                                 \
				a->min = a->max = x;                                                                     \
			} else {                                                                                     \
				a->min = x < a->min ? x : a->min;                                                        \
				a->max = x > a->max ? x : a->max;                                                        \
			}                                                                                            \
			sum += x;                                                                                    \
			finite++;                                                                                    \
		}                                                                                                \
		if (!finite)                                                                                     \
			return;                                                                                      \
		double mean = sum / (double)finite;                                                              \
		for (size_t i = 0; i < n; i++) {                                                                 \
			double x = (double)p[i];                                                                     \
			if (isfinite(x))                                                                             \
				m2 += (x - mean) * (x - mean);                                                           \
		}                                                                                                \
		merge(a, finite, mean, m2);                                                                      \
	}                                                                                                    \
	static void chunk_##NAME(const TYPE *p, size_t n, acc *a, ti_checksum *hash)                         \
	{                                                                                                    \
		if (n && !fast_##NAME(p, n, a, hash))                                                            \
			careful_##NAME(p, n, a);                                                                     \
	}
FLOAT_CHUNK(float, float)
FLOAT_CHUNK(double, double)

/* Integers and bool, as int64: min and max exact, sums in float64. */
static void chunk_int(const int64_t *p, size_t n, acc *a)
{
	if (!n)
		return;
	double s[LANES] = {0}, m2[LANES] = {0};
	int64_t lo = p[0], hi = p[0];
	uint64_t zeros = 0;
	size_t i = 0;
	for (; i + LANES <= n; i += LANES)
		for (int k = 0; k < LANES; k++) {
			int64_t x = p[i + k];
			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
			zeros += x == 0;
			s[k] += (double)x;
		}
	for (; i < n; i++) {
		lo = p[i] < lo ? p[i] : lo;
		hi = p[i] > hi ? p[i] : hi;
		zeros += p[i] == 0;
		s[0] += (double)p[i];
	}
	double sum = 0, m2sum = 0;
	for (int k = 0; k < LANES; k++)
		sum += s[k];
	double mean = sum / (double)n;
	for (i = 0; i < n; i++) {
		double d = (double)p[i] - mean;
		m2[i % LANES] += d * d;
	}
	for (int k = 0; k < LANES; k++)
		m2sum += m2[k];
	if (!a->finite || lo < a->min_int)
		a->min_int = lo;
	if (!a->finite || hi > a->max_int)
		a->max_int = hi;
	a->min = (double)a->min_int;
	a->max = (double)a->max_int;
	a->zeros += zeros;
	merge(a, n, mean, m2sum);
}

/* float16 to float32 from the bits: exact (every float16 is a float32). */
static inline float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu, bits;
	if (exp == 0x1F) {
		bits = sign | 0x7F800000u | (man << 13); /* inf, NaN */
	} else if (exp == 0) {
		float f = (float)man * 0x1p-24f; /* zero and subnormals: man * 2^-24, exact */
		memcpy(&bits, &f, 4);
		bits |= sign;
	} else {
		bits = sign | ((exp + 112) << 23) | (man << 13); /* rebias 15 -> 127 */
	}
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

/*
 * Four at a time without a branch, and the same bits as half_to_float: the
 * exponent and mantissa moved to float32's places read as a float32 2^112
 * times too small (a subnormal half becomes a float32 subnormal), so one
 * exact multiplication by 2^112 rebiases both; a result of 2^16 or more
 * came from exponent 31, inf or NaN, whose float32 exponent is all ones.
 */
static void widen_half(const unsigned char *raw, float *out, size_t n)
{
	const ti_u32x4 magnitude = {0x7FFF, 0x7FFF, 0x7FFF, 0x7FFF}, sign = {0x8000, 0x8000, 0x8000, 0x8000};
	const ti_u32x4 all_ones = {0x7F800000u, 0x7F800000u, 0x7F800000u, 0x7F800000u};
	const ti_f32x4 rebias = {0x1p112f, 0x1p112f, 0x1p112f, 0x1p112f}, top = {0x1p16f, 0x1p16f, 0x1p16f, 0x1p16f};
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		ti_u32x4 h = ti_load_u16x4(raw + 2 * i);
		ti_f32x4 f = (ti_f32x4)((h & magnitude) << 13) * rebias;
		ti_u32x4 special = (ti_u32x4)(f >= top);
		ti_store_f32x4(out + i, (ti_f32x4)((ti_u32x4)f | (special & all_ones) | (h & sign) << 16));
	}
	for (; i < n; i++) {
		uint16_t h;
		memcpy(&h, raw + 2 * i, 2);
		out[i] = half_to_float(h);
	}
}

/* bfloat16 is the top half of a float32. */
static void widen_bfloat16(const unsigned char *raw, float *out, size_t n)
{
	size_t i = 0;
	for (; i + 4 <= n; i += 4)
		ti_store_f32x4(out + i, (ti_f32x4)(ti_load_u16x4(raw + 2 * i) << 16));
	for (; i < n; i++) {
		uint16_t h;
		memcpy(&h, raw + 2 * i, 2);
		uint32_t bits = (uint32_t)h << 16;
		memcpy(&out[i], &bits, 4);
	}
}

typedef enum reading { R_BYTES, R_FLOAT32, R_FLOAT16, R_BFLOAT16, R_FLOAT64, R_INT, R_CAST_DOUBLE } reading;

static reading reading_of(ti_dtype dt)
{
	switch (dt) {
	case TI_DT_FLOAT32: return R_FLOAT32;
	case TI_DT_FLOAT16: return R_FLOAT16;
	case TI_DT_BFLOAT16: return R_BFLOAT16;
	case TI_DT_FLOAT64: return R_FLOAT64;
	case TI_DT_INT64: case TI_DT_INT32: case TI_DT_INT16: case TI_DT_INT8: case TI_DT_UINT8:
	case TI_DT_UINT16: case TI_DT_UINT32: case TI_DT_BOOL:
		return R_INT;
	case TI_DT_UINT64: return R_CAST_DOUBLE; /* past INT64_MAX: float64 holds it, int64 would not */
	default: return R_BYTES;                 /* complex, float8, bits, sub-byte: the checksum only */
	}
}

/* Why tensor t has nothing to read, or NULL. */
static const char *why_skipped(ti_source *src, const ti_source_tensor *t)
{
	if (t->unsupported)
		return t->unsupported;
	const ti_source_storage *s = ti_source_storage_at(src, t->storage);
	if (!s || (!s->has_data && !ti_source_generator_of(src, t->storage, NULL)))
		return "no data";
	return NULL;
}

typedef struct progress {
	void (*fn)(void *user, uint64_t done, uint64_t total);
	void *user;
	uint64_t done, total;
} progress;

static ti_status stats_view(ti_source *src, const ti_source_tensor *t, ti_view_reader *r, ti_tensor_stats *out,
                            progress *pr, ti_error *err)
{
	memset(out, 0, sizeof(*out));
	if ((out->skipped = why_skipped(src, t)))
		return TI_OK;
	ti_status st = ti_view_check(src, t, err);
	if (st)
		return st;
	reading how = reading_of(t->dtype);
	size_t chunk = (uint64_t)t->numel < TI_STATS_CHUNK ? (size_t)t->numel : TI_STATS_CHUNK;
	uint64_t chunk_bytes = 0; /* TI_STATS_CHUNK elements of a sub-byte dtype fill whole bytes, as the tensor does */
	ti_dtype_nbytes(t->dtype, chunk, &chunk_bytes);
	unsigned char *raw = malloc(chunk_bytes ? (size_t)chunk_bytes : 1);
	void *wide = how == R_BYTES || how == R_FLOAT32 || how == R_FLOAT64 ? NULL : malloc((chunk ? chunk : 1) * 8);
	if (!raw || (!wide && how != R_BYTES && how != R_FLOAT32 && how != R_FLOAT64)) {
		free(raw);
		free(wide);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the statistics of '%s'", t->name);
	}
	acc a = {.finite = 0};
	ti_checksum sum;
	ti_checksum_init(&sum);
	for (int64_t first = 0; first < t->numel; first += (int64_t)chunk) {
		size_t k = (uint64_t)(t->numel - first) < chunk ? (size_t)(t->numel - first) : chunk;
		if ((st = ti_view_read(r, src, t, first, k, raw, err)))
			break;
		uint64_t bytes = 0;
		ti_dtype_nbytes(t->dtype, k, &bytes); /* k * element size; a sub-byte dtype's packed bytes */
		if (how != R_FLOAT32 && how != R_FLOAT64) /* those two hash in their first pass */
			ti_checksum_update(&sum, raw, (size_t)bytes);
		switch (how) {
		case R_FLOAT32:
			chunk_float((const float *)(void *)raw, k, &a, &sum); /* raw is malloc's: aligned */
			break;
		case R_FLOAT16:
			widen_half(raw, wide, k);
			chunk_float(wide, k, &a, NULL);
			break;
		case R_BFLOAT16:
			widen_bfloat16(raw, wide, k);
			chunk_float(wide, k, &a, NULL);
			break;
		case R_FLOAT64:
			chunk_double((const double *)(void *)raw, k, &a, &sum);
			break;
		case R_INT:
			if (!(st = ti_cast(t->dtype, raw, TI_DT_INT64, wide, k, 0, err)))
				chunk_int(wide, k, &a);
			break;
		case R_CAST_DOUBLE:
			if (!(st = ti_cast(t->dtype, raw, TI_DT_FLOAT64, wide, k, 0, err)))
				chunk_double(wide, k, &a, NULL);
			break;
		case R_BYTES:
			break;
		}
		if (st)
			break;
		if (pr && pr->fn) {
			pr->done += bytes;
			pr->fn(pr->user, pr->done, pr->total);
		}
	}
	free(raw);
	free(wide);
	if (st)
		return st;
	out->has_values = how != R_BYTES;
	out->integer = how == R_INT;
	out->count = (uint64_t)t->numel;
	out->finite = out->has_values ? a.finite : 0;
	out->nan = a.nan;
	out->posinf = a.posinf;
	out->neginf = a.neginf;
	out->zeros = a.zeros;
	out->min = a.finite ? a.min : NAN;
	out->max = a.finite ? a.max : NAN;
	out->min_int = a.min_int;
	out->max_int = a.max_int;
	out->mean = a.finite ? a.mean : NAN;
	out->std = a.finite > 1 ? sqrt(a.m2 / (double)(a.finite - 1)) : NAN;
	out->checksum = ti_checksum_final(&sum);
	return TI_OK;
}

ti_status ti_stats_tensor(ti_source *src, const ti_source_tensor *t, ti_view_reader *r, ti_tensor_stats *out,
                          ti_error *err)
{
	return stats_view(src, t, r, out, NULL, err);
}

/* ---- CUDA: what the device holds, read back ---- */

typedef struct device_bytes {
	ti_cuda *cuda;
	ti_cuda_ptr ptr;
	uint64_t nbytes;
} device_bytes;

static ti_status read_device(void *ctx, ti_source *src, size_t storage, uint64_t offset, void *buf, size_t n,
                             ti_error *err)
{
	(void)src;
	(void)storage;
	const device_bytes *d = ctx;
	if (offset > d->nbytes || n > d->nbytes - offset)
		return TI_FAIL(err, TI_E_INVALID, "a read past the end of a storage on the device");
	return ti_cuda_read(d->cuda, d->ptr + offset, buf, n, err);
}

/* The order to visit tensors on CUDA: by storage, so that each storage goes up once. */
typedef struct visit {
	size_t storage, at;
} visit;

static int by_storage(const void *x, const void *y)
{
	const visit *a = x, *b = y;
	if (a->storage != b->storage)
		return a->storage < b->storage ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

static void count_upload(void *user, size_t n)
{
	progress *pr = user;
	if (pr->fn) {
		pr->done += n;
		pr->fn(pr->user, pr->done, pr->total);
	}
}

static ti_status run_cuda(ti_source *src, const size_t *which, size_t n, const ti_stats_options *o,
                          ti_tensor_stats *out, progress *pr, ti_error *err)
{
	ti_cuda *cuda;
	ti_status st = ti_place_cuda_open(o->cuda_index, &cuda, err);
	if (st)
		return st;
	visit *order = malloc((n ? n : 1) * sizeof(*order));
	if (!order) {
		ti_cuda_close(cuda);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the statistics");
	}
	for (size_t i = 0; i < n; i++)
		order[i] = (visit){.storage = ti_source_tensor_at(src, which[i])->storage, .at = i};
	qsort(order, n, sizeof(*order), by_storage);
	ti_view_reader r;
	ti_view_reader_init(&r);
	device_bytes dev = {.cuda = cuda};
	r.read = read_device;
	r.read_ctx = &dev;
	bool placed = false;
	for (size_t k = 0; k < n && !st; k++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, which[order[k].at]);
		ti_tensor_stats *s = &out[order[k].at];
		memset(s, 0, sizeof(*s));
		if ((s->skipped = why_skipped(src, t)))
			continue;
		if ((st = ti_view_check(src, t, err)))
			break;
		if (!placed || k == 0 || order[k - 1].storage != t->storage) {
			if (placed && (st = ti_cuda_free(cuda, dev.ptr, err)))
				break;
			placed = false;
			dev.nbytes = ti_source_storage_at(src, t->storage)->nbytes;
			if ((st = ti_cuda_alloc(cuda, dev.nbytes, &dev.ptr, err)))
				break;
			placed = true;
			if (dev.nbytes && (st = ti_place_upload(cuda, src, t->storage, dev.ptr, false, NULL, count_upload, pr, err)))
				break;
		}
		st = stats_view(src, t, &r, s, NULL, err);
		if (st)
			ti_error_at(err, t->name, -1);
	}
	ti_view_reader_release(&r);
	free(order);
	ti_cuda_close(cuda); /* frees what is still allocated */
	return st;
}

ti_status ti_stats_run(ti_source *src, const size_t *which, size_t n, const ti_stats_options *o,
                       ti_tensor_stats *out, ti_error *err)
{
	progress pr = {.fn = o->progress, .user = o->progress_user};
	for (size_t i = 0; i < n; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, which[i]);
		uint64_t bytes = 0;
		if (!why_skipped(src, t) && (o->cuda || ti_dtype_nbytes(t->dtype, (uint64_t)t->numel, &bytes)))
			pr.total += o->cuda ? ti_source_storage_at(src, t->storage)->nbytes : bytes;
	}
	if (o->cuda)
		return run_cuda(src, which, n, o, out, &pr, err);
	/* in the order the bytes lie in the files, as the kernel's read-ahead expects; out[] keeps which's */
	size_t *order = malloc((n ? n : 1) * sizeof(*order));
	if (!order)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the statistics of %zu tensors", n);
	ti_status st = ti_source_read_order(src, which, n, order, err);
	ti_view_reader r;
	ti_view_reader_init(&r);
	for (size_t k = 0; k < n && !st; k++) {
		size_t i = order[k];
		const ti_source_tensor *t = ti_source_tensor_at(src, which[i]);
		if ((st = stats_view(src, t, &r, &out[i], &pr, err)))
			ti_error_at(err, t->name, -1);
	}
	ti_view_reader_release(&r);
	free(order);
	return st;
}
