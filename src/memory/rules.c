/*
 * rules.c - what each operator allocates, saves for backward and frees: one
 * table, a row per operator (by the name its shape rule has) or module type.
 *
 * A plain row says how the outputs relate to the inputs (new tensors, views
 * of the first input, the first input written in place), which arguments
 * autograd saves (PyTorch's names from tools/autograd/derivatives.yaml:
 * "input weight"; "result" for the output; "input:other" when only the
 * formula of other's gradient reads input, so that input is saved only if
 * other wants a gradient, as autograd's generated code does: x * 0.125 saves
 * nothing, a frozen linear's input is not kept), what else it saves (a dropout's
 * mask, a norm's statistics, a max-pool's indices) and the scratch its CPU
 * kernel takes. The modules and operators played as the kernels they run
 * (MultiheadAttention, TransformerEncoderLayer, LSTM, sdpa) are expand.c's
 * table, above this one.
 * The figures were measured on PyTorch 1.13's CPU kernels with one thread
 * (tests/conformance/memory_ops.py).
 */
#include <stdio.h>
#include <string.h>

#include "memory/memory_internal.h"
#include "memory/cuda_alloc.h"

/* ---- reading a call ---- */

typedef struct call_tensors {
	const ti_meta_tensor *t[MEM_MAX_IO];
	const char *name[MEM_MAX_IO]; /* the signature's parameter name */
	int n;
} call_tensors;

static void add_tensor(call_tensors *ct, const ti_meta_tensor *t, const char *name)
{
	if (ct->n < MEM_MAX_IO) {
		ct->t[ct->n] = t;
		ct->name[ct->n++] = name;
	}
}

static void add_arg(call_tensors *ct, const ti_arg *a, const char *name)
{
	if (a->kind == TI_ARG_TENSOR)
		add_tensor(ct, a->as.tensor, name);
	else if (a->kind == TI_ARG_LIST)
		for (int i = 0; i < a->as.list.count; i++)
			add_arg(ct, &a->as.list.items[i], name);
}

static void inputs_of(const ti_op_call *c, call_tensors *ct)
{
	ct->n = 0;
	if (!c->in.sig)
		return;
	for (int i = 0; i < c->in.sig->count; i++)
		add_arg(ct, &c->in.args[i], c->in.sig->params[i].name);
}

static void outputs_of(const ti_op_call *c, call_tensors *ct)
{
	ct->n = 0;
	for (int i = 0; i < c->output_count; i++)
		add_arg(ct, &c->outputs[i], "result");
}

/* The entry of list (words split by spaces; a word may end in ":cond,cond") whose name is word, or NULL. */
static const char *find_word(const char *list, const char *word, size_t *len_out)
{
	size_t n = strlen(word);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ' ');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		const char *colon = memchr(p, ':', len);
		size_t name_len = colon ? (size_t)(colon - p) : len;
		if (name_len == n && !strncmp(p, word, n)) {
			if (len_out)
				*len_out = len;
			return p;
		}
		p = e ? e + 1 : p + len;
	}
	return NULL;
}

static bool has_word(const char *list, const char *word)
{
	return find_word(list, word, NULL) != NULL;
}

#define NEVER_SAVED (~0u)

/* The inputs (bit j: ct->name[j]) whose gradients need the saved word: 0 when it is saved unconditionally. */
static unsigned saved_if(const char *list, const char *word, const call_tensors *ct)
{
	size_t len;
	const char *p = find_word(list, word, &len);
	const char *colon = p ? memchr(p, ':', len) : NULL;
	if (!colon)
		return 0;
	unsigned need = 0;
	for (const char *q = colon + 1, *end = p + len; q < end;) {
		const char *comma = memchr(q, ',', (size_t)(end - q));
		size_t n = comma ? (size_t)(comma - q) : (size_t)(end - q);
		for (int j = 0; j < ct->n; j++)
			if (strlen(ct->name[j]) == n && !strncmp(ct->name[j], q, n))
				need |= 1u << j;
		q = comma ? comma + 1 : end;
	}
	return need ? need : NEVER_SAVED; /* the operand it waits on is no tensor (x * 0.125) */
}

static bool bound_flag(const ti_op_call *c, const char *name)
{
	if (!c->in.sig)
		return false;
	for (int i = 0; i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, name))
			return c->in.args[i].kind == TI_ARG_BOOL && c->in.args[i].as.boolean;
	return false;
}

/* x[index] with an integer tensor or a list of ints among the items gathers: a new tensor, not a view. */
static bool index_gathers(const ti_op_call *c)
{
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++) {
		if (strcmp(c->in.sig->params[i].name, "index"))
			continue;
		const ti_arg *a = &c->in.args[i];
		if (a->kind == TI_ARG_TENSOR)
			return true;
		for (int j = 0; a->kind == TI_ARG_LIST && j < a->as.list.count; j++) {
			const ti_arg *item = &a->as.list.items[j];
			if (item->kind == TI_ARG_TENSOR)
				return true;
			if (item->kind == TI_ARG_LIST && item->as.list.count > 0 && item->as.list.items[0].kind == TI_ARG_INT)
				return true;
		}
	}
	return false;
}

static bool bound_has(const ti_op_call *c, const char *name)
{
	if (!c->in.sig)
		return false;
	for (int i = 0; i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, name))
			return true;
	return false;
}

static double bound_real(const ti_op_call *c, const char *name, double fallback)
{
	if (!c->in.sig)
		return fallback;
	for (int i = 0; i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, name)) {
			const ti_arg *a = &c->in.args[i];
			return a->kind == TI_ARG_FLOAT ? a->as.real : a->kind == TI_ARG_INT ? (double)a->as.dim.value : fallback;
		}
	return fallback;
}

/* A call's training flag: a module's follows the mode (module.train()), a functional call's is its argument. */
static bool training(const mem_builder *b, const ti_op_call *c)
{
	if (b->leaf_module_parent)
		return b->options->mode == TI_MEMORY_TRAIN;
	return bound_flag(c, "training");
}

/* ---- the plain rows ---- */

typedef enum extra_kind {
	EXTRA_NONE,
	EXTRA_DROPOUT,    /* training: the noise or mask it saves (mem_dropout_saved; feature dropouts one per channel) */
	EXTRA_ROW_STATS,  /* mean and rstd: two floats per normalized row */
	EXTRA_CHANNEL_STATS, /* training: mean and invstd per channel */
	EXTRA_GROUP_STATS,/* mean and rstd per (sample, group) */
	EXTRA_INDICES,    /* int64 indices of the output's size */
	EXTRA_LOG_SOFTMAX, /* cross_entropy: log_softmax of the input, saved (a transient without grad) */
	EXTRA_RMS_COMPOSITE /* rms_norm as its composite runs: two float32 copies of the input saved, and scratch */
} extra_kind;

typedef enum out_rule {
	NEW,              /* new outputs */
	VIEW,             /* views of the first input */
	INPLACE_FLAG,     /* new, or the first input when inplace=True */
	VIEW_IF_CONTIGUOUS, /* reshape, flatten, contiguous: a view when the input allows, else a copy */
	CONSTANT          /* new and never requiring grad (creation, comparisons, indices) */
} out_rule;

typedef struct plain_row {
	const char *name;
	out_rule out;
	const char *saves;   /* parameter names, "result" */
	extra_kind extra;
	unsigned grad_view;  /* bit i: input i's gradient is the output's own, no new tensor: VIEW rows a view of
	                        it; NEW rows the very tensor where the shapes match (add's formula returns grad
	                        for both operands, sub's for the first; a broadcast operand's is summed anew) */
} plain_row;

/* grad_view: every input's gradient is a slice of the output's (cat's backward narrows it, stack's unbinds it),
   which stays whole while any slice lives (measured: cat's gradient held until its last input's is used) */
#define GRAD_SLICES 0xffffffffu

static const plain_row plain_rows[] = {
	/* views: nothing saved; the gradient flows back as a view, except where backward must scatter */
	{"view", VIEW, "", EXTRA_NONE, true}, {"view_as", VIEW, "", EXTRA_NONE, true},
	{"reshape", VIEW_IF_CONTIGUOUS, "", EXTRA_NONE, true}, {"reshape_as", VIEW_IF_CONTIGUOUS, "", EXTRA_NONE, true},
	{"flatten", VIEW_IF_CONTIGUOUS, "", EXTRA_NONE, true}, {"ravel", VIEW_IF_CONTIGUOUS, "", EXTRA_NONE, true},
	{"unflatten", VIEW, "", EXTRA_NONE, true}, {"permute", VIEW, "", EXTRA_NONE, true},
	{"transpose", VIEW, "", EXTRA_NONE, true}, {"swapaxes", VIEW, "", EXTRA_NONE, true},
	{"swapdims", VIEW, "", EXTRA_NONE, true}, {"t", VIEW, "", EXTRA_NONE, true},
	{"movedim", VIEW, "", EXTRA_NONE, true}, {"moveaxis", VIEW, "", EXTRA_NONE, true},
	{"squeeze", VIEW, "", EXTRA_NONE, true}, {"unsqueeze", VIEW, "", EXTRA_NONE, true},
	{"expand", VIEW, "", EXTRA_NONE, false}, {"expand_as", VIEW, "", EXTRA_NONE, false},
	{"broadcast_to", VIEW, "", EXTRA_NONE, false},
	{"narrow", VIEW, "", EXTRA_NONE, false}, {"select", VIEW, "", EXTRA_NONE, false},
	{"chunk", VIEW, "", EXTRA_NONE, false}, {"split", VIEW, "", EXTRA_NONE, false},
	{"split_with_sizes", VIEW, "", EXTRA_NONE, false}, {"tensor_split", VIEW, "", EXTRA_NONE, false},
	{"unbind", VIEW, "", EXTRA_NONE, false}, {"contiguous", VIEW_IF_CONTIGUOUS, "", EXTRA_NONE, true},
	{"detach", VIEW, "", EXTRA_NONE, true},
	/* copies */
	{"clone", NEW, "", EXTRA_NONE, false}, {"to", NEW, "", EXTRA_NONE, false},
	{"type_as", NEW, "", EXTRA_NONE, false}, {"float", NEW, "", EXTRA_NONE, false},
	{"half", NEW, "", EXTRA_NONE, false}, {"bfloat16", NEW, "", EXTRA_NONE, false},
	{"double", NEW, "", EXTRA_NONE, false}, {"repeat", NEW, "", EXTRA_NONE, false},
	{"tile", NEW, "", EXTRA_NONE, false}, {"flip", NEW, "", EXTRA_NONE, false},
	{"roll", NEW, "", EXTRA_NONE, false}, {"pad", NEW, "", EXTRA_NONE, false},
	{"cat", NEW, "", EXTRA_NONE, GRAD_SLICES}, {"concat", NEW, "", EXTRA_NONE, GRAD_SLICES},
	{"concatenate", NEW, "", EXTRA_NONE, GRAD_SLICES}, {"stack", NEW, "", EXTRA_NONE, GRAD_SLICES},
	{"hstack", NEW, "", EXTRA_NONE, GRAD_SLICES}, {"vstack", NEW, "", EXTRA_NONE, GRAD_SLICES},
	{"pixel_shuffle", NEW, "", EXTRA_NONE, false}, {"pixel_unshuffle", NEW, "", EXTRA_NONE, false},
	{"triu", NEW, "", EXTRA_NONE, false}, {"tril", NEW, "", EXTRA_NONE, false},
	{"index_select", NEW, "index", EXTRA_NONE, false}, {"gather", NEW, "index", EXTRA_NONE, false},
	{"take_along_dim", NEW, "indices", EXTRA_NONE, false},
	/* arithmetic */
	{"add", NEW, "", EXTRA_NONE, 3u}, {"sub", NEW, "", EXTRA_NONE, 1u},
	{"subtract", NEW, "", EXTRA_NONE, 1u}, {"rsub", NEW, "", EXTRA_NONE, false},
	{"neg", NEW, "", EXTRA_NONE, false}, {"negative", NEW, "", EXTRA_NONE, false},
	{"mul", NEW, "input:other other:input", EXTRA_NONE, false}, {"multiply", NEW, "input:other other:input", EXTRA_NONE, false},
	{"div", NEW, "input:other other", EXTRA_NONE, false}, {"divide", NEW, "input:other other", EXTRA_NONE, false},
	{"true_divide", NEW, "input:other other", EXTRA_NONE, false},
	{"pow", NEW, "input exponent", EXTRA_NONE, false}, {"square", NEW, "input", EXTRA_NONE, false},
	{"abs", NEW, "input", EXTRA_NONE, false}, {"exp", NEW, "result", EXTRA_NONE, false},
	{"log", NEW, "input", EXTRA_NONE, false}, {"sqrt", NEW, "result", EXTRA_NONE, false},
	{"rsqrt", NEW, "result", EXTRA_NONE, false}, {"reciprocal", NEW, "result", EXTRA_NONE, false},
	{"sin", NEW, "input", EXTRA_NONE, false}, {"cos", NEW, "input", EXTRA_NONE, false},
	{"erf", NEW, "input", EXTRA_NONE, false}, {"maximum", NEW, "input other", EXTRA_NONE, false},
	{"minimum", NEW, "input other", EXTRA_NONE, false}, {"clamp", NEW, "input", EXTRA_NONE, false},
	{"clip", NEW, "input", EXTRA_NONE, false}, {"clamp_min", NEW, "input", EXTRA_NONE, false},
	{"clamp_max", NEW, "input", EXTRA_NONE, false},
	{"masked_fill", NEW, "mask", EXTRA_NONE, false}, {"where", NEW, "condition", EXTRA_NONE, false},
	/* activations */
	{"relu", INPLACE_FLAG, "result", EXTRA_NONE, false}, {"relu6", INPLACE_FLAG, "input", EXTRA_NONE, false},
	{"hardtanh", INPLACE_FLAG, "input", EXTRA_NONE, false}, {"leaky_relu", INPLACE_FLAG, "result", EXTRA_NONE, false},
	{"elu", INPLACE_FLAG, "result", EXTRA_NONE, false}, {"selu", INPLACE_FLAG, "result", EXTRA_NONE, false},
	{"celu", INPLACE_FLAG, "result", EXTRA_NONE, false}, {"silu", INPLACE_FLAG, "input", EXTRA_NONE, false},
	{"mish", INPLACE_FLAG, "input", EXTRA_NONE, false}, {"hardswish", INPLACE_FLAG, "input", EXTRA_NONE, false},
	{"hardsigmoid", INPLACE_FLAG, "input", EXTRA_NONE, false}, {"threshold", INPLACE_FLAG, "result", EXTRA_NONE, false},
	{"gelu", NEW, "input", EXTRA_NONE, false}, {"tanh", NEW, "result", EXTRA_NONE, false},
	{"sigmoid", NEW, "result", EXTRA_NONE, false}, {"logsigmoid", NEW, "input", EXTRA_NONE, false},
	{"softplus", NEW, "input", EXTRA_NONE, false}, {"prelu", NEW, "input weight", EXTRA_NONE, false},
	{"glu", NEW, "input", EXTRA_NONE, false},
	{"softmax", NEW, "result", EXTRA_NONE, false}, {"log_softmax", NEW, "result", EXTRA_NONE, false},
	{"softmin", NEW, "result", EXTRA_NONE, false},
	{"dropout", INPLACE_FLAG, "", EXTRA_DROPOUT, false}, {"dropout1d", INPLACE_FLAG, "", EXTRA_DROPOUT, false},
	{"dropout2d", INPLACE_FLAG, "", EXTRA_DROPOUT, false}, {"dropout3d", INPLACE_FLAG, "", EXTRA_DROPOUT, false},
	{"alpha_dropout", INPLACE_FLAG, "", EXTRA_DROPOUT, false},
	{"feature_alpha_dropout", INPLACE_FLAG, "", EXTRA_DROPOUT, false},
	/* linear algebra */
	{"linear", NEW, "input:weight weight:input", EXTRA_NONE, false}, {"bilinear", NEW, "input1 input2 weight", EXTRA_NONE, false},
	{"matmul", NEW, "input:other other:input", EXTRA_NONE, false}, {"mm", NEW, "input:mat2 mat2:input", EXTRA_NONE, false},
	{"bmm", NEW, "input:mat2 mat2:input", EXTRA_NONE, false}, {"mv", NEW, "input:vec vec:input", EXTRA_NONE, false},
	{"dot", NEW, "input tensor", EXTRA_NONE, false}, {"outer", NEW, "input vec2", EXTRA_NONE, false},
	{"addmm", NEW, "mat1 mat2", EXTRA_NONE, false}, {"baddbmm", NEW, "batch1 batch2", EXTRA_NONE, false},
	{"einsum", NEW, "operands", EXTRA_NONE, false},
	/* convolution and pooling */
	{"conv1d", NEW, "input weight", EXTRA_NONE, false}, {"conv2d", NEW, "input weight", EXTRA_NONE, false},
	{"conv3d", NEW, "input weight", EXTRA_NONE, false},
	{"conv_transpose1d", NEW, "input weight", EXTRA_NONE, false},
	{"conv_transpose2d", NEW, "input weight", EXTRA_NONE, false},
	{"conv_transpose3d", NEW, "input weight", EXTRA_NONE, false},
	{"max_pool1d", NEW, "input", EXTRA_INDICES, false}, {"max_pool2d", NEW, "input", EXTRA_INDICES, false},
	{"max_pool3d", NEW, "input", EXTRA_INDICES, false},
	{"adaptive_max_pool1d", NEW, "input", EXTRA_INDICES, false},
	{"adaptive_max_pool2d", NEW, "input", EXTRA_INDICES, false},
	/* avg_pool's backward formula takes self (for its shape, but autograd keeps the tensor), the adaptive
	   ones too, even to a single value (measured on 1.13: AdaptiveAvgPool2d(1) after a Conv2d keeps its input) */
	{"avg_pool1d", NEW, "input", EXTRA_NONE, false}, {"avg_pool2d", NEW, "input", EXTRA_NONE, false},
	{"avg_pool3d", NEW, "input", EXTRA_NONE, false}, {"adaptive_avg_pool1d", NEW, "input", EXTRA_NONE, false},
	{"adaptive_avg_pool2d", NEW, "input", EXTRA_NONE, false}, {"adaptive_avg_pool3d", NEW, "input", EXTRA_NONE, false},
	{"interpolate", NEW, "", EXTRA_NONE, false}, {"upsample", NEW, "", EXTRA_NONE, false},
	{"upsample_nearest", NEW, "", EXTRA_NONE, false}, {"upsample_bilinear", NEW, "", EXTRA_NONE, false},
	/* normalization */
	{"batch_norm", NEW, "input weight", EXTRA_CHANNEL_STATS, false},
	{"instance_norm", NEW, "input weight", EXTRA_GROUP_STATS, false},
	{"layer_norm", NEW, "input weight", EXTRA_ROW_STATS, false},
	{"group_norm", NEW, "input weight", EXTRA_GROUP_STATS, false},
	{"rms_norm", NEW, "input weight", EXTRA_RMS_COMPOSITE, false},
	{"embedding", NEW, "input", EXTRA_NONE, false}, {"embedding_bag", NEW, "input offsets", EXTRA_NONE, false},
	{"cross_entropy", NEW, "target", EXTRA_LOG_SOFTMAX, false}, {"nll_loss", NEW, "input target", EXTRA_NONE, false},
	{"mse_loss", NEW, "input target", EXTRA_NONE, false}, {"l1_loss", NEW, "input target", EXTRA_NONE, false},
	/* reductions: the input's size is all backward needs */
	{"sum", NEW, "", EXTRA_NONE, false}, {"mean", NEW, "", EXTRA_NONE, false},
	{"nansum", NEW, "input", EXTRA_NONE, false}, {"var", NEW, "input", EXTRA_NONE, false},
	{"std", NEW, "input result", EXTRA_NONE, false}, {"logsumexp", NEW, "input result", EXTRA_NONE, false},
	{"norm", NEW, "input result", EXTRA_NONE, false}, {"amax", NEW, "input result", EXTRA_NONE, false},
	{"amin", NEW, "input result", EXTRA_NONE, false}, {"cumsum", NEW, "", EXTRA_NONE, false},
	{"prod", NEW, "input result", EXTRA_NONE, false},
	/* no gradient */
	{"argmax", CONSTANT, "", EXTRA_NONE, false}, {"argmin", CONSTANT, "", EXTRA_NONE, false},
	{"argsort", CONSTANT, "", EXTRA_NONE, false}, {"eq", CONSTANT, "", EXTRA_NONE, false},
	{"ne", CONSTANT, "", EXTRA_NONE, false}, {"lt", CONSTANT, "", EXTRA_NONE, false},
	{"le", CONSTANT, "", EXTRA_NONE, false}, {"gt", CONSTANT, "", EXTRA_NONE, false},
	{"ge", CONSTANT, "", EXTRA_NONE, false}, {"isnan", CONSTANT, "", EXTRA_NONE, false},
	{"logical_not", CONSTANT, "", EXTRA_NONE, false}, {"logical_and", CONSTANT, "", EXTRA_NONE, false},
	{"logical_or", CONSTANT, "", EXTRA_NONE, false}, {"arange", CONSTANT, "", EXTRA_NONE, false},
	{"zeros", CONSTANT, "", EXTRA_NONE, false}, {"ones", CONSTANT, "", EXTRA_NONE, false},
	{"empty", CONSTANT, "", EXTRA_NONE, false}, {"full", CONSTANT, "", EXTRA_NONE, false},
	{"torch.tensor", CONSTANT, "", EXTRA_NONE, false}, /* a constant recorded by tinspect-export (opaque) */
	{"zeros_like", CONSTANT, "", EXTRA_NONE, false}, {"ones_like", CONSTANT, "", EXTRA_NONE, false},
	{"empty_like", CONSTANT, "", EXTRA_NONE, false}, {"full_like", CONSTANT, "", EXTRA_NONE, false},
	{"randn", CONSTANT, "", EXTRA_NONE, false}, {"rand", CONSTANT, "", EXTRA_NONE, false},
	{"randn_like", CONSTANT, "", EXTRA_NONE, false}, {"rand_like", CONSTANT, "", EXTRA_NONE, false},
	{"randint", CONSTANT, "", EXTRA_NONE, false}, {"eye", CONSTANT, "", EXTRA_NONE, false},
	{"new_zeros", CONSTANT, "", EXTRA_NONE, false}, {"new_ones", CONSTANT, "", EXTRA_NONE, false},
	{"new_full", CONSTANT, "", EXTRA_NONE, false}, {"new_empty", CONSTANT, "", EXTRA_NONE, false},
	{"long", CONSTANT, "", EXTRA_NONE, false}, {"int", CONSTANT, "", EXTRA_NONE, false},
	{"bool", CONSTANT, "", EXTRA_NONE, false}, {"nonzero", CONSTANT, "", EXTRA_NONE, false},
	{"topk", NEW, "", EXTRA_INDICES, false}, {"sort", NEW, "", EXTRA_INDICES, false},
	/* Python-level steps of a traced model: ints and tuples, no tensor (an item of a tuple is no new tensor) */
	{"size", CONSTANT, "", EXTRA_NONE, false}, {"dim", CONSTANT, "", EXTRA_NONE, false},
	{"numel", CONSTANT, "", EXTRA_NONE, false}, {"_assert", CONSTANT, "", EXTRA_NONE, false},
	{"operator.add", CONSTANT, "", EXTRA_NONE, false}, {"operator.sub", CONSTANT, "", EXTRA_NONE, false},
	{"operator.mul", CONSTANT, "", EXTRA_NONE, false}, {"operator.floordiv", CONSTANT, "", EXTRA_NONE, false},
	{"operator.truediv", CONSTANT, "", EXTRA_NONE, false}, {"operator.mod", CONSTANT, "", EXTRA_NONE, false},
	{"operator.pow", CONSTANT, "", EXTRA_NONE, false}, {"operator.neg", CONSTANT, "", EXTRA_NONE, false},
	{"operator.eq", CONSTANT, "", EXTRA_NONE, false}, {"operator.ne", CONSTANT, "", EXTRA_NONE, false},
	{"operator.lt", CONSTANT, "", EXTRA_NONE, false}, {"operator.le", CONSTANT, "", EXTRA_NONE, false},
	{"operator.gt", CONSTANT, "", EXTRA_NONE, false}, {"operator.ge", CONSTANT, "", EXTRA_NONE, false},
	/* basic indexing is a view (a tensor index gathers: counted as a view, a lower bound) */
	{"getitem", VIEW, "", EXTRA_NONE, false}, {"meshgrid", VIEW, "", EXTRA_NONE, false},
	/* torchvision's stochastic_depth in training: input * a per-sample noise (tiny), a new output */
	{"stochastic_depth", NEW, "", EXTRA_NONE, false},
};

static const plain_row *plain_find(const char *name)
{
	for (size_t i = 0; i < sizeof(plain_rows) / sizeof(plain_rows[0]); i++)
		if (!strcmp(plain_rows[i].name, name))
			return &plain_rows[i];
	return NULL;
}

/* The name of the module that made a call, for labels: "layer1.0.conv1". */
static const char *label_of(mem_builder *b, const char *op)
{
	const char *path = b->module_path && *b->module_path ? b->module_path : NULL;
	return path ? ti_arena_cat(b->arena, (const char *const[]){path, " (", op, ")"}, 4) : ti_arena_strdup(b->arena, op);
}

int64_t mem_dropout_saved(const mem_builder *b, int64_t bytes, int64_t es, bool fused)
{
	if (fused && b->options->device == TI_MEMORY_CUDA)
		return es > 0 ? bytes / es : bytes;
	return bytes;
}

static int64_t rows_of(const ti_meta_tensor *t, int normalized_dims)
{
	int64_t rows = 1;
	for (int k = 0; k + normalized_dims < t->ndim; k++)
		if (!mem_mul(rows, t->shape[k].value, &rows))
			return -1;
	return rows;
}

/* A convolution argument per spatial dim k of n: a list of n, one value for all, or a plain int. */
static int64_t conv_arg(const ti_op_call *c, const char *name, int k, int64_t fallback)
{
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++) {
		if (strcmp(c->in.sig->params[i].name, name))
			continue;
		const ti_arg *a = &c->in.args[i];
		if (a->kind == TI_ARG_INT)
			return a->as.dim.value;
		if (a->kind == TI_ARG_LIST && a->as.list.count > 0) {
			const ti_arg *e = &a->as.list.items[a->as.list.count == 1 ? 0 : k];
			if (k < a->as.list.count || a->as.list.count == 1)
				return e->kind == TI_ARG_INT ? e->as.dim.value : fallback;
		}
	}
	return fallback;
}

/* padding='same' pads d(k - 1) in all, the lesser half before (ConvParams in Convolution.cpp); 'valid' none */
static int64_t conv_pad(const ti_op_call *c, int k, int64_t kernel, int64_t dilation)
{
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, "padding") && c->in.args[i].kind == TI_ARG_STR)
			return !strcmp(c->in.args[i].as.str, "same") ? dilation * (kernel - 1) / 2 : 0;
	return conv_arg(c, "padding", k, 0);
}

/* One spatial dim of a convolution as oneDNN's init_conf reads it: sizes, padding at both ends, dilation. */
typedef struct conv_dim {
	int64_t in, out, kernel, stride, dilation, pad, end_pad, extent;
} conv_dim;

/* avx2: jit_avx2_conv_bwd_weights_kernel_f32::init_conf. */
static bool avx2_backward_weights(const conv_dim *d, int n, int64_t cin, int64_t cout, int64_t groups)
{
	if (groups > 1 && (cin % 8 || cout % 8)) /* channels are padded to 8 only without groups */
		return false;
	for (int k = 0; k < n; k++) {
		bool depth = n == 3 && k == 0, width = k == n - 1;
		if (d[k].dilation != 1 || d[k].pad >= d[k].extent || d[k].end_pad >= d[k].extent)
			return false;
		if (!width && d[k].kernel > d[k].in) /* kh <= ih, kd <= id */
			return false;
		if ((depth && (d[k].pad || d[k].end_pad > 0)) || (width && d[k].kernel >= 14))
			return false;
	}
	return true;
}

/* avx512_core: jit_avx512_common_conv_bwd_weights_kernel_f32::init_conf (max_ur_w 28). */
static bool avx512_backward_weights(const conv_dim *d, int n, int64_t cin, int64_t cout, int64_t groups)
{
	if (groups > 1 && (cin % 16 || cout % 16))
		return false;
	if (groups == 1 && cin < 16 && cin > 3) /* a first convolution reads a plain source of 1 to 3 channels */
		return false;
	for (int k = 0; k < n; k++) {
		bool depth = n == 3 && k == 0, width = k == n - 1;
		if (depth) {
			if (d[k].dilation != 1 || d[k].pad >= d[k].extent || d[k].end_pad >= d[k].extent)
				return false;
		} else if (width) {
			if (d[k].pad >= d[k].extent || d[k].end_pad >= d[k].extent || d[k].pad > 28 || d[k].end_pad > 28 ||
			    d[k].kernel > 14)
				return false;
		} else {
			if (d[k].dilation != 1 && (d[k].stride != 1 || d[k].extent > d[k].in))
				return false;
			if (d[k].pad > d[k].extent / 2 || d[k].end_pad > d[k].extent / 2)
				return false;
		}
	}
	return true;
}

/*
 * Whether oneDNN 2.6 (PyTorch 1.13's) has a JIT kernel for a float32
 * convolution's weight gradient on this instruction set; without one,
 * gemm_convolution_bwd_weights_t runs it. oneDNN tries its implementations
 * in order (cpu_convolution_list.cpp) - avx512_core's, then avx2's, then the
 * GEMM - and takes the first whose init_conf accepts the shape. PyTorch hands
 * a 1-d convolution over as a 2-d one of height 1 (view4d in Convolution.cpp).
 * sse41 and avx have no JIT weight-gradient kernel (avx2's init_conf starts
 * with mayiuse(avx2)). Depthwise ones have jit_uni_dw's on every set.
 */
static bool conv_backward_weights_jit(const ti_op_call *c, const ti_meta_tensor *x, const ti_meta_tensor *y,
                                      const ti_meta_tensor *w, ti_cpu_isa isa)
{
	int n = w->ndim - 2;
	int64_t groups = conv_arg(c, "groups", 0, 1);
	int64_t cin = w->shape[1].value, cout = groups > 0 ? w->shape[0].value / groups : w->shape[0].value;
	if (groups > 1 && cin == 1 && cout == 1)
		return true;
	if (isa != TI_ISA_AVX512_CORE && isa != TI_ISA_AVX2)
		return false;
	if (n > 3 || x->ndim != n + 2 || y->ndim != n + 2)
		return true; /* an unbatched call: not sized here, the JIT kernel assumed */
	conv_dim d[3];
	for (int k = 0; k < n; k++) {
		d[k].in = x->shape[k + 2].value;
		d[k].out = y->shape[k + 2].value;
		d[k].kernel = w->shape[k + 2].value;
		d[k].stride = conv_arg(c, "stride", k, 1);
		d[k].dilation = conv_arg(c, "dilation", k, 1);
		d[k].pad = conv_pad(c, k, d[k].kernel, d[k].dilation);
		d[k].extent = (d[k].kernel - 1) * d[k].dilation + 1;
		d[k].end_pad = (d[k].out - 1) * d[k].stride + d[k].extent - d[k].in - d[k].pad;
	}
	return (isa == TI_ISA_AVX512_CORE && avx512_backward_weights(d, n, cin, cout, groups)) ||
	       avx2_backward_weights(d, n, cin, cout, groups);
}

/*
 * A convolution's own scratch on the CPU (PyTorch 1.13, one thread, measured):
 * where mkldnn runs it (every convolution but a 1x1 kernel at stride 1 on a
 * batch under 16) the largest of the input, the output and the weight once more; THNN's
 * 1x1 none (on cuda, cuDNN's workspace is an overhead of its own); a transposed
 * convolution (slow_conv_transpose) one sample's columns,
 * C_out * prod(kernel) * prod(input spatial) elements. Backward: mkldnn's
 * takes the input's and the output's size together, the transposed one its
 * columns again, THNN's 1x1 nothing that counts.
 *
 * Where oneDNN has no JIT kernel for the weight gradient on the instruction
 * set (conv_backward_weights_jit), gemm_convolution_bwd_weights_t books a
 * reduction buffer of nthr * weights_d.size() floats - size() is in bytes,
 * so four times the weight per thread, booked whether or not threads reduce
 * (jit_gemm_convolution_utils::init_conf) - and one image's im2col columns,
 * C_in/g * prod(kernel) * prod(output spatial) floats, unless the kernel is
 * 1x1 at stride 1 without padding. With them lives the gradient as oneDNN
 * writes it (ideep's diff_weights; mkldnn_convolution_backward_weights
 * copies it to the dense .grad after): five weights and the columns.
 * Measured at ONEDNN_MAX_CPU_ISA=AVX2 on 512->512 and 256->512 3x3
 * convolutions of 2x3 and 1x1 maps: the backward peaks at 5.0 to 5.3
 * weights above what it starts with (the rest is the GEMM's packing
 * buffers), against 2.0 with the JIT kernel.
 */
/* A tensor's bytes with its channels (dim 1) padded to oneDNN's block on the instruction set. */
static int64_t blocked_bytes(int64_t bytes, const ti_meta_tensor *t, ti_cpu_isa isa)
{
	int64_t c = t->ndim >= 2 ? t->shape[1].value : 0, block = isa == TI_ISA_AVX512_CORE ? 16 : 8;
	if (c <= 4 || c % block == 0)
		return bytes;
	int64_t padded = (c + block - 1) / block * block;
	return bytes / c * padded;
}

#define GEMM_CHUNK ((int64_t)1 << 19) /* oneDNN's forward im2col in chunks of about half a MiB (measured) */

static int64_t conv_scratch(const char *op, const ti_op_call *c, const ti_meta_tensor *x, const ti_meta_tensor *y,
                            ti_cpu_isa isa, int64_t *backward, int64_t *backward_in, bool *gemm)
{
	*backward = *backward_in = 0; /* backward_in: > 0 where the input's gradient takes another figure */
	*gemm = false;
	const ti_meta_tensor *w = NULL;
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, "weight") && c->in.args[i].kind == TI_ARG_TENSOR)
			w = c->in.args[i].as.tensor;
	if (!w || w->ndim < 3)
		return 0;
	int64_t kernel = 1;
	for (int k = 2; k < w->ndim; k++)
		kernel *= w->shape[k].value;
	if (strstr(op, "transpose")) {
		int64_t n = (int64_t)ti_dtype_size(x->dtype) * w->shape[1].value * kernel, spatial = 1;
		for (int k = 2; k < x->ndim; k++)
			spatial *= x->shape[k].value;
		int64_t bytes;
		*backward = mem_mul(n, spatial, &bytes) ? bytes : 0;
		return *backward;
	}
	/*
	 * A grouped convolution (not depthwise, a depthwise one's channel multiplier too) whose groups' output
	 * channels are no multiple of 8 has no blocked kernel: oneDNN runs it as im2col and a GEMM on the plain
	 * layout. Forward, the output once more or the columns in chunks that fit the cache, whichever is larger
	 * (measured on 1.13: 0.35 to 0.46 MiB of columns on 32x32 maps, the output on larger ones; 131 channels
	 * doubled on 64x64 maps, the output's 33 MiB); backward,
	 * the weight's gradient from one image's and one group's columns (measured: within 0.1 MiB of them).
	 */
	int64_t groups = conv_arg(c, "groups", 0, 1), cin_g = w->shape[1].value, cout_g = w->shape[0].value / groups;
	if (groups > 1 && (cin_g > 1 || cout_g > 1) && cout_g % 8 != 0 && cout_g % 4 == 0) {
		/* groups of 4, 12, 20 ... output channels run on oneDNN's 4-channel blocks: forward and backward hold
		   the larger of the input and the output once more (measured on 1.13, avx512_core: 32 -> 32, 96, 160
		   and 16 -> 96 channels in 8 groups, 64 -> 64 in 16, stride 1 to 3, within 0.1 MiB) */
		int64_t in = mem_meta_bytes(x), out = mem_meta_bytes(y), larger = in > out ? in : out;
		*backward = *backward_in = larger;
		return larger;
	}
	if (groups > 1 && (cin_g > 1 || cout_g > 1) && cout_g % 8 != 0) {
		int64_t spatial = 1, columns;
		for (int k = 2; k < y->ndim; k++)
			spatial *= y->shape[k].value;
		if (!mem_mul(4 * cin_g * kernel, spatial, &columns))
			return 0;
		*backward = columns + mem_meta_bytes(w);
		/* the input's gradient is computed through a buffer of the input's size (measured: 256 -> 16 channels
		   in 8 groups on 32x32 maps, at stride 1 and 2, within 0.1 MiB of the input and the weight), or of one
		   image's and group's columns when they are larger (measured: 128 -> 16 in 8 groups, 7x7, on 192x192
		   maps: 115 MiB beside the input's gradient, the columns 110 MiB, the input 72) */
		int64_t in_bytes = mem_meta_bytes(x);
		*backward_in = (columns > in_bytes ? columns : in_bytes) + mem_meta_bytes(w);
		int64_t chunk = columns < GEMM_CHUNK ? columns : GEMM_CHUNK, out = mem_meta_bytes(y);
		return out > chunk ? out : chunk;
	}
	/* ConvParams::use_mkldnn with one thread: THNN only for a 1x1 kernel, stride 1, no dilation, a batch under 16 */
	bool strided = false;
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++) {
		const ti_arg *a = &c->in.args[i];
		const char *name = c->in.sig->params[i].name;
		if ((!strcmp(name, "stride") || !strcmp(name, "dilation")) && a->kind == TI_ARG_LIST)
			for (int k = 0; k < a->as.list.count; k++)
				strided |= a->as.list.items[k].kind == TI_ARG_INT && a->as.list.items[k].as.dim.value != 1;
	}
	int64_t batch = x->ndim == w->ndim ? x->shape[0].value : 1;
	if (kernel == 1 && !strided && batch < 16) {
		*backward = mem_meta_bytes(x) / (batch ? batch : 1); /* THNN: one sample's gradient columns */
		return 0;
	}
	int64_t in = mem_meta_bytes(x), out = mem_meta_bytes(y), weight = mem_meta_bytes(w);
	/* mkldnn's backward beside the gradients it makes: the input and the output's gradient reordered into the
	   blocked layout, or the weight's gradient there (oneDNN's diff_weights, copied into .grad after) when that is
	   larger (measured on 1.13, avx512_core: Conv2d(512, 512, 3) on a 2x3 map peaks at three weights - the weight,
	   .grad and diff_weights - and 256, 128 and 96 channels on 8x8 to 32x32 maps within 2 %) */
	*backward = in + out > weight ? in + out : weight;
	/* a depthwise convolution (one channel in and out per group) holds only the larger of the two unless its
	   kernel spans 2 or 3 (measured on 1.13, avx512_core: 1x1 at stride 2, 4x4, 5x5, 7x7, 9x9 and 3x3 at
	   dilation 2, stride 1 to 3, exactly; 2x2 and 3x3 hold both, as every other convolution); a dilated one at
	   a stride holds the input's alone (measured: 96 -> 96 channels, 3x3, dilation 2, stride 2 on 96x96 maps,
	   13.5 MiB, where undilated it holds both and the weight's gradient, 17.2) */
	int64_t span = 0;
	bool dilated = false, stepped = false;
	for (int k = 2; k < w->ndim; k++) {
		int64_t d = conv_arg(c, "dilation", k - 2, 1), e = d * (w->shape[k].value - 1) + 1;
		span = e > span ? e : span;
		dilated |= d > 1;
		stepped |= conv_arg(c, "stride", k - 2, 1) > 1;
	}
	if (groups > 1 && cin_g == 1 && cout_g == 1 && (span > 3 || span == 1))
		*backward = in > out ? in : out;
	else if (dilated && stepped)
		*backward = in;
	if (!conv_backward_weights_jit(c, x, y, w, isa)) {
		int64_t columns = 0, spatial = 1, bytes;
		*gemm = true;
		bool plain = kernel == 1;
		for (int k = 2; k < y->ndim; k++) {
			spatial *= y->shape[k].value;
			plain &= conv_arg(c, "stride", k - 2, 1) == 1 && conv_pad(c, k - 2, 1, 1) == 0;
		}
		if (!plain && !mem_mul(4 * w->shape[1].value * kernel, spatial, &columns))
			columns = 0;
		/* beside the weight's gradient (the simulator counts it with the scratch): four more and the columns */
		if (mem_mul(4, weight, &bytes) && mem_add(&bytes, columns) && bytes > *backward)
			*backward = bytes;
	}
	/* forward reorders into its blocked layout; on small maps the weight is the largest (measured: ResNet-18's
	   layer4 at 2x3x64x80 takes 9.1 MiB, its 512x512x3x3 weight's 9.0). The blocked layout holds channels
	   in blocks of 16 (avx512_core) or 8: a count that is no multiple is padded, and the output is computed
	   padded beside the plain one (measured: a depthwise 5x5 on 19 channels holds 32 channels' worth of its
	   input and output). The first layer's few channels (4 or fewer) stay plain. */
	int64_t in_blk = blocked_bytes(in, x, isa), out_blk = blocked_bytes(out, y, isa);
	int64_t most = in_blk > out_blk ? in_blk : out_blk;
	return weight + most + (out_blk - out);
}

/*
 * cuDNN's convolution workspace on cuda (PyTorch 2.x, cuDNN 9: Conv_v8.cpp).
 * run_conv_plan allocates the plan's workspace as a byte tensor for each
 * call and frees it on return; the backward runs the data gradient's plan,
 * then the weight gradient's (cudnn_convolution_backward in ConvShared.cpp),
 * each with its own. Without benchmark mode the plan is the first of
 * cuDNN's heuristic engine configs that builds; with it, the first call of
 * a shape runs get_plans_from_find: generate_and_filter_plans allocates one
 * workspace of the largest any candidate plan asks (up to the caching
 * allocator's largest free block, on an idle GPU all of it), times them all
 * in it, and caches the fastest, whose own workspace later calls take.
 *
 * Measured on an H200 (PyTorch 2.11, cuDNN 9.19; 219 random shapes in
 * tests/device/measured/probe_grids_h200.json.gz, "conv"): the engines the
 * heuristic and the search settle on mostly transform all three tensors to
 * the layout their tensor-core kernels read, taking the input, the output
 * and the weight once more (in+out+w within 4 KiB; some the input and the
 * weight alone), or run on the plain layout and take none: a 1x1 kernel at
 * stride 1 is a plain GEMM (each of its 30 runs took none forward, and
 * backward under a third of in+out+w but for two 3-d ones with 3 input
 * channels), and the forward of a convolution with channels the tensor
 * cores cannot take (half types: a count that is no multiple of 8, float32:
 * 8 or fewer) took none in 42 of 56 runs.
 *
 * The most it took: without benchmark mode, 10 times in+out+w (a 32 -> 32
 * 7x7 transposed backward; small maps take fixed workspaces of about 2 MiB)
 * and never more than the larger of 10 times in+out+w plus 4 MiB and the
 * im2col columns of the GEMM engine (C_in x kernel x output positions x N
 * elements); unet_small's 32 -> 32 3x3 backward on 64 32x32 maps took 8.8
 * times (profiled, not fitted: it checks the bound). Among the candidates
 * are FFT engines (stride 1, undilated) whose workspace is the input, the
 * weights and the output transformed - (N C_in + C_in/g C_out + N C_out)
 * complex planes of each spatial dim padded to a power of two, at least 32 -
 * (up to 4.3 GB, 75 times in+out+w, for a 32 -> 256 3x3 on one 224x224 map,
 * in the search; the heuristic, too, picks one at times), and in the search
 * split-K weight gradients with a float32 weight per split (up to 616
 * measured; 1024 splits at most assumed, or one per image and output
 * position): the search's high end is the largest of these and the
 * heuristic's. Every grid row lies below its high end.
 */
#define CUDNN_SMALL_WORKSPACE ((int64_t)4 << 20) /* the grid's fixed workspaces (1.9 MiB), twice over */
#define CUDNN_SPLITS 1024                         /* split-K weight gradients: splits at most */
#define CUDNN_TRANSFORMED_MOST 10                 /* in+out+w: the grid's most, with the fixed workspaces */

typedef struct cudnn_shape {
	int64_t in, out, weight;    /* bytes */
	int64_t batch, cin, cout, groups, kernel, out_positions, in_positions, fft_positions;
	bool plain_gemm;             /* a 1x1 kernel at stride 1: a GEMM on the plain layout */
	bool fft;                    /* stride 1 and undilated (or 1x1): an FFT engine can take it */
	bool depthwise;              /* PyTorch's own depthwise kernels run it, not cuDNN */
	bool half;                   /* float16 or bfloat16 */
} cudnn_shape;

static int64_t power_of_two_at_least(int64_t x)
{
	int64_t n = 32; /* the smallest FFT tile the grid's search workspaces fit */
	while (n < x && n < ((int64_t)1 << 40))
		n *= 2;
	return n;
}

static bool cudnn_shape_of(const char *op, const ti_op_call *c, const ti_meta_tensor *x, const ti_meta_tensor *y,
                           cudnn_shape *sh)
{
	const ti_meta_tensor *w = NULL;
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		if (!strcmp(c->in.sig->params[i].name, "weight") && c->in.args[i].kind == TI_ARG_TENSOR)
			w = c->in.args[i].as.tensor;
	int n = w ? w->ndim - 2 : 0;
	if (!w || n < 1 || n > 3 || y->ndim < n + 1 || x->ndim < n + 1)
		return false;
	bool transposed = strstr(op, "transpose") != NULL;
	memset(sh, 0, sizeof(*sh));
	sh->in = mem_meta_bytes(x);
	sh->out = mem_meta_bytes(y);
	sh->weight = mem_meta_bytes(w);
	sh->groups = conv_arg(c, "groups", 0, 1) > 0 ? conv_arg(c, "groups", 0, 1) : 1;
	sh->batch = x->ndim == n + 2 ? x->shape[0].value : 1;
	sh->cin = x->shape[x->ndim - n - 1].value;
	sh->cout = y->shape[y->ndim - n - 1].value;
	sh->half = x->dtype == TI_DT_FLOAT16 || x->dtype == TI_DT_BFLOAT16;
	sh->kernel = sh->out_positions = sh->in_positions = sh->fft_positions = 1;
	sh->plain_gemm = sh->fft = true;
	for (int k = 0; k < n; k++) {
		int64_t kernel = w->shape[k + 2].value, stride = conv_arg(c, "stride", k, 1);
		int64_t dilation = conv_arg(c, "dilation", k, 1), in = x->shape[x->ndim - n + k].value;
		sh->kernel *= kernel;
		sh->out_positions *= y->shape[y->ndim - n + k].value;
		sh->in_positions *= in;
		sh->plain_gemm &= kernel == 1 && stride == 1;
		sh->fft &= stride == 1 && (dilation == 1 || kernel == 1);
		int64_t padded = power_of_two_at_least(in + 2 * conv_pad(c, k, kernel, dilation));
		if (!mem_mul(sh->fft_positions, padded, &sh->fft_positions))
			return false;
	}
	/* ConvParams::is_depthwise and use_cudnn_depthwise (Convolution.cpp): a depthwise convolution runs
	   PyTorch's conv_depthwise2d/3d unless it is float16 (cuDNN then, from 32 channels, undilated); a 1-d one is
	   viewed as 2-d before the choice. Measured: none of the grid's 25 depthwise shapes took a workspace. */
	sh->depthwise = !transposed && sh->groups > 1 && sh->cin == sh->groups && sh->cout % sh->groups == 0 &&
	                x->dtype != TI_DT_FLOAT16;
	return true;
}

/* im2col's columns for the GEMM engine: C_in x kernel x output positions x N (a transposed one's are its
   gradient's: C_out x kernel x input positions) */
static int64_t cudnn_columns(const cudnn_shape *sh, const char *op, int64_t elsize)
{
	bool transposed = strstr(op, "transpose") != NULL;
	int64_t columns = elsize;
	if (!mem_mul(columns, transposed ? sh->cout : sh->cin, &columns) || !mem_mul(columns, sh->kernel, &columns) ||
	    !mem_mul(columns, transposed ? sh->in_positions : sh->out_positions, &columns) ||
	    !mem_mul(columns, sh->batch, &columns))
		return TI_MEMORY_MAX_BYTES / 4;
	return columns;
}

/* The workspace a convolution's forward and backward take under cuDNN, as the play asks (see above). */
static void cudnn_workspace(const char *op, const ti_op_call *c, const ti_meta_tensor *x, const ti_meta_tensor *y,
                            bool benchmark, mem_cudnn_play play, int64_t *forward, int64_t *backward, bool *uncertain)
{
	cudnn_shape sh;
	*forward = *backward = 0;
	*uncertain = false;
	if (!cudnn_shape_of(op, c, x, y, &sh) || sh.depthwise)
		return;
	*uncertain = true;
	int64_t transformed = sh.in, elsize = ti_dtype_size(x->dtype);
	if (!mem_add(&transformed, sh.out) || !mem_add(&transformed, sh.weight))
		return;
	if (play == MEM_CUDNN_NONE)
		return;
	if (play == MEM_CUDNN_ESTIMATE) {
		int64_t cin_g = sh.cin / sh.groups, cout_g = sh.cout / sh.groups;
		bool narrow = sh.half ? cin_g % 8 != 0 : (cin_g <= 8 || cout_g <= 8);
		*forward = sh.plain_gemm || narrow ? 0 : transformed;
		*backward = sh.plain_gemm ? 0 : transformed;
		return;
	}
	int64_t most = 0, columns = cudnn_columns(&sh, op, elsize);
	if (mem_mul(transformed, CUDNN_TRANSFORMED_MOST, &most) && !mem_add(&most, CUDNN_SMALL_WORKSPACE))
		most = TI_MEMORY_MAX_BYTES / 4;
	most = columns > most ? columns : most;
	/* FFT: N C_in + C_in/g C_out + N C_out planes of complex float (8 bytes), half again for the sizes cuDNN pads
	   to beyond a power of two (measured up to 1.13 times the planes: a 256 -> 32 7x7 on two 32x32 maps, which
	   the heuristic, too, ran as an FFT, 308 MiB: a miss of the random corpus, cnn_1_127, that set the half) */
	int64_t planes = 0, fft = 0;
	if (sh.fft && mem_mul(sh.batch, sh.cin + sh.cout, &planes) && !mem_add(&planes, sh.cin / sh.groups * sh.cout))
		planes = TI_MEMORY_MAX_BYTES / 4;
	if (sh.fft && !(mem_mul(planes, sh.fft_positions, &fft) && mem_mul(fft, 12, &fft)))
		fft = TI_MEMORY_MAX_BYTES / 4;
	most = fft > most ? fft : most;
	if (benchmark) {
		int64_t split = 4 * (sh.weight / (elsize ? elsize : 1)), per_image;
		/* split-K weight gradient: a float32 weight per split, a split per image and output position at most,
		   CUDNN_SPLITS of them (the grid's most: 616 weights, a 8 -> 128 5x5 at stride 2 on 64 7x7 maps) */
		if (!mem_mul(sh.batch, strstr(op, "transpose") ? sh.in_positions : sh.out_positions, &per_image))
			per_image = CUDNN_SPLITS;
		if (!mem_mul(split, per_image < CUDNN_SPLITS ? per_image : CUDNN_SPLITS, &split))
			split = TI_MEMORY_MAX_BYTES / 4;
		most = split > most ? split : most;
	}
	*forward = *backward = most;
}

/*
 * A convolution's scratch, and what it depends on that the description does
 * not fix. On the CPU: the instruction set, where another set's kernels
 * would take other scratch (a weight gradient as a GEMM, channels padded to
 * another block), and in training the thread count, where the weight
 * gradient runs as a GEMM (its reduction buffer is booked per thread; the
 * figures are one thread's). On cuda: cuDNN's workspaces (cudnn_workspace).
 */
static void conv_plan(mem_builder *b, mem_unit *u, const char *op, const ti_op_call *c, const ti_meta_tensor *x,
                      const ti_meta_tensor *y)
{
	if (b->options->device == TI_MEMORY_CUDA) {
		bool uncertain;
		cudnn_workspace(op, c, x, y, b->options->cudnn_benchmark, b->cudnn, &u->fwd_scratch, &u->bwd_scratch,
		                &uncertain);
		if (uncertain)
			u->depends |= MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_WORKSPACE);
		return;
	}
	bool train = b->options->mode == TI_MEMORY_TRAIN, gemm;
	u->fwd_scratch = conv_scratch(op, c, x, y, b->options->cpu_isa, &u->bwd_scratch, &u->bwd_scratch_in, &gemm);
	if (gemm && train)
		u->depends |= MEM_UNCERTAIN(TI_UNCERTAIN_THREADS);
	for (int isa = 0; ti_cpu_isa_name((ti_cpu_isa)isa); isa++) {
		int64_t backward, backward_in;
		bool other_gemm;
		int64_t forward = conv_scratch(op, c, x, y, (ti_cpu_isa)isa, &backward, &backward_in, &other_gemm);
		if (forward != u->fwd_scratch || (train && backward != u->bwd_scratch))
			u->depends |= MEM_UNCERTAIN(TI_UNCERTAIN_CPU_ISA);
	}
}

/* Every output is one of the inputs itself (an item of a tuple, stochastic_depth in evaluation). */
static bool passes_inputs_through(const call_tensors *in, const call_tensors *out)
{
	for (int i = 0; i < out->n; i++) {
		bool found = false;
		for (int k = 0; k < in->n && !found; k++)
			found = out->t[i] == in->t[k];
		if (!found)
			return false;
	}
	return true;
}

/*
 * PyTorch 1.13's matmul of two operands of three dimensions or more reshapes
 * each to (batch, rows, columns) for bmm (at::native::matmul): a view where
 * the operand's batch dimensions merge into one stride, else a copy, and
 * bmm's backward saves what it got. A transposed view of a (B, T, H, D)
 * projection (q, k, v split from one linear and moved head-first) does not
 * merge: the copy is what attention keeps. Sizes of 1 never block a merge.
 */
static bool dims_merge(const ti_meta_tensor *t, int n, int64_t *product)
{
	int64_t expect = -1;
	*product = 1;
	for (int i = n - 1; i >= 0; i--) {
		int64_t size = t->shape[i].value, stride = t->stride[i].value;
		if (t->shape[i].sym || t->stride[i].sym)
			return true; /* symbolic: not decided here */
		*product *= size;
		if (size == 1)
			continue;
		if (expect >= 0 && stride != expect)
			return false;
		expect = stride * size;
	}
	return true;
}

static bool batch_dims_merge(const ti_meta_tensor *t, int batch_dims)
{
	int64_t product;
	if (!dims_merge(t, t->ndim - 2, &product))
		return false;
	return t->ndim - 2 >= batch_dims || product == 1; /* broadcast over more batch dims: expanded, then copied */
}

/*
 * linear, and matmul by a matrix, fold an input of three or more dims to (rows, in) with reshape
 * (at::native::matmul; F.linear takes that path for an input that is not contiguous): a view when the
 * leading dims merge into one stride, else a copy, which mm saves for the weight's gradient in place of
 * the input. A batch_first RNN's output is such a transposed view. Measured on 1.13: Linear(256, 64) after
 * a batch_first bidirectional RNN, [8, 256, 256]: the step rose 2.5 MiB (the 2 MiB copy, kept, and the
 * output); with a frozen weight the copy is made and freed in the call.
 */
static void fold_copy(const call_tensors *in, mem_unit *u)
{
	int64_t product;
	if (in->n < 2 || in->t[0]->ndim < 3 || in->t[1]->ndim > 2 || dims_merge(in->t[0], in->t[0]->ndim - 1, &product))
		return;
	int64_t bytes = mem_meta_bytes(in->t[0]);
	if ((u->saved_in & 1u) && u->saved_if[0] && !u->saved_cond_if) {
		u->saved_in &= ~1u;
		u->saved_cond = bytes;
		u->saved_cond_if = u->saved_if[0];
	} else if (u->saved_in & 1u) {
		u->saved_in &= ~1u;
		u->saved_extra += bytes;
	} else {
		u->fwd_scratch += bytes;
	}
}

static void matmul_copies(const call_tensors *in, const call_tensors *out, mem_unit *u)
{
	if (in->n != 2 || out->n != 1 || in->t[0]->ndim < 3 || in->t[1]->ndim < 3)
		return;
	int batch_dims = out->t[0]->ndim - 2;
	for (int i = 0; i < 2; i++) {
		if (batch_dims_merge(in->t[i], batch_dims))
			continue;
		int64_t bytes = mem_meta_bytes(in->t[i]);
		if (in->t[i]->ndim - 2 < batch_dims) { /* broadcast over more batch dims: copied at the output's batch */
			int64_t batch = 1, own = 1;
			for (int d = 0; d < batch_dims; d++)
				batch *= out->t[0]->shape[d].value;
			for (int d = 0; d < in->t[i]->ndim - 2; d++)
				own *= in->t[i]->shape[d].value;
			bytes = own ? bytes / own * batch : bytes;
		}
		if (u->saved_in & (1u << i)) {
			u->saved_in &= ~(1u << i);
			u->saved_extra += bytes; /* bmm keeps the copy, not the operand (assumed wanted: attention's are) */
		}
		u->fwd_scratch += bytes;
	}
	u->fwd_scratch_grad = 0;
}

static ti_status plan_plain(mem_builder *b, const mem_event *ev, const plain_row *row, ti_error *err)
{
	const ti_op_call *c = ev->call;
	call_tensors in, out;
	inputs_of(c, &in);
	outputs_of(c, &out);
	if (out.n && passes_inputs_through(&in, &out))
		return TI_OK; /* nothing allocated, nothing saved: the caller holds the same tensor */
	mem_unit u;
	memset(&u, 0, sizeof(u));
	u.label = label_of(b, ev->name);
	u.op = row->name;
	u.module = b->module;
	u.fwd_scratch_grad = -1;
	u.differentiable = row->out != CONSTANT;
	bool train = training(b, c);
	for (int i = 0; i < in.n; i++) {
		if (mem_meta_bytes(in.t[i]) < 0)
			return TI_FAIL(err, TI_E_LIMIT, "%s: an input of more than 2^62 bytes", u.label);
		int id = mem_tensor_of(b, in.t[i]);
		if (id < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger");
		u.in[u.nin] = id;
		unsigned need = saved_if(row->saves, in.name[i], &in);
		if (has_word(row->saves, in.name[i]) && need != NEVER_SAVED) {
			u.saved_in |= 1u << u.nin;
			u.saved_if[u.nin] = need;
		}
		u.nin++;
	}
	mem_out_kind kind = MEM_OUT_NEW;
	if (row->out == VIEW && !(!strcmp(row->name, "getitem") && index_gathers(c)))
		kind = MEM_OUT_VIEW;
	else if (row->out == INPLACE_FLAG && bound_flag(c, "inplace"))
		kind = MEM_OUT_INPLACE;
	else if (row->out == VIEW_IF_CONTIGUOUS && in.n && out.n && mem_meta_bytes(out.t[0]) >= 0 &&
	         ti_meta_is_contiguous(&b->model->ctx, in.t[0]))
		kind = MEM_OUT_VIEW;
	/* dropout outside training, p == 0: the input itself */
	bool dropping = row->extra == EXTRA_DROPOUT && train && bound_real(c, "p", 0.5) > 0;
	if (row->extra == EXTRA_DROPOUT && !dropping && kind == MEM_OUT_NEW)
		kind = MEM_OUT_VIEW;
	if (!in.n && kind != MEM_OUT_NEW)
		kind = MEM_OUT_NEW;
	u.out_kind = kind;
	for (int i = 0; i < out.n; i++) {
		if (mem_meta_bytes(out.t[i]) < 0)
			return TI_FAIL(err, TI_E_LIMIT, "%s: an output of more than 2^62 bytes", u.label);
		int id = kind == MEM_OUT_NEW ? mem_tensor_new(b, mem_meta_bytes(out.t[i]), u.label)
		                             : mem_tensor_view(b, u.in[0], mem_meta_bytes(out.t[i]));
		if (id < 0 || mem_tensor_bind(b, out.t[i], id) < 0)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger");
		mem_tensor_dtype(b, id, out.t[i]->dtype);
		u.out[u.nout] = id;
		if (has_word(row->saves, "result"))
			u.saved_out |= 1u << u.nout;
		u.nout++;
	}
	if (kind == MEM_OUT_VIEW)
		u.grad_view = row->grad_view & 1u;
	else if (kind == MEM_OUT_NEW && out.n == 1 && row->grad_view == GRAD_SLICES)
		u.grad_view = in.n >= 32 ? GRAD_SLICES : (1u << in.n) - 1;
	else if (kind == MEM_OUT_NEW && out.n == 1)
		for (int i = 0; i < in.n && i < 32; i++)
			if ((row->grad_view & (1u << i)) && in.t[i]->dtype == out.t[0]->dtype &&
			    mem_meta_bytes(in.t[i]) == mem_meta_bytes(out.t[0]))
				u.grad_view |= 1u << i;
	/*
	 * In place, a formula that needs the input (hardtanh_, silu_: not relu_,
	 * which needs its result) makes autograd clone the input first and save
	 * the clone: as much memory as the out-of-place call.
	 */
	if (kind == MEM_OUT_INPLACE && (u.saved_in & 1u)) {
		u.saved_in &= ~1u;
		u.saved_extra += mem_meta_bytes(in.t[0]);
	}
	const ti_meta_tensor *x = in.n ? in.t[0] : NULL;
	switch (row->extra) {
	case EXTRA_NONE:
		break;
	case EXTRA_DROPOUT:
		if (dropping && x) {
			/* feature dropouts (_dropout_impl<feature>): noise of one element per channel, [N, C, 1, ...] */
			bool feature = strstr(row->name, "dropout1d") || strstr(row->name, "dropout2d") ||
			               strstr(row->name, "dropout3d") || !strcmp(row->name, "feature_alpha_dropout");
			int64_t es = (int64_t)ti_dtype_size(x->dtype), bytes = mem_meta_bytes(x);
			if (feature && x->ndim >= 2)
				u.saved_extra = x->shape[0].value * x->shape[1].value * es;
			else
				u.saved_extra = mem_dropout_saved(b, bytes, es, !strcmp(row->name, "dropout"));
		}
		break;
	case EXTRA_ROW_STATS: {
		int nd = 1;
		for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
			if (!strcmp(c->in.sig->params[i].name, "normalized_shape") && c->in.args[i].kind == TI_ARG_LIST)
				nd = c->in.args[i].as.list.count;
		if (x)
			u.saved_extra = 2 * 4 * rows_of(x, nd);
		break;
	}
	case EXTRA_CHANNEL_STATS:
		if (x && x->ndim >= 2 && train && b->options->device == TI_MEMORY_CUDA) {
			/* cudnn_batch_norm saves the batch's mean and inverse std, a float32 tensor each (its reserve is
			   empty without a fused activation), and its backward takes no scratch: both measured on an H200 */
			u.saved_extra = 2 * mem_cuda_round(4 * x->shape[1].value);
		} else if (x && x->ndim >= 2 && train) {
			u.saved_extra = 2 * 4 * x->shape[1].value;
			u.bwd_scratch = mem_meta_bytes(x); /* measured: backward peaks at twice the input: its gradient and this */
		}
		if (!train) /* eval: the running statistics; nothing of the input is needed beyond */
			u.saved_in &= ~1u;
		break;
	case EXTRA_GROUP_STATS:
		if (x && x->ndim >= 1)
			u.saved_extra = 2 * 4 * x->shape[0].value * (bound_has(c, "num_groups") ? 32 : 1);
		break;
	case EXTRA_LOG_SOFTMAX:
		if (x) {
			u.saved_extra = mem_meta_bytes(x);
			u.fwd_scratch = u.saved_extra;
			u.fwd_scratch_grad = 0;
			u.bwd_scratch = u.saved_extra;
		}
		break;
	case EXTRA_RMS_COMPOSITE: {
		/*
		 * RMSNorm is no fused kernel: transformers' LlamaRMSNorm (and the other
		 * families', and nn.RMSNorm's composite) runs x.float(), pow(2),
		 * mean, rsqrt, x * rstd and weight * that, saving as they go.
		 * Measured on 1.13 (x [16, 256, 256], 4 MiB): the forward leaves two
		 * input-sized float32 tensors saved beside its output and the row
		 * statistics; under no_grad it peaks at one beside the output; the
		 * backward at two beside the input's gradient.
		 */
		int nd = 1;
		bool weight = false;
		for (int i = 0; c->in.sig && i < c->in.sig->count; i++) {
			if (!strcmp(c->in.sig->params[i].name, "normalized_shape") && c->in.args[i].kind == TI_ARG_LIST)
				nd = c->in.args[i].as.list.count;
			if (!strcmp(c->in.sig->params[i].name, "weight") && c->in.args[i].kind == TI_ARG_TENSOR)
				weight = true;
		}
		if (x) {
			int64_t es = (int64_t)ti_dtype_size(x->dtype), f32 = mem_meta_bytes(x) / (es ? es : 1) * 4;
			/* the saved pair: the normalized rows (the weight's mul saves them) and, on 1.13, x ** 2 (its mean
			   over the last dim saves its input; 2.x keeps only the sizes) - also measured against a 1.13
			   re-implementation of Mixtral's: each norm kept its input's size three times, and the rsqrt */
			bool squares = ti_memory_torch(b->options) != TI_TORCH_2;
			u.saved_extra = (squares ? f32 : 0) + 4 * rows_of(x, nd);
			/* the normalized rows only while the weight trains (a LoRA-frozen norm's mul keeps the weight alone) */
			u.fwd_scratch = f32; /* under no_grad, x * rstd beside the output */
			u.fwd_scratch_grad = 0;
			for (int i = 0; weight && i < in.n; i++)
				if (!strcmp(in.name[i], "weight")) { /* x * rstd, kept, or a temporary as under no_grad */
					u.saved_cond = f32;
					u.saved_cond_if = 1u << i;
					u.fwd_scratch = 0;
				}
			u.bwd_scratch = 2 * f32;
		}
		break;
	}
	case EXTRA_INDICES: /* made in every mode, kept only for backward */
		if (out.n) {
			int64_t es = (int64_t)ti_dtype_size(out.t[0]->dtype);
			u.saved_extra = mem_meta_bytes(out.t[0]) / (es ? es : 1) * 8;
			u.fwd_scratch = u.saved_extra;
			u.fwd_scratch_grad = 0;
		}
		break;
	}
	if (row->extra == EXTRA_DROPOUT && !dropping)
		u.differentiable = true;
	if (!strcmp(row->name, "matmul"))
		matmul_copies(&in, &out, &u);
	if (!strcmp(row->name, "matmul") || !strcmp(row->name, "linear"))
		fold_copy(&in, &u);
	/*
	 * 1.13's mean over dimensions saves its input: its formula reads
	 * self.numel() (measured: x [1024, 1024] * 2, then .mean(-1) keeps the
	 * product's 4 MiB; .mean() and .sum(-1) keep nothing). An RMSNorm written
	 * out keeps x ** 2 so.
	 */
	if (!strcmp(row->name, "mean") && in.n && out.n && ti_memory_torch(b->options) == TI_TORCH_1_13 &&
	    mem_meta_bytes(out.t[0]) > (int64_t)ti_dtype_size(out.t[0]->dtype)) {
		u.saved_in |= 1u;
		u.saved_if[0] = 0;
	}
	if (x && out.n && !strncmp(row->name, "conv", 4))
		conv_plan(b, &u, row->name, c, x, out.t[0]);
	if (b->options->quantize && (!strcmp(row->name, "linear") || !strcmp(row->name, "matmul")) && in.n >= 2)
		mem_quant_linear(b, &u, x, in.t[1]);
	ti_status st = mem_amp(b, &u, row->name, err);
	mem_tp(b, &u, row->name);
	return st ? st : mem_emit(b, &u, err);
}

bool mem_rule_plain(const char *name) { return plain_find(name) != NULL; }

ti_status mem_rule_plan_op(mem_builder *b, const mem_event *ev, ti_error *err)
{
	const plain_row *row = plain_find(ev->name);
	if (row)
		return plan_plain(b, ev, row, err);
	return mem_rule_default(b, ev, err);
}

/* No row: outputs new, every tensor input saved, and the figure marked as a guess. */
ti_status mem_rule_default(mem_builder *b, const mem_event *ev, ti_error *err)
{
	static const plain_row guess = {"?", NEW, "", EXTRA_NONE, false};
	size_t before = b->unit_count;
	ti_status st = plan_plain(b, ev, &guess, err);
	if (st || b->unit_count == before)
		return st;
	mem_unit *u = &b->units[b->unit_count - 1];
	u->unknown = true;
	u->op = ev->name;
	u->saved_in = (1u << u->nin) - 1;
	for (size_t i = 0; i < b->unknown_count; i++)
		if (!strcmp(b->unknown_ops[i], ev->name))
			return TI_OK;
	const char **grown = ti_arena_calloc(b->arena, b->unknown_count + 1, sizeof(*grown));
	if (!grown)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	if (b->unknown_count)
		memcpy(grown, b->unknown_ops, b->unknown_count * sizeof(*grown));
	grown[b->unknown_count++] = ev->name;
	b->unknown_ops = grown;
	return TI_OK;
}

/* ---- helpers for the rows that expand a module ---- */

int mem_param(mem_builder *b, const ti_module *m, const char *local)
{
	const ti_meta_tensor *t = ti_module_tensor_get(m, local);
	return t ? mem_tensor_of(b, t) : -1;
}

int mem_step(mem_builder *b, const char *op, const int *ins, int nin, unsigned saved_in, int64_t out_bytes,
             mem_out_kind kind, bool save_out, int64_t saved_extra, ti_error *err)
{
	mem_unit u;
	memset(&u, 0, sizeof(u));
	u.label = label_of(b, op);
	u.op = op;
	u.module = b->module;
	u.fwd_scratch_grad = -1;
	u.differentiable = true;
	u.out_kind = kind;
	for (int i = 0; i < nin && u.nin < MEM_MAX_IO; i++) {
		if (ins[i] < 0)
			continue;
		if (saved_in & (1u << i))
			u.saved_in |= 1u << u.nin;
		u.in[u.nin++] = ins[i];
	}
	if (out_bytes < 0)
		return TI_FAIL(err, TI_E_LIMIT, "a tensor of '%s' is larger than %lld bytes", u.label,
		               (long long)TI_MEMORY_MAX_BYTES), -1;
	int id = kind == MEM_OUT_NEW || !u.nin ? mem_tensor_new(b, out_bytes, u.label) : mem_tensor_view(b, u.in[0], out_bytes);
	if (id < 0)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger"), -1;
	if (kind != MEM_OUT_NEW && !u.nin)
		u.out_kind = MEM_OUT_NEW;
	u.out[u.nout++] = id;
	u.saved_out = save_out ? 1u : 0;
	u.saved_extra = saved_extra;
	u.grad_view = kind == MEM_OUT_VIEW ? 1u : 0;
	if (kind == MEM_OUT_NEW && u.nin && b->tensors[u.in[0]].floating) /* computes in its first input's dtype */
		b->tensors[id].elsize = b->tensors[u.in[0]].elsize;
	if (mem_amp(b, &u, op, err))
		return -1;
	mem_tp(b, &u, op);
	if (mem_emit(b, &u, err))
		return -1;
	return id;
}
