/*
 * test_diff.c - two checkpoints compared by name: what is added, removed,
 * renamed and changed, and with --values the largest differences, as
 * torch.allclose and (a-b).abs().max() would put them. The checkpoints are
 * small safetensors files written from C bytes into a temporary folder.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"

#include "tinspect/diff.h"

static char tmpdir[64];

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/tinspect-diff-XXXXXX", "/tmp");
	cr_assert(mkdtemp(tmpdir) != NULL, "cannot make a temporary folder");
}

static void remove_tmpdir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect(system(cmd) == 0);
}

TestSuite(diff, .init = make_tmpdir, .fini = remove_tmpdir);

/* One tensor of a safetensors file: its name, safetensors dtype, 1-d length and bytes. */
typedef struct st_tensor {
	const char *name, *dtype;
	size_t count, size; /* elements, bytes per element */
	const void *data;
} st_tensor;

/*
 * Writes NAME in the temporary folder as safetensors (header padded to 8) and
 * returns its path. The header lists the tensors in t's order; their bytes
 * lie in data_order's (indices into t; NULL: t's order too).
 */
static const char *write_st_laid_out(const char *name, const st_tensor *t, size_t n, const char *metadata,
                                     const size_t *data_order)
{
	static char path[4][256];
	static int turn;
	char *p = path[turn++ % 4];
	snprintf(p, 256, "%s/%s", tmpdir, name);
	uint64_t begin[16];
	cr_assert(n <= 16);
	uint64_t off = 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = data_order ? data_order[k] : k;
		begin[i] = off;
		off += t[i].count * t[i].size;
	}
	char header[4096];
	size_t len = (size_t)snprintf(header, sizeof(header), "{%s%s", metadata ? metadata : "", metadata ? "," : "");
	for (size_t i = 0; i < n; i++) {
		uint64_t bytes = t[i].count * t[i].size;
		len += (size_t)snprintf(header + len, sizeof(header) - len,
		                        "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu],\"data_offsets\":[%llu,%llu]}",
		                        i ? "," : "", t[i].name, t[i].dtype, t[i].count, (unsigned long long)begin[i],
		                        (unsigned long long)(begin[i] + bytes));
	}
	header[len++] = '}';
	while (len % 8)
		header[len++] = ' ';
	FILE *f = fopen(p, "wb");
	cr_assert(f, "cannot write %s", p);
	uint64_t hl = len; /* little-endian on every machine this runs on; the format says u64 LE */
	cr_assert(fwrite(&hl, 8, 1, f) == 1 && fwrite(header, 1, len, f) == len);
	for (size_t k = 0; k < n; k++) {
		size_t i = data_order ? data_order[k] : k;
		cr_assert(fwrite(t[i].data, t[i].size, t[i].count, f) == t[i].count);
	}
	cr_assert(fclose(f) == 0);
	return p;
}

static const char *write_st(const char *name, const st_tensor *t, size_t n, const char *metadata)
{
	return write_st_laid_out(name, t, n, metadata, NULL);
}

typedef struct pair {
	ti_source *a, *b;
	ti_arena arena;
	ti_diff_report r;
} pair;

static void run(pair *p, const char *a, const char *b, ti_diff_options o)
{
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_source_open(a, &p->a, &err), TI_OK, err);
	ASSERT_STATUS(ti_source_open(b, &p->b, &err), TI_OK, err);
	ti_arena_init(&p->arena, 1 << 24);
	ASSERT_STATUS(ti_diff_run(p->a, p->b, &o, &p->arena, &p->r, &err), TI_OK, err);
}

static void done(pair *p)
{
	ti_source_close(p->a);
	ti_source_close(p->b);
	ti_arena_release(&p->arena);
}

static const ti_diff_tensor *row(const pair *p, const char *name)
{
	for (size_t i = 0; i < p->r.tensor_count; i++)
		if (!strcmp(p->r.tensors[i].name, name))
			return &p->r.tensors[i];
	cr_assert_fail("no row for '%s'", name);
	return NULL;
}

static const ti_diff_options with_values = {.values = true};

Test(diff, the_same_tensors_in_two_files_are_the_same_bit_for_bit)
{
	float w[4] = {1, -2, 3.5f, 0};
	st_tensor t[] = {{"w", "F32", 4, 4, w}};
	pair p;
	run(&p, write_st("a.safetensors", t, 1, NULL), write_st("b.safetensors", t, 1, NULL), with_values);
	cr_expect(p.r.same);
	EXPECT_INT(p.r.common, 1);
	cr_expect(row(&p, "w")->compared && row(&p, "w")->bit_identical);
	EXPECT_DOUBLE(row(&p, "w")->max_abs, 0);
	done(&p);
}

Test(diff, a_changed_element_gives_max_abs_and_max_rel_and_is_not_equal_without_tolerance)
{
	float a[3] = {1, 2, 4}, b[3] = {1, 2.5f, 4};
	st_tensor ta[] = {{"w", "F32", 3, 4, a}}, tb[] = {{"w", "F32", 3, 4, b}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL), with_values);
	cr_expect(!p.r.same);
	const ti_diff_tensor *e = row(&p, "w");
	EXPECT_DOUBLE(e->max_abs, 0.5);
	EXPECT_DOUBLE(e->max_rel, 0.2); /* |2 - 2.5| / |2.5| */
	EXPECT_INT(e->not_close, 1);
	cr_expect(e->changes & TI_DIFF_VALUES);
	done(&p);
}

Test(diff, values_within_atol_are_close_but_not_bit_identical)
{
	float a[2] = {1, 2}, b[2] = {1, 2.5f};
	st_tensor ta[] = {{"w", "F32", 2, 4, a}}, tb[] = {{"w", "F32", 2, 4, b}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL),
	    (ti_diff_options){.values = true, .atol = 0.5});
	cr_expect(p.r.same);
	cr_expect(!row(&p, "w")->bit_identical);
	EXPECT_INT(p.r.bit_different, 1);
	done(&p);
}

Test(diff, nan_against_the_same_nan_is_equal_and_against_a_number_is_not)
{
	float a[2] = {NAN, 1}, b[2] = {NAN, 1}, c[2] = {1, 1};
	st_tensor ta[] = {{"w", "F32", 2, 4, a}}, tb[] = {{"w", "F32", 2, 4, b}}, tc[] = {{"w", "F32", 2, 4, c}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL), with_values);
	cr_expect(p.r.same);
	done(&p);
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("c.safetensors", tc, 1, NULL), with_values);
	cr_expect(!p.r.same);
	cr_expect(isnan(row(&p, "w")->max_abs), "a one-sided NaN makes max_abs NaN");
	EXPECT_INT(row(&p, "w")->not_close, 1);
	done(&p);
}

Test(diff, a_difference_against_zero_is_infinitely_relative_and_zero_against_zero_counts_nothing)
{
	float a[2] = {0, 0.25f}, b[2] = {0, 0};
	st_tensor ta[] = {{"w", "F32", 2, 4, a}}, tb[] = {{"w", "F32", 2, 4, b}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL), with_values);
	EXPECT_DOUBLE(row(&p, "w")->max_abs, 0.25);
	cr_expect(isinf(row(&p, "w")->max_rel));
	done(&p);
}

/* The comparison as one plain loop an element (diff.h's definitions), for the vector loop to agree with. */
typedef struct plain {
	double max_abs, max_rel;
	uint64_t not_close;
	bool nan;
} plain;

static plain plain_compare(const double *a, const double *b, size_t n, double atol, double rtol)
{
	plain p = {0, 0, 0, false};
	for (size_t i = 0; i < n; i++) {
		double x = a[i], y = b[i];
		if (x == y || (isnan(x) && isnan(y)))
			continue;
		if (isnan(x) || isnan(y)) {
			p.nan = true;
			p.not_close++;
			continue;
		}
		double d = fabs(x - y), ay = fabs(y), r = ay == 0 ? INFINITY : d / ay;
		p.max_abs = d > p.max_abs ? d : p.max_abs;
		p.max_rel = r > p.max_rel ? r : p.max_rel;
		p.not_close += !(d <= atol + rtol * ay);
	}
	if (p.nan)
		p.max_abs = p.max_rel = NAN;
	return p;
}

static void expect_same_double(const char *what, double got, double want)
{
	cr_expect(got == want || (isnan(got) && isnan(want)), "%s: got %.17g, want %.17g", what, got, want);
}

Test(diff, infinities_zeros_nans_and_odd_lengths_agree_with_the_plain_loop)
{
	static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1, -1, 1e-40, -1e-45, 3.4e38, 1e-3, 2, 0x1p-1074, 1e308};
	enum { N = 1001, K = sizeof(special) / sizeof(special[0]) };
	static const struct { double atol, rtol; } tolerances[] = {{0, 0}, {1e-3, 0}, {0, 0.01}, {1e-4, 1e-3}};
	uint32_t seed = 12345;
	for (int round = 0; round < 24; round++) {
		bool with_nan = round % 2, as_float = round % 3 == 0;
		size_t n = N - (size_t)round % 4; /* odd and even: the last element alone in its vector */
		double a[N], b[N];
		float fa[N], fb[N];
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1664525u + 1013904223u;
			a[i] = special[(seed >> 8) % K];
			seed = seed * 1664525u + 1013904223u;
			b[i] = (seed >> 24) % 3 == 0 ? a[i] : special[(seed >> 8) % K];
			if (!with_nan && isnan(a[i]))
				a[i] = 5;
			if (!with_nan && isnan(b[i]))
				b[i] = -5;
			if (round >= 12) { /* mostly ordinary values, so that max_rel rises step by step */
				a[i] = (i % 7 == 0) ? a[i] : (double)((seed >> 4) % 1000) / 7;
				b[i] = (i % 11 == 0) ? b[i] : a[i] * (1 + (double)(i % 13) * 1e-3);
			}
			if (round >= 18) { /* a relative difference that grows by a hair each element */
				a[i] = 1 + (double)(i % 5);
				b[i] = a[i] * (1 + (double)i * 1e-9);
			}
			fa[i] = (float)a[i];
			fb[i] = (float)b[i];
			if (as_float) { /* what the file holds, as float64 */
				a[i] = fa[i];
				b[i] = fb[i];
			}
		}
		st_tensor ta[] = {{"w", as_float ? "F32" : "F64", n, as_float ? 4 : 8, as_float ? (void *)fa : (void *)a}};
		st_tensor tb[] = {{"w", as_float ? "F32" : "F64", n, as_float ? 4 : 8, as_float ? (void *)fb : (void *)b}};
		const char *pa = write_st("a.safetensors", ta, 1, NULL), *pb = write_st("b.safetensors", tb, 1, NULL);
		for (size_t t = 0; t < sizeof(tolerances) / sizeof(tolerances[0]); t++) {
			pair p;
			run(&p, pa, pb, (ti_diff_options){.values = true, .atol = tolerances[t].atol, .rtol = tolerances[t].rtol});
			const ti_diff_tensor *e = row(&p, "w");
			plain want = plain_compare(a, b, n, tolerances[t].atol, tolerances[t].rtol);
			expect_same_double("max_abs", e->max_abs, want.max_abs);
			expect_same_double("max_rel", e->max_rel, want.max_rel);
			EXPECT_INT(e->not_close, want.not_close);
			done(&p);
		}
	}
}

Test(diff, different_dtypes_are_compared_as_values)
{
	float a[2] = {1.5f, -2};
	uint16_t h[2] = {0x3E00, 0xC000}; /* float16 1.5 and -2 */
	st_tensor ta[] = {{"w", "F32", 2, 4, a}}, tb[] = {{"w", "F16", 2, 2, h}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL), with_values);
	const ti_diff_tensor *e = row(&p, "w");
	EXPECT_INT(e->changes, TI_DIFF_DTYPE); /* a dtype change, but no value changed */
	cr_expect(e->compared && e->has_max);
	EXPECT_DOUBLE(e->max_abs, 0);
	done(&p);
}

Test(diff, a_removed_and_an_added_tensor_with_the_same_bytes_are_a_rename)
{
	float w[3] = {1, 2, 3}, other[3] = {1, 2, 4};
	st_tensor ta[] = {{"old", "F32", 3, 4, w}, {"gone", "F32", 3, 4, w}};
	st_tensor tb[] = {{"fresh", "F32", 3, 4, other}, {"new", "F32", 3, 4, w}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 2, NULL), write_st("b.safetensors", tb, 2, NULL),
	    (ti_diff_options){.values = false});
	EXPECT_INT(p.r.renamed, 1);
	EXPECT_INT(p.r.removed, 1);
	EXPECT_INT(p.r.added, 1);
	EXPECT_STR(row(&p, "old")->renamed_to, "new");
	cr_expect(row(&p, "gone")->changes & TI_DIFF_REMOVED);
	cr_expect(row(&p, "fresh")->changes & TI_DIFF_ADDED);
	EXPECT_INT(p.r.tensor_count, 3); /* the renamed tensor is one row */
	done(&p);
}

Test(diff, a_tensor_longer_than_a_chunk_is_compared_across_chunks)
{
	size_t n = TI_DIFF_CHUNK * 2 + 3;
	float *a = calloc(n, sizeof(float)), *b = calloc(n, sizeof(float));
	cr_assert(a && b);
	b[TI_DIFF_CHUNK + 5] = 0.125f;
	b[n - 1] = -1;
	st_tensor ta[] = {{"big", "F32", n, 4, a}}, tb[] = {{"big", "F32", n, 4, b}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL), with_values);
	EXPECT_DOUBLE(row(&p, "big")->max_abs, 1);
	EXPECT_INT(row(&p, "big")->not_close, 2);
	done(&p);
	free(a);
	free(b);
}

/* What options.progress was told, call by call. */
typedef struct progress_log {
	uint64_t done[16], total;
	size_t calls;
	bool total_changed;
} progress_log;

static void log_progress(void *user, uint64_t done, uint64_t total)
{
	progress_log *log = user;
	if (log->calls && total != log->total)
		log->total_changed = true;
	log->total = total;
	if (log->calls < 16)
		log->done[log->calls] = done;
	log->calls++;
}

Test(diff, values_are_read_in_the_order_their_bytes_lie_in_the_file_not_by_name)
{
	/* Listed by name: layer1 (7 floats), layer10 (3), layer2 (5); in the file: layer2, layer10, layer1. */
	float x[7] = {1, 2, 3, 4, 5, 6, 7}, y[7] = {1, 2, 3, 4, 5, 6, 8};
	st_tensor ta[] = {{"layer1", "F32", 7, 4, x}, {"layer10", "F32", 3, 4, x}, {"layer2", "F32", 5, 4, x}};
	st_tensor tb[] = {{"layer1", "F32", 7, 4, y}, {"layer10", "F32", 3, 4, x}, {"layer2", "F32", 5, 4, x}};
	const size_t laid_out[] = {2, 1, 0};
	progress_log log = {0};
	ti_diff_options o = {.values = true, .progress = log_progress, .progress_user = &log};
	pair p;
	run(&p, write_st_laid_out("a.safetensors", ta, 3, NULL, laid_out),
	    write_st_laid_out("b.safetensors", tb, 3, NULL, laid_out), o);
	EXPECT_INT(log.calls, 3);
	EXPECT_INT(log.done[0], 5 * 4 * 2);
	EXPECT_INT(log.done[1], (5 + 3) * 4 * 2);
	EXPECT_INT(log.done[2], (5 + 3 + 7) * 4 * 2);
	EXPECT_INT(log.total, (5 + 3 + 7) * 4 * 2);
	cr_expect(!log.total_changed);
	EXPECT_DOUBLE(row(&p, "layer1")->max_abs, 1);
	cr_expect(row(&p, "layer2")->bit_identical && row(&p, "layer10")->bit_identical);
	done(&p);
}

Test(diff, progress_counts_each_chunk_of_a_long_tensor_and_ends_at_the_total)
{
	size_t n = TI_DIFF_CHUNK * 2 + 3;
	float *a = calloc(n, sizeof(float));
	cr_assert(a);
	st_tensor t[] = {{"big", "F32", n, 4, a}};
	progress_log log = {0};
	ti_diff_options o = {.values = true, .progress = log_progress, .progress_user = &log};
	pair p;
	run(&p, write_st("a.safetensors", t, 1, NULL), write_st("b.safetensors", t, 1, NULL), o);
	EXPECT_INT(log.calls, 3);
	EXPECT_INT(log.done[0], TI_DIFF_CHUNK * 4 * 2);
	EXPECT_INT(log.done[2], n * 4 * 2);
	EXPECT_INT(log.total, n * 4 * 2);
	done(&p);
	free(a);
}

Test(diff, shape_changes_are_reported_and_not_read)
{
	float a[2] = {1, 2}, b[3] = {1, 2, 3};
	st_tensor ta[] = {{"w", "F32", 2, 4, a}}, tb[] = {{"w", "F32", 3, 4, b}};
	pair p;
	run(&p, write_st("a.safetensors", ta, 1, NULL), write_st("b.safetensors", tb, 1, NULL), with_values);
	EXPECT_INT(row(&p, "w")->changes, TI_DIFF_SHAPE);
	cr_expect(!row(&p, "w")->compared);
	EXPECT_STR(row(&p, "w")->not_compared, "shape changed");
	done(&p);
}

Test(diff, safetensors_metadata_is_compared_by_key)
{
	float w[1] = {1};
	st_tensor t[] = {{"w", "F32", 1, 4, w}};
	pair p;
	run(&p, write_st("a.safetensors", t, 1, "\"__metadata__\":{\"format\":\"pt\",\"step\":\"1\"}"),
	    write_st("b.safetensors", t, 1, "\"__metadata__\":{\"format\":\"pt\",\"step\":\"2\"}"), with_values);
	ASSERT_INT(p.r.value_count, 1);
	EXPECT_STR(p.r.values[0].name, "__metadata__.step");
	EXPECT_STR(p.r.values[0].a, "1");
	EXPECT_STR(p.r.values[0].b, "2");
	done(&p);
}

Test(diff, a_negative_or_nan_tolerance_is_a_usage_error)
{
	float w[1] = {1};
	st_tensor t[] = {{"w", "F32", 1, 4, w}};
	const char *path = write_st("a.safetensors", t, 1, NULL);
	ti_error err;
	ti_error_clear(&err);
	ti_source *s;
	ASSERT_STATUS(ti_source_open(path, &s, &err), TI_OK, err);
	ti_arena arena;
	ti_arena_init(&arena, 1 << 20);
	ti_diff_report r;
	EXPECT_STATUS(ti_diff_run(s, s, &(ti_diff_options){.values = true, .atol = -1}, &arena, &r, &err), TI_E_INVALID,
	              err);
	EXPECT_STATUS(ti_diff_run(s, s, &(ti_diff_options){.values = true, .rtol = NAN}, &arena, &r, &err),
	              TI_E_INVALID, err);
	ti_arena_release(&arena);
	ti_source_close(s);
}

Test(diff, torch_views_read_through_their_strides_equal_their_contiguous_copies)
{
	pair p;
	run(&p, "fixtures/diff/views.pt", "fixtures/diff/views.safetensors", with_values);
	EXPECT_INT(p.r.common, 4);
	EXPECT_INT(p.r.changed_values, 0);
	EXPECT_INT(p.r.bit_different, 0);
	for (size_t i = 0; i < p.r.tensor_count; i++)
		cr_expect(p.r.tensors[i].compared && p.r.tensors[i].bit_identical, "%s", p.r.tensors[i].name);
	done(&p);
}
