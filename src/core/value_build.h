/*
 * value_build.h - making values (library-internal).
 * Every value lives in the arena it was made in; these return NULL when the
 * arena's ceiling says no, and the caller reports TI_E_LIMIT.
 *
 * While a pickle loads, value->refs counts the references the pickle machine
 * and the containers made here hold (stack slots, memo entries, items): a
 * container made here takes a reference to each item it is given. A value
 * whose count falls to zero is handed back to the arena (ti_value_unref), so
 * the arguments of the 20,000 rebuild calls of a state dict cost nothing
 * once each tensor is made. TI_REFS_KEPT marks a value that is never handed
 * back: shared singletons, and whatever a count could not follow.
 */
#ifndef TINSPECT_VALUE_BUILD_H
#define TINSPECT_VALUE_BUILD_H

#include "tinspect/arena.h"
#include "tinspect/value.h"

#define TI_REFS_KEPT UINT16_MAX

static inline ti_value *ti_value_ref(ti_value *v)
{
	if (v && v->refs < TI_REFS_KEPT)
		v->refs++;
	return v;
}

static inline ti_value *ti_value_keep(ti_value *v)
{
	if (v)
		v->refs = TI_REFS_KEPT;
	return v;
}

/* What ti_value_unref does at zero: hands v, and the items it alone held, back to the arena. */
void ti_value_release(ti_arena *a, ti_value *v);

/* Drops a reference; at zero the value, and items it alone held, go back to the arena. */
static inline void ti_value_unref(ti_arena *a, ti_value *v)
{
	if (v && v->refs != TI_REFS_KEPT && v->refs && !--v->refs)
		ti_value_release(a, v);
}

/* A dict starts empty, an object or global with its parts NULL. */
ti_value *ti_value_new(ti_arena *a, ti_kind kind);
ti_value *ti_value_new_int(ti_arena *a, int64_t i);
ti_value *ti_value_new_str(ti_arena *a, ti_kind kind, const char *data, size_t size);
/* A tuple or list of count items copied from items, each of which it takes a reference to. */
ti_value *ti_value_new_seq(ti_arena *a, ti_kind kind, ti_value *const *items, size_t count);
/* The same, but the references the caller held (the pickle machine's stack) pass to it. */
ti_value *ti_value_new_seq_taking(ti_arena *a, ti_kind kind, ti_value *const *items, size_t count);
/* Appends to a tuple/list/set value; fails past max_items or the arena ceiling. */
ti_status ti_seq_push(ti_arena *a, ti_seq *seq, ti_value *item, size_t max_items, ti_error *err);
ti_status ti_dict_push(ti_arena *a, ti_value *dict, ti_value *key, ti_value *value,
                       size_t max_items, ti_error *err);
/* What BUILD gives a dict subclass (OrderedDict's _metadata). */
ti_status ti_dict_set_attributes(ti_arena *a, ti_value *dict, ti_value *attributes, ti_error *err);

#endif
