/*
 * test_stats.c - per-tensor statistics with exact answers: NaN, infinities
 * and zeros, integers past 2^53, bool, float16 and bfloat16, strided views
 * (made by hand on a real storage), empty and 0-dim tensors, chunk
 * boundaries, tensors without data, and the CUDA path through the fake
 * driver (tests/unit/fake/). The tensors are safetensors files written by
 * the library's own writer into a temporary folder.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"

#include "tinspect/cuda.h"
#include "tinspect/safetensors.h"
#include "tinspect/stats.h"

static char tmpdir[64];
static ti_source *src;

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/tinspect-stats-XXXXXX", "/tmp");
	cr_assert(mkdtemp(tmpdir) != NULL, "cannot make a temporary folder");
	src = NULL;
}

static void remove_tmpdir(void)
{
	char cmd[128];
	ti_source_close(src);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect(system(cmd) == 0);
}

TestSuite(stats, .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 60);

/* Writes NAME in the temporary folder, n tensors of spec with their bytes (of n_bytes each) as given, and opens it into src. */
static void open_written(const char *name, const ti_st_spec *spec, size_t n, const void *const *bytes,
                         const size_t *n_bytes)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	ti_error err;
	ti_error_clear(&err);
	ti_st_writer *w;
	ASSERT_STATUS(ti_st_writer_begin(fd, spec, n, NULL, 0, TI_ST_ORDER_AS_GIVEN, &w, &err), TI_OK, err);
	for (size_t i = 0; i < n; i++)
		ASSERT_STATUS(ti_st_writer_put(w, i, bytes[i], n_bytes[i], &err), TI_OK, err);
	ASSERT_STATUS(ti_st_writer_end(w, &err), TI_OK, err);
	ti_st_writer_free(w);
	close(fd);
	ASSERT_STATUS(ti_source_open(path, &src, &err), TI_OK, err);
}

/* Opens a safetensors file holding one tensor "t" of dtype, shape and bytes: the source's tensor 0. */
static const ti_source_tensor *one(ti_dtype dtype, int ndim, const int64_t *shape, const void *bytes, size_t n)
{
	ti_st_spec spec = {.name = "t", .dtype = dtype, .ndim = ndim, .shape = shape};
	open_written("t.safetensors", &spec, 1, &bytes, &n);
	return ti_source_tensor_at(src, 0);
}

static ti_tensor_stats stats_of(const ti_source_tensor *t)
{
	ti_error err;
	ti_error_clear(&err);
	ti_view_reader r;
	ti_view_reader_init(&r);
	ti_tensor_stats s;
	ASSERT_STATUS(ti_stats_tensor(src, t, &r, &s, &err), TI_OK, err);
	ti_view_reader_release(&r);
	return s;
}

Test(stats, counts_nan_and_infinities_and_keeps_the_finite_range)
{
	const float v[] = {1, -2, NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 4};
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT32, 1, (int64_t[]){8}, v, sizeof(v)));
	cr_assert(s.has_values && !s.integer && !s.skipped);
	EXPECT_INT(s.count, 8);
	EXPECT_INT(s.finite, 5);
	EXPECT_INT(s.nan, 1);
	EXPECT_INT(s.posinf, 1);
	EXPECT_INT(s.neginf, 1);
	EXPECT_INT(s.zeros, 2); /* -0.0 == 0 */
	EXPECT_DOUBLE(s.min, -2);
	EXPECT_DOUBLE(s.max, 4);
	EXPECT_DOUBLE(s.mean, 0.6);
	/* squared deviations from 0.6: 0.16 + 6.76 + 0.36 + 0.36 + 11.56 = 19.2, over 5 - 1 */
	cr_expect(fabs(s.std - sqrt(4.8)) < 1e-15, "std: got %.17g", s.std);
	EXPECT_INT(s.checksum, ti_checksum_bytes(v, sizeof(v)));
	cr_expect(ti_stats_nonfinite(&s));
}

Test(stats, integers_past_2_to_the_53_keep_exact_min_and_max)
{
	const int64_t v[] = {INT64_MAX, -5, 0, INT64_MIN, 9007199254740993};
	ti_tensor_stats s = stats_of(one(TI_DT_INT64, 1, (int64_t[]){5}, v, sizeof(v)));
	cr_assert(s.integer);
	cr_expect(s.min_int == INT64_MIN && s.max_int == INT64_MAX);
	EXPECT_INT(s.zeros, 1);
	EXPECT_INT(s.finite, 5);
	EXPECT_INT(s.nan + s.posinf + s.neginf, 0);
}

Test(stats, bool_counts_as_zero_and_one)
{
	const unsigned char v[] = {1, 0, 1, 1};
	ti_tensor_stats s = stats_of(one(TI_DT_BOOL, 1, (int64_t[]){4}, v, sizeof(v)));
	EXPECT_INT(s.min_int, 0);
	EXPECT_INT(s.max_int, 1);
	EXPECT_DOUBLE(s.mean, 0.75);
	EXPECT_DOUBLE(s.std, 0.5);
	EXPECT_INT(s.zeros, 1);
}

Test(stats, bfloat16_and_float16_are_widened_exactly)
{
	const uint16_t b[] = {0x3F80, 0xC000, 0x7FC0, 0x3F00}; /* 1, -2, NaN, 0.5 */
	ti_tensor_stats s = stats_of(one(TI_DT_BFLOAT16, 1, (int64_t[]){4}, b, sizeof(b)));
	EXPECT_INT(s.nan, 1);
	EXPECT_DOUBLE(s.min, -2);
	EXPECT_DOUBLE(s.max, 1);
	EXPECT_DOUBLE(s.mean, -0.5 / 3);
	EXPECT_INT(s.checksum, ti_checksum_bytes(b, sizeof(b)));
	ti_source_close(src);
	src = NULL;
	const uint16_t h[] = {0x3C00, 0x7BFF, 0x0001, 0xFC00, 0x8000}; /* 1, 65504, 2^-24, -inf, -0 */
	s = stats_of(one(TI_DT_FLOAT16, 1, (int64_t[]){5}, h, sizeof(h)));
	EXPECT_INT(s.neginf, 1);
	EXPECT_INT(s.zeros, 1);
	EXPECT_DOUBLE(s.min, -0.0);
	EXPECT_DOUBLE(s.max, 65504);
	EXPECT_DOUBLE(s.mean, (1 + 65504 + 0x1p-24) / 4);
}

Test(stats, a_zero_as_min_or_max_has_the_sign_of_the_first_zero)
{
	/* A plain loop (lo = x < lo ? x : lo) keeps the first of equal values; the vector loop must agree. */
	float v[21];
	for (int i = 0; i < 21; i++)
		v[i] = 1 + (float)i;
	v[6] = 0.0f; /* the first zero, in a later lane than the second */
	v[9] = -0.0f;
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT32, 1, (int64_t[]){21}, v, sizeof(v)));
	cr_expect(s.min == 0 && !signbit(s.min), "min: got %g, want 0", s.min);
	ti_source_close(src);
	v[6] = -0.0f;
	v[9] = 0.0f;
	s = stats_of(one(TI_DT_FLOAT32, 1, (int64_t[]){21}, v, sizeof(v)));
	cr_expect(s.min == 0 && signbit(s.min), "min: got %g, want -0", s.min);
	ti_source_close(src);
	for (int i = 0; i < 21; i++)
		v[i] = -1 - (float)i;
	v[5] = 0.0f;
	v[8] = -0.0f;
	v[20] = -0.0f; /* past the last group of eight */
	s = stats_of(one(TI_DT_FLOAT32, 1, (int64_t[]){21}, v, sizeof(v)));
	cr_expect(s.max == 0 && !signbit(s.max), "max: got %g, want 0", s.max);
	ti_source_close(src);
	double d[19];
	for (int i = 0; i < 19; i++)
		d[i] = -1 - i;
	d[18] = -0.0; /* the only zero, alone at the end */
	s = stats_of(one(TI_DT_FLOAT64, 1, (int64_t[]){19}, d, sizeof(d)));
	cr_expect(s.max == 0 && signbit(s.max), "max: got %g, want -0", s.max);
	EXPECT_INT(s.zeros, 1);
}

Test(stats, a_chunk_is_summed_in_eight_lanes_and_the_rest_in_the_first_bit_for_bit)
{
	/* The order of additions the fast loop keeps (stats.c), written out plainly, on sums that round. */
	enum { N = 1003 };
	float v[N];
	uint32_t seed = 7;
	for (int round = 0; round < 16; round++) {
		for (int i = 0; i < N; i++) {
			seed = seed * 1664525u + 1013904223u;
			v[i] = ldexpf((float)(seed >> 8), (int)(seed % 41) - 30) * (seed & 1 ? -1 : 1);
		}
		double lanes[8] = {0}, sum = 0, m2[8] = {0}, m2sum = 0;
		int i = 0;
		for (; i + 8 <= N; i += 8)
			for (int k = 0; k < 8; k++)
				lanes[k] += (double)v[i + k];
		for (; i < N; i++)
			lanes[0] += (double)v[i];
		for (int k = 0; k < 8; k++)
			sum += lanes[k];
		double mean = sum / N;
		for (i = 0; i + 8 <= N; i += 8)
			for (int k = 0; k < 8; k++)
				m2[k] += ((double)v[i + k] - mean) * ((double)v[i + k] - mean);
		for (; i < N; i++)
			m2[0] += ((double)v[i] - mean) * ((double)v[i] - mean);
		for (int k = 0; k < 8; k++)
			m2sum += m2[k];
		ti_tensor_stats s = stats_of(one(TI_DT_FLOAT32, 1, (int64_t[]){N}, v, sizeof(v)));
		EXPECT_DOUBLE(s.mean, mean);
		EXPECT_DOUBLE(s.std, sqrt(m2sum / (N - 1)));
		ti_source_close(src);
		src = NULL;
	}
}

Test(stats, every_float16_is_widened_exactly)
{
	/* All 65536 bit patterns: the vector widening (four at a time) against the format's definition. */
	uint16_t *h = malloc(65536 * sizeof(uint16_t));
	cr_assert(h);
	double sum = 0, m2 = 0, lo = INFINITY, hi = -INFINITY;
	uint64_t nan = 0, posinf = 0, neginf = 0, finite = 0, zeros = 0;
	for (uint32_t i = 0; i < 65536; i++)
		h[i] = (uint16_t)i;
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t i = 0; i < 65536; i++) {
			int e = (int)(i >> 10) & 31, m = (int)(i & 1023);
			double sign = i & 0x8000 ? -1 : 1;
			if (e == 31) {
				if (pass == 0) {
					nan += m != 0;
					posinf += m == 0 && sign > 0;
					neginf += m == 0 && sign < 0;
				}
				continue;
			}
			double x = sign * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
			if (pass == 0) {
				sum += x;
				finite++;
				zeros += x == 0;
				lo = x < lo ? x : lo;
				hi = x > hi ? x : hi;
			} else {
				m2 += (x - sum / (double)finite) * (x - sum / (double)finite);
			}
		}
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT16, 1, (int64_t[]){65536}, h, 65536 * sizeof(uint16_t)));
	EXPECT_INT(s.nan, nan);
	EXPECT_INT(s.posinf, posinf);
	EXPECT_INT(s.neginf, neginf);
	EXPECT_INT(s.zeros, zeros);
	EXPECT_DOUBLE(s.min, lo);
	EXPECT_DOUBLE(s.max, hi);
	EXPECT_DOUBLE(s.mean, sum / (double)finite); /* a NaN in the chunk: the careful loop, in order */
	EXPECT_DOUBLE(s.std, sqrt(m2 / (double)(finite - 1)));
	free(h);
	ti_source_close(src);
	src = NULL;
	/* and without NaN or inf, through the fast loop: the finite patterns only, in order */
	uint16_t *f = malloc(65536 * sizeof(uint16_t));
	cr_assert(f);
	size_t n = 0;
	double fsum = 0;
	for (uint32_t i = 0; i < 65536; i++)
		if (((i >> 10) & 31) != 31) {
			f[n++] = (uint16_t)i;
			int e = (int)(i >> 10) & 31, m = (int)(i & 1023);
			fsum += (i & 0x8000 ? -1 : 1) * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
		}
	s = stats_of(one(TI_DT_FLOAT16, 1, (int64_t[]){(int64_t)n}, f, n * sizeof(uint16_t)));
	EXPECT_INT(s.finite, n);
	EXPECT_DOUBLE(s.min, -65504);
	EXPECT_DOUBLE(s.max, 65504);
	EXPECT_DOUBLE(s.mean, fsum / (double)n); /* float16 sums are exact in float64: any order gives this */
	free(f);
}

Test(stats, a_strided_view_is_read_in_logical_order)
{
	float v[12];
	for (int i = 0; i < 12; i++)
		v[i] = (float)i;
	ti_source_tensor t = *one(TI_DT_FLOAT32, 1, (int64_t[]){12}, v, sizeof(v));
	/* t.as_strided((3, 2), (1, 3), 1): rows 1 4 / 2 5 / 3 6 */
	t.ndim = 2;
	t.shape = (const int64_t[]){3, 2};
	t.stride = (const int64_t[]){1, 3};
	t.offset = 1;
	t.numel = 6;
	ti_tensor_stats s = stats_of(&t);
	const float logical[] = {1, 4, 2, 5, 3, 6};
	EXPECT_INT(s.checksum, ti_checksum_bytes(logical, sizeof(logical)));
	EXPECT_DOUBLE(s.min, 1);
	EXPECT_DOUBLE(s.max, 6);
	EXPECT_DOUBLE(s.mean, 3.5);
	EXPECT_INT(s.count, 6);
}

Test(stats, an_empty_tensor_has_no_range_and_the_empty_checksum)
{
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT32, 2, (int64_t[]){0, 3}, "", 0));
	EXPECT_INT(s.count, 0);
	EXPECT_INT(s.finite, 0);
	cr_expect(isnan(s.min) && isnan(s.mean) && isnan(s.std));
	EXPECT_INT(s.checksum, 0xef46db3751d8e999ull);
}

Test(stats, a_0_dim_tensor_is_one_value_without_a_std)
{
	const double v = 7;
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT64, 0, NULL, &v, sizeof(v)));
	EXPECT_INT(s.count, 1);
	EXPECT_DOUBLE(s.mean, 7);
	EXPECT_DOUBLE(s.min, 7);
	cr_expect(isnan(s.std));
}

/* The reference: every statistic by the definition, one element at a time. */
static void naive(const float *v, size_t n, double *mean, double *std, uint64_t *nan)
{
	double sum = 0, m2 = 0;
	uint64_t k = 0;
	*nan = 0;
	for (size_t i = 0; i < n; i++) {
		if (isnan(v[i]))
			++*nan;
		else
			sum += v[i], k++;
	}
	*mean = sum / (double)k;
	for (size_t i = 0; i < n; i++)
		if (!isnan(v[i]))
			m2 += (v[i] - *mean) * (v[i] - *mean);
	*std = sqrt(m2 / (double)(k - 1));
}

Test(stats, chunks_join_at_their_boundaries)
{
	size_t n = 2 * TI_STATS_CHUNK + 3;
	float *v = malloc(n * sizeof(float));
	cr_assert(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (float)((i % 7) * 1000) + 1e6f; /* a large mean: the naive one-pass formula would lose it */
	v[TI_STATS_CHUNK] = NAN;  /* the first element of the second chunk */
	v[n - 1] = NAN;           /* the last of the last */
	v[TI_STATS_CHUNK - 1] = -1; /* the minimum, at the end of the first */
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT32, 1, (int64_t[]){(int64_t)n}, v, n * sizeof(float)));
	double mean, std;
	uint64_t nan;
	naive(v, n, &mean, &std, &nan);
	EXPECT_INT(s.nan, nan);
	EXPECT_DOUBLE(s.min, -1);
	EXPECT_DOUBLE(s.max, 1006000);
	cr_expect(fabs(s.mean - mean) <= 1e-12 * fabs(mean), "mean: got %.17g, want %.17g", s.mean, mean);
	cr_expect(fabs(s.std - std) <= 1e-9 * std, "std: got %.17g, want %.17g", s.std, std);
	EXPECT_INT(s.checksum, ti_checksum_bytes(v, n * sizeof(float)));
	free(v);
}

Test(stats, float64_chunks_hash_in_their_first_pass_to_the_checksum_of_the_bytes)
{
	/* The float loops fold whole 32-byte stripes as they sum; the bytes past the last group go after. */
	size_t n = TI_STATS_CHUNK + 13;
	double *v = malloc(n * sizeof(double));
	cr_assert(v);
	for (size_t i = 0; i < n; i++)
		v[i] = (double)(i % 1013) * 0.25 - 100;
	v[n - 2] = NAN; /* the last chunk goes to the careful loop too: hashed once all the same */
	ti_tensor_stats s = stats_of(one(TI_DT_FLOAT64, 1, (int64_t[]){(int64_t)n}, v, n * sizeof(double)));
	EXPECT_INT(s.checksum, ti_checksum_bytes(v, n * sizeof(double)));
	EXPECT_INT(s.nan, 1);
	free(v);
}

Test(stats, a_transposed_view_across_chunks_reads_every_element_once)
{
	enum { R = 513, C = 1024 }; /* R * C > 2 chunks */
	float *v = malloc((size_t)R * C * sizeof(float)), *logical = malloc((size_t)R * C * sizeof(float));
	cr_assert(v && logical);
	for (size_t i = 0; i < (size_t)R * C; i++)
		v[i] = (float)(i % 1009);
	ti_source_tensor t = *one(TI_DT_FLOAT32, 2, (int64_t[]){R, C}, v, (size_t)R * C * sizeof(float));
	t.shape = (const int64_t[]){C, R}; /* .t() */
	t.stride = (const int64_t[]){1, C};
	for (size_t i = 0; i < C; i++)
		for (size_t j = 0; j < R; j++)
			logical[i * R + j] = v[j * C + i];
	ti_tensor_stats s = stats_of(&t);
	EXPECT_INT(s.checksum, ti_checksum_bytes(logical, (size_t)R * C * sizeof(float)));
	EXPECT_INT(s.zeros, (R * C + 1008) / 1009);
	free(v);
	free(logical);
}

Test(stats, tensors_without_data_are_skipped_with_the_reason)
{
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_source_open("fixtures/meta_saved.pt", &src, &err), TI_OK, err);
	ti_tensor_stats s = stats_of(ti_source_tensor_at(src, 0));
	EXPECT_STR(s.skipped, "no data");
	ti_source_close(src);
	ASSERT_STATUS(ti_source_open("fixtures/quantized.pt", &src, &err), TI_OK, err);
	s = stats_of(ti_source_tensor_at(src, 0));
	EXPECT_STR(s.skipped, "a quantized tensor");
}

static const char *fake_path(void)
{
	const char *p = getenv("TINSPECT_TEST_FAKE_LIBCUDA");
	return p && *p ? p : "build/fake_libcuda.so";
}

Test(stats, on_cuda_the_bytes_read_back_give_the_same_statistics)
{
	cr_assert(access(fake_path(), R_OK) == 0, "the fake driver %s is missing", fake_path());
	setenv(TI_CUDA_LIBRARY_ENV, fake_path(), 1);
	float v[12];
	for (int i = 0; i < 12; i++)
		v[i] = i == 5 ? NAN : (float)i;
	one(TI_DT_FLOAT32, 1, (int64_t[]){12}, v, sizeof(v));
	ti_error err;
	ti_error_clear(&err);
	size_t which[] = {0};
	ti_tensor_stats cpu, cuda;
	ti_stats_options o = {.cuda = false};
	ASSERT_STATUS(ti_stats_run(src, which, 1, &o, &cpu, &err), TI_OK, err);
	o.cuda = true;
	ASSERT_STATUS(ti_stats_run(src, which, 1, &o, &cuda, &err), TI_OK, err);
	EXPECT_INT(cuda.nan, 1);
	EXPECT_INT(cuda.checksum, cpu.checksum);
	EXPECT_DOUBLE(cuda.mean, cpu.mean);
	EXPECT_DOUBLE(cuda.std, cpu.std);
}

Test(stats, on_cuda_views_of_shared_storages_and_empty_tensors_agree_with_the_cpu)
{
	cr_assert(access(fake_path(), R_OK) == 0, "the fake driver %s is missing", fake_path());
	setenv(TI_CUDA_LIBRARY_ENV, fake_path(), 1);
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_source_open("fixtures/views.pt", &src, &err), TI_OK, err);
	size_t n = ti_source_tensor_count(src), which[16];
	cr_assert(n <= 16);
	for (size_t i = 0; i < n; i++)
		which[i] = n - 1 - i; /* not in storage order */
	ti_tensor_stats cpu[16], cuda[16];
	ti_stats_options o = {.cuda = false};
	ASSERT_STATUS(ti_stats_run(src, which, n, &o, cpu, &err), TI_OK, err);
	o.cuda = true;
	ASSERT_STATUS(ti_stats_run(src, which, n, &o, cuda, &err), TI_OK, err);
	for (size_t i = 0; i < n; i++) {
		const char *name = ti_source_tensor_at(src, which[i])->name;
		cr_expect(cuda[i].checksum == cpu[i].checksum, "%s: checksum differs", name);
		cr_expect(cuda[i].count == cpu[i].count && cuda[i].zeros == cpu[i].zeros, "%s: counts differ", name);
		cr_expect(cuda[i].finite < 1 || cuda[i].mean == cpu[i].mean, "%s: mean differs", name);
	}
}

Test(stats, without_a_driver_cuda_is_not_available)
{
	setenv(TI_CUDA_LIBRARY_ENV, "/nonexistent/libcuda.so.1", 1);
	const float v[] = {1};
	one(TI_DT_FLOAT32, 1, (int64_t[]){1}, v, sizeof(v));
	ti_error err;
	ti_error_clear(&err);
	size_t which[] = {0};
	ti_tensor_stats s;
	ti_stats_options o = {.cuda = true};
	EXPECT_STATUS(ti_stats_run(src, which, 1, &o, &s, &err), TI_E_IO, err);
	cr_expect(!strncmp(err.message, "CUDA not available: ", 20), "got \"%s\"", err.message);
}

static void log_done(void *user, uint64_t done, uint64_t total)
{
	uint64_t *log = user; /* log[0]: calls; then each call's done; the last slot: total */
	if (log[0] < 8)
		log[1 + log[0]] = done;
	log[0]++;
	log[9] = total;
}

Test(stats, tensors_are_read_in_the_order_their_bytes_lie_in_the_file)
{
	/* the bytes lie c (7 floats), a (3), b (5); the names sort a, b, c */
	const int64_t sc[] = {7}, sa[] = {3}, sb[] = {5};
	ti_st_spec spec[] = {{.name = "c", .dtype = TI_DT_FLOAT32, .ndim = 1, .shape = sc},
	                     {.name = "a", .dtype = TI_DT_FLOAT32, .ndim = 1, .shape = sa},
	                     {.name = "b", .dtype = TI_DT_FLOAT32, .ndim = 1, .shape = sb}};
	float v[7] = {1, 2, 3, 4, 5, 6, 7};
	const void *bytes[] = {v, v, v};
	const size_t n_bytes[] = {7 * 4, 3 * 4, 5 * 4};
	open_written("three.safetensors", spec, 3, bytes, n_bytes);
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_source_tensor_count(src) == 3);
	EXPECT_STR(ti_source_tensor_at(src, 0)->name, "c");
	size_t which[] = {1, 2, 0}; /* asked for by name: a, b, c */
	ti_tensor_stats out[3];
	uint64_t log[10] = {0};
	ti_stats_options o = {.progress = log_done, .progress_user = log};
	ASSERT_STATUS(ti_stats_run(src, which, 3, &o, out, &err), TI_OK, err);
	EXPECT_INT(log[0], 3);
	EXPECT_INT(log[1], 7 * 4);
	EXPECT_INT(log[2], (7 + 3) * 4);
	EXPECT_INT(log[3], (7 + 3 + 5) * 4);
	EXPECT_INT(log[9], (7 + 3 + 5) * 4);
	for (size_t i = 0; i < 3; i++) /* each result stays at its tensor's place in which */
		EXPECT_DOUBLE(out[i].max, (double)ti_source_tensor_at(src, which[i])->numel);
}
