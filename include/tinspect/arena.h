/*
 * arena.h - a bump allocator with a ceiling.
 *
 * Everything parsed from one input lives in one arena and is freed at once by
 * ti_arena_release(). Allocation fails (returns NULL) once the total would
 * pass the ceiling given at init, so no input can make us allocate without
 * bound. Memory is zeroed. Nothing allocated here is ever freed on its own.
 */
#ifndef TINSPECT_ARENA_H
#define TINSPECT_ARENA_H

#include <stddef.h>

typedef struct ti_arena_block ti_arena_block;

typedef struct ti_arena {
	ti_arena_block *head;
	size_t used;    /* bytes handed out, all blocks */
	size_t reserved;/* bytes obtained from malloc */
	size_t limit;   /* ceiling on reserved */
} ti_arena;

void ti_arena_init(ti_arena *a, size_t limit);
void ti_arena_release(ti_arena *a);

/* Zeroed, 16-byte aligned; NULL when the ceiling or malloc says no. */
void *ti_arena_alloc(ti_arena *a, size_t size);
/* Zeroed array of n items of size each, with overflow check. */
void *ti_arena_calloc(ti_arena *a, size_t n, size_t size);
/* A NUL-terminated copy of len bytes of s. */
char *ti_arena_strndup(ti_arena *a, const char *s, size_t len);
char *ti_arena_strdup(ti_arena *a, const char *s);
/* printf into the arena. */
char *ti_arena_printf(ti_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
