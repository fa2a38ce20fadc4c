/*
 * test_lora.c - peft's LoRA applied to a description (src/model/lora.c): the
 * adapters' names, shapes and count as peft's get_peft_model makes them, the
 * training step's gradients and AdamW state of the adapters alone, what the
 * dropout adds, and the errors for a bad spec or target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "tinspect/hf_describe.h"
#include "tinspect/lora.h"
#include "tinspect/memory.h"
#include "tinspect/model.h"

static char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	char *buf = malloc(1 << 20);
	*size = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static ti_lora_config config(const char *spec, const char *targets)
{
	ti_lora_config c;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_lora_parse(spec, &c, &err) == TI_OK, "%s: %s", spec, err.message);
	cr_assert(ti_lora_parse_targets(targets, &c, &err) == TI_OK, "%s: %s", targets, err.message);
	return c;
}

/* The description text with the adapters, opened with binds. */
static ti_model *open_with(const char *desc, const ti_lora_config *c, const char *const *names, const int64_t *values,
                           size_t nbind, size_t *wrapped)
{
	char *out;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_lora_apply(desc, strlen(desc), c, &out, wrapped, &err) == TI_OK, "%s", err.message);
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = nbind, .training = true};
	ti_model *m = NULL;
	ti_status st = ti_model_open(out, strlen(out), &o, &m, &err);
	free(out);
	cr_assert(st == TI_OK, "the rewritten description does not open: %s at %s", err.message, err.member);
	return m;
}

static char *describe(const char *path)
{
	size_t size;
	char *text = slurp(path, &size);
	char *desc;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(text, size, &desc, &err) == TI_OK, "%s", err.message);
	free(text);
	return desc;
}

static const ti_model_param *param(const ti_model *m, const char *name, size_t *index)
{
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].name, name)) {
			if (index)
				*index = i;
			return &p[i];
		}
	cr_assert_fail("no parameter %s", name);
	return NULL;
}

static int64_t numel(const ti_model_param *p)
{
	int64_t n = 1;
	for (int d = 0; d < p->ndim; d++)
		n *= p->shape[d];
	return n;
}

/*
 * Llama-3.1-8B, r=16 on q_proj and v_proj: peft's print_trainable_parameters
 * says "trainable params: 6,815,744 || all params: 8,037,076,992": per layer
 * q's A 16x4096 and B 4096x16, v's A 16x4096 and B 1024x16 (8 KV heads of
 * 128), 32 layers; the base 8,030,261,248 (the model card's total) unchanged.
 */
Test(lora, llama_3_1_8b_r16_has_peft_s_trainable_count_and_names)
{
	char *desc = describe("fixtures/hf/Llama-3.1-8B/config.json");
	ti_lora_config c = config("r=16,alpha=32,dropout=0.05", "q_proj,v_proj");
	size_t wrapped;
	ti_model *m = open_with(desc, &c, NULL, NULL, 0, &wrapped);
	free(desc);
	cr_assert_eq(wrapped, 2); /* the two entries of LlamaAttention, each used by every layer */
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t adapters = 0, all = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].buffer)
			continue;
		all += numel(&p[i]);
		if (strstr(p[i].name, ".lora_"))
			adapters += numel(&p[i]);
	}
	cr_assert_eq(adapters, 6815744);
	cr_assert_eq(all, 8037076992LL);
	/* peft's names and order: base_layer, then lora_A and lora_B of the adapter "default" */
	size_t ib, ia, ibb;
	const ti_model_param *base = param(m, "model.layers.0.self_attn.q_proj.base_layer.weight", &ib);
	const ti_model_param *a = param(m, "model.layers.0.self_attn.q_proj.lora_A.default.weight", &ia);
	const ti_model_param *b = param(m, "model.layers.0.self_attn.v_proj.lora_B.default.weight", &ibb);
	cr_assert(ib < ia && ia < ibb);
	cr_assert_eq(base->shape[0], 4096);
	cr_assert(a->shape[0] == 16 && a->shape[1] == 4096);
	cr_assert(b->shape[0] == 1024 && b->shape[1] == 16);
	ti_model_close(m);
}

/* A Linear(64, 32) with a bias, targeted: y = fc(x); the training step of the adapters alone. */
static const char *one_linear =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 64]}},"
	" \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 32}},"
	" \"graph\": [{\"out\": \"y\", \"call\": \"fc\", \"args\": [\"x\"]}]}";

static const ti_memory_report *train(const char *spec, int64_t n, ti_model **m)
{
	static const char *const names[] = {"N"};
	int64_t values[] = {n};
	ti_lora_config c = config(spec, "fc");
	size_t wrapped;
	*m = open_with(one_linear, &c, names, values, 1, &wrapped);
	cr_assert_eq(wrapped, 1);
	static const char *const trainable[] = {"*.lora_A.default.*", "*.lora_B.default.*"};
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_ADAMW, .trainable = trainable,
	                       .trainable_count = 2};
	const ti_memory_report *r = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_memory_estimate(*m, &o, &r, &err) == TI_OK, "%s", err.message);
	return r;
}

Test(lora, only_the_adapters_get_a_gradient_and_adamw_state)
{
	ti_model *m;
	const ti_memory_report *r = train("r=4", 256, &m);
	/* A 4x64 and B 32x4, float32: the base's 64x32 weight and its bias get nothing */
	int64_t adapters = (4 * 64 + 32 * 4) * 4;
	cr_assert_eq(r->gradients, adapters);
	cr_assert_eq(r->optimizer_state, 2 * adapters + 2 * 4, "exp_avg and exp_avg_sq, a float32 step per tensor: %lld",
	             (long long)r->optimizer_state);
	cr_assert_eq(r->weights, (64 * 32 + 32) * 4 + adapters);
	ti_model_close(m);
}

/*
 * lora_dropout > 0: dropout(x) is a new [N, 64] tensor that lora_A saves for
 * its weight's gradient, where without it lora_A saves x itself, the step's
 * input. The mask is not kept: x needs no gradient, so PyTorch 1.13's CPU
 * dropout (input * noise) saves nothing and frees its noise (measured under
 * memshim: 65,544 bytes more with p=0.1 than without).
 */
Test(lora, dropout_keeps_the_dropped_copy)
{
	ti_model *m0, *m1;
	const ti_memory_report *plain = train("r=4", 256, &m0);
	int64_t without = plain->activations;
	cr_assert_eq(without, 256 * 4 * 4, "lora_B keeps lora_A's [N, 4] output: %lld", (long long)without);
	const ti_memory_report *dropped = train("r=4,dropout=0.1", 256, &m1);
	cr_assert_eq(dropped->activations - without, 256 * 64 * 4, "%lld vs %lld", (long long)dropped->activations,
	             (long long)without);
	ti_model_close(m0);
	ti_model_close(m1);
}

Test(lora, specs_parse_with_loraconfig_defaults)
{
	ti_lora_config c;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_lora_parse("r=8", &c, &err) == TI_OK);
	cr_assert(c.r == 8 && c.alpha == 8 && c.dropout == 0);
	cr_assert(ti_lora_parse("r=64,alpha=16,dropout=0.1", &c, &err) == TI_OK);
	cr_assert(c.r == 64 && c.alpha == 16 && c.dropout == 0.1);
	static const struct {
		const char *spec, *says;
	} bad[] = {
		{"r=0", "positive integer"}, {"r=1.5", "positive integer"}, {"r=x", "positive integer"},
		{"alpha=16", "no rank"},     {"r=8,alpha=0", "above 0"},    {"r=8,dropout=1", "probability"},
		{"r=8,beta=2", "unknown field 'beta'"}, {"r", "NAME=VALUE"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ti_error_clear(&err);
		cr_assert(ti_lora_parse(bad[i].spec, &c, &err) == TI_E_INVALID, "%s parsed", bad[i].spec);
		cr_assert(strstr(err.message, bad[i].says), "%s: %s", bad[i].spec, err.message);
	}
	cr_assert(ti_lora_parse_targets("q_proj,,v_proj", &c, &err) == TI_E_INVALID);
	cr_assert(ti_lora_parse_targets("self_attn.q_proj", &c, &err) == TI_E_INVALID);
}

/* peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING */
Test(lora, default_targets_are_peft_s)
{
	cr_assert_str_eq(ti_lora_default_targets("llama"), "q_proj,v_proj");
	cr_assert_str_eq(ti_lora_default_targets("falcon"), "query_key_value");
	cr_assert_str_eq(ti_lora_default_targets("bert"), "query,value");
	cr_assert_null(ti_lora_default_targets("vit"));
	cr_assert_null(ti_lora_default_targets(NULL));
}

Test(lora, a_target_that_names_nothing_or_no_linear_is_refused)
{
	char *desc = describe("fixtures/hf/Llama-3.1-8B/config.json");
	char *out;
	size_t wrapped;
	ti_error err;
	ti_error_clear(&err);
	ti_lora_config c = config("r=8", "q_proj,qproj");
	cr_assert(ti_lora_apply(desc, strlen(desc), &c, &out, &wrapped, &err) == TI_E_INVALID);
	cr_assert(strstr(err.message, "'qproj' names no module"), "%s", err.message);
	cr_assert(strstr(err.message, "q_proj,k_proj,v_proj,o_proj"), "the Linear names listed: %s", err.message);
	ti_error_clear(&err);
	c = config("r=8", "mlp");
	cr_assert(ti_lora_apply(desc, strlen(desc), &c, &out, &wrapped, &err) == TI_E_INVALID);
	cr_assert(strstr(err.message, "'mlp' (LlamaMLP) is not a Linear"), "%s", err.message);
	free(desc);
}

/* A tied lm_head (gemma) wrapped: its weight is base_layer's, still the embedding's. */
Test(lora, a_tied_head_stays_tied_under_base_layer)
{
	char *desc = describe("fixtures/hf/gemma-2b/config.json");
	ti_lora_config c = config("r=8", "lm_head");
	size_t wrapped;
	ti_model *m = open_with(desc, &c, NULL, NULL, 0, &wrapped);
	free(desc);
	const ti_model_param *w = param(m, "lm_head.base_layer.weight", NULL);
	cr_assert(w->tied_to && !strcmp(w->tied_to, "model.embed_tokens.weight"), "tied to %s", w->tied_to);
	ti_model_close(m);
}

/* --dtype bfloat16: the base in bfloat16, the adapters float32 (get_peft_model's autocast_adapter_dtype). */
Test(lora, adapters_stay_float32_under_a_low_precision_base)
{
	static const char *const names[] = {"N"};
	int64_t values[] = {256};
	ti_lora_config c = config("r=4", "fc");
	size_t wrapped;
	ti_model *m = open_with(one_linear, &c, names, values, 1, &wrapped);
	static const char *const adapters[] = {"*.lora_A.default.*", "*.lora_B.default.*"};
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_ADAMW, .trainable = adapters,
	                       .trainable_count = 2, .dtype = TI_DT_BFLOAT16, .keep_dtype = adapters,
	                       .keep_dtype_count = 2};
	const ti_memory_report *r = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_memory_estimate(m, &o, &r, &err) == TI_OK, "%s", err.message);
	int64_t adapter = (4 * 64 + 32 * 4) * 4;
	cr_assert_eq(r->gradients, adapter);
	cr_assert_eq(r->weights, (64 * 32 + 32) * 2 + adapter);
	ti_model_close(m);
}

/*
 * GPT-2's c_attn is transformers' Conv1D (weight [in, out]), which peft wraps
 * with fan_in_fan_out: r=8 gives A 8x768 and B 2304x8 a layer, 12 layers:
 * "trainable params: 294,912 || all params: 124,734,720" (124,439,808 GPT-2's).
 */
Test(lora, gpt2_conv1d_c_attn_as_peft_wraps_it)
{
	char *desc = describe("fixtures/hf/gpt2/config.json");
	ti_lora_config c = config("r=8", "c_attn");
	size_t wrapped;
	ti_model *m = open_with(desc, &c, NULL, NULL, 0, &wrapped);
	free(desc);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t adapters = 0, all = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].buffer || p[i].tied_to)
			continue;
		all += numel(&p[i]);
		if (strstr(p[i].name, ".lora_"))
			adapters += numel(&p[i]);
	}
	cr_assert_eq(adapters, 294912);
	cr_assert_eq(all, 124734720);
	const ti_model_param *b = param(m, "transformer.h.0.attn.c_attn.lora_B.default.weight", NULL);
	cr_assert(b->shape[0] == 2304 && b->shape[1] == 8);
	ti_model_close(m);
}
