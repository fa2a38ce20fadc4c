/*
 * hf_describe.c - a description from a Hugging Face config.json: the
 * template of its model_type, with the config's fields filled in
 * (tinspect/hf_describe.h; the templates are src/model/hf/, one JSON file each).
 *
 * A template is a description plus three things that are read here and gone
 * from what is returned:
 *   "hf": {"class": ..., "fields": {NAME: DEFAULT}} - the config fields the
 *     template reads, each with the default transformers' config class gives
 *     it (a number, a boolean, a "$formula" of other fields) or null where the
 *     field is required. They become the description's "config".
 *   "hf": {"only": {NAME: VALUE}} - config fields the template describes only
 *     at one value (every layer of a Qwen2-MoE sparse: "decoder_sparse_step"
 *     1, "mlp_only_layers" []); a config with another value is refused
 *     rather than described wrongly. A field left out or null passes.
 *   "$if": "NAME" (or "!NAME") in any object - the object is kept only when the
 *     boolean field is true (false): a bias, a tied head, a norm.
 *   {"$each": "NAME", "as": "e", "steps": [...]} in a list - the steps, NAME
 *     times, with "{e}" in their strings replaced by 0, 1, ...; with
 *     "from": FIRST (a number field or an integer) the indices run from FIRST
 *     to NAME - 1 (T5's layers after the first, DeepSeek's MoE layers after
 *     the dense ones). The copies are filled in turn ("$if" and nested
 *     "$each" inside them apply).
 *   "hf": {"sliding": {...}} - which attention layers slide, as transformers'
 *     config classes derive their layer_types: "module" the attention
 *     module's path with "{i}" for the layer, "layers" the field that counts
 *     them, "window" [FIELD, DEFAULT] the config's window (null: no layer
 *     slides), and the optional rules "when" [FIELD, DEFAULT] (a boolean that
 *     must be true: Qwen2's use_sliding_window), "from" [FIELD, DEFAULT]
 *     (layers from that index slide: max_window_layers) and "period" N or
 *     [FIELD, DEFAULT] (layer i keeps full attention when (i + 1) % N == 0:
 *     Gemma 2's 2, Gemma 3's sliding_window_pattern 6). A config's own
 *     "layer_types" list decides instead ("sliding_attention" slides). The
 *     sliding layers become the description's "kv_windows" {MODULE: WINDOW}.
 *   "hf": {"compressed": {"module": PATH, "elements": [FIELD, ...]}} - the
 *     attention under PATH can cache one latent a token of the fields' sum
 *     of elements (DeepSeek's MLA: kv_lora_rank + qk_rope_head_dim): the
 *     description's "kv_compressed" {PATH: ELEMENTS}.
 * A config's "quantization_config" becomes the description's "quantization"
 * (model/quantized.c): the state dict a quantized checkpoint holds.
 * And a string "$NAME" that is a boolean field alone becomes true or false
 * (a Linear's "bias"). Numbers stay "$NAME" references to the config, so the
 * description reads as the model's code does.
 */
#include <math.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "model/hf_templates.h"
#include "util/json_text.h"
#include "tinspect/hf_describe.h"

#define EACH_MAX 4096 /* "$each" copies: more than any model's experts or layers */

typedef struct filler {
	const cJSON *fields;  /* the description's config, filled */
	const char *model_type;
	ti_error *err;
} filler;

static const ti_hf_template *find_template(const char *model_type)
{
	for (size_t i = 0; i < ti_hf_template_count; i++)
		if (!strcmp(ti_hf_templates[i].model_type, model_type))
			return &ti_hf_templates[i];
	return NULL;
}

const char *const *ti_hf_model_types(size_t *count)
{
	static const char *names[64];
	size_t n = ti_hf_template_count < 64 ? ti_hf_template_count : 64;
	for (size_t i = 0; i < n; i++)
		names[i] = ti_hf_templates[i].model_type;
	*count = n;
	return names;
}

static ti_status unknown_type(const char *model_type, ti_error *err)
{
	char known[TI_ERROR_MESSAGE_MAX / 2];
	size_t len = 0;
	known[0] = '\0';
	for (size_t i = 0; i < ti_hf_template_count && len + 2 < sizeof(known); i++)
		len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "",
		                        ti_hf_templates[i].model_type);
	return TI_FAIL(err, TI_E_UNSUPPORTED,
	               "unknown model_type '%.60s' (known: %s); tinspect-export describes any model from its code",
	               model_type, known);
}

static ti_status missing_field(ti_error *err, const char *name, const char *model_type)
{
	return TI_FAIL(err, TI_E_CORRUPT, "config.json has no '%s', which a %s model needs", name, model_type);
}

/* What the JSON kind of a field's value is, in words, for errors. */
static const char *kind_name(const cJSON *v)
{
	return cJSON_IsBool(v) ? "a boolean" : cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "a string"
	     : cJSON_IsArray(v) ? "a list" : cJSON_IsObject(v) ? "an object" : "null";
}

/*
 * The description's config: each field of the template's "hf.fields" from
 * the config.json when it is there and not null, else its default. A
 * field's value must be of its default's kind (a boolean for a boolean, a
 * number for the rest).
 */
/* A field of config; "vision_config.hidden_size" looks inside config's "vision_config" object. */
static const cJSON *config_field(const cJSON *config, const char *name)
{
	const char *dot = strchr(name, '.');
	if (!dot)
		return cJSON_GetObjectItemCaseSensitive(config, name);
	char head[128];
	if ((size_t)(dot - name) >= sizeof(head))
		return NULL;
	memcpy(head, name, (size_t)(dot - name));
	head[dot - name] = '\0';
	const cJSON *inner = cJSON_GetObjectItemCaseSensitive(config, head);
	return cJSON_IsObject(inner) ? config_field(inner, dot + 1) : NULL;
}

static ti_status fill_fields(const cJSON *fields, const cJSON *config, const char *model_type, cJSON *out,
                             ti_error *err)
{
	const cJSON *f;
	cJSON_ArrayForEach(f, fields) {
		const cJSON *given = config_field(config, f->string);
		const cJSON *value = given && !cJSON_IsNull(given) ? given : f;
		if (value == f && cJSON_IsNull(f))
			return missing_field(err, f->string, model_type);
		bool want_bool = cJSON_IsBool(f);
		if (value == given && (want_bool ? !cJSON_IsBool(given) : !cJSON_IsNumber(given)))
			return TI_FAIL(err, TI_E_CORRUPT, "config.json's '%s' is %s, not %s", f->string, kind_name(given),
			               want_bool ? "a boolean" : "a number");
		/* a nested field is the description's "vision_config_hidden_size": a name its formulas can say */
		char name[256];
		snprintf(name, sizeof(name), "%s", f->string);
		for (char *c = name; *c; c++)
			*c = *c == '.' ? '_' : *c;
		cJSON *copy = cJSON_Duplicate(value, false);
		if (!copy || !cJSON_AddItemToObject(out, name, copy)) {
			cJSON_Delete(copy);
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		}
	}
	return TI_OK;
}

/* A boolean field's value, or -1 when name is no boolean field. */
static int flag(const filler *fl, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(fl->fields, name);
	return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* "$if": "NAME" or "!NAME": whether the object stays. */
static ti_status keep(const filler *fl, const cJSON *cond, bool *out)
{
	const char *name = cJSON_GetStringValue(cond);
	bool negate = name && name[0] == '!';
	int v = name ? flag(fl, name + negate) : -1;
	if (v < 0)
		return TI_FAIL(fl->err, TI_E_CORRUPT, "template %s: \"$if\" must name a boolean field, not '%s'",
		               fl->model_type, name ? name : "?");
	*out = negate ? !v : v;
	return TI_OK;
}

/* Replaces "{as}" by index in every string under j. */
static ti_status substitute(cJSON *j, const char *as, int index, ti_error *err)
{
	if (cJSON_IsString(j)) {
		char key[40], num[24], buf[512];
		snprintf(key, sizeof(key), "{%s}", as);
		snprintf(num, sizeof(num), "%d", index);
		const char *s = j->valuestring, *hit;
		size_t len = 0;
		while ((hit = strstr(s, key)) && len + (size_t)(hit - s) + strlen(num) < sizeof(buf)) {
			memcpy(buf + len, s, (size_t)(hit - s));
			len += (size_t)(hit - s);
			memcpy(buf + len, num, strlen(num));
			len += strlen(num);
			s = hit + strlen(key);
		}
		if (s == j->valuestring)
			return TI_OK;
		if (len + strlen(s) >= sizeof(buf))
			return TI_FAIL(err, TI_E_LIMIT, "template string '%.40s' is too long", j->valuestring);
		strcpy(buf + len, s);
		return cJSON_SetValuestring(j, buf) ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	}
	cJSON *c;
	cJSON_ArrayForEach(c, j) {
		ti_status st = substitute(c, as, index, err);
		if (st)
			return st;
	}
	return TI_OK;
}

/*
 * A "$each" bound: a number field named by a string, or an integer; a field
 * whose default is another field ("num_decoder_layers": "$num_layers") is
 * followed. -1 when it is none of these.
 */
static double each_bound(const filler *fl, const cJSON *v)
{
	if (cJSON_IsString(v))
		v = cJSON_GetObjectItemCaseSensitive(fl->fields, v->valuestring);
	for (int hops = 0; hops < 4 && cJSON_IsString(v) && v->valuestring[0] == '$'; hops++)
		v = cJSON_GetObjectItemCaseSensitive(fl->fields, v->valuestring + 1);
	return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= EACH_MAX ? v->valuedouble : -1;
}

/*
 * {"$each": "NAME", "as": "e", "steps": [...]}: the steps for each index from
 * "from" (default 0) to NAME - 1, inserted before item in list; *first is the
 * first copy (NULL when there are none).
 */
static ti_status expand_each(const filler *fl, cJSON *list, cJSON *item, cJSON **first)
{
	const cJSON *from = cJSON_GetObjectItemCaseSensitive(item, "from");
	double end = each_bound(fl, cJSON_GetObjectItemCaseSensitive(item, "$each"));
	double start = from ? each_bound(fl, from) : 0;
	const char *as = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "as"));
	const cJSON *steps = cJSON_GetObjectItemCaseSensitive(item, "steps");
	*first = NULL;
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(item, "$each")) || end < 0 || start < 0 || !as ||
	    strlen(as) > 32 || !cJSON_IsArray(steps))
		return TI_FAIL(fl->err, TI_E_CORRUPT,
		               "template %s: \"$each\" takes a number field from 0 to %d, \"as\" and \"steps\"",
		               fl->model_type, EACH_MAX);
	for (int i = (int)start; i < (int)end; i++) {
		const cJSON *s;
		cJSON_ArrayForEach(s, steps) {
			cJSON *copy = cJSON_Duplicate(s, true);
			ti_status st = copy ? substitute(copy, as, i, fl->err) : TI_FAIL(fl->err, TI_E_NOMEM, "out of memory");
			if (st) {
				cJSON_Delete(copy);
				return st;
			}
			/* insert before item: the copies keep the steps' order */
			copy->prev = item->prev;
			copy->next = item;
			if (item == list->child)
				list->child = copy;
			else
				item->prev->next = copy;
			item->prev = copy;
			if (!*first)
				*first = copy;
		}
	}
	return TI_OK;
}

/* Applies "$if", "$each" and boolean fields under j, in place. */
static ti_status fill(const filler *fl, cJSON *j, int depth)
{
	if (depth > 64)
		return TI_FAIL(fl->err, TI_E_CORRUPT, "template %s nests deeper than 64", fl->model_type);
	cJSON *c = j->child;
	while (c) {
		cJSON *next = c->next;
		bool stays = true;
		const cJSON *cond = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "$if") : NULL;
		ti_status st = cond ? keep(fl, cond, &stays) : TI_OK;
		if (st)
			return st;
		if (stays && cJSON_IsArray(j) && cJSON_IsObject(c) && cJSON_GetObjectItemCaseSensitive(c, "$each")) {
			cJSON *first;
			if ((st = expand_each(fl, j, c, &first)))
				return st;
			if (first) /* fill the copies next, then what followed c */
				next = first;
			stays = false;
		}
		if (!stays) {
			cJSON_Delete(cJSON_DetachItemViaPointer(j, c));
		} else if (cJSON_IsString(c) && c->valuestring[0] == '$' && flag(fl, c->valuestring + 1) >= 0) {
			cJSON *b = cJSON_CreateBool(flag(fl, c->valuestring + 1));
			bool done = b && (c->string ? cJSON_ReplaceItemInObjectCaseSensitive(j, c->string, b)
			                            : cJSON_ReplaceItemViaPointer(j, c, b));
			if (!done) {
				cJSON_Delete(b);
				return TI_FAIL(fl->err, TI_E_NOMEM, "out of memory for the description");
			}
		} else {
			if (cond)
				cJSON_DeleteItemFromObjectCaseSensitive(c, "$if");
			if ((st = fill(fl, c, depth + 1)))
				return st;
		}
		c = next;
	}
	return TI_OK;
}

/*
 * A rule's value: a number, or [FIELD, DEFAULT] read from the config (the
 * default when the field is absent; *null set when the config gives null).
 */
static bool rule_value(const cJSON *config, const cJSON *spec, double *out, bool *null)
{
	*null = false;
	if (cJSON_IsNumber(spec) || cJSON_IsBool(spec)) {
		*out = cJSON_IsBool(spec) ? cJSON_IsTrue(spec) : spec->valuedouble;
		return true;
	}
	const cJSON *name = cJSON_GetArrayItem(spec, 0), *dflt = cJSON_GetArrayItem(spec, 1);
	if (!cJSON_IsArray(spec) || !cJSON_IsString(name) || !dflt)
		return false;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, name->valuestring);
	if (!v)
		v = dflt;
	if (cJSON_IsNull(v)) {
		*null = true;
		*out = 0;
		return true;
	}
	if (!cJSON_IsNumber(v) && !cJSON_IsBool(v))
		return false;
	*out = cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble;
	return true;
}

/* Whether layer i slides under the template's rules (a config without "layer_types"). */
static bool layer_slides(const cJSON *config, const cJSON *rules, int i, double period, double from)
{
	double when = 1;
	bool null;
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(rules, "when");
	if (w && (!rule_value(config, w, &when, &null) || null))
		when = 0;
	return when != 0 && i >= from && !(period >= 1 && (i + 1) % (int)period == 0);
}

/* "hf.sliding": the description's "kv_windows", added to desc when some layer slides. */
static ti_status add_windows(const filler *fl, const cJSON *config, const cJSON *rules, cJSON *desc)
{
	const char *module = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rules, "module"));
	double layers = each_bound(fl, cJSON_GetObjectItemCaseSensitive(rules, "layers"));
	double window = 0, period = 0, from = 0;
	bool null = false, null_p, null_f;
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(rules, "period"), *f = cJSON_GetObjectItemCaseSensitive(rules, "from");
	if (!module || !strstr(module, "{i}") || layers < 0 ||
	    !rule_value(config, cJSON_GetObjectItemCaseSensitive(rules, "window"), &window, &null) ||
	    (p && !rule_value(config, p, &period, &null_p)) || (f && !rule_value(config, f, &from, &null_f)))
		return TI_FAIL(fl->err, TI_E_CORRUPT,
		               "template %s: \"sliding\" takes \"module\" (with {i}), \"layers\", \"window\" and optional "
		               "\"when\", \"from\", \"period\" as numbers or [FIELD, DEFAULT]", fl->model_type);
	if (null || window < 1)
		return TI_OK; /* no window: every layer attends over the whole context */
	if (window > 1e15 || window != floor(window))
		return TI_FAIL(fl->err, TI_E_CORRUPT, "config.json's sliding window %g is no whole number of tokens", window);
	const cJSON *types = cJSON_GetObjectItemCaseSensitive(config, "layer_types");
	if (types && !cJSON_IsNull(types) && (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != (int)layers))
		return TI_FAIL(fl->err, TI_E_CORRUPT, "config.json's 'layer_types' must list one type per layer (%d)",
		               (int)layers);
	cJSON *windows = cJSON_CreateObject();
	if (!windows)
		return TI_FAIL(fl->err, TI_E_NOMEM, "out of memory for the description");
	for (int i = 0; i < (int)layers; i++) {
		bool slides;
		if (cJSON_IsArray(types)) {
			const char *t = cJSON_GetStringValue(cJSON_GetArrayItem(types, i));
			slides = t && !strcmp(t, "sliding_attention");
		} else {
			slides = layer_slides(config, rules, i, period, from);
		}
		if (!slides)
			continue;
		cJSON *path = cJSON_CreateString(module);
		ti_status st = path ? substitute(path, "i", i, fl->err) : TI_FAIL(fl->err, TI_E_NOMEM, "out of memory");
		if (!st && !cJSON_AddNumberToObject(windows, path->valuestring, window))
			st = TI_FAIL(fl->err, TI_E_NOMEM, "out of memory for the description");
		cJSON_Delete(path);
		if (st) {
			cJSON_Delete(windows);
			return st;
		}
	}
	if (!windows->child) {
		cJSON_Delete(windows);
		return TI_OK;
	}
	cJSON_AddItemToObject(desc, "kv_windows", windows);
	return TI_OK;
}

/* "hf.compressed": the description's "kv_compressed", the fields' sum under the module's path. */
static ti_status add_compressed(const filler *fl, const cJSON *rules, cJSON *desc)
{
	const char *module = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rules, "module"));
	const cJSON *fields = cJSON_GetObjectItemCaseSensitive(rules, "elements"), *f;
	double sum = 0;
	bool ok = module && cJSON_IsArray(fields) && cJSON_GetArraySize(fields) > 0;
	cJSON_ArrayForEach(f, fields) {
		double v = cJSON_IsString(f) ? each_bound(fl, f) : -1;
		ok &= v >= 0;
		sum += v;
	}
	if (!ok)
		return TI_FAIL(fl->err, TI_E_CORRUPT,
		               "template %s: \"compressed\" takes \"module\" and \"elements\", a list of number fields",
		               fl->model_type);
	cJSON *c = cJSON_CreateObject();
	if (!c || !cJSON_AddNumberToObject(c, module, sum)) {
		cJSON_Delete(c);
		return TI_FAIL(fl->err, TI_E_NOMEM, "out of memory for the description");
	}
	cJSON_AddItemToObject(desc, "kv_compressed", c);
	return TI_OK;
}

/* "hf.only": each field the config gives must have the one value the template describes. */
static ti_status check_only(const cJSON *only, const cJSON *config, const char *model_type, ti_error *err)
{
	const cJSON *want;
	cJSON_ArrayForEach(want, only) {
		const cJSON *given = cJSON_GetObjectItemCaseSensitive(config, want->string);
		if (!given || cJSON_IsNull(given) || cJSON_Compare(given, want, true))
			continue;
		char *text = cJSON_PrintUnformatted(want);
		ti_status st = TI_FAIL(err, TI_E_UNSUPPORTED,
		                       "config.json's '%s' is not %.40s, the only value the %s template describes; "
		                       "tinspect-export describes any model from its code",
		                       want->string, text ? text : "?", model_type);
		cJSON_free(text);
		return st;
	}
	return TI_OK;
}

static ti_status describe(const cJSON *config, const ti_hf_template *t, char **out, ti_error *err);

/* Adds prefix to every key of desc's object name ("" becomes the prefix alone). */
static ti_status prefix_keys(cJSON *obj, const char *prefix, ti_error *err)
{
	for (cJSON *item = obj ? obj->child : NULL; item; item = item->next) {
		char *key = cJSON_malloc(strlen(prefix) + strlen(item->string) + 2); /* cJSON_Delete frees it */
		if (!key)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		sprintf(key, item->string[0] ? "%s.%s" : "%s%s", prefix, item->string);
		if (!(item->type & cJSON_StringIsConst))
			cJSON_free(item->string);
		item->string = key;
		item->type &= ~cJSON_StringIsConst;
	}
	return TI_OK;
}

static ti_status prefix_strings(cJSON *list, const char *prefix, ti_error *err)
{
	for (cJSON *item = list ? list->child : NULL; item; item = item->next) {
		char buf[512];
		if (!cJSON_IsString(item) || snprintf(buf, sizeof(buf), "%s.%s", prefix, item->valuestring) >= (int)sizeof(buf))
			continue;
		if (!cJSON_SetValuestring(item, buf))
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	}
	return TI_OK;
}

/*
 * "hf": {"wraps": {"config": FIELD, "model_type": TYPE, "module": NAME}} - a
 * multimodal config whose language model is config[FIELD] (model_type TYPE
 * when it names none), described by its own template and nested as module
 * NAME: its modules, graph and outputs become a def the model calls, its
 * inputs the model's, its module paths (tied, kv_windows, kv_compressed,
 * attention, decode) prefixed with NAME. The wrapper's own modules (Gemma
 * 3's vision tower and projector) sit beside it as weights.
 */
static ti_status describe_wrapped(const cJSON *config, const cJSON *wraps, const char *model_type, cJSON **inner,
                                  ti_error *err)
{
	const char *field = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wraps, "config"));
	const char *fallback = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wraps, "model_type"));
	const cJSON *sub = field ? cJSON_GetObjectItemCaseSensitive(config, field) : NULL;
	if (!cJSON_IsObject(sub))
		return TI_FAIL(err, TI_E_CORRUPT, "config.json has no '%s' object, which a %s model needs", field ? field : "?",
		               model_type);
	const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sub, "model_type"));
	if (!type)
		type = fallback ? fallback : "?";
	const ti_hf_template *t = find_template(type);
	if (!t) /* a wrapper inside: its own, smaller config, so the nesting ends with the JSON's */
		return unknown_type(type, err);
	char *text = NULL;
	ti_status st = describe(sub, t, &text, err);
	if (st) {
		char inner_msg[sizeof(err->message)];
		snprintf(inner_msg, sizeof(inner_msg), "%s", err->message);
		return TI_FAIL(err, st, "%s: %s", field, inner_msg);
	}
	*inner = cJSON_Parse(text);
	free(text);
	return *inner ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
}

/* Nests the language model's description inner as module name of desc (see describe_wrapped). */
static ti_status nest(cJSON *desc, cJSON *inner, const char *name, ti_error *err)
{
	const char *cls = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(inner, "class"));
	char def_name[128];
	snprintf(def_name, sizeof(def_name), "%s", cls ? cls : "LanguageModel");
	cJSON *def = cJSON_CreateObject(), *args = cJSON_CreateArray(), *step = cJSON_CreateObject();
	cJSON *modules = cJSON_CreateObject(), *graph = cJSON_CreateArray();
	if (!def || !args || !step || !modules || !graph) {
		cJSON_Delete(def), cJSON_Delete(args), cJSON_Delete(step), cJSON_Delete(modules), cJSON_Delete(graph);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	}
	const cJSON *in;
	cJSON_ArrayForEach(in, cJSON_GetObjectItemCaseSensitive(inner, "inputs"))
		cJSON_AddItemToArray(args, cJSON_CreateString(in->string));
	cJSON_AddItemToObject(def, "inputs", cJSON_Duplicate(args, true));
	static const char *const moved[] = {"parameters", "buffers", "modules", "graph", "outputs"};
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
		cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(inner, moved[i]);
		if (item)
			cJSON_AddItemToObject(def, moved[i], item);
	}
	cJSON *defs = cJSON_GetObjectItemCaseSensitive(desc, "defs");
	if (!defs)
		defs = cJSON_AddObjectToObject(desc, "defs");
	cJSON *inner_defs = cJSON_GetObjectItemCaseSensitive(inner, "defs");
	while (inner_defs && inner_defs->child) {
		cJSON *d = cJSON_DetachItemViaPointer(inner_defs, inner_defs->child);
		cJSON_AddItemToObject(defs, d->string, d);
	}
	cJSON_AddItemToObject(defs, def_name, def);
	/* the model: the language model called on the inputs, then the wrapper's weights beside it */
	cJSON *call = cJSON_AddObjectToObject(modules, name);
	cJSON_AddStringToObject(call, "type", def_name);
	cJSON *own = cJSON_DetachItemFromObjectCaseSensitive(desc, "modules");
	while (own && own->child) {
		cJSON *m = cJSON_DetachItemViaPointer(own, own->child);
		cJSON_AddItemToObject(modules, m->string, m);
	}
	cJSON_Delete(own);
	cJSON_AddItemToObject(step, "out", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(def, "outputs"), true));
	cJSON_AddStringToObject(step, "call", name);
	cJSON_AddItemToObject(step, "args", args);
	cJSON_AddItemToArray(graph, step);
	static const char *const kept[] = {"lifetime", "inputs"};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(inner, kept[i]);
		if (item)
			cJSON_AddItemToObject(desc, kept[i], item);
	}
	cJSON_AddItemToObject(desc, "modules", modules);
	cJSON_AddItemToObject(desc, "graph", graph);
	cJSON_AddItemToObject(desc, "outputs", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(def, "outputs"), true));
	/* the language model's module paths, now under name */
	static const char *const paths[] = {"tied", "kv_windows", "kv_compressed", "attention"};
	ti_status st = TI_OK;
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && !st; i++) {
		cJSON *item = cJSON_DetachItemFromObjectCaseSensitive(inner, paths[i]);
		if (!item)
			continue;
		st = prefix_keys(item, name, err);
		if (!st && !strcmp(paths[i], "tied"))
			st = prefix_strings(item, name, err);
		cJSON_AddItemToObject(desc, paths[i], item);
	}
	cJSON *decode = cJSON_DetachItemFromObjectCaseSensitive(inner, "decode");
	if (decode) {
		if (!st)
			st = prefix_strings(cJSON_GetObjectItemCaseSensitive(decode, "once"), name, err);
		cJSON_AddItemToObject(desc, "decode", decode);
	}
	/* its config's fields join the model's */
	cJSON *config = cJSON_GetObjectItemCaseSensitive(desc, "config"), *fields = cJSON_GetObjectItemCaseSensitive(inner, "config");
	while (config && fields && fields->child) {
		cJSON *f = cJSON_DetachItemViaPointer(fields, fields->child);
		if (cJSON_GetObjectItemCaseSensitive(config, f->string))
			cJSON_Delete(f);
		else
			cJSON_AddItemToObject(config, f->string, f);
	}
	return st;
}

/* config's value under key, or its default (a number), as a new item. */
static cJSON *number_or(const cJSON *q, const char *key, double def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, key);
	return cJSON_IsNumber(v) ? cJSON_CreateNumber(v->valuedouble) : cJSON_CreateNumber(def);
}

/*
 * config.json's quantization_config as the description's "quantization"
 * (model/quantized.c lays the tensors out), as transformers' quantizers
 * read it: gptq (bits, group_size 128), awq (bits 4, group_size 128; the
 * GEMM layout, AwqConfig's default version), bitsandbytes (load_in_4bit with
 * bnb_4bit_quant_type, BitsAndBytesConfig's default fp4, and
 * bnb_4bit_use_double_quant; or load_in_8bit; llm_int8_skip_modules stay),
 * fp8 (weight_block_size, 128 x 128). modules_to_not_convert stay as they
 * are. NULL for a config without one, or with a method or AWQ version whose
 * tensors tinspect does not lay out (the weights stay floating; memory says
 * what it cannot size).
 */
static cJSON *quantization(const cJSON *config)
{
	const cJSON *q = cJSON_GetObjectItemCaseSensitive(config, "quantization_config");
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "quant_method"));
	const char *version = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "version"));
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(q, "bnb_4bit_quant_type");
	const cJSON *block = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
	const cJSON *keep = cJSON_GetObjectItemCaseSensitive(q, "modules_to_not_convert");
	bool bnb = m && !strcmp(m, "bitsandbytes");
	const char *method = !m ? NULL
	                   : !strcmp(m, "gptq") ? "gptq"
	                   : !strcmp(m, "awq") && (!version || !strcmp(version, "gemm") || !strcmp(version, "GEMM")) ? "awq"
	                   : bnb && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "load_in_4bit"))
	                       ? (cJSON_IsString(type) && !strcmp(type->valuestring, "nf4") ? "nf4" : "fp4")
	                   : bnb && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "load_in_8bit")) ? "int8"
	                   : !strcmp(m, "fp8") ? "fp8" : NULL;
	cJSON *out = method ? cJSON_CreateObject() : NULL;
	if (!out)
		return NULL;
	cJSON_AddStringToObject(out, "method", method);
	if (!strcmp(method, "gptq") || !strcmp(method, "awq")) {
		cJSON_AddItemToObject(out, "bits", number_or(q, "bits", 4));
		cJSON_AddItemToObject(out, "group_size", number_or(q, "group_size", 128));
	} else if (bnb) {
		cJSON_AddBoolToObject(out, "double_quant",
		                      cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(q, "bnb_4bit_use_double_quant")));
		keep = cJSON_GetObjectItemCaseSensitive(q, "llm_int8_skip_modules");
	} else if (cJSON_IsArray(block)) {
		cJSON_AddItemToObject(out, "block", cJSON_Duplicate(block, true));
	}
	cJSON_AddItemToObject(out, "not_converted", cJSON_IsArray(keep) ? cJSON_Duplicate(keep, true) : cJSON_CreateArray());
	return out;
}

static ti_status describe(const cJSON *config, const ti_hf_template *t, char **out, ti_error *err)
{
	cJSON *tmpl = cJSON_Parse(t->text), *desc = cJSON_CreateObject(), *fields = cJSON_CreateObject(), *inner = NULL;
	ti_status st = TI_OK;
	if (!tmpl || !desc || !fields) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		goto done;
	}
	const cJSON *hf = cJSON_GetObjectItemCaseSensitive(tmpl, "hf");
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(hf, "class");
	if ((st = fill_fields(cJSON_GetObjectItemCaseSensitive(hf, "fields"), config, t->model_type, fields, err)) ||
	    (st = check_only(cJSON_GetObjectItemCaseSensitive(hf, "only"), config, t->model_type, err)))
		goto done;
	char note[128];
	snprintf(note, sizeof(note), "tinspect describe: %s from its config.json", t->model_type);
	cJSON_AddStringToObject(desc, "description", note);
	if (cJSON_IsString(cls))
		cJSON_AddStringToObject(desc, "class", cls->valuestring);
	filler fl = {fields, t->model_type, err};
	const cJSON *sliding = cJSON_GetObjectItemCaseSensitive(hf, "sliding");
	if (sliding && (st = add_windows(&fl, config, sliding, desc)))
		goto done;
	const cJSON *compressed = cJSON_GetObjectItemCaseSensitive(hf, "compressed");
	if (compressed && (st = add_compressed(&fl, compressed, desc)))
		goto done;
	const cJSON *wraps = cJSON_GetObjectItemCaseSensitive(hf, "wraps");
	if (wraps && (st = describe_wrapped(config, wraps, t->model_type, &inner, err)))
		goto done;
	char name[128];
	snprintf(name, sizeof(name), "%s", wraps ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(wraps, "module")) : "");
	cJSON_DeleteItemFromObjectCaseSensitive(tmpl, "hf"); /* cls goes with it */
	if ((st = fill(&fl, tmpl, 0)))
		goto done;
	cJSON_AddItemToObject(desc, "config", fields);
	fields = NULL;
	cJSON *quant = quantization(config);
	if (quant)
		cJSON_AddItemToObject(desc, "quantization", quant);
	while (tmpl->child) { /* the rest of the template, in its order; each item keeps its key */
		cJSON *item = cJSON_DetachItemViaPointer(tmpl, tmpl->child);
		cJSON_AddItemToArray(desc, item);
	}
	if (inner && (st = nest(desc, inner, name[0] ? name : "language_model", err)))
		goto done;
	if (!(*out = ti_json_print(desc, true)))
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
done:
	cJSON_Delete(tmpl);
	cJSON_Delete(desc);
	cJSON_Delete(fields);
	cJSON_Delete(inner);
	return st;
}

ti_status ti_hf_describe(const char *text, size_t size, char **out, ti_error *err)
{
	*out = NULL;
	if (size > TI_HF_CONFIG_MAX_BYTES)
		return TI_FAIL(err, TI_E_LIMIT, "config.json is larger than %zu MiB", TI_HF_CONFIG_MAX_BYTES >> 20);
	cJSON *config = cJSON_ParseWithLength(text, size);
	if (!cJSON_IsObject(config)) {
		cJSON_Delete(config);
		return TI_FAIL(err, TI_E_CORRUPT, "not a JSON object, as a config.json is");
	}
	const char *model_type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(config, "model_type"));
	ti_status st;
	if (!model_type)
		st = TI_FAIL(err, TI_E_CORRUPT, "config.json has no \"model_type\" string");
	else if (!find_template(model_type))
		st = unknown_type(model_type, err);
	else
		st = describe(config, find_template(model_type), out, err);
	cJSON_Delete(config);
	return st;
}

/* ---- telling a config.json from a model description, without parsing the description ---- */

typedef struct json_cursor {
	const char *p, *end;
} json_cursor;

static void skip_space(json_cursor *c)
{
	while (c->p < c->end && (unsigned char)*c->p <= ' ') /* as cJSON skips: every byte up to the space */
		c->p++;
}

/*
 * Past a string whose opening quote is at c->p; false if unterminated.
 * *escaped says whether it held a backslash or a NUL byte, either of which
 * makes its C string (what cJSON compares) differ from its bytes.
 */
static bool skip_string(json_cursor *c, bool *escaped)
{
	*escaped = false;
	for (c->p++; c->p < c->end; c->p++) {
		if (*c->p == '\\') {
			*escaped = true;
			if (++c->p >= c->end)
				return false;
		} else if (!*c->p) {
			*escaped = true;
		} else if (*c->p == '"') {
			c->p++;
			return true;
		}
	}
	return false;
}

/* Past one value at c->p: a string, a nesting of objects and arrays, or a bare token. false where it ends too soon. */
static bool skip_value(json_cursor *c)
{
	size_t depth = 0;
	bool escaped;
	do {
		skip_space(c);
		if (c->p >= c->end)
			return false;
		char ch = *c->p;
		if (ch == '"') {
			if (!skip_string(c, &escaped))
				return false;
		} else if (ch == '{' || ch == '[') {
			depth++;
			c->p++;
		} else if (ch == '}' || ch == ']') {
			if (!depth)
				return true; /* the end of the member's object: the value was empty, which cJSON refuses */
			depth--;
			c->p++;
		} else if (depth && (ch == ',' || ch == ':')) {
			c->p++;
		} else if (!depth && ch == ',') {
			return true;
		} else { /* a number or a literal, as far as the next delimiter */
			const char *start = c->p;
			while (c->p < c->end && *c->p && !strchr(",:]}\"", *c->p) && (unsigned char)*c->p > ' ')
				c->p++;
			if (c->p == start)
				return false; /* a NUL byte, or a ':' where a value belongs */
		}
	} while (depth);
	return true;
}

enum { NOT_CONFIG = 0, MAYBE_CONFIG = 1 };

/*
 * What the top-level keys alone say, the answer cJSON would give whatever
 * the rest holds: a "graph" key, or no "model_type" whose first value is a
 * string, is not a config (valid or not: invalid JSON is not one either).
 * MAYBE_CONFIG when only a whole parse can tell (a config is small), or
 * where a key is escaped, or the text is not an object as this reads it.
 */
static int config_by_keys(const char *text, size_t size)
{
	json_cursor c = {text, text + size};
	skip_space(&c);
	if (c.p >= c.end || *c.p != '{')
		return MAYBE_CONFIG;
	c.p++;
	bool model_type_seen = false, model_type_string = false;
	for (;;) {
		skip_space(&c);
		if (c.p < c.end && *c.p == '}')
			break;
		const char *key = c.p + 1;
		bool escaped;
		if (c.p >= c.end || *c.p != '"' || !skip_string(&c, &escaped) || escaped)
			return MAYBE_CONFIG;
		size_t key_len = (size_t)(c.p - 1 - key);
		if (key_len == 5 && !memcmp(key, "graph", 5))
			return NOT_CONFIG;
		skip_space(&c);
		if (c.p >= c.end || *c.p != ':')
			return MAYBE_CONFIG;
		c.p++;
		skip_space(&c);
		if (key_len == 10 && !memcmp(key, "model_type", 10) && !model_type_seen) {
			model_type_seen = true;
			model_type_string = c.p < c.end && *c.p == '"';
		}
		if (!skip_value(&c))
			return MAYBE_CONFIG;
		skip_space(&c);
		if (c.p < c.end && *c.p == ',')
			c.p++;
		else if (c.p < c.end && *c.p == '}')
			break;
		else
			return MAYBE_CONFIG;
	}
	return model_type_string ? MAYBE_CONFIG : NOT_CONFIG;
}

int ti_hf_is_config(const char *text, size_t size)
{
	if (size > TI_HF_CONFIG_MAX_BYTES)
		return 0;
	/* A model description is a large JSON document: its keys answer without a tree of every value in it. */
	if (config_by_keys(text, size) == NOT_CONFIG)
		return 0;
	cJSON *j = cJSON_ParseWithLength(text, size);
	int is = cJSON_IsObject(j) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "model_type")) &&
	         !cJSON_GetObjectItemCaseSensitive(j, "graph");
	cJSON_Delete(j);
	return is;
}
