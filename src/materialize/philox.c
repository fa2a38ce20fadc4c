/*
 * philox.c - Philox4x32-10 (see philox.h for the source of the constants).
 */
#include "materialize/philox.h"
#include "util/vec.h"

#define PHILOX_M0 UINT32_C(0xD2511F53)
#define PHILOX_M1 UINT32_C(0xCD9E8D57)
#define PHILOX_W0 UINT32_C(0x9E3779B9) /* the golden ratio */
#define PHILOX_W1 UINT32_C(0xBB67AE85) /* sqrt(3) - 1 */
#define PHILOX_ROUNDS 10

void ti_philox4x32_10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
	uint32_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
	uint32_t k0 = key[0], k1 = key[1];
	for (int round = 0; round < PHILOX_ROUNDS; round++) {
		if (round) {
			k0 += PHILOX_W0;
			k1 += PHILOX_W1;
		}
		uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
		uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
		uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
		c0 = n0;
		c1 = n1;
		c2 = n2;
		c3 = n3;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

TI_AVX2_CLONES void ti_philox4x32_10_batch(uint64_t first, uint64_t high, const uint32_t key[2],
                            uint32_t out[4 * TI_PHILOX_BATCH])
{
	/* one array per word, one element per block: each round is one loop over the blocks */
	uint32_t c0[TI_PHILOX_BATCH], c1[TI_PHILOX_BATCH], c2[TI_PHILOX_BATCH], c3[TI_PHILOX_BATCH];
	for (int j = 0; j < TI_PHILOX_BATCH; j++) {
		uint64_t b = first + (uint64_t)j;
		c0[j] = (uint32_t)b;
		c1[j] = (uint32_t)(b >> 32);
		c2[j] = (uint32_t)high;
		c3[j] = (uint32_t)(high >> 32);
	}
	uint32_t k0 = key[0], k1 = key[1];
	for (int round = 0; round < PHILOX_ROUNDS; round++) {
		for (int j = 0; j < TI_PHILOX_BATCH; j++) {
			uint64_t p0 = (uint64_t)PHILOX_M0 * c0[j], p1 = (uint64_t)PHILOX_M1 * c2[j];
			uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ k1;
			c0[j] = n0;
			c1[j] = (uint32_t)p1;
			c2[j] = n2;
			c3[j] = (uint32_t)p0;
		}
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	for (int j = 0; j < TI_PHILOX_BATCH; j++) {
		out[4 * j] = c0[j];
		out[4 * j + 1] = c1[j];
		out[4 * j + 2] = c2[j];
		out[4 * j + 3] = c3[j];
	}
}
