/*
 * test_run_conv.c - the conv family's CPU kernels (src/run/kernels/conv.c,
 * pool.c, norm.c) on tiny cases whose values are worked out by hand:
 * inputs arange, weights ones.
 */
#include <stdlib.h>

#include "run/run_internal.h"
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

/*
 * Convolutions with enough work for oneDNN (src/run/onednn.c), ones for
 * weights, bias and input: each output is the count of its kernel taps
 * that fall inside the input, times the input channels of its group, plus
 * the bias (when it has one). Run through oneDNN where it is installed and through our own
 * kernels with TINSPECT_LIBDNNL=none or a library that is not there: the
 * same exact integers either way (padding on each side, 'same' with the
 * odd pad on the right, stride, dilation, groups, 1-d and 3-d).
 */
typedef struct ones_conv {
	const char *text;
	int spatial, bias; /* bias: 1, or 0 for bias=False */
	int64_t images, out_channels, in_per_group;
	int64_t image[3], kernel[3], stride[3], pad_left[3], dilation[3], plane[3];
} ones_conv;

static const ones_conv ones_convs[] = {
	{"{\"inputs\": {\"x\": {\"shape\": [4, 32, 32, 32]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", "
	 "\"in_channels\": 32, \"out_channels\": 32, \"kernel_size\": 3, \"padding\": 1}}}",
	 2, 1, 4, 32, 32, {32, 32}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {32, 32}},
	{"{\"inputs\": {\"x\": {\"shape\": [4, 64, 33, 31]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", "
	 "\"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 4, \"padding\": \"same\", \"groups\": 4}}}",
	 2, 1, 4, 64, 16, {33, 31}, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {33, 31}},
	{"{\"inputs\": {\"x\": {\"shape\": [8, 64, 2049]}}, \"modules\": {\"c\": {\"type\": \"Conv1d\", "
	 "\"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 5, \"stride\": 2, \"padding\": 2, "
	 "\"dilation\": 3}}}",
	 1, 1, 8, 64, 64, {2049}, {5}, {2}, {2}, {3}, {1021}},
	{"{\"inputs\": {\"x\": {\"shape\": [2, 16, 16, 16, 16]}}, \"modules\": {\"c\": {\"type\": \"Conv3d\", "
	 "\"in_channels\": 16, \"out_channels\": 16, \"kernel_size\": 3, \"padding\": 1}}}",
	 3, 1, 2, 16, 16, {16, 16, 16}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {16, 16, 16}},
	/* pointwise: oneDNN's matmul, the images a batch that shares the weight */
	{"{\"inputs\": {\"x\": {\"shape\": [4, 64, 32, 32]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", "
	 "\"in_channels\": 64, \"out_channels\": 512, \"kernel_size\": 1, \"bias\": false}}}",
	 2, 0, 4, 512, 64, {32, 32}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {32, 32}},
	/* depthwise */
	{"{\"inputs\": {\"x\": {\"shape\": [16, 64, 64, 64]}}, \"modules\": {\"c\": {\"type\": \"Conv2d\", "
	 "\"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 3, \"padding\": 1, \"groups\": 64}}}",
	 2, 1, 16, 64, 1, {64, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {64, 64}},
};

/* Taps of dim i's kernel inside the input for output position o. */
static int64_t taps_inside(const ones_conv *c, int i, int64_t o)
{
	int64_t n = 0;
	for (int64_t k = 0; k < c->kernel[i]; k++) {
		int64_t at = o * c->stride[i] - c->pad_left[i] + k * c->dilation[i];
		n += at >= 0 && at < c->image[i];
	}
	return n;
}

static void expect_ones_convs(void)
{
	for (size_t n = 0; n < sizeof(ones_convs) / sizeof(ones_convs[0]); n++) {
		const ones_conv *c = &ones_convs[n];
		const char *names[] = {"x"}, *policies[] = {"ones"};
		ran r = run_filled(c->text, (ti_model_options){0}, "ones", names, policies, 1, 0);
		cr_assert_eq(r.status, TI_OK, "case %zu: %s", n, r.err.message);
		const ti_run_tensor *y = &r.report->outputs[0];
		int64_t plane = 1;
		for (int i = 0; i < c->spatial; i++)
			plane *= c->plane[i];
		cr_assert_eq(y->nbytes, (size_t)(c->images * c->out_channels * plane) * sizeof(float), "case %zu: size", n);
		const float *got = y->data;
		int64_t wrong = 0;
		for (int64_t at = 0; at < c->images * c->out_channels * plane; at++) {
			int64_t taps = 1, rest = at % plane;
			for (int i = c->spatial - 1; i >= 0; i--) {
				taps *= taps_inside(c, i, rest % c->plane[i]);
				rest /= c->plane[i];
			}
			float want = (float)(taps * c->in_per_group + c->bias);
			if (got[at] != want && wrong++ < 3)
				cr_expect_eq(got[at], want, "case %zu element %lld: got %.9g, want %.9g", n, (long long)at,
				             (double)got[at], (double)want);
		}
		cr_expect_eq(wrong, 0, "case %zu: %lld outputs wrong", n, (long long)wrong);
		done(&r);
	}
}

Test(run_conv, convolutions_for_onednn_count_the_taps_inside_the_input)
{
	expect_ones_convs();
	if (rt_dnnl_loaded())
		cr_log_info("through oneDNN");
	else
		cr_log_warn("oneDNN (libdnnl.so.2) is not installed: our own kernels ran instead");
}

Test(run_conv, convolutions_for_onednn_run_our_own_kernels_with_tinspect_libdnnl_none)
{
	setenv("TINSPECT_LIBDNNL", "none", 1);
	expect_ones_convs();
	cr_expect(!rt_dnnl_loaded(), "TINSPECT_LIBDNNL=none loads no oneDNN");
}

Test(run_conv, convolutions_for_onednn_run_our_own_kernels_without_the_library)
{
	setenv("TINSPECT_LIBDNNL", "/nonexistent/libdnnl.so.2", 1);
	expect_ones_convs();
	cr_expect(!rt_dnnl_loaded(), "a library that is not there is no oneDNN");
}
