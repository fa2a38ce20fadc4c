/*
 * philox.h - Philox4x32-10, the counter-based generator of Random123 (internal to src/materialize/).
 *
 * Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
 * 3" (SC11). A block of four 32-bit words is a pure function of a 128-bit
 * counter and a 64-bit key: ten rounds of two 32x32->64 multiplications
 * (0xD2511F53, 0xCD9E8D57) with the key bumped by the Weyl constants
 * (0x9E3779B9, 0xBB67AE85) between rounds. These are the constants and the
 * round order of Random123's philox4x32_R(10, ...), of cuRAND's
 * curandStatePhilox4_32_10_t and of PyTorch's CUDA generator, and the output
 * matches Random123's known-answer vectors (tests/unit/test_fill.c).
 *
 * No state, no allocation: any element of any stream can be computed alone,
 * which is what makes fills independent of chunking and of thread count.
 */
#ifndef TINSPECT_MATERIALIZE_PHILOX_H
#define TINSPECT_MATERIALIZE_PHILOX_H

#include <stdint.h>

/* One block: out[0..3] = Philox4x32-10(counter[0..3], key[0..1]). */
void ti_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Blocks computed by one call of ti_philox4x32_10_batch(). */
#define TI_PHILOX_BATCH 16

/*
 * TI_PHILOX_BATCH consecutive blocks, b = first, first + 1, ...: the counter of
 * block b is {b mod 2^32, b / 2^32, high mod 2^32, high / 2^32}, and
 * out[4j + k] is word k of block first + j, as ti_philox4x32_10() computes it
 * (the count wraps past 2^64). The blocks are computed side by side, in loops
 * the compiler vectorises.
 */
void ti_philox4x32_10_batch(uint64_t first, uint64_t high, const uint32_t key[2],
                            uint32_t out[4 * TI_PHILOX_BATCH]);

#endif
