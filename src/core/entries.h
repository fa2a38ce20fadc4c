/*
 * entries.h - naming what a checkpoint holds (library-internal).
 * Walks a value graph and lists its tensors and other values under dotted
 * names ("optimizer.state.0.exp_avg"). A container that holds no tensor is
 * one value entry; one that does is opened. Names and the list live in the
 * arena; depth and count have ceilings, and a cycle is named, not followed.
 */
#ifndef TINSPECT_ENTRIES_H
#define TINSPECT_ENTRIES_H

#include "tinspect/arena.h"
#include "tinspect/value.h"

typedef struct ti_entry_list {
	ti_entry *items;
	size_t count, capacity;
} ti_entry_list;

ti_status ti_entries_collect(const ti_value *root, ti_arena *arena, size_t depth_max,
                             size_t entries_max, ti_entry_list *out, ti_error *err);

#endif
