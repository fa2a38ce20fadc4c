/* prefault.c - fresh memory mapped in one call (see prefault.h). */
#define _DEFAULT_SOURCE /* madvise */
#include "util/prefault.h"

#include <stdint.h>
#include <sys/mman.h>

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
