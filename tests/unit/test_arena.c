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
		EXPECT_INT((uintptr_t)p % 8, 0);
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

Test(arena, a_growing_array_moves_to_the_heap_and_keeps_its_items)
{
	/* past 4 KiB an array is a buffer of its own: its items must survive each move */
	ti_arena a;
	ti_arena_init(&a, 1 << 24);
	uint64_t *items = NULL;
	size_t capacity = 0;
	for (size_t i = 0; i < 100000; i++) {
		cr_assert(ti_arena_array_grow(&a, (void **)&items, &capacity, sizeof(*items), i + 1) == 0,
		          "growing to %zu items failed", i + 1);
		items[i] = i * 7;
	}
	cr_expect(capacity >= 100000, "capacity %zu after 100000 items", capacity);
	for (size_t i = 0; i < 100000; i++)
		if (items[i] != i * 7)
			cr_assert_fail("item %zu: got %" PRIu64 ", want %zu", i, items[i], i * 7);
	cr_expect(a.reserved >= 100000 * sizeof(*items), "reserved %zu bytes for 800000 bytes of items", a.reserved);
	ti_arena_release(&a);
	EXPECT_INT(a.reserved, 0);
}

Test(arena, a_growing_array_stops_at_the_ceiling_and_keeps_what_it_had)
{
	ti_arena a;
	ti_arena_init(&a, 64 * 1024);
	uint32_t *items = NULL;
	size_t capacity = 0, n = 0;
	while (ti_arena_array_grow(&a, (void **)&items, &capacity, sizeof(*items), n + 1) == 0)
		items[n] = (uint32_t)n, n++;
	cr_expect(n > 1000 && n < 64 * 1024 / 4, "the array stopped at %zu items under a 64 KiB ceiling", n);
	cr_expect(a.reserved <= 64 * 1024, "reserved %zu bytes, past the 64 KiB ceiling", a.reserved);
	for (size_t i = 0; i < n; i++)
		if (items[i] != i)
			cr_assert_fail("item %zu changed to %u when growing failed", i, items[i]);
	ti_arena_release(&a);
}

Test(arena, arrays_start_zeroed_whatever_their_size)
{
	ti_arena a;
	ti_arena_init(&a, 1 << 20);
	for (size_t count = 1; count < 4000; count *= 3) {
		unsigned char *p = ti_arena_array(&a, count, 8);
		cr_assert(p != NULL);
		for (size_t i = 0; i < count * 8; i++)
			if (p[i])
				cr_assert_fail("byte %zu of a %zu-item array is 0x%02x", i, count, p[i]);
	}
	cr_expect(ti_arena_array(&a, SIZE_MAX / 4, 8) == NULL, "an overflowing array was made");
	ti_arena_release(&a);
}

Test(arena, a_recycled_block_comes_back_zeroed)
{
	ti_arena a;
	ti_arena_init(&a, 1 << 20);
	unsigned char *p = ti_arena_alloc(&a, 24);
	cr_assert(p != NULL);
	memset(p, 0xaa, 24);
	ti_arena_recycle(&a, p, 24);
	unsigned char *q = ti_arena_alloc(&a, 24);
	cr_assert(q != NULL);
#if !TI_ARENA_ASAN
	/* Under AddressSanitizer a recycled block stays poisoned instead, to catch a dangling pointer. */
	cr_expect(q == p, "the recycled block was not given out again");
#endif
	for (size_t i = 0; i < 24; i++)
		cr_expect(q[i] == 0, "byte %zu of a reused block is 0x%02x, want 0", i, q[i]);
	/* A block of another size does not take it. */
	unsigned char *r = ti_arena_alloc(&a, 32);
	cr_expect(r != NULL && r != p);
	ti_arena_release(&a);
}

Test(arena, past_two_mib_it_grows_by_huge_blocks_zeroed_and_under_its_ceiling)
{
	enum { PIECE = 1000, PIECES = 12000 }; /* 12 MB: small blocks, then huge ones */
	ti_arena a;
	ti_arena_init(&a, (size_t)64 << 20);
	unsigned char *first = NULL, *last = NULL;
	for (int i = 0; i < PIECES; i++) {
		unsigned char *p = ti_arena_alloc(&a, PIECE);
		cr_assert(p != NULL, "piece %d failed", i);
		for (size_t k = 0; k < PIECE; k += 97)
			cr_assert(p[k] == 0, "byte %zu of piece %d is 0x%02x, want 0", k, i, p[k]);
		memset(p, 0x5a, PIECE);
		first = first ? first : p;
		last = p;
	}
	cr_expect(first[0] == 0x5a && last[PIECE - 1] == 0x5a, "pieces lost what was written to them");
	cr_expect(a.used >= (size_t)PIECE * PIECES && a.reserved <= a.limit, "used %zu, reserved %zu", a.used, a.reserved);
	ti_arena_release(&a);
	EXPECT_INT(a.reserved, 0);

	/* a ceiling with no room for a huge block: small blocks up to it, as before */
	ti_arena_init(&a, (size_t)3 << 20);
	size_t got = 0;
	while (ti_arena_alloc(&a, PIECE))
		got += PIECE;
	cr_expect(got > ((size_t)5 << 19) && a.reserved <= a.limit, "got %zu bytes, reserved %zu under 3 MiB", got, a.reserved);
	ti_arena_release(&a);
}

Test(arena, grows_by_huge_blocks_while_a_megabyte_is_expected_and_by_small_ones_after)
{
	ti_arena a;
	ti_arena_init(&a, (size_t)64 << 20);
	ti_arena_expect(&a, (size_t)3 << 20);
	cr_assert(ti_arena_alloc(&a, 100) != NULL);
	size_t huge = a.reserved;
	cr_expect(huge >= ((size_t)2 << 20) - 64, "expecting 3 MiB, the first block holds %zu bytes, want a 2 MiB one", huge);
	/* fill it: the next block is taken when 1 MiB or less is still expected, a small one */
	while (a.reserved == huge)
		cr_assert(ti_arena_alloc(&a, 1000) != NULL);
	cr_expect(a.reserved - huge >= ((size_t)2 << 20) - 64, "with 1 MiB still expected, grew by %zu", a.reserved - huge);
	ti_arena_expect(&a, 1000);
	size_t before = a.reserved;
	while (a.reserved == before)
		cr_assert(ti_arena_alloc(&a, 1000) != NULL);
	cr_expect(a.reserved - before <= (size_t)256 << 10, "with little expected, grew by %zu, want a small block", a.reserved - before);
	ti_arena_release(&a);
}

Test(arena, a_huge_block_mapped_where_a_released_one_held_recycled_pieces_is_usable)
{
	/* Under AddressSanitizer a recycled piece is poisoned: its huge block must not leave that to the next mapping. */
	for (int round = 0; round < 3; round++) {
		ti_arena a;
		ti_arena_init(&a, (size_t)64 << 20);
		ti_arena_expect(&a, (size_t)8 << 20);
		for (int i = 0; i < 4000; i++) {
			unsigned char *p = ti_arena_alloc(&a, 64);
			cr_assert(p != NULL);
			memset(p, 1, 64);
			if (i % 2)
				ti_arena_recycle(&a, p, 64);
		}
		ti_arena_release(&a);
	}
}

Test(arena, arrays_growing_side_by_side_past_64_kib_keep_their_items_and_are_all_freed)
{
	/* from 64 KiB a buffer is mapped and grows by mremap: three growing in turn
	 * move past each other, and each must keep its items and its place in the list */
	ti_arena a;
	ti_arena_init(&a, 1 << 26);
	uint32_t *items[3] = {NULL, NULL, NULL};
	size_t capacity[3] = {0, 0, 0};
	for (uint32_t i = 0; i < 300000; i++)
		for (int k = 0; k < 3; k++) {
			cr_assert(ti_arena_array_grow(&a, (void **)&items[k], &capacity[k], sizeof(uint32_t), i + 1) == 0,
			          "growing array %d to %u items failed", k, i + 1);
			items[k][i] = i * 3 + (uint32_t)k;
		}
	for (int k = 0; k < 3; k++)
		for (uint32_t i = 0; i < 300000; i++)
			if (items[k][i] != i * 3 + (uint32_t)k)
				cr_assert_fail("array %d, item %u: got %u, want %u", k, i, items[k][i], i * 3 + (uint32_t)k);
	unsigned char *fresh = ti_arena_array(&a, 200000, 1);
	cr_assert(fresh != NULL, "a 200,000-byte array was not made");
	for (size_t i = 0; i < 200000; i++)
		if (fresh[i])
			cr_assert_fail("byte %zu of a fresh mapped array is 0x%02x", i, fresh[i]);
	ti_arena_release(&a);
	EXPECT_INT(a.reserved, 0);
	EXPECT_INT(a.used, 0);
}

Test(arena, cat_joins_its_parts_and_refuses_too_many)
{
	ti_arena a;
	ti_arena_init(&a, 1 << 20);
	EXPECT_STR(ti_arena_cat(&a, (const char *const[]){"layers.0", ".", "weight"}, 3), "layers.0.weight");
	EXPECT_STR(ti_arena_cat(&a, (const char *const[]){"fc1", " (", "linear", ")"}, 4), "fc1 (linear)");
	EXPECT_STR(ti_arena_cat(&a, (const char *const[]){"", "", ""}, 3), "");
	EXPECT_STR(ti_arena_cat(&a, NULL, 0), "");
	static const char *const nine[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
	cr_expect(ti_arena_cat(&a, nine, 9) == NULL, "nine parts were joined");
	ti_arena_release(&a);
}
