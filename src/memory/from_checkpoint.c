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
#include <stdio.h>
#include <string.h>

#include "memory/memory_internal.h"
#include "tinspect/source.h"

static const char *const state_keys[] = {
	"exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer", "square_avg", "sum", "acc_delta",
	"grad_avg", "ax", "eta", "mu", "prev", "step_size", "exp_avg_sq_row", "exp_avg_sq_col", "state1", "state2",
	"qmap1", "qmap2", "absmax1", "absmax2", "step", NULL,
};

static const char *const buffer_names[] = {"running_mean", "running_var", "num_batches_tracked", NULL};

/*
 * The tensors of a quantized Linear, by the suffix of their names, and the
 * method that writes them: AutoGPTQ and AutoAWQ (qweight, qzeros: int32 of
 * packed 4-bit values; scales: float16 a group; g_idx: GPTQ's group of each
 * input), bitsandbytes through transformers (Linear4bit's weight: uint8
 * packed, and QuantState.as_dict(packed=True): absmax, quant_map,
 * nested_absmax, nested_quant_map, quant_state.bitsandbytes__nf4|fp4;
 * Linear8bitLt's int8 weight, SCB and weight_format). Such tensors are the
 * weight's storage, counted at their bytes: none trains (no gradient, no
 * optimizer state) and --dtype does not cast them.
 */
static const struct quant_suffix {
	const char *suffix, *method;
} quant_suffixes[] = {
	{".g_idx", "GPTQ"},
	{".qweight", "AWQ"},
	{".qzeros", "AWQ"},
	{".scales", "AWQ"},
	{".weight.quant_state.bitsandbytes__nf4", "bitsandbytes nf4"},
	{".weight.quant_state.bitsandbytes__fp4", "bitsandbytes fp4"},
	{".weight.absmax", "bitsandbytes 4-bit"},
	{".weight.quant_map", "bitsandbytes 4-bit"},
	{".weight.nested_absmax", "bitsandbytes 4-bit"},
	{".weight.nested_quant_map", "bitsandbytes 4-bit"},
	{".SCB", "bitsandbytes int8"},
	{".weight_format", "bitsandbytes int8"},
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* The quant_suffixes row of name, or -1. */
static int quant_row(const char *name)
{
	for (size_t i = 0; i < sizeof(quant_suffixes) / sizeof(quant_suffixes[0]); i++)
		if (ends_with(name, quant_suffixes[i].suffix))
			return (int)i;
	return -1;
}

/*
 * What quantizes a checkpoint, in words ("GPTQ", "bitsandbytes nf4", "GGUF
 * Q4_K, Q6_K"), into buf; "" for none. The most specific name wins: g_idx
 * makes AWQ's tensors GPTQ's, a packed quant_state names nf4 or fp4.
 */
static void quant_method(const char *const *found, size_t n, char *buf, size_t size)
{
	static const char *const order[] = {"GPTQ", "AWQ", "bitsandbytes nf4", "bitsandbytes fp4", "bitsandbytes 4-bit",
	                                    "bitsandbytes int8"};
	buf[0] = '\0';
	bool gptq = false, bnb4 = false;
	for (size_t i = 0; i < n; i++) {
		gptq |= !strcmp(found[i], "GPTQ");
		bnb4 |= !strcmp(found[i], "bitsandbytes nf4") || !strcmp(found[i], "bitsandbytes fp4");
	}
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		bool any = false;
		for (size_t i = 0; i < n; i++)
			any |= !strcmp(found[i], order[k]);
		if (!any || (gptq && !strcmp(order[k], "AWQ")) || (bnb4 && !strcmp(order[k], "bitsandbytes 4-bit")))
			continue;
		size_t len = strlen(buf);
		snprintf(buf + len, size - len, "%s%s", len ? ", " : "", order[k]);
	}
}

/* A GGUF tensor of quantized blocks: its ggml type, and its bytes in the file (*bytes). NULL for any other. */
static const char *gguf_blocks(const ti_entry *e, int64_t *bytes)
{
	if (!e || !e->value || e->value->kind != TI_TENSOR)
		return NULL;
	const ti_tensor *t = e->value->as.tensor;
	const ti_tensor_ext *x = ti_tensor_ext_of(t);
	if (!x->ggml_type || x->bits_per_weight <= 0 || x->bits_per_weight >= 16)
		return NULL;
	*bytes = (int64_t)(t->numel * x->bits_per_weight / 8 + 0.5);
	return x->ggml_type;
}

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
	/* quantized tensors: the method's tensors (quant_suffixes), a GGUF file's blocks (their bytes in the file) */
	bool *quant_storage = ti_arena_calloc(arena, ns + 1, sizeof(*quant_storage));
	int64_t *file_bytes = ti_arena_calloc(arena, ns + 1, sizeof(*file_bytes));
	const char **found = ti_arena_calloc(arena, nt + 1, sizeof(*found));
	if (!quant_storage || !file_bytes || !found)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	size_t nfound = 0;
	const ti_entry *entries = NULL;
	size_t nentries = 0;
	if (ti_source_get_format(src) == TI_SOURCE_GGUF && !(entries = ti_source_entries(src, &nentries, err)))
		return err->code;
	for (size_t i = 0; i < nt; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		int row = quant_row(t->name);
		int64_t bytes = 0;
		const char *ggml = i < nentries ? gguf_blocks(&entries[i], &bytes) : NULL;
		if ((row < 0 && !ggml) || t->storage >= ns)
			continue;
		quant_storage[t->storage] = true;
		if (ggml)
			file_bytes[t->storage] = bytes;
		const char *what = row >= 0 ? quant_suffixes[row].method : ggml;
		bool seen = false;
		for (size_t k = 0; k < nfound && !seen; k++)
			seen = !strcmp(found[k], what);
		if (!seen)
			found[nfound++] = what;
		/*
		 * a bitsandbytes weight is the packed uint8 (4-bit) or int8 tensor its state belongs to: X.weight;
		 * GPTQ's and AWQ's QuantLinear registers its bias as a buffer, beside qweight: X.bias
		 */
		if (row >= 0) {
			bool bnb = !strncmp(quant_suffixes[row].method, "bitsandbytes", 12);
			size_t stem = strlen(t->name) - strlen(quant_suffixes[row].suffix);
			char wname[512];
			if (snprintf(wname, sizeof(wname), "%.*s.%s", (int)stem, t->name, bnb ? "weight" : "bias") <
			    (int)sizeof(wname))
				for (size_t j = 0; j < nt; j++) {
					const ti_source_tensor *w = ti_source_tensor_at(src, j);
					if (w->storage < ns && !strcmp(w->name, wname))
						quant_storage[w->storage] = true;
				}
		}
	}
	bool *has_grad = ti_arena_calloc(arena, ns + 1, sizeof(*has_grad)); /* a tied parameter is one parameter */
	if (!has_grad)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < nt; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		bool state = is_optimizer_state(t->name);
		if (t->storage < ns)
			kind[t->storage] = state ? (kind[t->storage] ? kind[t->storage] : 2) : 1;
		if (state || is_buffer(t->name) || !ti_dtype_is_floating(t->dtype) || t->tie_of ||
		    (t->storage < ns && (has_grad[t->storage] || quant_storage[t->storage])))
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
		int64_t bytes = file_bytes[i] ? file_bytes[i] : (int64_t)s->nbytes;
		if (o->dtype && !quant_storage[i] && ti_dtype_is_floating(s->dtype) && ti_dtype_size(s->dtype))
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
	const char **notes = ti_arena_calloc(arena, 2, sizeof(*notes));
	if (!r->terms || !notes)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	memcpy(r->terms, terms, sizeof(terms));
	notes[0] = why;
	r->notes = notes;
	r->note_count = 1;
	if (nfound) {
		char method[256] = "";
		if (ti_source_get_format(src) == TI_SOURCE_GGUF)
			for (size_t k = 0; k < nfound; k++)
				snprintf(method + strlen(method), sizeof(method) - strlen(method), "%s%s", k ? ", " : "", found[k]);
		else
			quant_method(found, nfound, method, sizeof(method));
		if (ti_source_get_format(src) == TI_SOURCE_GGUF)
			notes[r->note_count++] = ti_arena_printf(arena, "quantized: GGUF %s blocks, counted at their bytes in the "
			                                         "file; they take no gradient", method);
		else
			notes[r->note_count++] = ti_arena_printf(arena, "quantized: %s; its tensors (packed weights and their "
			                                         "quantization state) counted at their bytes, none trains",
			                                         method);
		if (!notes[r->note_count - 1])
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
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

/* The bytes of the tensor named prefix + stem + suffix, or 0 when there is none. */
static int64_t named_bytes(ti_source *src, const char *prefix, const char *stem, size_t stem_len, const char *suffix,
                           ti_dtype *dtype)
{
	size_t np = strlen(prefix);
	for (size_t i = 0; i < ti_source_tensor_count(src); i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		const char *n = t->name;
		if (strncmp(n, prefix, np) || strncmp(n + np, stem, stem_len) || strcmp(n + np + stem_len, suffix))
			continue;
		if (dtype)
			*dtype = t->dtype;
		return t->numel * (int64_t)ti_dtype_size(t->dtype);
	}
	return 0;
}

/*
 * Parameter name (a Linear's "X.weight") held quantized under prefix: the
 * bytes of its tensors together (GPTQ's and AWQ's X.qweight, X.qzeros,
 * X.scales, X.g_idx; bitsandbytes' integer X.weight with its state), or 0.
 */
static int64_t quantized_bytes(ti_source *src, const char *prefix, const char *name)
{
	static const char *const gptq[] = {".qweight", ".qzeros", ".scales", ".g_idx"};
	static const char *const bnb[] = {".weight", ".weight.absmax", ".weight.quant_map", ".weight.nested_absmax",
	                                  ".weight.nested_quant_map", ".weight.quant_state.bitsandbytes__nf4",
	                                  ".weight.quant_state.bitsandbytes__fp4", ".SCB", ".weight_format"};
	if (!ends_with(name, ".weight"))
		return 0;
	size_t stem = strlen(name) - 7;
	int64_t sum = 0;
	if (named_bytes(src, prefix, name, stem, ".qweight", NULL)) {
		for (size_t k = 0; k < sizeof(gptq) / sizeof(gptq[0]); k++)
			sum += named_bytes(src, prefix, name, stem, gptq[k], NULL);
		return sum;
	}
	ti_dtype dt = TI_DT_INVALID;
	if (!named_bytes(src, prefix, name, stem, ".weight", &dt) || (dt != TI_DT_UINT8 && dt != TI_DT_INT8))
		return 0;
	for (size_t k = 0; k < sizeof(bnb) / sizeof(bnb[0]); k++)
		sum += named_bytes(src, prefix, name, stem, bnb[k], NULL);
	return sum;
}

ti_status ti_memory_weights_from(ti_source *src, const ti_model *model, ti_arena *arena, ti_dtype **dtypes,
                                 int64_t **bytes, size_t *matched, int64_t *optimizer_state, ti_error *err)
{
	size_t np;
	const ti_model_param *params = ti_model_params(model, &np);
	size_t nt = ti_source_tensor_count(src), ns = ti_source_storage_count(src);
	ti_dtype *out = ti_arena_calloc(arena, np + 1, sizeof(*out));
	int64_t *qbytes = ti_arena_calloc(arena, np + 1, sizeof(*qbytes));
	bool *state_storage = ti_arena_calloc(arena, ns + 1, sizeof(*state_storage));
	if (!out || !qbytes || !state_storage)
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
		for (const char *const *pre = prefixes; *pre && !out[p] && !qbytes[p]; pre++) {
			if (!params[p].buffer && ti_dtype_is_floating(params[p].dtype) &&
			    (qbytes[p] = quantized_bytes(src, *pre, params[p].name)) > 0) {
				(*matched)++;
				break;
			}
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
	*bytes = qbytes;
	return TI_OK;
}
