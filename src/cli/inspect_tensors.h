/*
 * inspect_tensors.h - inspect of files whose headers list their tensors
 * (safetensors, a sharded checkpoint's index), beside cmd_inspect.c's torch
 * zips.
 */
#ifndef TINSPECT_CLI_INSPECT_TENSORS_H
#define TINSPECT_CLI_INSPECT_TENSORS_H

#include <stdbool.h>

#include "cli/output.h"

/* The columns of inspect's tables, one set for every reader: NAME DTYPE SHAPE BYTES NOTES; PREFIX TENSORS NUMEL BYTES. */
extern const cli_column cli_tensor_columns[5];
extern const cli_column cli_group_columns[4];

typedef struct cli_inspect_request {
	const char *file;
	bool json, records, trust;
	int depth;
	const char *const *filters;
	int filter_count;
} cli_inspect_request;

/* A safetensors file (by its first bytes) or a *.index.json. */
bool cli_is_tensor_file(const char *path);
int cli_inspect_tensor_file(const cli_inspect_request *request);

#endif
