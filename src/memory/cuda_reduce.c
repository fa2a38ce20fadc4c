/*
 * cuda_reduce.c - the scratch of PyTorch's CUDA reduction kernel.
 *
 * A sum or mean on CUDA runs gpu_reduce_kernel (aten/src/ATen/native/cuda/
 * Reduce.cuh). setReduceConfig lays the reduction out on thread blocks;
 * when each output's inputs are many and the outputs few, it splits the
 * inputs of an output across several blocks (ctas_per_output) that meet in
 * global memory: gpu_reduce_kernel then asks the caching allocator for a
 * buffer of config.global_memory_size() bytes and for semaphore_size()
 * bytes of semaphores, and lets both go when the kernel is queued. The
 * buffer holds a partial result per output and block, and, where the
 * reduced dimension is not the fastest-moving one (a Linear bias's
 * gradient: grad_output [M, C] summed over M), one per lane and vector
 * element too: twice the input for a [2048, 2048] sum over rows.
 *
 * The layout depends on the GPU through target_grid_size, multiProcessorCount
 * times maxThreadsPerMultiProcessor / num_threads; the figures below are the
 * H100's and H200's (132 multiprocessors of 2048 threads), which the
 * committed measurements were taken on. It binds only where few outputs
 * leave the grid smaller than the machine and the per-thread work is short.
 * Checked against PyTorch 2.11 on an H200: every sum of the measured
 * profiles (35 distinct shapes, tests/device/measured/) to the byte.
 */
#include "memory/memory_internal.h"

#include "memory/cuda_alloc.h"

enum {
	CUDA_SMS = 132,              /* multiProcessorCount: H100 SXM, H200 */
	CUDA_THREADS_PER_SM = 2048,  /* maxThreadsPerMultiProcessor: sm_80, sm_90 */
	WARP = 32,                   /* at::cuda::warp_size() */
	MAX_THREADS = 512,           /* mnt_wrapper<T>::MAX_NUM_THREADS, every real dtype */
	INPUT_VEC = 4,               /* ReduceConfig::input_vec_size, and vt0 */
	MIN_VALUES_PER_THREAD = 16,
	MAX_VALUES_PER_THREAD = 256,
};

static int64_t div_up(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* floor(log2(n)) as a power of two, at least 1 (Reduce.cuh's last_pow2). */
static int64_t last_pow2(int64_t n)
{
	int64_t p = 1;
	while (p * 2 <= n)
		p *= 2;
	return p;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

int64_t mem_cuda_reduce_scratch(int64_t outputs, int64_t inputs_per_output, mem_reduce_layout layout,
                                int64_t inner, int acc_size)
{
	if (outputs <= 0 || inputs_per_output <= 1)
		return 0;
	bool fastest = layout == MEM_REDUCE_FASTEST;
	/* dim0 is the block's x: the reduced dimension when it moves fastest, else the outputs */
	int64_t dim0 = fastest ? inputs_per_output : outputs, dim1 = fastest ? outputs : inputs_per_output;
	int64_t out_vec = 1;
	if (fastest) {
		if (dim0 > 128)
			dim0 /= INPUT_VEC; /* "vectorize along input" */
	} else if (layout == MEM_REDUCE_ROWS) {
		out_vec = INPUT_VEC; /* get_output_vec_size: halved until it divides the kept inner size */
		while (out_vec > 1 && inner % out_vec)
			out_vec /= 2;
		dim0 /= out_vec;
	} /* MEM_REDUCE_BROADCAST: every stride 0, no vectorized loads */
	/* set_block_dimension */
	int64_t max_threads = MAX_THREADS / out_vec;
	int64_t d0 = dim0 < max_threads ? last_pow2(dim0) : max_threads;
	int64_t d1 = dim1 < max_threads ? last_pow2(dim1) : max_threads;
	int64_t width = min64(d0, WARP);
	int64_t height = min64(d1, max_threads / width);
	width = min64(d0, max_threads / height);
	int64_t threads = width * height;

	int64_t step_input = 1, step_output = 1;
	if (fastest)
		step_input *= width; /* split the input across lanes */
	else
		step_output *= width; /* split the outputs across lanes */
	bool split_warps = div_up(inputs_per_output, step_input) >= height * MIN_VALUES_PER_THREAD ||
	                   div_up(inputs_per_output, step_input) >= MAX_VALUES_PER_THREAD;
	if (split_warps)
		step_input *= height;
	else
		step_output *= height;

	int64_t target = (int64_t)CUDA_SMS * (CUDA_THREADS_PER_SM / threads);
	int64_t grid = div_up(outputs / out_vec, step_output);
	int64_t values = div_up(inputs_per_output, step_input);
	if (!split_warps || values < MAX_VALUES_PER_THREAD || grid > target)
		return 0;
	int64_t ctas = min64(div_up(target, grid), div_up(values, MIN_VALUES_PER_THREAD));
	if (ctas < div_up(values, MAX_VALUES_PER_THREAD))
		ctas = div_up(values, MAX_VALUES_PER_THREAD);
	if (ctas <= 1)
		return 0;
	/* global_memory_size: a partial result per output and block (and lane and vector element) */
	int64_t buffer;
	if (!mem_mul((int64_t)acc_size, outputs, &buffer) || !mem_mul(buffer, ctas, &buffer) ||
	    (!fastest && !mem_mul(buffer, width * out_vec, &buffer)))
		return TI_MEMORY_MAX_BYTES;
	return mem_cuda_round(buffer) + mem_cuda_round(4 * grid); /* and an int semaphore a block of outputs */
}
