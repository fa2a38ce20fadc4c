/*
 * optim.c - what an optimizer keeps between steps and what its step
 * allocates: one table, a row per optimizer (torch.optim in PyTorch 1.13,
 * and the two common outside ones: Lion, and bitsandbytes' 8-bit Adam).
 *
 * State is counted per trainable parameter in the parameter's dtype (the
 * tensors torch.optim creates with zeros_like / clone), except where the
 * optimizer fixes its own (8-bit Adam: one byte per element and a float
 * scale per block of 2048). Adam's `step` is a 0-dim float32 tensor per
 * parameter in 1.13 (4 bytes each).
 *
 * Step temporaries, by implementation (measured on PyTorch 1.13's CPU with
 * tests/conformance/memory_optim.py: P all parameters, PMAX the largest):
 *   for-loop  one parameter at a time: Adam 2 PMAX, RMSprop and Adagrad
 *             PMAX, SGD with momentum none; and the result the previous
 *             parameter left in a Python local (Adam's denom, RMSprop's
 *             avg, Adagrad's std) lives until this one's is assigned, so
 *             the step peaks at max over i of kept x P[i-1] + temps x P[i]
 *             in the parameters' order (measured: Adam on a Linear(1024,
 *             1024) then a Linear(1024, 1000) holds three such tensors);
 *   foreach   a whole group at once: Adam 2 P, Adagrad 3 P, RMSprop P,
 *             SGD with momentum none;
 *   fused     none beyond a few scalars (1.13 has it on CUDA only).
 *
 * PyTorch 2.x (torch/optim/adam.py _multi_tensor_adam and its siblings):
 * foreach Adam divides and adds eps in place, one temporary P
 * (exp_avg_sq_sqrt) where 1.13 made two; Adagrad keeps std and a scaled
 * gradient (2 P), RMSprop avg (P). Its `step` tensors live on the CPU
 * unless the implementation is fused or capturable; they are counted with
 * the state all the same, as the state dict holds them (4 bytes a
 * parameter). Its default implementation on CUDA is foreach
 * (ti_memory_default_impl).
 */
#include <string.h>

#include "memory/memory_internal.h"

typedef struct optim_row {
	const char *name;
	int state_per_element;   /* state tensors the size of the parameter */
	int step_tensors;        /* 0-dim float32 `step` tensors per parameter */
	int temporaries;         /* parameter-sized temporaries the for-loop step makes at once */
	int foreach_temporaries; /* the same per parameter, all alive together in foreach */
	int foreach_temporaries_2; /* the same in PyTorch 2.x's foreach */
	int kept;                /* of those, bound to a local that lives into the next parameter's step */
	const char *rule;
} optim_row;

static const optim_row rows[] = {
	[TI_OPTIM_NONE] = {"none", 0, 0, 0, 0, 0, 0, "no optimizer: gradients only"},
	[TI_OPTIM_SGD] = {"sgd", 0, 0, 0, 0, 0, 0, "SGD: no state; p.add_(grad, alpha=-lr) in place"},
	[TI_OPTIM_MOMENTUM] = {"momentum", 1, 0, 0, 0, 0, 0,
	                       "SGD(momentum): momentum_buffer per trainable parameter; buf.mul_().add_(grad) in place"},
	[TI_OPTIM_ADAM] = {"adam", 2, 1, 2, 2, 1, 1,
	                   "Adam: exp_avg + exp_avg_sq per trainable parameter, a float32 step each; "
	                   "denom = exp_avg_sq.sqrt() / c + eps"},
	[TI_OPTIM_ADAMW] = {"adamw", 2, 1, 2, 2, 1, 1,
	                    "AdamW: exp_avg + exp_avg_sq per trainable parameter, a float32 step each; "
	                    "denom = exp_avg_sq.sqrt() / c + eps"},
	[TI_OPTIM_ADAGRAD] = {"adagrad", 1, 1, 1, 3, 2, 1, "Adagrad: sum per trainable parameter; std = state_sum.sqrt().add_(eps)"},
	[TI_OPTIM_RMSPROP] = {"rmsprop", 1, 1, 1, 1, 1, 1, "RMSprop: square_avg per trainable parameter; avg = square_avg.sqrt().add_(eps)"},
	[TI_OPTIM_LION] = {"lion", 1, 0, 1, 1, 1, 0, "Lion: exp_avg per trainable parameter; update = sign(interpolation)"},
	[TI_OPTIM_ADAFACTOR] = {"adafactor", 0, 1, 2, 1, 1, 0,
	                        "Adafactor: row and column second-moment factors per matrix, a full one per vector"},
	[TI_OPTIM_ADAM8BIT] = {"adam8bit", 0, 1, 0, 0, 0, 0,
	                       "8-bit Adam (bitsandbytes): two uint8 states per element + a float32 scale per 2048"},
};

const char *ti_memory_optimizer_name(ti_memory_optimizer o)
{
	return (unsigned)o < sizeof(rows) / sizeof(rows[0]) ? rows[o].name : NULL;
}

int ti_memory_optimizer_parse(const char *name)
{
	for (size_t i = 1; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (!strcmp(rows[i].name, name))
			return (int)i;
	return -1;
}

static const char *const impls[] = {"for-loop", "foreach", "fused"};

const char *ti_memory_impl_name(ti_memory_impl i)
{
	return (unsigned)i < 3 ? impls[i] : NULL;
}

int ti_memory_impl_parse(const char *name)
{
	for (int i = 0; i < 3; i++)
		if (!strcmp(impls[i], name))
			return i;
	return -1;
}

/* Adafactor keeps, for a parameter of two or more dims, a row factor and a column factor. */
static int64_t adafactor_state(const mem_param_info *p)
{
	int64_t es = (int64_t)ti_dtype_size(p->dtype);
	if (p->ndim < 2)
		return p->bytes;
	int64_t rows = 1, cols = p->shape[p->ndim - 1];
	for (int k = 0; k + 1 < p->ndim; k++)
		rows *= p->shape[k];
	int64_t inner = p->shape[p->ndim - 2];
	return (rows + (rows / (inner ? inner : 1)) * cols) * es;
}

ti_memory_impl ti_memory_default_impl(const ti_memory_options *options)
{
	return ti_memory_torch(options) == TI_TORCH_2 && options->device == TI_MEMORY_CUDA ? TI_IMPL_FOREACH
	                                                                                    : TI_IMPL_FOR_LOOP;
}

ti_status mem_optim_cost_of(const ti_memory_options *options, const mem_param_info *params, size_t n,
                            mem_optim_cost *out, const char **rule, ti_error *err)
{
	ti_memory_optimizer o = options->optimizer;
	ti_memory_impl impl = options->impl;
	bool torch2 = ti_memory_torch(options) == TI_TORCH_2;
	memset(out, 0, sizeof(*out));
	if ((unsigned)o >= sizeof(rows) / sizeof(rows[0]))
		return TI_FAIL(err, TI_E_INVALID, "unknown optimizer %d", (int)o);
	const optim_row *r = &rows[o];
	*rule = r->rule;
	int64_t largest = 0, all = 0, kept = 0; /* kept: what the previous parameter's step left bound */
	for (size_t i = 0; i < n; i++) {
		const mem_param_info *p = &params[i];
		int64_t state = 0;
		if (o == TI_OPTIM_ADAFACTOR)
			state = adafactor_state(p);
		else if (o == TI_OPTIM_ADAM8BIT) {
			state = 2 * p->numel;
			if (!mem_add(&state, 2 * 4 * ((p->numel + 2047) / 2048)))
				return TI_FAIL(err, TI_E_LIMIT, "optimizer state past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		} else if (!mem_mul(p->bytes, r->state_per_element, &state))
			return TI_FAIL(err, TI_E_LIMIT, "optimizer state past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		if (!mem_add(&state, 4 * r->step_tensors) || !mem_add(&out->state, state))
			return TI_FAIL(err, TI_E_LIMIT, "optimizer state past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		int64_t t;
		if (!mem_mul(p->bytes, r->temporaries, &t) || !mem_add(&t, kept))
			return TI_FAIL(err, TI_E_LIMIT, "optimizer temporaries past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
		if (t > largest)
			largest = t;
		kept = p->bytes * r->kept; /* kept <= 1: no overflow past the check above */
		if (!mem_mul(p->bytes, torch2 ? r->foreach_temporaries_2 : r->foreach_temporaries, &t) || !mem_add(&all, t))
			return TI_FAIL(err, TI_E_LIMIT, "optimizer temporaries past %lld bytes", (long long)TI_MEMORY_MAX_BYTES);
	}
	switch (impl) {
	case TI_IMPL_FOR_LOOP:
		out->step_scratch = largest;
		break;
	case TI_IMPL_FOREACH:
		out->step_scratch = all > largest ? all : largest;
		break;
	case TI_IMPL_FUSED:
		out->step_scratch = 0;
		break;
	}
	return TI_OK;
}
