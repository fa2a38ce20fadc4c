/*
 * module.c - leaf modules: construction, parameters and buffers, calling
 * (see nn/module.h).
 */
#include <string.h>

#include "nn/module.h"

static ti_status add_tensor(ti_module *m, const char *name, ti_dtype dtype, int ndim,
                            const int64_t *shape, bool buffer, bool persistent, ti_error *err)
{
	if (ndim < 0 || ndim > TI_META_MAX_DIMS)
		return TI_FAIL(err, TI_E_INVALID, "bad rank %d for '%s'", ndim, name);
	for (int i = 0; i < ndim; i++)
		if (shape[i] < 0)
			return TI_FAIL(err, TI_E_SHAPE,
			               "Trying to create tensor with negative dimension %lld: %s of %s '%s'",
			               (long long)shape[i], name, m->type, m->path);
	for (int i = 0; i < m->tensor_count; i++)
		if (!strcmp(m->tensors[i].name, name))
			return TI_FAIL(err, TI_E_INVALID, "attribute '%s' already exists", name);
	if (m->tensor_count == m->tensor_capacity) {
		int cap = m->tensor_capacity ? 2 * m->tensor_capacity : 4;
		ti_module_tensor *bigger = ti_arena_calloc(m->ctx->arena, (size_t)cap, sizeof(*bigger));
		if (!bigger)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the parameters of '%s'", m->path);
		if (m->tensor_count)
			memcpy(bigger, m->tensors, (size_t)m->tensor_count * sizeof(*bigger));
		m->tensors = bigger;
		m->tensor_capacity = cap;
	}
	ti_dim dims[TI_META_MAX_DIMS];
	for (int i = 0; i < ndim; i++)
		dims[i] = ti_dim_int(shape[i]);
	ti_meta_tensor *t = ti_meta_new(m->ctx, dtype, ndim, dims);
	if (!t)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for '%s'", name);
	t->requires_grad = !buffer;
	ti_module_tensor *slot = &m->tensors[m->tensor_count++];
	memset(slot, 0, sizeof(*slot));
	slot->name = name;
	slot->tensor = t;
	slot->buffer = buffer;
	slot->persistent = buffer ? persistent : true;
	slot->trainable = !buffer;
	return TI_OK;
}

ti_status ti_module_add_param(ti_module *m, const char *name, ti_dtype dtype, int ndim,
                              const int64_t *shape, ti_error *err)
{
	return add_tensor(m, name, dtype, ndim, shape, false, true, err);
}

ti_status ti_module_add_buffer(ti_module *m, const char *name, ti_dtype dtype, int ndim,
                               const int64_t *shape, bool persistent, ti_error *err)
{
	return add_tensor(m, name, dtype, ndim, shape, true, persistent, err);
}

ti_dtype ti_module_dtype(const ti_module *m)
{
	ti_dtype dt = ti_bound_dtype(&m->ctor, "dtype");
	if (m->ctx->cast_dtype && !dt)
		return m->ctx->cast_dtype; /* model.to(DT); a dtype the description names is the one the model holds */
	return dt ? dt : m->ctx->default_dtype;
}

const ti_meta_tensor *ti_module_tensor_get(const ti_module *m, const char *name)
{
	for (int i = 0; i < m->tensor_count; i++)
		if (!strcmp(m->tensors[i].name, name))
			return m->tensors[i].tensor;
	return NULL;
}

ti_status ti_module_new_leaf(ti_shape_ctx *ctx, const char *path, const char *type,
                             const ti_arg *args, int nargs, ti_module **out, ti_error *err)
{
	ti_module_rule *rule = (ti_module_rule *)ti_module_find(type);
	if (!rule)
		return TI_FAIL(err, TI_E_CORRUPT, "unknown module type '%s'", type);
	ti_status st = ti_signature_cached(rule->signature, &rule->parsed_ctor, err);
	if (!st)
		st = ti_signature_cached(rule->forward, &rule->parsed_forward, err);
	if (st)
		return st;
	ti_module *m = ti_arena_alloc(ctx->arena, sizeof(*m));
	if (!m)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for module '%s'", path);
	m->ctx = ctx;
	m->path = path;
	m->type = rule->parsed_ctor->name;
	m->kind = TI_MODULE_LEAF;
	m->rule = rule;
	if ((st = ti_bind(ctx, rule->parsed_ctor, args, nargs, &m->ctor, err)))
		return st;
	/* Constructor sizes are numbers: a symbolic size makes no parameter. */
	for (int i = 0; i < rule->parsed_ctor->count; i++) {
		const ti_arg *a = &m->ctor.args[i];
		int n = a->kind == TI_ARG_LIST ? a->as.list.count : 1;
		const ti_arg *items = a->kind == TI_ARG_LIST ? a->as.list.items : a;
		for (int j = 0; j < n; j++)
			if (items[j].kind == TI_ARG_INT && !ti_dim_is_int(items[j].as.dim))
				return TI_FAIL(err, TI_E_CORRUPT, "%s(): argument '%s' must be int, not str",
				               m->type, rule->parsed_ctor->params[i].name);
	}
	if (rule->init && (st = rule->init(m, err)))
		return st;
	*out = m;
	return TI_OK;
}

ti_status ti_module_call(ti_shape_ctx *ctx, const ti_module *m, const ti_arg *args, int nargs,
                         ti_op_call *result, ti_error *err)
{
	memset(result, 0, sizeof(*result));
	result->ctx = ctx;
	if (m->kind != TI_MODULE_LEAF)
		return TI_FAIL(err, TI_E_INVALID, "'%s' is not a leaf module", m->path);
	ti_status st = ti_bind(ctx, m->rule->parsed_forward, args, nargs, &result->in, err);
	if (st)
		return st;
	if (ctx->observer)
		ctx->observer->enter(ctx->observer->user, m->type, m);
	if ((st = m->rule->run(result, m, err)))
		return st;
	if (m->rule->counting == TI_COUNT_FREE)
		result->counted = true;
	if (m->rule->counting == TI_COUNT_NONE && !result->counted)
		result->uncounted_part = true;
	if ((st = ti_sym_ok(ctx->sym, err)))
		return st;
	if (ctx->observer)
		ctx->observer->leave(ctx->observer->user, result);
	return TI_OK;
}
