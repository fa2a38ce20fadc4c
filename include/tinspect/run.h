/*
 * run.h - executing a described model for real on the CPU (tinspect run).
 *
 * The description's shapes are propagated first (ti_model_run, with every
 * call traced); then the same calls run again on real float32 tensors
 * (int64 and bool for indices and masks), each by the kernel of its
 * operator or module type (src/run/kernels/, one table). Every output's
 * real shape and dtype are checked against the propagated ones: a
 * difference is a bug of a kernel or of a shape rule, reported as such.
 * Values are freed after their last use, and the peak that walk needs is
 * computed before anything is allocated, so a run that would not fit is
 * refused up front.
 *
 * Ownership: a ti_run owns every buffer it allocates; the report and the
 * tensors it names live until ti_run_free. The model must outlive the run.
 */
#ifndef TINSPECT_RUN_H
#define TINSPECT_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/fill.h"
#include "tinspect/model.h"
#include "tinspect/source.h"

typedef struct ti_run ti_run;

/* Where an input's values come from. */
typedef enum ti_run_input_kind {
	TI_RUN_INPUT_FILL,   /* a fill policy (zeros, randn, ...) over the described shape */
	TI_RUN_INPUT_TENSOR  /* a tensor of a checkpoint (safetensors: FILE:NAME) */
} ti_run_input_kind;

typedef struct ti_run_input {
	const char *name;            /* the description's input */
	ti_run_input_kind kind;
	ti_fill_policy fill;         /* TI_RUN_INPUT_FILL */
	ti_source *source;           /* TI_RUN_INPUT_TENSOR: borrowed */
	size_t tensor;               /* its index there */
} ti_run_input;

typedef struct ti_run_options {
	ti_fill_policy fill;         /* parameters and buffers without --weights (init: as PyTorch initialises) */
	uint64_t seed;               /* random fills */
	ti_source *weights;          /* borrowed; NULL: fill */
	const ti_run_input *inputs;  /* inputs not listed are drawn with randn (ints: zeros) */
	size_t input_count;
	size_t max_memory;           /* bytes the run may hold at its peak; 0: the machine's RAM */
	int threads;                 /* 0: every core */
	bool keep_all;               /* keep every step's outputs (--save-all) */
	int stats_depth;             /* statistics of the outputs of steps above this depth (1: the graph's own
	                                steps) and of the model's outputs; 0: of every step's */
} ti_run_options;

/* Statistics of one real tensor, over its elements as float (NaN and Inf excluded from the moments). */
typedef struct ti_run_stats {
	double min, max, mean, std;
	int64_t nan, inf, count;
} ti_run_stats;

/* A real tensor: contiguous, row-major. */
typedef struct ti_run_tensor {
	const char *name;
	ti_dtype dtype;
	int ndim;
	const int64_t *shape;
	const void *data;            /* NULL when it was freed after its last use (not kept) */
	size_t nbytes;
	ti_run_stats stats;
	bool checked;                /* shape and dtype equal the propagated ones */
} ti_run_tensor;

/* One row of the shapes report (ti_model_report.steps[i]): its outputs, real. */
typedef struct ti_run_step {
	const ti_model_step *step;
	ti_run_tensor *outputs;      /* step->output_count entries; data only when kept */
	int output_count;
	bool ran;                    /* its outputs were computed (else it was skipped: failed before) */
} ti_run_step;

typedef struct ti_run_report {
	const ti_model_report *shapes;
	ti_run_step *steps;          /* as many as shapes->steps */
	size_t step_count;
	ti_run_tensor *outputs;      /* the description's outputs, data kept */
	size_t output_count;
	size_t peak_bytes;           /* the walk's peak, computed before running: weights, inputs, live values */
	double forward_seconds;      /* the real walk alone: weights and inputs ready, statistics included */
	const char *mismatch;        /* a kernel's output differs from the propagated shape or dtype: the bug, or NULL */
} ti_run_report;

/*
 * Propagates shapes, plans memory, materializes weights and runs. The model
 * must be fresh (not run). Errors: TI_E_SHAPE as `shapes` reports a step
 * that raises; TI_E_UNSUPPORTED "no CPU kernel yet for 'X'"; TI_E_CORRUPT
 * for a missing weight (naming the parameter) or an input that does not
 * fit; TI_E_LIMIT when the peak passes max_memory (nothing allocated);
 * TI_E_NOMEM. A kernel whose output disagrees with the propagation is no
 * error: TI_OK with report->mismatch set, the run stopped there.
 */
ti_status ti_run_execute(ti_model *model, const ti_run_options *options, ti_run **out, const ti_run_report **report,
                         ti_error *err);
void ti_run_free(ti_run *run);

/* Statistics of n float32 values. */
void ti_run_stats_of(const float *x, size_t n, ti_run_stats *out);

/* Calls fn for every kernel, operators then module types, in the table's order (--list-kernels). */
void ti_run_each_kernel(void (*fn)(void *user, const char *name, bool module), void *user);
/* Whether an operator (module false) or module type has a CPU kernel. */
bool ti_run_has_kernel(const char *name, bool module);

#endif
