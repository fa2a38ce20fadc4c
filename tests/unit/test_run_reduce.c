/*
 * test_run_reduce.c - the executor's reductions, scans, orderings and the
 * elementwise extras (src/run/kernels/reduce.c, elementwise.c) on tiny
 * inputs filled with arange or ones, so every value is known by hand: ties
 * and their indices, variance corrections, strided inputs, casts.
 */
#include "run_harness.h"

/* Runs a description whose one input "x" is filled with input, its weights with 0.25, on one thread. */
static ran run_text(const char *text, const char *input)
{
	const char *names[] = {"x"}, *policies[] = {input};
	ran r = run_filled(text, (ti_model_options){0}, "full:0.25", names, policies, 1, 0);
	cr_assert_eq(r.status, TI_OK, "run: %s", r.err.message);
	cr_assert_null(r.report->mismatch, "%s", r.report->mismatch);
	return r;
}

static void expect_floats(const ti_run_tensor *t, const float *want, size_t n) { expect_floats_within(t, want, n, 1e-6f); }

#define GRAPH(shape, steps, outputs) \
	"{\"inputs\": {\"x\": {\"shape\": " shape "}}, \"graph\": [" steps "], \"outputs\": " outputs "}"

Test(run_reduce, max_over_a_dim_gives_the_first_index_of_a_tie)
{
	/* all ones: every element ties, PyTorch's CPU max picks index 0 */
	ran r = run_text(GRAPH("[2, 3]", "{\"out\": [\"v\", \"i\"], \"op\": \"max\", \"args\": [\"x\", 1]}",
	                       "[\"v\", \"i\"]"), "ones");
	const float values[] = {1, 1};
	const int64_t indices[] = {0, 0};
	expect_floats(&r.report->outputs[0], values, 2);
	expect_int64s(&r.report->outputs[1], indices, 2);
	done(&r);
}

Test(run_reduce, cummax_moves_its_index_to_the_last_tie)
{
	/* cummax_cummin_helper compares with >=: on ones the index follows the position */
	ran r = run_text(GRAPH("[4]", "{\"out\": [\"v\", \"i\"], \"op\": \"cummax\", \"args\": [\"x\", 0]}",
	                       "[\"v\", \"i\"]"), "ones");
	const int64_t indices[] = {0, 1, 2, 3};
	expect_int64s(&r.report->outputs[1], indices, 4);
	done(&r);
}

Test(run_reduce, var_divides_by_n_minus_the_correction)
{
	/* 0..4: mean 2, squared deviations 10; unbiased 10/4, correction=0 10/5 */
	ran r = run_text(GRAPH("[5]", "{\"out\": \"u\", \"op\": \"var\", \"args\": [\"x\"]}, "
	                              "{\"out\": \"b\", \"op\": \"var\", \"args\": [\"x\"], \"correction\": 0}, "
	                              "{\"out\": \"s\", \"op\": \"std\", \"args\": [\"x\"], \"unbiased\": false}",
	                       "[\"u\", \"b\", \"s\"]"), "arange");
	const float unbiased[] = {2.5f}, biased[] = {2.0f}, std[] = {(float)sqrt(2.0)};
	expect_floats(&r.report->outputs[0], unbiased, 1);
	expect_floats(&r.report->outputs[1], biased, 1);
	expect_floats(&r.report->outputs[2], std, 1);
	done(&r);
}

Test(run_reduce, sums_a_dim_list_of_a_transposed_view_with_keepdim)
{
	/* x = [[0,1,2],[3,4,5]]; t = x^T is [3, 2]; sum over dim 1 keepdim: row sums of t = column sums of x */
	ran r = run_text(GRAPH("[2, 3]", "{\"out\": \"t\", \"op\": \"transpose\", \"args\": [\"x\", 0, 1]}, "
	                                 "{\"out\": \"y\", \"op\": \"sum\", \"args\": [\"t\", [-1]], \"keepdim\": true}",
	                       "[\"y\"]"), "arange");
	const float want[] = {3, 5, 7};
	expect_floats(&r.report->outputs[0], want, 3);
	done(&r);
}

Test(run_reduce, argmax_without_dim_indexes_the_logical_order_of_a_view)
{
	/* x = arange [2, 3]; x^T = [[0,3],[1,4],[2,5]]: its largest, 5, is at flat index 5 */
	ran r = run_text(GRAPH("[2, 3]", "{\"out\": \"t\", \"op\": \"transpose\", \"args\": [\"x\", 0, 1]}, "
	                                 "{\"out\": \"y\", \"op\": \"argmin\", \"args\": [\"t\"]}, "
	                                 "{\"out\": \"z\", \"op\": \"argmax\", \"args\": [\"t\", 0]}",
	                       "[\"y\", \"z\"]"), "arange");
	const int64_t first[] = {0}, per_column[] = {2, 2};
	expect_int64s(&r.report->outputs[0], first, 1);
	expect_int64s(&r.report->outputs[1], per_column, 2);
	done(&r);
}

Test(run_reduce, cumsum_runs_along_a_leading_dim)
{
	ran r = run_text(GRAPH("[2, 3]", "{\"out\": \"y\", \"op\": \"cumsum\", \"args\": [\"x\", 0]}", "[\"y\"]"),
	                 "arange");
	const float want[] = {0, 1, 2, 3, 5, 7};
	expect_floats(&r.report->outputs[0], want, 6);
	done(&r);
}

Test(run_reduce, topk_returns_the_largest_in_order_with_their_indices)
{
	ran r = run_text(GRAPH("[2, 4]", "{\"out\": [\"v\", \"i\"], \"op\": \"topk\", \"args\": [\"x\", 2]}",
	                       "[\"v\", \"i\"]"), "arange");
	const float values[] = {3, 2, 7, 6};
	const int64_t indices[] = {3, 2, 3, 2};
	expect_floats(&r.report->outputs[0], values, 4);
	expect_int64s(&r.report->outputs[1], indices, 4);
	done(&r);
}

Test(run_reduce, stable_sort_keeps_ties_in_their_order_descending_too)
{
	ran r = run_text(GRAPH("[5]", "{\"out\": [\"v\", \"i\"], \"op\": \"sort\", \"args\": [\"x\"], "
	                              "\"descending\": true, \"stable\": true}", "[\"v\", \"i\"]"), "ones");
	const int64_t indices[] = {0, 1, 2, 3, 4};
	expect_int64s(&r.report->outputs[1], indices, 5);
	done(&r);
}

Test(run_reduce, norm_fro_is_the_two_norm_over_the_given_dims)
{
	/* 'fro' binds as a symbolic size where a Scalar goes: the kernel reads its name. 0..3: sqrt(14) */
	ran r = run_text(GRAPH("[2, 2]", "{\"out\": \"y\", \"op\": \"norm\", \"args\": [\"x\"], \"p\": \"fro\", "
	                                 "\"dim\": [0, 1]}, "
	                                 "{\"out\": \"z\", \"op\": \"norm\", \"args\": [\"x\"], \"p\": \"inf\", \"dim\": [1]}",
	                       "[\"y\", \"z\"]"), "arange");
	const float fro[] = {(float)sqrt(14.0)}, inf[] = {1, 3};
	expect_floats(&r.report->outputs[0], fro, 1);
	expect_floats(&r.report->outputs[1], inf, 2);
	done(&r);
}

Test(run_reduce, normalize_divides_by_the_norm_but_not_below_eps)
{
	/* rows [0, 1] and [2, 3]: norms 1 and sqrt(13); eps 2 lifts the first to 2 */
	ran r = run_text(GRAPH("[2, 2]", "{\"out\": \"y\", \"op\": \"normalize\", \"args\": [\"x\"], \"dim\": 1, "
	                                 "\"eps\": 2.0}", "[\"y\"]"), "arange");
	float s = (float)sqrt(13.0);
	const float want[] = {0, 0.5f, 2 / s, 3 / s};
	expect_floats(&r.report->outputs[0], want, 4);
	done(&r);
}

Test(run_reduce, where_takes_scalar_branches_by_a_broadcast_mask)
{
	ran r = run_text(GRAPH("[2, 3]", "{\"out\": \"m\", \"op\": \"gt\", \"args\": [\"x\", 2]}, "
	                                 "{\"out\": \"y\", \"op\": \"where\", \"args\": [\"m\", 1.5, -1]}",
	                       "[\"y\"]"), "arange");
	const float want[] = {-1, -1, -1, 1.5f, 1.5f, 1.5f};
	expect_floats(&r.report->outputs[0], want, 6);
	done(&r);
}

Test(run_reduce, clamp_with_min_above_max_gives_max)
{
	/* min(max(x, 3), 1) = 1 everywhere, as torch.clamp documents */
	ran r = run_text(GRAPH("[4]", "{\"out\": \"y\", \"op\": \"clamp\", \"args\": [\"x\", 3, 1]}", "[\"y\"]"),
	                 "arange");
	const float want[] = {1, 1, 1, 1};
	expect_floats(&r.report->outputs[0], want, 4);
	done(&r);
}

Test(run_reduce, casting_to_int64_truncates_toward_zero)
{
	/* 0..3 - 1.5 = [-1.5, -0.5, 0.5, 1.5] */
	ran r = run_text(GRAPH("[4]", "{\"out\": \"s\", \"op\": \"sub\", \"args\": [\"x\", 1.5]}, "
	                              "{\"out\": \"y\", \"op\": \"to\", \"args\": [\"s\"], \"dtype\": \"int64\"}, "
	                              "{\"out\": \"z\", \"op\": \"round\", \"args\": [\"s\"]}",
	                       "[\"y\", \"z\"]"), "arange");
	const int64_t truncated[] = {-1, 0, 0, 1};
	const float half_to_even[] = {-2, -0.0f, 0, 2};
	expect_int64s(&r.report->outputs[0], truncated, 4);
	expect_floats(&r.report->outputs[1], half_to_even, 4);
	done(&r);
}

Test(run_reduce, prelu_takes_one_slope_per_channel)
{
	/* x - 3 over [1, 2, 3]: channel 0 [-3, -2, -1] takes slope 0.25 (the weights' fill), channel 1 [0, 1, 2] stays */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 2, 3]}}, \"modules\": {\"act\": {\"type\": \"PReLU\", "
	                 "\"num_parameters\": 2}}, \"graph\": [{\"out\": \"s\", \"op\": \"sub\", \"args\": [\"x\", 3]}, "
	                 "{\"out\": \"y\", \"call\": \"act\", \"args\": [\"s\"]}], \"outputs\": [\"y\"]}", "arange");
	const float want[] = {-0.75f, -0.5f, -0.25f, 0, 1, 2};
	expect_floats(&r.report->outputs[0], want, 6);
	done(&r);
}
