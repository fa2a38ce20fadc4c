/*
 * test_memory_cuda.c - the model of PyTorch's CUDA caching allocator: rounding,
 * the two pools and their segment sizes, best fit, splitting, coalescing,
 * reuse, and peaks worked out by hand from CUDACachingAllocator.cpp's rules;
 * cuDNN's convolution workspaces, the estimate and the range's ends, and
 * cuDNN's recurrent layers as _cudnn_rnn runs them, against the H200's
 * measurements (tests/device/measured/).
 */
#include <stdio.h>
#include <string.h>

#include "memory/cuda_alloc.h"
#include "tinspect/memory.h"
#include "unit.h"

#define KIB ((int64_t)1024)
#define MIB ((int64_t)1048576)

static ti_error err;
static mem_cuda *a;

static void setup(void)
{
	ti_error_clear(&err);
	cr_assert(mem_cuda_new(&a, &err) == TI_OK, "mem_cuda_new: %s", err.message);
}

static void teardown(void)
{
	mem_cuda_free_all(a);
	a = NULL;
}

/* Allocates bytes, failing the test if the model refuses. */
static int alloc(int64_t bytes)
{
	int block;
	ti_status st = mem_cuda_malloc(a, bytes, &block, &err);
	cr_assert(st == TI_OK, "malloc of %lld bytes: %s (%s)", (long long)bytes, ti_status_name(st), err.message);
	return block;
}

Test(memory_cuda, rounds_requests_up_to_a_multiple_of_512_bytes)
{
	EXPECT_INT(mem_cuda_round(1), 512);
	EXPECT_INT(mem_cuda_round(511), 512);
	EXPECT_INT(mem_cuda_round(512), 512);
	EXPECT_INT(mem_cuda_round(513), 1024);
	EXPECT_INT(mem_cuda_round(1000), 1024);
	EXPECT_INT(mem_cuda_round(MIB + 1), MIB + 512);
	EXPECT_INT(mem_cuda_round(30 * MIB + 1), 30 * MIB + 512);
}

Test(memory_cuda, starts_with_nothing_reserved, .init = setup, .fini = teardown)
{
	EXPECT_INT(mem_cuda_allocated(a), 0);
	EXPECT_INT(mem_cuda_reserved(a), 0);
	EXPECT_INT(mem_cuda_peak_allocated(a), 0);
	EXPECT_INT(mem_cuda_peak_reserved(a), 0);
	EXPECT_INT(mem_cuda_segments(a), 0);
}

Test(memory_cuda, an_empty_tensor_allocates_nothing, .init = setup, .fini = teardown)
{
	int block = alloc(0);
	EXPECT_INT(block, MEM_CUDA_NO_BLOCK);
	EXPECT_INT(mem_cuda_allocated(a), 0);
	EXPECT_INT(mem_cuda_reserved(a), 0);
	mem_cuda_release(a, block); /* freeing it is a no-op */
	EXPECT_INT(mem_cuda_allocated(a), 0);
}

Test(memory_cuda, a_small_request_reserves_a_2_mib_segment, .init = setup, .fini = teardown)
{
	int block = alloc(1);
	EXPECT_INT(mem_cuda_block_size(a, block), 512);
	EXPECT_INT(mem_cuda_allocated(a), 512);
	EXPECT_INT(mem_cuda_reserved(a), 2 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 1);
}

Test(memory_cuda, a_1_mib_request_is_small_and_shares_its_segment, .init = setup, .fini = teardown)
{
	/* kSmallSize = 1 MiB is the largest small request: a 2 MiB segment holds two */
	alloc(MIB);
	alloc(MIB);
	EXPECT_INT(mem_cuda_reserved(a), 2 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 2 * MIB);
	alloc(MIB);
	EXPECT_INT(mem_cuda_reserved(a), 4 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 2);
}

Test(memory_cuda, a_request_just_over_1_mib_goes_to_the_large_pool, .init = setup, .fini = teardown)
{
	alloc(MIB + 1);
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), MIB + 512);
}

Test(memory_cuda, a_5_mib_request_reserves_20_mib, .init = setup, .fini = teardown)
{
	int block = alloc(5 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
	/* 15 MiB remain, more than kSmallSize: the segment is split */
	EXPECT_INT(mem_cuda_block_size(a, block), 5 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 5 * MIB);
}

Test(memory_cuda, a_request_of_30_mib_and_a_byte_reserves_32_mib, .init = setup, .fini = teardown)
{
	int block = alloc(30 * MIB + 1);
	/* 10 MiB or more: its own segment, rounded up to a multiple of kRoundLarge = 2 MiB */
	EXPECT_INT(mem_cuda_reserved(a), 32 * MIB);
	/* 2 MiB - 512 remain, more than 1 MiB: split off, so only the rounded request counts */
	EXPECT_INT(mem_cuda_block_size(a, block), 30 * MIB + 512);
	EXPECT_INT(mem_cuda_allocated(a), 30 * MIB + 512);
}

Test(memory_cuda, an_unsplit_remainder_counts_as_allocated, .init = setup, .fini = teardown)
{
	/* 11 MiB gets a 12 MiB segment; the 1 MiB left is not > kSmallSize, so the block stays whole */
	int block = alloc(11 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 12 * MIB);
	EXPECT_INT(mem_cuda_block_size(a, block), 12 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 12 * MIB);
	mem_cuda_release(a, block);
	EXPECT_INT(mem_cuda_allocated(a), 0);
	EXPECT_INT(mem_cuda_peak_allocated(a), 12 * MIB);
}

Test(memory_cuda, freed_blocks_are_reused_and_reserved_stays_flat, .init = setup, .fini = teardown)
{
	for (int i = 0; i < 1000; i++) {
		int big = alloc(5 * MIB), small = alloc(100 * KIB), huge = alloc(64 * MIB);
		mem_cuda_release(a, small);
		mem_cuda_release(a, big);
		mem_cuda_release(a, huge);
	}
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB + 2 * MIB + 64 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 3);
	EXPECT_INT(mem_cuda_allocated(a), 0);
	EXPECT_INT(mem_cuda_peak_allocated(a), 5 * MIB + 100 * KIB + 64 * MIB);
}

Test(memory_cuda, the_rest_of_a_split_segment_serves_the_next_request, .init = setup, .fini = teardown)
{
	alloc(5 * MIB);
	alloc(5 * MIB);
	alloc(10 * MIB); /* 10 MiB is left: exactly fits, nothing to split */
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 20 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 1);
}

Test(memory_cuda, the_pools_do_not_serve_each_other, .init = setup, .fini = teardown)
{
	mem_cuda_release(a, alloc(MIB));  /* the small pool now caches a free 2 MiB block */
	alloc(MIB + 512);                 /* large: a 20 MiB segment all the same */
	EXPECT_INT(mem_cuda_reserved(a), 22 * MIB);
	mem_cuda_release(a, alloc(512));  /* small: back in the cached 2 MiB */
	EXPECT_INT(mem_cuda_reserved(a), 22 * MIB);
}

Test(memory_cuda, best_fit_takes_the_smallest_free_block_that_fits, .init = setup, .fini = teardown)
{
	/* one 20 MiB segment: [x 8][y 2][z 4][w 6] MiB */
	int x = alloc(8 * MIB);
	alloc(2 * MIB);
	int z = alloc(4 * MIB);
	alloc(6 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 1);
	mem_cuda_release(a, x);
	mem_cuda_release(a, z);
	/* 3 MiB fits both; the 4 MiB block is smaller; 1 MiB would remain, not > kSmallSize: taken whole */
	int b = alloc(3 * MIB);
	EXPECT_INT(mem_cuda_block_size(a, b), 4 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 12 * MIB); /* y 2 + w 6 + the whole 4 */
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
}

Test(memory_cuda, among_equal_blocks_the_lower_address_wins, .init = setup, .fini = teardown)
{
	/* one 20 MiB segment: [x 4][y 2][z 4][w 2][free 8] MiB */
	int x = alloc(4 * MIB);
	alloc(2 * MIB);
	int z = alloc(4 * MIB);
	int w = alloc(2 * MIB);
	mem_cuda_release(a, x);
	mem_cuda_release(a, z);
	/* x and z are both 4 MiB; the set orders them by address, so x is taken */
	alloc(4 * MIB);
	/* freeing w merges z, w and the free 8 MiB into 14 MiB, which serves 14 MiB exactly;
	 * had z been taken, the 14 MiB request would need a segment of its own */
	mem_cuda_release(a, w);
	alloc(14 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 1);
}

Test(memory_cuda, freed_neighbours_coalesce_into_one_block, .init = setup, .fini = teardown)
{
	/* [x 5][y 5][z 5][free 5] MiB */
	int x = alloc(5 * MIB), y = alloc(5 * MIB), z = alloc(5 * MIB);
	mem_cuda_release(a, x); /* no free neighbour */
	mem_cuda_release(a, z); /* merges with the free tail: 10 MiB */
	mem_cuda_release(a, y); /* merges both sides: the whole 20 MiB */
	/* 19 MiB fits only in the merged block; the 1 MiB left is not split off */
	int b = alloc(19 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
	EXPECT_INT(mem_cuda_block_size(a, b), 20 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 20 * MIB);
}

Test(memory_cuda, small_blocks_split_down_to_512_bytes_and_merge_back, .init = setup, .fini = teardown)
{
	/* 4096 small blocks of 512 bytes fill one 2 MiB segment exactly */
	static int blocks[4096];
	for (int i = 0; i < 4096; i++)
		blocks[i] = alloc(1);
	EXPECT_INT(mem_cuda_reserved(a), 2 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 2 * MIB);
	for (int i = 0; i < 4096; i += 2)
		mem_cuda_release(a, blocks[i]);
	for (int i = 1; i < 4096; i += 2)
		mem_cuda_release(a, blocks[i]);
	/* all merged back: one 1 MiB request and a second fit in the same segment */
	alloc(MIB);
	alloc(MIB);
	EXPECT_INT(mem_cuda_reserved(a), 2 * MIB);
}

Test(memory_cuda, fragmentation_reserves_more_than_is_allocated, .init = setup, .fini = teardown)
{
	/* [a 5][b 5][c 5][d 5] MiB fill a segment; freeing a and c leaves two 5 MiB holes */
	int x = alloc(5 * MIB);
	alloc(5 * MIB);
	int z = alloc(5 * MIB);
	alloc(5 * MIB);
	mem_cuda_release(a, x);
	mem_cuda_release(a, z);
	/* 10 MiB are free, but no one block holds 8 MiB: a second 20 MiB segment */
	alloc(8 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 18 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 40 * MIB);
	EXPECT_INT(mem_cuda_segments(a), 2);
}

Test(memory_cuda, a_scripted_step_has_the_peaks_worked_out_by_hand, .init = setup, .fini = teardown)
{
	/* 1000 B rounds to 1024 (multiple of 512); small pool, no free block: a 2 MiB segment (kSmallBuffer) */
	int p = alloc(1000);
	EXPECT_INT(mem_cuda_allocated(a), 1024);
	EXPECT_INT(mem_cuda_reserved(a), 2 * MIB);
	/* 3 MiB: large pool, < kMinLargeAlloc: a 20 MiB segment (kLargeBuffer), 17 MiB split off */
	int q = alloc(3 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 22 * MIB);
	/* 12 MiB + 100 B rounds to 12 MiB + 512; best fit is the free 17 MiB; 5 MiB - 512 remain (> 1 MiB: split) */
	int r = alloc(12 * MIB + 100);
	EXPECT_INT(mem_cuda_block_size(a, r), 12 * MIB + 512);
	EXPECT_INT(mem_cuda_reserved(a), 22 * MIB);
	/* 6 MiB: the only free large block (5 MiB - 512) is too small: another 20 MiB segment, 14 MiB split off */
	int s = alloc(6 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 1024 + 21 * MIB + 512);
	EXPECT_INT(mem_cuda_reserved(a), 42 * MIB);
	/* freeing q, then r merges q, r and the 5 MiB - 512 tail into the whole 20 MiB segment */
	mem_cuda_release(a, q);
	mem_cuda_release(a, r);
	EXPECT_INT(mem_cuda_allocated(a), 1024 + 6 * MIB);
	/* 20 MiB: best fit is that merged 20 MiB block (the other free one is 14 MiB), exact: no split */
	int t = alloc(20 * MIB);
	EXPECT_INT(mem_cuda_allocated(a), 1024 + 26 * MIB);
	EXPECT_INT(mem_cuda_reserved(a), 42 * MIB);
	/* 40 MiB + 1 rounds to 40 MiB + 512; no free block holds it: a segment of 42 MiB (kRoundLarge
	 * multiple), 2 MiB - 512 split off. Allocated peaks here: 1024 + 6 + 20 + 40 MiB + 512 */
	int u = alloc(40 * MIB + 1);
	EXPECT_INT(mem_cuda_allocated(a), 1024 + 66 * MIB + 512);
	EXPECT_INT(mem_cuda_reserved(a), 84 * MIB);
	mem_cuda_release(a, t);
	mem_cuda_release(a, u); /* merges with its 2 MiB - 512 tail: a free 42 MiB block */
	/* 1.5 MiB: best fit among 14, 20 and 42 MiB is the 14 MiB tail of s's segment; reserved stays */
	int v = alloc(3 * MIB / 2);
	EXPECT_INT(mem_cuda_block_size(a, v), 3 * MIB / 2);
	EXPECT_INT(mem_cuda_allocated(a), 1024 + 6 * MIB + 3 * MIB / 2);
	EXPECT_INT(mem_cuda_reserved(a), 84 * MIB);
	EXPECT_INT(mem_cuda_peak_allocated(a), 69207552); /* 1024 + 66 MiB + 512 */
	EXPECT_INT(mem_cuda_peak_reserved(a), 88080384);  /* 2 + 20 + 20 + 42 MiB */
	EXPECT_INT(mem_cuda_segments(a), 4);
	mem_cuda_release(a, p);
	mem_cuda_release(a, s);
	mem_cuda_release(a, v);
	EXPECT_INT(mem_cuda_allocated(a), 0);
	EXPECT_INT(mem_cuda_reserved(a), 84 * MIB); /* nothing goes back to the driver */
}

Test(memory_cuda, refuses_a_negative_or_exabyte_request_and_stays_unchanged, .init = setup, .fini = teardown)
{
	int block = 7;
	EXPECT_STATUS(mem_cuda_malloc(a, -1, &block, &err), TI_E_INVALID, err);
	EXPECT_INT(block, MEM_CUDA_NO_BLOCK);
	EXPECT_STATUS(mem_cuda_malloc(a, (int64_t)1 << 60, &block, &err), TI_E_LIMIT, err);
	EXPECT_STATUS(mem_cuda_malloc(a, INT64_MAX, &block, &err), TI_E_LIMIT, err);
	EXPECT_INT(mem_cuda_reserved(a), 0);
	/* just under 1 EiB is modelled like any other request */
	EXPECT_STATUS(mem_cuda_malloc(a, ((int64_t)1 << 60) - 1, &block, &err), TI_OK, err);
	EXPECT_INT(mem_cuda_reserved(a), (int64_t)1 << 60);
}

Test(memory_cuda, ignores_releases_of_blocks_that_are_not_live, .init = setup, .fini = teardown)
{
	int block = alloc(5 * MIB);
	mem_cuda_release(a, block);
	mem_cuda_release(a, block);   /* twice */
	mem_cuda_release(a, -5);
	mem_cuda_release(a, 1 << 20); /* never handed out */
	mem_cuda_release(a, block == 0 ? 1 : 0); /* the split's other id, merged back: not live */
	EXPECT_INT(mem_cuda_allocated(a), 0);
	EXPECT_INT(mem_cuda_block_size(a, block), 0);
	alloc(20 * MIB); /* the segment merged back whole */
	EXPECT_INT(mem_cuda_reserved(a), 20 * MIB);
}

/* A deterministic mix of 100k mallocs and frees: the sums stay consistent, and it is quick. */
Test(memory_cuda, a_long_random_ledger_keeps_its_sums, .init = setup, .fini = teardown)
{
	enum { OPS = 100000, LIVE = 2000 };
	static int live[LIVE];
	static int64_t live_size[LIVE];
	int nlive = 0;
	int64_t sum = 0, last_reserved = 0;
	uint64_t x = 88172645463325252ull;
	for (int op = 0; op < OPS; op++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bool do_free = nlive == LIVE || (nlive > 0 && (x & 3) == 0) || (nlive > LIVE / 2 && (x & 1));
		if (do_free) {
			int i = (int)((x >> 8) % (uint64_t)nlive);
			sum -= live_size[i];
			mem_cuda_release(a, live[i]);
			live[i] = live[nlive - 1];
			live_size[i] = live_size[nlive - 1];
			nlive--;
		} else {
			/* sizes from 1 B to 64 MiB, mostly small, as tensors are */
			int shift = (int)((x >> 20) % 27);
			int64_t bytes = (int64_t)((x >> 32) & ((1ull << shift) - 1)) + 1;
			int block = alloc(bytes);
			live[nlive] = block;
			live_size[nlive] = mem_cuda_block_size(a, block);
			cr_assert(live_size[nlive] >= mem_cuda_round(bytes), "op %d: block of %lld for %lld bytes", op,
			          (long long)live_size[nlive], (long long)bytes);
			sum += live_size[nlive];
			nlive++;
		}
		cr_assert(mem_cuda_allocated(a) == sum, "op %d: allocated %lld, live blocks sum to %lld", op,
		          (long long)mem_cuda_allocated(a), (long long)sum);
		cr_assert(mem_cuda_reserved(a) >= last_reserved, "op %d: reserved went down", op);
		cr_assert(mem_cuda_allocated(a) <= mem_cuda_reserved(a), "op %d: allocated past reserved", op);
		last_reserved = mem_cuda_reserved(a);
	}
	while (nlive > 0)
		mem_cuda_release(a, live[--nlive]);
	EXPECT_INT(mem_cuda_allocated(a), 0);
	cr_expect(mem_cuda_peak_allocated(a) <= mem_cuda_peak_reserved(a));
	EXPECT_INT(mem_cuda_peak_reserved(a), mem_cuda_reserved(a));
}

/* ---- cuDNN's convolution workspaces (rules.c, cudnn_workspace) ---- */

/* A float32 Conv2d without bias over x [N, cin, size, size], padding k / 2, traced with N bound. */
typedef struct conv_shape {
	int cin, cout, kernel, stride, groups, size, n;
} conv_shape;

static ti_model *conv_model(conv_shape k)
{
	char text[600];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", %d, %d, %d]}},"
	         " \"modules\": {\"conv\": {\"type\": \"Conv2d\", \"in_channels\": %d, \"out_channels\": %d,"
	         "   \"kernel_size\": %d, \"stride\": %d, \"padding\": %d, \"groups\": %d, \"bias\": false}},"
	         " \"graph\": [{\"out\": \"y\", \"call\": \"conv\", \"args\": [\"x\"]}]}",
	         k.cin, k.size, k.size, k.cin, k.cout, k.kernel, k.stride, k.kernel / 2, k.groups);
	const char *names[] = {"N"};
	int64_t values[] = {k.n};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 1};
	ti_model *m = NULL;
	ti_error_clear(&err);
	cr_assert(ti_model_open(text, strlen(text), &o, &m, &err) == TI_OK, "opening failed: %s", err.message);
	return m;
}

static const ti_memory_report *conv_estimate(ti_model *m, ti_memory_options o)
{
	const ti_memory_report *r = NULL;
	o.device = TI_MEMORY_CUDA;
	ti_error_clear(&err);
	cr_assert(ti_memory_estimate(m, &o, &r, &err) == TI_OK, "estimate failed: %s", err.message);
	return r;
}

static const ti_memory_uncertainty *named(const ti_memory_report *r, const char *name)
{
	for (size_t i = 0; i < r->uncertain_count; i++)
		if (!strcmp(r->uncertain[i].name, name))
			return &r->uncertain[i];
	return NULL;
}

/* The rules' tolerance around the least and the most peak, as uncertain.c widens them (5 %). */
static int64_t range_low(int64_t x)
{
	return x * 100 / 105;
}

static int64_t range_high(int64_t x)
{
	return (x * 100 + 94) / 95;
}

/* 64 -> 64 channels, 3x3, on two 8x8 maps: in and out 32 KiB each, the weight 144 KiB */
static const conv_shape conv64 = {64, 64, 3, 1, 1, 8, 2};
#define IN64 ((int64_t)2 * 64 * 8 * 8 * 4)
#define WEIGHT64 ((int64_t)64 * 64 * 9 * 4)

Test(memory_cuda, a_convolution_takes_its_input_output_and_weight_once_more_as_cudnns_workspace)
{
	ti_model *m = conv_model(conv64);
	const ti_memory_report *r = conv_estimate(m, (ti_memory_options){0});
	/* the weight, x and y live, and the tensor-core engine's transformed copies of all three beside them */
	EXPECT_INT(r->peak, 2 * (WEIGHT64 + IN64 + IN64));
	ti_model_close(m);
}

Test(memory_cuda, cudnns_workspace_range_runs_from_none_to_the_fft_engines_planes)
{
	ti_model *m = conv_model(conv64);
	const ti_memory_report *r = conv_estimate(m, (ti_memory_options){0});
	int64_t none = WEIGHT64 + IN64 + IN64;
	/* stride 1: an FFT engine may take it, 2 x (64 + 64) + 64 x 64 planes of 32x32 complex floats, half again:
	   more than 10 times in+out+w and 4 MiB (6.0 MiB) and im2col's columns (288 KiB) */
	int64_t fft = (2 * (64 + 64) + 64 * 64) * 32 * 32 * 12;
	/* the caching allocator gives it a segment rounded up to 2 MiB, whose 1 MiB rest is too small to split off */
	int64_t held = (fft + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
	EXPECT_INT(r->peak_low, range_low(none));
	EXPECT_INT(r->peak_high, range_high(none + held));
	const ti_memory_uncertainty *ws = named(r, "cudnn-workspace");
	cr_assert_not_null(ws, "cudnn-workspace is named");
	cr_expect(ws->covered, "the range holds it");
	cr_expect_not(r->peak_high_open);
	ti_model_close(m);
}

Test(memory_cuda, a_1x1_convolution_at_stride_1_is_a_plain_gemm_without_workspace)
{
	conv_shape k = {64, 64, 1, 1, 1, 8, 2};
	ti_model *m = conv_model(k);
	const ti_memory_report *r = conv_estimate(m, (ti_memory_options){0});
	EXPECT_INT(r->peak, (int64_t)64 * 64 * 4 + 2 * IN64);
	cr_expect_not_null(named(r, "cudnn-workspace"), "the search may still try an engine that takes some");
	ti_model_close(m);
}

Test(memory_cuda, a_depthwise_convolution_runs_pytorchs_own_kernel_and_takes_no_workspace)
{
	conv_shape k = {64, 64, 3, 1, 64, 8, 2};
	ti_model *m = conv_model(k);
	const ti_memory_report *r = conv_estimate(m, (ti_memory_options){.mode = TI_MEMORY_TRAIN});
	cr_expect_null(named(r, "cudnn-workspace"), "conv_depthwise2d, not cuDNN");
	ti_model_close(m);
}

Test(memory_cuda, a_first_convolution_of_three_channels_takes_none_forward_but_in_out_and_weight_backward)
{
	conv_shape k = {3, 64, 3, 2, 1, 32, 2}; /* stride 2: no FFT */
	int64_t in = 2 * 3 * 32 * 32 * 4, out = 2 * 64 * 16 * 16 * 4, weight = 64 * 3 * 9 * 4;
	ti_model *m = conv_model(k), *again = conv_model(k);
	const ti_memory_report *infer = conv_estimate(m, (ti_memory_options){0});
	EXPECT_INT(infer->peak, mem_cuda_round(weight) + in + out); /* channels the tensor cores cannot take */
	const ti_memory_report *train = conv_estimate(again, (ti_memory_options){.mode = TI_MEMORY_TRAIN});
	/* the backward's workspace: the input, the output's gradient and the weight transformed */
	cr_expect_geq(train->peak, mem_cuda_round(weight) + in + out + in + out + weight, "peak %lld",
	              (long long)train->peak);
	ti_model_close(m);
	ti_model_close(again);
}

Test(memory_cuda, the_benchmark_search_of_a_strided_convolution_bounds_split_k_weight_gradients)
{
	/* 256 -> 256 3x3 at stride 2 on eight 16x16 maps: the output 8x8, 512 images x positions */
	conv_shape k = {256, 256, 3, 2, 1, 16, 8};
	int64_t in = 8 * 256 * 16 * 16 * 4, out = 8 * 256 * 8 * 8 * 4, weight = 256 * 256 * 9 * 4;
	ti_model *m = conv_model(k), *searched = conv_model(k);
	const ti_memory_report *heuristic = conv_estimate(m, (ti_memory_options){0});
	const ti_memory_report *benchmark = conv_estimate(searched, (ti_memory_options){.cudnn_benchmark = true});
	/* the steady step runs the fastest plan, sized as the heuristic's */
	EXPECT_INT(benchmark->peak, heuristic->peak);
	/* without the search: 10 times in+out+w and 4 MiB, more than im2col's columns (4.5 MiB); with it a float32
	   weight for each of 512 splits. Each within the 2 MiB a large segment's unsplit rest can add. */
	int64_t most = 10 * (in + out + weight) + 4 * MIB, search = 4 * 256 * 256 * 9 * (int64_t)512;
	cr_expect_geq(heuristic->peak_high, range_high(weight + in + out + most));
	cr_expect_leq(heuristic->peak_high, range_high(weight + in + out + most + 2 * MIB));
	cr_expect_geq(benchmark->peak_high, range_high(weight + in + out + search));
	cr_expect_leq(benchmark->peak_high, range_high(weight + in + out + search + 2 * MIB));
	ti_model_close(m);
	ti_model_close(searched);
}

/* ---- nn.LSTM / GRU / RNN as aten._cudnn_rnn ---- */

/* x [N, T, input] -> Linear(input, input) -> a batch_first recurrent layer; its output y is the model's. */
static const char *recurrent =
	"{\"inputs\": {\"x\": {\"shape\": [%d, %d, %d]}},"
	" \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": %d, \"out_features\": %d},"
	"   \"rnn\": {\"type\": \"%s\", \"input_size\": %d, \"hidden_size\": %d, \"num_layers\": %d,"
	"     \"batch_first\": true, \"bidirectional\": %s, \"dropout\": %s}},"
	" \"graph\": [{\"out\": \"e\", \"call\": \"fc\", \"args\": [\"x\"]},"
	"   {\"out\": [\"y\", \"h\"], \"call\": \"rnn\", \"args\": [\"e\"]}], \"outputs\": [\"y\"]}";

typedef struct rnn_case {
	const char *type;
	int n, t, input, hidden, layers;
	bool bidirectional;
	const char *dropout;
} rnn_case;

static const ti_memory_report *rnn_report(rnn_case k, ti_memory_options o, ti_model **m)
{
	char text[1024];
	snprintf(text, sizeof(text), recurrent, k.n, k.t, k.input, k.input, k.input, k.type, k.input, k.hidden, k.layers,
	         k.bidirectional ? "true" : "false", k.dropout);
	ti_model_options mo = {0};
	ti_error_clear(&err);
	cr_assert(ti_model_open(text, strlen(text), &mo, m, &err) == TI_OK, "opening failed: %s", err.message);
	const ti_memory_report *r = NULL;
	cr_assert(ti_memory_estimate(*m, &o, &r, &err) == TI_OK, "estimate failed: %s", err.message);
	return r;
}

/* The forward point of the recurrent layer's unit: its index in the timeline. */
static size_t rnn_point(const ti_memory_report *r)
{
	for (size_t i = 1; i < r->point_count; i++)
		if (r->timeline[i].phase == TI_PHASE_FORWARD && strstr(r->timeline[i].step, "_cudnn_rnn"))
			return i;
	cr_assert_fail("no _cudnn_rnn step in the forward");
	return 0;
}

/* lstm_tagger's recurrent layer at N 16, T 64 (fixtures/models/lstm_tagger.json) */
static const rnn_case tagger = {"LSTM", 16, 64, 100, 128, 2, true, "0.25"};

Test(memory_cuda, a_two_layer_bidirectional_lstm_with_dropout_keeps_the_reserve_the_formula_gives)
{
	ti_model *m;
	const ti_memory_report *r =
		rnn_report(tagger, (ti_memory_options){.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD,
		                                       .device = TI_MEMORY_CUDA}, &m);
	/* 256 + 4 bytes x N 16 x T 64 x D*H 256 x (5 + 6), and the dropout's mask between the layers, a bit for each
	   of D x D x N x T x H: 11,600,128 bytes, the result3 lstm_tagger's profile measured */
	int64_t reserve = 256 + 4 * 16 * 64 * 256 * (5 + 6) + 2 * 2 * 16 * 64 * 128 / 8;
	EXPECT_INT(reserve, 11600128);
	/* CudnnRnnBackward0 saves input (the Linear's output), result0 (y), result3 (the reserve) and hx and cx,
	   the zeros the module made: what is saved at the end of the forward */
	int64_t e = 16 * 64 * 100 * 4, y = 16 * 64 * 256 * 4, zeros = 2 * (2 * 2 * 16 * 128 * 4); /* 2 layers x D 2 */
	EXPECT_INT(r->activations, e + y + reserve + zeros);
	ti_model_close(m);
}

Test(memory_cuda, a_recurrent_layers_inference_scratch_is_the_workspace_the_x_copy_and_h0)
{
	ti_model *m;
	const ti_memory_report *r = rnn_report(tagger, (ti_memory_options){.device = TI_MEMORY_CUDA}, &m);
	size_t i = rnn_point(r);
	/* the workspace: the floor (8 MiB a layer and direction, 4 here, and the 2,523,136-byte weight buffer) and
	   the grid's 2057 bytes a token, direction and element byte at H 128 with two directions (measured:
	   52,494,848, 0.8 % under); the batch_first input's time-major copy; h0 and c0 */
	int64_t ws = 4 * 8 * MIB + 2523136 + (int64_t)2057 * 16 * 64 * 2 * 4;
	EXPECT_INT(r->timeline[i].high - r->timeline[i].live, ws + 16 * 64 * 100 * 4 + 2 * 2 * 2 * 16 * 128 * 4);
	ti_model_close(m);
}

/*
 * Grid rows (probe_grids_h200.json.gz), inference: what was live before the call (the weights and x, each
 * rounded to 512 bytes) and the call's measured peak above it. The first is the grid's widest miss: an fp16
 * LSTM whose workspace, 425 MiB, is three and a half times the median the estimate plays; the range's
 * ceiling holds it.
 */
static const struct grid_row {
	rnn_case k;
	bool half;
	int64_t weights, x, fwd_peak;
} grid_rows[] = {
	{{"LSTM", 64, 300, 512, 512, 1, false, "0.0"}, true, 4202496, 19660800, 485229568},
	{{"GRU", 64, 300, 256, 128, 2, true, "0.0"}, false, 2371584, 19660800, 331744256},
};

Test(memory_cuda, the_range_holds_the_peak_the_grid_measured)
{
	for (size_t i = 0; i < sizeof(grid_rows) / sizeof(grid_rows[0]); i++) {
		const struct grid_row *g = &grid_rows[i];
		ti_memory_options o = {.device = TI_MEMORY_CUDA, .dtype = g->half ? TI_DT_FLOAT16 : 0};
		ti_model *m;
		/* the grid's layer without the Linear before it: x is the input */
		char text[1024];
		snprintf(text, sizeof(text),
		         "{\"inputs\": {\"x\": {\"shape\": [%d, %d, %d]}}, \"modules\": {\"rnn\": {\"type\": \"%s\","
		         " \"input_size\": %d, \"hidden_size\": %d, \"num_layers\": %d, \"batch_first\": true,"
		         " \"bidirectional\": %s}}, \"graph\": [{\"out\": [\"y\", \"h\"], \"call\": \"rnn\", \"args\": [\"x\"]}],"
		         " \"outputs\": [\"y\"]}", g->k.n, g->k.t, g->k.input, g->k.type, g->k.input, g->k.hidden, g->k.layers,
		         g->k.bidirectional ? "true" : "false");
		ti_model_options mo = {0};
		ti_error_clear(&err);
		cr_assert(ti_model_open(text, strlen(text), &mo, &m, &err) == TI_OK, "%s", err.message);
		const ti_memory_report *r = NULL;
		cr_assert(ti_memory_estimate(m, &o, &r, &err) == TI_OK, "%s", err.message);
		int64_t measured = mem_cuda_round(g->weights) + mem_cuda_round(g->x) + g->fwd_peak;
		cr_expect(r->peak_low <= measured && measured <= r->peak_high,
		          "%s: the measured %lld bytes outside %lld to %lld", g->k.type, (long long)measured,
		          (long long)r->peak_low, (long long)r->peak_high);
		cr_expect_not(r->peak_high_open);
		ti_model_close(m);
	}
}

Test(memory_cuda, training_dropout_between_layers_keeps_cudnns_dropout_state_from_the_start)
{
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .device = TI_MEMORY_CUDA};
	rnn_case plain = tagger;
	plain.dropout = "0.0";
	ti_model *a, *b;
	const ti_memory_report *with = rnn_report(tagger, o, &a), *without = rnn_report(plain, o, &b);
	/* get_dropout_state's buffer, cudnnDropoutGetStatesSize on the H200: 6,488,064 bytes (measured), live before
	   the step's first call; and the reserve's mask between the layers, saved */
	EXPECT_INT(with->timeline[rnn_point(with) - 1].live - without->timeline[rnn_point(without) - 1].live, 6488064);
	EXPECT_INT(with->activations - without->activations, 2 * 2 * 16 * 64 * 128 / 8);
	ti_model_close(a);
	ti_model_close(b);
}
