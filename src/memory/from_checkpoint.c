/*
 * from_checkpoint.c - the memory terms a checkpoint alone can give (see
 * tinspect/memory.h): its weights by dtype, each storage once; for training,
 * a gradient per floating parameter and the optimizer state, the
 * checkpoint's own when it holds one. A checkpoint has no graph, so the
 * activations are not known: the peak is a lower bound, and says so.
 *
 * Which tensors are optimizer state is read from the names torch.optim's
 * state_dict() gives them: "...state.<index>.<key>" with key one of the
 * optimizers' state names (exp_avg, momentum_buffer, ...). Buffers are the
 * names a module registers them under (running_mean, ...).
 */
#include <string.h>

#include "memory/memory_internal.h"
#include "tinspect/source.h"

static const char *const state_keys[] = {
	"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "sum", "acc_delta",
	"grad_avg", "ax", "eta", "mu", "prev", "step_size", "exp_avg_sq_row", "exp_avg_sq_col", "state1", "state2",
	"qmap1", "qmap2", "absmax1", "absmax2", "step", NULL,
};

static const char *const buffer_names[] = {"running_mean", "running_var", "num_batches_tracked", NULL};

static bool is_number(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* "optimizer.state.12.exp_avg", "optimizer_states.0.state.3.momentum_buffer" */
static bool is_optimizer_state(const char *name)
{
	for (const char *p = strstr(name, "state."); p; p = strstr(p + 1, "state.")) {
		if (p != name && p[-1] != '.')
			continue;
		const char *num = p + 6, *dot = strchr(num, '.');
		if (!dot || !is_number(num, (size_t)(dot - num)))
			continue;
		for (const char *const *k = state_keys; *k; k++)
			if (!strcmp(dot + 1, *k))
				return true;
	}
	return false;
}

static bool is_buffer(const char *name)
{
	const char *last = strrchr(name, '.');
	last = last ? last + 1 : name;
	for (const char *const *b = buffer_names; *b; b++)
		if (!strcmp(last, *b))
			return true;
	return false;
}

ti_status ti_memory_from_source(ti_source *src, const ti_memory_options *o, ti_arena *arena,
                                const ti_memory_report **out, ti_error *err)
{
	size_t nt = ti_source_tensor_count(src), ns = ti_source_storage_count(src);
	/* a storage is the optimizer's when every tensor over it is optimizer state */
	signed char *kind = ti_arena_calloc(arena, ns + 1, 1); /* 0 unseen, 1 model, 2 optimizer */
	mem_param_info *params = ti_arena_calloc(arena, nt + 1, sizeof(*params));
	ti_memory_report *r = ti_arena_alloc(arena, sizeof(*r));
	if (!kind || !params || !r)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	size_t np = 0;
	int64_t saved_state = 0;
	bool *has_grad = ti_arena_calloc(arena, ns + 1, sizeof(*has_grad)); /* a tied parameter is one parameter */
	if (!has_grad)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < nt; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		bool state = is_optimizer_state(t->name);
		if (t->storage < ns)
			kind[t->storage] = state ? (kind[t->storage] ? kind[t->storage] : 2) : 1;
		if (state || is_buffer(t->name) || !ti_dtype_is_floating(t->dtype) || t->tie_of ||
		    (t->storage < ns && has_grad[t->storage]))
			continue;
		if (t->storage < ns)
			has_grad[t->storage] = true;
		ti_dtype dt = o->dtype ? o->dtype : t->dtype;
		int64_t bytes;
		if (!mem_mul(t->numel, (int64_t)ti_dtype_size(dt), &bytes))
			return TI_FAIL(err, TI_E_LIMIT, "'%s' is larger than 2^62 bytes", t->name);
		params[np++] = (mem_param_info){bytes, t->numel, t->ndim, t->shape, dt};
	}
	/* weights: each storage once, in the dtype asked for when it is floating */
	for (size_t i = 0; i < ns; i++) {
		const ti_source_storage *s = ti_source_storage_at(src, i);
		int64_t bytes = (int64_t)s->nbytes;
		if (o->dtype && ti_dtype_is_floating(s->dtype) && ti_dtype_size(s->dtype))
			bytes = (int64_t)(s->nbytes / ti_dtype_size(s->dtype)) * (int64_t)ti_dtype_size(o->dtype);
		if (!mem_add(kind[i] == 2 ? &saved_state : &r->weights, bytes))
			return TI_FAIL(err, TI_E_LIMIT, "the checkpoint holds more than 2^62 bytes");
	}
	r->parameters = r->weights;
	bool train = o->mode == TI_MEMORY_TRAIN;
	const char *rule = "inference: none";
	mem_optim_cost cost = {0, 0};
	if (train) {
		for (size_t i = 0; i < np; i++)
			if (!mem_add(&r->gradients, params[i].bytes))
				return TI_FAIL(err, TI_E_LIMIT, "gradients past 2^62 bytes");
		ti_status st = mem_optim_cost_of(o, params, np, &cost, &rule, err);
		if (st)
			return st;
		if (saved_state) {
			cost.state = saved_state;
			rule = "the optimizer state the checkpoint holds";
		}
		r->optimizer_state = cost.state;
	}
	r->peak = r->weights;
	if (train && (!mem_add(&r->peak, r->gradients) || !mem_add(&r->peak, r->optimizer_state) ||
	              !mem_add(&r->peak, cost.step_scratch)))
		return TI_FAIL(err, TI_E_LIMIT, "the step needs more than 2^62 bytes");
	r->peak_phase = train ? TI_PHASE_OPTIMIZER : TI_PHASE_FORWARD;
	r->peak_step = train ? "optimizer.step()" : "the weights loaded";
	r->peak_module = "";
	const char *why = "a checkpoint has no graph: activations and inputs are not counted (give a description for them)";
	ti_memory_term terms[] = {
		{"weights", r->weights, saved_state ? "the model's tensors, each storage once (the optimizer's apart)"
		                                    : "every tensor, each storage once", false, NULL, 0},
		{"inputs", 0, "unknown without a description", true, why, 0},
		{"gradients", r->gradients, train ? "a .grad per floating parameter" : "inference: none", false, NULL, 0},
		{"optimizer_state", r->optimizer_state, rule, false, NULL, 0},
		{"activations", 0, "unknown without a description", train, train ? why : NULL, 0},
		{"kv_cache", 0, "unknown without a description", false, NULL, 0},
		{"peak", r->peak, train ? "weights + gradients + optimizer state + the step's temporaries" : "the weights",
		 true, why, 0},
	};
	r->term_count = sizeof(terms) / sizeof(terms[0]);
	r->terms = ti_arena_calloc(arena, r->term_count, sizeof(*r->terms));
	const char **notes = ti_arena_calloc(arena, 1, sizeof(*notes));
	if (!r->terms || !notes)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	memcpy(r->terms, terms, sizeof(terms));
	notes[0] = why;
	r->notes = notes;
	r->note_count = 1;
	/* what only a graph gives is not counted: the high end is open */
	unsigned kinds = MEM_UNCERTAIN(TI_UNCERTAIN_RULES) | MEM_UNCERTAIN(TI_UNCERTAIN_NO_GRAPH);
	ti_status st = mem_uncertain_list(r, arena, kinds, err);
	if (st || (st = mem_peak_range(r, r->peak, r->peak, err)))
		return st;
	*out = r;
	return TI_OK;
}

/* The prefixes a training script puts before a state dict's names, tried in order. */
static const char *const prefixes[] = {"", "model.", "state_dict.", "module.", "model.module.", "_orig_mod.",
                                       "model._orig_mod.", "net.", "network.", NULL};

ti_status ti_memory_weights_from(ti_source *src, const ti_model *model, ti_arena *arena, ti_dtype **dtypes,
                                 size_t *matched, int64_t *optimizer_state, ti_error *err)
{
	size_t np;
	const ti_model_param *params = ti_model_params(model, &np);
	size_t nt = ti_source_tensor_count(src), ns = ti_source_storage_count(src);
	ti_dtype *out = ti_arena_calloc(arena, np + 1, sizeof(*out));
	bool *state_storage = ti_arena_calloc(arena, ns + 1, sizeof(*state_storage));
	if (!out || !state_storage)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	*matched = 0;
	*optimizer_state = 0;
	for (size_t i = 0; i < nt; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		if (is_optimizer_state(t->name) && t->storage < ns && !state_storage[t->storage]) {
			state_storage[t->storage] = true;
			if (!mem_add(optimizer_state, (int64_t)ti_source_storage_at(src, t->storage)->nbytes))
				return TI_FAIL(err, TI_E_LIMIT, "optimizer state past 2^62 bytes");
		}
	}
	for (size_t p = 0; p < np; p++) {
		for (const char *const *pre = prefixes; *pre && !out[p]; pre++) {
			size_t n = strlen(*pre);
			for (size_t i = 0; i < nt; i++) {
				const char *name = ti_source_tensor_at(src, i)->name;
				if (!strncmp(name, *pre, n) && !strcmp(name + n, params[p].name)) {
					out[p] = ti_source_tensor_at(src, i)->dtype;
					(*matched)++;
					break;
				}
			}
		}
	}
	*dtypes = out;
	return TI_OK;
}
