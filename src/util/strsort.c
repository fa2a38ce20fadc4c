/* strsort.c - strings sorted by hash with an LSD radix sort (see strsort.h). */
#include "util/strsort.h"

#include <stdlib.h>
#include <string.h>

static uint32_t position(uint64_t item) { return (uint32_t)item; }

/*
 * 32 bits of a string's hash. Eight bytes at a time, each mixed in by a
 * multiply, then SplitMix64's finaliser: a 20-byte name in a few nanoseconds.
 */
static uint32_t hash(const char *s)
{
	size_t n = strlen(s);
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

/* One stable counting pass on the hash bits [shift, shift + 11). */
static void radix_pass(const uint64_t *from, uint64_t *to, size_t n, int shift)
{
	enum { BUCKETS = 1 << 11 };
	size_t start[BUCKETS] = {0};
	for (size_t i = 0; i < n; i++)
		start[(from[i] >> shift) & (BUCKETS - 1)]++;
	size_t sum = 0;
	for (size_t b = 0; b < BUCKETS; b++) {
		size_t c = start[b];
		start[b] = sum;
		sum += c;
	}
	for (size_t i = 0; i < n; i++)
		to[start[(from[i] >> shift) & (BUCKETS - 1)]++] = from[i];
}

int ti_strsort_build(ti_strsort *s, size_t count, ti_strsort_key_fn key_of, const void *ctx)
{
	memset(s, 0, sizeof(*s));
	s->key_of = key_of;
	s->ctx = ctx;
	if (!count)
		return 0;
	if (count > TI_STRSORT_MAX)
		return -1;
	uint64_t *items = malloc(count * sizeof(*items)), *tmp = malloc(count * sizeof(*tmp));
	if (!items || !tmp) {
		free(items);
		free(tmp);
		return -1;
	}
	for (size_t i = 0; i < count; i++)
		items[i] = (uint64_t)hash(key_of(ctx, (uint32_t)i)) << 32 | i;
	/* Positions start in order and each pass is stable: equal hashes keep them ascending. */
	radix_pass(items, tmp, count, 32);
	radix_pass(tmp, items, count, 43);
	radix_pass(items, tmp, count, 54);
	free(items);
	s->items = tmp;
	s->count = count;
	return 0;
}

void ti_strsort_release(ti_strsort *s)
{
	free(s->items);
	s->items = NULL;
	s->count = 0;
}

int64_t ti_strsort_find(const ti_strsort *s, const char *key)
{
	uint64_t h = (uint64_t)hash(key) << 32;
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
