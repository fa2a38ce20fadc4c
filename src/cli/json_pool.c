/* json_pool.c - cJSON's values in chunks of 2 MiB, reused per thread (see json_pool.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "cli/json_pool.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cJSON.h>

#include "tinspect/arena.h" /* TI_ARENA_ASAN: whether this is a sanitized build */
#include "util/prefault.h"

/*
 * A block is an 8-byte header, its size class (LARGE for one from malloc),
 * then what cJSON asked for, rounded up to GRAIN: a node of 64 bytes takes
 * 72 where malloc takes 80. A freed block goes on its class's list in the
 * freeing thread's pool; chunks are never unmapped before the process ends.
 */
enum { CHUNK = TI_HUGE_PAGE, FIRST_CHUNK = 256 << 10, GRAIN = 8, SMALL_MAX = 256, CLASSES = (SMALL_MAX + 8) / GRAIN + 1 };
#define LARGE ((uint64_t)0)

typedef struct pool {
	char *next, *end; /* what is left of the chunk being cut */
	void *free[CLASSES];
	unsigned chunks;
} pool;

static _Thread_local pool this_thread;

/*
 * The next chunk: the first of a thread is FIRST_CHUNK of small pages, so
 * that a small document's few values keep a small resident set; the rest
 * are 2 MiB, aligned to 2 MiB and advised as huge pages. false if none.
 */
static bool new_chunk(pool *p)
{
	char *chunk = NULL;
	size_t size = p->chunks ? (size_t)CHUNK : FIRST_CHUNK;
	if (p->chunks)
		chunk = ti_map_huge();
#ifdef MAP_ANONYMOUS
	else if ((chunk = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) == MAP_FAILED)
		chunk = NULL;
#endif
	if (!chunk)
		return false; /* the block comes from malloc */
	p->next = chunk;
	p->end = chunk + size;
	p->chunks++;
	return true;
}

static void *large(size_t size)
{
	if (size > SIZE_MAX - 8)
		return NULL;
	uint64_t *h = malloc(size + 8);
	if (!h)
		return NULL;
	*h = LARGE;
	return h + 1;
}

void *cli_json_pool_malloc(size_t size)
{
	if (size > SMALL_MAX)
		return large(size);
	size_t cls = (8 + (size ? size : 1) + GRAIN - 1) / GRAIN, bytes = cls * GRAIN;
	pool *p = &this_thread;
	void *reused = p->free[cls];
	if (reused) {
		p->free[cls] = *(void **)reused;
		return reused;
	}
	if ((!p->next || (size_t)(p->end - p->next) < bytes) && !new_chunk(p))
		return large(size);
	uint64_t *h = (uint64_t *)(void *)p->next;
	p->next += bytes;
	*h = cls;
	return h + 1;
}

void cli_json_pool_free(void *ptr)
{
	if (!ptr)
		return;
	uint64_t *h = (uint64_t *)ptr - 1;
	if (*h == LARGE) {
		free(h);
		return;
	}
	pool *p = &this_thread;
	*(void **)ptr = p->free[*h];
	p->free[*h] = ptr;
}

void cli_json_pool_install(void)
{
	if (TI_ARENA_ASAN)
		return;
	cJSON_Hooks hooks = {cli_json_pool_malloc, cli_json_pool_free};
	cJSON_InitHooks(&hooks);
}
