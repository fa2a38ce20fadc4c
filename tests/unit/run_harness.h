/*
 * run_harness.h - what the executor's unit tests (test_run*.c) share: run
 * a description in-process on one thread with named fills, and compare its
 * outputs with values worked out by hand.
 */
#ifndef TINSPECT_TESTS_RUN_HARNESS_H
#define TINSPECT_TESTS_RUN_HARNESS_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tinspect/run.h"

typedef struct ran {
	ti_model *model;
	ti_run *run;
	const ti_run_report *report;
	ti_status status;
	ti_error err;
} ran;

#define RUN_MAX_INPUTS 8

/*
 * Opens text (with options mo), fills the weights with fill and each input
 * names[i] the description declares with policies[i], and runs it on one
 * thread under max_memory (0: the machine's).
 */
static inline ran run_filled(const char *text, ti_model_options mo, const char *fill, const char *const *names,
                             const char *const *policies, size_t count, size_t max_memory)
{
	ran r = {0};
	ti_error_clear(&r.err);
	cr_assert(ti_model_open(text, strlen(text), &mo, &r.model, &r.err) == TI_OK, "open: %s", r.err.message);
	ti_run_options o = {.threads = 1, .max_memory = max_memory};
	cr_assert(ti_fill_parse(fill, &o.fill, &r.err) == TI_OK, "fill '%s'", fill);
	ti_run_input inputs[RUN_MAX_INPUTS];
	size_t n = 0;
	for (size_t i = 0; i < count && n < RUN_MAX_INPUTS; i++) {
		char key[64];
		snprintf(key, sizeof(key), "\"%s\": {", names[i]);
		if (!strstr(text, key))
			continue; /* an input the description lacks is an error */
		inputs[n] = (ti_run_input){.name = names[i], .kind = TI_RUN_INPUT_FILL};
		cr_assert(ti_fill_parse(policies[i], &inputs[n++].fill, &r.err) == TI_OK, "input '%s'", names[i]);
	}
	o.inputs = inputs;
	o.input_count = n;
	r.status = ti_run_execute(r.model, &o, &r.run, &r.report, &r.err);
	return r;
}

static inline void done(ran *r)
{
	ti_run_free(r->run);
	ti_model_close(r->model);
}

/* t's float32 values are want's, each within tol * (1 + |want|). */
static inline void expect_floats_within(const ti_run_tensor *t, const float *want, size_t n, float tol)
{
	cr_assert(t->data, "output '%s' has no data", t->name);
	cr_assert_eq(t->nbytes, n * sizeof(float), "output '%s' holds %zu bytes, want %zu", t->name, t->nbytes,
	             n * sizeof(float));
	const float *got = t->data;
	for (size_t i = 0; i < n; i++)
		cr_expect(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])), "'%s' element %zu: got %.9g, want %.9g",
		          t->name, i, (double)got[i], (double)want[i]);
}

/* t's int64 values are exactly want's. */
static inline void expect_int64s(const ti_run_tensor *t, const int64_t *want, size_t n)
{
	cr_assert(t->data, "output '%s' has no data", t->name);
	cr_assert_eq(t->dtype, TI_DT_INT64, "output '%s' is not int64", t->name);
	cr_assert_eq(t->nbytes, n * sizeof(int64_t), "output '%s' holds %zu bytes, want %zu", t->name, t->nbytes,
	             n * sizeof(int64_t));
	const int64_t *got = t->data;
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(got[i], want[i], "'%s' element %zu: got %lld, want %lld", t->name, i, (long long)got[i],
		             (long long)want[i]);
}

#endif
