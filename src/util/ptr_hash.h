/* ptr_hash.h - a pointer's hash for open-addressing tables keyed by address. */
#ifndef TINSPECT_UTIL_PTR_HASH_H
#define TINSPECT_UTIL_PTR_HASH_H

#include <stddef.h>
#include <stdint.h>

/* MurmurHash3's 64-bit finaliser, half of it: enough to spread aligned addresses. */
static inline size_t ti_ptr_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

#endif
