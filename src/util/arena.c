/* arena.c - bump allocation in blocks, with a ceiling (see arena.h). */
#define _GNU_SOURCE /* MAP_ANONYMOUS and madvise, for the huge blocks; mremap, for big arrays */
#include "tinspect/arena.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/prefault.h"

#if TI_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define REUSE_RECYCLED 0
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#define REUSE_RECYCLED 1
#endif

struct ti_arena_block {
	ti_arena_block *next;
	size_t size, used;
	bool mapped; /* a huge block: mapped, not malloc'd */
	max_align_t data[];
};

struct ti_arena_heap {
	ti_arena_heap *prev, *next;
	size_t size;
	size_t mapped; /* the mapping's length, for a buffer mapped here (MAPPED_ARRAY_MIN); 0 if malloc'd */
	max_align_t data[];
};

/*
 * Blocks are all one size, so memory grows by what is used rather than by
 * half of what was reserved; an allocation too big to share a block well
 * gets a block of its own. Arrays from 4 KiB up live in heap buffers (from
 * 64 KiB up, mapped here: see heap_realloc).
 *
 * Once an arena holds HUGE_AFTER (1 MiB), or while its caller expects a
 * megabyte or more still to come (ti_arena_expect), it grows by huge blocks
 * instead, and takes from them any allocation up to half their size:
 * 2 MiB, aligned to 2 MiB and advised as a transparent huge page (Linux
 * MADV_HUGEPAGE), which the kernel gives in one fault where 256 KiB blocks
 * take 64. Fresh memory is what a big pickle's values cost most: the
 * 20,000-tensor checkpoint's 5.6 MB of them were 1,400 page faults, each
 * dearer than the instructions that fill its page. A small arena never
 * makes one; a huge block is resident whole once touched, so the expected
 * rest decides whether the last block is a huge one or a small one. Where
 * the kernel has no huge page (or THP is off), the block is one of small
 * pages like any other.
 */
enum {
	BLOCK_SIZE = 256 * 1024, OWN_BLOCK_MIN = BLOCK_SIZE / 4, ALIGN = 8, ARRAY_HEAP_MIN = 4096,
	HUGE_BLOCK = TI_HUGE_PAGE, HUGE_AFTER = 1 << 20, MAPPED_ARRAY_MIN = 64 * 1024,
};

void ti_arena_init(ti_arena *a, size_t limit)
{
	memset(a, 0, sizeof(*a));
	a->limit = limit;
}

void ti_arena_release(ti_arena *a)
{
	for (ti_arena_block *b = a->head, *next; b; b = next) {
		next = b->next;
		if (b->mapped) {
			UNPOISON(b, HUGE_BLOCK); /* what was recycled in it: the next mapping there starts clean */
			munmap(b, HUGE_BLOCK);
		}
		else
			free(b);
	}
	for (ti_arena_heap *h = a->heap, *next; h; h = next) {
		next = h->next;
		if (h->mapped)
			munmap(h, h->mapped);
		else
			free(h);
	}
	size_t limit = a->limit;
	ti_arena_init(a, limit);
}

static size_t room(const ti_arena *a) { return a->reserved < a->limit ? a->limit - a->reserved : 0; }

/* A zeroed huge block (see above), or NULL: then the caller takes a small one. */
static ti_arena_block *huge_block(void)
{
	ti_arena_block *b = ti_map_huge();
	if (!b)
		return NULL;
	UNPOISON(b, HUGE_BLOCK); /* under ASan, memory mapped where a poisoned block was */
	b->mapped = true;
	return b;
}

/*
 * A new block, and from it an allocation of size bytes; NULL past the
 * ceiling. Apart from the common case, which then makes no call.
 */
static __attribute__((noinline)) void *alloc_new_block(ti_arena *a, size_t size)
{
	size_t want = size >= OWN_BLOCK_MIN ? size : BLOCK_SIZE;
	if (want > room(a)) {
		if (size > room(a))
			return NULL;
		want = size; /* the last block: just what fits under the ceiling */
	}
	ti_arena_block *b = NULL;
	bool huge = a->expecting ? a->expect_end > a->used && a->expect_end - a->used >= HUGE_BLOCK / 2
	                         : a->reserved >= HUGE_AFTER;
	if (huge && size <= HUGE_BLOCK / 2 && HUGE_BLOCK - sizeof(*b) <= room(a) && (b = huge_block()))
		want = HUGE_BLOCK - sizeof(*b);
	if (!b && !(b = calloc(1, sizeof(*b) + want)))
		return NULL;
	b->size = want;
	a->reserved += want;
	/* A block of its own goes behind the head, whose free space stays in use. */
	if (a->head && want == size && a->head->size - a->head->used >= ALIGN) {
		b->next = a->head->next;
		a->head->next = b;
	} else {
		b->next = a->head;
		a->head = b;
	}
	b->used = size;
	a->used += size;
	return b->data;
}

void ti_arena_expect(ti_arena *a, size_t bytes)
{
	a->expecting = 1;
	a->expect_end = bytes > SIZE_MAX - a->used ? SIZE_MAX : a->used + bytes;
}

/*
 * Clears n words (at most TI_ARENA_RECYCLE_MAX / 8): a store each, through
 * a jump into the run of them, where a loop (which the compiler would make a
 * memset, a rep stos) cost more than the few stores a value needs.
 */
static inline void zero_words(uint64_t *w, size_t n)
{
	switch (n) {
	case 16: w[15] = 0; /* fall through */
	case 15: w[14] = 0; /* fall through */
	case 14: w[13] = 0; /* fall through */
	case 13: w[12] = 0; /* fall through */
	case 12: w[11] = 0; /* fall through */
	case 11: w[10] = 0; /* fall through */
	case 10: w[9] = 0; /* fall through */
	case 9: w[8] = 0; /* fall through */
	case 8: w[7] = 0; /* fall through */
	case 7: w[6] = 0; /* fall through */
	case 6: w[5] = 0; /* fall through */
	case 5: w[4] = 0; /* fall through */
	case 4: w[3] = 0; /* fall through */
	case 3: w[2] = 0; /* fall through */
	case 2: w[1] = 0; /* fall through */
	case 1: w[0] = 0; /* fall through */
	default: break;
	}
}

_Static_assert(TI_ARENA_RECYCLE_MAX / 8 <= 16, "zero_words clears at most 16 words");

void *ti_arena_alloc(ti_arena *a, size_t size)
{
	if (size > SIZE_MAX - ALIGN)
		return NULL;
	size = size ? (size + ALIGN - 1) & ~(size_t)(ALIGN - 1) : ALIGN;
	if (size <= TI_ARENA_RECYCLE_MAX && a->recycled[size / ALIGN]) {
		void *p = a->recycled[size / ALIGN];
		a->recycled[size / ALIGN] = *(void **)p;
		zero_words(p, size / 8);
		return p;
	}
	ti_arena_block *b = a->head;
	if (!b || b->size - b->used < size)
		return alloc_new_block(a, size);
	void *p = (char *)b->data + b->used;
	b->used += size;
	a->used += size;
	return p;
}

void ti_arena_recycle(ti_arena *a, void *p, size_t size)
{
	size = size ? (size + ALIGN - 1) & ~(size_t)(ALIGN - 1) : ALIGN;
	if (!p || size > TI_ARENA_RECYCLE_MAX)
		return;
	if (REUSE_RECYCLED) {
		*(void **)p = a->recycled[size / ALIGN];
		a->recycled[size / ALIGN] = p;
	}
	POISON(p, size);
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

char *ti_arena_cat(ti_arena *a, const char *const *parts, size_t n)
{
	size_t len[8], total = 1;
	if (n > sizeof(len) / sizeof(len[0]))
		return NULL;
	for (size_t i = 0; i < n; i++) {
		len[i] = strlen(parts[i]);
		if (len[i] > SIZE_MAX - total)
			return NULL;
		total += len[i];
	}
	char *p = ti_arena_alloc(a, total), *at = p;
	if (!p)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		memcpy(at, parts[i], len[i]);
		at += len[i];
	}
	*at = '\0';
	return p;
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

/* ---- growable arrays ---- */

static ti_arena_heap *heap_of(void *array) { return (ti_arena_heap *)((char *)array - offsetof(ti_arena_heap, data)); }

/*
 * A heap buffer's memory: from MAPPED_ARRAY_MIN up, mapped here, grown by
 * mremap (which moves pages, never copies them), and each new stretch
 * mapped in one call (util/prefault.h), since the caller is about to fill
 * it. Fresh pages are what a big state_dict's arrays cost most: its dict,
 * storage and entry arrays were 330 of the 527 page faults of inspecting
 * 20,000 tensors, each about 10 us in a virtual machine; mapped at once
 * they cost under half that. The price is the doubled tail, resident
 * before it is used: at most as much again as the array holds.
 */
static size_t page_round(size_t n) { return (n + 4095) & ~(size_t)4095; }

static ti_arena_heap *heap_realloc(ti_arena_heap *old, size_t old_size, size_t bytes)
{
#ifdef MAP_ANONYMOUS
	/* under AddressSanitizer every buffer stays malloc'd, where an overflow is caught */
	if (!TI_ARENA_ASAN && (bytes >= MAPPED_ARRAY_MIN + sizeof(*old) || (old && old->mapped))) {
		size_t length = page_round(bytes);
		if (old && old->mapped && length <= old->mapped)
			return old;
#ifdef MREMAP_MAYMOVE
		if (old && old->mapped) {
			size_t was = old->mapped;
			char *p = mremap(old, was, length, MREMAP_MAYMOVE);
			if (p == MAP_FAILED)
				return NULL;
			ti_prefault(p + was, length - was); /* the new tail, which the caller is about to fill */
			ti_arena_heap *h = (ti_arena_heap *)(void *)p;
			h->mapped = length;
			return h;
		}
#endif
		ti_arena_heap *h = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (h == MAP_FAILED)
			return NULL;
		ti_prefault(h, length);
		if (old) {
			memcpy(h, old, sizeof(*h) + old_size);
			if (old->mapped)
				munmap(old, old->mapped);
			else
				free(old);
		}
		h->mapped = length;
		return h;
	}
#endif
	ti_arena_heap *h = realloc(old, bytes);
	if (h && !old)
		h->mapped = 0;
	return h;
}

/* Resizes (or, from NULL, makes) a heap buffer of old_size bytes to size; links it in. */
static void *heap_resize(ti_arena *a, void *array, size_t old_size, size_t size)
{
	if (size - old_size > room(a) || size > SIZE_MAX - sizeof(ti_arena_heap))
		return NULL;
	ti_arena_heap *old = array ? heap_of(array) : NULL;
	ti_arena_heap *h = heap_realloc(old, old_size, sizeof(*h) + size);
	if (!h)
		return NULL;
	if (!old) {
		h->prev = NULL;
		h->next = a->heap;
	}
	if (h->next)
		h->next->prev = h;
	if (h->prev)
		h->prev->next = h;
	else
		a->heap = h;
	h->size = size;
	a->reserved += size - old_size;
	a->used += size - old_size;
	return h->data;
}

void *ti_arena_array(ti_arena *a, size_t count, size_t item_size)
{
	if (item_size && count > SIZE_MAX / item_size)
		return NULL;
	size_t size = count * item_size;
	if (size < ARRAY_HEAP_MIN)
		return ti_arena_alloc(a, size);
	void *p = heap_resize(a, NULL, 0, size);
	if (p && !heap_of(p)->mapped) /* a fresh mapping is zero already */
		memset(p, 0, size);
	return p;
}

int ti_arena_array_grow(ti_arena *a, void **array, size_t *capacity, size_t item_size,
                        size_t need)
{
	if (need <= *capacity)
		return 0;
	size_t cap = *capacity ? *capacity : 4;
	while (cap < need) {
		if (cap > SIZE_MAX / 2)
			return -1;
		cap *= 2;
	}
	if (cap > SIZE_MAX / item_size)
		return -1;
	size_t old_size = *capacity * item_size, size = cap * item_size;
	void *bigger;
	if (size < ARRAY_HEAP_MIN) {
		bigger = ti_arena_alloc(a, size);
		if (bigger && old_size) {
			memcpy(bigger, *array, old_size);
			ti_arena_recycle(a, *array, old_size); /* the small copy left behind */
		}
	} else if (old_size >= ARRAY_HEAP_MIN) {
		bigger = heap_resize(a, *array, old_size, size);
	} else {
		bigger = heap_resize(a, NULL, 0, size);
		if (bigger && old_size)
			memcpy(bigger, *array, old_size);
	}
	if (!bigger)
		return -1;
	*array = bigger;
	*capacity = cap;
	return 0;
}
