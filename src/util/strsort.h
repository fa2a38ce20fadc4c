/*
 * strsort.h - strings known all at once, sorted by hash (library-internal).
 *
 * A zip's record names and a dict's keys arrive together, and what we ask
 * of them is whether two are equal and, for a few, where one is. Sorting
 * each string's 32-bit hash with its position (8 bytes a string, sorted in
 * place: into buckets by the hash's top bits, then each bucket) answers both:
 * equal strings become neighbours and a lookup is a binary search. That
 * costs a third of inserting the strings one by one into a hash table,
 * whose every insertion is a cache miss. The strings stay with their owner
 * and are read back through key_of(ctx, position).
 */
#ifndef TINSPECT_STRSORT_H
#define TINSPECT_STRSORT_H

#include <stddef.h>
#include <stdint.h>

/* Positions go up to this. */
#define TI_STRSORT_MAX UINT32_MAX

typedef const char *(*ti_strsort_key_fn)(const void *ctx, uint32_t position);

typedef struct ti_strsort {
	uint64_t *items; /* hash << 32 | position, ascending */
	size_t count;
	ti_strsort_key_fn key_of;
	const void *ctx;
} ti_strsort;

/* 32 bits of the string's hash: what the sort orders by. */
uint32_t ti_strsort_hash(const char *s);
/* The same of s's first n bytes, which hold no NUL: ti_strsort_hash(s) when s[n] is the NUL. */
uint32_t ti_strsort_hash_n(const char *s, size_t n);

/* Sorts the strings key_of(ctx, 0 .. count - 1) (count at most TI_STRSORT_MAX); -1 when memory runs out. */
int ti_strsort_build(ti_strsort *s, size_t count, ti_strsort_key_fn key_of, const void *ctx);
/*
 * The same, with each string's ti_strsort_hash given in hashes[0 .. count - 1]
 * (made while the strings were at hand): no string is read to sort them.
 */
int ti_strsort_build_hashed(ti_strsort *s, size_t count, const uint32_t *hashes, ti_strsort_key_fn key_of,
                            const void *ctx);
void ti_strsort_release(ti_strsort *s);

/* The earliest position of a string equal to key, or -1. */
int64_t ti_strsort_find(const ti_strsort *s, const char *key);

/*
 * Calls repeat(ctx, first, later) for each string equal to one at an
 * earlier position: first is the earliest position of that string, and the
 * calls for one string come in the order of its positions. Returns the
 * number of calls.
 */
size_t ti_strsort_repeats(const ti_strsort *s, void (*repeat)(void *ctx, uint32_t first, uint32_t later),
                          void *ctx);

#endif
