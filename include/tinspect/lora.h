/*
 * lora.h - peft's LoRA applied to a model description, for `memory --lora`.
 *
 * peft (peft/tuners/lora/layer.py, class Linear) wraps every targeted
 * nn.Linear: the layer becomes base_layer (the Linear, frozen), and beside it
 * lora_dropout["default"] (nn.Dropout(p), or nn.Identity when p is 0),
 * lora_A["default"] = nn.Linear(in, r, bias=False) and lora_B["default"] =
 * nn.Linear(r, out, bias=False); its forward is
 *     result = base_layer(x) + lora_B(lora_A(dropout(x))) * (alpha / r)
 * and every parameter whose name lacks "lora_" is frozen
 * (_mark_only_adapters_as_trainable, bias="none"). ti_lora_apply rewrites a
 * description (its text) so: a def per targeted Linear whose graph is that
 * forward, its modules under peft's names, so the state_dict is peft's
 * ("...q_proj.base_layer.weight", "...q_proj.lora_A.default.weight").
 *
 * Ownership: *out is malloc'd and the caller frees it; the config's strings
 * are the caller's.
 */
#ifndef TINSPECT_LORA_H
#define TINSPECT_LORA_H

#include <stddef.h>

#include "tinspect/error.h"

#define TI_LORA_MAX_TARGETS 32

typedef struct ti_lora_config {
	long r;         /* the rank, > 0 */
	double alpha;   /* lora_alpha (LoraConfig's default 8) */
	double dropout; /* lora_dropout, 0 <= p < 1 (default 0) */
	char targets[TI_LORA_MAX_TARGETS][64]; /* module names (q_proj), as target_modules */
	size_t target_count;
} ti_lora_config;

/*
 * Parses "r=16[,alpha=32][,dropout=0.05]" (spec) into cfg, with LoraConfig's
 * defaults for what it leaves out. TI_E_INVALID, naming the field, for r
 * missing or not a positive integer, alpha not a positive number, dropout
 * outside [0, 1), an unknown field.
 */
ti_status ti_lora_parse(const char *spec, ti_lora_config *cfg, ti_error *err);

/* Parses "q_proj,v_proj" into cfg->targets. TI_E_INVALID for an empty, dotted or too long name, or too many. */
ti_status ti_lora_parse_targets(const char *list, ti_lora_config *cfg, ti_error *err);

/*
 * peft's default target_modules for a transformers model_type
 * (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING in
 * peft/utils/constants.py), as a comma list ("q_proj,v_proj"), or NULL for a
 * model_type it has none for (peft then asks for target_modules).
 */
const char *ti_lora_default_targets(const char *model_type);

/*
 * Rewrites the description text desc (size bytes) with cfg's adapters;
 * *out gets the new text, *modules how many Linear entries were wrapped.
 * A target module peft matches by its last name (q_proj matches
 * model.layers.0.self_attn.q_proj); a Linear, or transformers' Conv1D (a
 * def named Conv1D... whose weight is [in, out], as GPT-2's templates have
 * it, which peft wraps with fan_in_fan_out). TI_E_INVALID when a target
 * names no module of the description (the message lists its Linear names)
 * or a module of another kind; TI_E_CORRUPT when desc is no JSON object.
 */
ti_status ti_lora_apply(const char *desc, size_t size, const ti_lora_config *cfg, char **out, size_t *modules,
                        ti_error *err);

#endif
