/*
 * signature.c - PyTorch-style signatures: parsing, and binding a call's
 * arguments to them as Python binds a call (see ops/op.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes/meta.h"
#include "util/closest.h"

/* ---- parsing: our own tables, so a failure is our bug (TI_E_INVALID) ---- */

static const struct {
	const char *text;
	ti_param_type type;
} type_names[] = {
	{"Tensor", TI_P_TENSOR}, {"Tensor[]", TI_P_TENSOR_LIST}, {"int", TI_P_INT},
	{"int[]", TI_P_INT_LIST}, {"float", TI_P_FLOAT}, {"float[]", TI_P_FLOAT_LIST},
	{"bool", TI_P_BOOL}, {"str", TI_P_STR}, {"ScalarType", TI_P_DTYPE},
	{"Scalar", TI_P_SCALAR}, {"Tensor|Scalar", TI_P_TENSOR_OR_SCALAR},
	{"int[]|str", TI_P_INT_LIST_OR_STR}, {"int|int[]", TI_P_INT_OR_INT_LIST},
	{"Any", TI_P_ANY},
};

static const char *skip_space(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

/* Reads a type like "int[2]|str?" or "int[]...": the size N is taken out, the rest matched. */
static ti_status parse_type(const char *s, size_t len, ti_param *p, ti_error *err)
{
	char buf[48];
	size_t n = 0;
	if (len >= sizeof(buf))
		return TI_FAIL(err, TI_E_INVALID, "signature type too long");
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '[' && i + 1 < len && isdigit((unsigned char)s[i + 1])) {
			p->list_size = atoi(s + i + 1);
			buf[n++] = '[';
			while (i + 1 < len && isdigit((unsigned char)s[i + 1]))
				i++;
			continue;
		}
		buf[n++] = s[i];
	}
	buf[n] = '\0';
	char *item_q = strstr(buf, "?[");
	if (item_q) { /* int?[]: the items may be None */
		p->items_optional = true;
		memmove(item_q, item_q + 1, strlen(item_q));
		n--;
	}
	if (n >= 3 && !strcmp(buf + n - 3, "...")) {
		p->varargs = true;
		buf[n -= 3] = '\0';
	}
	if (n >= 1 && buf[n - 1] == '?') {
		p->optional = true;
		buf[--n] = '\0';
	}
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (!strcmp(buf, type_names[i].text)) {
			p->type = type_names[i].type;
			return TI_OK;
		}
	return TI_FAIL(err, TI_E_INVALID, "unknown signature type '%s'", buf);
}

static ti_status parse_default(ti_arena *arena, const char *s, size_t len, ti_param *p, ti_error *err)
{
	char *text = ti_arena_strndup(arena, s, len);
	if (!text)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a signature");
	p->has_default = true;
	if (!strcmp(text, "None")) {
		p->default_value = ti_arg_none();
		p->optional = true;
	} else if (!strcmp(text, "True") || !strcmp(text, "False")) {
		p->default_value = ti_arg_bool(text[0] == 'T');
	} else if (text[0] == '\'' || text[0] == '"') {
		if (len < 2 || text[len - 1] != text[0])
			return TI_FAIL(err, TI_E_INVALID, "bad string default %s", text);
		text[len - 1] = '\0';
		p->default_value = ti_arg_str(text + 1);
	} else if (text[0] == '[') {
		int count = 0;
		for (const char *c = text; *c; c++)
			count += *c == ',';
		ti_arg *items = ti_arena_calloc(arena, (size_t)count + 1, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a signature");
		int n = 0;
		for (char *c = text + 1; *c && *c != ']';) {
			char *end;
			long long v = strtoll(c, &end, 10);
			if (end == c)
				return TI_FAIL(err, TI_E_INVALID, "bad list default %s", text);
			items[n++] = ti_arg_int(v);
			c = end;
			while (*c == ',' || *c == ' ')
				c++;
		}
		p->default_value = ti_arg_list(items, n);
	} else if (p->type == TI_P_DTYPE) {
		ti_dtype dt = ti_dtype_from_torch_name(text);
		if (!dt)
			return TI_FAIL(err, TI_E_INVALID, "bad dtype default %s", text);
		p->default_value = ti_arg_dtype(dt);
	} else {
		char *end;
		if (strpbrk(text, ".eE") && strcmp(text, "-1") != 0) {
			double v = strtod(text, &end);
			p->default_value = ti_arg_float(v);
		} else {
			long long v = strtoll(text, &end, 10);
			p->default_value = ti_arg_int(v);
		}
		if (*end)
			return TI_FAIL(err, TI_E_INVALID, "bad default '%s'", text);
	}
	return TI_OK;
}

ti_status ti_signature_parse(ti_arena *arena, const char *text, ti_signature *sig, ti_error *err)
{
	memset(sig, 0, sizeof(*sig));
	const char *open = strchr(text, '(');
	const char *close = strrchr(text, ')');
	if (!open || !close || close < open)
		return TI_FAIL(err, TI_E_INVALID, "bad signature '%s'", text);
	if (!(sig->name = ti_arena_strndup(arena, text, (size_t)(open - text))))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a signature");
	bool keyword_only = false;
	const char *s = skip_space(open + 1);
	while (s < close) {
		/* one parameter: up to the next ',' outside brackets and quotes */
		const char *end = s;
		int depth = 0;
		char quote = 0;
		for (; end < close; end++) {
			if (quote) {
				if (*end == quote)
					quote = 0;
			} else if (*end == '\'' || *end == '"') {
				quote = *end;
			} else if (*end == '[') {
				depth++;
			} else if (*end == ']') {
				depth--;
			} else if (*end == ',' && depth == 0) {
				break;
			}
		}
		const char *stop = end;
		while (stop > s && isspace((unsigned char)stop[-1]))
			stop--;
		if (stop - s == 1 && *s == '*') {
			keyword_only = true;
		} else {
			if (sig->count == TI_OP_MAX_PARAMS)
				return TI_FAIL(err, TI_E_INVALID, "signature '%s' has too many parameters", sig->name);
			ti_param *p = &sig->params[sig->count++];
			p->keyword_only = keyword_only;
			const char *sp = s;
			while (sp < stop && !isspace((unsigned char)*sp))
				sp++;
			ti_status st = parse_type(s, (size_t)(sp - s), p, err);
			if (st)
				return st;
			const char *name = skip_space(sp), *name_end = name;
			while (name_end < stop && (isalnum((unsigned char)*name_end) || *name_end == '_'))
				name_end++;
			if (name_end == name)
				return TI_FAIL(err, TI_E_INVALID, "signature '%s': parameter without a name", sig->name);
			if (!(p->name = ti_arena_strndup(arena, name, (size_t)(name_end - name))))
				return TI_FAIL(err, TI_E_NOMEM, "out of memory for a signature");
			const char *eq = skip_space(name_end);
			if (eq < stop && *eq == '=') {
				const char *d = skip_space(eq + 1);
				if ((st = parse_default(arena, d, (size_t)(stop - d), p, err)))
					return st;
			} else if (eq < stop) {
				return TI_FAIL(err, TI_E_INVALID, "signature '%s': junk after '%s'", sig->name, p->name);
			}
		}
		s = end < close ? skip_space(end + 1) : close;
	}
	return TI_OK;
}

/* ---- binding ---- */

static const char *arg_kind_name(const ti_arg *a)
{
	static const char *const names[] = {
		[TI_ARG_ABSENT] = "nothing", [TI_ARG_NONE] = "NoneType", [TI_ARG_TENSOR] = "Tensor",
		[TI_ARG_LIST] = "list", [TI_ARG_INT] = "int", [TI_ARG_FLOAT] = "float",
		[TI_ARG_BOOL] = "bool", [TI_ARG_STR] = "str", [TI_ARG_DTYPE] = "torch.dtype",
		[TI_ARG_SLICE] = "slice",
	};
	return names[a->kind];
}

static const char *param_type_name(const ti_param *p)
{
	static const char *const names[] = {
		[TI_P_TENSOR] = "Tensor", [TI_P_TENSOR_LIST] = "tuple of Tensors", [TI_P_INT] = "int",
		[TI_P_INT_LIST] = "tuple of ints", [TI_P_FLOAT] = "float", [TI_P_FLOAT_LIST] = "tuple of floats",
		[TI_P_BOOL] = "bool", [TI_P_STR] = "str", [TI_P_DTYPE] = "torch.dtype",
		[TI_P_SCALAR] = "Number", [TI_P_TENSOR_OR_SCALAR] = "Tensor or Number",
		[TI_P_INT_LIST_OR_STR] = "tuple of ints or str", [TI_P_INT_OR_INT_LIST] = "int or tuple of ints",
		[TI_P_ANY] = "object",
	};
	return names[p->type];
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

static ti_status wrong_type(const ti_signature *sig, const ti_param *p, const ti_arg *a, ti_error *err)
{
	return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument '%s' must be %s, not %s", sig->name, p->name,
	               param_type_name(p), arg_kind_name(a));
}

/* A name given where a tensor is expected: the caller's resolver (the graph's names) looks it up. */
static ti_status resolve(ti_shape_ctx *ctx, const ti_arg *a, ti_arg *out, ti_error *err)
{
	if (a->kind == TI_ARG_STR && ctx->resolve)
		return ctx->resolve(ctx->resolve_user, a->as.str, out, err);
	*out = *a;
	return TI_OK;
}

/*
 * Any: a str that names a graph value is that value, inside lists and slices
 * too (getitem's tuple index may hold a tensor); any other str stays a str
 * ("...", a symbol, a mode), so a failed lookup is no error.
 */
static ti_status resolve_any(ti_shape_ctx *ctx, const ti_arg *a, int depth, ti_arg *out, ti_error *err)
{
	*out = *a;
	if (a->kind == TI_ARG_STR && ctx->resolve) {
		ti_error ignored;
		ti_arg v;
		if (!ctx->resolve(ctx->resolve_user, a->as.str, &v, &ignored))
			*out = v;
	} else if ((a->kind == TI_ARG_LIST || a->kind == TI_ARG_SLICE) && a->as.list.count > 0 && depth < 32) {
		ti_arg *items = ti_arena_calloc(ctx->arena, (size_t)a->as.list.count, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory binding a value");
		for (int i = 0; i < a->as.list.count; i++) {
			ti_status st = resolve_any(ctx, &a->as.list.items[i], depth + 1, &items[i], err);
			if (st)
				return st;
		}
		out->as.list.items = items;
	}
	out->name = NULL;
	return TI_OK;
}

static ti_status coerce_int(ti_shape_ctx *ctx, const ti_arg *a, ti_arg *out)
{
	if (a->kind == TI_ARG_INT) {
		*out = *a;
		return TI_OK;
	}
	if (a->kind != TI_ARG_STR)
		return TI_E_CORRUPT;
	if (ctx->resolve) { /* a graph name holding an int: x.size(0) */
		ti_arg v;
		ti_error ignored;
		if (!ctx->resolve(ctx->resolve_user, a->as.str, &v, &ignored)) {
			if (v.kind != TI_ARG_INT)
				return TI_E_CORRUPT;
			*out = v;
			return TI_OK;
		}
	}
	if (is_identifier(a->as.str)) { /* a symbolic size: "N" */
		*out = ti_arg_dim(ti_dim_symbol(ctx->sym, a->as.str));
		return TI_OK;
	}
	ti_dim d; /* a formula of symbols: "N*197" */
	if (ti_dim_parse(ctx->sym, a->as.str, &d)) {
		*out = ti_arg_dim(d);
		return TI_OK;
	}
	return TI_E_CORRUPT;
}

static ti_status coerce_int_list(ti_shape_ctx *ctx, const ti_signature *sig, const ti_param *p,
                                 const ti_arg *a, ti_arg *out, ti_error *err)
{
	int n = a->kind == TI_ARG_LIST ? a->as.list.count : (p->list_size ? p->list_size : 1);
	if (a->kind == TI_ARG_LIST && p->list_size && n != p->list_size && n != 1)
		return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument '%s' must be an int or a list of %d ints, not a list of %d",
		               sig->name, p->name, p->list_size, n);
	if (a->kind == TI_ARG_LIST && p->list_size && n == 1)
		n = p->list_size;
	ti_arg *items = ti_arena_calloc(ctx->arena, (size_t)n ? (size_t)n : 1, sizeof(*items));
	if (!items)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory binding '%s'", p->name);
	for (int i = 0; i < n; i++) {
		const ti_arg *src = a->kind == TI_ARG_LIST ? &a->as.list.items[a->as.list.count == 1 ? 0 : i] : a;
		if (src->kind == TI_ARG_NONE && p->items_optional) {
			items[i] = *src;
			continue;
		}
		if (coerce_int(ctx, src, &items[i]))
			return wrong_type(sig, p, src->kind == TI_ARG_LIST ? src : a, err);
	}
	*out = ti_arg_list(items, n);
	return TI_OK;
}

static ti_status coerce(ti_shape_ctx *ctx, const ti_signature *sig, const ti_param *p,
                        const ti_arg *given, ti_arg *out, ti_error *err)
{
	ti_arg a;
	ti_status st;
	if (p->type == TI_P_ANY)
		return resolve_any(ctx, given, 0, out, err);
	bool wants_tensor = p->type == TI_P_TENSOR || p->type == TI_P_TENSOR_LIST ||
	                    p->type == TI_P_TENSOR_OR_SCALAR;
	if (wants_tensor && (st = resolve(ctx, given, &a, err)))
		return st;
	if (!wants_tensor)
		a = *given;
	a.name = NULL;
	if (a.kind == TI_ARG_NONE) {
		if (!p->optional)
			return wrong_type(sig, p, &a, err);
		*out = a;
		return TI_OK;
	}
	switch (p->type) {
	case TI_P_TENSOR:
		if (a.kind != TI_ARG_TENSOR)
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_TENSOR_LIST: {
		if (a.kind != TI_ARG_LIST)
			return wrong_type(sig, p, &a, err);
		ti_arg *items = ti_arena_calloc(ctx->arena, (size_t)a.as.list.count + 1, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory binding '%s'", p->name);
		for (int i = 0; i < a.as.list.count; i++) {
			if ((st = resolve(ctx, &a.as.list.items[i], &items[i], err)))
				return st;
			if (items[i].kind != TI_ARG_TENSOR)
				return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument '%s' must be tuple of Tensors, not %s at item %d",
				               sig->name, p->name, arg_kind_name(&items[i]), i);
		}
		a = ti_arg_list(items, a.as.list.count);
		break;
	}
	case TI_P_INT:
		if (coerce_int(ctx, &a, &a))
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_INT_LIST_OR_STR:
		if (a.kind == TI_ARG_STR) /* "same", "valid": the rule checks which */
			break;
		/* fall through */
	case TI_P_INT_LIST:
		if ((st = coerce_int_list(ctx, sig, p, &a, &a, err)))
			return st;
		break;
	case TI_P_INT_OR_INT_LIST:
		if (a.kind == TI_ARG_LIST) {
			ti_param q = *p;
			q.list_size = 0;
			if ((st = coerce_int_list(ctx, sig, &q, &a, &a, err)))
				return st;
		} else if (coerce_int(ctx, &a, &a)) {
			return wrong_type(sig, p, &a, err);
		}
		break;
	case TI_P_FLOAT:
		if (a.kind == TI_ARG_INT && ti_dim_is_int(a.as.dim))
			a = ti_arg_float((double)a.as.dim.value);
		else if (a.kind != TI_ARG_FLOAT)
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_FLOAT_LIST: {
		int n = a.kind == TI_ARG_LIST ? a.as.list.count : (p->list_size ? p->list_size : 1);
		ti_arg *items = ti_arena_calloc(ctx->arena, (size_t)n + 1, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory binding '%s'", p->name);
		for (int i = 0; i < n; i++) {
			const ti_arg *src = a.kind == TI_ARG_LIST ? &a.as.list.items[i] : &a;
			if (src->kind == TI_ARG_INT && ti_dim_is_int(src->as.dim))
				items[i] = ti_arg_float((double)src->as.dim.value);
			else if (src->kind == TI_ARG_FLOAT)
				items[i] = *src;
			else
				return wrong_type(sig, p, src, err);
		}
		a = ti_arg_list(items, n);
		break;
	}
	case TI_P_BOOL:
		if (a.kind != TI_ARG_BOOL)
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_STR:
		if (a.kind != TI_ARG_STR)
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_DTYPE:
		if (a.kind == TI_ARG_STR) {
			const char *name = a.as.str;
			if (!strncmp(name, "torch.", 6))
				name += 6;
			ti_dtype dt = ti_dtype_from_torch_name(name);
			if (!dt)
				return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument '%s': unknown dtype '%s'", sig->name, p->name, a.as.str);
			a = ti_arg_dtype(dt);
		} else if (a.kind != TI_ARG_DTYPE) {
			return wrong_type(sig, p, &a, err);
		}
		break;
	case TI_P_SCALAR:
		if (a.kind == TI_ARG_STR) /* arange("T"): a symbolic size, a graph int, a formula */
			coerce_int(ctx, &a, &a);
		if (a.kind != TI_ARG_INT && a.kind != TI_ARG_FLOAT && a.kind != TI_ARG_BOOL)
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_TENSOR_OR_SCALAR:
		if (a.kind != TI_ARG_TENSOR && a.kind != TI_ARG_INT && a.kind != TI_ARG_FLOAT && a.kind != TI_ARG_BOOL)
			return wrong_type(sig, p, &a, err);
		break;
	case TI_P_ANY: /* bound above */
		break;
	}
	*out = a;
	return TI_OK;
}

static int param_index(const ti_signature *sig, const char *name)
{
	for (int i = 0; i < sig->count; i++)
		if (!strcmp(sig->params[i].name, name))
			return i;
	return -1;
}

ti_status ti_bind(ti_shape_ctx *ctx, const ti_signature *sig, const ti_arg *args, int nargs,
                  ti_bound *out, ti_error *err)
{
	memset(out, 0, sizeof(*out));
	out->sig = sig;
	const ti_arg *raw[TI_OP_MAX_PARAMS] = {0};
	ti_arg varargs_list = {0};
	int positional = 0, slot = 0;
	for (int i = 0; i < nargs; i++) {
		if (args[i].name)
			continue;
		if (i != positional)
			return TI_FAIL(err, TI_E_CORRUPT, "%s(): positional argument follows keyword argument", sig->name);
		positional++;
	}
	for (int i = 0; i < positional; i++, slot++) {
		if (slot >= sig->count || sig->params[slot].keyword_only) {
			int takes = 0;
			while (takes < sig->count && !sig->params[takes].keyword_only)
				takes++;
			return TI_FAIL(err, TI_E_CORRUPT, "%s() takes %d positional argument%s but %d were given",
			               sig->name, takes, takes == 1 ? "" : "s", positional);
		}
		const ti_param *p = &sig->params[slot];
		if (p->varargs && args[i].kind != TI_ARG_LIST &&
		    (positional - i > 1 || p->type == TI_P_TENSOR_LIST)) {
			/* x.view(2, 3, 4): the rest of the positional arguments are the list;
			 * einsum("ii", x): a single tensor is a list of one */
			int n = positional - i;
			ti_arg *items = ti_arena_calloc(ctx->arena, (size_t)n, sizeof(*items));
			if (!items)
				return TI_FAIL(err, TI_E_NOMEM, "out of memory binding '%s'", p->name);
			memcpy(items, args + i, (size_t)n * sizeof(*items));
			varargs_list = ti_arg_list(items, n);
			raw[slot] = &varargs_list;
			slot++;
			break;
		}
		raw[slot] = &args[i];
	}
	for (int i = positional; i < nargs; i++) {
		int k = param_index(sig, args[i].name);
		if (k < 0) {
			ti_closest c;
			ti_closest_init(&c, args[i].name);
			for (int j = 0; j < sig->count; j++)
				ti_closest_offer(&c, sig->params[j].name, strlen(sig->params[j].name));
			if (c.best)
				return TI_FAIL(err, TI_E_CORRUPT, "%s() got an unexpected keyword argument '%s' (did you mean '%s'?)",
				               sig->name, args[i].name, c.best);
			return TI_FAIL(err, TI_E_CORRUPT, "%s() got an unexpected keyword argument '%s'", sig->name, args[i].name);
		}
		if (raw[k])
			return TI_FAIL(err, TI_E_CORRUPT, "%s() got multiple values for argument '%s'", sig->name, args[i].name);
		raw[k] = &args[i];
	}
	for (int k = 0; k < sig->count; k++) {
		const ti_param *p = &sig->params[k];
		if (!raw[k]) {
			if (!p->has_default) {
				if (p->optional) {
					out->args[k].kind = TI_ARG_ABSENT;
					continue;
				}
				return TI_FAIL(err, TI_E_CORRUPT, "%s() missing required argument '%s'", sig->name, p->name);
			}
			raw[k] = &p->default_value;
		} else {
			out->given[k] = true;
		}
		ti_status st = coerce(ctx, sig, p, raw[k], &out->args[k], err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* ---- accessors ---- */

const ti_arg *ti_bound_get(const ti_bound *b, const char *name)
{
	static const ti_arg absent = {TI_ARG_ABSENT, {.tensor = NULL}, NULL};
	int k = b->sig ? param_index(b->sig, name) : -1;
	return k < 0 ? &absent : &b->args[k];
}

bool ti_bound_is_none(const ti_bound *b, const char *name)
{
	ti_arg_kind k = ti_bound_get(b, name)->kind;
	return k == TI_ARG_NONE || k == TI_ARG_ABSENT;
}

bool ti_bound_given(const ti_bound *b, const char *name)
{
	int k = b->sig ? param_index(b->sig, name) : -1;
	return k >= 0 && b->given[k];
}

const ti_meta_tensor *ti_bound_tensor(const ti_bound *b, const char *name)
{
	const ti_arg *a = ti_bound_get(b, name);
	return a->kind == TI_ARG_TENSOR ? a->as.tensor : NULL;
}

ti_dim ti_bound_dim(const ti_bound *b, const char *name)
{
	const ti_arg *a = ti_bound_get(b, name);
	return a->kind == TI_ARG_INT ? a->as.dim : ti_dim_int(0);
}

const ti_arg *ti_bound_list(const ti_bound *b, const char *name, int *count)
{
	const ti_arg *a = ti_bound_get(b, name);
	if (a->kind != TI_ARG_LIST) {
		*count = 0;
		return NULL;
	}
	*count = a->as.list.count;
	return a->as.list.items;
}

double ti_bound_float(const ti_bound *b, const char *name)
{
	const ti_arg *a = ti_bound_get(b, name);
	if (a->kind == TI_ARG_FLOAT)
		return a->as.real;
	if (a->kind == TI_ARG_INT)
		return (double)a->as.dim.value;
	return 0;
}

bool ti_bound_bool(const ti_bound *b, const char *name)
{
	const ti_arg *a = ti_bound_get(b, name);
	return a->kind == TI_ARG_BOOL && a->as.boolean;
}

const char *ti_bound_str(const ti_bound *b, const char *name)
{
	const ti_arg *a = ti_bound_get(b, name);
	return a->kind == TI_ARG_STR ? a->as.str : NULL;
}

ti_dtype ti_bound_dtype(const ti_bound *b, const char *name)
{
	const ti_arg *a = ti_bound_get(b, name);
	return a->kind == TI_ARG_DTYPE ? a->as.dtype : TI_DT_INVALID;
}
