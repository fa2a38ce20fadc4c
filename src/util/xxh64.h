/*
 * xxh64.h - the steps of XXH64 (Yann Collet's specification) that a loop
 * folding its input as it reads it needs: cuda.h's ti_checksum is built on
 * them, and stats.c folds the stripes of a float chunk in the same loop
 * that sums it (ti_checksum's lanes, while nothing is buffered).
 */
#ifndef TINSPECT_UTIL_XXH64_H
#define TINSPECT_UTIL_XXH64_H

#include <stdint.h>
#include <string.h>

#define XXH_PRIME1 0x9E3779B185EBCA87ULL
#define XXH_PRIME2 0xC2B2AE3D27D4EB4FULL
#define XXH_PRIME3 0x165667B19E3779F9ULL
#define XXH_PRIME4 0x85EBCA77C2B2AE63ULL
#define XXH_PRIME5 0x27D4EB2F165667C5ULL

static inline uint64_t ti_xxh64_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

/* The specification reads its input little endian: on a little-endian machine, one load. */
static inline uint64_t ti_xxh64_read64(const unsigned char *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
#else
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
#endif
}

/* One lane's step over 8 bytes of a 32-byte stripe. */
static inline uint64_t ti_xxh64_round(uint64_t acc, uint64_t input)
{
	acc += input * XXH_PRIME2;
	return ti_xxh64_rotl(acc, 31) * XXH_PRIME1;
}

#endif
