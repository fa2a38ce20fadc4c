/*
 * value_build.h - making values (library-internal).
 * Every value lives in the arena it was made in; these return NULL when the
 * arena's ceiling says no, and the caller reports TI_E_LIMIT.
 */
#ifndef TINSPECT_VALUE_BUILD_H
#define TINSPECT_VALUE_BUILD_H

#include "tinspect/arena.h"
#include "tinspect/value.h"

ti_value *ti_value_new(ti_arena *a, ti_kind kind);
ti_value *ti_value_new_int(ti_arena *a, int64_t i);
ti_value *ti_value_new_str(ti_arena *a, ti_kind kind, const char *data, size_t size);
/* A tuple or list of count items copied from items. */
ti_value *ti_value_new_seq(ti_arena *a, ti_kind kind, ti_value *const *items, size_t count);
/* Appends to a tuple/list/set value; fails past max_items or the arena ceiling. */
ti_status ti_seq_push(ti_arena *a, ti_seq *seq, ti_value *item, size_t max_items, ti_error *err);
ti_status ti_dict_push(ti_arena *a, ti_dict *dict, ti_value *key, ti_value *value,
                       size_t max_items, ti_error *err);

#endif
