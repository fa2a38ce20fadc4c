/*
 * torch_state.h - the torch unpickler's state (library-internal): what the
 * hooks (torch_unpickle.c) and the calls they run (torch_calls.c) share.
 * A type only, so the calls need not depend on the hooks that run them.
 */
#ifndef TINSPECT_TORCH_STATE_H
#define TINSPECT_TORCH_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "tinspect/arena.h"
#include "tinspect/tensor.h"
#include "util/strmap.h"

typedef struct ti_torch {
	ti_arena *arena;
	bool keys_are_positions; /* every key so far is "0", "1", ...: by_key is not needed yet */
	ti_strmap by_key;        /* storage key -> its position in storages, plus one */
	ti_storage **storages;   /* in order of first appearance */
	size_t storage_count, storage_capacity;
	size_t storages_max;
	size_t tensor_count;
	struct {                 /* the storage classes last seen (torch_calls.c storage_dtype) */
		const ti_global *global;
		ti_dtype dtype;
		bool untyped;
	} classes[8];
	size_t class_count;
	struct scan_findings *findings; /* when set, every global and call is judged into it too */
} ti_torch;

#endif
