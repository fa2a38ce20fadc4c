/*
 * hf_describe.h - a model description built from a Hugging Face config.json.
 *
 * A config.json names its architecture in "model_type" and its sizes in
 * fields that transformers' config classes define. For each model_type
 * tinspect knows there is one template (src/model/hf/<model_type>.json,
 * built into the program): a description in the usual format whose sizes are
 * config symbols ("$hidden_size"), written after transformers' modeling code
 * so the state_dict names, shapes and order are the model's. Its "hf" block
 * lists the config fields the template reads, each with transformers'
 * default (null: the field is required); ti_hf_describe fills them from the
 * config and returns the description's text. docs/huggingface.md tells how
 * to add a family.
 *
 * Ownership: *out is malloc'd and the caller frees it; nothing else is kept.
 */
#ifndef TINSPECT_HF_DESCRIBE_H
#define TINSPECT_HF_DESCRIBE_H

#include <stddef.h>

#include "tinspect/error.h"

#define TI_HF_CONFIG_MAX_BYTES ((size_t)4 << 20) /* a config.json larger than this is refused */

/*
 * Builds the description of the model that config (the text of a
 * config.json, size bytes) describes. TI_E_UNSUPPORTED for a model_type
 * without a template (the message lists the known ones), TI_E_CORRUPT for a
 * config that is no JSON object, lacks "model_type", or lacks or mistypes a
 * field the template needs (the message names the field).
 */
ti_status ti_hf_describe(const char *config, size_t size, char **out, ti_error *err);

/* The model_types with a template, in name order; *count gets how many. */
const char *const *ti_hf_model_types(size_t *count);

/* Whether text (a JSON file's first bytes) looks like a config.json: a "model_type" key and no "graph". */
int ti_hf_is_config(const char *text, size_t size);

#endif
