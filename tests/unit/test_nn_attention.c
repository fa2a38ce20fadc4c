/*
 * test_nn_attention.c - MultiheadAttention (src/nn/attention.c).
 *
 * State dicts, shapes, strides and messages were read from PyTorch 1.13 on
 * the meta device in eval mode; the is_causal hint, the key padding mask's
 * message and the constructor's positive-size check are 2.x's
 * torch/nn/functional.py and activation.py.
 */
#include "ops_cases.h"

TestSuite(nn_attention, .init = setup, .fini = teardown);

static ti_module *attention(const char *ctor) { return module("MultiheadAttention", ctor); }

/* The layout of output i of two, or "None". */
static const char *layout(int i)
{
	cr_assert(call.output_count == 2, "two outputs, got %d", call.output_count);
	return layout_text(&call.outputs[i]);
}

/* mha(x, x, x, keywords): one tensor as query, key and value, as in self-attention. */
static ti_status self_attention(const ti_module *mha, const char *x, const char *keywords)
{
	ti_arg args[TI_OP_MAX_PARAMS];
	cr_assert(parse_args(x, args) == 1, "one tensor");
	args[1] = args[2] = args[0];
	int n = 3 + parse_args(keywords, args + 3);
	return ti_module_call(&ctx, mha, args, n, &call, &err);
}

/* ---- construction ---- */

Test(nn_attention, parameters_follow_the_state_dict)
{
	EXPECT_STR(tensors_text(attention("16, 4")),
	           "in_proj_weight[48, 16] in_proj_bias[48] out_proj.weight[16, 16] out_proj.bias[16]");
	EXPECT_STR(tensors_text(attention("16, 4, add_bias_kv=True, kdim=8")),
	           "q_proj_weight[16, 16] k_proj_weight[16, 8] v_proj_weight[16, 16] in_proj_bias[48] bias_k[1, 1, 16] "
	           "bias_v[1, 1, 16] out_proj.weight[16, 16] out_proj.bias[16]");
	EXPECT_STR(tensors_text(attention("16, 4, bias=False")), "in_proj_weight[48, 16] out_proj.weight[16, 16]");
}

Test(nn_attention, heads_must_divide_the_embedding)
{
	EXPECT_STATUS(build_module("MultiheadAttention", "16, 5", NULL), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "embed_dim must be divisible by num_heads");
	EXPECT_STATUS(build_module("MultiheadAttention", "0, 4", NULL), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "embed_dim and num_heads must be greater than 0, got embed_dim=0 and num_heads=4 instead");
}

/* ---- shapes ---- */

Test(nn_attention, sequence_first_inputs_give_averaged_weights)
{
	ASSERT_STATUS(call_module(attention("16, 4"), "{5, 2, 16}, {7, 2, 16}, {7, 2, 16}"), TI_OK, err);
	EXPECT_STR(layout(0), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_STR(layout(1), "[2, 5, 7]/[35, 7, 1]");
	/* projections 2560 + 3584 + 3584 + 2560; attention 8 heads * 35 scores * (4 + 4) */
	EXPECT_INT(call.macs.value, 12288 + 2240);
	EXPECT_INT(call.flops.value, 2 * (12288 + 2240) + 8 * 35 * 4);
}

Test(nn_attention, batch_first_returns_a_transposed_output)
{
	ti_module *mha = attention("16, 4, batch_first=True");
	ASSERT_STATUS(call_module(mha, "{2, 5, 16}, {2, 7, 16}, {2, 7, 16}"), TI_OK, err);
	EXPECT_STR(layout(0), "[2, 5, 16]/[16, 32, 1]");
	EXPECT_STR(layout(1), "[2, 5, 7]/[35, 7, 1]");
	ASSERT_STATUS(call_module(mha, "{2, 5, 16}, {2, 7, 16}, {2, 7, 16}, average_attn_weights=False"), TI_OK, err);
	EXPECT_STR(layout(1), "[2, 4, 5, 7]/[140, 35, 7, 1]");
	ASSERT_STATUS(call_module(mha, "{2, 5, 16}, {2, 7, 16}, {2, 7, 16}, need_weights=False"), TI_OK, err);
	EXPECT_STR(layout(1), "None");
}

Test(nn_attention, unbatched_inputs_drop_the_batch_dim)
{
	ti_module *mha = attention("16, 4, batch_first=True");
	ASSERT_STATUS(call_module(mha, "{5, 16}, {7, 16}, {7, 16}"), TI_OK, err);
	EXPECT_STR(layout(0), "[5, 16]/[16, 1]");
	EXPECT_STR(layout(1), "[5, 7]/[7, 1]");
	ASSERT_STATUS(call_module(mha, "{5, 16}, {7, 16}, {7, 16}, average_attn_weights=False"), TI_OK, err);
	EXPECT_STR(layout(1), "[4, 5, 7]/[35, 7, 1]");
}

Test(nn_attention, bias_kv_and_zero_attention_lengthen_the_keys)
{
	ti_module *mha = attention("16, 4, add_bias_kv=True, add_zero_attn=True");
	ASSERT_STATUS(call_module(mha, "{5, 2, 16}, {7, 2, 16}, {7, 2, 16}, key_padding_mask={2, 7}, attn_mask={5, 7}"),
	              TI_OK, err);
	EXPECT_STR(layout(0), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_STR(layout(1), "[2, 5, 9]/[45, 9, 1]");
}

Test(nn_attention, separate_key_and_value_sizes_count_their_projections)
{
	ti_module *mha = attention("16, 4, kdim=8, vdim=12");
	ASSERT_STATUS(call_module(mha, "{5, 2, 16}, {7, 2, 8}, {7, 2, 12}, need_weights=False"), TI_OK, err);
	EXPECT_STR(layout(0), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_INT(call.macs.value, 2560 + 14 * 8 * 16 + 14 * 12 * 16 + 2560 + 2240);
}

Test(nn_attention, the_causal_hint_halves_the_scores_without_weights)
{
	ti_module *mha = attention("16, 4");
	ASSERT_STATUS(self_attention(mha, "{5, 2, 16}", "need_weights=False, attn_mask={5, 5}, is_causal=True"), TI_OK,
	              err);
	/* projections 4 * 2560; attention 8 heads * (25 // 2) scores * 8 */
	EXPECT_INT(call.macs.value, 4 * 2560 + 8 * 12 * 8);
	ASSERT_STATUS(self_attention(mha, "{5, 2, 16}", "attn_mask={5, 5}, is_causal=True"), TI_OK, err);
	EXPECT_INT(call.macs.value, 4 * 2560 + 8 * 25 * 8);
}

/* ---- errors ---- */

typedef struct error_case {
	char what[48];
	char ctor[32];
	bool key_is_value; /* the key tensor is passed as the value too */
	char args[128];
	char message[240];
} error_case;

static const error_case error_cases[] = {
	{"query embedding", "16, 4", false,
	 "query={5, 2, 8}, key={7, 2, 8}, value={7, 2, 8}, is_causal=False",
	 "was expecting embedding dimension of 16, but got 8"},
	{"key and value shapes", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={6, 2, 16}, is_causal=False",
	 "key shape torch.Size([7, 2, 16]) does not match value shape torch.Size([6, 2, 16])"},
	{"key embedding", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 8}, value={7, 2, 8}, is_causal=False",
	 "mat1 and mat2 shapes cannot be multiplied (14x8 and 16x16)"},
	{"key embedding, key is value", "16, 4", true,
	 "query={5, 2, 16}, key={7, 2, 8}, value={7, 2, 8}, is_causal=False",
	 "mat1 and mat2 shapes cannot be multiplied (14x8 and 16x32)"},
	{"separate: sequence and batch", "16, 4, kdim=8", false,
	 "query={5, 2, 16}, key={7, 2, 8}, value={6, 2, 16}, is_causal=False",
	 "key's sequence and batch dims torch.Size([7, 2]) do not match value's torch.Size([6, 2])"},
	{"separate: key weights", "16, 4, kdim=8", false,
	 "query={5, 2, 16}, key={7, 2, 9}, value={7, 2, 16}, is_causal=False",
	 "expecting key weights shape of (16, 9), but got torch.Size([16, 8])"},
	{"2-d mask", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, attn_mask={3, 4}, is_causal=False",
	 "The shape of the 2D attn_mask is torch.Size([3, 4]), but should be (5, 7)."},
	{"3-d mask", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, attn_mask={3, 3, 4}, is_causal=False",
	 "The shape of the 3D attn_mask is torch.Size([3, 3, 4]), but should be (8, 5, 7)."},
	{"padding mask batch", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, key_padding_mask=bool{3, 4}, is_causal=False",
	 "Expected key_padded_mask.shape[0] to be 2, but got 3"},
	{"padding mask length", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, key_padding_mask=bool{2, 4}, is_causal=False",
	 "Expected key_padded_mask.shape[1] to be 7, but got 4"},
	{"integer padding mask", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, key_padding_mask=int64{2, 7}, is_causal=False",
	 "only bool and floating types of key_padding_mask are supported"},
	{"batched query, unbatched key", "16, 4", false,
	 "query={5, 2, 16}, key={7, 16}, value={7, 16}, is_causal=False",
	 "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and 2-D tensors respectively"},
	{"unbatched 3-d mask", "16, 4", false,
	 "query={5, 16}, key={7, 16}, value={7, 16}, attn_mask={3, 5, 7}, is_causal=False",
	 "Expected `attn_mask` shape to be (4, 5, 7) but got torch.Size([3, 5, 7])"},
	{"4-d query", "16, 4", false,
	 "query={5, 2, 2, 16}, key={7, 16}, value={7, 16}, is_causal=False",
	 "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor"},
	{"causal hint without a mask", "16, 4", false,
	 "query={5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, is_causal=True",
	 "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
	 "`generate_square_subsequent_mask` to create this mask."},
	{"half query", "16, 4", false,
	 "query=float16{5, 2, 16}, key={7, 2, 16}, value={7, 2, 16}, is_causal=False",
	 "mat1 and mat2 must have the same dtype, but got Half and Float"},
};

ParameterizedTestParameters(nn_attention, errors_are_pytorch_s)
{
	return cr_make_param_array(error_case, error_cases, sizeof(error_cases) / sizeof(error_cases[0]));
}

ParameterizedTest(const error_case *c, nn_attention, errors_are_pytorch_s)
{
	ti_module *mha = attention(c->ctor);
	ti_arg args[TI_OP_MAX_PARAMS];
	int n = parse_args(c->args, args);
	if (c->key_is_value)
		args[2] = ti_arg_named("value", args[1]);
	ti_status st = ti_module_call(&ctx, mha, args, n, &call, &err);
	cr_expect(st == TI_E_SHAPE, "%s: got %s, want a shape error", c->what, ti_status_name(st));
	cr_expect(!strcmp(err.message, c->message), "%s: got \"%s\", want \"%s\"", c->what, err.message, c->message);
}

Test(nn_attention, the_key_batch_must_be_the_query_batch)
{
	EXPECT_STATUS(call_module(attention("16, 4"), "{5, 2, 16}, {6, 3, 16}, {6, 3, 16}"), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "shape '[6, 8, 4]' is invalid for input of size 288");
	EXPECT_STATUS(call_module(attention("16, 4, kdim=8"), "{5, 2, 16}, {6, 1, 8}, {6, 1, 16}"), TI_E_SHAPE, err);
	EXPECT_STR(err.message, "shape '[6, 8, 4]' is invalid for input of size 96");
	EXPECT_STATUS(call_module(attention("16, 4, add_bias_kv=True"), "{5, 2, 16}, {6, 3, 16}, {6, 3, 16}"),
	              TI_E_SHAPE, err);
	EXPECT_STR(err.message,
	           "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor number 1 "
	           "in the list.");
}
