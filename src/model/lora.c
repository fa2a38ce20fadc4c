/*
 * lora.c - peft's LoRA as a rewrite of a model description (see lora.h).
 *
 * Each targeted Linear (or Conv1D def) entry of "modules" (the model's, or a def's) becomes
 * {"type": "LoraLinearN"}, and a def LoraLinearN is added whose modules are
 * peft's (base_layer: the entry as it was; lora_dropout, lora_A, lora_B:
 * ModuleDicts holding the adapter "default") and whose graph is
 * peft.tuners.lora.layer.Linear.forward without DoRA:
 *     result = self.base_layer(x)
 *     x = self._cast_input_dtype(x, lora_A.weight.dtype)
 *     result = result + lora_B(lora_A(dropout(x))) * scaling
 *     result = result.to(torch_result_dtype)
 * with the adapters in float32 (autocast_adapter_dtype), whatever the model's dtype
 * The base layer's output, the dropped copy of x with its mask (p > 0), the
 * rank-r activation and the scaled one are what the memory rules then see.
 */
#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinspect/lora.h"
#include "util/json_text.h"

/* peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, for the model_types tinspect describes */
static const struct {
	const char *model_type, *targets;
} default_targets[] = {
	{"bert", "query,value"},        {"falcon", "query_key_value"}, {"gemma", "q_proj,v_proj"},
	{"gemma2", "q_proj,v_proj"},    {"gemma3_text", "q_proj,v_proj"}, {"gpt2", "c_attn"},
	{"gpt_neox", "query_key_value"}, {"llama", "q_proj,v_proj"},   {"mistral", "q_proj,v_proj"},
	{"mixtral", "q_proj,v_proj"},   {"qwen2", "q_proj,v_proj"},    {"qwen3", "q_proj,v_proj"},
	{"roberta", "query,value"},     {"t5", "q,v"},
};

const char *ti_lora_default_targets(const char *model_type)
{
	for (size_t i = 0; model_type && i < sizeof(default_targets) / sizeof(default_targets[0]); i++)
		if (!strcmp(default_targets[i].model_type, model_type))
			return default_targets[i].targets;
	return NULL;
}

static bool parse_number(const char *text, size_t len, double *out)
{
	char buf[64];
	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, text, len);
	buf[len] = '\0';
	char *end;
	errno = 0;
	double v = strtod(buf, &end);
	if (errno || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

ti_status ti_lora_parse(const char *spec, ti_lora_config *cfg, ti_error *err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->alpha = 8; /* LoraConfig: lora_alpha=8, lora_dropout=0.0 */
	bool have_r = false;
	for (const char *p = spec; *p;) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		if (!eq)
			return TI_FAIL(err, TI_E_INVALID, "'%.*s' is no NAME=VALUE (r=16,alpha=32,dropout=0.05)", (int)(end - p), p);
		size_t nlen = (size_t)(eq - p);
		double v;
		bool num = parse_number(eq + 1, (size_t)(end - eq - 1), &v);
		if (nlen == 1 && *p == 'r') {
			if (!num || v < 1 || v != floor(v) || v > 1e9)
				return TI_FAIL(err, TI_E_INVALID, "r=%.*s: the rank is a positive integer", (int)(end - eq - 1), eq + 1);
			cfg->r = (long)v;
			have_r = true;
		} else if (nlen == 5 && !strncmp(p, "alpha", 5)) {
			if (!num || v <= 0)
				return TI_FAIL(err, TI_E_INVALID, "alpha=%.*s: lora_alpha is a number above 0", (int)(end - eq - 1),
				               eq + 1);
			cfg->alpha = v;
		} else if (nlen == 7 && !strncmp(p, "dropout", 7)) {
			if (!num || v < 0 || v >= 1)
				return TI_FAIL(err, TI_E_INVALID, "dropout=%.*s: lora_dropout is a probability from 0 to below 1",
				               (int)(end - eq - 1), eq + 1);
			cfg->dropout = v;
		} else {
			return TI_FAIL(err, TI_E_INVALID, "unknown field '%.*s' (r, alpha, dropout)", (int)nlen, p);
		}
		p = comma ? comma + 1 : end;
	}
	if (!have_r)
		return TI_FAIL(err, TI_E_INVALID, "no rank: give r=N (r=16,alpha=32,dropout=0.05)");
	return TI_OK;
}

ti_status ti_lora_parse_targets(const char *list, ti_lora_config *cfg, ti_error *err)
{
	cfg->target_count = 0;
	for (const char *p = list;;) {
		const char *comma = strchr(p, ','), *end = comma ? comma : p + strlen(p);
		size_t n = (size_t)(end - p);
		if (!n)
			return TI_FAIL(err, TI_E_INVALID, "an empty module name in '%s'", list);
		if (memchr(p, '.', n) || memchr(p, '*', n))
			return TI_FAIL(err, TI_E_INVALID, "'%.*s': a target is a module's name (q_proj), not a path or a glob",
			               (int)n, p);
		if (n >= sizeof(cfg->targets[0]))
			return TI_FAIL(err, TI_E_INVALID, "'%.*s...': a module name is at most %zu bytes", 32, p,
			               sizeof(cfg->targets[0]) - 1);
		if (cfg->target_count == TI_LORA_MAX_TARGETS)
			return TI_FAIL(err, TI_E_INVALID, "more than %d target modules", TI_LORA_MAX_TARGETS);
		memcpy(cfg->targets[cfg->target_count], p, n);
		cfg->targets[cfg->target_count++][n] = '\0';
		if (!comma)
			return TI_OK;
		p = comma + 1;
	}
}

typedef struct rewrite {
	const ti_lora_config *cfg;
	cJSON *new_defs; /* the LoraLinearN defs, added once the walk is over */
	size_t count, wrapped;
	size_t matched[TI_LORA_MAX_TARGETS];
	char linears[256]; /* the Linear names seen, for the error when a target matches none */
	char not_linear[128]; /* the first target that names another kind of module: "mlp (LlamaMLP)" */
	cJSON *top_wrapped; /* names of the model's own modules wrapped: its "tied" paths move under base_layer */
} rewrite;

static int target_index(const rewrite *rw, const char *name)
{
	for (size_t i = 0; i < rw->cfg->target_count; i++)
		if (!strcmp(rw->cfg->targets[i], name))
			return (int)i;
	return -1;
}

static void note_linear(rewrite *rw, const char *name)
{
	size_t n = strlen(rw->linears);
	char probe[72];
	snprintf(probe, sizeof(probe), "%s,", name);
	if (strstr(rw->linears, probe) || n + strlen(probe) + 4 >= sizeof(rw->linears))
		return;
	strcat(rw->linears, probe);
}

static cJSON *adapter_dict(cJSON *module)
{
	cJSON *dict = cJSON_CreateObject(), *mods = cJSON_CreateObject();
	cJSON_AddStringToObject(dict, "type", "ModuleDict");
	cJSON_AddItemToObject(mods, "default", module);
	cJSON_AddItemToObject(dict, "modules", mods);
	return dict;
}

static cJSON *adapter_linear(const cJSON *in, const cJSON *out)
{
	cJSON *l = cJSON_CreateObject();
	cJSON_AddStringToObject(l, "type", "Linear");
	cJSON_AddItemToObject(l, "in_features", cJSON_Duplicate(in, true));
	cJSON_AddItemToObject(l, "out_features", cJSON_Duplicate(out, true));
	cJSON_AddFalseToObject(l, "bias");
	cJSON_AddStringToObject(l, "dtype", "float32"); /* get_peft_model's autocast_adapter_dtype: float32 adapters */
	return l;
}

static cJSON *step(const char *out, const char *kind, const char *what, const char *arg0, const char *arg1)
{
	cJSON *s = cJSON_CreateObject(), *args = cJSON_CreateArray();
	cJSON_AddStringToObject(s, "out", out);
	cJSON_AddStringToObject(s, kind, what);
	cJSON_AddItemToArray(args, cJSON_CreateString(arg0));
	if (arg1)
		cJSON_AddItemToArray(args, cJSON_CreateString(arg1));
	cJSON_AddItemToObject(s, "args", args);
	return s;
}

/* The def that replaces a layer entry (moved into it as base_layer) of in x out features. */
static cJSON *lora_def(const ti_lora_config *cfg, cJSON *entry, const cJSON *in, const cJSON *out)
{
	cJSON *rank = cJSON_CreateNumber((double)cfg->r);
	cJSON *def = cJSON_CreateObject(), *inputs = cJSON_CreateArray(), *mods = cJSON_CreateObject();
	cJSON *graph = cJSON_CreateArray(), *outputs = cJSON_CreateArray();
	cJSON_AddItemToArray(inputs, cJSON_CreateString("x"));
	cJSON_AddItemToObject(def, "inputs", inputs);
	cJSON_AddItemToObject(mods, "base_layer", entry);
	cJSON *drop = cJSON_CreateObject();
	if (cfg->dropout > 0) {
		cJSON_AddStringToObject(drop, "type", "Dropout");
		cJSON_AddNumberToObject(drop, "p", cfg->dropout);
	} else {
		cJSON_AddStringToObject(drop, "type", "Identity");
	}
	cJSON_AddItemToObject(mods, "lora_dropout", adapter_dict(drop));
	cJSON_AddItemToObject(mods, "lora_A", adapter_dict(adapter_linear(in, rank)));
	cJSON_AddItemToObject(mods, "lora_B", adapter_dict(adapter_linear(rank, out)));
	cJSON_Delete(rank);
	cJSON_AddItemToObject(def, "modules", mods);
	cJSON_AddItemToArray(graph, step("y0", "call", "base_layer", "x", NULL));
	/* x cast to the adapters' dtype (_cast_input_dtype; the same tensor when it is float32 already) */
	cJSON *cast = step("xa", "op", "to", "x", NULL);
	cJSON_AddStringToObject(cast, "dtype", "float32");
	cJSON_AddItemToArray(graph, cast);
	/* nn.Identity returns x itself: no step, nothing kept */
	cJSON_AddItemToArray(graph, step("h", "call", cfg->dropout > 0 ? "lora_dropout.default" : "lora_A.default",
	                                 "xa", NULL));
	if (cfg->dropout > 0)
		cJSON_AddItemToArray(graph, step("h", "call", "lora_A.default", "h", NULL));
	cJSON_AddItemToArray(graph, step("h", "call", "lora_B.default", "h", NULL));
	cJSON *mul = step("h", "op", "mul", "h", NULL);
	cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(mul, "args"), cJSON_CreateNumber(cfg->alpha / (double)cfg->r));
	cJSON_AddItemToArray(graph, mul);
	cJSON_AddItemToArray(graph, step("y", "op", "add", "y0", "h"));
	/* result.to(torch_result_dtype): back to the base layer's dtype (a no-op in float32) */
	cJSON_AddItemToArray(graph, step("y", "op", "type_as", "y", "y0"));
	cJSON_AddItemToObject(def, "graph", graph);
	cJSON_AddItemToArray(outputs, cJSON_CreateString("y"));
	cJSON_AddItemToObject(def, "outputs", outputs);
	return def;
}

/*
 * transformers' Conv1D (GPT-2's c_attn, c_proj, c_fc), a def named Conv1D...
 * in the templates whose weight is [in, out]: peft wraps it as a Linear with
 * fan_in_fan_out, in and out read from base_layer.weight.shape.
 */
static bool conv1d_features(const cJSON *defs, const char *type, const cJSON **in, const cJSON **out)
{
	const cJSON *def = strncmp(type, "Conv1D", 6) ? NULL : cJSON_GetObjectItemCaseSensitive(defs, type);
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(def, "parameters");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(params, "weight"), "shape");
	if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 2)
		return false;
	*in = cJSON_GetArrayItem(shape, 0);
	*out = cJSON_GetArrayItem(shape, 1);
	return true;
}

static bool is_container(const char *type)
{
	return !strcmp(type, "Module") || !strcmp(type, "ModuleList") || !strcmp(type, "ModuleDict") ||
	       !strcmp(type, "Sequential");
}

static ti_status walk(rewrite *rw, cJSON *modules, bool top, cJSON *defs, ti_error *err);

/* One entry named name (NULL: a ModuleList's repeated module, which no name matches). */
static ti_status visit(rewrite *rw, cJSON *parent, cJSON *entry, const char *name, bool top, cJSON *defs,
                       ti_error *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(entry, "type");
	if (!cJSON_IsString(type))
		return TI_OK;
	if ((!strcmp(type->valuestring, "Linear") || !strncmp(type->valuestring, "Conv1D", 6)) && name)
		note_linear(rw, name);
	int t = name ? target_index(rw, name) : -1;
	if (t >= 0) {
		const cJSON *in = NULL, *out = NULL;
		if (!strcmp(type->valuestring, "Linear")) {
			in = cJSON_GetObjectItemCaseSensitive(entry, "in_features");
			out = cJSON_GetObjectItemCaseSensitive(entry, "out_features");
			if (!in || !out)
				return TI_FAIL(err, TI_E_CORRUPT, "target '%s': a Linear without in_features and out_features "
				               "by name", name);
		} else if (!conv1d_features(defs, type->valuestring, &in, &out)) {
			if (!rw->not_linear[0])
				snprintf(rw->not_linear, sizeof(rw->not_linear), "'%.40s' (%.60s)", name, type->valuestring);
			return TI_OK;
		}
		char def_name[48];
		do
			snprintf(def_name, sizeof(def_name), "LoraLinear%zu", ++rw->count);
		while ((defs && cJSON_GetObjectItemCaseSensitive(defs, def_name)) ||
		       cJSON_GetObjectItemCaseSensitive(rw->new_defs, def_name));
		rw->matched[t]++;
		rw->wrapped++;
		if (top) /* before the entry moves: its name is the entry's own string */
			cJSON_AddItemToArray(rw->top_wrapped, cJSON_CreateString(name));
		cJSON *stub = cJSON_CreateObject();
		cJSON_AddStringToObject(stub, "type", def_name);
		cJSON_AddItemToObject(parent, name, stub); /* appended: walk_ordered puts it back in its place */
		cJSON *moved = cJSON_DetachItemViaPointer(parent, entry);
		cJSON_AddItemToObject(rw->new_defs, def_name, lora_def(rw->cfg, moved, in, out));
		return TI_OK;
	}
	if (!is_container(type->valuestring))
		return TI_OK;
	cJSON *sub = cJSON_GetObjectItemCaseSensitive(entry, "modules");
	if (cJSON_IsObject(sub)) {
		ti_status st = walk(rw, sub, false, defs, err);
		if (st)
			return st;
	}
	cJSON *one = cJSON_GetObjectItemCaseSensitive(entry, "module");
	if (cJSON_IsObject(one))
		return visit(rw, entry, one, NULL, false, defs, err);
	return TI_OK;
}

static ti_status walk(rewrite *rw, cJSON *modules, bool top, cJSON *defs, ti_error *err)
{
	/* the entries as they were: a wrapped one is re-added at the end (walk_ordered puts it back) */
	int n = cJSON_GetArraySize(modules);
	cJSON **items = calloc((size_t)n + 1, sizeof(*items));
	if (!items)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory rewriting the description for LoRA");
	int k = 0;
	for (cJSON *it = modules->child; it; it = it->next)
		items[k++] = it;
	ti_status st = TI_OK;
	for (int i = 0; i < n && !st; i++)
		st = visit(rw, modules, items[i], items[i]->string, top, defs, err);
	free(items);
	return st;
}

/* "tied": paths under a wrapped top-level module move under its base_layer. */
static void move_tied(cJSON *root, const cJSON *wrapped)
{
	cJSON *tied = cJSON_GetObjectItemCaseSensitive(root, "tied");
	if (!cJSON_IsObject(tied) || !cJSON_GetArraySize(wrapped))
		return;
	cJSON *fresh = cJSON_CreateObject();
	for (cJSON *it = tied->child; it; it = it->next) {
		const char *key = it->string;
		cJSON *val = cJSON_Duplicate(it, true);
		char moved[512];
		const cJSON *w;
		cJSON_ArrayForEach(w, wrapped) {
			size_t n = strlen(w->valuestring);
			if (!strncmp(key, w->valuestring, n) && key[n] == '.') {
				snprintf(moved, sizeof(moved), "%s.base_layer%s", w->valuestring, key + n);
				key = moved;
			}
			if (cJSON_IsString(val) && !strncmp(val->valuestring, w->valuestring, n) && val->valuestring[n] == '.') {
				char v[512];
				snprintf(v, sizeof(v), "%s.base_layer%s", w->valuestring, val->valuestring + n);
				cJSON_SetValuestring(val, v);
			}
		}
		cJSON_AddItemToObject(fresh, key, val);
	}
	cJSON_ReplaceItemInObjectCaseSensitive(root, "tied", fresh);
}

/* Puts each stub back where its Linear was: a module's place in "modules" is its place in the state_dict. */
static void reorder(cJSON *modules, const char *const *order, int n)
{
	for (int i = 0; i < n; i++) {
		cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(modules, order[i]);
		if (it)
			cJSON_AddItemToObject(modules, order[i], it);
	}
}

static ti_status walk_ordered(rewrite *rw, cJSON *modules, bool top, cJSON *defs, ti_error *err)
{
	int n = cJSON_GetArraySize(modules);
	char **names = calloc((size_t)n + 1, sizeof(*names));
	if (!names)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory rewriting the description for LoRA");
	int k = 0;
	for (cJSON *it = modules->child; it; it = it->next)
		names[k++] = it->string ? strdup(it->string) : NULL;
	ti_status st = walk(rw, modules, top, defs, err);
	if (!st)
		reorder(modules, (const char *const *)names, k);
	for (int i = 0; i < k; i++)
		free(names[i]);
	free(names);
	return st;
}

ti_status ti_lora_apply(const char *desc, size_t size, const ti_lora_config *cfg, char **out, size_t *modules,
                        ti_error *err)
{
	*out = NULL;
	*modules = 0;
	cJSON *root = cJSON_ParseWithLength(desc, size);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return TI_FAIL(err, TI_E_CORRUPT, "the description is no JSON object");
	}
	rewrite rw;
	memset(&rw, 0, sizeof(rw));
	rw.cfg = cfg;
	rw.new_defs = cJSON_CreateObject();
	rw.top_wrapped = cJSON_CreateArray();
	cJSON *defs = cJSON_GetObjectItemCaseSensitive(root, "defs");
	ti_status st = TI_OK;
	cJSON *top = cJSON_GetObjectItemCaseSensitive(root, "modules");
	if (cJSON_IsObject(top))
		st = walk_ordered(&rw, top, true, defs, err);
	for (cJSON *d = cJSON_IsObject(defs) ? defs->child : NULL; d && !st; d = d->next) {
		cJSON *m = cJSON_GetObjectItemCaseSensitive(d, "modules");
		if (cJSON_IsObject(m))
			st = walk_ordered(&rw, m, false, defs, err);
	}
	if (!st && rw.not_linear[0])
		st = TI_FAIL(err, TI_E_INVALID, "target %s is not a Linear: LoRA wraps Linear layers", rw.not_linear);
	for (size_t i = 0; i < cfg->target_count && !st; i++)
		if (!rw.matched[i]) {
			size_t n = strlen(rw.linears);
			if (n)
				rw.linears[n - 1] = '\0';
			st = TI_FAIL(err, TI_E_INVALID, "target '%s' names no module of the model (its Linear layers: %s)",
			             cfg->targets[i], n ? rw.linears : "none");
		}
	if (!st) {
		if (!cJSON_IsObject(defs)) {
			defs = cJSON_CreateObject();
			cJSON_AddItemToObject(root, "defs", defs);
		}
		cJSON *d;
		while ((d = rw.new_defs->child)) {
			cJSON_DetachItemViaPointer(rw.new_defs, d);
			cJSON_AddItemToObject(defs, d->string, d);
		}
		move_tied(root, rw.top_wrapped);
		*out = ti_json_print(root, false);
		if (!*out)
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory rewriting the description for LoRA");
		*modules = rw.wrapped;
	}
	cJSON_Delete(rw.new_defs);
	cJSON_Delete(rw.top_wrapped);
	cJSON_Delete(root);
	return st;
}
