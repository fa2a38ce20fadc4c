/* test_closest.c - "did you mean": the nearest known name, or none. */
#include "unit.h"

#include "util/closest.h"

static const char *nearest(const char *name, const char *const *known)
{
	ti_closest c;
	ti_closest_init(&c, name);
	for (size_t i = 0; known[i]; i++)
		ti_closest_offer(&c, known[i], strlen(known[i]));
	return c.best;
}

static const char *const types[] = {"Conv1d", "Conv2d", "Linear", "LayerNorm", "BatchNorm2d", NULL};

Test(closest, forgives_case_a_swap_and_a_missing_letter)
{
	EXPECT_STR(nearest("Conv2D", types), "Conv2d");
	EXPECT_STR(nearest("Lienar", types), "Linear");
	EXPECT_STR(nearest("LayerNom", types), "LayerNorm");
}

Test(closest, suggests_nothing_for_a_name_far_from_every_known_one)
{
	cr_expect_null(nearest("Transformer", types));
	cr_expect_null(nearest("xyz", types));
}

Test(closest, keeps_the_first_of_equally_near_names)
{
	EXPECT_STR(nearest("Conv3d", types), "Conv1d");
}
