/*
 * trace.c - every call of a shape run, as a tree of events (see
 * memory_internal.h): the run's observer opens an event when a call starts
 * and gives it the call's bound arguments and outputs when it returns.
 */
#include <string.h>

#include "memory/memory_internal.h"

static void on_enter(void *user, const char *op, const void *module)
{
	mem_trace *t = user;
	if (t->failed)
		return;
	if (ti_arena_array_grow(t->arena, (void **)&t->events, &t->capacity, sizeof(*t->events), t->count + 1)) {
		t->failed = true;
		return;
	}
	int id = (int)t->count++;
	mem_event *e = &t->events[id];
	memset(e, 0, sizeof(*e));
	e->name = op;
	e->module = module;
	e->parent = t->current;
	e->first_child = e->last_child = e->next_sibling = -1;
	if (t->current >= 0) {
		mem_event *p = &t->events[t->current];
		if (p->first_child < 0)
			p->first_child = id;
		else
			t->events[p->last_child].next_sibling = id;
		p->last_child = id;
	}
	t->current = id;
}

static void on_leave(void *user, const ti_op_call *call)
{
	mem_trace *t = user;
	if (t->failed || t->current < 0)
		return;
	mem_event *e = &t->events[t->current];
	if (call) {
		ti_op_call *copy = ti_arena_alloc(t->arena, sizeof(*copy));
		if (!copy) {
			t->failed = true;
			return;
		}
		*copy = *call;
		e->call = copy;
	}
	t->current = e->parent;
}

static void on_release(void *user, const ti_arg *value)
{
	mem_trace *t = user;
	int parent = t->current;
	on_enter(user, NULL, NULL);
	if (t->failed)
		return;
	t->events[t->count - 1].released = value;
	t->current = parent;
}

ti_status mem_trace_run(ti_model *model, mem_trace *trace, const ti_model_report **report, ti_error *err)
{
	if (model->ran)
		return TI_FAIL(err, TI_E_INVALID, "the model was already run: trace it on a fresh one");
	memset(trace, 0, sizeof(*trace));
	trace->arena = &model->arena;
	trace->current = -1;
	trace->events = ti_arena_array(&model->arena, 256, sizeof(*trace->events));
	trace->capacity = trace->events ? 256 : 0;
	if (!trace->events)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the trace");
	ti_run_observer observer = {on_enter, on_leave, on_release, trace};
	model->ctx.observer = &observer;
	ti_status st = ti_model_run(model, report, err);
	model->ctx.observer = NULL;
	if (!st && trace->failed)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the trace of %zu calls", trace->count);
	return st;
}
