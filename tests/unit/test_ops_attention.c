/*
 * test_ops_attention.c - scaled_dot_product_attention (src/ops/attention.c).
 *
 * The rules are PyTorch 2.5's math path (attention.cpp), which 1.13 lacks:
 * the messages of its two matmuls and of the in-place mask add were read
 * from 1.13's matmul, bmm and add_ on the meta device; the validation, causal
 * and GQA messages are 2.5's source text.
 */
#include "ops_cases.h"

TestSuite(ops_attention, .init = setup, .fini = teardown);

/* ---- shapes and counts ---- */

typedef struct shape_case {
	char what[64];
	char args[128]; /* query, key, value, attn_mask, is_causal, enable_gqa */
	char output[40];
	int64_t macs, extra_flops;
} shape_case;

static const shape_case shape_cases[] = {
	{"batch and heads", "{2, 8, 5, 16}, {2, 8, 7, 16}, {2, 8, 7, 32}, None, is_causal=False, enable_gqa=False",
	 "[2, 8, 5, 32]", 16 * 35 * 48, 16 * 35 * 4},
	{"causal halves the scores", "{2, 4, 6, 8}, {2, 4, 6, 8}, {2, 4, 6, 8}, None, is_causal=True, enable_gqa=False",
	 "[2, 4, 6, 8]", 8 * 18 * 16, 8 * 18 * 5},
	{"a (L, S) mask broadcasts",
	 "{2, 8, 5, 16}, {2, 8, 7, 16}, {2, 8, 7, 16}, bool{5, 7}, is_causal=False, enable_gqa=False",
	 "[2, 8, 5, 16]", 16 * 35 * 32, 16 * 35 * 5},
	{"a per-batch mask broadcasts",
	 "{2, 8, 5, 16}, {2, 8, 7, 16}, {2, 8, 7, 16}, bool{2, 1, 5, 7}, is_causal=False, enable_gqa=False",
	 "[2, 8, 5, 16]", 16 * 35 * 32, 16 * 35 * 5},
	{"matrices", "{5, 8}, {7, 8}, {7, 4}, None, is_causal=False, enable_gqa=False",
	 "[5, 4]", 35 * 12, 35 * 4},
	{"batch dims broadcast, a matrix value folds",
	 "{2, 1, 5, 8}, {1, 3, 7, 8}, {7, 4}, None, is_causal=False, enable_gqa=False",
	 "[2, 3, 5, 4]", 6 * 35 * 12, 6 * 35 * 4},
	{"a single key head is broadcast",
	 "{1, 9, 4, 8}, {1, 1, 6, 8}, {1, 1, 6, 8}, None, is_causal=False, enable_gqa=False",
	 "[1, 9, 4, 8]", 9 * 24 * 16, 9 * 24 * 4},
	{"grouped-query heads are repeated",
	 "{1, 9, 4, 8}, {1, 3, 6, 8}, {1, 3, 6, 8}, None, is_causal=False, enable_gqa=True",
	 "[1, 9, 4, 8]", 9 * 24 * 16, 9 * 24 * 4},
	{"extra batch dims",
	 "{2, 3, 4, 5, 8}, {2, 3, 4, 6, 8}, {2, 3, 4, 6, 2}, None, is_causal=False, enable_gqa=False",
	 "[2, 3, 4, 5, 2]", 24 * 30 * 10, 24 * 30 * 4},
};

ParameterizedTestParameters(ops_attention, shapes_and_counts_follow_the_math_path)
{
	return cr_make_param_array(shape_case, shape_cases, sizeof(shape_cases) / sizeof(shape_cases[0]));
}

ParameterizedTest(const shape_case *c, ops_attention, shapes_and_counts_follow_the_math_path)
{
	ti_status st = run("scaled_dot_product_attention", c->args);
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
	ASSERT_STATUS(run("scaled_dot_product_attention",
	                  "float16{2, 4, 5, 8}, float16{2, 4, 7, 8}, float16{2, 4, 7, 8}, float16{5, 7}"),
	              TI_OK, err);
	const ti_meta_tensor *out = call.outputs[0].as.tensor;
	EXPECT_INT(out->dtype, TI_DT_FLOAT16);
	EXPECT_STR(ti_shape_str(&ctx, out->ndim, out->stride), "[160, 40, 8, 1]");
}

Test(ops_attention, symbolic_batches_carry_into_the_shape_and_the_counts)
{
	ASSERT_STATUS(run("scaled_dot_product_attention", "{N, 4, 5, 8}, {N, 4, 7, 8}, {N, 4, 7, 8}"), TI_OK, err);
	EXPECT_STR(output_shape(), "[N, 4, 5, 8]");
	EXPECT_STR(ti_dim_str(&sym, call.macs), "2240*N");
}

/* ---- errors ---- */

typedef struct error_case {
	char what[64];
	char args[128]; /* query, key, value, attn_mask, is_causal, enable_gqa */
	char message[200];
} error_case;

static const error_case error_cases[] = {
	{"dtypes differ", "float16{1, 2, 3, 4}, {1, 2, 3, 4}, {1, 2, 3, 4}, None, is_causal=False, enable_gqa=False",
	 "Expected query, key, and value to have the same dtype, but got query.dtype: c10::Half key.dtype: float and "
	 "value.dtype: float instead."},
	{"a 1-d query", "{4}, {3, 4}, {3, 4}, None, is_causal=False, enable_gqa=False",
	 "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: 1 key.dim: 2 and "
	 "value.dim: 2 instead."},
	{"an integer mask", "{3, 4}, {3, 4}, {3, 4}, int64{3, 3}, is_causal=False, enable_gqa=False",
	 "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: long int and  "
	 "query.dtype: float instead."},
	{"causal with a mask", "{3, 4}, {3, 4}, {3, 4}, bool{3, 3}, is_causal=True, enable_gqa=False",
	 "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"},
	{"heads differ without gqa",
	 "{1, 9, 4, 8}, {1, 3, 6, 8}, {1, 3, 6, 8}, None, is_causal=False, enable_gqa=False",
	 "The size of tensor a (9) must match the size of tensor b (3) at non-singleton dimension 1"},
	{"key heads do not divide", "{1, 12, 4, 8}, {1, 5, 6, 8}, {1, 5, 6, 8}, None, is_causal=False, enable_gqa=True",
	 "Number of heads in key and value must divide the number of heads in "},
	{"gqa needs heads", "{4, 8}, {6, 8}, {6, 8}, None, is_causal=False, enable_gqa=True",
	 "Dimension out of range (expected to be in range of [-2, 1], but got -3)"},
	{"embedding sizes differ", "{2, 3, 5, 8}, {2, 3, 6, 7}, {2, 3, 6, 7}, None, is_causal=False, enable_gqa=False",
	 "Expected size for first two dimensions of batch2 tensor to be: [6, 8] but got: [6, 7]."},
	{"matrices differ", "{5, 8}, {7, 6}, {7, 6}, None, is_causal=False, enable_gqa=False",
	 "mat1 and mat2 shapes cannot be multiplied (5x8 and 6x7)"},
	{"a matrix key folds the query", "{2, 5, 8}, {7, 6}, {7, 6}, None, is_causal=False, enable_gqa=False",
	 "mat1 and mat2 shapes cannot be multiplied (10x8 and 6x7)"},
	{"value length differs", "{2, 5, 8}, {2, 7, 8}, {2, 6, 4}, None, is_causal=False, enable_gqa=False",
	 "Expected size for first two dimensions of batch2 tensor to be: [2, 7] but got: [2, 6]."},
	{"a mask of another batch",
	 "{2, 8, 5, 7}, {2, 8, 7, 7}, {2, 8, 7, 7}, bool{3, 8, 5, 7}, is_causal=False, enable_gqa=False",
	 "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"},
	{"a mask that grows the scores",
	 "{2, 8, 5, 7}, {2, 8, 7, 7}, {2, 8, 7, 7}, bool{4, 2, 8, 5, 7}, is_causal=False, enable_gqa=False",
	 "output with shape [2, 8, 5, 7] doesn't match the broadcast shape [4, 2, 8, 5, 7]"},
};

ParameterizedTestParameters(ops_attention, errors_are_pytorch_s)
{
	return cr_make_param_array(error_case, error_cases, sizeof(error_cases) / sizeof(error_cases[0]));
}

ParameterizedTest(const error_case *c, ops_attention, errors_are_pytorch_s)
{
	ti_status st = run("scaled_dot_product_attention", c->args);
	cr_expect(st == TI_E_SHAPE, "%s: got %s, want a shape error", c->what, ti_status_name(st));
	cr_expect(!strcmp(err.message, c->message), "%s: got \"%s\", want \"%s\"", c->what, err.message, c->message);
}

Test(ops_attention, scale_and_enable_gqa_are_keyword_only)
{
	EXPECT_STATUS(run("scaled_dot_product_attention", "{2, 3}, {2, 3}, {2, 3}, None, 0.0, False, 0.5"), TI_E_CORRUPT,
	              err);
	EXPECT_STATUS(run("scaled_dot_product_attention", "{2, 3}, {2, 3}, {2, 3}, scale=0.5, dropout_p=0.1"), TI_OK, err);
}
