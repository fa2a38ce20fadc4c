/*
 * test_run.c - the CPU executor (tinspect/run.h) on tiny hand-computed
 * cases: inputs and weights filled with arange/ones so every value is known.
 */
#include "run_harness.h"

/* Opens text, fills the weights with fill and every input (x, w, ids, q) with input, runs on one thread. */
static ran run_text(const char *text, const char *fill, const char *input, size_t max_memory)
{
	const char *names[] = {"x", "w", "ids", "q"}, *policies[] = {input, input, input, input};
	return run_filled(text, (ti_model_options){0}, fill, names, policies, 4, max_memory);
}

static void expect_values(const ti_run_tensor *t, const float *want, size_t n) { expect_floats_within(t, want, n, 1e-5f); }

Test(run, computes_linear_with_bias_by_sgemm)
{
	/* W = [[0,1,2],[3,4,5]], b = [0,1], x = [[0,1,2],[3,4,5]]: x W^T + b */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [2, 3]}}, \"modules\": {\"fc\": {\"type\": \"Linear\", "
	                 "\"in_features\": 3, \"out_features\": 2}}}", "arange", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {5, 15, 14, 51};
	expect_values(&r.report->outputs[0], want, 4);
	cr_expect(r.report->outputs[0].checked, "the real shape is checked against the propagated one");
	done(&r);
}

Test(run, convolves_with_im2col)
{
	/* ones 2x2 kernel over 0..8 in 3x3: sums of each window */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 1, 3, 3]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", "
	                 "\"in_channels\": 1, \"out_channels\": 1, \"kernel_size\": 2, \"bias\": false}}}",
	                 "ones", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {8, 12, 20, 24};
	expect_values(&r.report->outputs[0], want, 4);
	done(&r);
}

Test(run, broadcasts_elementwise_operands)
{
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [2, 3]}, \"w\": {\"shape\": [3]}}, "
	                 "\"graph\": [{\"out\": \"y\", \"op\": \"add\", \"args\": [\"x\", \"w\"]}], \"outputs\": [\"y\"]}",
	                 "zeros", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {0, 2, 4, 3, 5, 7};
	expect_values(&r.report->outputs[0], want, 6);
	done(&r);
}

Test(run, softmax_is_stable_and_normalised)
{
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 3]}}, "
	                 "\"graph\": [{\"out\": \"y\", \"op\": \"softmax\", \"args\": [\"x\"], \"dim\": -1}], "
	                 "\"outputs\": [\"y\"]}", "zeros", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	double s = 1 + exp(1) + exp(2);
	const float want[] = {(float)(1 / s), (float)(exp(1) / s), (float)(exp(2) / s)};
	expect_values(&r.report->outputs[0], want, 3);
	done(&r);
}

Test(run, max_pools_windows)
{
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 1, 4, 4]}}, \"modules\": {\"p\": {\"type\": \"MaxPool2d\", "
	                 "\"kernel_size\": 2}}}", "zeros", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {5, 7, 13, 15};
	expect_values(&r.report->outputs[0], want, 4);
	done(&r);
}

Test(run, gathers_embedding_rows_by_int64_index)
{
	ran r = run_text("{\"inputs\": {\"ids\": {\"shape\": [3], \"dtype\": \"int64\"}}, \"modules\": {\"e\": "
	                 "{\"type\": \"Embedding\", \"num_embeddings\": 4, \"embedding_dim\": 2}}}", "arange", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {0, 1, 2, 3, 4, 5};
	expect_values(&r.report->outputs[0], want, 6);
	done(&r);
}

Test(run, normalises_layers_with_default_affine)
{
	/* init: weight ones, bias zeros; [0, 1, 2]: mean 1, variance 2/3 */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 3]}}, \"modules\": {\"n\": {\"type\": \"LayerNorm\", "
	                 "\"normalized_shape\": 3}}}", "init", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	float z = (float)(1 / sqrt(2.0 / 3 + 1e-5));
	const float want[] = {-z, 0, z};
	expect_values(&r.report->outputs[0], want, 3);
	done(&r);
}

Test(run, multiplies_through_a_transposed_view_without_a_copy)
{
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [2, 3]}}, \"graph\": ["
	                 "{\"out\": \"t\", \"op\": \"transpose\", \"args\": [\"x\", 0, 1]},"
	                 "{\"out\": \"y\", \"op\": \"matmul\", \"args\": [\"x\", \"t\"]}], \"outputs\": [\"y\"]}",
	                 "zeros", "arange", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {5, 14, 14, 50};
	expect_values(&r.report->outputs[0], want, 4);
	done(&r);
}

Test(run, refuses_before_allocating_past_the_memory_ceiling)
{
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [64, 1024]}}, \"modules\": {\"fc\": {\"type\": \"Linear\", "
	                 "\"in_features\": 1024, \"out_features\": 1024}}}", "zeros", "zeros", 1 << 20);
	cr_expect_eq(r.status, TI_E_LIMIT, "got %d: %s", r.status, r.err.message);
	cr_expect(strstr(r.err.message, "bytes at its peak"), "the message says why: %s", r.err.message);
	done(&r);
}

Test(run, names_the_operator_without_a_cpu_kernel)
{
	/* complex64 is not a dtype the kernels hold: no cast to it runs */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [5, 2, 4]}}, \"graph\": [{\"out\": \"z\", \"op\": \"cfloat\", "
	                 "\"args\": [\"x\"]}], \"outputs\": [\"z\"]}", "zeros", "zeros", 0);
	cr_expect_eq(r.status, TI_E_UNSUPPORTED);
	cr_expect(strstr(r.err.message, "no CPU kernel yet for 'cfloat'"), "got: %s", r.err.message);
	done(&r);
}

Test(run, refuses_an_input_the_description_lacks)
{
	ti_error err;
	ti_error_clear(&err);
	const char *text = "{\"inputs\": {\"x\": {\"shape\": [2]}}, \"graph\": [{\"out\": \"y\", \"op\": \"relu\", "
	                   "\"args\": [\"x\"]}], \"outputs\": [\"y\"]}";
	ti_model *m;
	ti_model_options mo = {0};
	cr_assert(ti_model_open(text, strlen(text), &mo, &m, &err) == TI_OK);
	ti_run_input in = {.name = "image", .kind = TI_RUN_INPUT_FILL, .fill = ti_fill_constant(TI_FILL_ZEROS)};
	ti_run_options o = {.threads = 1, .inputs = &in, .input_count = 1, .fill = ti_fill_constant(TI_FILL_ZEROS)};
	ti_run *run = NULL;
	const ti_run_report *rep;
	cr_expect_eq(ti_run_execute(m, &o, &run, &rep, &err), TI_E_INVALID);
	cr_expect(strstr(err.message, "no input 'image'"), "got: %s", err.message);
	ti_run_free(run);
	ti_model_close(m);
}

Test(run, kernel_table_answers_by_operator_and_module)
{
	cr_expect(ti_run_has_kernel("conv2d", false));
	cr_expect(ti_run_has_kernel("MultiheadAttention", true));
	cr_expect(ti_run_has_kernel("LSTM", true));
	cr_expect(!ti_run_has_kernel("cfloat", false));
	cr_expect(!ti_run_has_kernel("conv2d", true), "operators and module types are separate names");
}

Test(run, statistics_leave_nan_and_inf_out_of_the_moments)
{
	const float x[] = {1, 2, NAN, INFINITY, 3};
	ti_run_stats s;
	ti_run_stats_of(x, 5, &s);
	cr_expect(s.min == 1 && s.max == 3 && s.mean == 2 && s.std == 1, "min %g max %g mean %g std %g", s.min, s.max,
	          s.mean, s.std);
	cr_expect(s.nan == 1 && s.inf == 1 && s.count == 3);
}

Test(run, rounds_each_bfloat16_result_as_pytorch_cpu_kernels_do)
{
	/* weights full:0.1 held as bfloat16 0.10009765625; three of them summed in float32 give
	   0.30029296875, which bfloat16 (steps of 2^-9 there) rounds to 0.30078125 */
	const char *text = "{\"inputs\": {\"x\": {\"shape\": [1, 3]}}, \"modules\": {\"fc\": {\"type\": \"Linear\", "
	                   "\"in_features\": 3, \"out_features\": 1, \"bias\": false}}}";
	ran r = {0};
	ti_error_clear(&r.err);
	ti_model_options mo = {.default_dtype = TI_DT_BFLOAT16};
	cr_assert(ti_model_open(text, strlen(text), &mo, &r.model, &r.err) == TI_OK, "open: %s", r.err.message);
	ti_run_options o = {.threads = 1};
	cr_assert(ti_fill_parse("full:0.1", &o.fill, &r.err) == TI_OK);
	ti_run_input x = {.name = "x", .kind = TI_RUN_INPUT_FILL};
	cr_assert(ti_fill_parse("ones", &x.fill, &r.err) == TI_OK);
	o.inputs = &x;
	o.input_count = 1;
	r.status = ti_run_execute(r.model, &o, &r.run, &r.report, &r.err);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const ti_run_tensor *y = &r.report->outputs[0];
	cr_assert_eq(y->dtype, TI_DT_BFLOAT16, "the output keeps the model's dtype");
	cr_assert_eq(y->nbytes, 2, "the saved output is one bfloat16 value, not its float32 working copy");
	uint16_t bits;
	memcpy(&bits, y->data, 2);
	uint32_t wide = (uint32_t)bits << 16;
	float got;
	memcpy(&got, &wide, 4);
	cr_expect_eq(got, 0.30078125f, "got %.9g, want bfloat16's rounding of 0.30029296875", (double)got);
	cr_expect_eq(y->stats.max, 0.30078125, "statistics are of the rounded value");
	done(&r);
}

Test(run, plans_the_convolution_columns_into_the_peak_before_allocating)
{
	/* weights 4x3x3x3 + 4 (448 B), input 3x8x8 (768 B), output 4x6x6 (576 B) and the im2col
	   columns, 27 rows by 36 positions (3888 B), all live while the kernel runs */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 3, 8, 8]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", "
	                 "\"in_channels\": 3, \"out_channels\": 4, \"kernel_size\": 3}}}", "ones", "ones", 0);
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	cr_expect_eq(r.report->peak_bytes, 448 + 768 + 576 + 3888, "peak %zu", r.report->peak_bytes);
	done(&r);
	ran refused = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 3, 8, 8]}}, \"modules\": {\"c\": {\"type\": "
	                       "\"Conv2d\", \"in_channels\": 3, \"out_channels\": 4, \"kernel_size\": 3}}}",
	                       "ones", "ones", 448 + 768 + 576 + 3888 - 1);
	cr_expect_eq(refused.status, TI_E_LIMIT, "one byte short of the columns is refused before allocating");
	ti_model_close(refused.model);
}
