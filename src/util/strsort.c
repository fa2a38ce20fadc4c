/* strsort.c - strings sorted by hash, in place (see strsort.h). */
#include "util/strsort.h"

#include <stdlib.h>
#include <string.h>

#include "util/prefault.h"

static uint32_t position(uint64_t item) { return (uint32_t)item; }

/* Eight bytes at a time, each mixed in by a multiply, then SplitMix64's finaliser: a 20-byte name in a few nanoseconds. */
uint32_t ti_strsort_hash_n(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
	for (; n >= 8; n -= 8, s += 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9u;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h ^= w;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
	h ^= h >> 31;
	return (uint32_t)(h ^ (h >> 32));
}

uint32_t ti_strsort_hash(const char *s) { return ti_strsort_hash_n(s, strlen(s)); }

/* Items ascending by their whole value (hash, then position): insertion sort, for the few of a bucket. */
static void insertion_sort(uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t v = a[i];
		size_t j = i;
		for (; j > 0 && a[j - 1] > v; j--)
			a[j] = a[j - 1];
		a[j] = v;
	}
}

static int compare_items(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/*
 * Sorts items in place: one pass counts them into buckets by the hash's top
 * bits (about four items a bucket), a second moves each into its bucket by
 * following cycles (McIlroy, Bostic and McIlroy's American flag sort), then
 * each bucket is sorted whole. A sort with a second buffer as big as the
 * items (an LSD radix sort) touches that much more fresh memory, which for
 * a zip of 20,000 records cost more page faults than the sort's own work.
 */
static int sort_items(uint64_t *items, size_t n)
{
	int bits = 4; /* 16 to 4,096 buckets: their bounds, 32 KiB at most, come from the heap's reused memory */
	while (bits < 12 && ((size_t)1 << (bits + 2)) < n)
		bits++;
	size_t buckets = (size_t)1 << bits;
	int shift = 64 - bits;
	uint32_t *next = calloc(2 * buckets, sizeof(*next)), *end = next + buckets; /* n is at most TI_STRSORT_MAX */
	if (!next)
		return -1;
	for (size_t i = 0; i < n; i++)
		end[items[i] >> shift]++;
	for (size_t b = 0, sum = 0; b < buckets; b++) { /* end[b]: where bucket b ends; next[b]: its first unplaced item */
		next[b] = (uint32_t)sum;
		sum += end[b];
		end[b] = (uint32_t)sum;
	}
	for (size_t b = 0; b < buckets; b++)
		while (next[b] < end[b]) {
			uint64_t v = items[next[b]];
			for (size_t d = v >> shift; d != b; d = v >> shift) { /* v goes to bucket d: swap it for what is there */
				uint64_t there = items[next[d]];
				items[next[d]++] = v;
				v = there;
			}
			items[next[b]++] = v;
		}
	for (size_t b = 0, from = 0; b < buckets; from = end[b++]) {
		size_t k = end[b] - from;
		if (k <= 32)
			insertion_sort(items + from, k);
		else /* a crowded bucket (a huge count, or hashes that collide on their top bits) */
			qsort(items + from, k, sizeof(*items), compare_items);
	}
	free(next);
	return 0;
}

/* The items of count strings, each hash from hashes when given, else from key_of; then sorted. */
static int build(ti_strsort *s, size_t count, const uint32_t *hashes, ti_strsort_key_fn key_of, const void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->key_of = key_of;
	s->ctx = ctx;
	if (!count)
		return 0;
	if (count > TI_STRSORT_MAX)
		return -1;
	uint64_t *items = malloc(count * sizeof(*items));
	if (!items)
		return -1;
	ti_prefault(items, count * sizeof(*items));
	for (size_t i = 0; i < count; i++)
		items[i] = (uint64_t)(hashes ? hashes[i] : ti_strsort_hash(key_of(ctx, (uint32_t)i))) << 32 | i;
	/* Whole values ascending: equal hashes keep their positions ascending. */
	if (sort_items(items, count)) {
		free(items);
		return -1;
	}
	s->items = items;
	s->count = count;
	return 0;
}

int ti_strsort_build(ti_strsort *s, size_t count, ti_strsort_key_fn key_of, const void *ctx)
{
	return build(s, count, NULL, key_of, ctx);
}

int ti_strsort_build_hashed(ti_strsort *s, size_t count, const uint32_t *hashes, ti_strsort_key_fn key_of,
                            const void *ctx)
{
	return build(s, count, hashes, key_of, ctx);
}

void ti_strsort_release(ti_strsort *s)
{
	free(s->items);
	s->items = NULL;
	s->count = 0;
}

int64_t ti_strsort_find(const ti_strsort *s, const char *key)
{
	uint64_t h = (uint64_t)ti_strsort_hash(key) << 32;
	size_t lo = 0, hi = s->count;
	while (lo < hi) { /* the first item whose hash is at least key's */
		size_t mid = lo + (hi - lo) / 2;
		if (s->items[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->count && (s->items[lo] >> 32) == h >> 32; lo++)
		if (!strcmp(s->key_of(s->ctx, position(s->items[lo])), key))
			return position(s->items[lo]);
	return -1;
}

size_t ti_strsort_repeats(const ti_strsort *s, void (*repeat)(void *ctx, uint32_t first, uint32_t later),
                          void *ctx)
{
	size_t calls = 0;
	for (size_t a = 0, b; a < s->count; a = b) {
		for (b = a + 1; b < s->count && (s->items[b] >> 32) == (s->items[a] >> 32); b++)
			;
		/* [a, b) share a hash, positions ascending: each string meets its earliest equal first. */
		for (size_t i = a + 1; i < b; i++) {
			const char *k = s->key_of(s->ctx, position(s->items[i]));
			for (size_t j = a; j < i; j++)
				if (!strcmp(s->key_of(s->ctx, position(s->items[j])), k)) {
					repeat(ctx, position(s->items[j]), position(s->items[i]));
					calls++;
					break;
				}
		}
	}
	return calls;
}
