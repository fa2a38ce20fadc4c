/*
 * fuzz_model.c - the JSON model-description parser and shape propagation.
 *
 * Each input is a description's text (seeds: the .json files of fixtures/models/ and
 * tests/cli/models/, and one small description per operator and
 * module signature, made by fuzz/seeds.py). As `tinspect shapes` and
 * `tinspect params` do, it is opened with ti_model_open() (cJSON, the
 * modules' constructors, defs, config arithmetic, ties), run with
 * ti_model_run() (every operator's shape rule, symbolic sizes), and its
 * report, parameters and default initialisations are read and printed
 * through ti_dim_format(). No --bind: sizes stay symbolic, which is where
 * the arithmetic is.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_common.h"
#include "tinspect/fill.h"
#include "tinspect/model.h"
#include "tinspect/symdim.h"

/* Initialisation rules are looked up for at most this many parameters per input. */
enum { INIT_MAX = 256 };

static void walk_tensors(const ti_model_tensor *t, size_t n)
{
	char buf[256];
	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(t[i].ndim >= 0 && t[i].ndim <= 64, "tensor of rank %d", t[i].ndim);
		FUZZ_CHECK(t[i].ndim == 0 || t[i].shape, "tensor of rank %d without a shape", t[i].ndim);
		for (int d = 0; d < t[i].ndim; d++) {
			ti_dim_format(t[i].shape[d], buf, sizeof(buf));
			if (t[i].stride)
				ti_dim_format(t[i].stride[d], buf, sizeof(buf));
		}
	}
}

static void walk_report(const ti_model_report *r)
{
	char buf[256];
	walk_tensors(r->inputs, r->input_count);
	for (size_t i = 0; i < r->step_count; i++) {
		const ti_model_step *s = &r->steps[i];
		FUZZ_CHECK(s->target != NULL, "step %zu has no target", i);
		FUZZ_CHECK(s->parent < (int)i, "step %zu has parent %d", i, s->parent);
		walk_tensors(s->outputs, (size_t)(s->output_count > 0 ? s->output_count : 0));
		ti_dim_format(s->macs, buf, sizeof(buf));
		ti_dim_format(s->flops, buf, sizeof(buf));
	}
	walk_tensors(r->outputs, r->output_count);
	ti_dim_format(r->totals.input_bytes, buf, sizeof(buf));
	ti_dim_format(r->totals.activation_bytes, buf, sizeof(buf));
	ti_dim_format(r->totals.macs, buf, sizeof(buf));
	ti_dim_format(r->totals.flops, buf, sizeof(buf));
	for (size_t i = 0; i < r->assumption_count; i++)
		FUZZ_CHECK(r->assumptions[i] != NULL, "assumption %zu", i);
	if (r->failed) {
		FUZZ_CHECK(r->error.code != TI_OK && r->error.message[0], "a failed run without an error");
		FUZZ_CHECK(r->error_step >= 0, "a failed run at step %d", r->error_step);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ti_model *model = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status s = ti_model_open((const char *)data, size, NULL, &model, &err);
	fuzz_check_status(s, &err, model);
	if (s != TI_OK)
		return 0;

	size_t count = 0;
	const ti_model_param *params = ti_model_params(model, &count);
	for (size_t i = 0; i < count; i++) {
		FUZZ_CHECK(params[i].name && params[i].ndim >= 0 && params[i].ndim <= 64, "parameter %zu", i);
		for (int d = 0; d < params[i].ndim; d++)
			FUZZ_CHECK(params[i].shape[d] >= 0, "parameter '%s' has size %lld", params[i].name,
			           (long long)params[i].shape[d]);
	}
	for (size_t i = 0; i < count && i < INIT_MAX; i++) {
		ti_fill_policy policy;
		const char *rule = NULL;
		ti_error_clear(&err);
		s = ti_model_param_init(model, i, &policy, &rule, &err);
		fuzz_check_status(s, &err, s ? NULL : (void *)&policy);
	}

	const ti_model_report *report = NULL;
	ti_error_clear(&err);
	s = ti_model_run(model, &report, &err);
	fuzz_check_status(s, &err, s ? NULL : (void *)report);
	if (s == TI_OK)
		walk_report(report);
	ti_model_close(model);
	return 0;
}
