/*
 * prefault.h - fresh memory mapped in one call rather than a fault a page.
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

#endif
