/*
 * test_hf_quant.c - a Hugging Face config with a quantization_config: the
 * state_dict names, dtypes and shapes of the quantized Linear layers
 * (src/model/quantized.c, after AutoGPTQ's QuantLinear, AutoAWQ's
 * WQLinear_GEMM, bitsandbytes' Linear4bit and Linear8bitLt and transformers'
 * FP8Linear), the layers left alone, and memory's bytes against the same
 * tensors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "shapes/meta.h"
#include "tinspect/dtype.h"
#include "tinspect/hf_describe.h"
#include "tinspect/memory.h"
#include "tinspect/model.h"

/* A two-layer llama of width 256 (q_proj 256 -> 256, k_proj 256 -> 128, mlp 256 -> 512), untied head. */
#define LLAMA                                                                                                      \
	"{\"model_type\": \"llama\", \"vocab_size\": 1000, \"hidden_size\": 256, \"intermediate_size\": 512,"       \
	" \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"                        \
	" \"tie_word_embeddings\": false, \"quantization_config\": "

static ti_model *open_config(const char *quantization_config)
{
	char text[2048];
	snprintf(text, sizeof(text), "%s%s}", LLAMA, quantization_config);
	char *desc = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(text, strlen(text), &desc, &err) == TI_OK, "%s", err.message);
	static const char *const names[] = {"B", "T"};
	int64_t values[] = {1, 16};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 2};
	ti_model *m = NULL;
	cr_assert(ti_model_open(desc, strlen(desc), &o, &m, &err) == TI_OK, "%s", err.message);
	free(desc);
	return m;
}

static const ti_model_param *find(const ti_model *m, const char *name)
{
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	return NULL;
}

typedef struct want {
	const char *local;
	ti_dtype dtype;
	int ndim;
	int64_t shape[2];
} want;

/* The tensors module's state dict holds, in order, exactly wants (and its weight none). */
static void expect_stored(const ti_model *m, const char *module, const want *wants, size_t count)
{
	size_t n, found = 0;
	const ti_model_param *p = ti_model_params(m, &n);
	char name[256];
	snprintf(name, sizeof(name), "%s.", module);
	for (size_t i = 0; i < n; i++) {
		if (strncmp(p[i].name, name, strlen(name)))
			continue;
		cr_assert_lt(found, count, "%s: more tensors than %zu (%s)", module, count, p[i].name);
		const want *w = &wants[found++];
		char full[256];
		snprintf(full, sizeof(full), "%s.%s", module, w->local);
		cr_assert_str_eq(p[i].name, full);
		cr_assert_eq(p[i].dtype, w->dtype, "%s: got %s, want %s", full, ti_dtype_name(p[i].dtype),
		             ti_dtype_name(w->dtype));
		cr_assert_eq(p[i].ndim, w->ndim, "%s: ndim %d, want %d", full, p[i].ndim, w->ndim);
		for (int k = 0; k < w->ndim; k++)
			cr_assert_eq(p[i].shape[k], w->shape[k], "%s: size %d is %lld, want %lld", full, k,
			             (long long)p[i].shape[k], (long long)w->shape[k]);
		snprintf(full, sizeof(full), "%s.weight", module);
		cr_assert_str_eq(p[i].stores, full);
	}
	cr_assert_eq(found, count, "%s: %zu tensors, want %zu", module, found, count);
}

/* The bytes of the tensors module's state dict stores its weight as. */
static int64_t stored_bytes(const ti_model *m, const char *module)
{
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t total = 0;
	char prefix[256];
	snprintf(prefix, sizeof(prefix), "%s.", module);
	for (size_t i = 0; i < n; i++) {
		if (!p[i].stores || strncmp(p[i].name, prefix, strlen(prefix)))
			continue;
		int64_t e = 1;
		for (int k = 0; k < p[i].ndim; k++)
			e *= p[i].shape[k];
		total += e * (int64_t)ti_dtype_size(p[i].dtype);
	}
	return total;
}

/* lm_head and the embedding stay floating parameters under their own names. */
static void expect_head_and_embedding_plain(const ti_model *m)
{
	static const char *const names[] = {"lm_head.weight", "model.embed_tokens.weight", "model.norm.weight"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const ti_model_param *p = find(m, names[i]);
		cr_assert(p, "%s is in the state dict", names[i]);
		cr_assert(ti_dtype_is_floating(p->dtype) && !p->stores, "%s stays as it is", names[i]);
	}
}

/* AutoGPTQ's QuantLinear: qweight [in // 32 * bits, out], qzeros [ceil(in / group), out // 32 * bits], ... */
Test(hf_quant, gptq_stores_qweight_qzeros_scales_and_g_idx)
{
	ti_model *m = open_config("{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128}");
	const want q[] = {{"qweight", TI_DT_INT32, 2, {32, 256}}, {"qzeros", TI_DT_INT32, 2, {2, 32}},
	                  {"scales", TI_DT_FLOAT16, 2, {2, 256}}, {"g_idx", TI_DT_INT32, 1, {256}}};
	expect_stored(m, "model.layers.0.self_attn.q_proj", q, 4);
	/* down_proj: in 512, out 256, 3 bits: qweight [512 // 32 * 3, 256], qzeros [4, 256 // 32 * 3] */
	ti_model_close(m);
	m = open_config("{\"quant_method\": \"gptq\", \"bits\": 3, \"group_size\": 128}");
	const want down[] = {{"qweight", TI_DT_INT32, 2, {48, 256}}, {"qzeros", TI_DT_INT32, 2, {4, 24}},
	                     {"scales", TI_DT_FLOAT16, 2, {4, 256}}, {"g_idx", TI_DT_INT32, 1, {512}}};
	expect_stored(m, "model.layers.1.mlp.down_proj", down, 4);
	expect_head_and_embedding_plain(m);
	ti_model_close(m);
}

/* group_size -1: one group over every input (AutoGPTQ sets group_size = infeatures). */
Test(hf_quant, gptq_without_groups_has_one_row_of_scales)
{
	ti_model *m = open_config("{\"quant_method\": \"gptq\", \"bits\": 8, \"group_size\": -1}");
	const want k[] = {{"qweight", TI_DT_INT32, 2, {64, 128}}, {"qzeros", TI_DT_INT32, 2, {1, 32}},
	                  {"scales", TI_DT_FLOAT16, 2, {1, 128}}, {"g_idx", TI_DT_INT32, 1, {256}}};
	expect_stored(m, "model.layers.0.self_attn.k_proj", k, 4);
	ti_model_close(m);
}

/* AutoAWQ's WQLinear_GEMM: qweight [in, out // (32 // bits)], qzeros and scales [in // group, ...]; no g_idx. */
Test(hf_quant, awq_gemm_packs_the_outputs)
{
	ti_model *m = open_config("{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 64, \"version\": \"gemm\"}");
	const want up[] = {{"qweight", TI_DT_INT32, 2, {256, 64}}, {"qzeros", TI_DT_INT32, 2, {4, 64}},
	                   {"scales", TI_DT_FLOAT16, 2, {4, 512}}};
	expect_stored(m, "model.layers.0.mlp.up_proj", up, 3);
	expect_head_and_embedding_plain(m);
	ti_model_close(m);
}

/* Another AWQ version (GEMV's transposed packing) is no layout tinspect writes: the weights stay floating. */
Test(hf_quant, awq_gemv_is_left_unquantized)
{
	ti_model *m = open_config("{\"quant_method\": \"awq\", \"bits\": 4, \"version\": \"gemv\"}");
	const ti_model_param *w = find(m, "model.layers.0.mlp.up_proj.weight");
	cr_assert(w && ti_dtype_is_floating(w->dtype) && !w->stores);
	ti_model_close(m);
}

/*
 * bitsandbytes 4-bit, double quantization, q_proj 256 x 256 = 65,536 values:
 * 32,768 packed bytes [32768, 1], 1,024 blocks of 64 (uint8 absmax), 4 float32
 * of level two (one per 256 blocks), the 16-value code and a copy of the
 * 256-value dynamic map (QuantState.as_dict un-shares it).
 */
Test(hf_quant, nf4_with_double_quantization_stores_the_quant_state)
{
	ti_model *m = open_config("{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true,"
	                          " \"bnb_4bit_quant_type\": \"nf4\", \"bnb_4bit_use_double_quant\": true}");
	const want q[] = {{"weight", TI_DT_UINT8, 2, {32768, 1}}, {"weight.absmax", TI_DT_UINT8, 1, {1024}},
	                  {"weight.quant_map", TI_DT_FLOAT32, 1, {16}}, {"weight.nested_absmax", TI_DT_FLOAT32, 1, {4}},
	                  {"weight.nested_quant_map", TI_DT_FLOAT32, 1, {256}}};
	expect_stored(m, "model.layers.0.self_attn.q_proj", q, 5);
	expect_head_and_embedding_plain(m);
	ti_model_close(m);
}

/* Without double quantization the absmax stay float32 and there is no second level; fp4 is the default type. */
Test(hf_quant, fp4_without_double_quantization_keeps_float32_absmax)
{
	ti_model *m = open_config("{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}");
	const want k[] = {{"weight", TI_DT_UINT8, 2, {16384, 1}}, {"weight.absmax", TI_DT_FLOAT32, 1, {512}},
	                  {"weight.quant_map", TI_DT_FLOAT32, 1, {16}}};
	expect_stored(m, "model.layers.0.self_attn.k_proj", k, 3);
	ti_model_close(m);
}

/* Linear8bitLt: weight int8 [out, in], SCB float32 [out], weight_format a uint8 scalar. */
Test(hf_quant, int8_stores_weight_scb_and_weight_format)
{
	ti_model *m = open_config("{\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true,"
	                          " \"llm_int8_skip_modules\": [\"mlp.down_proj\"]}");
	const want gate[] = {{"weight", TI_DT_INT8, 2, {512, 256}}, {"SCB", TI_DT_FLOAT32, 1, {512}},
	                     {"weight_format", TI_DT_UINT8, 0, {0, 0}}};
	expect_stored(m, "model.layers.1.mlp.gate_proj", gate, 3);
	const ti_model_param *down = find(m, "model.layers.1.mlp.down_proj.weight");
	cr_assert(down && ti_dtype_is_floating(down->dtype) && !down->stores, "llm_int8_skip_modules stay floating");
	cr_assert_null(find(m, "model.layers.1.mlp.down_proj.SCB"));
	ti_model_close(m);
}

/* FP8Linear: weight float8_e4m3fn [out, in], weight_scale_inv float32 [ceil(out / 128), ceil(in / 128)]. */
Test(hf_quant, fp8_stores_weight_and_weight_scale_inv_per_block)
{
	ti_model *m = open_config("{\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128],"
	                          " \"modules_to_not_convert\": [\"self_attn.o_proj\"]}");
	const want down[] = {{"weight", TI_DT_FLOAT8_E4M3FN, 2, {256, 512}},
	                     {"weight_scale_inv", TI_DT_FLOAT32, 2, {2, 4}}};
	expect_stored(m, "model.layers.0.mlp.down_proj", down, 2);
	const ti_model_param *o = find(m, "model.layers.0.self_attn.o_proj.weight");
	cr_assert(o && o->dtype == TI_DT_FLOAT32 && !o->stores, "modules_to_not_convert stay floating");
	/* "o_proj" as a whole part matches; a part of a name does not: "proj" converts nothing away */
	ti_model_close(m);
	m = open_config("{\"quant_method\": \"fp8\", \"modules_to_not_convert\": [\"proj\"]}");
	const ti_model_param *q = find(m, "model.layers.0.self_attn.q_proj.weight");
	cr_assert(q && q->dtype == TI_DT_FLOAT8_E4M3FN && q->stores);
	ti_model_close(m);
}

/*
 * Memory counts a quantized layer at its rule's bytes (src/memory/quant.c):
 * the stored tensors are those bytes, so the description's state dict and
 * memory's weights agree. GPTQ, AWQ, FP8 and NF4 without double quantization
 * exactly; int8's weight_format adds its byte; NF4 with double quantization
 * stores a copy of the dynamic map a weight (1,024 bytes) and keeps the
 * offset in the JSON text, where memory counts one shared map and the
 * float32 offset: 1,020 bytes a weight.
 */
Test(hf_quant, the_stored_bytes_are_memorys_rule)
{
	static const struct {
		const char *config;
		ti_memory_quant q;
		bool double_quant, awq;
		int bits;
		int64_t group, more;
	} cases[] = {
		{"{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128}", TI_QUANT_GPTQ, false, false, 4, 128, 0},
		{"{\"quant_method\": \"gptq\", \"bits\": 8, \"group_size\": 32}", TI_QUANT_GPTQ, false, false, 8, 32, 0},
		{"{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 128}", TI_QUANT_AWQ, false, true, 4, 128, 0},
		{"{\"quant_method\": \"fp8\"}", TI_QUANT_FP8, false, false, 0, 128, 0},
		{"{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}", TI_QUANT_FP4, false, false, 0, 0, 0},
		{"{\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true}", TI_QUANT_INT8, false, false, 0, 0, 1},
		{"{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true, \"bnb_4bit_quant_type\": \"nf4\","
		 " \"bnb_4bit_use_double_quant\": true}", TI_QUANT_NF4, true, false, 0, 0, 1020},
	};
	static const struct { const char *module; int64_t out, in; } layers[] = {
		{"model.layers.0.self_attn.q_proj", 256, 256}, {"model.layers.0.self_attn.k_proj", 128, 256},
		{"model.layers.1.mlp.down_proj", 256, 512},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		ti_model *m = open_config(cases[c].config);
		for (size_t l = 0; l < sizeof(layers) / sizeof(layers[0]); l++) {
			int64_t out = layers[l].out, in = layers[l].in;
			int64_t rule = cases[c].q == TI_QUANT_GPTQ || cases[c].q == TI_QUANT_AWQ
			                   ? ti_memory_gptq_bytes(cases[c].awq, cases[c].bits, cases[c].group, out, in)
			             : cases[c].q == TI_QUANT_FP8 ? ti_memory_fp8_bytes(cases[c].group, out, in)
			                                          : ti_memory_quant_bytes(cases[c].q, cases[c].double_quant, out, in);
			cr_assert_eq(stored_bytes(m, layers[l].module), rule + cases[c].more, "%s, %s: stored %lld, rule %lld",
			             cases[c].config, layers[l].module, (long long)stored_bytes(m, layers[l].module),
			             (long long)rule);
		}
		ti_model_close(m);
	}
}

/* memory of the quantized description counts its weights as memory of the plain one under --quantize does. */
Test(hf_quant, memory_counts_a_quantized_layer_once)
{
	ti_model *quantized = open_config("{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 128}");
	ti_model *plain = open_config("null");
	ti_memory_options o = {.quantize = TI_QUANT_GPTQ, .quant_bits = 4, .quant_group = 128};
	const ti_memory_report *rq = NULL, *rp = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_memory_estimate(quantized, &o, &rq, &err) == TI_OK, "%s", err.message);
	cr_assert(ti_memory_estimate(plain, &o, &rp, &err) == TI_OK, "%s", err.message);
	cr_assert_eq(rq->weights, rp->weights, "quantized %lld, plain under --quantize %lld", (long long)rq->weights,
	             (long long)rp->weights);
	/* and that is the state dict's bytes (the floating tensors and each layer's stored ones) and the rotary
	   inv_freq, a non-persistent buffer: head_dim 64 / 2 float32 */
	size_t n;
	const ti_model_param *p = ti_model_params(quantized, &n);
	int64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t e = 1;
		for (int k = 0; k < p[i].ndim; k++)
			e *= p[i].shape[k];
		sum += e * (int64_t)ti_dtype_size(p[i].dtype);
	}
	cr_assert_eq(rq->weights, sum + 32 * 4, "weights %lld, the state dict's bytes %lld", (long long)rq->weights,
	             (long long)sum);
	ti_model_close(quantized);
	ti_model_close(plain);
}

/* A description's "quantization" is checked: its method, and bits AWQ can pack. */
Test(hf_quant, a_bad_quantization_says_what_is_wrong)
{
	static const struct { const char *desc, *words; } cases[] = {
		{"{\"quantization\": {\"method\": \"hqq\"}, \"inputs\": {}, \"graph\": [], \"outputs\": []}", "method"},
		{"{\"quantization\": {\"method\": \"awq\", \"bits\": 3}, \"inputs\": {}, \"graph\": [], \"outputs\": []}",
		 "bits"},
		{"{\"quantization\": {\"method\": \"gptq\", \"not_converted\": \"lm_head\"}, \"inputs\": {}, \"graph\": [],"
		 " \"outputs\": []}", "not_converted"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_model *m = NULL;
		ti_error err;
		ti_error_clear(&err);
		cr_assert_eq(ti_model_open(cases[i].desc, strlen(cases[i].desc), NULL, &m, &err), TI_E_CORRUPT);
		cr_assert(strstr(err.message, cases[i].words), "'%s' names %s", err.message, cases[i].words);
		cr_assert_null(m);
	}
}
