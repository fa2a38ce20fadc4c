/* arena.c - bump allocation in blocks, with a ceiling (see arena.h). */
#include "tinspect/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ti_arena_block {
	ti_arena_block *next;
	size_t size, used;
	max_align_t data[];
};

enum { BLOCK_MIN = 64 * 1024, ALIGN = 16 };

void ti_arena_init(ti_arena *a, size_t limit)
{
	memset(a, 0, sizeof(*a));
	a->limit = limit;
}

void ti_arena_release(ti_arena *a)
{
	ti_arena_block *b = a->head;
	while (b) {
		ti_arena_block *next = b->next;
		free(b);
		b = next;
	}
	a->head = NULL;
	a->used = a->reserved = 0;
}

void *ti_arena_alloc(ti_arena *a, size_t size)
{
	if (size > SIZE_MAX - ALIGN)
		return NULL;
	size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (size == 0)
		size = ALIGN;
	ti_arena_block *b = a->head;
	if (!b || b->size - b->used < size) {
		/* Grow geometrically so that many small inputs stay cheap and big ones take few blocks. */
		size_t want = a->reserved / 2;
		if (want < BLOCK_MIN)
			want = BLOCK_MIN;
		if (want < size)
			want = size;
		size_t room = a->reserved < a->limit ? a->limit - a->reserved : 0;
		if (want > room) {
			if (size > room)
				return NULL;
			want = size; /* the last block: just what fits under the ceiling */
		}
		b = calloc(1, sizeof(*b) + want); /* zeroed once here: arena memory is never reused */
		if (!b)
			return NULL;
		b->size = want;
		b->used = 0;
		b->next = a->head;
		a->head = b;
		a->reserved += want;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	a->used += size;
	return p;
}

void *ti_arena_calloc(ti_arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return ti_arena_alloc(a, n * size);
}

char *ti_arena_strndup(ti_arena *a, const char *s, size_t len)
{
	if (len == SIZE_MAX)
		return NULL;
	char *p = ti_arena_alloc(a, len + 1);
	if (p && len)
		memcpy(p, s, len);
	return p;
}

char *ti_arena_strdup(ti_arena *a, const char *s)
{
	return ti_arena_strndup(a, s, strlen(s));
}

char *ti_arena_printf(ti_arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *p = ti_arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}
