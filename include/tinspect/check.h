/*
 * check.h - does a checkpoint load into a described model, as
 * model.load_state_dict(state_dict, strict=True) would decide: missing and
 * unexpected keys and size mismatches, in PyTorch's order and words.
 *
 * The state dict is found in the checkpoint as a training script would hand
 * it over: at the top, or nested under "state_dict", "model",
 * "model_state_dict", "module", "ema" or "net" (or a key given), with a
 * DataParallel/DDP "module." or torch.compile "_orig_mod." prefix on every
 * key stripped; each such finding is a note. Ties the model declares are
 * checked too (two tensors in the file must be one, or of one shape), and
 * optionally that every floating tensor has one dtype. Everything lives in
 * the arena given.
 */
#ifndef TINSPECT_CHECK_H
#define TINSPECT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/model.h"
#include "tinspect/source.h"

typedef struct ti_check_options {
	bool strict;              /* load_state_dict(strict=...): missing and unexpected keys are errors */
	const char *key;          /* the state dict is the entry under this key; NULL: look for it */
	const char *strip_prefix; /* removed from every key that starts with it */
	const char *add_prefix;   /* put before every key */
	const char *const *renames; /* "s/OLD/NEW/" (any delimiter): the first OLD in each key becomes NEW, in order */
	size_t rename_count;
	const char *const *ignores; /* globs: names neither missing nor unexpected */
	size_t ignore_count;
	ti_dtype dtype;             /* every floating tensor of the state dict must be this; TI_DT_INVALID: any */
} ti_check_options;

typedef struct ti_check_mismatch {
	const char *name;
	int ckpt_ndim, model_ndim;
	const int64_t *ckpt_shape, *model_shape;
} ti_check_mismatch;

typedef struct ti_check_report {
	const char *class_name;         /* the model's class, for "Error(s) in loading state_dict for ..." */
	const char **missing;           /* in the order PyTorch lists them */
	size_t missing_count;
	const char **unexpected;
	size_t unexpected_count;
	ti_check_mismatch *mismatches;
	size_t mismatch_count;
	const char **notes;             /* where the state dict was, prefixes taken off, dtypes cast */
	size_t note_count;
	size_t matched;                 /* model entries the checkpoint gives a tensor of the right shape */
	const char **tie_errors;        /* ties the model declares that the checkpoint cannot keep (its two differ in shape) */
	size_t tie_error_count;
	const char **dtype_errors;      /* options->dtype: "fc.weight (float32)", in the checkpoint's order */
	size_t dtype_error_count;
	const char *message;            /* PyTorch's RuntimeError text, or NULL when it would load */
	const char *result;             /* what load_state_dict returns, as its repr, when it loads */
	const ti_source_tensor **bound; /* per model entry (ti_model_params order): the tensor it loads, or NULL */
} ti_check_report;

/*
 * Binds src's tensors to model's state dict. TI_OK with the report filled,
 * whatever it says; the report lives in arena and outlives src (not model).
 */
ti_status ti_check_load(const ti_model *model, ti_source *src, const ti_check_options *options,
                        ti_arena *arena, ti_check_report *out, ti_error *err);

#endif
