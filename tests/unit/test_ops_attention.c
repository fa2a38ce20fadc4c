/*
 * test_ops_attention.c - scaled_dot_product_attention (src/ops/attention.c).
 *
 * The rules are PyTorch 2.5's math path (attention.cpp), which 1.13 lacks:
 * the messages of its two matmuls and of the in-place mask add were read
 * from 1.13's matmul, bmm and add_ on the meta device; the validation, causal
 * and GQA messages are 2.5's source text.
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

TestSuite(ops_attention, .init = setup, .fini = teardown);

/* A contiguous tensor of up to 5 dims; a negative size stands for the symbol N. */
static ti_arg tensor(ti_dtype dtype, int ndim, const int64_t *sizes)
{
	ti_dim shape[5];
	for (int i = 0; i < ndim; i++)
		shape[i] = sizes[i] < 0 ? ti_dim_symbol(&sym, "N") : ti_dim_int(sizes[i]);
	const ti_meta_tensor *t = ti_meta_new(&ctx, dtype, ndim, shape);
	cr_assert(t != NULL);
	return ti_arg_tensor(t);
}

#define SIZES(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define F32(...) tensor(TI_DT_FLOAT32, SIZES(__VA_ARGS__))
#define KW(name, value) ti_arg_named(name, value)
#define SDPA(...)                                                                                             \
	ti_op_invoke(&ctx, "scaled_dot_product_attention", (ti_arg[]){__VA_ARGS__},                           \
	             (int)(sizeof((ti_arg[]){__VA_ARGS__}) / sizeof(ti_arg)), &call, &err)

static const char *output_shape(void)
{
	cr_assert(call.output_count == 1 && call.outputs[0].kind == TI_ARG_TENSOR, "one tensor output");
	return ti_meta_shape_str(&ctx, call.outputs[0].as.tensor);
}

/* ---- shapes and counts ---- */

typedef struct shape_case {
	char what[64];
	int ranks[4];         /* query, key, value, attn_mask (0: none) */
	int64_t sizes[4][5];
	bool causal, gqa;
	char output[40];
	int64_t macs, extra_flops;
} shape_case;

static const shape_case shape_cases[] = {
	{"batch and heads", {4, 4, 4, 0}, {{2, 8, 5, 16}, {2, 8, 7, 16}, {2, 8, 7, 32}}, false, false,
	 "[2, 8, 5, 32]", 16 * 35 * 48, 16 * 35 * 4},
	{"causal halves the scores", {4, 4, 4, 0}, {{2, 4, 6, 8}, {2, 4, 6, 8}, {2, 4, 6, 8}}, true, false,
	 "[2, 4, 6, 8]", 8 * 18 * 16, 8 * 18 * 5},
	{"a (L, S) mask broadcasts", {4, 4, 4, 2}, {{2, 8, 5, 16}, {2, 8, 7, 16}, {2, 8, 7, 16}, {5, 7}}, false, false,
	 "[2, 8, 5, 16]", 16 * 35 * 32, 16 * 35 * 5},
	{"a per-batch mask broadcasts", {4, 4, 4, 4}, {{2, 8, 5, 16}, {2, 8, 7, 16}, {2, 8, 7, 16}, {2, 1, 5, 7}},
	 false, false, "[2, 8, 5, 16]", 16 * 35 * 32, 16 * 35 * 5},
	{"matrices", {2, 2, 2, 0}, {{5, 8}, {7, 8}, {7, 4}}, false, false, "[5, 4]", 35 * 12, 35 * 4},
	{"batch dims broadcast, a matrix value folds", {4, 4, 2, 0}, {{2, 1, 5, 8}, {1, 3, 7, 8}, {7, 4}}, false,
	 false, "[2, 3, 5, 4]", 6 * 35 * 12, 6 * 35 * 4},
	{"a single key head is broadcast", {4, 4, 4, 0}, {{1, 9, 4, 8}, {1, 1, 6, 8}, {1, 1, 6, 8}}, false, false,
	 "[1, 9, 4, 8]", 9 * 24 * 16, 9 * 24 * 4},
	{"grouped-query heads are repeated", {4, 4, 4, 0}, {{1, 9, 4, 8}, {1, 3, 6, 8}, {1, 3, 6, 8}}, false, true,
	 "[1, 9, 4, 8]", 9 * 24 * 16, 9 * 24 * 4},
	{"extra batch dims", {5, 5, 5, 0}, {{2, 3, 4, 5, 8}, {2, 3, 4, 6, 8}, {2, 3, 4, 6, 2}}, false, false,
	 "[2, 3, 4, 5, 2]", 24 * 30 * 10, 24 * 30 * 4},
};

ParameterizedTestParameters(ops_attention, shapes_and_counts_follow_the_math_path)
{
	return cr_make_param_array(shape_case, shape_cases, sizeof(shape_cases) / sizeof(shape_cases[0]));
}

ParameterizedTest(const shape_case *c, ops_attention, shapes_and_counts_follow_the_math_path)
{
	ti_arg args[6];
	for (int i = 0; i < 4; i++)
		args[i] = c->ranks[i] ? tensor(i == 3 ? TI_DT_BOOL : TI_DT_FLOAT32, c->ranks[i], c->sizes[i]) : ti_arg_none();
	args[4] = KW("is_causal", ti_arg_bool(c->causal));
	args[5] = KW("enable_gqa", ti_arg_bool(c->gqa));
	ti_status st = ti_op_invoke(&ctx, "scaled_dot_product_attention", args, 6, &call, &err);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", c->what, ti_status_name(st), err.message);
	const char *shape = output_shape();
	cr_expect(!strcmp(shape, c->output), "%s: got %s, want %s", c->what, shape, c->output);
	cr_expect(call.macs.value == c->macs, "%s: macs got %lld, want %lld", c->what, (long long)call.macs.value,
	          (long long)c->macs);
	int64_t flops = 2 * c->macs + c->extra_flops;
	cr_expect(call.flops.value == flops, "%s: flops got %lld, want %lld", c->what, (long long)call.flops.value,
	          (long long)flops);
}

Test(ops_attention, the_output_is_contiguous_in_the_query_dtype)
{
	ASSERT_STATUS(SDPA(tensor(TI_DT_FLOAT16, SIZES(2, 4, 5, 8)), tensor(TI_DT_FLOAT16, SIZES(2, 4, 7, 8)),
	                   tensor(TI_DT_FLOAT16, SIZES(2, 4, 7, 8)), tensor(TI_DT_FLOAT16, SIZES(5, 7))),
	              TI_OK, err);
	const ti_meta_tensor *out = call.outputs[0].as.tensor;
	EXPECT_INT(out->dtype, TI_DT_FLOAT16);
	EXPECT_STR(ti_shape_str(&ctx, out->ndim, out->stride), "[160, 40, 8, 1]");
}

Test(ops_attention, symbolic_batches_carry_into_the_shape_and_the_counts)
{
	ASSERT_STATUS(SDPA(F32(-1, 4, 5, 8), F32(-1, 4, 7, 8), F32(-1, 4, 7, 8)), TI_OK, err);
	EXPECT_STR(output_shape(), "[N, 4, 5, 8]");
	EXPECT_STR(ti_dim_str(&sym, call.macs), "2240*N");
}

/* ---- errors ---- */

typedef struct error_case {
	char what[64];
	int ranks[4];
	int64_t sizes[4][5];
	ti_dtype dtypes[4];
	bool causal, gqa;
	char message[200];
} error_case;

#define FLOAT3 {TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_BOOL}

static const error_case error_cases[] = {
	{"dtypes differ", {4, 4, 4, 0}, {{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}},
	 {TI_DT_FLOAT16, TI_DT_FLOAT32, TI_DT_FLOAT32}, false, false,
	 "Expected query, key, and value to have the same dtype, but got query.dtype: c10::Half key.dtype: float and "
	 "value.dtype: float instead."},
	{"a 1-d query", {1, 2, 2, 0}, {{4}, {3, 4}, {3, 4}}, FLOAT3, false, false,
	 "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 2 and "
	 "value.dim: 2 instead."},
	{"an integer mask", {2, 2, 2, 2}, {{3, 4}, {3, 4}, {3, 4}, {3, 3}},
	 {TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_INT64}, false, false,
	 "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long int and  "
	 "query.dtype: float instead."},
	{"causal with a mask", {2, 2, 2, 2}, {{3, 4}, {3, 4}, {3, 4}, {3, 3}}, FLOAT3, true, false,
	 "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"},
	{"heads differ without gqa", {4, 4, 4, 0}, {{1, 9, 4, 8}, {1, 3, 6, 8}, {1, 3, 6, 8}}, FLOAT3, false, false,
	 "The size of tensor a (9) must match the size of tensor b (3) at non-singleton dimension 1"},
	{"key heads do not divide", {4, 4, 4, 0}, {{1, 12, 4, 8}, {1, 5, 6, 8}, {1, 5, 6, 8}}, FLOAT3, false, true,
	 "Number of heads in key and value must divide the number of heads in "},
	{"gqa needs heads", {2, 2, 2, 0}, {{4, 8}, {6, 8}, {6, 8}}, FLOAT3, false, true,
	 "Dimension out of range (expected to be in range of [-2, 1], but got -3)"},
	{"embedding sizes differ", {4, 4, 4, 0}, {{2, 3, 5, 8}, {2, 3, 6, 7}, {2, 3, 6, 7}}, FLOAT3, false, false,
	 "Expected size for first two dimensions of batch2 tensor to be: [6, 8] but got: [6, 7]."},
	{"matrices differ", {2, 2, 2, 0}, {{5, 8}, {7, 6}, {7, 6}}, FLOAT3, false, false,
	 "mat1 and mat2 shapes cannot be multiplied (5x8 and 6x7)"},
	{"a matrix key folds the query", {3, 2, 2, 0}, {{2, 5, 8}, {7, 6}, {7, 6}}, FLOAT3, false, false,
	 "mat1 and mat2 shapes cannot be multiplied (10x8 and 6x7)"},
	{"value length differs", {3, 3, 3, 0}, {{2, 5, 8}, {2, 7, 8}, {2, 6, 4}}, FLOAT3, false, false,
	 "Expected size for first two dimensions of batch2 tensor to be: [2, 7] but got: [2, 6]."},
	{"a mask of another batch", {4, 4, 4, 4}, {{2, 8, 5, 7}, {2, 8, 7, 7}, {2, 8, 7, 7}, {3, 8, 5, 7}}, FLOAT3, false,
	 false, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"},
	{"a mask that grows the scores", {4, 4, 4, 5}, {{2, 8, 5, 7}, {2, 8, 7, 7}, {2, 8, 7, 7}, {4, 2, 8, 5, 7}},
	 FLOAT3, false, false, "output with shape [2, 8, 5, 7] doesn't match the broadcast shape [4, 2, 8, 5, 7]"},
};

ParameterizedTestParameters(ops_attention, errors_are_pytorch_s)
{
	return cr_make_param_array(error_case, error_cases, sizeof(error_cases) / sizeof(error_cases[0]));
}

ParameterizedTest(const error_case *c, ops_attention, errors_are_pytorch_s)
{
	ti_arg args[6];
	for (int i = 0; i < 4; i++)
		args[i] = c->ranks[i] ? tensor(c->dtypes[i], c->ranks[i], c->sizes[i]) : ti_arg_none();
	args[4] = KW("is_causal", ti_arg_bool(c->causal));
	args[5] = KW("enable_gqa", ti_arg_bool(c->gqa));
	ti_status st = ti_op_invoke(&ctx, "scaled_dot_product_attention", args, 6, &call, &err);
	cr_expect(st == TI_E_SHAPE, "%s: got %s, want a shape error", c->what, ti_status_name(st));
	cr_expect(!strcmp(err.message, c->message), "%s: got \"%s\", want \"%s\"", c->what, err.message, c->message);
}

Test(ops_attention, scale_and_enable_gqa_are_keyword_only)
{
	ti_arg q = F32(2, 3), k = F32(2, 3), v = F32(2, 3), none = ti_arg_none();
	EXPECT_STATUS(SDPA(q, k, v, none, ti_arg_float(0.0), ti_arg_bool(false), ti_arg_float(0.5)), TI_E_CORRUPT, err);
	EXPECT_STATUS(SDPA(q, k, v, KW("scale", ti_arg_float(0.5)), KW("dropout_p", ti_arg_float(0.1))), TI_OK, err);
}
