/*
 * test_nn_transformer.c - the Transformer family (src/nn/transformer.c).
 *
 * State dict names, shapes, strides and messages were read from PyTorch 1.13
 * modules on the meta device in eval mode; bias=False and the mask dtype
 * message are 2.x's. TransformerEncoder and TransformerDecoder take the
 * layer's arguments here (see the source), and were compared with the
 * state_dict of the same stack built from a layer in PyTorch.
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
	ti_arena_init(&arena, (size_t)1 << 26);
	ti_symctx_init(&sym, &arena);
	ctx = (ti_shape_ctx){&arena, &sym, TI_DT_FLOAT32, NULL, NULL};
	ti_error_clear(&err);
}

static void teardown(void) { ti_arena_release(&arena); }

TestSuite(nn_transformer, .init = setup, .fini = teardown);

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

static ti_module *module(const char *type, const ti_arg *args, int n)
{
	ti_module *m = NULL;
	ti_status st = ti_module_new_leaf(&ctx, "tx", type, args, n, &m, &err);
	cr_assert(st == TI_OK, "%s(): got %s (\"%s\")", type, ti_status_name(st), err.message);
	return m;
}

#define MODULE(type, ...) module(type, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__))
#define NEW_FAILS(type, ...) ti_module_new_leaf(&ctx, "tx", type, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &(ti_module *){0}, &err)
#define FORWARD(m, ...) ti_module_call(&ctx, m, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &call, &err)
/* d_model 16, 4 heads, feed-forward 32 */
#define SMALL INT(16), INT(4)
#define FF32 KW("dim_feedforward", INT(32))

/* Names only, or with shapes ("name[3, 4]"). */
static const char *tensors_text(const ti_module *m, bool shapes)
{
	static char buf[8192];
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < m->tensor_count && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%s", i ? " " : "", m->tensors[i].name,
		                      shapes ? ti_meta_shape_str(&ctx, m->tensors[i].tensor) : "");
	return buf;
}

static const char *output_layout(void)
{
	cr_assert(call.output_count == 1 && call.outputs[0].kind == TI_ARG_TENSOR, "one tensor output");
	const ti_meta_tensor *t = call.outputs[0].as.tensor;
	return ti_arena_printf(&arena, "%s/%s", ti_meta_shape_str(&ctx, t), ti_shape_str(&ctx, t->ndim, t->stride));
}

#define EXPECT_FAILS(status, want)                                                                            \
	do {                                                                                                  \
		EXPECT_STATUS(status, TI_E_SHAPE, err);                                                       \
		EXPECT_STR(err.message, want);                                                                \
	} while (0)

/* ---- parameters ---- */

Test(nn_transformer, an_encoder_layer_declares_pytorch_s_state_dict)
{
	EXPECT_STR(tensors_text(MODULE("TransformerEncoderLayer", SMALL, INT(32)), true),
	           "self_attn.in_proj_weight[48, 16] self_attn.in_proj_bias[48] self_attn.out_proj.weight[16, 16] "
	           "self_attn.out_proj.bias[16] linear1.weight[32, 16] linear1.bias[32] linear2.weight[16, 32] "
	           "linear2.bias[16] norm1.weight[16] norm1.bias[16] norm2.weight[16] norm2.bias[16]");
	EXPECT_STR(tensors_text(MODULE("TransformerEncoderLayer", SMALL, FF32, KW("bias", BOOL(false))), false),
	           "self_attn.in_proj_weight self_attn.out_proj.weight linear1.weight linear2.weight norm1.weight "
	           "norm2.weight");
}

Test(nn_transformer, a_decoder_layer_adds_cross_attention_and_a_third_norm)
{
	EXPECT_STR(tensors_text(MODULE("TransformerDecoderLayer", SMALL, FF32), false),
	           "self_attn.in_proj_weight self_attn.in_proj_bias self_attn.out_proj.weight self_attn.out_proj.bias "
	           "multihead_attn.in_proj_weight multihead_attn.in_proj_bias multihead_attn.out_proj.weight "
	           "multihead_attn.out_proj.bias linear1.weight linear1.bias linear2.weight linear2.bias norm1.weight "
	           "norm1.bias norm2.weight norm2.bias norm3.weight norm3.bias");
}

Test(nn_transformer, stacks_number_their_layers)
{
	const char *names = tensors_text(MODULE("TransformerEncoder", SMALL, INT(2), FF32, KW("norm", BOOL(true))), false);
	EXPECT_CONTAINS(names, "layers.0.self_attn.in_proj_weight layers.0.self_attn.in_proj_bias");
	EXPECT_CONTAINS(names, "layers.0.norm2.bias layers.1.self_attn.in_proj_weight");
	EXPECT_CONTAINS(names, "layers.1.norm2.bias norm.weight norm.bias");
	EXPECT_INT(MODULE("TransformerDecoder", SMALL, INT(3), FF32)->tensor_count, 3 * 18);
}

Test(nn_transformer, a_transformer_has_an_encoder_and_a_decoder_with_norms)
{
	EXPECT_STR(tensors_text(MODULE("Transformer", SMALL, INT(1), INT(1), INT(32)), false),
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
	EXPECT_FAILS(NEW_FAILS("TransformerEncoderLayer", INT(16), INT(5)), "embed_dim must be divisible by num_heads");
	EXPECT_FAILS(NEW_FAILS("TransformerDecoderLayer", SMALL, KW("activation", ti_arg_str("tanh"))),
	             "activation should be relu/gelu, not tanh");
	EXPECT_STATUS(NEW_FAILS("Transformer", SMALL, KW("custom_encoder", ti_arg_str("enc"))), TI_E_UNSUPPORTED, err);
}

/* ---- forward ---- */

Test(nn_transformer, an_encoder_layer_keeps_the_shape_and_counts_its_parts)
{
	ASSERT_STATUS(FORWARD(MODULE("TransformerEncoderLayer", SMALL, FF32), F32(5, 2, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[5, 2, 16]/[32, 16, 1]");
	/* attention: projections 4 * 10 * 16 * 16, scores 8 heads * 25 * (4 + 4); feed-forward 2 * 10 * 16 * 32 */
	int64_t macs = 4 * 2560 + 1600 + 10240;
	EXPECT_INT(call.macs.value, macs);
	/* softmax 8 * 25 * 4, two layer norms 7 * 160, two residuals 160, the activation 10 * 32 */
	EXPECT_INT(call.flops.value, 2 * macs + 800 + 2 * 1120 + 2 * 160 + 320);
}

Test(nn_transformer, batch_first_and_unbatched_inputs_come_out_contiguous)
{
	ti_module *first = MODULE("TransformerEncoderLayer", SMALL, FF32, KW("batch_first", BOOL(true)));
	ASSERT_STATUS(FORWARD(first, F32(2, 5, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[2, 5, 16]/[80, 16, 1]");
	ti_module *norm_first = MODULE("TransformerEncoderLayer", SMALL, FF32, KW("batch_first", BOOL(true)),
	                               KW("norm_first", BOOL(true)));
	ASSERT_STATUS(FORWARD(norm_first, F32(2, 5, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[2, 5, 16]/[80, 16, 1]");
	ASSERT_STATUS(FORWARD(MODULE("TransformerEncoderLayer", SMALL, FF32), F32(5, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[5, 16]/[16, 1]");
}

Test(nn_transformer, the_first_block_decides_which_check_fails)
{
	EXPECT_FAILS(FORWARD(MODULE("TransformerEncoderLayer", SMALL, FF32), F32(5, 2, 8)),
	             "was expecting embedding dimension of 16, but got 8");
	EXPECT_FAILS(FORWARD(MODULE("TransformerEncoderLayer", SMALL, FF32, KW("norm_first", BOOL(true))), F32(5, 2, 8)),
	             "Given normalized_shape=[16], expected input with shape [*, 16], but got input of size[5, 2, 8]");
	EXPECT_FAILS(FORWARD(MODULE("TransformerEncoderLayer", SMALL, FF32), F32(5, 2, 16),
	                     KW("src_key_padding_mask", tensor(TI_DT_INT64, SIZES(2, 5)))),
	             "only bool and floating types of src_key_padding_mask are supported");
}

Test(nn_transformer, a_decoder_layer_attends_to_the_memory)
{
	ti_module *decoder = MODULE("TransformerDecoderLayer", SMALL, FF32);
	ASSERT_STATUS(FORWARD(decoder, F32(4, 2, 16), F32(6, 2, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[4, 2, 16]/[32, 16, 1]");
	EXPECT_FAILS(FORWARD(decoder, F32(4, 2, 16), F32(6, 2, 8)), "mat1 and mat2 shapes cannot be multiplied (12x8 and 16x32)");
	EXPECT_FAILS(FORWARD(decoder, F32(4, 2, 16), F32(6, 3, 16)), "shape '[6, 8, 4]' is invalid for input of size 288");
}

Test(nn_transformer, an_encoder_stack_checks_its_mask_in_every_layer)
{
	ti_module *encoder = MODULE("TransformerEncoder", SMALL, INT(2), FF32);
	ASSERT_STATUS(FORWARD(encoder, F32(5, 2, 16), KW("mask", F32(5, 5))), TI_OK, err);
	EXPECT_STR(output_layout(), "[5, 2, 16]/[32, 16, 1]");
	EXPECT_FAILS(FORWARD(encoder, F32(5, 2, 16), KW("mask", F32(5, 4))),
	             "The shape of the 2D attn_mask is torch.Size([5, 4]), but should be (5, 5).");
	EXPECT_FAILS(FORWARD(encoder, F32(5, 2, 16), KW("mask", tensor(TI_DT_INT64, SIZES(5, 5)))),
	             "only bool and floating types of mask are supported");
}

Test(nn_transformer, a_transformer_runs_the_decoder_on_the_encoder_memory)
{
	ti_module *transformer = MODULE("Transformer", SMALL, INT(1), INT(1), INT(32));
	ASSERT_STATUS(FORWARD(transformer, F32(6, 2, 16), F32(4, 2, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[4, 2, 16]/[32, 16, 1]");
	ti_module *first = MODULE("Transformer", SMALL, INT(1), INT(1), INT(32), KW("batch_first", BOOL(true)));
	ASSERT_STATUS(FORWARD(first, F32(2, 6, 16), F32(2, 4, 16)), TI_OK, err);
	EXPECT_STR(output_layout(), "[2, 4, 16]/[64, 16, 1]");
	EXPECT_FAILS(FORWARD(transformer, F32(6, 2, 16), F32(4, 3, 16)), "the batch number of src and tgt must be equal");
	EXPECT_FAILS(FORWARD(transformer, F32(6, 2, 16), F32(4, 2, 8)),
	             "the feature number of src and tgt must be equal to d_model");
}

Test(nn_transformer, symbolic_lengths_need_no_assumption)
{
	ti_dim shape[3] = {ti_dim_symbol(&sym, "T"), ti_dim_symbol(&sym, "N"), ti_dim_int(16)};
	const ti_meta_tensor *src = ti_meta_new(&ctx, TI_DT_FLOAT32, 3, shape);
	ASSERT_STATUS(FORWARD(MODULE("TransformerEncoder", SMALL, INT(2), FF32), ti_arg_tensor(src)), TI_OK, err);
	EXPECT_STR(output_layout(), "[T, N, 16]/[16*N, 16, 1]");
	EXPECT_INT(sym.assumption_count, 0);
	/* per layer: projections 4 * 256 and feed-forward 2 * 512 per token; 4 heads * T * T scores * (4 + 4) per batch */
	EXPECT_STR(ti_dim_str(&sym, call.macs), "64*T**2*N + 4096*T*N");
}
