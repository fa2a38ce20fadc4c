/*
 * test_run_index.c - the index and resize kernels (src/run/kernels/index.c,
 * resize.c) on tiny inputs filled with arange, every expected value worked
 * out by hand from PyTorch's definitions.
 */
#include "run_harness.h"

/*
 * Runs one graph step on input x (float32 of x_shape) and ids (int64 of
 * ids_shape, may be NULL), both arange; modules is the description's
 * "modules" object or NULL.
 */
static ran run_model(const char *x_shape, const char *ids_shape, const char *modules, const char *step)
{
	char text[2048];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": %s}%s%s%s}, %s%s%s\"graph\": [{\"out\": \"y\", %s}], "
	         "\"outputs\": [\"y\"]}",
	         x_shape, ids_shape ? ", \"ids\": {\"shape\": " : "", ids_shape ? ids_shape : "",
	         ids_shape ? ", \"dtype\": \"int64\"}" : "", modules ? "\"modules\": " : "", modules ? modules : "",
	         modules ? ", " : "", step);
	const char *names[] = {"x", "ids"}, *policies[] = {"arange", "arange"};
	return run_filled(text, (ti_model_options){0}, "zeros", names, policies, ids_shape ? 2 : 1, 0);
}

static ran run_step(const char *x_shape, const char *ids_shape, const char *step)
{
	return run_model(x_shape, ids_shape, NULL, step);
}

/* The output's float32 values are want's, within tol * (1 + |want|) (0: exactly). */
static void expect_floats(const ran *r, const float *want, size_t n, float tol)
{
	cr_assert_eq(r->status, TI_OK, "%s", r->err.message);
	expect_floats_within(&r->report->outputs[0], want, n, tol);
}

Test(run_index, einsum_takes_a_diagonal_when_a_label_repeats)
{
	/* arange 3x3: the diagonal 0, 4, 8 */
	ran r = run_step("[3, 3]", NULL, "\"op\": \"einsum\", \"args\": [\"ii->i\", \"x\"]");
	const float want[] = {0, 4, 8};
	expect_floats(&r, want, 3, 0);
	done(&r);
}

Test(run_index, einsum_sums_a_trace_in_implicit_mode)
{
	/* "ii" has no label seen once: the output is 0-d, the trace 0 + 4 + 8 */
	ran r = run_step("[3, 3]", NULL, "\"op\": \"einsum\", \"args\": [\"ii\", \"x\"]");
	const float want[] = {12};
	expect_floats(&r, want, 1, 0);
	done(&r);
}

Test(run_index, einsum_contracts_with_ellipsis_batch_dims)
{
	/* x x^T per batch: [[0,1,2],[3,4,5]] gives [[5,14],[14,50]], [[6,7,8],[9,10,11]] gives [[149,212],[212,302]] */
	ran r = run_step("[2, 2, 3]", NULL, "\"op\": \"einsum\", \"args\": [\"...ij,...kj->...ik\", \"x\", \"x\"]");
	const float want[] = {5, 14, 14, 50, 149, 212, 212, 302};
	expect_floats(&r, want, 8, 0);
	done(&r);
}

Test(run_index, reflect_pad_mirrors_without_repeating_the_edge)
{
	/* [0 1 2 3] padded (2, 1): 2 1 | 0 1 2 3 | 2 */
	ran r = run_step("[1, 1, 4]", NULL, "\"op\": \"pad\", \"args\": [\"x\", [2, 1]], \"mode\": \"reflect\"");
	const float want[] = {2, 1, 0, 1, 2, 3, 2};
	expect_floats(&r, want, 7, 0);
	done(&r);
}

Test(run_index, circular_pad_wraps_around_the_cropped_input)
{
	/* [0 1 2 3 4] cropped by 1 on the left is [1 2 3 4]; 2 more on the right wrap to its start: 1 2 */
	ran r = run_step("[1, 1, 5]", NULL, "\"op\": \"pad\", \"args\": [\"x\", [-1, 2]], \"mode\": \"circular\"");
	const float want[] = {1, 2, 3, 4, 1, 2};
	expect_floats(&r, want, 6, 0);
	done(&r);
}

Test(run_index, circular_pad_module_runs_through_pad)
{
	/* CircularPad1d (PyTorch 2.1; not in 1.13, so no conformance case): [0 1 2] padded (2, 1): 1 2 | 0 1 2 | 0 */
	ran r = run_model("[1, 1, 3]", NULL, "{\"p\": {\"type\": \"CircularPad1d\", \"padding\": [2, 1]}}",
	                  "\"call\": \"p\", \"args\": [\"x\"]");
	const float want[] = {1, 2, 0, 1, 2, 0};
	expect_floats(&r, want, 6, 0);
	done(&r);
}

Test(run_index, constant_pad_crops_with_negative_pads_and_fills_with_value)
{
	/* [0 1 2 3] padded (-1, 2) with 9: 1 2 3 9 9 */
	ran r = run_step("[4]", NULL, "\"op\": \"pad\", \"args\": [\"x\", [-1, 2]], \"value\": 9.0");
	const float want[] = {1, 2, 3, 9, 9};
	expect_floats(&r, want, 5, 0);
	done(&r);
}

Test(run_index, nearest_reads_floor_of_index_times_scale)
{
	/* 3 -> 5: scale 3/5 = 0.6, floorf(o * 0.6) = 0 0 1 1 2 */
	ran r = run_step("[1, 1, 3]", NULL, "\"op\": \"interpolate\", \"args\": [\"x\"], \"size\": 5");
	const float want[] = {0, 0, 1, 1, 2};
	expect_floats(&r, want, 5, 0);
	done(&r);
}

Test(run_index, nearest_exact_reads_the_pixel_centre)
{
	/* floorf((o + 0.5) * 0.6) = floor(0.3, 0.9, 1.5, 2.1, 2.7) = 0 0 1 2 2 */
	ran r = run_step("[1, 1, 3]", NULL,
	                 "\"op\": \"interpolate\", \"args\": [\"x\"], \"size\": 5, \"mode\": \"nearest-exact\"");
	const float want[] = {0, 0, 1, 2, 2};
	expect_floats(&r, want, 5, 0);
	done(&r);
}

Test(run_index, linear_clamps_the_source_index_at_both_ends)
{
	/* source 0.6 (o + 0.5) - 0.5 = -0.2 (to 0), 0.4, 1.0, 1.6, 2.2 (both neighbours 2) */
	ran r = run_step("[1, 1, 3]", NULL, "\"op\": \"interpolate\", \"args\": [\"x\"], \"size\": 5, \"mode\": \"linear\"");
	const float want[] = {0, 0.4f, 1, 1.6f, 2};
	expect_floats(&r, want, 5, 1e-6f);
	done(&r);
}

Test(run_index, linear_with_align_corners_keeps_the_corners)
{
	ran r = run_step("[1, 1, 3]", NULL,
	                 "\"op\": \"interpolate\", \"args\": [\"x\"], \"size\": 5, \"mode\": \"linear\", "
	                 "\"align_corners\": true");
	const float want[] = {0, 0.5f, 1, 1.5f, 2};
	expect_floats(&r, want, 5, 0);
	done(&r);
}

Test(run_index, area_averages_adaptive_windows)
{
	/* 5 -> 2: windows [0, 3) and [2, 5): (0+1+2)/3, (2+3+4)/3 */
	ran r = run_step("[1, 1, 5]", NULL, "\"op\": \"interpolate\", \"args\": [\"x\"], \"size\": 2, \"mode\": \"area\"");
	const float want[] = {1, 3};
	expect_floats(&r, want, 2, 0);
	done(&r);
}

Test(run_index, roll_without_dims_rolls_the_flattened_tensor)
{
	/* arange 2x3 flattened 0..5, rolled by 2: 4 5 0 1 2 3, shape kept */
	ran r = run_step("[2, 3]", NULL, "\"op\": \"roll\", \"args\": [\"x\", 2]");
	const float want[] = {4, 5, 0, 1, 2, 3};
	expect_floats(&r, want, 6, 0);
	done(&r);
}

Test(run_index, pixel_shuffle_moves_channels_into_space)
{
	/* 4 channels of 1x1 (0, 1, 2, 3), r = 2: one 2x2 channel [[0, 1], [2, 3]] */
	ran r = run_step("[1, 4, 1, 1]", NULL, "\"op\": \"pixel_shuffle\", \"args\": [\"x\", 2]");
	const float want[] = {0, 1, 2, 3};
	expect_floats(&r, want, 4, 0);
	done(&r);
}

Test(run_index, getitem_with_an_index_tensor_gathers_the_indexed_dim)
{
	/* x = arange 2x4, ids = 0 1 2: x[:, ids] = [[0,1,2],[4,5,6]] */
	ran r = run_step("[2, 4]", "[3]", "\"op\": \"getitem\", \"args\": [\"x\", [{\"slice\": [null, null, null]}, \"ids\"]]");
	const float want[] = {0, 1, 2, 4, 5, 6};
	expect_floats(&r, want, 6, 0);
	done(&r);
}

Test(run_index, getitem_steps_and_unsqueezes_as_a_view)
{
	/* arange 3x4, x[None, 1, ::2]: row 1 is 4 5 6 7, every second 4 6, shape (1, 2) */
	ran r = run_step("[3, 4]", NULL,
	                 "\"op\": \"getitem\", \"args\": [\"x\", [null, 1, {\"slice\": [null, null, 2]}]]");
	const float want[] = {4, 6};
	expect_floats(&r, want, 2, 0);
	done(&r);
}

Test(run_index, index_select_refuses_an_index_past_the_dim)
{
	/* ids 0..4 select from a dim of 3 */
	ran r = run_step("[3, 2]", "[5]", "\"op\": \"index_select\", \"args\": [\"x\", 0, \"ids\"]");
	cr_expect_neq(r.status, TI_OK, "an index of 3 or 4 in a dim of 3 is refused");
	cr_expect(strstr(r.err.message, "index out of range in self"), "got: %s", r.err.message);
	done(&r);
}

Test(run_index, gather_reads_one_index_per_element)
{
	ran r = run_step("[4, 2]", "[2, 2]", "\"op\": \"gather\", \"args\": [\"x\", 0, \"ids\"]");
	/* ids [[0, 1], [2, 3]]: x[0][0], x[1][1], x[2][0], x[3][1] = 0, 3, 4, 7 */
	const float want[] = {0, 3, 4, 7};
	expect_floats(&r, want, 4, 0);
	done(&r);
}
