/*
 * arena.h - a bump allocator with a ceiling.
 *
 * Everything parsed from one input lives in one arena and is freed at once by
 * ti_arena_release(). Allocation fails (returns NULL) once the total would
 * pass the ceiling given at init, so no input can make us allocate without
 * bound. Memory is zeroed and 8-byte aligned, which is all that pointers,
 * int64_t and double need. Blocks are 256 KiB; past 1 MiB (or while
 * ti_arena_expect says 1 MiB more is coming) an arena grows by 2 MiB blocks
 * advised as transparent huge pages (arena.c says why), and takes from them
 * anything up to half their size.
 *
 * Two exceptions to "nothing is freed on its own": a growable array
 * (ti_arena_array_grow) moves when it grows, and a small block handed back
 * with ti_arena_recycle() (by the pickle machine, for values nothing holds
 * any more) is given out again to the next allocation of the same size.
 */
#ifndef TINSPECT_ARENA_H
#define TINSPECT_ARENA_H

#include <stddef.h>

typedef struct ti_arena_block ti_arena_block;
typedef struct ti_arena_heap ti_arena_heap;

/* Blocks up to this size can be recycled, in steps of 8 bytes. */
#define TI_ARENA_RECYCLE_MAX 128

/* 1 under AddressSanitizer (GCC says so one way, clang another): recycled blocks are then never reused. */
#if defined(__SANITIZE_ADDRESS__)
#define TI_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TI_ARENA_ASAN 1
#endif
#endif
#ifndef TI_ARENA_ASAN
#define TI_ARENA_ASAN 0
#endif

typedef struct ti_arena {
	ti_arena_block *head;
	ti_arena_heap *heap;  /* big growable arrays, each its own malloc */
	size_t used;    /* bytes handed out, all blocks */
	size_t reserved;/* bytes obtained from malloc */
	size_t limit;   /* ceiling on reserved */
	void *recycled[TI_ARENA_RECYCLE_MAX / 8 + 1]; /* free lists by size / 8 */
	size_t expect_end; /* ti_arena_expect: used is expected to reach this */
	int expecting;     /* ti_arena_expect was called: expect_end, not the 1 MiB rule, picks the next block */
} ti_arena;

void ti_arena_init(ti_arena *a, size_t limit);
void ti_arena_release(ti_arena *a);

/*
 * Says that about bytes more are coming (a zip directory's arrays; what the
 * rest of a pickle will make, at the rate its first part made values).
 * From then on a new block is a huge one while 1 MiB or more is still to
 * come, and a small one after: a big arena then starts with huge blocks
 * instead of a megabyte of small ones, and does not end with a huge block
 * mostly empty. The latest call counts.
 */
void ti_arena_expect(ti_arena *a, size_t bytes);

/* Zeroed, 8-byte aligned; NULL when the ceiling or malloc says no. */
void *ti_arena_alloc(ti_arena *a, size_t size);
/* Zeroed array of n items of size each, with overflow check. */
void *ti_arena_calloc(ti_arena *a, size_t n, size_t size);
/* A NUL-terminated copy of len bytes of s. */
char *ti_arena_strndup(ti_arena *a, const char *s, size_t len);
char *ti_arena_strdup(ti_arena *a, const char *s);
/*
 * The n strings of parts (n at most 8), one after another, NUL-terminated:
 * "a" "." "b" makes "a.b"; NULL for more parts or no memory. For names made
 * by the thousand, where ti_arena_printf's two passes of vsnprintf cost
 * more than the rest of the work.
 */
char *ti_arena_cat(ti_arena *a, const char *const *parts, size_t n);
/* printf into the arena. */
char *ti_arena_printf(ti_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Growable arrays. An array's home follows from its size in bytes: a small
 * one sits in a block, and a copy is left behind when it grows; from 4 KiB
 * up it is a buffer of its own that realloc moves, so a big array costs its
 * length and nothing more. Only arrays made by these two functions may grow.
 */
void *ti_arena_array(ti_arena *a, size_t count, size_t item_size);
/*
 * Makes *capacity at least need, doubling it; -1 past the ceiling, with the
 * array as it was. Items past the old capacity are not zeroed: untouched,
 * the pages of a big array's spare half cost no memory.
 */
int ti_arena_array_grow(ti_arena *a, void **array, size_t *capacity, size_t item_size,
                        size_t need);

/*
 * Hands back a block of size bytes (at most TI_ARENA_RECYCLE_MAX) that
 * nothing points to any more; the next allocation of that size reuses it.
 * Under AddressSanitizer the block is poisoned and never reused, so a
 * dangling pointer is caught.
 */
void ti_arena_recycle(ti_arena *a, void *p, size_t size);

#endif
