/*
 * test_json_error.c - a JSON error says what was expected, where it belongs.
 */
#include <string.h>

#include "unit.h"
#include "util/json_error.h"

static ti_json_error diagnose(const char *text)
{
	ti_json_error e;
	cr_assert_not(ti_json_diagnose(text, strlen(text), &e), "'%s' must not be valid JSON", text);
	return e;
}

#define EXPECT_AT(e, l, c, words) \
	do { \
		cr_expect_eq((e).line, (size_t)(l), "line %zu, not %d: %s", (e).line, (l), (e).message); \
		cr_expect_eq((e).column, (size_t)(c), "column %zu, not %d: %s", (e).column, (c), (e).message); \
		cr_expect(strstr((e).message, (words)), "'%s' does not say '%s'", (e).message, (words)); \
	} while (0)

Test(json_error, valid_json_is_valid)
{
	ti_json_error e;
	const char *ok = " {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\n\"], \"b\": {}} \n";
	cr_assert(ti_json_diagnose(ok, strlen(ok), &e), "%s", e.message);
}

Test(json_error, a_missing_comma_is_reported_after_the_member_not_at_the_next_key)
{
	ti_json_error e = diagnose("{\n \"a\": 1\n \"b\": 2\n}\n");
	EXPECT_AT(e, 2, 8, "expected ',' or '}' after this member, found '\"b\"' at line 3, column 2");
}

Test(json_error, a_trailing_comma_is_named_at_the_comma)
{
	ti_json_error e = diagnose("{\n \"a\": [1, 2],\n}");
	EXPECT_AT(e, 2, 13, "a ',' before '}': JSON allows no trailing comma");
}

Test(json_error, text_that_ends_inside_an_object_names_the_object)
{
	ti_json_error e = diagnose("{\"inputs\": {\"x\": 1}");
	EXPECT_AT(e, 1, 20, "the text ends inside the object that begins at line 1, column 1 (a '}' is missing)");
}

Test(json_error, words_quotes_strings_and_numbers_say_what_is_wrong)
{
	EXPECT_AT(diagnose("{\"a\": tru}"), 1, 7, "'tru' is not a JSON value");
	EXPECT_AT(diagnose("{\"a\": 'x'}"), 1, 7, "single quotes");
	EXPECT_AT(diagnose("{'a': 1}"), 1, 2, "single quotes");
	EXPECT_AT(diagnose("{\"a\": \"abc"), 1, 7, "never ends");
	EXPECT_AT(diagnose("{\"a\": \"a\\qb\"}"), 1, 9, "'\\q' is not an escape");
	EXPECT_AT(diagnose("{\"a\": 01}"), 1, 7, "cannot start with 0");
	EXPECT_AT(diagnose("{\"a\": 1.}"), 1, 9, "a digit must follow the decimal point");
	EXPECT_AT(diagnose("{\"a\" 1}"), 1, 5, "expected ':' after the key");
	EXPECT_AT(diagnose("{\"a\": 1} x"), 1, 10, "'x' after the end of the JSON value");
}

Test(json_error, nesting_has_a_ceiling_instead_of_a_stack_overflow)
{
	static char deep[5001];
	memset(deep, '[', 5000);
	EXPECT_AT(diagnose(deep), 1, 1001, "nested deeper than 1000");
}
