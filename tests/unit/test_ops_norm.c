/*
 * test_ops_norm.c - normalization operators (src/ops/norm.c).
 *
 * Shapes, strides and messages were read from PyTorch 1.13 on the meta
 * device; where 2.x differs (group_norm's rank check, local_response_norm's
 * message, rms_norm, normalize's dtype message) the rows follow 2.x's source.
 */
#include "ops/op.h"
#include "unit.h"
#include <criterion/parameterized.h>

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

TestSuite(ops_norm, .init = setup, .fini = teardown);

/* A contiguous tensor; a negative size stands for the symbol N. */
static const ti_meta_tensor *tensor(ti_dtype dtype, int ndim, const int64_t *sizes)
{
	ti_dim shape[8];
	for (int i = 0; i < ndim; i++)
		shape[i] = sizes[i] < 0 ? ti_dim_symbol(&sym, "N") : ti_dim_int(sizes[i]);
	const ti_meta_tensor *t = ti_meta_new(&ctx, dtype, ndim, shape);
	cr_assert(t != NULL);
	return t;
}

#define SIZES(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define F32(...) ti_arg_tensor(tensor(TI_DT_FLOAT32, SIZES(__VA_ARGS__)))
#define TYPED(dtype, ...) ti_arg_tensor(tensor(dtype, SIZES(__VA_ARGS__)))
#define NONE ti_arg_none()
#define KW(name, value) ti_arg_named(name, value)
#define RUN(op, ...) ti_op_invoke(&ctx, op, (ti_arg[]){__VA_ARGS__}, (int)(sizeof((ti_arg[]){__VA_ARGS__}) / sizeof(ti_arg)), &call, &err)

/* (2, 4, 3, 5) in channels_last: strides (60, 1, 20, 4). */
static ti_arg channels_last(void)
{
	const ti_meta_tensor *t = tensor(TI_DT_FLOAT32, SIZES(2, 4, 3, 5));
	ti_dim stride[4] = {ti_dim_int(60), ti_dim_int(1), ti_dim_int(20), ti_dim_int(4)};
	return ti_arg_tensor(ti_meta_view(&ctx, t, 4, t->shape, stride));
}

static ti_arg int_list(int n, const int64_t *values)
{
	ti_arg *items = ti_arena_calloc(&arena, (size_t)n + 1, sizeof(*items));
	for (int i = 0; i < n; i++)
		items[i] = ti_arg_int(values[i]);
	return ti_arg_list(items, n);
}

#define LIST(...) int_list(SIZES(__VA_ARGS__))

static const ti_meta_tensor *output(void)
{
	cr_assert(call.output_count >= 1 && call.outputs[0].kind == TI_ARG_TENSOR, "no tensor output");
	return call.outputs[0].as.tensor;
}

#define EXPECT_SHAPE(want) EXPECT_STR(ti_meta_shape_str(&ctx, output()), want)
#define EXPECT_STRIDES(want) EXPECT_STR(ti_shape_str(&ctx, output()->ndim, output()->stride), want)
#define EXPECT_FLOPS(want) EXPECT_INT(call.flops.value, want)
#define EXPECT_FAILS(status, want)                                                                            \
	do {                                                                                                  \
		EXPECT_STATUS(status, TI_E_SHAPE, err);                                                       \
		EXPECT_STR(err.message, want);                                                                \
	} while (0)

/* ---- batch_norm ---- */

Test(ops_norm, batch_norm_in_eval_mode_keeps_the_shape_and_counts_two_flops_an_element)
{
	ASSERT_STATUS(RUN("batch_norm", F32(2, 4), F32(4), F32(4)), TI_OK, err);
	EXPECT_SHAPE("[2, 4]");
	EXPECT_FLOPS(2 * 8);
	EXPECT_INT(call.macs.value, 0);
}

Test(ops_norm, batch_norm_in_training_counts_statistics_and_the_affine_transform)
{
	ASSERT_STATUS(RUN("F.batch_norm", F32(2, 4, 5), NONE, NONE, F32(4), F32(4), KW("training", ti_arg_bool(true))), TI_OK,
	              err);
	EXPECT_SHAPE("[2, 4, 5]");
	EXPECT_FLOPS((5 + 2) * 40);
}

Test(ops_norm, batch_norm_keeps_a_channels_last_layout)
{
	ASSERT_STATUS(RUN("batch_norm", channels_last(), F32(4), F32(4)), TI_OK, err);
	EXPECT_STRIDES("[60, 1, 20, 4]");
}

Test(ops_norm, batch_norm_keeps_the_dtype_of_a_half_input)
{
	ASSERT_STATUS(RUN("batch_norm", TYPED(TI_DT_FLOAT16, 2, 4), F32(4), F32(4)), TI_OK, err);
	EXPECT_INT(output()->dtype, TI_DT_FLOAT16);
}

Test(ops_norm, batch_norm_clones_an_empty_input_without_checks)
{
	ASSERT_STATUS(RUN("batch_norm", F32(0, 4), F32(3), F32(3)), TI_OK, err);
	EXPECT_SHAPE("[0, 4]");
}

Test(ops_norm, batch_norm_in_training_assumes_a_symbolic_batch_is_not_one)
{
	ASSERT_STATUS(RUN("batch_norm", F32(-1, 4), NONE, NONE, KW("training", ti_arg_bool(true))), TI_OK, err);
	EXPECT_SHAPE("[N, 4]");
	EXPECT_INT(sym.assumption_count, 1);
}

typedef struct error_case {
	char what[64];
	char op[24];
	int rank;
	int64_t shape[5];
	int64_t features[4]; /* sizes of running_mean, running_var, weight, bias; 0: None */
	bool training;
	char message[200];
} error_case;

static const error_case batch_norm_errors[] = {
	{"short running_mean", "batch_norm", 2, {2, 4}, {3, 4, 0, 0}, false,
	 "running_mean should contain 4 elements not 3"},
	{"short running_var", "batch_norm", 2, {2, 4}, {4, 5, 0, 0}, false, "running_var should contain 4 elements not 5"},
	{"short weight", "batch_norm", 2, {2, 4}, {4, 4, 3, 0}, false, "weight should contain 4 elements not 3"},
	{"short bias", "batch_norm", 3, {2, 4, 7}, {4, 4, 4, 2}, false, "bias should contain 4 elements not 2"},
	{"no running_mean in eval", "batch_norm", 2, {2, 4}, {0, 0, 0, 0}, false,
	 "running_mean must be defined in evaluation mode"},
	{"no running_var in eval", "batch_norm", 2, {2, 4}, {4, 0, 0, 0}, false,
	 "running_var must be defined in evaluation mode"},
	{"one value per channel", "batch_norm", 2, {1, 4}, {0, 0, 0, 0}, true,
	 "Expected more than 1 value per channel when training, got input size torch.Size([1, 4])"},
	{"one value per channel, 4-d", "batch_norm", 4, {1, 4, 1, 1}, {4, 4, 4, 4}, true,
	 "Expected more than 1 value per channel when training, got input size torch.Size([1, 4, 1, 1])"},
	{"a 1-d input reads 0 features", "batch_norm", 1, {4}, {4, 4, 0, 0}, false,
	 "running_mean should contain 0 elements not 4"},
	{"instance stats repeat per sample", "instance_norm", 3, {2, 6, 4}, {5, 5, 0, 0}, true,
	 "running_mean should contain 12 elements not 10"},
	{"instance weight repeats too", "instance_norm", 3, {2, 6, 4}, {0, 0, 5, 0}, true,
	 "weight should contain 12 elements not 10"},
	{"instance norm of one spatial element", "instance_norm", 3, {2, 6, 1}, {0, 0, 0, 0}, true,
	 "Expected more than 1 spatial element when training, got input size torch.Size([2, 6, 1])"},
	{"instance norm of a 2-d input", "instance_norm", 2, {6, 4}, {0, 0, 0, 0}, true,
	 "Expected more than 1 spatial element when training, got input size torch.Size([6, 4])"},
	{"instance norm without running stats", "instance_norm", 3, {2, 6, 4}, {6, 0, 0, 0}, false,
	 "Expected running_mean and running_var to be defined when use_input_stats is false"},
};

ParameterizedTestParameters(ops_norm, batch_and_instance_norm_refuse_as_pytorch_does)
{
	return cr_make_param_array(error_case, batch_norm_errors, sizeof(batch_norm_errors) / sizeof(batch_norm_errors[0]));
}

ParameterizedTest(const error_case *c, ops_norm, batch_and_instance_norm_refuse_as_pytorch_does)
{
	ti_arg args[6];
	args[0] = ti_arg_tensor(tensor(TI_DT_FLOAT32, c->rank, c->shape));
	for (int i = 0; i < 4; i++)
		args[i + 1] = c->features[i] ? ti_arg_tensor(tensor(TI_DT_FLOAT32, 1, &c->features[i])) : ti_arg_none();
	/* both take (input, running_mean, running_var, weight, bias, flag) */
	bool batch = !strcmp(c->op, "batch_norm");
	args[5] = ti_arg_named(batch ? "training" : "use_input_stats", ti_arg_bool(c->training));
	ti_status st = ti_op_invoke(&ctx, c->op, args, 6, &call, &err);
	cr_expect(st == TI_E_SHAPE, "%s: got %s, want a shape error", c->what, ti_status_name(st));
	cr_expect(!strcmp(err.message, c->message), "%s: got \"%s\", want \"%s\"", c->what, err.message, c->message);
}

/* ---- instance_norm ---- */

Test(ops_norm, instance_norm_gives_a_contiguous_result_of_the_input_shape)
{
	ASSERT_STATUS(RUN("instance_norm", channels_last()), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 3, 5]");
	EXPECT_STRIDES("[60, 15, 5, 1]");
	EXPECT_FLOPS(5 * 120);
}

Test(ops_norm, instance_norm_with_running_stats_counts_as_eval)
{
	ASSERT_STATUS(RUN("instance_norm", F32(2, 6, 4), F32(6), F32(6), KW("use_input_stats", ti_arg_bool(false))), TI_OK,
	              err);
	EXPECT_SHAPE("[2, 6, 4]");
	EXPECT_FLOPS(2 * 48);
}

/* ---- layer_norm and rms_norm ---- */

Test(ops_norm, layer_norm_gives_a_contiguous_result)
{
	ASSERT_STATUS(RUN("layer_norm", channels_last(), LIST(5), F32(5), F32(5)), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 3, 5]");
	EXPECT_STRIDES("[60, 15, 5, 1]");
	EXPECT_FLOPS(7 * 120);
}

Test(ops_norm, layer_norm_over_two_trailing_dims)
{
	ASSERT_STATUS(RUN("layer_norm", F32(3, 2, 5), LIST(2, 5), NONE, NONE, ti_arg_float(1e-6)), TI_OK, err);
	EXPECT_SHAPE("[3, 2, 5]");
	EXPECT_FLOPS(5 * 30);
}

Test(ops_norm, layer_norm_checks_weight_then_bias_then_input)
{
	EXPECT_FAILS(RUN("layer_norm", F32(2, 5), LIST(5), F32(4)),
	             "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
	             "normalized_shape = [5]");
	EXPECT_FAILS(RUN("layer_norm", F32(2, 5), LIST(10), F32(10), F32(4)),
	             "Expected bias to be of same shape as normalized_shape, but got bias of shape [4] and "
	             "normalized_shape = [10]");
	EXPECT_FAILS(RUN("layer_norm", F32(2, 5), LIST(10)),
	             "Given normalized_shape=[10], expected input with shape [*, 10], but got input of size[2, 5]");
	EXPECT_FAILS(RUN("layer_norm", F32(2, 5), LIST(3, 2, 5)),
	             "Given normalized_shape=[3, 2, 5], expected input with shape [*, 3, 2, 5], but got input of "
	             "size[2, 5]");
	EXPECT_FAILS(RUN("layer_norm", F32(2, 5), ti_arg_list(NULL, 0)),
	             "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
	             "but got normalized_shape = []");
}

Test(ops_norm, rms_norm_promotes_a_half_input_with_a_float_weight)
{
	ASSERT_STATUS(RUN("rms_norm", TYPED(TI_DT_FLOAT16, 2, 5), LIST(5), F32(5)), TI_OK, err);
	EXPECT_SHAPE("[2, 5]");
	EXPECT_INT(output()->dtype, TI_DT_FLOAT32);
	EXPECT_FLOPS(4 * 10);
}

Test(ops_norm, rms_norm_checks_the_weight_and_the_input)
{
	EXPECT_FAILS(RUN("rms_norm", F32(2, 5), LIST(5), F32(2, 5)),
	             "Expected weight to be of same shape as normalized_shape, but got weight of shape [2, 5] and "
	             "normalized_shape = [5]");
	EXPECT_FAILS(RUN("rms_norm", F32(2, 5), LIST(4)),
	             "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 5]");
}

/* ---- group_norm ---- */

Test(ops_norm, group_norm_gives_a_contiguous_result)
{
	ASSERT_STATUS(RUN("group_norm", channels_last(), ti_arg_int(2), F32(4), F32(4)), TI_OK, err);
	EXPECT_SHAPE("[2, 4, 3, 5]");
	EXPECT_STRIDES("[60, 15, 5, 1]");
	EXPECT_FLOPS(7 * 120);
}

Test(ops_norm, group_norm_takes_an_empty_batch)
{
	ASSERT_STATUS(RUN("group_norm", F32(0, 6, 4), ti_arg_int(3)), TI_OK, err);
	EXPECT_SHAPE("[0, 6, 4]");
}

Test(ops_norm, group_norm_refuses_as_pytorch_does)
{
	EXPECT_FAILS(RUN("group_norm", F32(2, 6, 4), ti_arg_int(4)),
	             "Expected number of channels in input to be divisible by num_groups, but got input of shape "
	             "[2, 6, 4] and num_groups=4");
	EXPECT_FAILS(RUN("group_norm", F32(2, 6, 4), ti_arg_int(3), F32(5)),
	             "Expected weight to be a vector of size equal to the number of channels in input, but got weight "
	             "of shape [5] and input of shape [2, 6, 4]");
	/* PyTorch prints the weight's shape in the bias message */
	EXPECT_FAILS(RUN("group_norm", F32(2, 6, 4), ti_arg_int(3), F32(6), F32(5)),
	             "Expected bias to be a vector of size equal to the number of channels in input, but got bias of "
	             "shape [6] and input of shape [2, 6, 4]");
	EXPECT_FAILS(RUN("group_norm", F32(2, 6, 4), ti_arg_int(3), NONE, F32(5)),
	             "Expected bias to be a vector of size equal to the number of channels in input, but got bias of "
	             "shape [0] and input of shape [2, 6, 4]");
	EXPECT_FAILS(RUN("group_norm", F32(6), ti_arg_int(3)),
	             "Expected at least 2 dimensions for input tensor but received 1");
	EXPECT_FAILS(RUN("group_norm", F32(1, 6), ti_arg_int(6)),
	             "Expected more than 1 value per channel when training, got input size [1, 6]");
	EXPECT_FAILS(RUN("group_norm", F32(2, 6, 4), ti_arg_int(0)), "integer division or modulo by zero");
	EXPECT_FAILS(RUN("group_norm", F32(2, 6, 4), ti_arg_int(-3)), "Expected num groups to be greater than 0, got -3");
}

/* ---- normalize and local_response_norm ---- */

Test(ops_norm, normalize_keeps_the_input_layout)
{
	ASSERT_STATUS(RUN("normalize", channels_last()), TI_OK, err);
	EXPECT_STRIDES("[60, 1, 20, 4]");
	EXPECT_FLOPS(3 * 120);
	const ti_meta_tensor *t = tensor(TI_DT_FLOAT32, SIZES(2, 4, 3));
	ti_dim shape[3] = {t->shape[0], t->shape[2], t->shape[1]}, stride[3] = {t->stride[0], t->stride[2], t->stride[1]};
	ASSERT_STATUS(RUN("normalize", ti_arg_tensor(ti_meta_view(&ctx, t, 3, shape, stride)), KW("dim", ti_arg_int(1))),
	              TI_OK, err);
	EXPECT_SHAPE("[2, 3, 4]");
	EXPECT_STRIDES("[12, 1, 3]");
}

Test(ops_norm, normalize_refuses_integers_and_bad_dims)
{
	EXPECT_FAILS(RUN("normalize", TYPED(TI_DT_INT64, 2, 3)),
	             "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long");
	EXPECT_FAILS(RUN("normalize", F32(2, 3), ti_arg_float(1.0), ti_arg_int(5)),
	             "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
	EXPECT_FAILS(RUN("normalize", F32(3)), "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

Test(ops_norm, local_response_norm_counts_the_window)
{
	ASSERT_STATUS(RUN("local_response_norm", F32(2, 3, 4), ti_arg_int(2)), TI_OK, err);
	EXPECT_SHAPE("[2, 3, 4]");
	EXPECT_FLOPS((2 + 5) * 24);
	ASSERT_STATUS(RUN("local_response_norm", channels_last(), ti_arg_int(3)), TI_OK, err);
	EXPECT_STRIDES("[60, 1, 20, 4]");
	ASSERT_STATUS(RUN("local_response_norm", F32(2, 3, 4, 5, 6, 7), ti_arg_int(3)), TI_OK, err);
	EXPECT_SHAPE("[2, 3, 4, 5, 6, 7]");
}

Test(ops_norm, local_response_norm_returns_an_empty_input_itself)
{
	ti_arg input = F32(0, 3, 4);
	ASSERT_STATUS(RUN("local_response_norm", input, ti_arg_int(2)), TI_OK, err);
	cr_expect(output() == input.as.tensor, "the input itself");
}

Test(ops_norm, local_response_norm_refuses_as_pytorch_does)
{
	EXPECT_FAILS(RUN("local_response_norm", F32(2, 3), ti_arg_int(2)),
	             "Expected 3D or higher dimensionality input (got 2 dimensions)");
	EXPECT_FAILS(RUN("local_response_norm", F32(2, 3, 4), ti_arg_int(0)),
	             "kernel size should be greater than zero, but got kH: 0 kW: 1");
	EXPECT_FAILS(RUN("local_response_norm", F32(2, 3, 4, 5), ti_arg_int(0)),
	             "kernel size should be greater than zero, but got kT: 0 kH: 1 kW: 1");
}
