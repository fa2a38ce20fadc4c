/*
 * hf_templates.h - the templates of src/model/hf/, built into the program:
 * build/gen/hf_templates.c (made by tools/embed-templates.sh from every JSON file in
 * src/model/hf/) defines the table, in model_type order.
 */
#ifndef TINSPECT_MODEL_HF_TEMPLATES_H
#define TINSPECT_MODEL_HF_TEMPLATES_H

#include <stddef.h>

typedef struct ti_hf_template {
	const char *model_type; /* the file's name: "llama" */
	const char *text;       /* the file's JSON */
} ti_hf_template;

extern const ti_hf_template ti_hf_templates[];
extern const size_t ti_hf_template_count;

#endif
