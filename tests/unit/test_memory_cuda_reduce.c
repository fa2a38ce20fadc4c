/*
 * test_memory_cuda_reduce.c - the scratch of PyTorch's CUDA reduction kernel
 * (cuda_reduce.c): each figure below is a sum measured on an H200 with
 * PyTorch 2.11 (tests/device/measured/probe_profile_h200.json.gz: the op's
 * peak above what it left allocated), which setReduceConfig's layout gives
 * to the byte.
 */
#include "memory/memory_internal.h"
#include "unit.h"

Test(memory_cuda_reduce, a_bias_gradient_over_2048_rows_of_2048_takes_twice_its_input)
{
	/* grad_output [2048, 2048] float32 summed over rows: 32 blocks an output, 32 lanes x 4 vector elements */
	EXPECT_INT(mem_cuda_reduce_scratch(2048, 2048, MEM_REDUCE_ROWS, 2048, 4), 33554944);
}

Test(memory_cuda_reduce, vit_s_bias_gradients_at_batch_8_take_what_the_h200_measured)
{
	EXPECT_INT(mem_cuda_reduce_scratch(384, 1576, MEM_REDUCE_ROWS, 384, 4), 4915712);
	EXPECT_INT(mem_cuda_reduce_scratch(1536, 1576, MEM_REDUCE_ROWS, 1536, 4), 19661312);
	EXPECT_INT(mem_cuda_reduce_scratch(1152, 1576, MEM_REDUCE_ROWS, 1152, 4), 14746112);
	EXPECT_INT(mem_cuda_reduce_scratch(512, 2048, MEM_REDUCE_ROWS, 512, 4), 8389120);
}

Test(memory_cuda_reduce, short_columns_reduce_within_a_block_and_take_nothing)
{
	/* [197, 384] and [128, 2048]: too few values a thread to split them across blocks */
	EXPECT_INT(mem_cuda_reduce_scratch(384, 197, MEM_REDUCE_ROWS, 384, 4), 0);
	EXPECT_INT(mem_cuda_reduce_scratch(2048, 128, MEM_REDUCE_ROWS, 2048, 4), 0);
	EXPECT_INT(mem_cuda_reduce_scratch(384 * 197, 8, MEM_REDUCE_ROWS, 384, 4), 0);
}

Test(memory_cuda_reduce, a_whole_tensor_summed_to_a_scalar_takes_two_small_blocks)
{
	/* [64, 2, 64, 64] and [8, 256, 512] to one value: a 512-byte buffer and 512 bytes of semaphores */
	EXPECT_INT(mem_cuda_reduce_scratch(1, 64 * 2 * 64 * 64, MEM_REDUCE_FASTEST, 1, 4), 1024);
	EXPECT_INT(mem_cuda_reduce_scratch(1, 8 * 256 * 512, MEM_REDUCE_FASTEST, 1, 4), 1024);
	/* and a small one within one block: nothing */
	EXPECT_INT(mem_cuda_reduce_scratch(1, 1000, MEM_REDUCE_FASTEST, 1, 4), 0);
}

Test(memory_cuda_reduce, the_expanded_gradient_of_a_sum_loads_no_vectors_and_takes_less)
{
	/* Linear(128, 1000) under out.sum() at 4096 rows: 16 blocks an output of 32 lanes, no vectors */
	EXPECT_INT(mem_cuda_reduce_scratch(1000, 4096, MEM_REDUCE_BROADCAST, 1000, 4), 2048000 + 512);
	EXPECT_INT(mem_cuda_reduce_scratch(1000, 4096, MEM_REDUCE_ROWS, 1000, 4), 32768000 + 512);
}

Test(memory_cuda_reduce, an_odd_column_count_loads_narrower_vectors)
{
	/* 1002 columns: vectors of 2, blocks of 32 x 8 threads, 16 blocks of outputs, 32 blocks an output:
	   4 B x 1002 outputs x 32 x 32 lanes x 2 = 8,208,384, and 64 B of semaphores rounded to 512 */
	EXPECT_INT(mem_cuda_reduce_scratch(1002, 4096, MEM_REDUCE_ROWS, 1002, 4), 8208384 + 512);
}

Test(memory_cuda_reduce, nothing_to_reduce_takes_nothing)
{
	EXPECT_INT(mem_cuda_reduce_scratch(0, 4096, MEM_REDUCE_ROWS, 1, 4), 0);
	EXPECT_INT(mem_cuda_reduce_scratch(4096, 1, MEM_REDUCE_ROWS, 4096, 4), 0);
}
