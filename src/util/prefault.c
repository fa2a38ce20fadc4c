/* prefault.c - fresh memory mapped in one call, and huge pages (see prefault.h). */
#define _DEFAULT_SOURCE /* madvise, MAP_ANONYMOUS */
#include "util/prefault.h"

#include <stdint.h>
#include <sys/mman.h>

void *ti_map_huge(void)
{
#if defined(MADV_HUGEPAGE) && defined(MAP_ANONYMOUS)
	/* Twice the size, so that an aligned stretch lies inside; the rest goes back at once. */
	size_t size = TI_HUGE_PAGE;
	char *map = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	char *p = (char *)(((uintptr_t)map + size - 1) & ~(uintptr_t)(size - 1));
	if (p > map)
		munmap(map, (size_t)(p - map));
	if (p + size < map + 2 * size)
		munmap(p + size, (size_t)(map + 2 * size - (p + size)));
	madvise(p, size, MADV_HUGEPAGE); /* advice: where it is not taken, small pages do */
	return p;
#else
	return NULL;
#endif
}

void ti_prefault(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
	if (!p || n < TI_PREFAULT_MIN)
		return;
	uintptr_t page = 4096, from = ((uintptr_t)p + page - 1) & ~(page - 1), to = ((uintptr_t)p + n) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_POPULATE_WRITE); /* advice: a refusal leaves the faults */
#else
	(void)p;
	(void)n;
#endif
}
