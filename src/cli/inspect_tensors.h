/*
 * inspect_tensors.h - inspect of files whose headers list their tensors
 * (safetensors, a sharded checkpoint's index), beside cmd_inspect.c's torch
 * zips.
 */
#ifndef TINSPECT_CLI_INSPECT_TENSORS_H
#define TINSPECT_CLI_INSPECT_TENSORS_H

#include <stdbool.h>

typedef struct cli_inspect_request {
	const char *file;
	bool json, records, trust;
	int depth;
	const char *const *filters;
	int filter_count;
} cli_inspect_request;

struct ti_source;
/* Inspects a source that is not one torch zip (safetensors, a sharded checkpoint), from its headers. */
int cli_inspect_tensor_file(const cli_inspect_request *request, const struct ti_source *src);

#endif
