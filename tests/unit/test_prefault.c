/*
 * test_prefault.c - mapping a buffer's pages at once leaves what it holds
 * alone, whatever its alignment and size, and a refusal is harmless.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "util/prefault.h"

Test(prefault, a_buffer_keeps_its_bytes_whatever_its_alignment)
{
	size_t n = 300 * 1024;
	unsigned char *buf = malloc(n + 64);
	cr_assert(buf != NULL);
	for (size_t i = 0; i < n + 64; i++)
		buf[i] = (unsigned char)(i * 31 + 7);
	for (size_t shift = 0; shift < 64; shift += 13) /* unaligned starts and ends */
		ti_prefault(buf + shift, n - shift);
	for (size_t i = 0; i < n + 64; i++)
		if (buf[i] != (unsigned char)(i * 31 + 7))
			cr_assert_fail("byte %zu changed to 0x%02x", i, buf[i]);
	free(buf);
}

Test(prefault, fresh_memory_stays_zero_and_takes_writes)
{
	size_t n = 1 << 20;
	unsigned char *buf = calloc(1, n);
	cr_assert(buf != NULL);
	ti_prefault(buf, n);
	for (size_t i = 0; i < n; i += 4096)
		if (buf[i])
			cr_assert_fail("byte %zu of fresh memory is 0x%02x after prefaulting", i, buf[i]);
	memset(buf, 0xab, n);
	EXPECT_INT(buf[n - 1], 0xab);
	free(buf);
}

Test(prefault, null_small_and_empty_buffers_are_left_alone)
{
	ti_prefault(NULL, 1 << 20);
	char small[100] = "kept";
	ti_prefault(small, sizeof(small));
	ti_prefault(small, 0);
	cr_expect_str_eq(small, "kept");
}
