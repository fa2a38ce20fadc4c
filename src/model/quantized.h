/*
 * quantized.h - a description's "quantization" (model/quantized.c): the
 * tensors a quantized checkpoint holds for each Linear it converts. The
 * rows ti_quant_layout fills name static strings.
 */
#ifndef TINSPECT_MODEL_QUANTIZED_H
#define TINSPECT_MODEL_QUANTIZED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nn/module.h"
#include "tinspect/error.h"

typedef enum ti_quant_method {
	TI_QUANT_METHOD_NONE,
	TI_QUANT_METHOD_GPTQ,
	TI_QUANT_METHOD_AWQ,
	TI_QUANT_METHOD_NF4,
	TI_QUANT_METHOD_FP4,
	TI_QUANT_METHOD_INT8,
	TI_QUANT_METHOD_FP8,
} ti_quant_method;

#define TI_QUANT_MAX_STORED 8 /* tensors a converted Linear stores its weight as, at most */

typedef struct ti_quant_spec {
	ti_quant_method method;
	int bits;              /* gptq, awq */
	int64_t group_size;    /* gptq, awq; -1 or 0: one group */
	int64_t blocksize;     /* nf4, fp4 */
	bool double_quant;     /* nf4, fp4 */
	int64_t block[2];      /* fp8: [OUT, IN] */
} ti_quant_spec;

/* "gptq" ... "fp8"; TI_QUANT_METHOD_NONE for another name or NULL. */
ti_quant_method ti_quant_method_from_name(const char *name);

/* The description's "quantization" object (a cJSON item), checked. */
ti_status ti_quant_spec_parse(const void *json, ti_quant_spec *out, ti_error *err);

/* The tensors an in x out Linear's weight is stored as, in state_dict order, into rows; their count, 0 when none fit. */
size_t ti_quant_layout(const ti_quant_spec *q, int64_t in, int64_t out, ti_module_stored *rows, size_t cap);

/* Whether the module at path stays unconverted: lm_head, or a run of its dotted parts in names (a cJSON list). */
bool ti_quant_not_converted(const void *names, const char *path);

#endif
