/*
 * test_nn_norm.c - normalization modules (src/nn/norm.c).
 *
 * State dicts, shapes and messages were read from PyTorch 1.13 modules on
 * the meta device in eval mode; InstanceNorm's num_features check and
 * LayerNorm's bias argument are 2.x's.
 */
#include "ops_cases.h"

TestSuite(nn_norm, .init = setup, .fini = teardown);

/* ---- BatchNorm ---- */

Test(nn_norm, batch_norm_declares_the_state_dict_of_pytorch)
{
	EXPECT_STR(tensors_text(module("BatchNorm2d", "4")),
	           "weight[4] bias[4] running_mean[4]* running_var[4]* num_batches_tracked[]*int64");
	EXPECT_STR(tensors_text(module("BatchNorm2d", "4, affine=False, track_running_stats=False")), "");
	EXPECT_STR(tensors_text(module("BatchNorm1d", "3, dtype='float64'")),
	           "weight[3]float64 bias[3]float64 running_mean[3]*float64 running_var[3]*float64 "
	           "num_batches_tracked[]*int64");
}

Test(nn_norm, batch_norm_in_eval_uses_its_running_statistics)
{
	ti_module *bn = module("BatchNorm2d", "4");
	ASSERT_STATUS(call_module(bn, "{1, 4, 1, 1}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[1, 4, 1, 1]");
	EXPECT_INT(call.flops.value, 2 * 4);
}

Test(nn_norm, batch_norm_without_running_statistics_uses_the_batch)
{
	ti_module *bn = module("BatchNorm2d", "4, track_running_stats=False");
	ASSERT_STATUS(call_module(bn, "{2, 4, 3, 3}"), TI_OK, err);
	EXPECT_INT(call.flops.value, 7 * 72);
	EXPECT_FAILS(call_module(bn, "{1, 4, 1, 1}"),
	             "Expected more than 1 value per channel when training, got input size torch.Size([1, 4, 1, 1])");
}

Test(nn_norm, batch_norm_checks_the_input_rank_and_channels)
{
	EXPECT_FAILS(call_module(module("BatchNorm2d", "4"), "{2, 4, 5}"), "expected 4D input (got 3D input)");
	EXPECT_FAILS(call_module(module("BatchNorm1d", "4"), "{2, 3, 4, 5}"), "expected 2D or 3D input (got 4D input)");
	EXPECT_FAILS(call_module(module("BatchNorm3d", "4"), "{2, 3, 4, 5}"), "expected 5D input (got 4D input)");
	EXPECT_FAILS(call_module(module("BatchNorm1d", "3"), "{2, 4}"), "running_mean should contain 4 elements not 3");
}

/* ---- InstanceNorm ---- */

Test(nn_norm, instance_norm_has_no_state_unless_asked)
{
	EXPECT_STR(tensors_text(module("InstanceNorm1d", "3")), "");
	EXPECT_STR(tensors_text(module("InstanceNorm2d", "4, affine=True, track_running_stats=True")),
	           "weight[4] bias[4] running_mean[4]* running_var[4]* num_batches_tracked[]*int64");
}

Test(nn_norm, instance_norm_takes_an_unbatched_input)
{
	ASSERT_STATUS(call_module(module("InstanceNorm1d", "4"), "{4, 5}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[4, 5]");
	ti_module *tracked = module("InstanceNorm2d", "4, track_running_stats=True");
	ASSERT_STATUS(call_module(tracked, "{4, 1, 1}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[4, 1, 1]");
	EXPECT_STR(ti_shape_str(&ctx, 3, call.outputs[0].as.tensor->stride), "[1, 1, 1]");
	EXPECT_INT(call.flops.value, 2 * 4);
}

Test(nn_norm, instance_norm_refuses_as_pytorch_does)
{
	EXPECT_FAILS(call_module(module("InstanceNorm1d", "4, affine=True"), "{2, 3, 5}"),
	             "expected input's size at dim=1 to match num_features (4), but got: 3.");
	EXPECT_FAILS(call_module(module("InstanceNorm2d", "3"), "{2, 3}"), "expected 3D or 4D input (got 2D input)");
	EXPECT_FAILS(call_module(module("InstanceNorm1d", "4"), "{2, 4, 1}"),
	             "Expected more than 1 spatial element when training, got input size torch.Size([2, 4, 1])");
	EXPECT_FAILS(call_module(module("InstanceNorm2d", "4, track_running_stats=True"), "{2, 5, 3, 3}"),
	             "running_mean should contain 10 elements not 8");
}

/* ---- LayerNorm, RMSNorm, GroupNorm, LocalResponseNorm ---- */

Test(nn_norm, layer_norm_weights_take_the_normalized_shape)
{
	ti_module *ln = module("LayerNorm", "[3, 4]");
	EXPECT_STR(tensors_text(ln), "weight[3, 4] bias[3, 4]");
	ASSERT_STATUS(call_module(ln, "{2, 3, 4}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 3, 4]");
	EXPECT_STR(tensors_text(module("LayerNorm", "5, bias=False")), "weight[5]");
	EXPECT_STR(tensors_text(module("LayerNorm", "5, elementwise_affine=False")), "");
	EXPECT_FAILS(call_module(module("LayerNorm", "5"), "{2, 4}"),
	             "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 4]");
}

Test(nn_norm, rms_norm_has_only_a_weight)
{
	ti_module *rms = module("RMSNorm", "5");
	EXPECT_STR(tensors_text(rms), "weight[5]");
	ASSERT_STATUS(call_module(rms, "{2, 5}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 5]");
}

Test(nn_norm, group_norm_checks_its_groups_at_construction)
{
	EXPECT_STR(tensors_text(module("GroupNorm", "2, 4")), "weight[4] bias[4]");
	EXPECT_FAILS(build_module("GroupNorm", "4, 6", NULL), "num_channels must be divisible by num_groups");
	EXPECT_FAILS(build_module("GroupNorm", "0, 6", NULL), "integer modulo by zero");
	/* Python's 4 % -2 is 0: only forward refuses */
	EXPECT_FAILS(call_module(module("GroupNorm", "-2, 4"), "{2, 4, 3}"),
	             "Expected num groups to be greater than 0, got -2");
	ASSERT_STATUS(call_module(module("GroupNorm", "2, 4"), "{2, 4, 3}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 4, 3]");
}

Test(nn_norm, local_response_norm_has_no_state)
{
	ti_module *lrn = module("LocalResponseNorm", "2");
	EXPECT_STR(tensors_text(lrn), "");
	ASSERT_STATUS(call_module(lrn, "{2, 3, 4}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 3, 4]");
	EXPECT_INT(call.flops.value, 7 * 24);
}
