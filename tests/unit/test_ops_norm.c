/*
 * test_ops_norm.c - normalization operators (src/ops/norm.c).
 *
 * Shapes, strides and messages were read from PyTorch 1.13 on the meta
 * device; where 2.x differs (group_norm's rank check, local_response_norm's
 * message, rms_norm, normalize's dtype message) the rows follow 2.x's source.
 */
#include "ops_cases.h"

TestSuite(ops_norm, .init = setup, .fini = teardown);

/* (2, 4, 3, 5) in channels_last */
#define CHANNELS_LAST "{2, 4, 3, 5 : 60, 1, 20, 4}"

#define EXPECT_SHAPE(want) EXPECT_STR(ti_meta_shape_str(&ctx, output(0)), want)
#define EXPECT_STRIDES(want) EXPECT_STR(ti_shape_str(&ctx, output(0)->ndim, output(0)->stride), want)
#define EXPECT_FLOPS(want) EXPECT_INT(call.flops.value, want)

/* ---- batch_norm ---- */

Test(ops_norm, batch_norm_in_eval_mode_keeps_the_shape_and_counts_two_flops_an_element)
{
	ASSERT_STATUS(run("batch_norm", "{2, 4}, {4}, {4}"), TI_OK, err);
	EXPECT_SHAPE("[2, 4]");
	EXPECT_FLOPS(2 * 8);
	EXPECT_INT(call.macs.value, 0);
}

Test(ops_norm, batch_norm_in_training_counts_statistics_and_the_affine_transform)
{
	ASSERT_STATUS(run("F.batch_norm", "{2, 4, 5}, None, None, {4}, {4}, training=True"), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 5]");
	EXPECT_FLOPS((5 + 2) * 40);
}

Test(ops_norm, batch_norm_keeps_a_channels_last_layout)
{
	ASSERT_STATUS(run("batch_norm", CHANNELS_LAST ", {4}, {4}"), TI_OK, err);
	EXPECT_STRIDES("[60, 1, 20, 4]");
}

Test(ops_norm, batch_norm_keeps_the_dtype_of_a_half_input)
{
	ASSERT_STATUS(run("batch_norm", "float16{2, 4}, {4}, {4}"), TI_OK, err);
	EXPECT_INT(output(0)->dtype, TI_DT_FLOAT16);
}

Test(ops_norm, batch_norm_clones_an_empty_input_without_checks)
{
	ASSERT_STATUS(run("batch_norm", "{0, 4}, {3}, {3}"), TI_OK, err);
	EXPECT_SHAPE("[0, 4]");
}

Test(ops_norm, batch_norm_in_training_assumes_a_symbolic_batch_is_not_one)
{
	ASSERT_STATUS(run("batch_norm", "{N, 4}, None, None, training=True"), TI_OK, err);
	EXPECT_SHAPE("[N, 4]");
	EXPECT_INT(sym.assumption_count, 1);
}

/* batch_norm and instance_norm both take (input, running_mean, running_var, weight, bias, flag) */
static const error_row batch_norm_errors[] = {
	/* short running_mean, running_var, weight, bias */
	{"batch_norm", "{2, 4}, {3}, {4}, None, None, training=False", "running_mean should contain 4 elements not 3"},
	{"batch_norm", "{2, 4}, {4}, {5}, None, None, training=False", "running_var should contain 4 elements not 5"},
	{"batch_norm", "{2, 4}, {4}, {4}, {3}, None, training=False", "weight should contain 4 elements not 3"},
	{"batch_norm", "{2, 4, 7}, {4}, {4}, {4}, {2}, training=False", "bias should contain 4 elements not 2"},
	/* no running statistics in eval */
	{"batch_norm", "{2, 4}, None, None, None, None, training=False", "running_mean must be defined in evaluation mode"},
	{"batch_norm", "{2, 4}, {4}, None, None, None, training=False", "running_var must be defined in evaluation mode"},
	/* one value per channel */
	{"batch_norm", "{1, 4}, None, None, None, None, training=True",
	 "Expected more than 1 value per channel when training, got input size torch.Size([1, 4])"},
	{"batch_norm", "{1, 4, 1, 1}, {4}, {4}, {4}, {4}, training=True",
	 "Expected more than 1 value per channel when training, got input size torch.Size([1, 4, 1, 1])"},
	/* a 1-d input reads 0 features */
	{"batch_norm", "{4}, {4}, {4}, None, None, training=False", "running_mean should contain 0 elements not 4"},
	/* instance statistics and weights repeat per sample */
	{"instance_norm", "{2, 6, 4}, {5}, {5}, None, None, use_input_stats=True",
	 "running_mean should contain 12 elements not 10"},
	{"instance_norm", "{2, 6, 4}, None, None, {5}, None, use_input_stats=True",
	 "weight should contain 12 elements not 10"},
	/* one spatial element, and a 2-d input */
	{"instance_norm", "{2, 6, 1}, None, None, None, None, use_input_stats=True",
	 "Expected more than 1 spatial element when training, got input size torch.Size([2, 6, 1])"},
	{"instance_norm", "{6, 4}, None, None, None, None, use_input_stats=True",
	 "Expected more than 1 spatial element when training, got input size torch.Size([6, 4])"},
	/* no running statistics */
	{"instance_norm", "{2, 6, 4}, {6}, None, None, None, use_input_stats=False",
	 "Expected running_mean and running_var to be defined when use_input_stats is false"},
};

ParameterizedTestParameters(ops_norm, batch_and_instance_norm_refuse_as_pytorch_does)
{
	return ROWS(batch_norm_errors);
}

ParameterizedTest(const error_row *r, ops_norm, batch_and_instance_norm_refuse_as_pytorch_does)
{
	check_error(r);
}

/* ---- instance_norm ---- */

Test(ops_norm, instance_norm_gives_a_contiguous_result_of_the_input_shape)
{
	ASSERT_STATUS(run("instance_norm", CHANNELS_LAST), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 3, 5]");
	EXPECT_STRIDES("[60, 15, 5, 1]");
	EXPECT_FLOPS(5 * 120);
}

Test(ops_norm, instance_norm_with_running_stats_counts_as_eval)
{
	ASSERT_STATUS(run("instance_norm", "{2, 6, 4}, {6}, {6}, use_input_stats=False"), TI_OK, err);
	EXPECT_SHAPE("[2, 6, 4]");
	EXPECT_FLOPS(2 * 48);
}

/* ---- layer_norm and rms_norm ---- */

Test(ops_norm, layer_norm_gives_a_contiguous_result)
{
	ASSERT_STATUS(run("layer_norm", CHANNELS_LAST ", [5], {5}, {5}"), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 3, 5]");
	EXPECT_STRIDES("[60, 15, 5, 1]");
	EXPECT_FLOPS(7 * 120);
}

Test(ops_norm, layer_norm_over_two_trailing_dims)
{
	ASSERT_STATUS(run("layer_norm", "{3, 2, 5}, [2, 5], None, None, 1e-6"), TI_OK, err);
	EXPECT_SHAPE("[3, 2, 5]");
	EXPECT_FLOPS(5 * 30);
}

Test(ops_norm, layer_norm_checks_weight_then_bias_then_input)
{
	EXPECT_FAILS(run("layer_norm", "{2, 5}, [5], {4}"),
	             "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
	             "normalized_shape = [5]");
	EXPECT_FAILS(run("layer_norm", "{2, 5}, [10], {10}, {4}"),
	             "Expected bias to be of same shape as normalized_shape, but got bias of shape [4] and "
	             "normalized_shape = [10]");
	EXPECT_FAILS(run("layer_norm", "{2, 5}, [10]"),
	             "Given normalized_shape=[10], expected input with shape [*, 10], but got input of size[2, 5]");
	EXPECT_FAILS(run("layer_norm", "{2, 5}, [3, 2, 5]"),
	             "Given normalized_shape=[3, 2, 5], expected input with shape [*, 3, 2, 5], but got input of "
	             "size[2, 5]");
	EXPECT_FAILS(run("layer_norm", "{2, 5}, []"),
	             "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
	             "but got normalized_shape = []");
}

Test(ops_norm, rms_norm_promotes_a_half_input_with_a_float_weight)
{
	ASSERT_STATUS(run("rms_norm", "float16{2, 5}, [5], {5}"), TI_OK, err);
	EXPECT_SHAPE("[2, 5]");
	EXPECT_INT(output(0)->dtype, TI_DT_FLOAT32);
	EXPECT_FLOPS(4 * 10);
}

Test(ops_norm, rms_norm_checks_the_weight_and_the_input)
{
	EXPECT_FAILS(run("rms_norm", "{2, 5}, [5], {2, 5}"),
	             "Expected weight to be of same shape as normalized_shape, but got weight of shape [2, 5] and "
	             "normalized_shape = [5]");
	EXPECT_FAILS(run("rms_norm", "{2, 5}, [4]"),
	             "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 5]");
}

/* ---- group_norm ---- */

Test(ops_norm, group_norm_gives_a_contiguous_result)
{
	ASSERT_STATUS(run("group_norm", CHANNELS_LAST ", 2, {4}, {4}"), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 3, 5]");
	EXPECT_STRIDES("[60, 15, 5, 1]");
	EXPECT_FLOPS(7 * 120);
}

Test(ops_norm, group_norm_takes_an_empty_batch)
{
	ASSERT_STATUS(run("group_norm", "{0, 6, 4}, 3"), TI_OK, err);
	EXPECT_SHAPE("[0, 6, 4]");
}

Test(ops_norm, group_norm_refuses_as_pytorch_does)
{
	EXPECT_FAILS(run("group_norm", "{2, 6, 4}, 4"),
	             "Expected number of channels in input to be divisible by num_groups, but got input of shape "
	             "[2, 6, 4] and num_groups=4");
	EXPECT_FAILS(run("group_norm", "{2, 6, 4}, 3, {5}"),
	             "Expected weight to be a vector of size equal to the number of channels in input, but got weight "
	             "of shape [5] and input of shape [2, 6, 4]");
	/* PyTorch prints the weight's shape in the bias message */
	EXPECT_FAILS(run("group_norm", "{2, 6, 4}, 3, {6}, {5}"),
	             "Expected bias to be a vector of size equal to the number of channels in input, but got bias of "
	             "shape [6] and input of shape [2, 6, 4]");
	EXPECT_FAILS(run("group_norm", "{2, 6, 4}, 3, None, {5}"),
	             "Expected bias to be a vector of size equal to the number of channels in input, but got bias of "
	             "shape [0] and input of shape [2, 6, 4]");
	EXPECT_FAILS(run("group_norm", "{6}, 3"),
	             "Expected at least 2 dimensions for input tensor but received 1");
	EXPECT_FAILS(run("group_norm", "{1, 6}, 6"),
	             "Expected more than 1 value per channel when training, got input size [1, 6]");
	EXPECT_FAILS(run("group_norm", "{2, 6, 4}, 0"), "integer division or modulo by zero");
	EXPECT_FAILS(run("group_norm", "{2, 6, 4}, -3"), "Expected num groups to be greater than 0, got -3");
}

/* ---- normalize and local_response_norm ---- */

Test(ops_norm, normalize_keeps_the_input_layout)
{
	ASSERT_STATUS(run("normalize", CHANNELS_LAST), TI_OK, err);
	EXPECT_STRIDES("[60, 1, 20, 4]");
	EXPECT_FLOPS(3 * 120);
	/* (2, 4, 3) transposed (1, 2) */
	ASSERT_STATUS(run("normalize", "{2, 3, 4 : 12, 1, 3}, dim=1"), TI_OK, err);
	EXPECT_SHAPE("[2, 3, 4]");
	EXPECT_STRIDES("[12, 1, 3]");
}

Test(ops_norm, normalize_refuses_integers_and_bad_dims)
{
	EXPECT_FAILS(run("normalize", "int64{2, 3}"),
	             "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long");
	EXPECT_FAILS(run("normalize", "{2, 3}, 1.0, 5"),
	             "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
	EXPECT_FAILS(run("normalize", "{3}"), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

Test(ops_norm, local_response_norm_counts_the_window)
{
	ASSERT_STATUS(run("local_response_norm", "{2, 3, 4}, 2"), TI_OK, err);
	EXPECT_SHAPE("[2, 3, 4]");
	EXPECT_FLOPS((2 + 5) * 24);
	ASSERT_STATUS(run("local_response_norm", CHANNELS_LAST ", 3"), TI_OK, err);
	EXPECT_STRIDES("[60, 1, 20, 4]");
	ASSERT_STATUS(run("local_response_norm", "{2, 3, 4, 5, 6, 7}, 3"), TI_OK, err);
	EXPECT_SHAPE("[2, 3, 4, 5, 6, 7]");
}

Test(ops_norm, local_response_norm_returns_an_empty_input_itself)
{
	ti_arg args[TI_OP_MAX_PARAMS];
	int n = parse_args("{0, 3, 4}, 2", args);
	ASSERT_STATUS(ti_op_invoke(&ctx, "local_response_norm", args, n, &call, &err), TI_OK, err);
	cr_expect(output(0) == args[0].as.tensor, "the input itself");
}

Test(ops_norm, local_response_norm_refuses_as_pytorch_does)
{
	EXPECT_FAILS(run("local_response_norm", "{2, 3}, 2"),
	             "Expected 3D or higher dimensionality input (got 2 dimensions)");
	EXPECT_FAILS(run("local_response_norm", "{2, 3, 4}, 0"),
	             "kernel size should be greater than zero, but got kH: 0 kW: 1");
	EXPECT_FAILS(run("local_response_norm", "{2, 3, 4, 5}, 0"),
	             "kernel size should be greater than zero, but got kT: 0 kH: 1 kW: 1");
}
