/*
 * test_nn_attention.c - MultiheadAttention (src/nn/attention.c).
 *
 * State dicts, shapes, strides and messages were read from PyTorch 1.13 on
 * the meta device in eval mode; the is_causal hint, the key padding mask's
 * message and the constructor's positive-size check are 2.x's
 * torch/nn/functional.py and activation.py.
 */
#include <stdio.h>

#include "nn/module.h"
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

TestSuite(nn_attention, .init = setup, .fini = teardown);

#define COUNT(...) (int)(sizeof((ti_arg[]){__VA_ARGS__}) / sizeof(ti_arg))
#define KW(name, value) ti_arg_named(name, value)
#define INT(v) ti_arg_int(v)
#define BOOL(v) ti_arg_bool(v)

static ti_arg tensor(ti_dtype dtype, int ndim, const int64_t *sizes)
{
	ti_dim shape[8];
	for (int i = 0; i < ndim; i++)
		shape[i] = ti_dim_int(sizes[i]);
	const ti_meta_tensor *t = ti_meta_new(&ctx, dtype, ndim, shape);
	cr_assert(t != NULL);
	return ti_arg_tensor(t);
}

#define SIZES(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define F32(...) tensor(TI_DT_FLOAT32, SIZES(__VA_ARGS__))

static ti_module *module(const ti_arg *args, int n)
{
	ti_module *m = NULL;
	ti_status st = ti_module_new_leaf(&ctx, "attn", "MultiheadAttention", args, n, &m, &err);
	cr_assert(st == TI_OK, "got %s (\"%s\")", ti_status_name(st), err.message);
	return m;
}

#define MHA(...) module((ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__))
#define NEW_FAILS(...)                                                                                        \
	ti_module_new_leaf(&ctx, "attn", "MultiheadAttention", (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__),   \
	                   &(ti_module *){0}, &err)
#define FORWARD(m, ...) ti_module_call(&ctx, m, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &call, &err)

static const char *tensors_text(const ti_module *m)
{
	char buf[1024] = "";
	size_t n = 0;
	for (int i = 0; i < m->tensor_count && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%s", i ? " " : "", m->tensors[i].name,
		                      ti_meta_shape_str(&ctx, m->tensors[i].tensor));
	return ti_arena_strdup(&arena, buf);
}

/* "shape/strides", or "None". */
static const char *layout(int i)
{
	cr_assert(call.output_count == 2, "two outputs, got %d", call.output_count);
	const ti_arg *a = &call.outputs[i];
	if (a->kind == TI_ARG_NONE)
		return "None";
	cr_assert(a->kind == TI_ARG_TENSOR, "a tensor output");
	const ti_meta_tensor *t = a->as.tensor;
	return ti_arena_printf(&arena, "%s/%s", ti_meta_shape_str(&ctx, t), ti_shape_str(&ctx, t->ndim, t->stride));
}

/* ---- construction ---- */

Test(nn_attention, parameters_follow_the_state_dict)
{
	EXPECT_STR(tensors_text(MHA(INT(16), INT(4))),
	           "in_proj_weight[48, 16] in_proj_bias[48] out_proj.weight[16, 16] out_proj.bias[16]");
	EXPECT_STR(tensors_text(MHA(INT(16), INT(4), KW("add_bias_kv", BOOL(true)), KW("kdim", INT(8)))),
	           "q_proj_weight[16, 16] k_proj_weight[16, 8] v_proj_weight[16, 16] in_proj_bias[48] bias_k[1, 1, 16] "
	           "bias_v[1, 1, 16] out_proj.weight[16, 16] out_proj.bias[16]");
	EXPECT_STR(tensors_text(MHA(INT(16), INT(4), KW("bias", BOOL(false)))), "in_proj_weight[48, 16] out_proj.weight[16, 16]");
}

Test(nn_attention, heads_must_divide_the_embedding)
{
	EXPECT_STATUS(NEW_FAILS(INT(16), INT(5)), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "embed_dim must be divisible by num_heads");
	EXPECT_STATUS(NEW_FAILS(INT(0), INT(4)), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "embed_dim and num_heads must be greater than 0, got embed_dim=0 and num_heads=4 instead");
}

/* ---- shapes ---- */

Test(nn_attention, sequence_first_inputs_give_averaged_weights)
{
	ASSERT_STATUS(FORWARD(MHA(INT(16), INT(4)), F32(5, 2, 16), F32(7, 2, 16), F32(7, 2, 16)), TI_OK, err);
	EXPECT_STR(layout(0), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_STR(layout(1), "[2, 5, 7]/[35, 7, 1]");
	/* projections 2560 + 3584 + 3584 + 2560; attention 8 heads * 35 scores * (4 + 4) */
	EXPECT_INT(call.macs.value, 12288 + 2240);
	EXPECT_INT(call.flops.value, 2 * (12288 + 2240) + 8 * 35 * 4);
}

Test(nn_attention, batch_first_returns_a_transposed_output)
{
	ti_module *mha = MHA(INT(16), INT(4), KW("batch_first", BOOL(true)));
	ASSERT_STATUS(FORWARD(mha, F32(2, 5, 16), F32(2, 7, 16), F32(2, 7, 16)), TI_OK, err);
	EXPECT_STR(layout(0), "[2, 5, 16]/[16, 32, 1]");
	EXPECT_STR(layout(1), "[2, 5, 7]/[35, 7, 1]");
	ASSERT_STATUS(FORWARD(mha, F32(2, 5, 16), F32(2, 7, 16), F32(2, 7, 16), KW("average_attn_weights", BOOL(false))),
	              TI_OK, err);
	EXPECT_STR(layout(1), "[2, 4, 5, 7]/[140, 35, 7, 1]");
	ASSERT_STATUS(FORWARD(mha, F32(2, 5, 16), F32(2, 7, 16), F32(2, 7, 16), KW("need_weights", BOOL(false))), TI_OK, err);
	EXPECT_STR(layout(1), "None");
}

Test(nn_attention, unbatched_inputs_drop_the_batch_dim)
{
	ti_module *mha = MHA(INT(16), INT(4), KW("batch_first", BOOL(true)));
	ASSERT_STATUS(FORWARD(mha, F32(5, 16), F32(7, 16), F32(7, 16)), TI_OK, err);
	EXPECT_STR(layout(0), "[5, 16]/[16, 1]");
	EXPECT_STR(layout(1), "[5, 7]/[7, 1]");
	ASSERT_STATUS(FORWARD(mha, F32(5, 16), F32(7, 16), F32(7, 16), KW("average_attn_weights", BOOL(false))), TI_OK, err);
	EXPECT_STR(layout(1), "[4, 5, 7]/[35, 7, 1]");
}

Test(nn_attention, bias_kv_and_zero_attention_lengthen_the_keys)
{
	ti_module *mha = MHA(INT(16), INT(4), KW("add_bias_kv", BOOL(true)), KW("add_zero_attn", BOOL(true)));
	ASSERT_STATUS(FORWARD(mha, F32(5, 2, 16), F32(7, 2, 16), F32(7, 2, 16), KW("key_padding_mask", F32(2, 7)),
	                      KW("attn_mask", F32(5, 7))),
	              TI_OK, err);
	EXPECT_STR(layout(0), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_STR(layout(1), "[2, 5, 9]/[45, 9, 1]");
}

Test(nn_attention, separate_key_and_value_sizes_count_their_projections)
{
	ti_module *mha = MHA(INT(16), INT(4), KW("kdim", INT(8)), KW("vdim", INT(12)));
	ASSERT_STATUS(FORWARD(mha, F32(5, 2, 16), F32(7, 2, 8), F32(7, 2, 12), KW("need_weights", BOOL(false))), TI_OK, err);
	EXPECT_STR(layout(0), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_INT(call.macs.value, 2560 + 14 * 8 * 16 + 14 * 12 * 16 + 2560 + 2240);
}

Test(nn_attention, the_causal_hint_halves_the_scores_without_weights)
{
	ti_arg x = F32(5, 2, 16);
	ti_module *mha = MHA(INT(16), INT(4));
	ASSERT_STATUS(FORWARD(mha, x, x, x, KW("need_weights", BOOL(false)), KW("attn_mask", F32(5, 5)),
	                      KW("is_causal", BOOL(true))),
	              TI_OK, err);
	/* projections 4 * 2560; attention 8 heads * (25 // 2) scores * 8 */
	EXPECT_INT(call.macs.value, 4 * 2560 + 8 * 12 * 8);
	ASSERT_STATUS(FORWARD(mha, x, x, x, KW("attn_mask", F32(5, 5)), KW("is_causal", BOOL(true))), TI_OK, err);
	EXPECT_INT(call.macs.value, 4 * 2560 + 8 * 25 * 8);
}

/* ---- errors ---- */

typedef struct error_case {
	char what[48];
	int kdim;             /* 0: embed_dim */
	bool key_is_value;
	int ranks[5];         /* query, key, value, key_padding_mask, attn_mask */
	int64_t sizes[5][4];
	ti_dtype dtypes[5];
	bool causal;
	char message[240];
} error_case;

#define FLOATS {TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_BOOL, TI_DT_FLOAT32}

static const error_case error_cases[] = {
	{"query embedding", 0, false, {3, 3, 3}, {{5, 2, 8}, {7, 2, 8}, {7, 2, 8}}, FLOATS, false,
	 "was expecting embedding dimension of 16, but got 8"},
	{"key and value shapes", 0, false, {3, 3, 3}, {{5, 2, 16}, {7, 2, 16}, {6, 2, 16}}, FLOATS, false,
	 "key shape torch.Size([7, 2, 16]) does not match value shape torch.Size([6, 2, 16])"},
	{"key embedding", 0, false, {3, 3, 3}, {{5, 2, 16}, {7, 2, 8}, {7, 2, 8}}, FLOATS, false,
	 "mat1 and mat2 shapes cannot be multiplied (14x8 and 16x16)"},
	{"key embedding, key is value", 0, true, {3, 3, 3}, {{5, 2, 16}, {7, 2, 8}, {7, 2, 8}}, FLOATS, false,
	 "mat1 and mat2 shapes cannot be multiplied (14x8 and 16x32)"},
	{"separate: sequence and batch", 8, false, {3, 3, 3}, {{5, 2, 16}, {7, 2, 8}, {6, 2, 16}}, FLOATS, false,
	 "key's sequence and batch dims torch.Size([7, 2]) do not match value's torch.Size([6, 2])"},
	{"separate: key weights", 8, false, {3, 3, 3}, {{5, 2, 16}, {7, 2, 9}, {7, 2, 16}}, FLOATS, false,
	 "expecting key weights shape of (16, 9), but got torch.Size([16, 8])"},
	{"2-d mask", 0, false, {3, 3, 3, 0, 2}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}, {0}, {3, 4}}, FLOATS, false,
	 "The shape of the 2D attn_mask is torch.Size([3, 4]), but should be (5, 7)."},
	{"3-d mask", 0, false, {3, 3, 3, 0, 3}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}, {0}, {3, 3, 4}}, FLOATS, false,
	 "The shape of the 3D attn_mask is torch.Size([3, 3, 4]), but should be (8, 5, 7)."},
	{"padding mask batch", 0, false, {3, 3, 3, 2}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}, {3, 4}}, FLOATS, false,
	 "Expected key_padded_mask.shape[0] to be 2, but got 3"},
	{"padding mask length", 0, false, {3, 3, 3, 2}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}, {2, 4}}, FLOATS, false,
	 "Expected key_padded_mask.shape[1] to be 7, but got 4"},
	{"integer padding mask", 0, false, {3, 3, 3, 2}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}, {2, 7}},
	 {TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_FLOAT32, TI_DT_INT64}, false,
	 "only bool and floating types of key_padding_mask are supported"},
	{"batched query, unbatched key", 0, false, {3, 2, 2}, {{5, 2, 16}, {7, 16}, {7, 16}}, FLOATS, false,
	 "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D tensors respectively"},
	{"unbatched 3-d mask", 0, false, {2, 2, 2, 0, 3}, {{5, 16}, {7, 16}, {7, 16}, {0}, {3, 5, 7}}, FLOATS, false,
	 "Expected `attn_mask` shape to be (4, 5, 7) but got torch.Size([3, 5, 7])"},
	{"4-d query", 0, false, {4, 2, 2}, {{5, 2, 2, 16}, {7, 16}, {7, 16}}, FLOATS, false,
	 "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor"},
	{"causal hint without a mask", 0, false, {3, 3, 3}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}}, FLOATS, true,
	 "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
	 "`generate_square_subsequent_mask` to create this mask."},
	{"half query", 0, false, {3, 3, 3}, {{5, 2, 16}, {7, 2, 16}, {7, 2, 16}},
	 {TI_DT_FLOAT16, TI_DT_FLOAT32, TI_DT_FLOAT32}, false, "mat1 and mat2 must have the same dtype, but got Half and Float"},
};

ParameterizedTestParameters(nn_attention, errors_are_pytorch_s)
{
	return cr_make_param_array(error_case, error_cases, sizeof(error_cases) / sizeof(error_cases[0]));
}

ParameterizedTest(const error_case *c, nn_attention, errors_are_pytorch_s)
{
	ti_module *mha = c->kdim ? MHA(INT(16), INT(4), KW("kdim", INT(c->kdim))) : MHA(INT(16), INT(4));
	static const char *const names[5] = {"query", "key", "value", "key_padding_mask", "attn_mask"};
	ti_arg args[6];
	int n = 0;
	for (int i = 0; i < 5; i++)
		if (c->ranks[i])
			args[n++] = ti_arg_named(names[i], tensor(c->dtypes[i], c->ranks[i], c->sizes[i]));
	if (c->key_is_value)
		args[2] = ti_arg_named("value", args[1]);
	args[n++] = KW("is_causal", BOOL(c->causal));
	ti_status st = ti_module_call(&ctx, mha, args, n, &call, &err);
	cr_expect(st == TI_E_SHAPE, "%s: got %s, want a shape error", c->what, ti_status_name(st));
	cr_expect(!strcmp(err.message, c->message), "%s: got \"%s\", want \"%s\"", c->what, err.message, c->message);
}

Test(nn_attention, the_key_batch_must_be_the_query_batch)
{
	EXPECT_STATUS(FORWARD(MHA(INT(16), INT(4)), F32(5, 2, 16), F32(6, 3, 16), F32(6, 3, 16)), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "shape '[6, 8, 4]' is invalid for input of size 288");
	EXPECT_STATUS(FORWARD(MHA(INT(16), INT(4), KW("kdim", INT(8))), F32(5, 2, 16), F32(6, 1, 8), F32(6, 1, 16)),
	              TI_E_SHAPE, err);
	EXPECT_STR(err.message, "shape '[6, 8, 4]' is invalid for input of size 96");
	EXPECT_STATUS(FORWARD(MHA(INT(16), INT(4), KW("add_bias_kv", BOOL(true))), F32(5, 2, 16), F32(6, 3, 16),
	                      F32(6, 3, 16)),
	              TI_E_SHAPE, err);
	EXPECT_STR(err.message,
	           "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor number 1 "
	           "in the list.");
}
