/*
 * test_nn_transformer.c - the Transformer family (src/nn/transformer.c).
 *
 * State dict names, shapes, strides and messages were read from PyTorch 1.13
 * modules on the meta device in eval mode; bias=False and the mask dtype
 * message are 2.x's. TransformerEncoder and TransformerDecoder take the
 * layer's arguments here (see the source), and were compared with the
 * state_dict of the same stack built from a layer in PyTorch.
 */
#include "ops_cases.h"

TestSuite(nn_transformer, .init = setup, .fini = teardown);

/* d_model 16, 4 heads, feed-forward 32 */
#define SMALL "16, 4, dim_feedforward=32"

/* ---- parameters ---- */

Test(nn_transformer, an_encoder_layer_declares_pytorch_s_state_dict)
{
	EXPECT_STR(tensors_text(module("TransformerEncoderLayer", "16, 4, 32")),
	           "self_attn.in_proj_weight[48, 16] self_attn.in_proj_bias[48] self_attn.out_proj.weight[16, 16] "
	           "self_attn.out_proj.bias[16] linear1.weight[32, 16] linear1.bias[32] linear2.weight[16, 32] "
	           "linear2.bias[16] norm1.weight[16] norm1.bias[16] norm2.weight[16] norm2.bias[16]");
	EXPECT_STR(tensor_names(module("TransformerEncoderLayer", SMALL ", bias=False")),
	           "self_attn.in_proj_weight self_attn.out_proj.weight linear1.weight linear2.weight norm1.weight "
	           "norm2.weight");
}

Test(nn_transformer, a_decoder_layer_adds_cross_attention_and_a_third_norm)
{
	EXPECT_STR(tensor_names(module("TransformerDecoderLayer", SMALL)),
	           "self_attn.in_proj_weight self_attn.in_proj_bias self_attn.out_proj.weight self_attn.out_proj.bias "
	           "multihead_attn.in_proj_weight multihead_attn.in_proj_bias multihead_attn.out_proj.weight "
	           "multihead_attn.out_proj.bias linear1.weight linear1.bias linear2.weight linear2.bias norm1.weight "
	           "norm1.bias norm2.weight norm2.bias norm3.weight norm3.bias");
}

Test(nn_transformer, stacks_number_their_layers)
{
	const char *names = tensor_names(module("TransformerEncoder", "16, 4, 2, dim_feedforward=32, norm=True"));
	EXPECT_CONTAINS(names, "layers.0.self_attn.in_proj_weight layers.0.self_attn.in_proj_bias");
	EXPECT_CONTAINS(names, "layers.0.norm2.bias layers.1.self_attn.in_proj_weight");
	EXPECT_CONTAINS(names, "layers.1.norm2.bias norm.weight norm.bias");
	EXPECT_INT(module("TransformerDecoder", "16, 4, 3, dim_feedforward=32")->tensor_count, 3 * 18);
}

Test(nn_transformer, a_transformer_has_an_encoder_and_a_decoder_with_norms)
{
	EXPECT_STR(tensor_names(module("Transformer", "16, 4, 1, 1, 32")),
	           "encoder.layers.0.self_attn.in_proj_weight encoder.layers.0.self_attn.in_proj_bias "
	           "encoder.layers.0.self_attn.out_proj.weight encoder.layers.0.self_attn.out_proj.bias "
	           "encoder.layers.0.linear1.weight encoder.layers.0.linear1.bias encoder.layers.0.linear2.weight "
	           "encoder.layers.0.linear2.bias encoder.layers.0.norm1.weight encoder.layers.0.norm1.bias "
	           "encoder.layers.0.norm2.weight encoder.layers.0.norm2.bias encoder.norm.weight encoder.norm.bias "
	           "decoder.layers.0.self_attn.in_proj_weight decoder.layers.0.self_attn.in_proj_bias "
	           "decoder.layers.0.self_attn.out_proj.weight decoder.layers.0.self_attn.out_proj.bias "
	           "decoder.layers.0.multihead_attn.in_proj_weight decoder.layers.0.multihead_attn.in_proj_bias "
	           "decoder.layers.0.multihead_attn.out_proj.weight decoder.layers.0.multihead_attn.out_proj.bias "
	           "decoder.layers.0.linear1.weight decoder.layers.0.linear1.bias decoder.layers.0.linear2.weight "
	           "decoder.layers.0.linear2.bias decoder.layers.0.norm1.weight decoder.layers.0.norm1.bias "
	           "decoder.layers.0.norm2.weight decoder.layers.0.norm2.bias decoder.layers.0.norm3.weight "
	           "decoder.layers.0.norm3.bias decoder.norm.weight decoder.norm.bias");
}

Test(nn_transformer, constructor_arguments_are_checked)
{
	EXPECT_FAILS(build_module("TransformerEncoderLayer", "16, 5", NULL),
	             "embed_dim must be divisible by num_heads");
	EXPECT_FAILS(build_module("TransformerDecoderLayer", "16, 4, activation='tanh'", NULL),
	             "activation should be relu/gelu, not tanh");
	EXPECT_STATUS(build_module("Transformer", "16, 4, custom_encoder='enc'", NULL), TI_E_UNSUPPORTED, err);
}

/* ---- forward ---- */

Test(nn_transformer, an_encoder_layer_keeps_the_shape_and_counts_its_parts)
{
	ASSERT_STATUS(call_module(module("TransformerEncoderLayer", SMALL), "{5, 2, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[5, 2, 16]/[32, 16, 1]");
	/* attention: projections 4 * 10 * 16 * 16, scores 8 heads * 25 * (4 + 4); feed-forward 2 * 10 * 16 * 32 */
	int64_t macs = 4 * 2560 + 1600 + 10240;
	EXPECT_INT(call.macs.value, macs);
	/* softmax 8 * 25 * 4, two layer norms 7 * 160, two residuals 160, the activation 10 * 32 */
	EXPECT_INT(call.flops.value, 2 * macs + 800 + 2 * 1120 + 2 * 160 + 320);
}

Test(nn_transformer, batch_first_and_unbatched_inputs_come_out_contiguous)
{
	ti_module *first = module("TransformerEncoderLayer", SMALL ", batch_first=True");
	ASSERT_STATUS(call_module(first, "{2, 5, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[2, 5, 16]/[80, 16, 1]");
	ti_module *norm_first = module("TransformerEncoderLayer", SMALL ", batch_first=True, norm_first=True");
	ASSERT_STATUS(call_module(norm_first, "{2, 5, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[2, 5, 16]/[80, 16, 1]");
	ASSERT_STATUS(call_module(module("TransformerEncoderLayer", SMALL), "{5, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[5, 16]/[16, 1]");
}

Test(nn_transformer, the_first_block_decides_which_check_fails)
{
	EXPECT_FAILS(call_module(module("TransformerEncoderLayer", SMALL), "{5, 2, 8}"),
	             "was expecting embedding dimension of 16, but got 8");
	EXPECT_FAILS(call_module(module("TransformerEncoderLayer", SMALL ", norm_first=True"), "{5, 2, 8}"),
	             "Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[5, 2, 8]");
	EXPECT_FAILS(call_module(module("TransformerEncoderLayer", SMALL),
	                         "{5, 2, 16}, src_key_padding_mask=int64{2, 5}"),
	             "only bool and floating types of src_key_padding_mask are supported");
}

Test(nn_transformer, a_decoder_layer_attends_to_the_memory)
{
	ti_module *decoder = module("TransformerDecoderLayer", SMALL);
	ASSERT_STATUS(call_module(decoder, "{4, 2, 16}, {6, 2, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[4, 2, 16]/[32, 16, 1]");
	EXPECT_FAILS(call_module(decoder, "{4, 2, 16}, {6, 2, 8}"),
	             "mat1 and mat2 shapes cannot be multiplied (12x8 and 16x32)");
	EXPECT_FAILS(call_module(decoder, "{4, 2, 16}, {6, 3, 16}"),
	             "shape '[6, 8, 4]' is invalid for input of size 288");
}

Test(nn_transformer, an_encoder_stack_checks_its_mask_in_every_layer)
{
	ti_module *encoder = module("TransformerEncoder", "16, 4, 2, dim_feedforward=32");
	ASSERT_STATUS(call_module(encoder, "{5, 2, 16}, mask={5, 5}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_FAILS(call_module(encoder, "{5, 2, 16}, mask={5, 4}"),
	             "The shape of the 2D attn_mask is torch.Size([5, 4]), but should be (5, 5).");
	EXPECT_FAILS(call_module(encoder, "{5, 2, 16}, mask=int64{5, 5}"),
	             "only bool and floating types of mask are supported");
}

Test(nn_transformer, a_transformer_runs_the_decoder_on_the_encoder_memory)
{
	ti_module *transformer = module("Transformer", "16, 4, 1, 1, 32");
	ASSERT_STATUS(call_module(transformer, "{6, 2, 16}, {4, 2, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[4, 2, 16]/[32, 16, 1]");
	ti_module *first = module("Transformer", "16, 4, 1, 1, 32, batch_first=True");
	ASSERT_STATUS(call_module(first, "{2, 6, 16}, {2, 4, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[2, 4, 16]/[64, 16, 1]");
	EXPECT_FAILS(call_module(transformer, "{6, 2, 16}, {4, 3, 16}"),
	             "the batch number of src and tgt must be equal");
	EXPECT_FAILS(call_module(transformer, "{6, 2, 16}, {4, 2, 8}"),
	             "the feature number of src and tgt must be equal to d_model");
}

Test(nn_transformer, symbolic_lengths_need_no_assumption)
{
	ti_module *encoder = module("TransformerEncoder", "16, 4, 2, dim_feedforward=32");
	ASSERT_STATUS(call_module(encoder, "{T, N, 16}"), TI_OK, err);
	EXPECT_STR(output_layout(), "[T, N, 16]/[16*N, 16, 1]");
	EXPECT_INT(sym.assumption_count, 0);
	/* per layer: projections 4 * 256 and feed-forward 2 * 512 per token; 4 heads * T * T scores * (4 + 4) per batch */
	EXPECT_STR(ti_dim_str(&sym, call.macs), "64*T**2*N + 4096*T*N");
}
