/*
 * test_run_conv.c - the conv family's CPU kernels (src/run/kernels/conv.c,
 * pool.c, norm.c) on tiny cases whose values are worked out by hand:
 * inputs arange, weights ones.
 */
#include "run_harness.h"

/* Opens text, fills the weights with fill and the inputs x and w with arange, runs on one thread. */
static ran run_text(const char *text, const char *fill)
{
	const char *names[] = {"x", "w"}, *policies[] = {"arange", "arange"};
	return run_filled(text, (ti_model_options){0}, fill, names, policies, 2, 0);
}

static void expect_values(const ti_run_tensor *t, const float *want, size_t n) { expect_floats_within(t, want, n, 1e-5f); }

static void expect_indices(const ti_run_tensor *t, const int64_t *want, size_t n) { expect_int64s(t, want, n); }

Test(run_conv, transposed_convolution_scatters_and_crops_its_padding)
{
	/*
	 * [0, 1, 2] each scattered over 3 outputs 2 apart: 0 0 1 1 3 2 2 (the
	 * overlaps add) and 0 for output_padding; padding 1 crops one each side
	 */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 1, 3]}}, \"modules\": {\"t\": {\"type\": "
	                 "\"ConvTranspose1d\", \"in_channels\": 1, \"out_channels\": 1, \"kernel_size\": 3, "
	                 "\"stride\": 2, \"padding\": 1, \"output_padding\": 1, \"bias\": false}}}", "ones");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {0, 1, 1, 3, 2, 2};
	expect_values(&r.report->outputs[0], want, 6);
	done(&r);
}

Test(run_conv, conv3d_sums_each_window_of_a_volume)
{
	/* a 2x2x2 ones kernel over 0..26 in 3x3x3: window (0,0,0) sums 0+1+3+4+9+10+12+13 */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 1, 3, 3, 3]}}, \"modules\": {\"c\": {\"type\": \"Conv3d\", "
	                 "\"in_channels\": 1, \"out_channels\": 1, \"kernel_size\": 2, \"bias\": false}}}", "ones");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {52, 60, 76, 84, 124, 132, 148, 156};
	expect_values(&r.report->outputs[0], want, 8);
	done(&r);
}

Test(run_conv, avg_pool_past_the_right_padding_divides_by_the_clipped_window)
{
	/* kernel 3, stride 2, padding 1, ceil_mode over 0..5: the last window [5, 8) holds x5 and one pad */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 1, 6]}}, \"graph\": [{\"out\": \"y\", \"op\": "
	                 "\"avg_pool1d\", \"args\": [\"x\", 3, 2, 1], \"ceil_mode\": true}], \"outputs\": [\"y\"]}", "zeros");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {1.0f / 3, 2, 4, 2.5f};
	expect_values(&r.report->outputs[0], want, 4);
	done(&r);
}

Test(run_conv, adaptive_max_pool_gives_indices_flat_in_the_pooled_dims)
{
	/* [2, 3, 4] to [1, 1, 2]: the maxima are the last of each half, at (1, 2, 1) and (1, 2, 3) */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 2, 3, 4]}}, \"graph\": [{\"out\": [\"y\", \"i\"], "
	                 "\"op\": \"adaptive_max_pool3d\", \"args\": [\"x\", [1, 1, 2]], \"return_indices\": true}], "
	                 "\"outputs\": [\"y\", \"i\"]}", "zeros");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {21, 23};
	const int64_t at[] = {21, 23};
	expect_values(&r.report->outputs[0], want, 2);
	expect_indices(&r.report->outputs[1], at, 2);
	done(&r);
}

Test(run_conv, instance_norm_module_takes_an_unbatched_input)
{
	/* [[0, 1, 2], [3, 4, 5]]: each channel's row has mean at its middle and variance 2/3 */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [2, 3]}}, \"modules\": {\"n\": {\"type\": "
	                 "\"InstanceNorm1d\", \"num_features\": 2, \"affine\": true}}}", "init");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	float z = (float)(1 / sqrt(2.0 / 3 + 1e-5));
	const float want[] = {-z, 0, z, -z, 0, z};
	expect_values(&r.report->outputs[0], want, 6);
	done(&r);
}

Test(run_conv, local_response_norm_of_an_even_size_looks_one_channel_back)
{
	/* size 2: channel c averages c - 1 and c; x / (1 + (0 + 1) / 2) for channel 1 */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 2, 1]}}, \"graph\": [{\"out\": \"y\", \"op\": "
	                 "\"local_response_norm\", \"args\": [\"x\", 2], \"alpha\": 1.0, \"beta\": 1.0, \"k\": 1.0}], "
	                 "\"outputs\": [\"y\"]}", "zeros");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {0, 2.0f / 3};
	expect_values(&r.report->outputs[0], want, 2);
	done(&r);
}

Test(run_conv, bilinear_is_x1_weight_x2_plus_bias)
{
	/* ones weight and bias: (0 + 1 + 2)(0 + 1 + 2) + 1 */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 3]}, \"w\": {\"shape\": [1, 3]}}, \"modules\": {\"b\": "
	                 "{\"type\": \"Bilinear\", \"in1_features\": 3, \"in2_features\": 3, \"out_features\": 2}}, "
	                 "\"graph\": [{\"out\": \"y\", \"call\": \"b\", \"args\": [\"x\", \"w\"]}], \"outputs\": [\"y\"]}",
	                 "ones");
	cr_assert_eq(r.status, TI_OK, "%s", r.err.message);
	const float want[] = {10, 10};
	expect_values(&r.report->outputs[0], want, 2);
	done(&r);
}
