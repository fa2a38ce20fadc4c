/*
 * prefault.h - fresh memory mapped in one call rather than a fault a page,
 * and huge pages, which are one fault for 2 MiB.
 *
 * A page's first touch is a fault; in a virtual machine each costs about
 * 10 us, more than filling the page. Where a buffer of known size is about
 * to be written whole, asking the kernel to map its pages at once
 * (MADV_POPULATE_WRITE, Linux 5.14) takes less than half that. Advice only:
 * where the kernel lacks it, the pages fault in as before.
 */
#ifndef TINSPECT_UTIL_PREFAULT_H
#define TINSPECT_UTIL_PREFAULT_H

#include <stddef.h>

/* Below this a buffer's few pages are left to fault. */
enum { TI_PREFAULT_MIN = 64 * 1024 };

/* Maps the whole pages inside [p, p + n) now, writable; their contents are untouched. */
void ti_prefault(void *p, size_t n);

/* The size of a transparent huge page, and of what ti_map_huge maps. */
enum { TI_HUGE_PAGE = 2 << 20 };

/*
 * TI_HUGE_PAGE bytes of fresh zeroed memory, aligned to their size and
 * advised as a huge page (MADV_HUGEPAGE), which the kernel gives in one
 * fault where small pages take 512; where the advice is not taken, small
 * pages do. NULL where nothing can be mapped (or the system has no such
 * advice). munmap(p, TI_HUGE_PAGE) gives it back.
 */
void *ti_map_huge(void);

#endif
