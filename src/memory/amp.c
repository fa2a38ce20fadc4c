/*
 * amp.c - torch.autocast for the ledger (--amp bf16|fp16): which dtype each
 * operator computes in, and the casts autocast makes to get there.
 *
 * As autocast's op lists in PyTorch 1.13 (aten/src/ATen/autocast_mode.cpp)
 * say: matmuls and convolutions run in the low dtype, their float32 inputs
 * cast first (a parameter's cast is cached for the rest of the forward: one
 * copy however often it is used, kept longer when an op saves it for
 * backward); softmax, the norms, the losses, exp/log/pow and reductions run
 * in float32, their low inputs cast up; everything else computes in the
 * widest dtype of its inputs. Parameters stay float32 (the master weights),
 * and so do their gradients; an activation's gradient has its dtype.
 */
#include <string.h>

#include "memory/memory_internal.h"

static const char *const lower[] = {
	"linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "mv", "einsum", "bilinear", "conv1d", "conv2d", "conv3d",
	"conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention", NULL,
};

static const char *const fp32[] = {
	"softmax", "log_softmax", "softmin", "layer_norm", "group_norm", "rms_norm", "instance_norm", "cross_entropy",
	"nll_loss", "mse_loss", "l1_loss", "exp", "log", "pow", "sum", "cumsum", "prod", "norm", "logsumexp", "rsqrt",
	"reciprocal", "softplus", "normalize", NULL,
};

/* Binary arithmetic promotes to the widest input; everything else computes in its first input's dtype. */
static const char *const promote[] = {
	"add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide", "maximum", "minimum",
	"where", "cat", "concat", "stack", "hstack", "vstack", NULL,
};

static bool listed(const char *op, const char *const *list)
{
	for (; op && *list; list++)
		if (!strcmp(op, *list))
			return true;
	return false;
}

/* A cast unit: a new tensor of x's elements at elsize bytes each. */
static int cast(mem_builder *b, int x, int elsize, ti_error *err)
{
	const mem_tensor *t = &b->tensors[x];
	int64_t numel = t->elsize ? t->bytes / t->elsize : t->bytes;
	mem_unit c;
	memset(&c, 0, sizeof(c));
	c.label = ti_arena_printf(b->arena, "%s%sto (autocast)", b->module_path && *b->module_path ? b->module_path : "",
	                          b->module_path && *b->module_path ? " " : "");
	c.op = "to";
	c.module = b->module;
	c.fwd_scratch_grad = -1;
	c.differentiable = true;
	c.out_kind = MEM_OUT_NEW;
	c.in[c.nin++] = x;
	int id = mem_tensor_new(b, numel * elsize, c.label);
	if (id < 0)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger"), -1;
	b->tensors[id].elsize = elsize;
	b->tensors[id].floating = true;
	c.out[c.nout++] = id;
	if (mem_emit(b, &c, err))
		return -1;
	return id;
}

/* A parameter's cast, made once and cached until the forward ends. */
static int cached_cast(mem_builder *b, int x, int elsize, ti_error *err)
{
	size_t old = b->amp_cache_capacity;
	if (ti_arena_array_grow(b->arena, (void **)&b->amp_cache, &b->amp_cache_capacity, sizeof(*b->amp_cache),
	                        b->tensor_count + 1))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory"), -1;
	if (b->amp_cache_capacity > old) /* grown items are not zeroed */
		memset(b->amp_cache + old, 0, (b->amp_cache_capacity - old) * sizeof(*b->amp_cache));
	if (b->amp_cache[x] > 0)
		return b->amp_cache[x] - 1;
	int id = cast(b, x, elsize, err);
	if (id >= 0)
		b->amp_cache[x] = id + 1; /* 0: none */
	return id;
}

ti_status mem_amp(mem_builder *b, mem_unit *u, const char *op, ti_error *err)
{
	ti_dtype low = b->options->amp;
	if (!low)
		return TI_OK;
	int lo = (int)ti_dtype_size(low);
	int want = listed(op, lower) ? lo : listed(op, fp32) ? 4 : 0;
	bool widen = listed(op, promote);
	int widest = 0, first = 0;
	for (int i = 0; i < u->nin; i++) {
		mem_tensor *t = &b->tensors[u->in[i]];
		if (!t->floating)
			continue;
		if (want && t->elsize != want && u->out_kind == MEM_OUT_NEW) {
			int c = t->param >= 0 && want == lo ? cached_cast(b, u->in[i], want, err) : cast(b, u->in[i], want, err);
			if (c < 0)
				return err->code;
			u->in[i] = c;
		}
		if (b->tensors[u->in[i]].elsize > widest)
			widest = b->tensors[u->in[i]].elsize;
		if (!first)
			first = b->tensors[u->in[i]].elsize;
	}
	int to = want ? want : widen ? widest : first;
	if (!to)
		return TI_OK;
	for (int o = 0; o < u->nout; o++) {
		mem_tensor *t = &b->tensors[u->out[o]];
		if (!t->floating || t->elsize == to)
			continue;
		t->bytes = t->bytes / (t->elsize ? t->elsize : 4) * to;
		t->elsize = to;
	}
	return TI_OK;
}

ti_status mem_amp_finish(mem_builder *b, ti_error *err)
{
	if (!b->options->amp || !b->amp_cache)
		return TI_OK;
	mem_unit u;
	memset(&u, 0, sizeof(u));
	u.label = "(autocast exits: its cache let go)";
	u.op = "release";
	u.fwd_scratch_grad = -1;
	u.release = true;
	for (size_t t = 0; t < b->amp_cache_capacity && t < b->tensor_count; t++)
		if (b->amp_cache[t] > 0 && u.nin < MEM_MAX_IO)
			u.in[u.nin++] = b->amp_cache[t] - 1;
		else if (b->amp_cache[t] > 0) {
			ti_status st = mem_emit(b, &u, err);
			if (st)
				return st;
			u.nin = 0;
			u.in[u.nin++] = b->amp_cache[t] - 1;
		}
	return u.nin ? mem_emit(b, &u, err) : TI_OK;
}
