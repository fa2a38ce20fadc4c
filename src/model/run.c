/*
 * run.c - shape propagation through a description's graph (see
 * tinspect/model.h): steps call modules or run operators; composites and
 * containers nest; every call becomes a report row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "util/strmap.h"

typedef struct runner {
	ti_model *m;
	ti_model_step *rows;
	size_t count, capacity;
	/* the innermost call that raised, for the message */
	const char *failed_target, *failed_type;
	char failed_shapes[256];
} runner;

/* One graph's names: a strmap of name -> ti_arg (arena). */
typedef struct scope {
	ti_model *m;
	ti_strmap names;
} scope;

static ti_status resolve(void *user, const char *name, ti_arg *out, ti_error *err)
{
	scope *sc = user;
	const ti_arg *v = ti_strmap_get(&sc->names, name);
	if (!v)
		return TI_FAIL(err, TI_E_CORRUPT, "undefined tensor '%s'", name);
	*out = *v;
	return TI_OK;
}

/* "lifetime": "last_use": the values this step was the last to read die now (their names hold None). */
static void let_go(scope *sc, const model_step *s)
{
	const ti_run_observer *o = sc->m->ctx.observer;
	for (int i = 0; i < s->release_count; i++) {
		ti_arg *slot = ti_strmap_get(&sc->names, s->release[i]);
		if (!slot)
			continue;
		if (o)
			o->release(o->user, slot);
		*slot = ti_arg_none();
	}
}

static ti_status define(scope *sc, const char *name, ti_arg value, ti_error *err)
{
	const ti_run_observer *o = sc->m->ctx.observer;
	const ti_arg *old = o ? ti_strmap_get(&sc->names, name) : NULL;
	if (old)
		o->release(o->user, old);
	ti_arg *slot = ti_arena_alloc(&sc->m->arena, sizeof(*slot));
	if (!slot || ti_strmap_put(&sc->names, name, slot))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for tensor names");
	*slot = value;
	slot->name = NULL;
	return TI_OK;
}

int64_t model_module_params(const ti_module *mod)
{
	int64_t n = 0;
	for (int i = 0; i < mod->tensor_count; i++) {
		const ti_module_tensor *t = &mod->tensors[i];
		if (t->buffer || t->tied_to)
			continue;
		int64_t e = 1;
		for (int k = 0; k < t->tensor->ndim; k++)
			e *= t->tensor->shape[k].value;
		n += e;
	}
	for (int i = 0; i < mod->child_count; i++)
		n += model_module_params(mod->children[i]);
	return n;
}

static ti_status add_row(runner *r, int index, int depth, int parent, bool is_call, const char *target,
                         const char *type, int *row, ti_error *err)
{
	if (r->count == TI_MODEL_MAX_STEPS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %u steps to report", TI_MODEL_MAX_STEPS);
	/* rows are named by index, never held by address: the array may move as it grows */
	if (ti_arena_array_grow(&r->m->arena, (void **)&r->rows, &r->capacity, sizeof(*r->rows), r->count + 1))
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the report");
	ti_model_step *s = &r->rows[r->count];
	memset(s, 0, sizeof(*s));
	s->index = index;
	s->depth = depth;
	s->parent = parent;
	s->kind = is_call ? TI_STEP_CALL : TI_STEP_OP;
	s->is_call = is_call;
	s->target = target;
	s->type = type;
	s->macs = s->flops = s->flops_torch = s->flops_fvcore = ti_dim_int(0);
	*row = (int)r->count++;
	return TI_OK;
}

/* Counts how many tensors a value holds (lists flattened). */
static int tensor_count(const ti_arg *a)
{
	if (a->kind == TI_ARG_TENSOR)
		return 1;
	int n = 0;
	if (a->kind == TI_ARG_LIST)
		for (int i = 0; i < a->as.list.count; i++)
			n += tensor_count(&a->as.list.items[i]);
	return n;
}

static void put_tensors(runner *r, const ti_arg *a, const char *name, ti_model_tensor *out, int *n)
{
	if (a->kind == TI_ARG_TENSOR) {
		const ti_meta_tensor *t = a->as.tensor;
		out[*n] = (ti_model_tensor){name, t->dtype, t->ndim, t->shape, t->stride, t};
		(*n)++;
	} else if (a->kind == TI_ARG_LIST) {
		for (int i = 0; i < a->as.list.count; i++)
			put_tensors(r, &a->as.list.items[i],
			            ti_arena_printf(&r->m->arena, "%s.%d", name ? name : "", i), out, n);
	}
}

/* The row's outputs: each value under its out name ("hc.0", "hc.1" for a tuple). */
static ti_status fill_row(runner *r, int row, const ti_arg *values, int count, const char *const *names,
                          int name_count, ti_error *err)
{
	int total = 0;
	for (int i = 0; i < count; i++)
		total += tensor_count(&values[i]);
	ti_model_tensor *out = ti_arena_calloc(&r->m->arena, (size_t)total + 1, sizeof(*out));
	if (!out)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the report");
	int n = 0;
	for (int i = 0; i < count; i++)
		put_tensors(r, &values[i], i < name_count ? names[i] : NULL, out, &n);
	r->rows[row].outputs = out;
	r->rows[row].output_count = n;
	return TI_OK;
}

/* Results of a call: like ti_op_call's, for modules of every kind. */
typedef struct result {
	ti_arg outputs[TI_OP_MAX_OUTPUTS];
	int output_count;
	ti_dim macs, flops, flops_torch, flops_fvcore;
	bool counted, uncounted_part;
} result;

static void add_counts(ti_model *m, result *into, const result *from)
{
	bool counted = from->counted, uncounted = from->uncounted_part;
	into->macs = ti_dim_add(&m->sym, into->macs, from->macs);
	into->flops = ti_dim_add(&m->sym, into->flops, from->flops);
	into->flops_torch = ti_dim_add(&m->sym, into->flops_torch, from->flops_torch);
	into->flops_fvcore = ti_dim_add(&m->sym, into->flops_fvcore, from->flops_fvcore);
	into->counted |= counted;
	into->uncounted_part |= uncounted || !counted;
}

static void take_call(ti_model *m, result *res, const ti_op_call *call)
{
	memcpy(res->outputs, call->outputs, sizeof(res->outputs));
	res->output_count = call->output_count;
	res->macs = res->flops = res->flops_torch = res->flops_fvcore = ti_dim_int(0);
	res->counted = res->uncounted_part = false;
	result from = {.macs = call->macs, .flops = call->flops, .flops_torch = call->flops_torch,
	               .flops_fvcore = call->flops_fvcore, .counted = call->counted, .uncounted_part = call->uncounted_part};
	add_counts(m, res, &from);
}

static ti_status call_module(runner *r, scope *sc, const ti_module *mod, const ti_arg *args, int nargs,
                             int depth, int row, result *res, ti_error *err);

/* Remembers the innermost call that raised and its inputs' shapes, while its names still resolve. */
static void note_failure(runner *r, const char *target, const char *type, const ti_arg *args, int nargs)
{
	ti_model *m = r->m;
	if (r->failed_target)
		return;
	r->failed_target = target;
	r->failed_type = type;
	size_t n = 0;
	for (int i = 0; i < nargs && n < sizeof(r->failed_shapes) - 1; i++) {
		ti_arg a = args[i];
		ti_error ignored;
		if (a.kind == TI_ARG_STR && (!m->ctx.resolve || m->ctx.resolve(m->ctx.resolve_user, a.as.str, &a, &ignored)))
			continue;
		if (a.kind != TI_ARG_TENSOR)
			continue;
		const char *shape = ti_meta_shape_str(&m->ctx, a.as.tensor);
		n += (size_t)snprintf(r->failed_shapes + n, sizeof(r->failed_shapes) - n, "%s%s", n ? ", " : "",
		                      shape ? shape : "?");
	}
}

static ti_status run_graph(runner *r, const ti_module *mod, const ti_arg *args, int nargs, int depth,
                           int parent, result *res, ti_error *err);

/* The module at the first `n` bytes of a dotted path below owner ("" owner itself), or NULL. */
static const ti_module *find_module_n(const ti_module *owner, const char *path, size_t n)
{
	const ti_module *m = owner;
	const char *s = path, *end_all = path + n;
	while (m && s < end_all) {
		const char *dot = memchr(s, '.', (size_t)(end_all - s));
		size_t len = dot ? (size_t)(dot - s) : (size_t)(end_all - s);
		const ti_module *next = NULL;
		/* numbered children (Sequential, ModuleList) sit at their number: no scan */
		char *end;
		long k = strtol(s, &end, 10);
		if (end == s + len && k >= 0 && k < m->child_count && !strncmp(m->child_names[k], s, len) &&
		    m->child_names[k][len] == '\0')
			next = m->children[k];
		for (int i = 0; i < m->child_count && !next; i++)
			if (strlen(m->child_names[i]) == len && !strncmp(m->child_names[i], s, len))
				next = m->children[i];
		m = next;
		s = dot ? dot + 1 : s + len;
	}
	return m;
}

static const ti_module *find_module(const ti_module *owner, const char *path)
{
	return find_module_n(owner, path, strlen(path));
}

/*
 * The containers a graph's steps run inside. An exported description calls
 * leaves by their dotted paths ("layer1.0.conv1") and has no call of
 * layer1 or layer1.0; for whoever watches the run (the memory simulation's
 * --checkpoint, the per-module rows) those containers are opened and closed
 * around their steps, as a hand-written description's own calls would. A
 * step's scope is its "scope" when it has one, else the parent of the module
 * it calls; an operator without one stays in the scope open before it.
 */
#define SCOPE_DEPTH 32

typedef struct open_scopes {
	const ti_module *mods[SCOPE_DEPTH];
	int count;
} open_scopes;

static ti_status enter_scope(ti_model *m, const ti_module *owner, open_scopes *open, const model_step *s,
                             ti_error *err)
{
	const char *path = s->scope;
	size_t n;
	if (path)
		n = strlen(path);
	else if ((path = s->kind == TI_STEP_CALL ? s->target : s->kind == TI_STEP_OPAQUE ? s->module : NULL)) {
		const char *dot = strrchr(path, '.');
		n = dot ? (size_t)(dot - path) : 0;
	} else
		return TI_OK; /* an operator with no scope said: where the step before it ran */
	const ti_module *chain[SCOPE_DEPTH];
	int depth = 0;
	for (size_t i = 0; n && i <= n && depth < SCOPE_DEPTH; i++) {
		if (i < n && path[i] != '.')
			continue;
		const ti_module *mod = find_module_n(owner, path, i);
		if (!mod) {
			TI_FAIL(err, TI_E_CORRUPT, "no module '%.*s'", (int)i, path);
			ti_error_at(err, ti_arena_printf(&m->arena, "%s.%s", s->jpath, s->scope ? "scope" : "call"), -1);
			return TI_E_CORRUPT;
		}
		/* a ModuleList or ModuleDict has no forward: its modules' steps run in its parent's */
		if (mod->kind != TI_MODULE_LEAF && mod->kind != TI_MODULE_LIST && mod->kind != TI_MODULE_DICT)
			chain[depth++] = mod;
	}
	const ti_run_observer *o = m->ctx.observer;
	int same = 0;
	while (same < open->count && same < depth && open->mods[same] == chain[same])
		same++;
	for (; open->count > same; open->count--)
		if (o)
			o->leave(o->user, NULL);
	for (; open->count < depth; open->count++) {
		open->mods[open->count] = chain[open->count];
		if (o)
			o->enter(o->user, chain[open->count]->type, chain[open->count]);
	}
	return TI_OK;
}

static void leave_scopes(ti_model *m, open_scopes *open)
{
	const ti_run_observer *o = m->ctx.observer;
	for (; open->count > 0; open->count--)
		if (o)
			o->leave(o->user, NULL);
}

/* Fills the row of a finished call: outputs under names, counts. */
static ti_status finish_row(runner *r, int row, const result *res, const char *const *names, int name_count,
                            ti_error *err)
{
	ti_model_step *s = &r->rows[row];
	s->macs = res->macs;
	s->flops = res->flops;
	s->flops_torch = res->flops_torch;
	s->flops_fvcore = res->flops_fvcore;
	s->counted = res->counted && !res->uncounted_part;
	return fill_row(r, row, res->outputs, res->output_count, names, name_count, err);
}

static ti_status call_children(runner *r, scope *sc, const ti_module *mod, const ti_arg *args, int nargs,
                               int depth, int row, result *res, ti_error *err)
{
	/* Sequential (and a called ModuleList): each child takes the previous outputs */
	ti_arg current[TI_OP_MAX_OUTPUTS];
	int count = nargs < TI_OP_MAX_OUTPUTS ? nargs : TI_OP_MAX_OUTPUTS;
	memcpy(current, args, (size_t)count * sizeof(*current));
	res->counted = true;
	for (int i = 0; i < mod->child_count; i++) {
		const ti_module *child = mod->children[i];
		int child_row;
		ti_status st = add_row(r, i, depth + 1, row, true, child->path, child->type, &child_row, err);
		if (st)
			return st;
		result sub;
		bool was_dependent = r->m->ctx.mode_dependent;
		r->m->ctx.mode_dependent = false;
		if ((st = call_module(r, sc, child, current, count, depth + 1, child_row, &sub, err)))
			return st;
		if ((st = finish_row(r, child_row, &sub, NULL, 0, err)))
			return st;
		r->rows[child_row].mode_dependent = r->m->ctx.mode_dependent;
		r->m->ctx.mode_dependent |= was_dependent;
		add_counts(r->m, res, &sub);
		count = sub.output_count;
		memcpy(current, sub.outputs, (size_t)count * sizeof(*current));
		for (int k = 0; k < count; k++)
			current[k].name = NULL;
	}
	memcpy(res->outputs, current, (size_t)count * sizeof(*current));
	res->output_count = count;
	return TI_OK;
}

static ti_status call_module(runner *r, scope *sc, const ti_module *mod, const ti_arg *args, int nargs,
                             int depth, int row, result *res, ti_error *err)
{
	memset(res, 0, sizeof(*res));
	res->macs = res->flops = res->flops_torch = res->flops_fvcore = ti_dim_int(0);
	ti_model *m = r->m;
	r->rows[row].params = model_module_params(mod);
	switch (mod->kind) {
	case TI_MODULE_LEAF: {
		ti_op_call call;
		ti_status st = ti_module_call(&m->ctx, mod, args, nargs, &call, err);
		if (st) {
			note_failure(r, mod->path, mod->type, args, nargs);
			return st;
		}
		take_call(m, res, &call);
		return TI_OK;
	}
	case TI_MODULE_SEQUENTIAL:
	case TI_MODULE_LIST:
	case TI_MODULE_COMPOSITE: {
		const ti_run_observer *o = m->ctx.observer;
		if (o)
			o->enter(o->user, mod->type, mod);
		ti_status st = mod->kind == TI_MODULE_COMPOSITE ? run_graph(r, mod, args, nargs, depth + 1, row, res, err)
		                                                 : call_children(r, sc, mod, args, nargs, depth, row, res, err);
		if (!st && o)
			o->leave(o->user, NULL);
		return st;
	}
	case TI_MODULE_DICT:
	case TI_MODULE_PLAIN:
		break;
	}
	if (mod->kind == TI_MODULE_PLAIN)
		return TI_FAIL(err, TI_E_CORRUPT, "'%s' (%s) has no forward in the description: call its modules", mod->path,
		               mod->type);
	return TI_FAIL(err, TI_E_CORRUPT, "'%s' is a ModuleDict, which cannot be called: call one of its modules", mod->path);
}

/* Binds a step's outputs to its out names, as Python unpacks a returned tuple. */
static ti_status assign_outputs(scope *sc, const model_step *s, result *res, ti_error *err)
{
	if (!s->out_count)
		return TI_OK;
	const ti_arg *values = res->outputs;
	int count = res->output_count;
	if (s->out_count > 1 && count == 1 && values[0].kind == TI_ARG_LIST) {
		values = values[0].as.list.items;
		count = values == res->outputs ? count : res->outputs[0].as.list.count;
	}
	if (s->out_count == 1 && count != 1) {
		ti_arg *items = ti_arena_calloc(&sc->m->arena, (size_t)count + 1, sizeof(*items));
		if (!items)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for tensor names");
		memcpy(items, values, (size_t)count * sizeof(*items));
		return define(sc, s->out_names[0], ti_arg_list(items, count), err);
	}
	/* Python's unpacking errors: how many values a call returns can depend on shapes (chunk) */
	if (s->out_count < count)
		return TI_FAIL(err, TI_E_SHAPE, "too many values to unpack (expected %d)", s->out_count);
	if (s->out_count > count)
		return TI_FAIL(err, TI_E_SHAPE, "not enough values to unpack (expected %d, got %d)", s->out_count, count);
	for (int i = 0; i < count; i++) {
		ti_status st = define(sc, s->out_names[i], values[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* The JSON path of the argument a binding error names ("undefined tensor 'q'"), else the step's. */
static const char *argument_path(ti_model *m, const model_step *s, const char *message)
{
	const char *q = strchr(message, '\'');
	const char *e = q ? strchr(q + 1, '\'') : NULL;
	if (!q || !e)
		return s->jpath;
	size_t len = (size_t)(e - q - 1);
	for (int i = 0; i < s->arg_count; i++) {
		const ti_arg *a = &s->args[i];
		if (a->name && strlen(a->name) == len && !strncmp(a->name, q + 1, len))
			return ti_arena_printf(&m->arena, "%s.%s", s->jpath, a->name);
		if (a->kind == TI_ARG_STR && strlen(a->as.str) == len && !strncmp(a->as.str, q + 1, len))
			return a->name ? ti_arena_printf(&m->arena, "%s.%s", s->jpath, a->name)
			               : ti_arena_printf(&m->arena, "%s.args.%d", s->jpath, i);
	}
	return s->jpath;
}

/* A parameter or buffer by dotted path from owner ("encoder.pos_embedding"). */
static const ti_module_tensor *find_attr(const ti_module *owner, const char *path)
{
	const char *dot = strrchr(path, '.');
	const ti_module *mod = owner;
	if (dot) {
		char prefix[512];
		size_t len = (size_t)(dot - path);
		if (len >= sizeof(prefix))
			return NULL;
		memcpy(prefix, path, len);
		prefix[len] = '\0';
		mod = find_module(owner, prefix);
	}
	const char *name = dot ? dot + 1 : path;
	for (int i = 0; mod && i < mod->tensor_count; i++)
		if (!strcmp(mod->tensors[i].name, name))
			return &mod->tensors[i];
	return NULL;
}

/* An "attr" step: the tensor itself, as fx's get_attr hands it on (no new memory). */
static ti_status run_attr(runner *r, const ti_module *owner, const model_step *s, result *res, ti_error *err)
{
	const ti_module_tensor *t = find_attr(owner, s->target);
	if (!t) {
		TI_FAIL(err, TI_E_CORRUPT, "no parameter or buffer '%s'", s->target);
		ti_error_at(err, ti_arena_printf(&r->m->arena, "%s.attr", s->jpath), -1);
		return TI_E_CORRUPT;
	}
	res->outputs[0] = ti_arg_tensor(t->tensor);
	res->output_count = 1;
	res->counted = true;
	return TI_OK;
}

/*
 * An "opaque" step: a call tinspect has no rule for, its outputs exactly as
 * the exporter recorded them from PyTorch. Its arguments are what the call
 * was given, for the reader and for values' lifetimes (any string may be a
 * constant, so none is required to be a name); nothing is counted, and the
 * memory simulation sees an operator without a rule (a lower bound).
 */
static ti_status run_opaque(runner *r, const model_step *s, result *res, ti_error *err)
{
	ti_model *m = r->m;
	ti_op_call call;
	memset(&call, 0, sizeof(call));
	call.ctx = &m->ctx;
	call.macs = call.flops = call.flops_torch = call.flops_fvcore = ti_dim_int(0);
	const ti_run_observer *o = m->ctx.observer;
	if (o)
		o->enter(o->user, s->target, NULL);
	for (int i = 0; i < s->recorded_count; i++) {
		const ti_model_tensor *t = &s->recorded[i];
		ti_meta_tensor *out = ti_meta_new(&m->ctx, t->dtype, t->ndim, t->shape);
		if (!out)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for '%s'", s->target);
		call.outputs[call.output_count++] = ti_arg_tensor(out);
	}
	if (o)
		o->leave(o->user, &call);
	take_call(m, res, &call);
	return TI_OK;
}

static ti_status run_step(runner *r, scope *sc, const ti_module *owner, const model_step *s, int index,
                          int depth, int parent, result *res, ti_error *err)
{
	ti_model *m = r->m;
	int row;
	const ti_module *mod = NULL;
	const char *path = s->kind == TI_STEP_CALL ? s->target : s->kind == TI_STEP_OPAQUE ? s->module : NULL;
	if (path && !(mod = find_module(owner, path))) {
		TI_FAIL(err, TI_E_CORRUPT, "no module '%s'", path);
		ti_error_at(err, ti_arena_printf(&m->arena, "%s.%s", s->jpath, s->kind == TI_STEP_CALL ? "call" : "module"), -1);
		return TI_E_CORRUPT;
	}
	ti_status st = add_row(r, index, depth, parent, s->is_call, mod ? mod->path : s->target, mod ? mod->type : NULL,
	                       &row, err);
	if (st)
		return st;
	r->rows[row].kind = s->kind;
	r->rows[row].out_names = s->out_names;
	r->rows[row].out_count = s->out_count;
	bool was_dependent = m->ctx.mode_dependent;
	m->ctx.mode_dependent = s->depends_on_mode;
	if (s->kind == TI_STEP_ATTR) {
		memset(res, 0, sizeof(*res));
		st = run_attr(r, owner, s, res, err);
	} else if (s->kind == TI_STEP_OPAQUE) {
		memset(res, 0, sizeof(*res));
		if (mod)
			r->rows[row].params = model_module_params(mod);
		r->rows[row].opaque = s->target;
		st = run_opaque(r, s, res, err);
	} else if (mod) {
		st = call_module(r, sc, mod, s->args, s->arg_count, depth, row, res, err);
	} else {
		ti_op_call call;
		st = ti_op_invoke(&m->ctx, s->target, s->args, s->arg_count, &call, err);
		if (st)
			note_failure(r, s->target, NULL, s->args, s->arg_count);
		if (!st)
			take_call(m, res, &call);
	}
	if (!st && (st = ti_sym_ok(&m->sym, err)) == TI_OK && (st = assign_outputs(sc, s, res, err)))
		note_failure(r, mod ? mod->path : s->target, mod ? mod->type : NULL, s->args, s->arg_count);
	if (!st)
		st = finish_row(r, row, res, s->out_names, s->out_count, err);
	r->rows[row].mode_dependent = m->ctx.mode_dependent;
	m->ctx.mode_dependent |= was_dependent;
	if (st && st != TI_E_SHAPE && !err->member[0])
		ti_error_at(err, argument_path(m, s, err->message), -1);
	return st;
}

static ti_status run_graph(runner *r, const ti_module *mod, const ti_arg *args, int nargs, int depth,
                           int parent, result *res, ti_error *err)
{
	ti_model *m = r->m;
	const model_def *def = mod->composite;
	scope sc = {m, {0}};
	ti_strmap_init(&sc.names);
	ti_status (*saved_resolve)(void *, const char *, ti_arg *, ti_error *) = m->ctx.resolve;
	void *saved_user = m->ctx.resolve_user;
	ti_status st = TI_OK;
	memset(res, 0, sizeof(*res));
	res->macs = res->flops = res->flops_torch = res->flops_fvcore = ti_dim_int(0);
	res->counted = true;

	/* forward's arguments: positional, then by name, each given once */
	bool given[TI_OP_MAX_PARAMS] = {0};
	if (def->input_count > TI_OP_MAX_PARAMS) {
		st = TI_FAIL(err, TI_E_CORRUPT, "'%s' has more than %d inputs", mod->type, TI_OP_MAX_PARAMS);
		goto done;
	}
	for (int i = 0; i < nargs && !st; i++) {
		int k = -1;
		if (!args[i].name) {
			k = i < def->input_count ? i : -1;
			if (k < 0)
				st = TI_FAIL(err, TI_E_CORRUPT, "%s.forward() takes %d arguments but %d were given",
				             mod->type, def->input_count, nargs);
		} else {
			for (int j = 0; j < def->input_count; j++)
				if (!strcmp(def->inputs[j], args[i].name))
					k = j;
			if (k < 0)
				st = TI_FAIL(err, TI_E_CORRUPT, "%s.forward() got an unexpected keyword argument '%s'",
				             mod->type, args[i].name);
		}
		if (st)
			break;
		ti_arg value = args[i];
		if (value.kind == TI_ARG_STR && saved_resolve) /* a name in the caller's graph */
			st = saved_resolve(saved_user, value.as.str, &value, err);
		if (!st)
			st = define(&sc, def->inputs[k], value, err);
		given[k] = true;
	}
	for (int k = 0; k < def->input_count && !st; k++)
		if (!given[k])
			st = TI_FAIL(err, TI_E_CORRUPT, "%s.forward() missing argument '%s'", mod->type, def->inputs[k]);
	if (st)
		goto done;

	m->ctx.resolve = resolve;
	m->ctx.resolve_user = &sc;
	if (def->has_graph) {
		open_scopes open = {.count = 0};
		for (int i = 0; i < def->step_count && !st; i++) {
			result step;
			if ((st = enter_scope(m, mod, &open, &def->steps[i], err)))
				break;
			if ((st = run_step(r, &sc, mod, &def->steps[i], i, depth, parent, &step, err)))
				break;
			add_counts(m, res, &step);
			let_go(&sc, &def->steps[i]);
			if (i == def->step_count - 1 && !def->output_count) {
				memcpy(res->outputs, step.outputs, sizeof(res->outputs));
				res->output_count = step.output_count;
			}
		}
		leave_scopes(m, &open);
	} else {
		/* no graph: the modules in order, each on the previous output */
		ti_arg first = *(ti_arg *)ti_strmap_get(&sc.names, def->inputs[0]);
		ti_arg current[TI_OP_MAX_OUTPUTS] = {first};
		int count = 1;
		for (int i = 0; i < mod->child_count && !st; i++) {
			const ti_module *child = mod->children[i];
			int row;
			result sub;
			if ((st = add_row(r, i, depth, parent, true, child->path, child->type, &row, err)))
				break;
			if ((st = call_module(r, &sc, child, current, count, depth, row, &sub, err)))
				break;
			if ((st = finish_row(r, row, &sub, NULL, 0, err)))
				break;
			add_counts(m, res, &sub);
			count = sub.output_count;
			memcpy(current, sub.outputs, (size_t)count * sizeof(*current));
		}
		if (!st) {
			memcpy(res->outputs, current, (size_t)count * sizeof(*current));
			res->output_count = count;
		}
	}
	for (int i = 0; i < def->output_count && !st; i++) {
		const ti_arg *v = ti_strmap_get(&sc.names, def->outputs[i]);
		if (!v) {
			st = TI_FAIL(err, TI_E_CORRUPT, "output '%s' is never assigned", def->outputs[i]);
			ti_error_at(err, ti_arena_printf(&m->arena, "%s%soutputs.%d", def->jpath, *def->jpath ? "." : "", i), -1);
			break;
		}
		if (i < TI_OP_MAX_OUTPUTS)
			res->outputs[res->output_count++] = *v;
	}
done:
	m->ctx.resolve = saved_resolve;
	m->ctx.resolve_user = saved_user;
	if (!st && m->ctx.observer) /* the forward returns: its names let go */
		for (size_t i = 0; i < sc.names.capacity; i++)
			if (sc.names.keys[i])
				m->ctx.observer->release(m->ctx.observer->user, sc.names.values[i]);
	ti_strmap_release(&sc.names);
	return st;
}

/* "step 3 (layer1.0: Conv2d): <PyTorch's message>; input shapes [2, 64, 56, 56]" */
static void describe_failure(runner *r, int step, ti_error *err)
{
	char message[TI_ERROR_MESSAGE_MAX];
	snprintf(message, sizeof(message), "%s", err->message);
	char where[160];
	if (r->failed_type)
		snprintf(where, sizeof(where), "%s: %s", r->failed_target, r->failed_type);
	else
		snprintf(where, sizeof(where), "%s", r->failed_target ? r->failed_target : "?");
	int len = snprintf(err->message, sizeof(err->message), "step %d (%s): %s%s%s", step, where, message,
	                   r->failed_shapes[0] ? "; input shapes " : "", r->failed_shapes);
	if (len >= (int)sizeof(err->message)) /* cut: say so */
		memcpy(err->message + sizeof(err->message) - 4, "...", 4);
}

static void totals(ti_model *m, ti_model_report *rep)
{
	ti_model_totals *t = &rep->totals;
	ti_symctx *s = &m->sym;
	t->input_bytes = t->activation_bytes = t->macs = t->flops = t->flops_torch = t->flops_fvcore = ti_dim_int(0);
	for (size_t i = 0; i < m->param_count; i++) {
		const ti_model_param *p = &m->params[i];
		int64_t numel = 1;
		for (int k = 0; k < p->ndim; k++)
			numel *= p->shape[k];
		int64_t bytes = numel * (int64_t)ti_dtype_size(p->dtype);
		if (p->buffer) {
			t->buffer_bytes += bytes;
		} else if (!p->tied_to) {
			t->params += numel;
			t->param_bytes += bytes;
			if (p->trainable)
				t->trainable += numel;
			else
				t->non_trainable += numel;
		}
	}
	for (size_t i = 0; i < rep->input_count; i++) {
		const ti_model_tensor *x = &rep->inputs[i];
		ti_dim b = ti_dim_int((int64_t)ti_dtype_size(x->dtype));
		for (int k = 0; k < x->ndim; k++)
			b = ti_dim_mul(s, b, x->shape[k]);
		t->input_bytes = ti_dim_add(s, t->input_bytes, b);
	}
	for (size_t i = 0; i < rep->step_count; i++) {
		const ti_model_step *st = &rep->steps[i];
		if (st->depth)
			continue;
		t->macs = ti_dim_add(s, t->macs, st->macs);
		t->flops = ti_dim_add(s, t->flops, st->flops);
		t->flops_torch = ti_dim_add(s, t->flops_torch, st->flops_torch);
		t->flops_fvcore = ti_dim_add(s, t->flops_fvcore, st->flops_fvcore);
		t->uncounted_steps += !st->counted;
		for (int o = 0; o < st->output_count; o++) {
			const ti_model_tensor *x = &st->outputs[o];
			ti_dim b = ti_dim_int((int64_t)ti_dtype_size(x->dtype));
			for (int k = 0; k < x->ndim; k++)
				b = ti_dim_mul(s, b, x->shape[k]);
			t->activation_bytes = ti_dim_add(s, t->activation_bytes, b);
		}
	}
}

ti_status ti_model_run(ti_model *m, const ti_model_report **out, ti_error *err)
{
	if (m->ran) {
		*out = &m->report;
		return TI_OK;
	}
	ti_model_report *rep = &m->report;
	runner r = {m, NULL, 0, 0, NULL, NULL, ""};
	ti_arg *inputs = ti_arena_calloc(&m->arena, m->input_count + 1, sizeof(*inputs));
	if (!inputs)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (size_t i = 0; i < m->input_count; i++) {
		const ti_model_tensor *x = &m->inputs[i];
		ti_meta_tensor *t = ti_meta_view(&m->ctx, NULL, x->ndim, x->shape, x->stride);
		if (!t)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		t->dtype = x->dtype;
		m->inputs[i].meta = t;
		inputs[i] = ti_arg_named(x->name, ti_arg_tensor(t));
	}
	rep->inputs = m->inputs;
	rep->input_count = m->input_count;
	result res;
	ti_error step_err;
	ti_error_clear(&step_err);
	ti_status st = run_graph(&r, m->root, inputs, (int)m->input_count, 0, -1, &res, &step_err);
	if (st == TI_E_SHAPE) {
		/* the failing top-level row and everything after it is dropped: only steps that succeeded */
		size_t keep = 0;
		int failed = 0;
		for (size_t i = 0; i < r.count; i++)
			if (r.rows[i].depth == 0) {
				keep = i;
				failed = r.rows[i].index;
			}
		r.count = keep;
		describe_failure(&r, failed, &step_err);
		rep->failed = true;
		rep->error_step = failed;
		rep->error = step_err;
	} else if (st) {
		*err = step_err;
		return st;
	}
	rep->steps = r.rows;
	rep->step_count = r.count;
	if (!rep->failed) {
		int n = 0;
		for (int i = 0; i < res.output_count; i++)
			n += tensor_count(&res.outputs[i]);
		rep->outputs = ti_arena_calloc(&m->arena, (size_t)n + 1, sizeof(*rep->outputs));
		if (!rep->outputs)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		int k = 0;
		for (int i = 0; i < res.output_count; i++) {
			const char *name = i < m->main->output_count ? m->main->outputs[i] : NULL;
			if (!name && m->main->step_count) {
				const model_step *last = &m->main->steps[m->main->step_count - 1];
				name = i < last->out_count ? last->out_names[i] : NULL;
			}
			put_tensors(&r, &res.outputs[i], name ? name : "output", rep->outputs, &k);
		}
		rep->output_count = (size_t)k;
	}
	totals(m, rep);
	rep->assumptions = m->sym.assumptions;
	rep->assumption_count = m->sym.assumption_count;
	rep->training = m->ctx.training;
	m->ran = true;
	*out = rep;
	return ti_sym_ok(&m->sym, err);
}

ti_status ti_model_check_binds(const ti_model *m, ti_error *err)
{
	return ti_symctx_check_bound(&m->sym, err);
}
