/*
 * cuda_alloc.h - a model of PyTorch's CUDA caching allocator on one stream.
 *
 * What torch.cuda.max_memory_allocated() and max_memory_reserved() would say
 * for a sequence of tensor allocations and frees, without a GPU: requests are
 * rounded, served best-fit from a small and a large pool of cached blocks,
 * split and coalesced inside their segments, and a request no free block fits
 * gets a new segment (a cudaMalloc) sized the way the allocator sizes it.
 * The rules, and the PyTorch lines they come from, are in cuda_alloc.c.
 *
 * Invariants: reserved only grows (freed blocks go back to their pool, never
 * to the driver: there is no empty_cache and no out-of-memory path), and
 * allocated <= reserved at every step. Each peak is the high-water mark of
 * its figure since mem_cuda_new. The model is deterministic: segments get
 * addresses in the order they are made, and ties between free blocks of one
 * size go to the lower address, as the allocator's set orders them.
 *
 * Ownership: a mem_cuda owns all its memory and mem_cuda_free_all releases
 * it. A block id is valid from the mem_cuda_malloc that returned it until
 * mem_cuda_release; the id may then be given out again.
 */
#ifndef TINSPECT_MEMORY_CUDA_ALLOC_H
#define TINSPECT_MEMORY_CUDA_ALLOC_H

#include <stdint.h>

#include "tinspect/error.h"

typedef struct mem_cuda mem_cuda;

/* The id of a 0-byte request: PyTorch allocates nothing for an empty tensor. */
#define MEM_CUDA_NO_BLOCK (-1)
/* Ceiling on blocks (live tensors, free pieces and the merged-away ids waiting for reuse). */
#define MEM_CUDA_MAX_BLOCKS (1 << 22)

/* ---- life cycle ---- */

/* An empty allocator: nothing reserved. TI_E_NOMEM when malloc fails. */
ti_status mem_cuda_new(mem_cuda **out, ti_error *err);
/* Releases the model itself (not a CUDA call: nothing is on a device). NULL is allowed. */
void mem_cuda_free_all(mem_cuda *a);

/* ---- mutation ---- */

/*
 * Allocates a block for a request of bytes (a storage's nbytes) and sets
 * *block to its id; a 0-byte request allocates nothing and sets
 * MEM_CUDA_NO_BLOCK. TI_E_INVALID for negative bytes, TI_E_LIMIT for 1 EiB
 * or more (PyTorch refuses those as out of memory) or past
 * MEM_CUDA_MAX_BLOCKS, TI_E_NOMEM when malloc fails; on failure the model is
 * unchanged and *block is MEM_CUDA_NO_BLOCK.
 */
ti_status mem_cuda_malloc(mem_cuda *a, int64_t bytes, int *block, ti_error *err);
/* The tensor is freed: its block goes back to the pool, merged with free neighbours.
 * MEM_CUDA_NO_BLOCK, and an id that is not a live block, are ignored. */
void mem_cuda_release(mem_cuda *a, int block);

/* ---- queries ---- */

/* Sum of the sizes of live blocks: rounded requests, and whole blocks that were not split
 * (what torch.cuda.memory_allocated counts). */
int64_t mem_cuda_allocated(const mem_cuda *a);
/* Sum of segment sizes (torch.cuda.memory_reserved). */
int64_t mem_cuda_reserved(const mem_cuda *a);
/* High-water marks: torch.cuda.max_memory_allocated and max_memory_reserved. */
int64_t mem_cuda_peak_allocated(const mem_cuda *a);
int64_t mem_cuda_peak_reserved(const mem_cuda *a);
/* Segments made so far (cudaMalloc calls). */
int64_t mem_cuda_segments(const mem_cuda *a);
/* The size of a live block (what it adds to allocated); 0 for MEM_CUDA_NO_BLOCK or a dead id. */
int64_t mem_cuda_block_size(const mem_cuda *a, int block);
/* round_size: at least 512 bytes, and a multiple of 512. bytes must be >= 0. */
int64_t mem_cuda_round(int64_t bytes);

#endif
