/*
 * test_strsort.c - strings sorted by hash: every name found, absent ones
 * not, repeats reported with the earliest position of their string.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "util/strsort.h"

enum { NAMES = 20000 };
static char *names[NAMES];

static const char *name_of(const void *ctx, uint32_t i)
{
	(void)ctx;
	return names[i];
}

/* Names like a state_dict's, and like a zip's records: long shared prefixes, short differences. */
static void make_names(void)
{
	for (int i = 0; i < NAMES; i++) {
		char buf[64];
		snprintf(buf, sizeof(buf), i % 2 ? "blocks.%d.sub.%d.weight" : "archive/data/%d", i / 2, i % 7);
		names[i] = strdup(buf);
	}
}

static void free_names(void)
{
	for (int i = 0; i < NAMES; i++)
		free(names[i]);
}

TestSuite(strsort, .init = make_names, .fini = free_names);

Test(strsort, finds_every_name_and_no_other)
{
	ti_strsort s;
	ASSERT_INT(ti_strsort_build(&s, NAMES, name_of, NULL), 0);
	for (int i = 0; i < NAMES; i++)
		EXPECT_INT(ti_strsort_find(&s, names[i]), i);
	EXPECT_INT(ti_strsort_find(&s, "blocks.0.sub.0.bias"), -1);
	ti_strsort_release(&s);
}

typedef struct repeat_log {
	uint32_t first[8], later[8];
	size_t n;
} repeat_log;

static void log_repeat(void *ctx, uint32_t first, uint32_t later)
{
	repeat_log *log = ctx;
	if (log->n < 8) {
		log->first[log->n] = first;
		log->later[log->n] = later;
	}
	log->n++;
}

static const char *few[] = {"a", "b", "a", "c", "b", "a", "d"};

static const char *few_of(const void *ctx, uint32_t i)
{
	(void)ctx;
	return few[i];
}

Test(strsort, reports_each_repeat_with_the_earliest_position_of_its_string)
{
	ti_strsort s;
	ASSERT_INT(ti_strsort_build(&s, 7, few_of, NULL), 0);
	repeat_log log = {0};
	EXPECT_INT(ti_strsort_repeats(&s, log_repeat, &log), 3);
	ASSERT_INT(log.n, 3);
	/* "a" at 2 and 5 repeat 0, in that order; "b" at 4 repeats 1 */
	int a2 = -1, a5 = -1, b4 = -1;
	for (size_t i = 0; i < log.n; i++) {
		if (log.later[i] == 2 && log.first[i] == 0)
			a2 = (int)i;
		if (log.later[i] == 5 && log.first[i] == 0)
			a5 = (int)i;
		if (log.later[i] == 4 && log.first[i] == 1)
			b4 = (int)i;
	}
	cr_expect(a2 >= 0 && a5 > a2 && b4 >= 0, "repeats: got a2 at %d, a5 at %d, b4 at %d", a2, a5, b4);
	EXPECT_INT(ti_strsort_find(&s, "a"), 0);
	EXPECT_INT(ti_strsort_find(&s, "d"), 6);
	ti_strsort_release(&s);
}

Test(strsort, has_no_repeats_among_distinct_names)
{
	ti_strsort s;
	ASSERT_INT(ti_strsort_build(&s, NAMES, name_of, NULL), 0);
	repeat_log log = {0};
	EXPECT_INT(ti_strsort_repeats(&s, log_repeat, &log), 0);
	ti_strsort_release(&s);
}

Test(strsort, an_empty_set_finds_nothing)
{
	ti_strsort s;
	ASSERT_INT(ti_strsort_build(&s, 0, name_of, NULL), 0);
	EXPECT_INT(ti_strsort_find(&s, "a"), -1);
	repeat_log log = {0};
	EXPECT_INT(ti_strsort_repeats(&s, log_repeat, &log), 0);
	ti_strsort_release(&s);
}

/* Every third name given twice: the sorted hashes hold each string's positions ascending. */
static const char *crowd_of(const void *ctx, uint32_t i)
{
	const char *const *crowd = ctx;
	return crowd[i];
}

Test(strsort, sorts_a_crowd_whose_buckets_hold_many_names_each)
{
	enum { CROWD = 300000 }; /* past 4,096 buckets of four: each is sorted by qsort */
	char **crowd = malloc(CROWD * sizeof(*crowd));
	cr_assert(crowd);
	for (int i = 0; i < CROWD; i++) {
		char buf[32];
		snprintf(buf, sizeof(buf), "layers.%d.weight", i % 3 == 2 ? i - 1 : i);
		crowd[i] = strdup(buf);
	}
	ti_strsort s;
	ASSERT_INT(ti_strsort_build(&s, CROWD, crowd_of, crowd), 0);
	for (size_t i = 1; i < s.count; i++)
		cr_assert(s.items[i - 1] < s.items[i], "items %zu and %zu out of order", i - 1, i);
	for (int i = 0; i < CROWD; i += 997)
		EXPECT_INT(ti_strsort_find(&s, crowd[i]), i % 3 == 2 ? i - 1 : i);
	repeat_log log = {0};
	EXPECT_INT(ti_strsort_repeats(&s, log_repeat, &log), CROWD / 3);
	ti_strsort_release(&s);
	for (int i = 0; i < CROWD; i++)
		free(crowd[i]);
	free(crowd);
}

Test(strsort, a_hash_of_given_length_is_the_hash_of_the_string)
{
	/* the zip reader hashes each name as it copies it, with its length: lookups hash the terminated string */
	for (int i = 0; i < NAMES; i++)
		if (ti_strsort_hash_n(names[i], strlen(names[i])) != ti_strsort_hash(names[i]))
			cr_assert_fail("'%s': %u by length, %u by string", names[i], ti_strsort_hash_n(names[i], strlen(names[i])),
			               ti_strsort_hash(names[i]));
	static const char cut[] = "layers.0.weight and more";
	EXPECT_INT(ti_strsort_hash_n(cut, 15), ti_strsort_hash("layers.0.weight"));
	EXPECT_INT(ti_strsort_hash_n("", 0), ti_strsort_hash(""));
}
