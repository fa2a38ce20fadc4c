/*
 * transformer.c - TransformerEncoderLayer, TransformerDecoderLayer,
 * TransformerEncoder, TransformerDecoder and Transformer
 * (torch/nn/modules/transformer.py, PyTorch 2.x).
 *
 * A description cannot pass a module as an argument, so TransformerEncoder
 * and TransformerDecoder take the layer's arguments and num_layers (and
 * norm=True for a final LayerNorm(d_model)) instead of encoder_layer and
 * norm modules; Transformer takes its own plain arguments. Each declares the
 * parameters of its whole tree under PyTorch's state_dict names
 * ("layers.0.self_attn.in_proj_weight", "encoder.norm.weight") in PyTorch's
 * order.
 *
 * Forward runs the layers as PyTorch does in eval mode: attention through a
 * MultiheadAttention of the same arguments (need_weights=False), layer_norm
 * with the layer's own weights, dropout as the identity. A causal hint of
 * None is taken as False: telling a causal mask by its values is data we do
 * not have.
 *
 * Counting: the attention's and layer_norm's own counts, plus the feed-forward
 * block, MACs 2 * tokens * d_model * dim_feedforward and FLOPs tokens *
 * dim_feedforward for the activation, plus one FLOP per element for each
 * residual addition.
 */
#include <string.h>

#include "nn/tables.h"

/* The constructor arguments every type here shares. */
typedef struct tx_config {
	int64_t d_model, nhead, feedforward;
	double dropout, eps;
	bool batch_first, norm_first, bias;
	ti_dtype dtype;
} tx_config;

static tx_config config_of(const ti_module *m)
{
	tx_config c = {
		.d_model = ti_module_dim(m, "d_model").value,
		.nhead = ti_module_dim(m, "nhead").value,
		.feedforward = ti_module_dim(m, "dim_feedforward").value,
		.dropout = ti_module_float(m, "dropout"),
		.eps = ti_module_float(m, "layer_norm_eps"),
		.batch_first = ti_module_bool(m, "batch_first"),
		.norm_first = ti_module_bool(m, "norm_first"),
		.bias = ti_module_bool(m, "bias"),
		.dtype = ti_module_dtype(m),
	};
	return c;
}

/* ---- parameters ---- */

typedef enum part_kind { PART_ATTENTION, PART_LINEAR1, PART_LINEAR2, PART_NORM } part_kind;
typedef enum size_kind { SIZE_NONE, SIZE_D, SIZE_3D, SIZE_FF } size_kind;

typedef struct layer_part {
	const char *name;
	part_kind kind;
} layer_part;

/* The sub-modules of each layer, in registration (state_dict) order. */
static const layer_part encoder_parts[] = {
	{"self_attn", PART_ATTENTION}, {"linear1", PART_LINEAR1}, {"linear2", PART_LINEAR2},
	{"norm1", PART_NORM}, {"norm2", PART_NORM}, {NULL, PART_NORM},
};
static const layer_part decoder_parts[] = {
	{"self_attn", PART_ATTENTION}, {"multihead_attn", PART_ATTENTION}, {"linear1", PART_LINEAR1},
	{"linear2", PART_LINEAR2}, {"norm1", PART_NORM}, {"norm2", PART_NORM}, {"norm3", PART_NORM}, {NULL, PART_NORM},
};

/* The tensors of each kind of part; biases go with bias=False (2.1+). */
static const struct {
	part_kind part;
	const char *name;
	size_kind rows, cols;
	bool is_bias;
} part_tensors[] = {
	{PART_ATTENTION, "in_proj_weight", SIZE_3D, SIZE_D, false}, {PART_ATTENTION, "in_proj_bias", SIZE_3D, SIZE_NONE, true},
	{PART_ATTENTION, "out_proj.weight", SIZE_D, SIZE_D, false}, {PART_ATTENTION, "out_proj.bias", SIZE_D, SIZE_NONE, true},
	{PART_LINEAR1, "weight", SIZE_FF, SIZE_D, false},           {PART_LINEAR1, "bias", SIZE_FF, SIZE_NONE, true},
	{PART_LINEAR2, "weight", SIZE_D, SIZE_FF, false},           {PART_LINEAR2, "bias", SIZE_D, SIZE_NONE, true},
	{PART_NORM, "weight", SIZE_D, SIZE_NONE, false},            {PART_NORM, "bias", SIZE_D, SIZE_NONE, true},
};

static int64_t size_of(const tx_config *c, size_kind kind)
{
	const int64_t sizes[] = {[SIZE_NONE] = 0, [SIZE_D] = c->d_model, [SIZE_3D] = 3 * c->d_model,
	                         [SIZE_FF] = c->feedforward};
	return sizes[kind];
}

/* Declares the tensors of one part as "<prefix><part>.<tensor>". */
static ti_status add_part(ti_module *m, const tx_config *c, const char *prefix, const char *part, part_kind kind,
                          ti_error *err)
{
	for (size_t i = 0; i < sizeof(part_tensors) / sizeof(part_tensors[0]); i++) {
		if (part_tensors[i].part != kind || (part_tensors[i].is_bias && !c->bias))
			continue;
		int64_t shape[2] = {size_of(c, part_tensors[i].rows), size_of(c, part_tensors[i].cols)};
		const char *name = ti_arena_printf(m->ctx->arena, "%s%s.%s", prefix, part, part_tensors[i].name);
		if (!name)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a parameter name");
		ti_status st = ti_module_add_param(m, name, c->dtype, shape[1] ? 2 : 1, shape, err);
		if (st)
			return st;
	}
	return TI_OK;
}

static ti_status add_layers(ti_module *m, const tx_config *c, const char *prefix, int64_t count, bool numbered,
                            const layer_part *parts, ti_error *err)
{
	for (int64_t i = 0; i < count; i++) {
		const char *layer = numbered ? ti_arena_printf(m->ctx->arena, "%slayers.%lld.", prefix, (long long)i) : prefix;
		if (!layer)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a parameter name");
		for (const layer_part *p = parts; p->name; p++) {
			ti_status st = add_part(m, c, layer, p->name, p->kind, err);
			if (st)
				return st;
		}
	}
	return TI_OK;
}

/* ---- the attention sub-module ---- */

/*
 * A MultiheadAttention with the layer's arguments: made at construction to
 * raise its checks, and at each forward to run it.
 */
static ti_status new_attention(ti_shape_ctx *ctx, const tx_config *c, const char *path, ti_module **out, ti_error *err)
{
	ti_arg args[] = {
		ti_arg_int(c->d_model), ti_arg_int(c->nhead), ti_arg_named("dropout", ti_arg_float(c->dropout)),
		ti_arg_named("bias", ti_arg_bool(c->bias)), ti_arg_named("batch_first", ti_arg_bool(c->batch_first)),
		ti_arg_named("dtype", ti_arg_dtype(c->dtype)),
	};
	return ti_module_new_leaf(ctx, path, "MultiheadAttention", args, (int)(sizeof(args) / sizeof(args[0])), out, err);
}

/* TransformerEncoderLayer.__init__'s checks, shared by every type here. */
static ti_status check_config(ti_module *m, const tx_config *c, ti_error *err)
{
	ti_module *attention;
	ti_status st = new_attention(m->ctx, c, m->path, &attention, err);
	if (st)
		return st;
	const char *activation = ti_module_str(m, "activation");
	if (activation && strcmp(activation, "relu") && strcmp(activation, "gelu"))
		return TI_FAIL(err, TI_E_SHAPE, "activation should be relu/gelu, not %s", activation);
	return TI_OK;
}

/* ---- forward building blocks ---- */

typedef struct tx_run {
	ti_op_call *call;
	const ti_module *m;
	tx_config c;
} tx_run;

static const char *joined(tx_run *r, const char *prefix, const char *name)
{
	return ti_arena_printf(r->call->ctx->arena, "%s%s", prefix, name);
}

static ti_status result_tensor(const ti_op_call *result, const ti_meta_tensor **out)
{
	*out = result->outputs[0].as.tensor;
	return TI_OK;
}

/* layer_norm with "<prefix><name>.weight" and ".bias". */
static ti_status layer_norm(tx_run *r, const char *prefix, const char *name, const ti_meta_tensor *x,
                            const ti_meta_tensor **out, ti_error *err)
{
	const char *part = joined(r, prefix, name);
	const char *weight = part ? joined(r, part, ".weight") : NULL, *bias = part ? joined(r, part, ".bias") : NULL;
	if (!weight || !bias)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a parameter name");
	const ti_meta_tensor *w = ti_module_tensor_get(r->m, weight), *b = ti_module_tensor_get(r->m, bias);
	ti_arg shape = ti_arg_int(r->c.d_model);
	ti_arg args[] = {
		ti_arg_tensor(x), ti_arg_list(&shape, 1), w ? ti_arg_tensor(w) : ti_arg_none(), b ? ti_arg_tensor(b) : ti_arg_none(),
		ti_arg_float(r->c.eps),
	};
	ti_op_call result;
	ti_status st = ti_call_op(r->call, "layer_norm", args, (int)(sizeof(args) / sizeof(args[0])), &result, err);
	return st ? st : result_tensor(&result, out);
}

static ti_arg tensor_or_none(const ti_meta_tensor *t) { return t ? ti_arg_tensor(t) : ti_arg_none(); }

/* The masks of one attention block. */
typedef struct attention_masks {
	const ti_meta_tensor *mask, *key_padding_mask;
	bool causal;
} attention_masks;

/* self_attn(query, key, key, ..., need_weights=False)[0], through a MultiheadAttention of the layer's arguments. */
static ti_status attention(tx_run *r, const char *prefix, const char *name, const ti_meta_tensor *query,
                           const ti_meta_tensor *key, const attention_masks *masks, const ti_meta_tensor **out,
                           ti_error *err)
{
	ti_shape_ctx *ctx = r->call->ctx;
	const char *path = ti_arena_printf(ctx->arena, "%s%s%s%s", r->m->path, r->m->path[0] ? "." : "", prefix, name);
	if (!path)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a module path");
	ti_module *mha;
	ti_status st = new_attention(ctx, &r->c, path, &mha, err);
	if (st)
		return st;
	ti_arg args[] = {
		ti_arg_tensor(query), ti_arg_tensor(key), ti_arg_tensor(key),
		ti_arg_named("key_padding_mask", tensor_or_none(masks->key_padding_mask)),
		ti_arg_named("need_weights", ti_arg_bool(false)), ti_arg_named("attn_mask", tensor_or_none(masks->mask)),
		ti_arg_named("is_causal", ti_arg_bool(masks->causal)),
	};
	ti_op_call result;
	if ((st = ti_module_call(ctx, mha, args, (int)(sizeof(args) / sizeof(args[0])), &result, err)))
		return st;
	ti_symctx *s = ctx->sym;
	r->call->macs = ti_dim_add(s, r->call->macs, result.macs);
	r->call->flops = ti_dim_add(s, r->call->flops, result.flops);
	r->call->counted = true;
	r->call->uncounted_part |= result.uncounted_part;
	return result_tensor(&result, out);
}

/* x + y: a new tensor of x's shape, one FLOP per element. */
static ti_status residual(tx_run *r, const ti_meta_tensor *x, const ti_meta_tensor *y, const ti_meta_tensor **out,
                          ti_error *err)
{
	ti_shape_ctx *ctx = r->call->ctx;
	ti_call_flops(r->call, ti_meta_numel(ctx, x));
	*out = ti_meta_new(ctx, ti_promote_types(x->dtype, y->dtype), x->ndim, x->shape);
	return *out ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory for a tensor");
}

/* linear2(dropout(activation(linear1(x)))): x's last dim is d_model, checked by the block before. */
static ti_status feed_forward(tx_run *r, const ti_meta_tensor *x, const ti_meta_tensor **out, ti_error *err)
{
	ti_shape_ctx *ctx = r->call->ctx;
	ti_symctx *s = ctx->sym;
	ti_dim tokens = ti_dim_int(1);
	for (int i = 0; i + 1 < x->ndim; i++)
		tokens = ti_dim_mul(s, tokens, x->shape[i]);
	ti_dim hidden = ti_dim_mul(s, tokens, ti_dim_int(r->c.feedforward));
	ti_call_macs(r->call, ti_dim_mul(s, hidden, ti_dim_int(2 * r->c.d_model)));
	ti_call_flops(r->call, hidden);
	*out = ti_meta_new(ctx, x->dtype, x->ndim, x->shape);
	return *out ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory for a tensor");
}

/*
 * One residual block: x + block(norm(x)) with norm_first, else
 * norm(x + block(x)). block is attention over key (NULL: x itself) with
 * masks, or the feed-forward block when masks is NULL.
 */
static ti_status residual_block(tx_run *r, const char *prefix, const char *norm, const char *attn,
                                const ti_meta_tensor *key, const attention_masks *masks, const ti_meta_tensor **x,
                                ti_error *err)
{
	const ti_meta_tensor *in = *x, *y, *sum;
	ti_status st;
	if (r->c.norm_first && (st = layer_norm(r, prefix, norm, *x, &in, err)))
		return st;
	if (masks)
		st = attention(r, prefix, attn, in, key ? key : in, masks, &y, err);
	else
		st = feed_forward(r, in, &y, err);
	if (!st)
		st = residual(r, *x, y, &sum, err);
	if (st)
		return st;
	if (r->c.norm_first) {
		*x = sum;
		return TI_OK;
	}
	return layer_norm(r, prefix, norm, sum, x, err);
}

static ti_status encoder_layer(tx_run *r, const char *prefix, const attention_masks *masks, const ti_meta_tensor **x,
                               ti_error *err)
{
	ti_status st = residual_block(r, prefix, "norm1", "self_attn", NULL, masks, x, err);
	return st ? st : residual_block(r, prefix, "norm2", NULL, NULL, NULL, x, err);
}

static ti_status decoder_layer(tx_run *r, const char *prefix, const ti_meta_tensor *memory,
                               const attention_masks masks[2], const ti_meta_tensor **x, ti_error *err)
{
	ti_status st = residual_block(r, prefix, "norm1", "self_attn", NULL, &masks[0], x, err);
	if (!st)
		st = residual_block(r, prefix, "norm2", "multihead_attn", memory, &masks[1], x, err);
	return st ? st : residual_block(r, prefix, "norm3", NULL, NULL, NULL, x, err);
}

/* An encoder layer, or with memory a decoder layer, under prefix. */
static ti_status run_layer(tx_run *r, const char *prefix, const ti_meta_tensor *memory, const attention_masks *masks,
                           const ti_meta_tensor **x, ti_error *err)
{
	return memory ? decoder_layer(r, prefix, memory, masks, x, err) : encoder_layer(r, prefix, masks, x, err);
}

/* The layers of a stack under "<prefix>layers.<i>.", then "<prefix>norm" when it has one. */
static ti_status run_stack(tx_run *r, const char *prefix, int64_t count, bool norm, const ti_meta_tensor *memory,
                           const attention_masks *masks, const ti_meta_tensor **x, ti_error *err)
{
	for (int64_t i = 0; i < count; i++) {
		const char *layer = ti_arena_printf(r->call->ctx->arena, "%slayers.%lld.", prefix, (long long)i);
		if (!layer)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a parameter name");
		ti_status st = run_layer(r, layer, memory, masks, x, err);
		if (st)
			return st;
	}
	return norm ? layer_norm(r, prefix, "norm", *x, x, err) : TI_OK;
}

/* _canonical_mask: masks are bool or floating. */
static ti_status check_mask_dtype(const ti_meta_tensor *mask, const char *name, ti_error *err)
{
	if (!mask || mask->dtype == TI_DT_BOOL || ti_dtype_is_floating(mask->dtype))
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "only bool and floating types of %s are supported", name);
}

/* An encoder's masks, checked under the names PyTorch's forward gives them. */
static ti_status encoder_masks(ti_op_call *call, const char *mask, const char *mask_name, const char *causal,
                               attention_masks *masks, ti_error *err)
{
	masks->mask = ti_call_tensor(call, mask);
	masks->key_padding_mask = ti_call_tensor(call, "src_key_padding_mask");
	masks->causal = ti_call_bool(call, causal);
	ti_status st = check_mask_dtype(masks->key_padding_mask, "src_key_padding_mask", err);
	return st ? st : check_mask_dtype(masks->mask, mask_name, err);
}

static void decoder_masks(ti_op_call *call, attention_masks masks[2])
{
	static const char *const names[2][3] = {
		{"tgt_mask", "tgt_key_padding_mask", "tgt_is_causal"},
		{"memory_mask", "memory_key_padding_mask", "memory_is_causal"},
	};
	for (int i = 0; i < 2; i++) {
		masks[i].mask = ti_call_tensor(call, names[i][0]);
		masks[i].key_padding_mask = ti_call_tensor(call, names[i][1]);
		masks[i].causal = ti_call_bool(call, names[i][2]);
	}
}

/* ---- the module types ---- */

static ti_status init_layer(ti_module *m, const layer_part *parts, ti_error *err)
{
	tx_config c = config_of(m);
	ti_status st = check_config(m, &c, err);
	return st ? st : add_layers(m, &c, "", 1, false, parts, err);
}

static ti_status init_encoder_layer(ti_module *m, ti_error *err) { return init_layer(m, encoder_parts, err); }
static ti_status init_decoder_layer(ti_module *m, ti_error *err) { return init_layer(m, decoder_parts, err); }

/* A stack: its layers, then "norm" when asked for one. */
static ti_status init_stack(ti_module *m, const layer_part *parts, ti_error *err)
{
	tx_config c = config_of(m);
	ti_status st = check_config(m, &c, err);
	if (!st)
		st = add_layers(m, &c, "", ti_module_dim(m, "num_layers").value, true, parts, err);
	if (!st && ti_module_bool(m, "norm"))
		st = add_part(m, &c, "", "norm", PART_NORM, err);
	return st;
}

static ti_status init_encoder(ti_module *m, ti_error *err) { return init_stack(m, encoder_parts, err); }
static ti_status init_decoder(ti_module *m, ti_error *err) { return init_stack(m, decoder_parts, err); }

/* nn.Transformer: an encoder and a decoder stack, each with a final LayerNorm. */
static ti_status init_transformer(ti_module *m, ti_error *err)
{
	tx_config c = config_of(m);
	ti_status st = check_config(m, &c, err);
	if (st)
		return st;
	if (!ti_module_is_none(m, "custom_encoder") || !ti_module_is_none(m, "custom_decoder"))
		return TI_FAIL(err, TI_E_UNSUPPORTED,
		               "Transformer(): custom_encoder and custom_decoder cannot be described; describe the stacks as "
		               "TransformerEncoder and TransformerDecoder instead");
	if (!(st = add_layers(m, &c, "encoder.", ti_module_dim(m, "num_encoder_layers").value, true, encoder_parts, err)) &&
	    !(st = add_part(m, &c, "encoder.", "norm", PART_NORM, err)) &&
	    !(st = add_layers(m, &c, "decoder.", ti_module_dim(m, "num_decoder_layers").value, true, decoder_parts, err)))
		st = add_part(m, &c, "decoder.", "norm", PART_NORM, err);
	return st;
}

/*
 * The forward of a layer (single) or of a stack of num_layers; a decoder
 * attends to memory. A layer's attention mask is src_mask, a stack's mask.
 */
static ti_status forward_layers(ti_op_call *call, const ti_module *m, bool decoder, bool single, ti_error *err)
{
	tx_run r = {call, m, config_of(m)};
	if (r.c.dropout > 0) /* same shapes; training adds masks (and turns the inference fast path off) */
		call->ctx->mode_dependent = true;
	attention_masks masks[2];
	const ti_meta_tensor *memory = NULL, *x;
	ti_status st = TI_OK;
	if (decoder) {
		decoder_masks(call, masks);
		memory = ti_call_tensor(call, "memory");
		x = ti_call_tensor(call, "tgt");
	} else {
		const char *mask = single ? "src_mask" : "mask";
		st = encoder_masks(call, mask, mask, "is_causal", &masks[0], err);
		x = ti_call_tensor(call, "src");
	}
	if (!st && single)
		st = run_layer(&r, "", memory, masks, &x, err);
	else if (!st)
		st = run_stack(&r, "", ti_module_dim(m, "num_layers").value, ti_module_bool(m, "norm"), memory, masks, &x, err);
	return st ? st : ti_call_output_tensor(call, x, err);
}

static ti_status encoder_layer_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	return forward_layers(call, m, false, true, err);
}

static ti_status decoder_layer_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	return forward_layers(call, m, true, true, err);
}

static ti_status encoder_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	return forward_layers(call, m, false, false, err);
}

static ti_status decoder_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	return forward_layers(call, m, true, false, err);
}

/* Transformer.forward: the batch and feature checks, the encoder, then the decoder on its memory. */
static ti_status transformer_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	tx_run r = {call, m, config_of(m)};
	if (r.c.dropout > 0)
		call->ctx->mode_dependent = true;
	ti_symctx *s = call->ctx->sym;
	const ti_meta_tensor *src = ti_call_tensor(call, "src"), *tgt = ti_call_tensor(call, "tgt");
	int batch_dim = r.c.batch_first ? 0 : 1, at;
	ti_status st;
	/* src.size(batch_dim) and tgt.size(batch_dim) are read whether or not the input is batched */
	const ti_meta_tensor *inputs[2] = {src, tgt};
	for (int i = 0; i < 2; i++) {
		const ti_meta_tensor *t = inputs[i];
		if (t->ndim == 0)
			return TI_FAIL(err, TI_E_SHAPE, "Dimension specified as %d but tensor has no dimensions", batch_dim);
		if ((st = ti_wrap_dim(batch_dim, t->ndim, &at, err)))
			return st;
	}
	if (src->ndim == 3 && !ti_dim_assume(s, src->shape[batch_dim], TI_CMP_EQ, tgt->shape[batch_dim]))
		return TI_FAIL(err, TI_E_SHAPE, "the batch number of src and tgt must be equal");
	ti_dim d = ti_dim_int(r.c.d_model);
	if (!ti_dim_assume(s, src->shape[src->ndim - 1], TI_CMP_EQ, d) ||
	    !ti_dim_assume(s, tgt->shape[tgt->ndim - 1], TI_CMP_EQ, d))
		return TI_FAIL(err, TI_E_SHAPE, "the feature number of src and tgt must be equal to d_model");
	attention_masks encoder, decoder[2];
	/* the encoder is called with mask=src_mask */
	if ((st = encoder_masks(call, "src_mask", "mask", "src_is_causal", &encoder, err)))
		return st;
	decoder_masks(call, decoder);
	const ti_meta_tensor *memory = src, *x = tgt;
	if ((st = run_stack(&r, "encoder.", ti_module_dim(m, "num_encoder_layers").value, true, NULL, &encoder, &memory, err)) ||
	    (st = run_stack(&r, "decoder.", ti_module_dim(m, "num_decoder_layers").value, true, memory, decoder, &x, err)))
		return st;
	return ti_call_output_tensor(call, x, err);
}

#define LAYER_ARGS                                                                                          \
	"int d_model, int nhead, int dim_feedforward=2048, float dropout=0.1, str activation='relu', "          \
	"float layer_norm_eps=1e-05, bool batch_first=False, bool norm_first=False, bool bias=True"
#define STACK_ARGS                                                                                          \
	"int d_model, int nhead, int num_layers, int dim_feedforward=2048, float dropout=0.1, "                 \
	"str activation='relu', float layer_norm_eps=1e-05, bool batch_first=False, bool norm_first=False, "     \
	"bool bias=True, bool? norm=None"
#define FACTORY_ARGS "str? device=None, ScalarType? dtype=None"
#define DECODER_FORWARD                                                                                     \
	"forward(Tensor tgt, Tensor memory, Tensor? tgt_mask=None, Tensor? memory_mask=None, "                  \
	"Tensor? tgt_key_padding_mask=None, Tensor? memory_key_padding_mask=None, "

ti_module_rule ti_nn_transformer[] = {
	{"TransformerEncoderLayer(" LAYER_ARGS ", " FACTORY_ARGS ")",
	 "forward(Tensor src, Tensor? src_mask=None, Tensor? src_key_padding_mask=None, bool is_causal=False)",
	 init_encoder_layer, encoder_layer_forward, TI_COUNT_RULE, NULL, NULL},
	{"TransformerDecoderLayer(" LAYER_ARGS ", " FACTORY_ARGS ")",
	 DECODER_FORWARD "bool tgt_is_causal=False, bool memory_is_causal=False)",
	 init_decoder_layer, decoder_layer_forward, TI_COUNT_RULE, NULL, NULL},
	{"TransformerEncoder(" STACK_ARGS ", bool enable_nested_tensor=True, bool mask_check=True, " FACTORY_ARGS ")",
	 "forward(Tensor src, Tensor? mask=None, Tensor? src_key_padding_mask=None, bool? is_causal=None)",
	 init_encoder, encoder_forward, TI_COUNT_RULE, NULL, NULL},
	{"TransformerDecoder(" STACK_ARGS ", " FACTORY_ARGS ")",
	 DECODER_FORWARD "bool? tgt_is_causal=None, bool memory_is_causal=False)",
	 init_decoder, decoder_forward, TI_COUNT_RULE, NULL, NULL},
	{"Transformer(int d_model=512, int nhead=8, int num_encoder_layers=6, int num_decoder_layers=6, "
	 "int dim_feedforward=2048, float dropout=0.1, str activation='relu', str? custom_encoder=None, "
	 "str? custom_decoder=None, float layer_norm_eps=1e-05, bool batch_first=False, bool norm_first=False, "
	 "bool bias=True, " FACTORY_ARGS ")",
	 "forward(Tensor src, Tensor tgt, Tensor? src_mask=None, Tensor? tgt_mask=None, Tensor? memory_mask=None, "
	 "Tensor? src_key_padding_mask=None, Tensor? tgt_key_padding_mask=None, "
	 "Tensor? memory_key_padding_mask=None, bool? src_is_causal=None, bool? tgt_is_causal=None, "
	 "bool memory_is_causal=False)",
	 init_transformer, transformer_forward, TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
