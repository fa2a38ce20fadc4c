/*
 * unit.h - assertions for the unit tests that print what was got and what was wanted.
 *
 * EXPECT_* records a failure and goes on; ASSERT_* stops the test (use it
 * when what follows would read through a NULL). Each prints the expression,
 * then "got ..., want ...", like syslog-ng's Criterion tests.
 */
#ifndef TINSPECT_TESTS_UNIT_H
#define TINSPECT_TESTS_UNIT_H

#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tinspect/tinspect.h"

#define UNIT_CHECK_INT(check, got, want)                                                      \
	do {                                                                                  \
		long long got_ = (long long)(got), want_ = (long long)(want);                 \
		check(got_ == want_, "%s: got %lld, want %lld", #got, got_, want_);           \
	} while (0)
#define EXPECT_INT(got, want) UNIT_CHECK_INT(cr_expect, got, want)
#define ASSERT_INT(got, want) UNIT_CHECK_INT(cr_assert, got, want)

#define UNIT_CHECK_STR(check, got, want)                                                      \
	do {                                                                                  \
		const char *got_ = (got), *want_ = (want);                                    \
		check(got_ && want_ ? !strcmp(got_, want_) : got_ == want_,                   \
		      "%s: got \"%s\", want \"%s\"", #got, got_ ? got_ : "(null)",           \
		      want_ ? want_ : "(null)");                                              \
	} while (0)
#define EXPECT_STR(got, want) UNIT_CHECK_STR(cr_expect, got, want)
#define ASSERT_STR(got, want) UNIT_CHECK_STR(cr_assert, got, want)

#define EXPECT_DOUBLE(got, want)                                                              \
	do {                                                                                  \
		double got_ = (got), want_ = (want);                                          \
		cr_expect(got_ == want_, "%s: got %.17g, want %.17g", #got, got_, want_);     \
	} while (0)

/* A status, with the error's message when it is not the one wanted. */
#define UNIT_CHECK_STATUS(check, got, want, err)                                              \
	do {                                                                                  \
		ti_status got_ = (got), want_ = (want);                                       \
		check(got_ == want_, "%s: got %s (\"%s\"), want %s", #got,                    \
		      ti_status_name(got_), (err).message, ti_status_name(want_));            \
	} while (0)
#define EXPECT_STATUS(got, want, err) UNIT_CHECK_STATUS(cr_expect, got, want, err)
#define ASSERT_STATUS(got, want, err) UNIT_CHECK_STATUS(cr_assert, got, want, err)

#define ASSERT_KIND(value, want)                                                              \
	do {                                                                                  \
		const ti_value *value_ = (value);                                             \
		cr_assert(value_ != NULL, "%s: got NULL, want a %s", #value, ti_kind_name(want)); \
		cr_assert(value_->kind == (want), "%s: got a %s, want a %s", #value,          \
		          ti_kind_name(value_->kind), ti_kind_name(want));                    \
	} while (0)

/* The message contains a piece of text. */
#define EXPECT_CONTAINS(got, piece)                                                           \
	do {                                                                                  \
		const char *got_ = (got), *piece_ = (piece);                                  \
		cr_expect(got_ && strstr(got_, piece_), "%s: got \"%s\", want it to contain \"%s\"", \
		          #got, got_ ? got_ : "(null)", piece_);                              \
	} while (0)

#endif
