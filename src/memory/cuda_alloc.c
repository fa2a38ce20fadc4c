/*
 * cuda_alloc.c - PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
 * DeviceCachingAllocator), modelled on one stream with its default settings.
 *
 * The rules, each as the allocator has it in 1.13 and in 2.x alike:
 *   round_size       a request is rounded up to a multiple of kMinBlockSize =
 *                    512 bytes, and to at least 512. (The roundup_power2_divisions
 *                    option rounds to power-of-two divisions instead; it is off
 *                    unless PYTORCH_CUDA_ALLOC_CONF sets it, so it is not modelled.)
 *   get_pool         a rounded size <= kSmallSize = 1 MiB goes to the small pool,
 *                    anything larger to the large pool; a pool never serves the other.
 *   get_free_block   the pool is a std::set ordered by (stream, size, address):
 *                    lower_bound on the rounded size takes the smallest free block
 *                    that fits, the lower address among equals. (A large request
 *                    would skip a cached block of max_split_size or more; that
 *                    limit is unlimited by default, so the rule never fires here.)
 *   get_allocation_size   no block fits: a new segment (cudaMalloc) of kSmallBuffer
 *                    = 2 MiB for the small pool, kLargeBuffer = 20 MiB for a large
 *                    request under kMinLargeAlloc = 10 MiB, else the request rounded
 *                    up to a multiple of kRoundLarge = 2 MiB.
 *   should_split     the block found (or the new segment) is split when what remains
 *                    is >= kMinBlockSize in the small pool, > kSmallSize in the large
 *                    one (and the request is under max_split_size: always, by
 *                    default); the request takes the low end, the rest goes back to
 *                    the pool. Unsplit, the whole block is handed out, and the
 *                    allocated statistic counts the whole block.
 *   free_block       a freed block merges with its free neighbours in its segment
 *                    (try_merge_blocks, previous then next) and goes back to the pool.
 *   Nothing is cudaFree'd: release_cached_blocks runs only for empty_cache or when
 *   a cudaMalloc fails, and this model has no device capacity. So reserved only grows.
 *
 * Each pool is a treap keyed by (size, address), so a step costs O(log n) in
 * the free blocks. Addresses are made up: segments are laid end to end in the
 * order they are made. Real cudaMalloc addresses differ, which matters only
 * for which of two free blocks of one size is taken.
 */
#include "memory/cuda_alloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The allocator's constants, by their names in CUDACachingAllocator.cpp. */
#define K_MIN_BLOCK_SIZE ((int64_t)512)             /* all sizes are rounded to at least 512 bytes */
#define K_SMALL_SIZE ((int64_t)1048576)             /* largest "small" allocation is 1 MiB */
#define K_SMALL_BUFFER ((int64_t)2097152)           /* "small" allocations are packed in 2 MiB blocks */
#define K_LARGE_BUFFER ((int64_t)20971520)          /* "large" allocations may be packed in 20 MiB blocks */
#define K_MIN_LARGE_ALLOC ((int64_t)10485760)       /* allocations between 1 and 10 MiB may use kLargeBuffer */
#define K_ROUND_LARGE ((int64_t)2097152)            /* round up large allocations to 2 MiB */
/* CUDACachingAllocator::allocate refuses 1 EiB or more as out of memory ("one_exa_bytes"). */
#define K_ONE_EXA_BYTES ((int64_t)1152921504606846976)

enum { POOL_LARGE = 0, POOL_SMALL = 1 };
enum { BLOCK_DEAD = 0, BLOCK_FREE, BLOCK_ALLOCATED };

typedef struct cuda_block {
	int64_t addr, size;
	int prev, next;        /* neighbours in the segment, -1 at its ends; next links dead ids for reuse */
	int left, right;       /* children in the pool's treap while free */
	uint32_t priority;     /* the treap's heap key */
	unsigned char pool;    /* POOL_SMALL or POOL_LARGE */
	unsigned char state;   /* BLOCK_DEAD, BLOCK_FREE (in its pool) or BLOCK_ALLOCATED */
} cuda_block;

struct mem_cuda {
	cuda_block *blocks;
	int count, capacity;   /* ids handed out so far, room for */
	int dead, dead_count;  /* ids merged away, for reuse (a list through next) */
	int root[2];           /* each pool's treap */
	uint32_t rng;          /* xorshift state for priorities: the same on every run */
	int64_t allocated, reserved, peak_allocated, peak_reserved;
	int64_t segments, next_address;
};

/* ---- the pools: treaps ordered by (size, address), as BlockComparatorSize orders the set ---- */

static bool key_less(const cuda_block *b, int64_t size, int64_t addr)
{
	return b->size < size || (b->size == size && b->addr < addr);
}

/* Splits t into the blocks that sort before (size, addr) and the rest. */
static void tree_split(cuda_block *blocks, int t, int64_t size, int64_t addr, int *before, int *rest)
{
	if (t < 0) {
		*before = *rest = -1;
		return;
	}
	if (key_less(&blocks[t], size, addr)) {
		tree_split(blocks, blocks[t].right, size, addr, &blocks[t].right, rest);
		*before = t;
	} else {
		tree_split(blocks, blocks[t].left, size, addr, before, &blocks[t].left);
		*rest = t;
	}
}

/* Joins two treaps, every key of l before every key of r. */
static int tree_merge(cuda_block *blocks, int l, int r)
{
	if (l < 0)
		return r;
	if (r < 0)
		return l;
	if (blocks[l].priority > blocks[r].priority) {
		blocks[l].right = tree_merge(blocks, blocks[l].right, r);
		return l;
	}
	blocks[r].left = tree_merge(blocks, l, blocks[r].left);
	return r;
}

static void pool_insert(mem_cuda *a, int id)
{
	cuda_block *b = &a->blocks[id];
	int *root = &a->root[b->pool], before, rest;
	b->left = b->right = -1;
	b->state = BLOCK_FREE;
	tree_split(a->blocks, *root, b->size, b->addr, &before, &rest);
	*root = tree_merge(a->blocks, tree_merge(a->blocks, before, id), rest);
}

static void pool_erase(mem_cuda *a, int id)
{
	cuda_block *b = &a->blocks[id];
	int *root = &a->root[b->pool], before, rest, self, after;
	tree_split(a->blocks, *root, b->size, b->addr, &before, &rest);
	/* addresses are unique, so (size, addr + 1) cuts just this block off the rest */
	tree_split(a->blocks, rest, b->size, b->addr + 1, &self, &after);
	*root = tree_merge(a->blocks, before, after);
	b->left = b->right = -1;
}

/* lower_bound: the smallest free block of at least size bytes, lowest address first; -1 if none. */
static int pool_best_fit(const mem_cuda *a, int pool, int64_t size)
{
	int best = -1;
	for (int t = a->root[pool]; t >= 0;) {
		if (a->blocks[t].size >= size) {
			best = t;
			t = a->blocks[t].left;
		} else {
			t = a->blocks[t].right;
		}
	}
	return best;
}

/* ---- block ids ---- */

static uint32_t next_priority(mem_cuda *a)
{
	uint32_t x = a->rng;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return a->rng = x;
}

/* Makes sure that need more ids can be handed out without growing. */
static ti_status reserve_ids(mem_cuda *a, int need, ti_error *err)
{
	int fresh = need > a->dead_count ? need - a->dead_count : 0;
	if (fresh == 0 || a->count + fresh <= a->capacity)
		return TI_OK;
	if (a->count + fresh > MEM_CUDA_MAX_BLOCKS)
		return TI_FAIL(err, TI_E_LIMIT, "cuda allocator model: more than %d blocks", MEM_CUDA_MAX_BLOCKS);
	int capacity = a->capacity ? a->capacity : 256;
	while (capacity < a->count + fresh)
		capacity = capacity > MEM_CUDA_MAX_BLOCKS / 2 ? MEM_CUDA_MAX_BLOCKS : capacity * 2;
	cuda_block *grown = realloc(a->blocks, (size_t)capacity * sizeof(*grown));
	if (!grown)
		return TI_FAIL(err, TI_E_NOMEM, "cuda allocator model: out of memory for %d blocks", capacity);
	a->blocks = grown;
	a->capacity = capacity;
	return TI_OK;
}

/* An id for a new block; reserve_ids has made room. */
static int new_id(mem_cuda *a)
{
	int id;
	if (a->dead >= 0) {
		id = a->dead;
		a->dead = a->blocks[id].next;
		a->dead_count--;
	} else {
		id = a->count++;
	}
	cuda_block *b = &a->blocks[id];
	memset(b, 0, sizeof(*b));
	b->prev = b->next = b->left = b->right = -1;
	b->priority = next_priority(a);
	return id;
}

static void kill_id(mem_cuda *a, int id)
{
	a->blocks[id].state = BLOCK_DEAD;
	a->blocks[id].next = a->dead;
	a->dead = id;
	a->dead_count++;
}

/* ---- life cycle ---- */

ti_status mem_cuda_new(mem_cuda **out, ti_error *err)
{
	*out = NULL;
	mem_cuda *a = calloc(1, sizeof(*a));
	if (!a)
		return TI_FAIL(err, TI_E_NOMEM, "cuda allocator model: out of memory");
	a->dead = a->root[POOL_SMALL] = a->root[POOL_LARGE] = -1;
	a->rng = 2463534242u; /* any nonzero seed; fixed so that runs repeat */
	*out = a;
	return TI_OK;
}

void mem_cuda_free_all(mem_cuda *a)
{
	if (!a)
		return;
	free(a->blocks);
	free(a);
}

/* ---- the rules ---- */

int64_t mem_cuda_round(int64_t bytes)
{
	if (bytes < K_MIN_BLOCK_SIZE)
		return K_MIN_BLOCK_SIZE;
	return K_MIN_BLOCK_SIZE * ((bytes + K_MIN_BLOCK_SIZE - 1) / K_MIN_BLOCK_SIZE);
}

static int64_t allocation_size(int64_t size)
{
	if (size <= K_SMALL_SIZE)
		return K_SMALL_BUFFER;
	if (size < K_MIN_LARGE_ALLOC)
		return K_LARGE_BUFFER;
	return K_ROUND_LARGE * ((size + K_ROUND_LARGE - 1) / K_ROUND_LARGE);
}

static bool should_split(int pool, int64_t block_size, int64_t size)
{
	int64_t remaining = block_size - size;
	return pool == POOL_SMALL ? remaining >= K_MIN_BLOCK_SIZE : remaining > K_SMALL_SIZE;
}

ti_status mem_cuda_malloc(mem_cuda *a, int64_t bytes, int *block, ti_error *err)
{
	*block = MEM_CUDA_NO_BLOCK;
	if (bytes < 0)
		return TI_FAIL(err, TI_E_INVALID, "cuda allocator model: a request of %lld bytes", (long long)bytes);
	if (bytes == 0) /* allocate() calls malloc only when size != 0: an empty tensor's data is null */
		return TI_OK;
	if (bytes >= K_ONE_EXA_BYTES)
		return TI_FAIL(err, TI_E_LIMIT, "cuda out of memory: tried to allocate more than 1EB (%lld bytes)",
		               (long long)bytes);

	int64_t size = mem_cuda_round(bytes);
	int pool = size <= K_SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
	int found = pool_best_fit(a, pool, size);
	int64_t found_size = found >= 0 ? a->blocks[found].size : allocation_size(size);
	bool split = should_split(pool, found_size, size);
	if (found < 0 && a->next_address > INT64_MAX - found_size)
		return TI_FAIL(err, TI_E_LIMIT, "cuda allocator model: more than 2^63 bytes reserved");
	ti_status st = reserve_ids(a, (found < 0) + split, err);
	if (st)
		return st;

	if (found >= 0) {
		pool_erase(a, found);
	} else { /* alloc_block: a new segment */
		found = new_id(a);
		a->blocks[found].addr = a->next_address;
		a->blocks[found].size = found_size;
		a->blocks[found].pool = (unsigned char)pool;
		a->next_address += found_size;
		a->segments++;
		a->reserved += found_size;
		if (a->reserved > a->peak_reserved)
			a->peak_reserved = a->reserved;
	}

	int id = found;
	if (split) { /* alloc_found_block: the request takes the low end, the rest stays free */
		id = new_id(a);
		cuda_block *b = &a->blocks[id], *rest = &a->blocks[found];
		b->addr = rest->addr;
		b->size = size;
		b->pool = rest->pool;
		b->prev = rest->prev;
		b->next = found;
		if (b->prev >= 0)
			a->blocks[b->prev].next = id;
		rest->prev = id;
		rest->addr += size;
		rest->size -= size;
		pool_insert(a, found);
	}
	a->blocks[id].state = BLOCK_ALLOCATED;
	a->allocated += a->blocks[id].size;
	if (a->allocated > a->peak_allocated)
		a->peak_allocated = a->allocated;
	*block = id;
	return TI_OK;
}

/* try_merge_blocks: block absorbs its free neighbour other, whose id dies. */
static void merge_neighbour(mem_cuda *a, int id, int other)
{
	if (other < 0 || a->blocks[other].state != BLOCK_FREE)
		return;
	pool_erase(a, other);
	cuda_block *b = &a->blocks[id], *o = &a->blocks[other];
	if (b->prev == other) { /* [other b] */
		b->addr = o->addr;
		b->prev = o->prev;
		if (b->prev >= 0)
			a->blocks[b->prev].next = id;
	} else { /* [b other] */
		b->next = o->next;
		if (b->next >= 0)
			a->blocks[b->next].prev = id;
	}
	b->size += o->size;
	kill_id(a, other);
}

void mem_cuda_release(mem_cuda *a, int block)
{
	if (block < 0 || block >= a->count || a->blocks[block].state != BLOCK_ALLOCATED)
		return;
	cuda_block *b = &a->blocks[block];
	a->allocated -= b->size;
	int prev = b->prev, next = b->next; /* free_block takes both candidates before merging */
	merge_neighbour(a, block, prev);
	merge_neighbour(a, block, next);
	pool_insert(a, block);
}

/* ---- queries ---- */

int64_t mem_cuda_allocated(const mem_cuda *a) { return a->allocated; }
int64_t mem_cuda_reserved(const mem_cuda *a) { return a->reserved; }
int64_t mem_cuda_peak_allocated(const mem_cuda *a) { return a->peak_allocated; }
int64_t mem_cuda_peak_reserved(const mem_cuda *a) { return a->peak_reserved; }
int64_t mem_cuda_segments(const mem_cuda *a) { return a->segments; }

int64_t mem_cuda_block_size(const mem_cuda *a, int block)
{
	if (block < 0 || block >= a->count || a->blocks[block].state != BLOCK_ALLOCATED)
		return 0;
	return a->blocks[block].size;
}
