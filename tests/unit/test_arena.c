/*
 * test_arena.c - the bump allocator: zeroed, aligned, and never past its ceiling.
 */
#include <stdlib.h>

#include "unit.h"

Test(arena, hands_out_zeroed_aligned_memory)
{
	ti_arena a;
	ti_arena_init(&a, 1 << 20);
	for (size_t size = 1; size < 200; size += 7) {
		unsigned char *p = ti_arena_alloc(&a, size);
		cr_assert(p != NULL, "alloc of %zu bytes failed", size);
		EXPECT_INT((uintptr_t)p % 16, 0);
		for (size_t i = 0; i < size; i++)
			cr_expect(p[i] == 0, "byte %zu of a %zu-byte allocation is 0x%02x, want 0", i, size, p[i]);
		memset(p, 0xaa, size);
	}
	ti_arena_release(&a);
}

Test(arena, refuses_an_allocation_past_its_ceiling)
{
	ti_arena a;
	ti_arena_init(&a, 1000);
	cr_expect(ti_arena_alloc(&a, 2000) == NULL, "a 2000-byte allocation passed a 1000-byte ceiling");
	cr_expect(ti_arena_alloc(&a, 512) != NULL, "a 512-byte allocation failed under a 1000-byte ceiling");
	cr_expect(ti_arena_alloc(&a, 512) == NULL, "a second 512-byte allocation passed a 1000-byte ceiling");
	cr_expect(a.reserved <= 1000, "reserved %zu bytes, past the 1000-byte ceiling", a.reserved);
	ti_arena_release(&a);
	EXPECT_INT(a.reserved, 0);
	EXPECT_INT(a.used, 0);
}

Test(arena, a_zero_ceiling_allows_nothing)
{
	ti_arena a;
	ti_arena_init(&a, 0);
	cr_expect(ti_arena_alloc(&a, 1) == NULL);
	cr_expect(ti_arena_strdup(&a, "") == NULL);
	ti_arena_release(&a);
}

Test(arena, calloc_refuses_an_overflowing_count)
{
	ti_arena a;
	ti_arena_init(&a, 1 << 20);
	cr_expect(ti_arena_calloc(&a, SIZE_MAX / 2, 4) == NULL, "an overflowing calloc succeeded");
	cr_expect(ti_arena_alloc(&a, SIZE_MAX) == NULL, "a SIZE_MAX allocation succeeded");
	cr_expect(ti_arena_alloc(&a, SIZE_MAX - 8) == NULL, "a SIZE_MAX - 8 allocation succeeded");
	cr_expect(ti_arena_strndup(&a, "x", SIZE_MAX) == NULL, "a SIZE_MAX strndup succeeded");
	int *ints = ti_arena_calloc(&a, 10, sizeof(int));
	cr_assert(ints != NULL);
	EXPECT_INT(ints[9], 0);
	ti_arena_release(&a);
}

Test(arena, copies_strings)
{
	ti_arena a;
	ti_arena_init(&a, 1 << 20);
	EXPECT_STR(ti_arena_strdup(&a, "hello"), "hello");
	EXPECT_STR(ti_arena_strndup(&a, "hello", 3), "hel");
	EXPECT_STR(ti_arena_printf(&a, "%s/%d", "data", 7), "data/7");
	ti_arena_release(&a);
}

Test(arena, grows_past_one_block)
{
	/* more than the first 64 KiB block, in small pieces */
	ti_arena a;
	ti_arena_init(&a, 1 << 24);
	for (int i = 0; i < 10000; i++)
		cr_assert(ti_arena_alloc(&a, 100) != NULL, "allocation %d failed", i);
	cr_expect(a.used >= 10000 * 100, "used %zu bytes, want at least 1000000", a.used);
	cr_expect(a.reserved >= a.used, "reserved %zu < used %zu", a.reserved, a.used);
	ti_arena_release(&a);
}
