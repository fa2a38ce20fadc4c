/*
 * test_fill.c - fill policies: parsing, PyTorch's refusals, constant values,
 * the documented generator (Philox4x32-10 known answers, the element formulas,
 * the float32 normal transform's accuracy and pinned values), statistics over
 * 10^6 samples, and independence from chunking and threads.
 */
#include "unit.h"

#include <stdlib.h>

#include "materialize/draw.h"
#include "materialize/philox.h"
#include "tinspect/cast.h"
#include "tinspect/fill.h"

static ti_fill_policy parse_ok(const char *text)
{
	ti_fill_policy p;
	ti_error err;
	ti_error_clear(&err);
	ti_status st = ti_fill_parse(text, &p, &err);
	cr_assert(st == TI_OK, "parse '%s': %s", text, err.message);
	return p;
}

/* Fills n elements from offset; asserts success. */
static void fill_ok(const ti_fill_policy *p, ti_dtype dt, ti_fill_key key, uint64_t offset, size_t n, void *buf)
{
	ti_error err;
	ti_error_clear(&err);
	ti_status st = ti_fill(p, dt, key, offset, n, buf, &err);
	cr_assert(st == TI_OK, "fill %s: %s", ti_dtype_name(dt), err.message);
}

/* ---- the generator ---- */

Test(fill, philox_matches_random123_known_answers)
{
	static const struct {
		uint32_t counter[4], key[2], want[4];
	} rows[] = {
		{{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
		 {0xffffffff, 0xffffffff},
		 {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
		 {0xa4093822, 0x299f31d0},
		 {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t out[4];
		ti_philox4x32_10(rows[i].counter, rows[i].key, out);
		for (int j = 0; j < 4; j++)
			cr_expect(out[j] == rows[i].want[j], "vector %zu word %d: got 0x%08x, want 0x%08x", i, j, out[j],
			          rows[i].want[j]);
	}
}

Test(fill, a_tensor_s_stream_is_the_fnv1a_hash_of_its_name)
{
	ti_fill_key k = ti_fill_key_of(42, "");
	cr_expect(k.stream == UINT64_C(0xcbf29ce484222325) && k.seed == 42);
	cr_expect(ti_fill_key_of(0, "a").stream == UINT64_C(0xaf63dc4c8601ec8c));
	cr_expect(ti_fill_key_of(0, "foobar").stream == UINT64_C(0x85944171f73967e8));
	cr_expect(ti_fill_key_of(0, "layer.0.weight").stream != ti_fill_key_of(0, "layer.1.weight").stream);
}

/* Word w of the documented block b of a key. */
static uint32_t word_of(ti_fill_key key, uint64_t b, int w)
{
	const uint32_t counter[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)key.stream, (uint32_t)(key.stream >> 32)};
	const uint32_t k[2] = {(uint32_t)key.seed, (uint32_t)(key.seed >> 32)};
	uint32_t out[4];
	ti_philox4x32_10(counter, k, out);
	return out[w];
}

Test(fill, random_elements_follow_the_documented_formulas)
{
	ti_fill_key key = ti_fill_key_of(UINT64_C(0x123456789abcdef0), "encoder.weight");
	enum { N = 10 };
	uint64_t offset = (UINT64_C(1) << 34) + 5; /* counters past 32 bits */
	ti_fill_policy rand = ti_fill_constant(TI_FILL_RAND), randn = ti_fill_constant(TI_FILL_RANDN);
	float f[N];
	double d[N], z[N];
	fill_ok(&rand, TI_DT_FLOAT32, key, offset, N, f);
	fill_ok(&rand, TI_DT_FLOAT64, key, offset, N, d);
	fill_ok(&randn, TI_DT_FLOAT64, key, offset, N, z);
	for (uint64_t i = offset; i < offset + N; i++) {
		float want_f = (float)ldexp((double)(word_of(key, i / 4, (int)(i % 4)) >> 8), -24);
		int j = 2 * (int)(i % 2);
		uint64_t x = (uint64_t)word_of(key, i / 2, j + 1) << 32 | word_of(key, i / 2, j);
		double want_d = (double)(x >> 11) * 0x1p-53;
		uint64_t x1 = (uint64_t)word_of(key, i / 2, 1) << 32 | word_of(key, i / 2, 0);
		uint64_t x2 = (uint64_t)word_of(key, i / 2, 3) << 32 | word_of(key, i / 2, 2);
		double r = sqrt(-2.0 * log(1.0 - (double)(x1 >> 11) * 0x1p-53));
		double t = 6.283185307179586476925286766559 * ((double)(x2 >> 11) * 0x1p-53);
		double want_z = i % 2 ? r * sin(t) : r * cos(t);
		EXPECT_DOUBLE(f[i - offset], want_f);
		EXPECT_DOUBLE(d[i - offset], want_d);
		EXPECT_DOUBLE(z[i - offset], want_z);
	}
}

Test(fill, philox_batches_are_the_blocks_one_at_a_time)
{
	const uint32_t key[2] = {0xa4093822, 0x299f31d0};
	uint64_t first = UINT64_C(0xffffffff) - 5, high = UINT64_C(0x0123456789abcdef); /* the low word carries */
	uint32_t batch[4 * TI_PHILOX_BATCH];
	ti_philox4x32_10_batch(first, high, key, batch);
	for (int j = 0; j < TI_PHILOX_BATCH; j++) {
		uint64_t b = first + (uint64_t)j;
		const uint32_t counter[4] = {(uint32_t)b, (uint32_t)(b >> 32), (uint32_t)high, (uint32_t)(high >> 32)};
		uint32_t one[4];
		ti_philox4x32_10(counter, key, one);
		cr_expect(!memcmp(one, batch + 4 * j, sizeof(one)), "block %d of the batch differs", j);
	}
}

/* u = fl(w) * 2^-32 + 2^-33 in float, as fill.h documents it. */
static float open_u(uint32_t w)
{
	return (float)w * 0x1p-32f + 0x1p-33f;
}

/* One float32 unit in the last place of max(|x|, 1). */
static double ulp_of_at_least_1(double x)
{
	return ldexp(1.0, ilogb(fmax(fabs(x), 1.0)) - 23);
}

/* The documented bound: within 3 float32 ulps of max(r, 1) of the same formula in double. */
static void expect_float_box_muller(uint32_t w1, uint32_t w2, float got_cos, float got_sin)
{
	double r = sqrt(-2.0 * log((double)open_u(w1))), t = 6.283185307179586476925286766559 * (double)open_u(w2);
	double bound = 3 * ulp_of_at_least_1(r);
	cr_expect(fabs(got_cos - r * cos(t)) <= bound && fabs(got_sin - r * sin(t)) <= bound,
	          "words 0x%08x 0x%08x: got (%.9g, %.9g), want (%.9g, %.9g) within %.3g", w1, w2, got_cos, got_sin,
	          r * cos(t), r * sin(t), bound);
}

Test(fill, randn_in_float32_is_box_muller_in_float_within_3_ulps_of_double)
{
	ti_fill_key key = ti_fill_key_of(UINT64_C(0x123456789abcdef0), "encoder.weight");
	enum { N = 1 << 16 };
	static float z[N];
	uint64_t offset = (UINT64_C(1) << 34) + 6; /* counters past 32 bits, an odd pair to start */
	ti_fill_policy randn = ti_fill_constant(TI_FILL_RANDN);
	fill_ok(&randn, TI_DT_FLOAT32, key, offset, N, z);
	for (uint64_t i = offset; i < offset + N; i += 2) {
		/* elements 4b + 2j and 4b + 2j + 1: words 2j and 2j + 1 of block b */
		int j = 2 * (int)(i % 4 / 2);
		expect_float_box_muller(word_of(key, i / 4, j), word_of(key, i / 4, j + 1), z[i - offset],
		                        z[i - offset + 1]);
	}
}

Test(fill, the_float32_normal_transform_holds_its_bound_at_the_extreme_words)
{
	/* ends of the range, where fl(w) rounds up to 2^32, quadrant and octant edges */
	static const uint32_t edges[] = {0,          1,          2,          0xff,       0x100,      0x1fffffff,
	                                 0x20000000, 0x3fffffff, 0x40000000, 0x5fffffff, 0x60000000, 0x7fffffff,
	                                 0x80000000, 0x9fffffff, 0xa0000000, 0xbfffffff, 0xc0000000, 0xdfffffff,
	                                 0xe0000000, 0xffffff7f, 0xffffff80, 0xfffffffe, 0xffffffff};
	enum { E = sizeof(edges) / sizeof(edges[0]) };
	uint32_t w[TI_DRAW_WORDS];
	float z[TI_DRAW_WORDS];
	size_t p = 0;
	for (size_t a = 0; a < E; a++)
		for (size_t b = 0; b < E; b++) {
			w[2 * p] = edges[a];
			w[2 * p + 1] = edges[b];
			if (++p < TI_DRAW_WORDS / 2 && !(a == E - 1 && b == E - 1))
				continue;
			ti_draw_normal_f32(w, z);
			for (size_t q = 0; q < p; q++) {
				cr_expect(isfinite(z[2 * q]) && isfinite(z[2 * q + 1]), "words 0x%08x 0x%08x: not finite",
				          w[2 * q], w[2 * q + 1]);
				cr_expect(fabsf(z[2 * q]) <= 6.7638f && fabsf(z[2 * q + 1]) <= 6.7638f);
				expect_float_box_muller(w[2 * q], w[2 * q + 1], z[2 * q], z[2 * q + 1]);
			}
			p = 0;
		}
	/* the largest value: u1 = 2^-33, r = sqrt(66 ln 2) = 6.76370..., at u2 = 2^-33 nearly all cosine */
	w[0] = 0;
	w[1] = 0;
	ti_draw_normal_f32(w, z);
	cr_expect(fabs(z[0] - sqrt(66 * log(2.0))) < 1e-6, "largest value %.9g", z[0]);
}

Test(fill, randn_and_normal_values_for_a_seed_are_pinned)
{
	/* the bytes a seed gives: a change of the documented generator changes these */
	static const struct {
		const char *policy;
		uint32_t want[6];
	} rows[] = {
		{"randn", {0x403c01cf, 0x3bea31ab, 0x3dd60107, 0xbf8d6684, 0x3e293cac, 0xbf803057}},
		{"normal:0.5,2", {0x40cc01cf, 0x3f03a8c7, 0x3f358042, 0xbfdacd08, 0x3f549e56, 0xbfc060ae}},
		{"rand", {0x3ea6b0be, 0x3f7e9984, 0x3e74ded4, 0x3f093006, 0x3ef3e60a, 0x3eeb0ef4}},
		{"uniform:-1,3", {0x3e9ac2f8, 0x403e9984, 0xbd3212c0, 0x3f92600c, 0x3f67cc14, 0x3f561de8}},
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		ti_fill_policy p = parse_ok(rows[r].policy);
		uint32_t got[6];
		fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(2024, "encoder.layers.0.weight"), 1000001, 6, got);
		for (int i = 0; i < 6; i++)
			cr_expect(got[i] == rows[r].want[i], "%s element %d: got 0x%08x, want 0x%08x", rows[r].policy,
			          1000001 + i, got[i], rows[r].want[i]);
	}
}

/* ---- statistics ---- */

static void moments(const double *x, size_t n, double *mean, double *std)
{
	double s = 0, s2 = 0;
	for (size_t i = 0; i < n; i++)
		s += x[i];
	*mean = s / (double)n;
	for (size_t i = 0; i < n; i++)
		s2 += (x[i] - *mean) * (x[i] - *mean);
	*std = sqrt(s2 / (double)n);
}

#define SAMPLES 1000000

Test(fill, randn_has_mean_0_and_standard_deviation_1)
{
	double *x = malloc(SAMPLES * sizeof(double));
	cr_assert(x);
	ti_fill_policy p = ti_fill_constant(TI_FILL_RANDN);
	fill_ok(&p, TI_DT_FLOAT64, ti_fill_key_of(7, "w"), 0, SAMPLES, x);
	double mean, std;
	moments(x, SAMPLES, &mean, &std);
	size_t within = 0;
	for (size_t i = 0; i < SAMPLES; i++)
		within += fabs(x[i]) < 1.0;
	cr_expect(fabs(mean) < 0.005, "mean %g", mean); /* 5 sigma of the mean is 0.005 */
	cr_expect(fabs(std - 1) < 0.005, "std %g", std);
	cr_expect(fabs((double)within / SAMPLES - 0.682689) < 0.003, "within one sigma %g", (double)within / SAMPLES);
	free(x);
}

/* The standard normal distribution function. */
static double phi(double x)
{
	return 0.5 * erfc(-x / sqrt(2.0));
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

Test(fill, randn_in_float32_has_the_moments_and_tails_of_a_normal)
{
	float *f = malloc(SAMPLES * sizeof(float));
	double *x = malloc(SAMPLES * sizeof(double));
	cr_assert(f && x);
	ti_fill_policy p = ti_fill_constant(TI_FILL_RANDN);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(20241124, "layer.weight"), 0, SAMPLES, f);
	for (size_t i = 0; i < SAMPLES; i++)
		x[i] = f[i];
	free(f);
	double mean, std, m3 = 0, m4 = 0;
	moments(x, SAMPLES, &mean, &std);
	for (size_t i = 0; i < SAMPLES; i++) {
		double d = (x[i] - mean) / std;
		m3 += d * d * d;
		m4 += d * d * d * d;
	}
	/* tolerances are 5 standard errors of each statistic over 10^6 samples */
	cr_expect(fabs(mean) < 0.005, "mean %g", mean);
	cr_expect(fabs(std - 1) < 0.005, "std %g", std);
	cr_expect(fabs(m3 / SAMPLES) < 0.0125, "skewness %g", m3 / SAMPLES);
	cr_expect(fabs(m4 / SAMPLES - 3) < 0.05, "kurtosis %g", m4 / SAMPLES);
	/* two-sided tails beyond 1 to 4 standard deviations */
	for (int k = 1; k <= 4; k++) {
		size_t beyond = 0;
		for (size_t i = 0; i < SAMPLES; i++)
			beyond += fabs(x[i]) > k;
		double want = 2 * phi(-k) * SAMPLES, sd = sqrt(want * (1 - want / SAMPLES));
		cr_expect(fabs((double)beyond - want) < 5 * sd, "beyond %d sigma: %zu values, want %.1f +- %.1f", k,
		          beyond, want, 5 * sd);
	}
	/* Kolmogorov-Smirnov against the normal distribution: 1.95 / sqrt(n) is its 0.1% critical value */
	qsort(x, SAMPLES, sizeof(double), compare_doubles);
	double ks = 0;
	for (size_t i = 0; i < SAMPLES; i++) {
		double c = phi(x[i]);
		ks = fmax(ks, fmax(fabs(c - (double)i / SAMPLES), fabs(c - (double)(i + 1) / SAMPLES)));
	}
	cr_expect(ks < 1.95 / sqrt(SAMPLES), "Kolmogorov-Smirnov distance %g", ks);
	cr_expect(x[0] >= -6.7638 && x[SAMPLES - 1] <= 6.7638, "range [%g, %g]", x[0], x[SAMPLES - 1]);
	free(x);
}

/* SAMPLES float32 elements of a policy, widened to doubles (the caller frees them). */
static double *float32_samples(const char *policy, ti_fill_key key)
{
	float *f = malloc(SAMPLES * sizeof(float));
	double *x = malloc(SAMPLES * sizeof(double));
	cr_assert(f && x);
	ti_fill_policy p = parse_ok(policy);
	fill_ok(&p, TI_DT_FLOAT32, key, 0, SAMPLES, f);
	for (size_t i = 0; i < SAMPLES; i++)
		x[i] = f[i];
	free(f);
	return x;
}

Test(fill, normal_in_float32_has_the_asked_mean_and_std)
{
	double *x = float32_samples("normal:3,2", ti_fill_key_of(1, "b"));
	double mean, std;
	moments(x, SAMPLES, &mean, &std);
	cr_expect(fabs(mean - 3) < 0.01, "mean %g", mean);
	cr_expect(fabs(std - 2) < 0.01, "std %g", std);
	free(x);
}

Test(fill, rand_in_float32_is_uniform_on_0_1_with_24_bit_steps)
{
	double *x = float32_samples("rand", ti_fill_key_of(0, "r"));
	size_t off_grid = 0, out = 0, low_decile = 0;
	for (size_t i = 0; i < SAMPLES; i++) {
		out += !(x[i] >= 0.0 && x[i] < 1.0);
		off_grid += ldexp(x[i], 24) != floor(ldexp(x[i], 24));
		low_decile += x[i] < 0.1;
	}
	double mean, std;
	moments(x, SAMPLES, &mean, &std);
	EXPECT_INT(out, 0);
	EXPECT_INT(off_grid, 0);
	cr_expect(fabs(mean - 0.5) < 0.0015, "mean %g", mean);
	cr_expect(fabs(std - sqrt(1.0 / 12)) < 0.0015, "std %g", std);
	cr_expect(fabs((double)low_decile / SAMPLES - 0.1) < 0.0015, "below 0.1: %g", (double)low_decile / SAMPLES);
	free(x);
}

Test(fill, uniform_stays_within_its_bounds_in_every_float_dtype)
{
	static const ti_dtype dtypes[] = {TI_DT_FLOAT64, TI_DT_FLOAT32, TI_DT_FLOAT16, TI_DT_BFLOAT16};
	enum { N = 100000 };
	static unsigned char buf[N * 8];
	static double x[N];
	ti_fill_policy p = parse_ok("uniform:-2,5");
	for (size_t t = 0; t < sizeof(dtypes) / sizeof(dtypes[0]); t++) {
		fill_ok(&p, dtypes[t], ti_fill_key_of(3, "u"), 0, N, buf);
		ti_error err;
		ti_error_clear(&err);
		cr_assert(ti_cast(dtypes[t], buf, TI_DT_FLOAT64, x, N, 0, &err) == TI_OK);
		double lo = 1e9, hi = -1e9, mean, std;
		for (size_t i = 0; i < N; i++) {
			lo = fmin(lo, x[i]);
			hi = fmax(hi, x[i]);
		}
		moments(x, N, &mean, &std);
		cr_expect(lo >= -2 && hi <= 5, "%s: range [%g, %g]", ti_dtype_name(dtypes[t]), lo, hi);
		cr_expect(lo < -1.99 && hi > 4.9, "%s: range [%g, %g] does not reach the bounds", ti_dtype_name(dtypes[t]),
		          lo, hi);
		cr_expect(fabs(mean - 1.5) < 0.05, "%s: mean %g", ti_dtype_name(dtypes[t]), mean);
	}
}

Test(fill, rand_in_half_formats_never_rounds_up_to_1)
{
	enum { N = 200000 };
	static uint16_t h[N];
	ti_fill_policy p = ti_fill_constant(TI_FILL_RAND);
	fill_ok(&p, TI_DT_FLOAT16, ti_fill_key_of(9, "h"), 0, N, h);
	for (size_t i = 0; i < N; i++)
		cr_assert(h[i] < 0x3c00, "float16 element %zu is 0x%04x", i, h[i]);
	fill_ok(&p, TI_DT_BFLOAT16, ti_fill_key_of(9, "h"), 0, N, h);
	for (size_t i = 0; i < N; i++)
		cr_assert(h[i] < 0x3f80, "bfloat16 element %zu is 0x%04x", i, h[i]);
}

/* ---- determinism ---- */

Test(fill, a_seed_and_a_name_reproduce_the_same_bytes_and_others_do_not)
{
	enum { N = 1000 };
	float a[N], b[N], c[N], d[N];
	ti_fill_policy p = ti_fill_constant(TI_FILL_RANDN);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(5, "x.weight"), 0, N, a);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(5, "x.weight"), 0, N, b);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(6, "x.weight"), 0, N, c);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(5, "y.weight"), 0, N, d);
	cr_expect(!memcmp(a, b, sizeof(a)));
	cr_expect(memcmp(a, c, sizeof(a)));
	cr_expect(memcmp(a, d, sizeof(a)));
}

Test(fill, filling_in_odd_chunks_gives_the_bytes_of_one_fill)
{
	static const struct {
		const char *policy;
		ti_dtype dtype;
	} rows[] = {
		{"rand", TI_DT_FLOAT32},     {"randn", TI_DT_FLOAT64},     {"normal:1,0.5", TI_DT_FLOAT32},
		{"uniform:-1,1", TI_DT_FLOAT16}, {"randn", TI_DT_BFLOAT16}, {"arange", TI_DT_INT32},
		{"full:2.5", TI_DT_FLOAT64}, {"rand", TI_DT_FLOAT64},
	};
	static const size_t chunks[] = {1, 3, 7, 2, 250, 1, 513, 4, 5, 1000};
	enum { N = 1786 }; /* the sum of the chunks */
	static unsigned char whole[N * 8], pieces[N * 8];
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		ti_fill_policy p = parse_ok(rows[r].policy);
		ti_fill_key key = ti_fill_key_of(11, rows[r].policy);
		size_t size = ti_dtype_size(rows[r].dtype);
		fill_ok(&p, rows[r].dtype, key, 0, N, whole);
		memset(pieces, 0xa5, sizeof(pieces));
		size_t at = 0;
		for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
			fill_ok(&p, rows[r].dtype, key, at, chunks[c], pieces + at * size);
			at += chunks[c];
		}
		cr_assert(at == N);
		cr_expect(!memcmp(whole, pieces, N * size), "%s in %s: chunks differ from one fill", rows[r].policy,
		          ti_dtype_name(rows[r].dtype));
	}
}

Test(fill, a_fill_split_between_threads_gives_the_bytes_of_small_chunks)
{
	static const struct {
		const char *policy;
		ti_dtype dtype;
	} rows[] = {{"randn", TI_DT_FLOAT32}, {"rand", TI_DT_BFLOAT16}, {"normal:1,3", TI_DT_FLOAT64}};
	enum { N = (1 << 21) + 12345, PIECE = 4099 }; /* past the size at which ti_fill starts threads */
	unsigned char *whole = malloc((size_t)N * 8), *pieces = malloc((size_t)N * 8);
	cr_assert(whole && pieces);
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		ti_fill_policy p = parse_ok(rows[r].policy);
		ti_fill_key key = ti_fill_key_of(3, "big");
		size_t size = ti_dtype_size(rows[r].dtype);
		fill_ok(&p, rows[r].dtype, key, 3, N, whole);
		for (size_t at = 0; at < N; at += PIECE)
			fill_ok(&p, rows[r].dtype, key, 3 + at, N - at < PIECE ? N - at : PIECE, pieces + at * size);
		cr_expect(!memcmp(whole, pieces, (size_t)N * size), "%s in %s: threads change the bytes", rows[r].policy,
		          ti_dtype_name(rows[r].dtype));
	}
	free(whole);
	free(pieces);
}

/* ---- policies ---- */

Test(fill, policies_parse_and_format_back)
{
	static const struct {
		const char *text;
		ti_fill_kind kind;
		double a, b;
		const char *formatted;
	} rows[] = {
		{"empty", TI_FILL_EMPTY, 0, 0, "empty"},
		{"zeros", TI_FILL_ZEROS, 0, 0, "zeros"},
		{"ones", TI_FILL_ONES, 1, 0, "ones"},
		{"full:0.5", TI_FILL_FULL, 0.5, 0, "full:0.5"},
		{"full:-3", TI_FILL_FULL, -3, 0, "full:-3"},
		{"full:1e-3", TI_FILL_FULL, 0.001, 0, "full:0.001"},
		{"full:-inf", TI_FILL_FULL, -INFINITY, 0, "full:-inf"},
		{"rand", TI_FILL_RAND, 0, 1, "rand"},
		{"randn", TI_FILL_RANDN, 0, 1, "randn"},
		{"uniform:-0.125,0.125", TI_FILL_UNIFORM, -0.125, 0.125, "uniform:-0.125,0.125"},
		{"uniform:1,1", TI_FILL_UNIFORM, 1, 1, "uniform:1,1"},
		{"normal:0,0.02", TI_FILL_NORMAL, 0, 0.02, "normal:0,0.02"},
		{"normal:0.1,3", TI_FILL_NORMAL, 0.1, 3, "normal:0.1,3"},
		{"arange", TI_FILL_ARANGE, 0, 0, "arange"},
		{"init", TI_FILL_INIT, 0, 0, "init"},
		{"load", TI_FILL_LOAD, 0, 0, "load"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_fill_policy p = parse_ok(rows[i].text);
		EXPECT_INT(p.kind, rows[i].kind);
		EXPECT_DOUBLE(p.a, rows[i].a);
		EXPECT_DOUBLE(p.b, rows[i].b);
		char text[TI_FILL_TEXT_MAX];
		ti_fill_format(&p, text, sizeof(text));
		EXPECT_STR(text, rows[i].formatted);
	}
	ti_fill_policy big = parse_ok("full:9007199254740993");
	cr_expect(big.exact && big.a_int == INT64_C(9007199254740993));
	char text[TI_FILL_TEXT_MAX];
	ti_fill_format(&big, text, sizeof(text));
	EXPECT_STR(text, "full:9007199254740993");
	ti_fill_policy third = ti_fill_uniform(-1.0 / 3, 1.0 / 3);
	ti_fill_format(&third, text, sizeof(text));
	EXPECT_STR(text, "uniform:-0.3333333333333333,0.3333333333333333");
}

Test(fill, bad_policies_are_refused_with_their_text)
{
	static const struct {
		const char *text, *message;
	} rows[] = {
		{"ranf", "unknown fill policy 'ranf': expected empty, zeros, ones, full:V, rand, randn, uniform:A,B, "
		         "normal:MEAN,STD, arange, init or load"},
		{"", "unknown fill policy '': expected empty, zeros, ones, full:V, rand, randn, uniform:A,B, "
		     "normal:MEAN,STD, arange, init or load"},
		{"uniform:1", "bad fill policy 'uniform:1': expected uniform:A,B"},
		{"uniform:1,2,3", "bad fill policy 'uniform:1,2,3': expected uniform:A,B"},
		{"uniform", "bad fill policy 'uniform': expected uniform:A,B"},
		{"uniform:,1", "bad fill policy 'uniform:,1': expected uniform:A,B"},
		{"normal:0", "bad fill policy 'normal:0': expected normal:MEAN,STD"},
		{"full:", "bad fill policy 'full:': expected full:V"},
		{"full:abc", "bad fill policy 'full:abc': expected full:V"},
		{"full: 1", "bad fill policy 'full: 1': expected full:V"},
		{"full:1x", "bad fill policy 'full:1x': expected full:V"},
		{"zeros:1", "bad fill policy 'zeros:1': expected zeros"},
		{"rand:", "bad fill policy 'rand:': expected rand"},
		{"uniform:2,1",
		 "bad fill policy 'uniform:2,1': uniform_ expects to return a [from, to) range, but found from=2 > to=1"},
		{"normal:0,-1", "bad fill policy 'normal:0,-1': normal expects std >= 0.0, but found std -1"},
		{"normal:0,nan", "bad fill policy 'normal:0,nan': normal expects std >= 0.0, but found std nan"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_fill_policy p;
		ti_error err;
		ti_error_clear(&err);
		EXPECT_STATUS(ti_fill_parse(rows[i].text, &p, &err), TI_E_INVALID, err);
		EXPECT_STR(err.message, rows[i].message);
	}
}

Test(fill, pytorch_s_refusals_are_kept_with_its_words)
{
	/* the policy is named as ti_fill_format() writes it: 1e30 reads back as 1e+30 */
	static const struct {
		const char *policy;
		ti_dtype dtype;
		ti_status status;
		const char *message;
	} rows[] = {
		{"rand", TI_DT_INT64, TI_E_INVALID, "fill policy 'rand': \"check_uniform_bounds\" not implemented for 'Long'"},
		{"uniform:0,1", TI_DT_BOOL, TI_E_INVALID,
		 "fill policy 'uniform:0,1': \"check_uniform_bounds\" not implemented for 'Bool'"},
		{"randn", TI_DT_UINT8, TI_E_INVALID, "fill policy 'randn': \"normal_kernel_cpu\" not implemented for 'Byte'"},
		{"normal:0,1", TI_DT_INT32, TI_E_INVALID,
		 "fill policy 'normal:0,1': \"normal_kernel_cpu\" not implemented for 'Int'"},
		{"arange", TI_DT_BOOL, TI_E_INVALID, "fill policy 'arange': \"arange_cpu\" not implemented for 'Bool'"},
		{"full:300", TI_DT_INT8, TI_E_INVALID,
		 "fill policy 'full:300': value cannot be converted to type int8 without overflow"},
		{"full:-256", TI_DT_UINT8, TI_E_INVALID,
		 "fill policy 'full:-256': value cannot be converted to type uint8 without overflow"},
		{"full:255.9", TI_DT_UINT8, TI_E_INVALID,
		 "fill policy 'full:255.9': value cannot be converted to type uint8 without overflow"},
		{"full:-0.5", TI_DT_UINT8, TI_E_INVALID,
		 "fill policy 'full:-0.5': value cannot be converted to type uint8 without overflow"},
		{"full:nan", TI_DT_INT32, TI_E_INVALID,
		 "fill policy 'full:nan': value cannot be converted to type int32 without overflow"},
		{"full:1e30", TI_DT_INT64, TI_E_INVALID,
		 "fill policy 'full:1e+30': value cannot be converted to type int64 without overflow"},
		{"full:65505", TI_DT_FLOAT16, TI_E_INVALID,
		 "fill policy 'full:65505': value cannot be converted to type float16 without overflow"},
		{"full:1e300", TI_DT_FLOAT32, TI_E_INVALID,
		 "fill policy 'full:1e+300': value cannot be converted to type float32 without overflow"},
		{"uniform:-1000000,1000000", TI_DT_FLOAT16, TI_E_INVALID,
		 "fill policy 'uniform:-1e+06,1e+06': from is out of bounds for float16"},
		{"uniform:0,inf", TI_DT_FLOAT32, TI_E_INVALID, "fill policy 'uniform:0,inf': to is out of bounds for float32"},
		{"uniform:-3e38,3e38", TI_DT_FLOAT32, TI_E_INVALID,
		 "fill policy 'uniform:-3e+38,3e+38': to - from exceeds the largest float32"},
		{"ones", TI_DT_COMPLEX64, TI_E_UNSUPPORTED, "fill policy 'ones': cannot write complex64 tensors"},
		{"init", TI_DT_FLOAT32, TI_E_INVALID,
		 "fill policy 'init': a module's initialisation is resolved per tensor before filling"},
		{"load", TI_DT_FLOAT32, TI_E_INVALID, "fill policy 'load': the checkpoint's bytes are copied, not filled"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_fill_policy p = parse_ok(rows[i].policy);
		unsigned char buf[16];
		ti_error err;
		ti_error_clear(&err);
		EXPECT_STATUS(ti_fill_check(&p, rows[i].dtype, &err), rows[i].status, err);
		EXPECT_STR(err.message, rows[i].message);
		ti_error_clear(&err);
		EXPECT_STATUS(ti_fill(&p, rows[i].dtype, ti_fill_key_of(0, "t"), 0, 1, buf, &err), rows[i].status, err);
	}
}

Test(fill, constants_are_the_values_torch_full_writes)
{
	static const struct {
		const char *policy;
		ti_dtype dtype;
		uint64_t want; /* the element's bits */
	} rows[] = {
		{"full:0.1", TI_DT_FLOAT16, 0x2e66},
		{"full:0.1", TI_DT_BFLOAT16, 0x3dcd},
		{"full:0.1", TI_DT_FLOAT32, 0x3dcccccd},
		{"full:0.1", TI_DT_FLOAT64, 0x3fb999999999999a},
		{"full:nan", TI_DT_BFLOAT16, 0x7fc0},
		{"full:-nan", TI_DT_FLOAT16, 0xfe00},
		{"full:inf", TI_DT_FLOAT16, 0x7c00},
		{"full:65504", TI_DT_FLOAT16, 0x7bff},
		{"full:2.5", TI_DT_INT64, 2},
		{"full:-2.5", TI_DT_INT8, 0xfe},
		{"full:9007199254740993", TI_DT_INT64, UINT64_C(9007199254740993)},
		{"full:9007199254740993", TI_DT_FLOAT64, 0x4340000000000000},
		{"full:-1", TI_DT_UINT8, 255},
		{"full:-255", TI_DT_UINT8, 1},
		{"full:2", TI_DT_BOOL, 1},
		{"full:nan", TI_DT_BOOL, 1},
		{"full:0", TI_DT_BOOL, 0},
		{"ones", TI_DT_BOOL, 1},
		{"ones", TI_DT_BFLOAT16, 0x3f80},
		{"ones", TI_DT_INT16, 1},
		{"zeros", TI_DT_FLOAT64, 0},
		{"zeros", TI_DT_COMPLEX64, 0},
		{"zeros", TI_DT_QINT8, 0},
		{"full:255", TI_DT_UINT16, 255},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_fill_policy p = parse_ok(rows[i].policy);
		unsigned char buf[3 * 16];
		memset(buf, 0xa5, sizeof(buf));
		size_t size = ti_dtype_size(rows[i].dtype);
		fill_ok(&p, rows[i].dtype, ti_fill_key_of(0, "c"), 17, 3, buf);
		for (size_t e = 0; e < 3; e++) {
			uint64_t got = 0;
			for (size_t b = 0; b < size && b < 8; b++)
				got |= (uint64_t)buf[e * size + b] << (8 * b);
			cr_expect(got == rows[i].want, "%s in %s, element %zu: got 0x%llx, want 0x%llx", rows[i].policy,
			          ti_dtype_name(rows[i].dtype), e, (unsigned long long)got, (unsigned long long)rows[i].want);
		}
	}
}

Test(fill, arange_counts_elements_and_rounds_or_wraps_as_a_cast_does)
{
	ti_fill_policy p = ti_fill_constant(TI_FILL_ARANGE);
	int64_t i64[5];
	fill_ok(&p, TI_DT_INT64, ti_fill_key_of(0, ""), 40, 5, i64);
	for (int i = 0; i < 5; i++)
		EXPECT_INT(i64[i], 40 + i);
	/* torch.arange(5000, dtype=torch.float16)[-5:] is 4996, 4996, 4996, 5000, 5000 */
	uint16_t h[5];
	fill_ok(&p, TI_DT_FLOAT16, ti_fill_key_of(0, ""), 4995, 5, h);
	static const uint16_t want_h[5] = {0x6ce1, 0x6ce1, 0x6ce1, 0x6ce2, 0x6ce2};
	for (int i = 0; i < 5; i++)
		cr_expect(h[i] == want_h[i], "float16 element %d: got 0x%04x, want 0x%04x", 4995 + i, h[i], want_h[i]);
	/* torch.arange(300, dtype=torch.uint8)[-3:] is 41, 42, 43 */
	uint8_t u[3];
	fill_ok(&p, TI_DT_UINT8, ti_fill_key_of(0, ""), 297, 3, u);
	EXPECT_INT(u[0], 41);
	EXPECT_INT(u[2], 43);
}

Test(fill, empty_writes_nothing_and_a_zero_range_is_zeroed_in_every_chunk)
{
	unsigned char buf[64];
	memset(buf, 0x5a, sizeof(buf));
	ti_fill_policy empty = ti_fill_constant(TI_FILL_EMPTY);
	fill_ok(&empty, TI_DT_FLOAT32, ti_fill_key_of(0, "e"), 0, 16, buf);
	for (size_t i = 0; i < sizeof(buf); i++)
		cr_assert(buf[i] == 0x5a);
	ti_fill_policy p = ti_fill_constant(TI_FILL_RANDN);
	p.zero_begin = 8;
	p.zero_end = 12; /* row 2 of a [5, 4] embedding */
	float whole[20], pieces[20];
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(0, "emb"), 0, 20, whole);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(0, "emb"), 0, 9, pieces);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(0, "emb"), 9, 2, pieces + 9);
	fill_ok(&p, TI_DT_FLOAT32, ti_fill_key_of(0, "emb"), 11, 9, pieces + 11);
	for (int i = 0; i < 20; i++) {
		bool zero = i >= 8 && i < 12;
		cr_expect(zero ? whole[i] == 0.0f : whole[i] != 0.0f, "element %d is %g", i, whole[i]);
	}
	cr_expect(!memcmp(whole, pieces, sizeof(whole)));
}

Test(fill, a_range_past_the_largest_index_or_without_a_buffer_is_refused)
{
	ti_fill_policy p = ti_fill_constant(TI_FILL_ZEROS);
	ti_error err;
	ti_error_clear(&err);
	unsigned char buf[8];
	EXPECT_STATUS(ti_fill(&p, TI_DT_FLOAT32, ti_fill_key_of(0, ""), UINT64_MAX, 2, buf, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_fill(&p, TI_DT_FLOAT32, ti_fill_key_of(0, ""), 0, 2, NULL, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_fill(&p, TI_DT_FLOAT32, ti_fill_key_of(0, ""), 0, 0, NULL, &err), TI_OK, err);
	EXPECT_STATUS(ti_fill(&p, TI_DT_INVALID, ti_fill_key_of(0, ""), 0, 1, buf, &err), TI_E_INVALID, err);
}

/* ---- overrides ---- */

Test(fill, the_last_matching_override_wins)
{
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_fill_table table;
	ti_fill_table_init(&table, &arena);
	ti_error err;
	ti_error_clear(&err);
	static const char *specs[] = {"*.bias=zeros", "encoder.*=rand", "encoder.0.bias=ones", "*norm*=full:1.5"};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		ASSERT_STATUS(ti_fill_table_add(&table, specs[i], &err), TI_OK, err);
	static const struct {
		const char *name, *text;
	} rows[] = {
		{"encoder.0.bias", "ones"},       {"encoder.1.bias", "rand"}, {"decoder.bias", "zeros"},
		{"encoder.norm.weight", "full:1.5"}, {"decoder.weight", NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const ti_fill_override *o = ti_fill_table_lookup(&table, rows[i].name);
		EXPECT_STR(o ? o->text : NULL, rows[i].text);
	}
	const ti_fill_override *o = ti_fill_table_lookup(&table, "encoder.norm.bias");
	cr_assert(o);
	EXPECT_STR(o->glob, "*norm*");
	EXPECT_INT(o->policy.kind, TI_FILL_FULL);
	EXPECT_DOUBLE(o->policy.a, 1.5);
	ti_arena_release(&arena);
}

Test(fill, bad_overrides_name_the_override_and_the_policy)
{
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_fill_table table;
	ti_fill_table_init(&table, &arena);
	static const struct {
		const char *spec, *message;
	} rows[] = {
		{"weight", "bad fill override 'weight': expected GLOB=POLICY"},
		{"=zeros", "bad fill override '=zeros': expected GLOB=POLICY"},
		{"*.w=bogus", "bad fill override '*.w=bogus': unknown fill policy 'bogus': expected empty, zeros, ones, "
		              "full:V, rand, randn, uniform:A,B, normal:MEAN,STD, arange, init or load"},
		{"*.w=uniform:1", "bad fill override '*.w=uniform:1': bad fill policy 'uniform:1': expected uniform:A,B"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_error err;
		ti_error_clear(&err);
		EXPECT_STATUS(ti_fill_table_add(&table, rows[i].spec, &err), TI_E_INVALID, err);
		EXPECT_STR(err.message, rows[i].message);
	}
	EXPECT_INT(table.count, 0);
	ti_arena_release(&arena);
}

Test(fill, an_override_table_has_a_ceiling)
{
	ti_arena arena;
	ti_arena_init(&arena, 16 << 20);
	ti_fill_table table;
	ti_fill_table_init(&table, &arena);
	ti_error err;
	ti_error_clear(&err);
	for (int i = 0; i < TI_FILL_TABLE_MAX; i++)
		ASSERT_STATUS(ti_fill_table_add(&table, "a=zeros", &err), TI_OK, err);
	EXPECT_STATUS(ti_fill_table_add(&table, "a=ones", &err), TI_E_LIMIT, err);
	EXPECT_INT(table.count, TI_FILL_TABLE_MAX);
	ti_arena_release(&arena);
}
