/*
 * fill_policy.h - how a tensor is to be filled (fill.h fills it; the init
 * rules of init_rules.h choose it per parameter, as torch.nn's constructors
 * do). Types and constructors only, so that the model layer, below the
 * materialize engine, can name a policy.
 */
#ifndef TINSPECT_FILL_POLICY_H
#define TINSPECT_FILL_POLICY_H

#include <stdbool.h>
#include <stdint.h>

typedef enum ti_fill_kind {
	TI_FILL_EMPTY,
	TI_FILL_ZEROS,
	TI_FILL_ONES,
	TI_FILL_FULL,
	TI_FILL_RAND,
	TI_FILL_RANDN,
	TI_FILL_UNIFORM,
	TI_FILL_NORMAL,
	TI_FILL_ARANGE,
	TI_FILL_INIT,
	TI_FILL_LOAD
} ti_fill_kind;

typedef struct ti_fill_policy {
	ti_fill_kind kind;
	/* full: a = V; uniform: [a, b); normal: mean a, std b; rand 0, 1; randn 0, 1 */
	double a, b;
	/* full: V was written as an integer within int64, held exactly here */
	bool exact;
	int64_t a_int;
	/*
	 * Elements [zero_begin, zero_end) are written as zero after the fill:
	 * Embedding's padding_idx row. Empty (0, 0) unless ti_init_policy() sets it.
	 */
	uint64_t zero_begin, zero_end;
} ti_fill_policy;

/* Policies made directly, for init rules and tests. zeros, ones, empty, rand, randn, arange, init, load: */
static inline ti_fill_policy ti_fill_constant(ti_fill_kind kind)
{
	ti_fill_policy p = {.kind = kind};
	if (kind == TI_FILL_RAND || kind == TI_FILL_RANDN)
		p.b = 1.0;
	if (kind == TI_FILL_ONES) {
		p.a = 1.0;
		p.exact = true;
		p.a_int = 1;
	}
	return p;
}

static inline ti_fill_policy ti_fill_full(double value)
{
	return (ti_fill_policy){.kind = TI_FILL_FULL, .a = value};
}

static inline ti_fill_policy ti_fill_uniform(double low, double high)
{
	return (ti_fill_policy){.kind = TI_FILL_UNIFORM, .a = low, .b = high};
}

static inline ti_fill_policy ti_fill_normal(double mean, double std)
{
	return (ti_fill_policy){.kind = TI_FILL_NORMAL, .a = mean, .b = std};
}

#endif
