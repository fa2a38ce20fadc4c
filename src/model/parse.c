/*
 * parse.c - a JSON model description into modules, parameters and steps
 * (see tinspect/model.h). The only file of the model code that uses cJSON.
 */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "model/model_internal.h"
#include "model/quantized.h"
#include "util/json_error.h"
#include "util/strmap.h"

#define DEFAULT_MEMORY_LIMIT ((size_t)1 << 30)
#define CONFIG_MAX_DEPTH 32

struct parser {
	ti_model *model;
	const cJSON *config;
	const cJSON *defs;
	bool training;           /* --mode train: the built-in "$training" */
	bool last_use;           /* "lifetime": "last_use" */
	const ti_model_options *options;
};
typedef struct parser parser;

/* Records where a description error is: the JSON path goes in err->member. */
static ti_status at(ti_status st, ti_error *err, const char *jpath)
{
	if (st && !err->member[0])
		ti_error_at(err, jpath, -1);
	return st;
}

static const char *join(ti_model *m, const char *a, const char *b)
{
	if (!a || !*a)
		return ti_arena_strdup(&m->arena, b);
	return ti_arena_cat(&m->arena, (const char *const[]){a, ".", b}, 3);
}

static bool is_identifier(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return false;
	for (s++; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return false;
	return true;
}

/* ---- config references: "$d_model", "$d_model*4", "$(d + 1)//2" ---- */

typedef struct number {
	double value;
	bool is_int;
} number;

typedef struct expr {
	parser *p;
	const char *s;
	int depth;
	ti_error *err;
	const char *jpath;
} expr;

static ti_status config_value(expr *e, const char *name, number *out);
static ti_status expr_sum(expr *e, number *out);

static void skip(expr *e)
{
	while (isspace((unsigned char)*e->s))
		e->s++;
}

static ti_status expr_factor(expr *e, number *out)
{
	skip(e);
	if (*e->s == '-') {
		e->s++;
		ti_status st = expr_factor(e, out);
		out->value = -out->value;
		return st;
	}
	if (*e->s == '(') {
		e->s++;
		ti_status st = expr_sum(e, out);
		if (st)
			return st;
		skip(e);
		if (*e->s != ')')
			return TI_FAIL(e->err, TI_E_CORRUPT, "missing ')' in config reference");
		e->s++;
		return TI_OK;
	}
	if (isdigit((unsigned char)*e->s) || *e->s == '.') {
		char *end;
		out->value = strtod(e->s, &end);
		out->is_int = !memchr(e->s, '.', (size_t)(end - e->s)) && !memchr(e->s, 'e', (size_t)(end - e->s));
		e->s = end;
		return TI_OK;
	}
	if (isalpha((unsigned char)*e->s) || *e->s == '_') {
		char name[128];
		size_t n = 0;
		while ((isalnum((unsigned char)*e->s) || *e->s == '_') && n < sizeof(name) - 1)
			name[n++] = *e->s++;
		name[n] = '\0';
		return config_value(e, name, out);
	}
	return TI_FAIL(e->err, TI_E_CORRUPT, "bad config reference near '%.20s'", e->s);
}

static ti_status expr_product(expr *e, number *out)
{
	ti_status st = expr_factor(e, out);
	while (!st) {
		skip(e);
		char op = *e->s;
		bool floor_div = op == '/' && e->s[1] == '/';
		if (op != '*' && op != '/' && op != '%')
			break;
		e->s += floor_div ? 2 : 1;
		number rhs;
		if ((st = expr_factor(e, &rhs)))
			break;
		if ((op == '/' || op == '%') && rhs.value == 0)
			return TI_FAIL(e->err, TI_E_CORRUPT, "division by zero in config reference");
		if (op == '*')
			out->value *= rhs.value;
		else if (floor_div)
			out->value = floor(out->value / rhs.value);
		else if (op == '%')
			out->value -= rhs.value * floor(out->value / rhs.value);
		else
			out->value /= rhs.value;
		/* a floor division is a whole number: "$(head_dim*rotary_pct)//1" is Python's int(...) of a size */
		out->is_int = floor_div || (out->is_int && rhs.is_int && op != '/');
	}
	return st;
}

static ti_status expr_sum(expr *e, number *out)
{
	ti_status st = expr_product(e, out);
	while (!st) {
		skip(e);
		char op = *e->s;
		if (op != '+' && op != '-')
			break;
		e->s++;
		number rhs;
		if ((st = expr_product(e, &rhs)))
			break;
		out->value += op == '+' ? rhs.value : -rhs.value;
		out->is_int = out->is_int && rhs.is_int;
	}
	return st;
}

static ti_status eval_reference(parser *p, const char *text, int depth, number *out,
                                ti_error *err, const char *jpath)
{
	expr e = {p, text, depth, err, jpath};
	if (depth > CONFIG_MAX_DEPTH)
		return TI_FAIL(err, TI_E_CORRUPT, "config references nest deeper than %d", CONFIG_MAX_DEPTH);
	ti_status st = expr_sum(&e, out);
	if (st)
		return st;
	skip(&e);
	if (*e.s)
		return TI_FAIL(err, TI_E_CORRUPT, "bad config reference '$%s'", text);
	if (out->is_int && fabs(out->value) > 9007199254740992.0)
		return TI_FAIL(err, TI_E_CORRUPT, "config reference '$%s' is too large", text);
	return TI_OK;
}

static ti_status config_value(expr *e, const char *name, number *out)
{
	const cJSON *v = e->p->config ? cJSON_GetObjectItemCaseSensitive(e->p->config, name) : NULL;
	if (!v)
		return TI_FAIL(e->err, TI_E_CORRUPT, "config has no '%s'", name);
	if (cJSON_IsNumber(v)) {
		out->value = v->valuedouble;
		out->is_int = v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9007199254740992.0;
		return TI_OK;
	}
	if (cJSON_IsString(v) && v->valuestring[0] == '$')
		return eval_reference(e->p, v->valuestring + 1, e->depth + 1, out, e->err, e->jpath);
	return TI_FAIL(e->err, TI_E_CORRUPT, "config '%s' is not a number", name);
}

/* ---- JSON values to arguments ---- */

static ti_status json_to_arg(parser *p, const cJSON *j, const char *jpath, int depth, ti_arg *out, ti_error *err)
{
	ti_model *m = p->model;
	if (depth > TI_MODEL_MAX_DEPTH)
		return at(TI_FAIL(err, TI_E_CORRUPT, "value nests deeper than %d", TI_MODEL_MAX_DEPTH), err, jpath);
	if (cJSON_IsBool(j)) {
		*out = ti_arg_bool(cJSON_IsTrue(j));
	} else if (cJSON_IsNull(j)) {
		*out = ti_arg_none();
	} else if (cJSON_IsNumber(j)) {
		double d = j->valuedouble;
		if (d == floor(d) && fabs(d) < 9007199254740992.0)
			*out = ti_arg_int((int64_t)d);
		else
			*out = ti_arg_float(d);
	} else if (cJSON_IsString(j)) {
		if (!strcmp(j->valuestring, "$training") &&
		    !(p->config && cJSON_GetObjectItemCaseSensitive(p->config, "training"))) {
			*out = ti_arg_bool(p->training); /* module.training, as the mode sets it */
		} else if (j->valuestring[0] == '$') {
			number n;
			ti_status st = eval_reference(p, j->valuestring + 1, 0, &n, err, jpath);
			if (st)
				return at(st, err, jpath);
			*out = n.is_int ? ti_arg_int((int64_t)n.value) : ti_arg_float(n.value);
		} else {
			*out = ti_arg_str(j->valuestring);
		}
	} else if (cJSON_IsArray(j)) {
		int n = cJSON_GetArraySize(j), i = 0;
		ti_arg *items = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		const cJSON *item;
		cJSON_ArrayForEach(item, j) {
			char sub[32];
			snprintf(sub, sizeof(sub), "%d", i);
			ti_status st = json_to_arg(p, item, join(m, jpath, sub), depth + 1, &items[i++], err);
			if (st)
				return st;
		}
		*out = ti_arg_list(items, n);
	} else if (cJSON_IsObject(j) && cJSON_GetObjectItemCaseSensitive(j, "slice")) {
		/* {"slice": [start, stop, step]}: Python's slice, each an int (or a name, a formula) or null */
		const cJSON *bounds = cJSON_GetObjectItemCaseSensitive(j, "slice");
		const char *spath = join(m, jpath, "slice");
		if (cJSON_GetArraySize(j) != 1 || !cJSON_IsArray(bounds) || cJSON_GetArraySize(bounds) != 3)
			return at(TI_FAIL(err, TI_E_CORRUPT, "a slice is {\"slice\": [start, stop, step]}"), err, jpath);
		ti_arg *items = ti_arena_calloc(&m->arena, 3, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		for (int i = 0; i < 3; i++) {
			char sub[4] = {(char)('0' + i), '\0'};
			const char *ipath = join(m, spath, sub);
			ti_status st = json_to_arg(p, cJSON_GetArrayItem(bounds, i), ipath, depth + 1, &items[i], err);
			if (st)
				return st;
			if (items[i].kind != TI_ARG_INT && items[i].kind != TI_ARG_NONE && items[i].kind != TI_ARG_STR)
				return at(TI_FAIL(err, TI_E_CORRUPT, "slice indices must be integers or None"), err, ipath);
		}
		*out = ti_arg_slice(items);
	} else {
		return at(TI_FAIL(err, TI_E_CORRUPT, "expected a number, string, boolean, null or list"), err, jpath);
	}
	return TI_OK;
}

/* A value that cannot fail to convert (no list, no config reference): no JSON path is needed. */
static bool plain_arg(const cJSON *j, ti_arg *out)
{
	if (cJSON_IsString(j) && j->valuestring[0] != '$')
		*out = ti_arg_str(j->valuestring);
	else if (cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble) && fabs(j->valuedouble) < 9007199254740992.0)
		*out = ti_arg_int((int64_t)j->valuedouble);
	else if (cJSON_IsBool(j))
		*out = ti_arg_bool(cJSON_IsTrue(j));
	else
		return false;
	return true;
}

/* The quoted argument name in a binding error ("argument 'kernel_size' must ..."), to name its JSON path. */
static const char *argument_named_in(ti_model *m, const char *message)
{
	static const char *const leads[] = {"argument '", "keyword argument '", "argument "};
	for (size_t i = 0; i < sizeof(leads) / sizeof(leads[0]); i++) {
		const char *s = strstr(message, leads[i]);
		if (!s)
			continue;
		s += strlen(leads[i]);
		const char *e = strchr(s, '\'');
		if (e && e > s)
			return ti_arena_strndup(&m->arena, s, (size_t)(e - s));
	}
	return NULL;
}

/* ---- modules ---- */

static const model_def *find_def(const ti_model *m, const char *name)
{
	for (int i = 0; i < m->def_count; i++)
		if (m->defs[i].name && !strcmp(m->defs[i].name, name))
			return &m->defs[i];
	return NULL;
}

static ti_module *new_module(ti_model *m, const char *path, const char *type, ti_module_kind kind)
{
	ti_module *mod = ti_arena_alloc(&m->arena, sizeof(*mod));
	if (mod) {
		mod->ctx = &m->ctx;
		mod->path = path;
		mod->type = type;
		mod->kind = kind;
	}
	return mod;
}

/* check_name: the name is a JSON object's key, which may repeat; numbered children cannot. */
static ti_status add_child(ti_model *m, ti_module *parent, const char *name, ti_module *child,
                           bool check_name, ti_error *err)
{
	for (int i = 0; check_name && i < parent->child_count; i++)
		if (!strcmp(parent->child_names[i], name))
			return TI_FAIL(err, TI_E_CORRUPT, "module '%s' defined twice", child->path);
	if (parent->child_count == parent->child_capacity) {
		int cap = parent->child_capacity ? 2 * parent->child_capacity : 4;
		ti_module **c = ti_arena_calloc(&m->arena, (size_t)cap, sizeof(*c));
		const char **n = ti_arena_calloc(&m->arena, (size_t)cap, sizeof(*n));
		if (!c || !n)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		if (parent->child_count) {
			memcpy(c, parent->children, (size_t)parent->child_count * sizeof(*c));
			memcpy(n, parent->child_names, (size_t)parent->child_count * sizeof(*n));
		}
		parent->children = c;
		parent->child_names = n;
		parent->child_capacity = cap;
	}
	parent->children[parent->child_count] = child;
	parent->child_names[parent->child_count++] = name;
	return TI_OK;
}

static ti_status build_module(parser *p, const cJSON *j, const char *path, const char *jpath,
                              int depth, ti_module **out, ti_error *err);

static const char *const container_types[] = {"Sequential", "ModuleList", "ModuleDict", "Module"};
/* Keys every module takes besides its constructor's: tensors it holds itself. */
static const char *const free_tensor_keys[] = {"parameters", "buffers"};

static bool is_free_tensor_key(const char *key)
{
	for (size_t i = 0; i < sizeof(free_tensor_keys) / sizeof(free_tensor_keys[0]); i++)
		if (!strcmp(key, free_tensor_keys[i]))
			return true;
	return false;
}

/* options->cast_dtype, else options->cast_floating (the default dtype): a floating dtype becomes
 * that one, as model.to(DT) casts it. */
static ti_dtype cast_floating(const parser *p, ti_dtype dt)
{
	if (!p->options || !ti_dtype_is_floating(dt))
		return dt;
	if (p->options->cast_dtype)
		return p->options->cast_dtype;
	return p->options->cast_floating ? p->model->ctx.default_dtype : dt;
}

/* A tensor's "dtype" ("float32", "torch.int64"): the default when absent. */
static ti_status parse_dtype(parser *p, const cJSON *dtype, const char *jp, ti_dtype *out, ti_error *err)
{
	ti_model *m = p->model;
	*out = m->ctx.default_dtype;
	if (!dtype)
		return TI_OK;
	const char *dn = cJSON_IsString(dtype) ? dtype->valuestring : "";
	if (!strncmp(dn, "torch.", 6))
		dn += 6;
	if (!(*out = ti_dtype_from_torch_name(dn)))
		return at(TI_FAIL(err, TI_E_CORRUPT, "unknown dtype '%s'", cJSON_IsString(dtype) ? dtype->valuestring : "?"),
		          err, join(m, jp, "dtype"));
	return TI_OK;
}

/*
 * A module's own "parameters" and "buffers": tensors registered outside any
 * constructor (a ViT's class_token, a layer scale, a registered mask), each
 * {"shape": [...], "dtype": "float32"} with "requires_grad" (parameters) or
 * "persistent" (buffers), both true by default.
 */
static ti_status add_free_tensors(parser *p, const cJSON *j, ti_module *mod, const char *jpath, ti_error *err)
{
	ti_model *m = p->model;
	for (int kind = 0; kind < 2; kind++) {
		const char *key = free_tensor_keys[kind];
		const cJSON *set = cJSON_GetObjectItemCaseSensitive(j, key);
		const char *jset = join(m, jpath, key);
		if (!set)
			continue;
		if (!cJSON_IsObject(set))
			return at(TI_FAIL(err, TI_E_CORRUPT, "\"%s\" must map names to {\"shape\", \"dtype\"}", key), err, jset);
		const cJSON *item;
		cJSON_ArrayForEach(item, set) {
			const char *jp = join(m, jset, item->string);
			if (!is_identifier(item->string))
				return at(TI_FAIL(err, TI_E_CORRUPT, "bad %s name '%s'", kind ? "buffer" : "parameter", item->string),
				          err, jp);
			const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
			const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
			const cJSON *flag = cJSON_GetObjectItemCaseSensitive(item, kind ? "persistent" : "requires_grad");
			const cJSON *field;
			cJSON_ArrayForEach(field, item) {
				if (strcmp(field->string, "shape") && strcmp(field->string, "dtype") &&
				    strcmp(field->string, kind ? "persistent" : "requires_grad"))
					return at(TI_FAIL(err, TI_E_CORRUPT, "a %s takes \"shape\", \"dtype\" and \"%s\", not '%s'",
					                  kind ? "buffer" : "parameter", kind ? "persistent" : "requires_grad",
					                  field->string), err, join(m, jp, field->string));
			}
			if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > TI_META_MAX_DIMS)
				return at(TI_FAIL(err, TI_E_CORRUPT, "a %s needs a \"shape\" list of at most %d sizes",
				                  kind ? "buffer" : "parameter", TI_META_MAX_DIMS), err, jp);
			int64_t dims[TI_META_MAX_DIMS];
			int ndim = 0;
			const cJSON *d;
			cJSON_ArrayForEach(d, shape) {
				/* a size is an integer or a config reference ("$head_dim//2"), as a constructor's argument is */
				ti_arg size = ti_arg_none();
				const char *jsize = join(m, jp, "shape");
				if ((cJSON_IsNumber(d) || (cJSON_IsString(d) && d->valuestring[0] == '$')) &&
				    json_to_arg(p, d, jsize, 0, &size, err))
					return TI_E_CORRUPT;
				if (size.kind != TI_ARG_INT || !ti_dim_is_int(size.as.dim) || size.as.dim.value < 0)
					return at(TI_FAIL(err, TI_E_CORRUPT, "a %s's sizes are non-negative integers",
					                  kind ? "buffer" : "parameter"), err, jsize);
				dims[ndim++] = size.as.dim.value;
			}
			ti_dtype dt;
			ti_status dst = parse_dtype(p, dtype, jp, &dt, err);
			if (dst)
				return dst;
			dt = cast_floating(p, dt);
			if (flag && !cJSON_IsBool(flag))
				return at(TI_FAIL(err, TI_E_CORRUPT, "\"%s\" must be true or false", kind ? "persistent" : "requires_grad"),
				          err, join(m, jp, kind ? "persistent" : "requires_grad"));
			bool on = !flag || cJSON_IsTrue(flag);
			const char *name = ti_arena_strdup(&m->arena, item->string);
			ti_status st = kind ? ti_module_add_buffer(mod, name, dt, ndim, dims, on, err)
			                    : ti_module_add_param(mod, name, dt, ndim, dims, err);
			if (st)
				return at(st == TI_E_INVALID ? (err->code = TI_E_CORRUPT) : st, err, jp);
			if (!kind && !on) {
				ti_module_tensor *t = &mod->tensors[mod->tensor_count - 1];
				t->trainable = false;
				t->tensor->requires_grad = false;
			}
		}
	}
	return TI_OK;
}

static ti_status build_container(parser *p, const cJSON *j, const char *type, const char *path,
                                 const char *jpath, int depth, ti_module **out, ti_error *err)
{
	ti_model *m = p->model;
	ti_module_kind kind = !strcmp(type, "Sequential") ? TI_MODULE_SEQUENTIAL
	                    : !strcmp(type, "ModuleList") ? TI_MODULE_LIST
	                    : !strcmp(type, "ModuleDict") ? TI_MODULE_DICT : TI_MODULE_PLAIN;
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(j, "class");
	if (cls && (kind != TI_MODULE_PLAIN || !cJSON_IsString(cls) || !*cls->valuestring))
		return at(TI_FAIL(err, TI_E_CORRUPT, kind == TI_MODULE_PLAIN ? "\"class\" must be a non-empty string"
		                                                            : "only a \"Module\" takes \"class\""),
		          err, join(m, jpath, "class"));
	if (cls) { /* shown as the class's own name: "torchvision.models.resnet.Bottleneck" -> "Bottleneck" */
		const char *dot = strrchr(cls->valuestring, '.');
		type = dot && dot[1] ? dot + 1 : cls->valuestring;
	}
	ti_module *mod = new_module(m, path, type, kind);
	if (!mod)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, j) {
		if (strcmp(item->string, "type") && strcmp(item->string, "modules") && strcmp(item->string, "class") &&
		    strcmp(item->string, "repeat") && strcmp(item->string, "module") && !is_free_tensor_key(item->string))
			return at(TI_FAIL(err, TI_E_CORRUPT, "%s takes 'modules', or 'repeat' and 'module', not '%s'",
			                  kind == TI_MODULE_PLAIN ? "Module" : type, item->string), err, join(m, jpath, item->string));
	}
	ti_status fst = add_free_tensors(p, j, mod, jpath, err);
	if (fst)
		return fst;
	const cJSON *modules = cJSON_GetObjectItemCaseSensitive(j, "modules");
	const cJSON *repeat = cJSON_GetObjectItemCaseSensitive(j, "repeat");
	const cJSON *one = cJSON_GetObjectItemCaseSensitive(j, "module");
	ti_status st;
	if (repeat || one) {
		if (modules || !repeat || !one)
			return at(TI_FAIL(err, TI_E_CORRUPT, "'repeat' and 'module' go together, without 'modules'"), err, jpath);
		ti_arg n;
		if ((st = json_to_arg(p, repeat, join(m, jpath, "repeat"), depth, &n, err)))
			return st;
		if (n.kind != TI_ARG_INT || n.as.dim.value < 0 || n.as.dim.value > 100000)
			return at(TI_FAIL(err, TI_E_CORRUPT, "'repeat' must be an integer from 0 to 100000"), err, join(m, jpath, "repeat"));
		if (kind == TI_MODULE_DICT || kind == TI_MODULE_PLAIN)
			return at(TI_FAIL(err, TI_E_CORRUPT, "%s cannot repeat: name its modules",
			                  kind == TI_MODULE_DICT ? "ModuleDict" : "Module"), err, jpath);
		for (int64_t i = 0; i < n.as.dim.value; i++) {
			char name[24];
			snprintf(name, sizeof(name), "%lld", (long long)i);
			const char *cname = ti_arena_strdup(&m->arena, name);
			ti_module *child;
			if ((st = build_module(p, one, join(m, path, cname), join(m, jpath, "module"), depth + 1, &child, err)))
				return st;
			if ((st = add_child(m, mod, cname, child, false, err)))
				return at(st, err, jpath);
		}
	} else if (cJSON_IsArray(modules)) {
		if (kind == TI_MODULE_DICT || kind == TI_MODULE_PLAIN)
			return at(TI_FAIL(err, TI_E_CORRUPT, "%s's 'modules' must be an object",
			                  kind == TI_MODULE_DICT ? "ModuleDict" : "Module"), err, join(m, jpath, "modules"));
		int i = 0;
		cJSON_ArrayForEach(item, modules) {
			char name[24];
			snprintf(name, sizeof(name), "%d", i++);
			const char *cname = ti_arena_strdup(&m->arena, name);
			ti_module *child;
			if ((st = build_module(p, item, join(m, path, cname), join(m, jpath, cname), depth + 1, &child, err)))
				return st;
			if ((st = add_child(m, mod, cname, child, false, err)))
				return at(st, err, jpath);
		}
	} else if (cJSON_IsObject(modules)) {
		cJSON_ArrayForEach(item, modules) {
			if (!*item->string || strchr(item->string, '.'))
				return at(TI_FAIL(err, TI_E_CORRUPT, "bad module name '%s'", item->string), err, jpath);
			const char *cname = ti_arena_strdup(&m->arena, item->string);
			ti_module *child;
			if ((st = build_module(p, item, join(m, path, cname), join(m, jpath, cname), depth + 1, &child, err)))
				return st;
			if ((st = add_child(m, mod, cname, child, true, err)))
				return at(st, err, jpath);
		}
	} else if (modules) {
		return at(TI_FAIL(err, TI_E_CORRUPT, "'modules' must be a list or an object"), err, join(m, jpath, "modules"));
	}
	*out = mod;
	return TI_OK;
}

static ti_status build_leaf(parser *p, const cJSON *j, const char *type, const char *path,
                            const char *jpath, int depth, ti_module **out, ti_error *err)
{
	ti_model *m = p->model;
	int n = cJSON_GetArraySize(j), k = 0;
	ti_arg *args = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*args));
	if (!args)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, j) {
		if (!strcmp(item->string, "type") || is_free_tensor_key(item->string))
			continue;
		ti_status st = json_to_arg(p, item, join(m, jpath, item->string), depth, &args[k], err);
		if (st)
			return st;
		args[k++].name = item->string;
	}
	ti_status st = ti_module_new_leaf(&m->ctx, path, type, args, k, out, err);
	if (st == TI_E_SHAPE) /* PyTorch's __init__ raised: the description is what is wrong */
		st = err->code = TI_E_CORRUPT;
	if (st) {
		const char *arg = argument_named_in(m, err->message);
		return at(st, err, arg ? join(m, jpath, arg) : jpath);
	}
	return add_free_tensors(p, j, *out, jpath, err);
}

static ti_status build_module(parser *p, const cJSON *j, const char *path, const char *jpath,
                              int depth, ti_module **out, ti_error *err)
{
	ti_model *m = p->model;
	if (depth > TI_MODEL_MAX_DEPTH)
		return at(TI_FAIL(err, TI_E_CORRUPT, "modules nest deeper than %d", TI_MODEL_MAX_DEPTH), err, jpath);
	if (!cJSON_IsObject(j))
		return at(TI_FAIL(err, TI_E_CORRUPT, "a module must be an object"), err, jpath);
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
	if (!cJSON_IsString(type))
		return at(TI_FAIL(err, TI_E_CORRUPT, "a module needs a \"type\" string"), err, jpath);
	const char *t = type->valuestring;
	for (size_t i = 0; i < sizeof(container_types) / sizeof(container_types[0]); i++)
		if (!strcmp(t, container_types[i]))
			return build_container(p, j, t, path, jpath, depth, out, err);
	const model_def *def = find_def(m, t);
	if (def) {
		const cJSON *item;
		cJSON_ArrayForEach(item, j) {
			if (strcmp(item->string, "type"))
				return at(TI_FAIL(err, TI_E_CORRUPT, "'%s' (from defs) takes no arguments, not '%s'", t, item->string),
				          err, join(m, jpath, item->string));
		}
		return model_build_composite(m, def, path, depth + 1, out, err);
	}
	if (!ti_module_find(t)) {
		char buf[64];
		const char *near = ti_module_closest(t, buf, sizeof(buf));
		return at(near ? TI_FAIL(err, TI_E_CORRUPT, "unknown module type '%s' (did you mean '%s'?)", t, near)
		               : TI_FAIL(err, TI_E_CORRUPT, "unknown module type '%s'", t), err, join(m, jpath, "type"));
	}
	return build_leaf(p, j, t, path, jpath, depth, out, err);
}

ti_status model_build_composite(ti_model *m, const model_def *def, const char *path, int depth,
                                ti_module **out, ti_error *err)
{
	if (depth > TI_MODEL_MAX_DEPTH)
		return TI_FAIL(err, TI_E_CORRUPT, "modules nest deeper than %d (a def that contains itself?)", TI_MODEL_MAX_DEPTH);
	ti_module *mod = new_module(m, path, def->name ? def->name : "Model", TI_MODULE_COMPOSITE);
	if (!mod)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	mod->composite = def;
	/* the model's own tensors (a ViT's class_token), registered before its children */
	ti_status fst = add_free_tensors(m->parser, def->json, mod, def->jpath, err);
	if (fst)
		return fst;
	const cJSON *item;
	const char *jmodules = join(m, def->jpath, "modules");
	cJSON_ArrayForEach(item, (const cJSON *)def->modules_json) {
		if (!*item->string || strchr(item->string, '.'))
			return at(TI_FAIL(err, TI_E_CORRUPT, "bad module name '%s'", item->string), err, jmodules);
		const char *cname = ti_arena_strdup(&m->arena, item->string);
		ti_module *child;
		ti_status st = build_module(m->parser, item, join(m, path, cname), join(m, jmodules, cname), depth + 1, &child, err);
		if (st)
			return st;
		if ((st = add_child(m, mod, cname, child, true, err)))
			return at(st, err, jmodules);
	}
	*out = mod;
	return TI_OK;
}

/* ---- defs and graphs ---- */

static ti_status parse_names(parser *p, const cJSON *j, const char *jpath, const char ***names, int *count,
                             bool allow_object, ti_error *err)
{
	ti_model *m = p->model;
	int n = cJSON_GetArraySize(j), i = 0;
	if (!(cJSON_IsArray(j) || (allow_object && cJSON_IsObject(j))))
		return at(TI_FAIL(err, TI_E_CORRUPT, "expected a list of names"), err, jpath);
	*names = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(**names));
	if (!*names)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, j) {
		const char *name = cJSON_IsObject(j) ? item->string : cJSON_IsString(item) ? item->valuestring : NULL;
		if (!name || !is_identifier(name)) {
			char sub[24];
			snprintf(sub, sizeof(sub), "%d", i);
			return at(TI_FAIL(err, TI_E_CORRUPT, "expected a name (letters, digits, '_')"), err,
			          join(m, jpath, cJSON_IsObject(j) ? item->string : sub));
		}
		(*names)[i++] = name;
	}
	*count = n;
	return TI_OK;
}

static const char *const step_keys[] = {"out", "call", "op", "attr", "opaque", "module", "outputs", "args", "scope"};

static ti_status parse_shape(parser *p, const cJSON *shape, const char *jp, int *ndim, ti_dim **dims, ti_error *err);

/*
 * An opaque step's "outputs": the tensors PyTorch returned, recorded by the
 * exporter, [{"shape": [...], "dtype": "float32"}, ...].
 */
static ti_status parse_recorded(parser *p, const cJSON *outputs, const char *jpath, model_step *s, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsArray(outputs) || cJSON_GetArraySize(outputs) > TI_OP_MAX_OUTPUTS)
		return at(TI_FAIL(err, TI_E_CORRUPT, "an opaque step needs \"outputs\": a list of up to %d "
		                  "{\"shape\", \"dtype\"}", TI_OP_MAX_OUTPUTS), err, jpath);
	int n = cJSON_GetArraySize(outputs), i = 0;
	s->recorded = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*s->recorded));
	if (!s->recorded)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, outputs) {
		char sub[24];
		snprintf(sub, sizeof(sub), "%d", i);
		const char *jp = join(m, jpath, sub);
		ti_model_tensor *t = &s->recorded[i++];
		const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
		ti_status dst = parse_dtype(p, dtype, jp, &t->dtype, err);
		if (dst)
			return dst;
		ti_dim *dims;
		ti_status st = parse_shape(p, cJSON_GetObjectItemCaseSensitive(item, "shape"), jp, &t->ndim, &dims, err);
		if (st)
			return st;
		t->shape = dims;
	}
	s->recorded_count = n;
	return TI_OK;
}

static ti_status parse_step(parser *p, const cJSON *j, const char *jpath, model_step *s, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsObject(j))
		return at(TI_FAIL(err, TI_E_CORRUPT, "a step must be an object"), err, jpath);
	s->jpath = jpath;
	static const char *const kinds[] = {"op", "call", "attr", "opaque"}; /* as model_step_kind */
	const cJSON *target = NULL;
	int found = 0;
	for (int k = 0; k < 4; k++) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, kinds[k]);
		if (t) {
			target = t;
			s->kind = (model_step_kind)k;
			found++;
		}
	}
	if (found != 1)
		return at(TI_FAIL(err, TI_E_CORRUPT, "a step needs exactly one of \"call\", \"op\", \"attr\" and \"opaque\""),
		          err, jpath);
	const char *kind = kinds[s->kind];
	if (!cJSON_IsString(target) || !*target->valuestring)
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"%s\" must be a non-empty string", kind), err, join(m, jpath, kind));
	s->is_call = s->kind == TI_STEP_CALL;
	s->target = target->valuestring;
	if (s->kind == TI_STEP_OP && !ti_op_find(s->target)) {
		char buf[64];
		const char *near = ti_op_closest(s->target, buf, sizeof(buf));
		return at(near ? TI_FAIL(err, TI_E_CORRUPT, "unknown operator '%s' (did you mean '%s'?)", s->target, near)
		               : TI_FAIL(err, TI_E_CORRUPT, "unknown operator '%s'", s->target), err, join(m, jpath, "op"));
	}
	const cJSON *module = cJSON_GetObjectItemCaseSensitive(j, "module");
	const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(j, "outputs");
	if ((module || outputs) && s->kind != TI_STEP_OPAQUE)
		return at(TI_FAIL(err, TI_E_CORRUPT, "only an opaque step takes \"%s\"", module ? "module" : "outputs"), err,
		          join(m, jpath, module ? "module" : "outputs"));
	if (module && (!cJSON_IsString(module) || !*module->valuestring))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"module\" must be a module path"), err, join(m, jpath, "module"));
	s->module = module ? module->valuestring : NULL;
	/* "scope": the module whose forward made the call (tinspect-export writes it): "" is the owner itself */
	const cJSON *scope = cJSON_GetObjectItemCaseSensitive(j, "scope");
	if (scope && !cJSON_IsString(scope))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"scope\" must be a module path (\"\" for the model itself)"), err,
		          join(m, jpath, "scope"));
	s->scope = scope ? scope->valuestring : NULL;
	ti_status st;
	if (s->kind == TI_STEP_OPAQUE && (st = parse_recorded(p, outputs, join(m, jpath, "outputs"), s, err)))
		return st;
	const cJSON *outj = cJSON_GetObjectItemCaseSensitive(j, "out");
	if (cJSON_IsString(outj)) {
		if (!is_identifier(outj->valuestring))
			return at(TI_FAIL(err, TI_E_CORRUPT, "bad name '%s'", outj->valuestring), err, join(m, jpath, "out"));
		s->out_names = ti_arena_calloc(&m->arena, 1, sizeof(*s->out_names));
		if (!s->out_names)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		s->out_names[0] = outj->valuestring;
		s->out_count = 1;
	} else if (outj) {
		if ((st = parse_names(p, outj, join(m, jpath, "out"), &s->out_names, &s->out_count, false, err)))
			return st;
	}
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(j, "args");
	if (s->kind == TI_STEP_ATTR) { /* fx's get_attr: nothing else */
		const cJSON *item;
		cJSON_ArrayForEach(item, j)
			if (strcmp(item->string, "attr") && strcmp(item->string, "out") && strcmp(item->string, "scope"))
				return at(TI_FAIL(err, TI_E_CORRUPT, "an attr step takes \"out\" only, not '%s'", item->string),
				          err, join(m, jpath, item->string));
		if (s->out_count != 1)
			return at(TI_FAIL(err, TI_E_CORRUPT, "an attr step needs one \"out\" name"), err, jpath);
		return TI_OK;
	}
	if (args && !cJSON_IsArray(args))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"args\" must be a list"), err, join(m, jpath, "args"));
	int n = cJSON_GetArraySize(j) + (args ? cJSON_GetArraySize(args) : 0);
	s->args = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*s->args));
	if (!s->args)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	int i = 0;
	cJSON_ArrayForEach(item, args) {
		char sub[24];
		snprintf(sub, sizeof(sub), "args.%d", i++);
		if (cJSON_IsString(item) && !strcmp(item->valuestring, "$training"))
			s->depends_on_mode = true;
		if (!plain_arg(item, &s->args[s->arg_count]) &&
		    (st = json_to_arg(p, item, join(m, jpath, sub), 0, &s->args[s->arg_count], err)))
			return st;
		s->arg_count++;
	}
	cJSON_ArrayForEach(item, j) {
		bool reserved = false;
		for (size_t k = 0; k < sizeof(step_keys) / sizeof(step_keys[0]); k++)
			reserved |= !strcmp(item->string, step_keys[k]);
		if (reserved)
			continue;
		if (cJSON_IsString(item) && !strcmp(item->valuestring, "$training"))
			s->depends_on_mode = true;
		if (!plain_arg(item, &s->args[s->arg_count]) &&
		    (st = json_to_arg(p, item, join(m, jpath, item->string), 0, &s->args[s->arg_count], err)))
			return st;
		s->args[s->arg_count++].name = item->string;
	}
	return TI_OK;
}

/*
 * "lifetime": "last_use": each value a name is bound to dies after the last
 * step that reads it (or right after the step that makes it, when nothing
 * does), as the code torch.fx generates deletes it; the forward's outputs
 * live on. A value rebound by the step that last reads it is let go by the
 * rebinding itself. The plan is a list of names per step.
 */
typedef struct binding {
	const char *name;
	int made, last;     /* step that bound it (-1: an input), last step that reads it */
	bool rebound_there; /* the step that last reads it binds the name again */
} binding;

typedef struct release_plan {
	binding *b;
	int count, capacity;
	ti_strmap current;  /* name -> index into b + 1 */
	ti_model *m;
} release_plan;

static bool plan_bind(release_plan *rp, const char *name, int step)
{
	if (rp->count == rp->capacity) {
		int cap = rp->capacity ? 2 * rp->capacity : 64;
		binding *bigger = ti_arena_calloc(&rp->m->arena, (size_t)cap, sizeof(*bigger));
		if (!bigger)
			return false;
		if (rp->count)
			memcpy(bigger, rp->b, (size_t)rp->count * sizeof(*bigger));
		rp->b = bigger;
		rp->capacity = cap;
	}
	binding *old = NULL;
	uintptr_t idx = (uintptr_t)ti_strmap_get(&rp->current, name);
	if (idx)
		old = &rp->b[idx - 1];
	if (old && old->last == step)
		old->rebound_there = true;
	rp->b[rp->count] = (binding){name, step, step, false};
	rp->count++;
	if (ti_strmap_put(&rp->current, name, (void *)(uintptr_t)rp->count))
		return false;
	return true;
}

static void plan_read(release_plan *rp, const ti_arg *a, int step)
{
	if (a->kind == TI_ARG_LIST || a->kind == TI_ARG_SLICE) {
		for (int i = 0; i < a->as.list.count; i++)
			plan_read(rp, &a->as.list.items[i], step);
		return;
	}
	if (a->kind != TI_ARG_STR)
		return;
	uintptr_t idx = (uintptr_t)ti_strmap_get(&rp->current, a->as.str);
	if (idx)
		rp->b[idx - 1].last = step;
}

static ti_status plan_releases(parser *p, model_def *def, ti_error *err)
{
	ti_model *m = p->model;
	release_plan rp = {NULL, 0, 0, {0}, m};
	ti_strmap_init(&rp.current);
	ti_status st = TI_OK;
	for (int i = 0; i < def->input_count && !st; i++)
		if (!plan_bind(&rp, def->inputs[i], -1))
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	for (int s = 0; s < def->step_count && !st; s++) {
		const model_step *step = &def->steps[s];
		for (int i = 0; i < step->arg_count; i++)
			plan_read(&rp, &step->args[i], s);
		for (int i = 0; i < step->out_count && !st; i++)
			if (!plan_bind(&rp, step->out_names[i], s))
				st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	}
	for (int i = 0; i < def->output_count; i++) { /* what the forward returns outlives it */
		uintptr_t idx = (uintptr_t)ti_strmap_get(&rp.current, def->outputs[i]);
		if (idx)
			rp.b[idx - 1].last = def->step_count;
	}
	if (!def->output_count && def->step_count) /* without "outputs", the last step's values are returned */
		for (int k = 0; k < rp.count; k++)
			if (rp.b[k].made == def->step_count - 1)
				rp.b[k].last = def->step_count;
	/* inputs belong to the caller; the others die after their last reader */
	for (int k = 0; k < rp.count && !st; k++) {
		const binding *b = &rp.b[k];
		if (b->made < 0 || b->last >= def->step_count || b->rebound_there)
			continue;
		model_step *at = &def->steps[b->last];
		const char **grown = ti_arena_calloc(&m->arena, (size_t)at->release_count + 1, sizeof(*grown));
		if (!grown) {
			st = TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
			break;
		}
		if (at->release_count)
			memcpy(grown, at->release, (size_t)at->release_count * sizeof(*grown));
		grown[at->release_count++] = b->name;
		at->release = grown;
	}
	ti_strmap_release(&rp.current);
	return st;
}

/*
 * "kv_windows": {MODULE_PATH: TOKENS, ...} - the attention steps run inside
 * that module (or below it) attend over a sliding window of TOKENS, so an
 * inference cache keeps at most that many of their keys and values (a
 * Hugging Face template fills it from the config's sliding-window fields).
 * "kv_compressed": {MODULE_PATH: ELEMENTS, ...} - their cache can instead
 * hold ELEMENTS a token in all (DeepSeek's MLA: the latent kv_lora_rank and
 * the shared rope key), not the per-head keys and values.
 * what is "kv_windows" or "kv_compressed", for errors.
 */
static ti_status parse_module_counts(ti_model *m, const cJSON *j, const char *what, ti_model_window **out,
                                     size_t *count, ti_error *err)
{
	if (!j)
		return TI_OK;
	if (!cJSON_IsObject(j))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"%s\" must map module paths to counts", what), err, what);
	size_t n = (size_t)cJSON_GetArraySize(j);
	*out = ti_arena_calloc(&m->arena, n + 1, sizeof(**out));
	if (!*out)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, j) {
		if (!cJSON_IsNumber(item) || item->valuedouble < 1 || item->valuedouble > 1e15 ||
		    item->valuedouble != (double)(int64_t)item->valuedouble)
			return at(TI_FAIL(err, TI_E_CORRUPT, "%s", !strcmp(what, "kv_windows")
			                  ? "a sliding window is a whole number of tokens, at least 1"
			                  : "a compressed cache is a whole number of elements a token, at least 1"),
			          err, join(m, what, item->string));
		(*out)[(*count)++] = (ti_model_window){item->string, (int64_t)item->valuedouble};
	}
	return TI_OK;
}

/*
 * "attention": {MODULE_PATH: "KIND,KIND...", ...} - how the model's own code
 * runs the attention steps (scaled_dot_product_attention in the description)
 * inside that module, where memory depends on it (tinspect/model.h's
 * TI_MODEL_ATTN_*): "eager" its own matmul, softmax and matmul under every
 * PyTorch (transformers' T5); "keeps-scores" the scores before the softmax
 * stay in a variable of their own to the step's end (T5, ViT, BERT);
 * "no-cache" an encoder, whose steps keep no KV cache.
 */
static const char *const attention_kinds[] = {"eager", "keeps-scores", "no-cache"};

static ti_status parse_attention(ti_model *m, const cJSON *j, ti_error *err)
{
	if (!j)
		return TI_OK;
	if (!cJSON_IsObject(j))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"attention\" must map module paths to kinds"), err, "attention");
	size_t n = (size_t)cJSON_GetArraySize(j);
	if (!(m->attention = ti_arena_calloc(&m->arena, n + 1, sizeof(*m->attention))))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, j) {
		int64_t flags = 0;
		const char *p = cJSON_IsString(item) ? item->valuestring : "";
		while (*p) {
			size_t len = strcspn(p, ","), k = 0;
			while (k < sizeof(attention_kinds) / sizeof(attention_kinds[0]) &&
			       (strlen(attention_kinds[k]) != len || strncmp(p, attention_kinds[k], len)))
				k++;
			if (k == sizeof(attention_kinds) / sizeof(attention_kinds[0]))
				break;
			flags |= (int64_t)1 << k;
			p += len + (p[len] == ',');
		}
		if (!flags || *p)
			return at(TI_FAIL(err, TI_E_CORRUPT, "an attention's kinds are \"eager\", \"keeps-scores\" and "
			                  "\"no-cache\", joined by commas"), err, join(m, "attention", item->string));
		m->attention[m->attention_count++] = (ti_model_window){item->string, flags};
	}
	return TI_OK;
}

/*
 * "decode": {"length": SYMBOL, "once": [MODULE_PATH, ...]} - how generation
 * runs the model (an encoder-decoder's): a decode step binds SYMBOL to one
 * new token (default "T"), and the modules under "once" run at the prefill
 * alone, their outputs kept for every step (T5's encoder).
 */
static ti_status parse_decode(ti_model *m, const cJSON *j, ti_error *err)
{
	if (!j)
		return TI_OK;
	const cJSON *len = cJSON_GetObjectItemCaseSensitive(j, "length");
	const cJSON *once = cJSON_GetObjectItemCaseSensitive(j, "once");
	if (!cJSON_IsObject(j) || (len && !cJSON_IsString(len)) || (once && !cJSON_IsArray(once)))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"decode\" is {\"length\": SYMBOL, \"once\": [MODULE_PATH, ...]}"), err,
		          "decode");
	m->decode_length = len ? len->valuestring : NULL;
	size_t n = (size_t)cJSON_GetArraySize(once);
	if (n && !(m->decode_once = ti_arena_calloc(&m->arena, n, sizeof(*m->decode_once))))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	cJSON_ArrayForEach(item, once) {
		if (!cJSON_IsString(item) || !item->valuestring[0])
			return at(TI_FAIL(err, TI_E_CORRUPT, "a module path"), err, "decode.once");
		m->decode_once[m->decode_once_count++] = item->valuestring;
	}
	return TI_OK;
}

static ti_status parse_kv_windows(ti_model *m, const cJSON *root, ti_error *err)
{
	ti_status st = parse_module_counts(m, cJSON_GetObjectItemCaseSensitive(root, "kv_windows"), "kv_windows",
	                                   &m->kv_windows, &m->kv_window_count, err);
	if (!st)
		st = parse_module_counts(m, cJSON_GetObjectItemCaseSensitive(root, "kv_compressed"), "kv_compressed",
		                         &m->kv_compressed, &m->kv_compressed_count, err);
	if (!st)
		st = parse_attention(m, cJSON_GetObjectItemCaseSensitive(root, "attention"), err);
	return st ? st : parse_decode(m, cJSON_GetObjectItemCaseSensitive(root, "decode"), err);
}

/* The count of the deepest entry of list that is module_path or holds it; 0 when none. */
static int64_t module_count(const ti_model_window *list, size_t count, const char *module_path)
{
	int64_t best = 0;
	size_t best_len = 0;
	for (size_t i = 0; module_path && i < count; i++) {
		const char *w = list[i].module;
		size_t len = strlen(w);
		/* the module itself or one below it ("model.layers.1" holds "model.layers.1.self_attn"), the deepest wins */
		if ((len == 0 || (!strncmp(module_path, w, len) && (module_path[len] == '\0' || module_path[len] == '.'))) &&
		    (!best || len >= best_len)) {
			best = list[i].tokens;
			best_len = len;
		}
	}
	return best;
}

int64_t ti_model_kv_window(const ti_model *m, const char *module_path)
{
	return module_count(m->kv_windows, m->kv_window_count, module_path);
}

int64_t ti_model_kv_compressed(const ti_model *m, const char *module_path)
{
	return module_count(m->kv_compressed, m->kv_compressed_count, module_path);
}

unsigned ti_model_attention(const ti_model *m, const char *module_path)
{
	return (unsigned)module_count(m->attention, m->attention_count, module_path);
}

const char *ti_model_decode_length(const ti_model *m)
{
	return m->decode_length ? m->decode_length : "T";
}

bool ti_model_runs_once(const ti_model *m, const char *module_path)
{
	for (size_t i = 0; module_path && i < m->decode_once_count; i++) {
		size_t len = strlen(m->decode_once[i]);
		if (!strncmp(module_path, m->decode_once[i], len) && (module_path[len] == '\0' || module_path[len] == '.'))
			return true;
	}
	return false;
}

static ti_status parse_def(parser *p, const cJSON *j, const char *name, const char *jpath,
                           model_def *def, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsObject(j))
		return at(TI_FAIL(err, TI_E_CORRUPT, "expected an object"), err, jpath);
	def->name = name;
	def->jpath = jpath;
	const cJSON *item;
	cJSON_ArrayForEach(item, j) {
		static const char *const known[] = {"inputs", "modules", "graph", "outputs", "config", "defs", "tied", "comment",
		                                    "description", "parameters", "buffers", "lifetime", "class", "kv_windows",
		                                    "kv_compressed", "attention", "decode", "quantization"};
		bool ok = false;
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok |= !strcmp(item->string, known[k]);
		if (!ok || (name && (!strcmp(item->string, "config") || !strcmp(item->string, "defs") || !strcmp(item->string, "tied") ||
		                     !strcmp(item->string, "lifetime") || !strcmp(item->string, "class") ||
		                     !strcmp(item->string, "kv_windows") || !strcmp(item->string, "kv_compressed") ||
		                     !strcmp(item->string, "attention") || !strcmp(item->string, "decode") ||
		                     !strcmp(item->string, "quantization"))))
			return at(TI_FAIL(err, TI_E_CORRUPT, "unknown key '%s'", item->string), err, join(m, jpath, item->string));
	}
	const cJSON *inputs = cJSON_GetObjectItemCaseSensitive(j, "inputs");
	const cJSON *modules = cJSON_GetObjectItemCaseSensitive(j, "modules");
	const cJSON *graph = cJSON_GetObjectItemCaseSensitive(j, "graph");
	const cJSON *outputs = cJSON_GetObjectItemCaseSensitive(j, "outputs");
	ti_status st;
	if (!inputs)
		return at(TI_FAIL(err, TI_E_CORRUPT, "missing \"inputs\""), err, jpath);
	if ((st = parse_names(p, inputs, join(m, jpath, "inputs"), &def->inputs, &def->input_count, true, err)))
		return st;
	if (modules && !cJSON_IsObject(modules))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"modules\" must be an object"), err, join(m, jpath, "modules"));
	def->modules_json = modules;
	def->json = j;
	if (graph) {
		if (!cJSON_IsArray(graph))
			return at(TI_FAIL(err, TI_E_CORRUPT, "\"graph\" must be a list of steps"), err, join(m, jpath, "graph"));
		int n = cJSON_GetArraySize(graph);
		def->steps = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*def->steps));
		if (!def->steps)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		def->has_graph = true;
		const char *jgraph = join(m, jpath, "graph");
		cJSON_ArrayForEach(item, graph) {
			char sub[24];
			snprintf(sub, sizeof(sub), "%d", def->step_count);
			if ((st = parse_step(p, item, join(m, jgraph, sub), &def->steps[def->step_count], err)))
				return st;
			def->step_count++;
		}
	} else if (def->input_count != 1) {
		return at(TI_FAIL(err, TI_E_CORRUPT, "without \"graph\", the modules run in order on one input, not %d",
		                  def->input_count), err, join(m, jpath, "inputs"));
	}
	if (outputs && (st = parse_names(p, outputs, join(m, jpath, "outputs"), &def->outputs, &def->output_count, false, err)))
		return st;
	if (p->last_use && def->has_graph)
		return plan_releases(p, def, err);
	return TI_OK;
}

/* ---- inputs, ties, parameters ---- */

/* A shape: sizes that are integers, symbol names ("N") or formulas of them ("N*197", "(T - 1)//2 + 1"). */
static ti_status parse_shape(parser *p, const cJSON *shape, const char *jp, int *ndim, ti_dim **out, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsArray(shape))
		return at(TI_FAIL(err, TI_E_CORRUPT, "a tensor needs a \"shape\" list"), err, jp);
	int n = cJSON_GetArraySize(shape);
	if (n > TI_META_MAX_DIMS)
		return at(TI_FAIL(err, TI_E_CORRUPT, "more than %d dimensions", TI_META_MAX_DIMS), err, join(m, jp, "shape"));
	ti_dim *dims = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*dims));
	if (!dims)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	int k = 0;
	const cJSON *d;
	cJSON_ArrayForEach(d, shape) {
		char sub[24];
		snprintf(sub, sizeof(sub), "shape.%d", k);
		ti_arg a;
		ti_status st = json_to_arg(p, d, join(m, jp, sub), 0, &a, err);
		if (st)
			return st;
		if (a.kind == TI_ARG_STR && is_identifier(a.as.str) && strlen(a.as.str) > TI_SYM_MAX_NAME)
			return at(TI_FAIL(err, TI_E_CORRUPT, "a symbol name is at most %d characters", TI_SYM_MAX_NAME),
			          err, join(m, jp, sub));
		if (a.kind == TI_ARG_STR && ti_dim_parse(&m->sym, a.as.str, &dims[k]) &&
		    ti_dim_compare(&m->sym, dims[k], TI_CMP_GE, ti_dim_int(0)) != TI_FALSE)
			;
		else if (a.kind == TI_ARG_INT && a.as.dim.value >= 0)
			dims[k] = a.as.dim;
		else
			return at(TI_FAIL(err, TI_E_CORRUPT, "a size must be a non-negative integer, a symbol name or a formula"),
			          err, join(m, jp, sub));
		k++;
	}
	*ndim = n;
	*out = dims;
	return ti_sym_ok(&m->sym, err);
}

/*
 * An --input spec, SHAPE[:DTYPE], split in place: its sizes ("8x3x224x224"
 * or "N,3,224,224") into items and the dtype's name after the last ':'
 * (NULL without one). The number of sizes, or -1 when there are more than max.
 */
static int split_input_spec(char *text, char **items, int max, const char **dtype)
{
	char *colon = strrchr(text, ':');
	*dtype = NULL;
	if (colon) {
		*colon = '\0';
		*dtype = colon + 1;
	}
	char sep = strchr(text, ',') ? ',' : 'x';
	int n = 0;
	for (char *item = *text ? text : NULL; item;) {
		if (n == max)
			return -1;
		char *end = strchr(item, sep);
		if (end)
			*end++ = '\0';
		items[n++] = item;
		item = end;
	}
	return n;
}

/*
 * --input NAME=SHAPE[:DTYPE]: "8x3x224x224" or "N,3,224,224:float16" in place
 * of the description's shape (and dtype, when given).
 */
static ti_status override_input(parser *p, ti_model_tensor *t, const char *jp, ti_error *err)
{
	ti_model *m = p->model;
	const ti_model_options *o = p->options;
	const char *spec = NULL;
	for (size_t i = 0; o && i < o->input_count; i++)
		if (!strcmp(o->input_names[i], t->name))
			spec = o->input_specs[i];
	if (!spec)
		return TI_OK;
	char *text = ti_arena_strdup(&m->arena, spec), *items[TI_META_MAX_DIMS];
	if (!text)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const char *dtype;
	int n = split_input_spec(text, items, TI_META_MAX_DIMS, &dtype);
	if (n < 0)
		return TI_FAIL(err, TI_E_INVALID, "--input %s: more than %d dimensions", t->name, TI_META_MAX_DIMS);
	if (dtype) {
		const char *dn = !strncmp(dtype, "torch.", 6) ? dtype + 6 : dtype;
		if (!(t->dtype = ti_dtype_from_torch_name(dn)))
			return TI_FAIL(err, TI_E_INVALID, "--input %s: unknown dtype '%s'", t->name, dtype);
	}
	ti_dim *dims = ti_arena_calloc(&m->arena, TI_META_MAX_DIMS + 1, sizeof(*dims));
	if (!dims)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	for (int k = 0; k < n; k++)
		if (!ti_dim_parse(&m->sym, items[k], &dims[k]) ||
		    ti_dim_compare(&m->sym, dims[k], TI_CMP_GE, ti_dim_int(0)) == TI_FALSE)
			return TI_FAIL(err, TI_E_INVALID, "--input %s: '%s' is not a size (an integer, a symbol or a formula)",
			               t->name, items[k]);
	(void)jp;
	t->ndim = n;
	t->shape = dims;
	return ti_sym_ok(&m->sym, err);
}

static ti_status parse_inputs(parser *p, const cJSON *inputs, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsObject(inputs))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"inputs\" must map names to {\"shape\", \"dtype\"}"), err, "inputs");
	m->input_count = (size_t)cJSON_GetArraySize(inputs);
	m->inputs = ti_arena_calloc(&m->arena, m->input_count + 1, sizeof(*m->inputs));
	if (!m->inputs)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	size_t i = 0;
	cJSON_ArrayForEach(item, inputs) {
		ti_model_tensor *t = &m->inputs[i++];
		const char *jp = join(m, "inputs", item->string);
		t->name = item->string;
		const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
		const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
		if (!cJSON_IsArray(shape))
			return at(TI_FAIL(err, TI_E_CORRUPT, "an input needs a \"shape\" list"), err, jp);
		ti_status dst = parse_dtype(p, dtype, jp, &t->dtype, err);
		if (dst)
			return dst;
		ti_dim *dims;
		ti_status st = parse_shape(p, shape, jp, &t->ndim, &dims, err);
		if (st)
			return st;
		t->shape = dims;
		if ((st = override_input(p, t, jp, err)))
			return st;
		t->dtype = cast_floating(p, t->dtype);
		ti_dim *stride = ti_arena_calloc(&m->arena, (size_t)t->ndim + 1, sizeof(*stride));
		if (!stride)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		ti_contiguous_strides(&m->ctx, t->ndim, dims, stride);
		t->stride = stride;
	}
	return ti_sym_ok(&m->sym, err);
}

static ti_module_tensor *find_tensor(ti_module *root, const char *name)
{
	ti_module *m = root;
	const char *s = name;
	for (;;) {
		for (int i = 0; i < m->tensor_count; i++)
			if (!strcmp(m->tensors[i].name, s))
				return &m->tensors[i];
		const char *dot = strchr(s, '.');
		if (!dot)
			return NULL;
		ti_module *next = NULL;
		for (int i = 0; i < m->child_count && !next; i++)
			if (strlen(m->child_names[i]) == (size_t)(dot - s) && !strncmp(m->child_names[i], s, (size_t)(dot - s)))
				next = m->children[i];
		if (!next)
			return NULL;
		m = next;
		s = dot + 1;
	}
}

static ti_status parse_ties(parser *p, const cJSON *tied, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsObject(tied))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"tied\" must map parameter names to parameter names"), err, "tied");
	const cJSON *item;
	cJSON_ArrayForEach(item, tied) {
		const char *jp = join(m, "tied", item->string);
		ti_module_tensor *dst = find_tensor(m->root, item->string);
		ti_module_tensor *src = cJSON_IsString(item) ? find_tensor(m->root, item->valuestring) : NULL;
		if (!dst)
			return at(TI_FAIL(err, TI_E_CORRUPT, "no parameter '%s'", item->string), err, jp);
		if (!src)
			return at(TI_FAIL(err, TI_E_CORRUPT, "no parameter '%s'", cJSON_IsString(item) ? item->valuestring : "?"), err, jp);
		if (src->tied_to || src == dst)
			return at(TI_FAIL(err, TI_E_CORRUPT, "'%s' cannot be tied to '%s'", item->string, item->valuestring), err, jp);
		const ti_meta_tensor *a = dst->tensor, *b = src->tensor;
		bool same = a->ndim == b->ndim && a->dtype == b->dtype;
		for (int i = 0; same && i < a->ndim; i++)
			same = ti_dim_same(a->shape[i], b->shape[i]);
		if (!same)
			return at(TI_FAIL(err, TI_E_CORRUPT, "cannot tie '%s' %s to '%s' %s: shapes differ", item->string,
			                  ti_meta_shape_str(&m->ctx, a), item->valuestring, ti_meta_shape_str(&m->ctx, b)), err, jp);
		dst->tensor = src->tensor;
		dst->tied_to = item->valuestring;
	}
	return TI_OK;
}

/* A new entry of m->params, for local of mod; the caller fills the rest. */
static ti_status add_param(ti_model *m, const ti_module *mod, const char *local, size_t *cap, ti_model_param **out,
                           ti_error *err)
{
	if (m->param_count == *cap) {
		size_t bigger = *cap ? 2 * *cap : 64;
		ti_model_param *p = ti_arena_calloc(&m->arena, bigger, sizeof(*p));
		const ti_module **owners = ti_arena_calloc(&m->arena, bigger, sizeof(*owners));
		const char **locals = ti_arena_calloc(&m->arena, bigger, sizeof(*locals));
		if (!p || !owners || !locals)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the parameter list");
		if (m->param_count) {
			memcpy(p, m->params, m->param_count * sizeof(*p));
			memcpy(owners, m->param_modules, m->param_count * sizeof(*owners));
			memcpy(locals, m->param_locals, m->param_count * sizeof(*locals));
		}
		m->params = p;
		m->param_modules = owners;
		m->param_locals = locals;
		*cap = bigger;
	}
	m->param_modules[m->param_count] = mod;
	m->param_locals[m->param_count] = local;
	ti_model_param *p = &m->params[m->param_count++];
	p->name = join(m, mod->path, local);
	*out = p;
	return p->name ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory for the parameter list");
}

/* A quantized layer's stored tensors, in the state dict where its weight would be (stores names the weight). */
static ti_status add_stored(ti_model *m, const ti_module *mod, const ti_module_tensor *weight, size_t *cap,
                            ti_error *err)
{
	const char *stores = join(m, mod->path, weight->name);
	for (int k = 0; k < mod->stored_count; k++) {
		const ti_module_stored *s = &mod->stored[k];
		ti_model_param *p;
		ti_status st = add_param(m, mod, s->name, cap, &p, err);
		if (st)
			return st;
		p->dtype = s->dtype;
		p->ndim = s->ndim;
		p->shape = s->shape;
		p->buffer = strcmp(s->name, "weight") != 0; /* bitsandbytes' and FP8's weight stays a Parameter */
		p->persistent = true;
		p->stores = stores;
	}
	return stores ? TI_OK : TI_FAIL(err, TI_E_NOMEM, "out of memory for the parameter list");
}

/*
 * state_dict order: a module's parameters, then its buffers, then its
 * children. With non_persistent, the buffers state_dict leaves out instead:
 * they follow the state dict's entries in m->params (the memory simulation
 * counts them; everything that means the state dict stops at param_count).
 * A quantized Linear's weight joins them, its stored tensors in its place.
 */
static ti_status collect_params(ti_model *m, const ti_module *mod, bool non_persistent, size_t *cap, ti_error *err)
{
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < mod->tensor_count; i++) {
			const ti_module_tensor *t = &mod->tensors[i];
			/* a quantized weight follows the state dict, as a non-persistent buffer does: its stored tensors are in it */
			bool outside = (t->buffer && !t->persistent) || t->quantized;
			if (non_persistent ? pass == 1 || !outside : t->buffer != (pass == 1) || outside) {
				ti_status st = !non_persistent && t->quantized && pass == 0 ? add_stored(m, mod, t, cap, err) : TI_OK;
				if (st)
					return st;
				continue;
			}
			ti_model_param *p;
			ti_status ast = add_param(m, mod, t->name, cap, &p, err);
			if (ast)
				return ast;
			p->dtype = t->tensor->dtype;
			p->ndim = t->tensor->ndim;
			int64_t *shape = ti_arena_calloc(&m->arena, (size_t)p->ndim + 1, sizeof(*shape));
			if (!shape)
				return TI_FAIL(err, TI_E_NOMEM, "out of memory for the parameter list");
			for (int k = 0; k < p->ndim; k++)
				shape[k] = t->tensor->shape[k].value;
			p->shape = shape;
			p->buffer = t->buffer;
			p->trainable = t->trainable;
			p->persistent = t->persistent;
			p->tied_to = t->tied_to;
		}
	for (int i = 0; i < mod->child_count; i++) {
		ti_status st = collect_params(m, mod->children[i], non_persistent, cap, err);
		if (st)
			return st;
	}
	return TI_OK;
}

/*
 * The modules a leaf holds inside it, as torch.nn registers them: a
 * MultiheadAttention's out_proj, a transformer layer's attention, linears,
 * norms and dropouts. state_dict() lists each in _metadata.
 */
static const char *const mha_inside[] = {"out_proj", NULL};
static const char *const encoder_layer_inside[] = {
	"self_attn", "self_attn.out_proj", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2", NULL,
};
static const char *const decoder_layer_inside[] = {
	"self_attn", "self_attn.out_proj", "multihead_attn", "multihead_attn.out_proj", "linear1", "dropout", "linear2",
	"norm1", "norm2", "norm3", "dropout1", "dropout2", "dropout3", NULL,
};

typedef struct module_list {
	ti_model *model;
	size_t capacity;
	bool failed;
} module_list;

static void add_module(module_list *l, const char *prefix, const char *type)
{
	ti_model *m = l->model;
	if (l->failed || !prefix) {
		l->failed = true;
		return;
	}
	if (m->module_count == l->capacity) {
		size_t bigger = l->capacity ? 2 * l->capacity : 64;
		ti_model_module *more = ti_arena_calloc(&m->arena, bigger, sizeof(*more));
		if (!more) {
			l->failed = true;
			return;
		}
		if (m->module_count)
			memcpy(more, m->modules, m->module_count * sizeof(*more));
		m->modules = more;
		l->capacity = bigger;
	}
	m->modules[m->module_count++] = (ti_model_module){prefix, ti_module_version(type)};
}

/* Whether mod holds a tensor whose local name starts with prefix ("encoder.norm."). */
static bool holds_under(const ti_module *mod, const char *prefix)
{
	for (int i = 0; i < mod->tensor_count; i++)
		if (!strncmp(mod->tensors[i].name, prefix, strlen(prefix)))
			return true;
	return false;
}

/* A stack of transformer layers at path + "layers", as many as its tensors number, and its norm if it has one. */
static void add_layer_stack(module_list *l, const ti_module *mod, const char *path, const char *inner,
                            const char *const *inside)
{
	ti_model *m = l->model;
	const char *layers = join(m, path, "layers");
	add_module(l, layers, "ModuleList");
	for (int n = 0;; n++) {
		const char *layer = ti_arena_printf(&m->arena, "%s.%d", layers, n);
		const char *local = inner[0] ? ti_arena_printf(&m->arena, "%s.layers.%d.", inner, n)
		                             : ti_arena_printf(&m->arena, "layers.%d.", n);
		if (!layer || !local || !holds_under(mod, local))
			break;
		add_module(l, layer, "TransformerLayer");
		for (const char *const *in = inside; *in; in++)
			add_module(l, join(m, layer, *in), *in);
	}
	const char *norm = inner[0] ? ti_arena_printf(&m->arena, "%s.norm.", inner) : "norm.";
	if (norm && holds_under(mod, norm))
		add_module(l, join(m, path, "norm"), "LayerNorm");
}

/* _metadata's entries: each module's prefix and version, a module before its children. */
static void collect_modules(module_list *l, const ti_module *mod)
{
	ti_model *m = l->model;
	add_module(l, mod->path, mod->type);
	if (mod->kind == TI_MODULE_LEAF) {
		const char *const *inside = !strcmp(mod->type, "MultiheadAttention")        ? mha_inside
		                            : !strcmp(mod->type, "TransformerEncoderLayer") ? encoder_layer_inside
		                            : !strcmp(mod->type, "TransformerDecoderLayer") ? decoder_layer_inside
		                                                                            : NULL;
		for (const char *const *in = inside; in && *in; in++)
			add_module(l, join(m, mod->path, *in), *in);
		if (!strcmp(mod->type, "TransformerEncoder"))
			add_layer_stack(l, mod, mod->path, "", encoder_layer_inside);
		else if (!strcmp(mod->type, "TransformerDecoder"))
			add_layer_stack(l, mod, mod->path, "", decoder_layer_inside);
		else if (!strcmp(mod->type, "Transformer")) {
			add_module(l, join(m, mod->path, "encoder"), "TransformerEncoder");
			add_layer_stack(l, mod, join(m, mod->path, "encoder"), "encoder", encoder_layer_inside);
			add_module(l, join(m, mod->path, "decoder"), "TransformerDecoder");
			add_layer_stack(l, mod, join(m, mod->path, "decoder"), "decoder", decoder_layer_inside);
		}
	}
	for (int i = 0; i < mod->child_count; i++)
		collect_modules(l, mod->children[i]);
}

/* ---- symbols bound by the inputs given ---- */

/* The value bound to a symbol, or -1. */
static int64_t bound_value(const ti_symctx *sym, const char *name, size_t len)
{
	for (size_t i = 0; i < sym->bound_count; i++)
		if (strlen(sym->bound_names[i]) == len && !strncmp(sym->bound_names[i], name, len))
			return sym->bound_values[i];
	return -1;
}

/* The one symbol a declared size names ("N", "2*S+1"), in *name and *len; false for none or several. */
static bool one_symbol(const char *text, const char **name, size_t *len)
{
	*name = NULL;
	for (const char *s = text; *s;) {
		if (isalpha((unsigned char)*s) || *s == '_') {
			const char *start = s;
			while (isalnum((unsigned char)*s) || *s == '_')
				s++;
			if (*name && ((size_t)(s - start) != *len || strncmp(*name, start, *len)))
				return false;
			*name = start;
			*len = (size_t)(s - start);
		} else
			s++;
	}
	return *name != NULL;
}

/*
 * A declared size f(S) of one symbol, given the integer v: S such that
 * f(S) == v when f is linear (f(S) = k*S + c, tried at S = 0, 1, 2), or -1
 * when v cannot be one (k does not divide v - c, or S would be negative);
 * -2 when f is not linear (the run keeps it as an assumption).
 */
static int64_t solve_linear(ti_model *m, const char *text, const char *name, size_t len, int64_t v)
{
	int64_t f[3];
	char sym[64];
	if (len >= sizeof(sym))
		return -2;
	memcpy(sym, name, len);
	sym[len] = '\0';
	for (int x = 0; x < 3; x++) {
		ti_symctx tmp;
		ti_symctx_init(&tmp, &m->arena);
		ti_error ignored;
		ti_dim d;
		if (ti_symctx_bind(&tmp, sym, x, &ignored) || !ti_dim_parse(&tmp, text, &d) || !ti_dim_is_int(d))
			return -2;
		f[x] = d.value;
	}
	int64_t k = f[1] - f[0];
	if (k == 0 || f[2] - f[1] != k)
		return -2;
	if ((v - f[0]) % k || (v - f[0]) / k < 0)
		return -1;
	return (v - f[0]) / k;
}

/*
 * --input NAME=SPEC with integer sizes (a file's shape, for run) binds the
 * symbols of NAME's declared shape: "idx": ["B", "T"] given 2x64 binds B=2
 * and T=64, as if --bind said so, so the whole run is concrete. A binding
 * that contradicts --bind, another input or a size the formula cannot take
 * is an error naming both.
 */
static ti_status bind_from_inputs(parser *p, const cJSON *inputs, ti_error *err)
{
	ti_model *m = p->model;
	const ti_model_options *o = p->options;
	for (size_t i = 0; o && i < o->input_count; i++) {
		const cJSON *decl = cJSON_GetObjectItemCaseSensitive(inputs, o->input_names[i]);
		const cJSON *shape = decl ? cJSON_GetObjectItemCaseSensitive(decl, "shape") : NULL;
		if (!cJSON_IsArray(shape))
			continue; /* an unknown input is reported with the list of known ones */
		char *text = ti_arena_strdup(&m->arena, o->input_specs[i]), *items[TI_META_MAX_DIMS];
		if (!text)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		const char *dtype;
		int count = split_input_spec(text, items, TI_META_MAX_DIMS, &dtype);
		for (int n = 0; n < count; n++) { /* more than the most dimensions: override_input says so */
			const char *item = items[n];
			const cJSON *want = cJSON_GetArrayItem(shape, n);
			char *end;
			long long given = strtoll(item, &end, 10);
			const char *name;
			size_t len = 0;
			if (!cJSON_IsString(want) || *end || end == item || !one_symbol(want->valuestring, &name, &len))
				continue;
			int64_t value = solve_linear(m, want->valuestring, name, len, given);
			if (value == -2)
				continue;
			if (value == -1)
				return TI_FAIL(err, TI_E_INVALID, "--input %s: size %d is %lld, which the declared '%s' cannot be",
				               o->input_names[i], n, given, want->valuestring);
			int64_t had = bound_value(&m->sym, name, len);
			if (had >= 0 && had != value)
				return TI_FAIL(err, TI_E_INVALID, "--input %s: size %d is %lld, so %.*s = %" PRId64 ", but %.*s is "
				               "already %" PRId64 " (--bind or another input)", o->input_names[i], n, given, (int)len,
				               name, value, (int)len, name, had);
			char *sym = ti_arena_strndup(&m->arena, name, len);
			ti_status st = sym ? ti_symctx_bind(&m->sym, sym, value, err)
			                   : TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
			if (st)
				return st;
		}
	}
	return TI_OK;
}

/*
 * "quantization": every Linear the method converts keeps its weight for the
 * forward, and its state dict holds the method's tensors instead (quantized.h).
 */
static ti_status quantize_linears(ti_model *m, ti_module *mod, const ti_quant_spec *spec, const cJSON *keep,
                                  ti_error *err)
{
	for (int i = 0; i < mod->child_count; i++) {
		ti_status st = quantize_linears(m, mod->children[i], spec, keep, err);
		if (st)
			return st;
	}
	if (mod->kind != TI_MODULE_LEAF || strcmp(mod->type, "Linear") || ti_quant_not_converted(keep, mod->path))
		return TI_OK;
	for (int i = 0; i < mod->tensor_count; i++) {
		ti_module_tensor *t = &mod->tensors[i];
		if (strcmp(t->name, "weight") || t->tensor->ndim != 2 || t->tied_to)
			continue;
		ti_module_stored rows[TI_QUANT_MAX_STORED];
		size_t n = ti_quant_layout(spec, t->tensor->shape[1].value, t->tensor->shape[0].value, rows, TI_QUANT_MAX_STORED);
		ti_module_stored *kept = n ? ti_arena_calloc(&m->arena, n, sizeof(*kept)) : NULL;
		if (!n)
			return TI_FAIL(err, TI_E_CORRUPT, "quantization: no layout for '%s'", mod->path);
		if (!kept)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
		memcpy(kept, rows, n * sizeof(*kept));
		mod->stored = kept;
		mod->stored_count = (int)n;
		t->quantized = true;
	}
	return TI_OK;
}

/* ---- open and close ---- */

static ti_status open_parsed(parser *p, const cJSON *root, const ti_model_options *options, ti_error *err)
{
	ti_model *m = p->model;
	if (!cJSON_IsObject(root))
		return TI_FAIL(err, TI_E_CORRUPT, "a model description is a JSON object");
	for (size_t i = 0; options && i < options->bind_count; i++) {
		ti_status st = ti_symctx_bind(&m->sym, options->bind_names[i], options->bind_values[i], err);
		if (st)
			return st;
	}
	{
		ti_status st = bind_from_inputs(p, cJSON_GetObjectItemCaseSensitive(root, "inputs"), err);
		if (st)
			return st;
	}
	const cJSON *lifetime = cJSON_GetObjectItemCaseSensitive(root, "lifetime");
	if (lifetime && !(cJSON_IsString(lifetime) && (!strcmp(lifetime->valuestring, "scope") ||
	                                              !strcmp(lifetime->valuestring, "last_use"))))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"lifetime\" is \"scope\" (a Python local's) or \"last_use\" (fx's)"),
		          err, "lifetime");
	p->last_use = lifetime && !strcmp(lifetime->valuestring, "last_use");
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(root, "class");
	if (cls && (!cJSON_IsString(cls) || !*cls->valuestring))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"class\" must be the model's class name"), err, "class");
	if (cls) { /* "torchvision.models.resnet.ResNet" -> "ResNet", as load_state_dict names it */
		const char *dot = strrchr(cls->valuestring, '.');
		m->class_name = dot && dot[1] ? dot + 1 : cls->valuestring;
	}
	p->config = cJSON_GetObjectItemCaseSensitive(root, "config");
	if (p->config && !cJSON_IsObject(p->config))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"config\" must be an object"), err, "config");
	ti_status wst = parse_kv_windows(m, root, err);
	if (wst)
		return wst;
	p->defs = cJSON_GetObjectItemCaseSensitive(root, "defs");
	if (p->defs && !cJSON_IsObject(p->defs))
		return at(TI_FAIL(err, TI_E_CORRUPT, "\"defs\" must be an object"), err, "defs");
	int ndefs = cJSON_GetArraySize(p->defs);
	m->defs = ti_arena_calloc(&m->arena, (size_t)ndefs + 1, sizeof(*m->defs));
	if (!m->defs)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the description");
	const cJSON *item;
	ti_status st;
	cJSON_ArrayForEach(item, p->defs) {
		const char *jp = join(m, "defs", item->string);
		if (!is_identifier(item->string) || ti_module_find(item->string) || find_def(m, item->string))
			return at(TI_FAIL(err, TI_E_CORRUPT, "'%s' cannot name a new module type", item->string), err, jp);
		if ((st = parse_def(p, item, item->string, jp, &m->defs[m->def_count], err)))
			return st;
		m->def_count++;
	}
	m->main = &m->defs[m->def_count];
	if ((st = parse_def(p, root, NULL, "", m->main, err)))
		return st;
	if ((st = parse_inputs(p, cJSON_GetObjectItemCaseSensitive(root, "inputs"), err)))
		return st;
	for (size_t i = 0; options && i < options->input_count; i++) {
		bool known = false;
		for (size_t k = 0; k < m->input_count; k++)
			known |= !strcmp(m->inputs[k].name, options->input_names[i]);
		if (!known) {
			char names[256] = "";
			for (size_t k = 0; k < m->input_count; k++)
				snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k ? ", " : "", m->inputs[k].name);
			return TI_FAIL(err, TI_E_INVALID, "--input %s: the description has no input '%s' (its inputs: %s)",
			               options->input_names[i], options->input_names[i], names);
		}
	}
	if ((st = model_build_composite(m, m->main, "", 0, &m->root, err)))
		return st;
	const cJSON *tied = cJSON_GetObjectItemCaseSensitive(root, "tied");
	if (tied && (st = parse_ties(p, tied, err)))
		return st;
	const cJSON *quant = cJSON_GetObjectItemCaseSensitive(root, "quantization");
	if (quant) {
		ti_quant_spec spec;
		const cJSON *keep = cJSON_GetObjectItemCaseSensitive(quant, "not_converted");
		if ((st = ti_quant_spec_parse(quant, &spec, err)))
			return at(st, err, "quantization");
		if (keep && !cJSON_IsArray(keep))
			return at(TI_FAIL(err, TI_E_CORRUPT, "\"not_converted\" must list module names"), err,
			          "quantization.not_converted");
		if ((st = quantize_linears(m, m->root, &spec, keep, err)))
			return st;
	}
	size_t cap = 0;
	if ((st = collect_params(m, m->root, false, &cap, err)))
		return st;
	size_t persistent = m->param_count;
	if ((st = collect_params(m, m->root, true, &cap, err)))
		return st;
	m->param_count_all = m->param_count;
	m->param_count = persistent;
	module_list list = {m, 0, false};
	collect_modules(&list, m->root);
	return list.failed ? TI_FAIL(err, TI_E_NOMEM, "out of memory for the module list") : TI_OK;
}

ti_status ti_model_open(const char *text, size_t size, const ti_model_options *options,
                        ti_model **out, ti_error *err)
{
	*out = NULL;
	if (size > TI_MODEL_MAX_BYTES)
		return TI_FAIL(err, TI_E_LIMIT, "description is larger than %zu bytes", TI_MODEL_MAX_BYTES);
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(text, size, &end, false);
	if (!root) {
		/* cJSON only says where it stopped: say what was expected, where it belongs */
		ti_json_error je;
		if (!ti_json_diagnose(text, size, &je))
			return TI_FAIL(err, TI_E_CORRUPT, "bad JSON at line %zu, column %zu: %s", je.line, je.column, je.message);
		size_t off = end && end >= text ? (size_t)(end - text) : 0, line = 1, col = 1;
		for (size_t i = 0; i < off && i < size; i++, col++)
			if (text[i] == '\n')
				line++, col = 0;
		return TI_FAIL(err, TI_E_CORRUPT, "bad JSON at line %zu, column %zu", line, col);
	}
	for (const char *t = end; t && t < text + size; t++) /* text after the value: a broken or joined file */
		if (!strchr(" \t\r\n", *t)) {
			ti_json_error je;
			cJSON_Delete(root);
			if (!ti_json_diagnose(text, size, &je))
				return TI_FAIL(err, TI_E_CORRUPT, "bad JSON at line %zu, column %zu: %s", je.line, je.column,
				               je.message);
			return TI_FAIL(err, TI_E_CORRUPT, "bad JSON: text after the end of the description");
		}
	ti_model *m = calloc(1, sizeof(*m));
	if (!m) {
		cJSON_Delete(root);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	ti_arena_init(&m->arena, options && options->memory_limit ? options->memory_limit : DEFAULT_MEMORY_LIMIT);
	ti_symctx_init(&m->sym, &m->arena);
	m->ctx.arena = &m->arena;
	m->ctx.sym = &m->sym;
	m->ctx.default_dtype = options && options->default_dtype ? options->default_dtype : TI_DT_FLOAT32;
	m->ctx.cast_dtype = options ? options->cast_dtype : TI_DT_INVALID;
	m->ctx.training = options && options->training;
	parser p = {m, NULL, NULL, options && options->training, false, options};
	m->parser = &p; /* composites are built while it lives */
	/* JSON strings are copied into the arena only where kept: keep the tree until closing instead */
	ti_status st = open_parsed(&p, root, options, err);
	m->parser = NULL;
	if (st) {
		cJSON_Delete(root);
		ti_model_close(m);
		return st;
	}
	m->json = root;
	*out = m;
	return TI_OK;
}

void ti_model_close(ti_model *m)
{
	if (!m)
		return;
	cJSON_Delete((cJSON *)m->json);
	ti_arena_release(&m->arena);
	free(m);
}

const ti_model_param *ti_model_params(const ti_model *m, size_t *count)
{
	*count = m->param_count;
	return m->params;
}

const ti_model_module *ti_model_modules(const ti_model *m, size_t *count)
{
	*count = m->module_count;
	return m->modules;
}
