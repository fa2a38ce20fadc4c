/*
 * test_nn_norm.c - normalization modules (src/nn/norm.c).
 *
 * State dicts, shapes and messages were read from PyTorch 1.13 modules on
 * the meta device in eval mode; InstanceNorm's num_features check and
 * LayerNorm's bias argument are 2.x's.
 */
#include <stdio.h>

#include "nn/module.h"
#include "unit.h"

static ti_arena arena;
static ti_symctx sym;
static ti_shape_ctx ctx;
static ti_error err;
static ti_op_call call;

static void setup(void)
{
	ti_arena_init(&arena, (size_t)1 << 24);
	ti_symctx_init(&sym, &arena);
	ctx = (ti_shape_ctx){&arena, &sym, TI_DT_FLOAT32, NULL, NULL};
	ti_error_clear(&err);
}

static void teardown(void) { ti_arena_release(&arena); }

TestSuite(nn_norm, .init = setup, .fini = teardown);

#define COUNT(...) (int)(sizeof((ti_arg[]){__VA_ARGS__}) / sizeof(ti_arg))
#define KW(name, value) ti_arg_named(name, value)
#define INT(v) ti_arg_int(v)
#define BOOL(v) ti_arg_bool(v)

static ti_arg f32(int ndim, const int64_t *sizes)
{
	ti_dim shape[8];
	for (int i = 0; i < ndim; i++)
		shape[i] = ti_dim_int(sizes[i]);
	const ti_meta_tensor *t = ti_meta_new(&ctx, TI_DT_FLOAT32, ndim, shape);
	cr_assert(t != NULL);
	return ti_arg_tensor(t);
}

#define F32(...) f32((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

static ti_module *module(const char *type, const ti_arg *args, int n)
{
	ti_module *m = NULL;
	ti_status st = ti_module_new_leaf(&ctx, "norm", type, args, n, &m, &err);
	cr_assert(st == TI_OK, "%s(): got %s (\"%s\")", type, ti_status_name(st), err.message);
	return m;
}

#define MODULE(type, ...) module(type, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__))
#define NEW_FAILS(type, ...) ti_module_new_leaf(&ctx, "norm", type, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &(ti_module *){0}, &err)
#define FORWARD(m, ...) ti_module_call(&ctx, m, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &call, &err)

/* "weight[4] running_mean[4]* num_batches_tracked[]*int64": buffers starred, dtypes other than float32 named. */
static const char *tensors_text(const ti_module *m)
{
	char buf[1024] = "";
	size_t n = 0;
	for (int i = 0; i < m->tensor_count && n < sizeof(buf); i++) {
		const ti_module_tensor *t = &m->tensors[i];
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%s%s%s", i ? " " : "", t->name,
		                      ti_meta_shape_str(&ctx, t->tensor), t->buffer ? "*" : "",
		                      t->tensor->dtype == TI_DT_FLOAT32 ? "" : ti_dtype_name(t->tensor->dtype));
	}
	return ti_arena_strdup(&arena, buf);
}

static const char *output_shape(void)
{
	cr_assert(call.output_count == 1 && call.outputs[0].kind == TI_ARG_TENSOR, "one tensor output");
	return ti_meta_shape_str(&ctx, call.outputs[0].as.tensor);
}

#define EXPECT_FAILS(status, want)                                                                            \
	do {                                                                                                  \
		EXPECT_STATUS(status, TI_E_SHAPE, err);                                                       \
		EXPECT_STR(err.message, want);                                                                \
	} while (0)

/* ---- BatchNorm ---- */

Test(nn_norm, batch_norm_declares_the_state_dict_of_pytorch)
{
	EXPECT_STR(tensors_text(MODULE("BatchNorm2d", INT(4))),
	           "weight[4] bias[4] running_mean[4]* running_var[4]* num_batches_tracked[]*int64");
	EXPECT_STR(tensors_text(MODULE("BatchNorm2d", INT(4), KW("affine", BOOL(false)),
	                               KW("track_running_stats", BOOL(false)))), "");
	EXPECT_STR(tensors_text(MODULE("BatchNorm1d", INT(3), KW("dtype", ti_arg_str("float64")))),
	           "weight[3]float64 bias[3]float64 running_mean[3]*float64 running_var[3]*float64 "
	           "num_batches_tracked[]*int64");
}

Test(nn_norm, batch_norm_in_eval_uses_its_running_statistics)
{
	ti_module *bn = MODULE("BatchNorm2d", INT(4));
	ASSERT_STATUS(FORWARD(bn, F32(1, 4, 1, 1)), TI_OK, err);
	EXPECT_STR(output_shape(), "[1, 4, 1, 1]");
	EXPECT_INT(call.flops.value, 2 * 4);
}

Test(nn_norm, batch_norm_without_running_statistics_uses_the_batch)
{
	ti_module *bn = MODULE("BatchNorm2d", INT(4), KW("track_running_stats", BOOL(false)));
	ASSERT_STATUS(FORWARD(bn, F32(2, 4, 3, 3)), TI_OK, err);
	EXPECT_INT(call.flops.value, 7 * 72);
	EXPECT_FAILS(FORWARD(bn, F32(1, 4, 1, 1)),
	             "Expected more than 1 value per channel when training, got input size torch.Size([1, 4, 1, 1])");
}

Test(nn_norm, batch_norm_checks_the_input_rank_and_channels)
{
	EXPECT_FAILS(FORWARD(MODULE("BatchNorm2d", INT(4)), F32(2, 4, 5)), "expected 4D input (got 3D input)");
	EXPECT_FAILS(FORWARD(MODULE("BatchNorm1d", INT(4)), F32(2, 3, 4, 5)), "expected 2D or 3D input (got 4D input)");
	EXPECT_FAILS(FORWARD(MODULE("BatchNorm3d", INT(4)), F32(2, 3, 4, 5)), "expected 5D input (got 4D input)");
	EXPECT_FAILS(FORWARD(MODULE("BatchNorm1d", INT(3)), F32(2, 4)), "running_mean should contain 4 elements not 3");
}

/* ---- InstanceNorm ---- */

Test(nn_norm, instance_norm_has_no_state_unless_asked)
{
	EXPECT_STR(tensors_text(MODULE("InstanceNorm1d", INT(3))), "");
	EXPECT_STR(tensors_text(MODULE("InstanceNorm2d", INT(4), KW("affine", BOOL(true)),
	                               KW("track_running_stats", BOOL(true)))),
	           "weight[4] bias[4] running_mean[4]* running_var[4]* num_batches_tracked[]*int64");
}

Test(nn_norm, instance_norm_takes_an_unbatched_input)
{
	ASSERT_STATUS(FORWARD(MODULE("InstanceNorm1d", INT(4)), F32(4, 5)), TI_OK, err);
	EXPECT_STR(output_shape(), "[4, 5]");
	ti_module *tracked = MODULE("InstanceNorm2d", INT(4), KW("track_running_stats", BOOL(true)));
	ASSERT_STATUS(FORWARD(tracked, F32(4, 1, 1)), TI_OK, err);
	EXPECT_STR(output_shape(), "[4, 1, 1]");
	EXPECT_STR(ti_shape_str(&ctx, 3, call.outputs[0].as.tensor->stride), "[1, 1, 1]");
	EXPECT_INT(call.flops.value, 2 * 4);
}

Test(nn_norm, instance_norm_refuses_as_pytorch_does)
{
	EXPECT_FAILS(FORWARD(MODULE("InstanceNorm1d", INT(4), KW("affine", BOOL(true))), F32(2, 3, 5)),
	             "expected input's size at dim=1 to match num_features (4), but got: 3.");
	EXPECT_FAILS(FORWARD(MODULE("InstanceNorm2d", INT(3)), F32(2, 3)), "expected 3D or 4D input (got 2D input)");
	EXPECT_FAILS(FORWARD(MODULE("InstanceNorm1d", INT(4)), F32(2, 4, 1)),
	             "Expected more than 1 spatial element when training, got input size torch.Size([2, 4, 1])");
	EXPECT_FAILS(FORWARD(MODULE("InstanceNorm2d", INT(4), KW("track_running_stats", BOOL(true))), F32(2, 5, 3, 3)),
	             "running_mean should contain 10 elements not 8");
}

/* ---- LayerNorm, RMSNorm, GroupNorm, LocalResponseNorm ---- */

Test(nn_norm, layer_norm_weights_take_the_normalized_shape)
{
	ti_arg shape[2] = {INT(3), INT(4)};
	ti_module *ln = MODULE("LayerNorm", ti_arg_list(shape, 2));
	EXPECT_STR(tensors_text(ln), "weight[3, 4] bias[3, 4]");
	ASSERT_STATUS(FORWARD(ln, F32(2, 3, 4)), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 3, 4]");
	EXPECT_STR(tensors_text(MODULE("LayerNorm", INT(5), KW("bias", BOOL(false)))), "weight[5]");
	EXPECT_STR(tensors_text(MODULE("LayerNorm", INT(5), KW("elementwise_affine", BOOL(false)))), "");
	EXPECT_FAILS(FORWARD(MODULE("LayerNorm", INT(5)), F32(2, 4)),
	             "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, 4]");
}

Test(nn_norm, rms_norm_has_only_a_weight)
{
	ti_module *rms = MODULE("RMSNorm", INT(5));
	EXPECT_STR(tensors_text(rms), "weight[5]");
	ASSERT_STATUS(FORWARD(rms, F32(2, 5)), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 5]");
}

Test(nn_norm, group_norm_checks_its_groups_at_construction)
{
	EXPECT_STR(tensors_text(MODULE("GroupNorm", INT(2), INT(4))), "weight[4] bias[4]");
	EXPECT_FAILS(NEW_FAILS("GroupNorm", INT(4), INT(6)), "num_channels must be divisible by num_groups");
	EXPECT_FAILS(NEW_FAILS("GroupNorm", INT(0), INT(6)), "integer modulo by zero");
	/* Python's 4 % -2 is 0: only forward refuses */
	EXPECT_FAILS(FORWARD(MODULE("GroupNorm", INT(-2), INT(4)), F32(2, 4, 3)),
	             "Expected num groups to be greater than 0, got -2");
	ASSERT_STATUS(FORWARD(MODULE("GroupNorm", INT(2), INT(4)), F32(2, 4, 3)), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 4, 3]");
}

Test(nn_norm, local_response_norm_has_no_state)
{
	ti_module *lrn = MODULE("LocalResponseNorm", INT(2));
	EXPECT_STR(tensors_text(lrn), "");
	ASSERT_STATUS(FORWARD(lrn, F32(2, 3, 4)), TI_OK, err);
	EXPECT_STR(output_shape(), "[2, 3, 4]");
	EXPECT_INT(call.flops.value, 7 * 24);
}
