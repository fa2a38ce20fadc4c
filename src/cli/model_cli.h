/* model_cli.h - what the commands on model descriptions (shapes, params) share. */
#ifndef TINSPECT_CLI_MODEL_CLI_H
#define TINSPECT_CLI_MODEL_CLI_H

#include <cJSON.h>

#include "tinspect/lora.h"
#include "tinspect/model.h"

#define CLI_MODEL_MAX_BINDS 64
#define CLI_MODEL_MAX_BIND ((int64_t)1 << 40) /* the largest value --bind takes */

typedef struct cli_model {
	const char *file;
	const char *bind_names[CLI_MODEL_MAX_BINDS];
	int64_t bind_values[CLI_MODEL_MAX_BINDS];
	char bind_storage[CLI_MODEL_MAX_BINDS][64];
	int bind_count;
	const char *input_names[CLI_MODEL_MAX_BINDS]; /* --input NAME=SPEC */
	const char *input_specs[CLI_MODEL_MAX_BINDS];
	int input_count;
	bool training;                                /* --mode train */
	ti_dtype default_dtype;                       /* run --dtype: TI_DT_INVALID for float32 */
	bool cast_floating;                           /* run --dtype: declared floating dtypes cast too */
	ti_dtype cast_dtype;                          /* memory --dtype: model.to(DT), the default dtype kept */
	const ti_lora_config *lora;                   /* memory --lora: the description gets peft's adapters */
	size_t lora_modules;                          /* how many Linear layers they wrap */
	ti_model *model;
} cli_model;

/* shapes --bind NAME=VALUE; prints the usage error and returns EXIT_USAGE when bad. */
int cli_model_bind(cli_model *cm, const char *text);
/* --input NAME=SHAPE[:DTYPE] (text is kept: it points into argv); prints the usage error and returns EXIT_USAGE when bad. */
int cli_model_input(cli_model *cm, const char *command, char *text);
/*
 * Reads and opens cm->file: a description, or a Hugging Face folder or
 * config.json, described first (ti_hf_describe); prints the error and
 * returns its exit code when it fails.
 */
int cli_model_open(cli_model *cm);
/* A file's text within the description ceiling (malloc'd into *out); prints the error and returns its exit code. */
int cli_model_read(const char *path, char **out, size_t *out_size);
/* The description text of file (cli_model_open's first half): a HF config's is built; malloc'd into *out. */
int cli_model_text(const char *file, char **out, size_t *out_size);
/* path/config.json when path is a folder holding one (written into buf), else path. */
const char *cli_hf_config_path(const char *path, char *buf, size_t size);
/*
 * Whether path is a model description rather than a checkpoint, by its
 * content: JSON that is no checkpoint index (a weight_map). A file that
 * cannot be read is no description: the checkpoint reader says why.
 */
bool cli_is_description(const char *path);

/* JSON: an int dim as an exact number, a symbolic one as its Python text. */
cJSON *cli_json_dim(ti_dim d);
cJSON *cli_json_dims(const ti_dim *d, int n);
/* Text: "1,234" (or "4.00 KiB" when bytes), or the formula. */
const char *cli_dim_text(ti_dim d, bool bytes, char *buf, size_t size);
/* "1.82 GMac" (cli_human), or the formula. */
const char *cli_dim_human(ti_dim d, const char *unit, char *buf, size_t size);
/* "[N, 64, 112, 112]" */
const char *cli_shape_text(const ti_dim *d, int n, char *buf, size_t size);

/* The parameter list as JSON: name, shape, dtype, kind, trainable (tied_to when tied). */
cJSON *cli_json_params(const ti_model *model);

#endif
