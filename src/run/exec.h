/*
 * exec.h - the executor's state (library-internal, run.c and tensors.c
 * only): the values by meta tensor, the storages held and the blocks kept
 * for reuse. Kernels see it through run_internal.h's functions.
 */
#ifndef TINSPECT_RUN_EXEC_H
#define TINSPECT_RUN_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "memory/memory_internal.h"
#include "run/run_internal.h"
#include "tinspect/run.h"

typedef enum walk_mode {
	WALK_USES,  /* no data: who reads what, last */
	WALK_PLAN,  /* no data: bytes held, peak */
	WALK_REAL
} walk_mode;

#define RT_CACHE_BLOCKS 64

typedef struct entry {
	const void *meta;
	rt_tensor *t;            /* NULL once freed */
	int last_use;            /* the last kernel (sequence number) that reads it; -1: none */
	bool permanent;          /* weights, the description's outputs, --save-all */
	bool has_stats, checked;
	bool wanted;             /* its statistics are reported (a step above stats_depth, an output) */
	bool made;               /* bound in this walk (it may be let go since, when nothing reads it) */
	ti_run_stats stats;
} entry;

struct rt_exec {
	ti_model *model;
	const ti_run_options *opt;
	const ti_model_report *rep;
	mem_trace trace;
	walk_mode mode;
	int seq;                 /* kernels run so far in this walk */
	/* meta tensor -> entry */
	entry *entries;
	size_t count, cap;
	const void **keys;
	int *slots;
	size_t key_cap;
	size_t live, peak;       /* bytes of storages held */
	size_t scratch_held;     /* bytes of kernels' temporaries held (rt_scratch_alloc) */
	size_t kernel_high;      /* live + scratch_held at its highest since the kernel running began */
	const char *peak_at;
	int threads;
	ti_arena arena;
	char *mismatch;
	struct timespec started;  /* the last walk's start, after weights and inputs */
	/* freed blocks kept for the next request of their size (see take_block) */
	struct block {
		void *data;
		size_t bytes;
	} cache[RT_CACHE_BLOCKS];
	int cached;
	size_t cached_bytes, ceiling; /* ceiling: the planned peak, once known; 0 keeps nothing */
};

/* tensors.c's, for run.c's walks. */
entry *rt_entry_add(rt_exec *ex, const void *meta);
entry *rt_entry_find(rt_exec *ex, const void *meta);
ti_status rt_tensor_make(rt_exec *ex, ti_dtype dtype, int ndim, const int64_t *shape, bool data, rt_tensor **out,
                          ti_error *err);
void rt_cache_drop(rt_exec *ex);
void rt_copy_strided(const rt_tensor *src, void *dst);
ti_dtype rt_held_as(ti_dtype dt);

#endif
