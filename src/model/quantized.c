/*
 * quantized.c - a description's "quantization": the tensors a quantized
 * checkpoint's state_dict holds for each Linear the method converts, in
 * place of its floating weight (which the forward still reads, and which
 * follows the state dict with the non-persistent buffers).
 *
 *   "quantization": {"method": "gptq", "bits": 4, "group_size": 128,
 *                    "not_converted": ["lm_head"]}
 *
 * method gptq, awq, nf4, fp4, int8 or fp8; "bits" and "group_size" (gptq,
 * awq; group_size -1 or 0: one group over every input), "double_quant" and
 * "blocksize" (nf4, fp4: bitsandbytes' default 64), "block" [OUT, IN] (fp8:
 * 128 x 128). A Linear is converted unless its path, or a run of its dotted
 * parts, is one of "not_converted" (transformers' modules_to_not_convert,
 * and lm_head, which every quantizer leaves alone). Embeddings, norms and
 * GPT-2's Conv1D stay as they are.
 *
 * The layouts, each from the code that writes the checkpoint:
 *   gptq  AutoGPTQ's QuantLinear (qlinear_exllama.py, as the others):
 *         qweight int32 [in // 32 * bits, out], qzeros int32
 *         [ceil(in / group), out // 32 * bits], scales float16
 *         [ceil(in / group), out], g_idx int32 [in].
 *   awq   AutoAWQ's WQLinear_GEMM (awq/modules/linear/gemm.py): qweight int32
 *         [in, out // (32 // bits)], qzeros int32 [in // group, out // (32 //
 *         bits)], scales float16 [in // group, out].
 *   nf4, fp4  bitsandbytes' Linear4bit._save_to_state_dict and
 *         QuantState.as_dict(packed=True): weight uint8 [(in * out + 1) // 2, 1]
 *         (quantize_4bit: two codes a byte), weight.absmax [ceil(n / 64)]
 *         (uint8 with double quantization, else float32), weight.quant_map
 *         float32 [16]; with double quantization weight.nested_absmax float32
 *         [ceil(blocks / 256)] and weight.nested_quant_map float32 [256] (a
 *         copy per weight: "un-shared" for safetensors). The other fields go
 *         as JSON text in uint8 under weight.quant_state.bitsandbytes__nf4
 *         (or __fp4), whose length varies with the offset's digits: it is
 *         not listed, and check takes it as weight's (a key whose first name
 *         under the module is one of the module's tensors is no surplus).
 *   int8  bitsandbytes' Linear8bitLt._save_to_state_dict: weight int8
 *         [out, in], SCB float32 [out], weight_format uint8 [] (0: row-major).
 *   fp8   transformers' FP8Linear (integrations/finegrained_fp8.py): weight
 *         float8_e4m3fn [out, in], weight_scale_inv float32
 *         [ceil(out / block[0]), ceil(in / block[1])].
 * A bias stays a bias (GPTQ and AWQ keep it as a float16 buffer: same name
 * and shape).
 */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "model/quantized.h"

/* A size of a stored tensor, from the Linear's in and out and the method's numbers. */
typedef enum dim_rule {
	D_IN, D_OUT,
	D_IN_PACKED,      /* in // 32 * bits */
	D_OUT_PACKED,     /* out // 32 * bits */
	D_OUT_PACKED_AWQ, /* out // (32 // bits) */
	D_GROUPS,         /* ceil(in / group) */
	D_GROUPS_FLOOR,   /* in // group */
	D_HALF,           /* (in * out + 1) // 2 */
	D_ONE,
	D_BLOCKS,         /* ceil(in * out / blocksize) */
	D_NESTED,         /* ceil(blocks / 256): quantize_blockwise(absmax, blocksize=256) */
	D_CODE4,          /* get_4bit_type: 16 values */
	D_CODE8,          /* create_dynamic_map: 256 values */
	D_OUT_BLOCKS,     /* ceil(out / block[0]) */
	D_IN_BLOCKS,      /* ceil(in / block[1]) */
} dim_rule;

typedef struct layout_row {
	const char *name;
	ti_dtype dtype;
	int ndim;
	dim_rule dims[2];
	int double_quant;  /* -1: any; 0, 1: only without, with double quantization */
} layout_row;

typedef struct layout {
	ti_quant_method method;
	const char *name;
	layout_row rows[6];
} layout;

static const layout layouts[] = {
	{TI_QUANT_METHOD_GPTQ, "gptq", {
		{"qweight", TI_DT_INT32, 2, {D_IN_PACKED, D_OUT}, -1},
		{"qzeros", TI_DT_INT32, 2, {D_GROUPS, D_OUT_PACKED}, -1},
		{"scales", TI_DT_FLOAT16, 2, {D_GROUPS, D_OUT}, -1},
		{"g_idx", TI_DT_INT32, 1, {D_IN}, -1},
	}},
	{TI_QUANT_METHOD_AWQ, "awq", {
		{"qweight", TI_DT_INT32, 2, {D_IN, D_OUT_PACKED_AWQ}, -1},
		{"qzeros", TI_DT_INT32, 2, {D_GROUPS_FLOOR, D_OUT_PACKED_AWQ}, -1},
		{"scales", TI_DT_FLOAT16, 2, {D_GROUPS_FLOOR, D_OUT}, -1},
	}},
	{TI_QUANT_METHOD_NF4, "nf4", {
		{"weight", TI_DT_UINT8, 2, {D_HALF, D_ONE}, -1},
		{"weight.absmax", TI_DT_UINT8, 1, {D_BLOCKS}, 1},
		{"weight.absmax", TI_DT_FLOAT32, 1, {D_BLOCKS}, 0},
		{"weight.quant_map", TI_DT_FLOAT32, 1, {D_CODE4}, -1},
		{"weight.nested_absmax", TI_DT_FLOAT32, 1, {D_NESTED}, 1},
		{"weight.nested_quant_map", TI_DT_FLOAT32, 1, {D_CODE8}, 1},
	}},
	{TI_QUANT_METHOD_INT8, "int8", {
		{"weight", TI_DT_INT8, 2, {D_OUT, D_IN}, -1},
		{"SCB", TI_DT_FLOAT32, 1, {D_OUT}, -1},
		{"weight_format", TI_DT_UINT8, 0, {D_ONE}, -1},
	}},
	{TI_QUANT_METHOD_FP8, "fp8", {
		{"weight", TI_DT_FLOAT8_E4M3FN, 2, {D_OUT, D_IN}, -1},
		{"weight_scale_inv", TI_DT_FLOAT32, 2, {D_OUT_BLOCKS, D_IN_BLOCKS}, -1},
	}},
};

/* fp4 is nf4's layout under another code's name: the quant_state's key says which */
static const layout *find_layout(ti_quant_method method)
{
	ti_quant_method as = method == TI_QUANT_METHOD_FP4 ? TI_QUANT_METHOD_NF4 : method;
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].method == as)
			return &layouts[i];
	return NULL;
}

static const char *const method_names[] = {"", "gptq", "awq", "nf4", "fp4", "int8", "fp8"};

ti_quant_method ti_quant_method_from_name(const char *name)
{
	for (size_t i = 1; name && i < sizeof(method_names) / sizeof(method_names[0]); i++)
		if (!strcmp(name, method_names[i]))
			return (ti_quant_method)i;
	return TI_QUANT_METHOD_NONE;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int64_t dim_value(dim_rule r, const ti_quant_spec *q, int64_t in, int64_t out)
{
	int64_t group = q->group_size > 0 && q->group_size < in ? q->group_size : in;
	int64_t blocks = ceil_div(in * out, q->blocksize);
	switch (r) {
	case D_IN: return in;
	case D_OUT: return out;
	case D_IN_PACKED: return in / 32 * q->bits;
	case D_OUT_PACKED: return out / 32 * q->bits;
	case D_OUT_PACKED_AWQ: return out / (32 / q->bits);
	case D_GROUPS: return group ? ceil_div(in, group) : 0;
	case D_GROUPS_FLOOR: return group ? in / group : 0;
	case D_HALF: return (in * out + 1) / 2;
	case D_ONE: return 1;
	case D_BLOCKS: return blocks;
	case D_NESTED: return ceil_div(blocks, 256);
	case D_CODE4: return 16;
	case D_CODE8: return 256;
	case D_OUT_BLOCKS: return ceil_div(out, q->block[0]);
	case D_IN_BLOCKS: return ceil_div(in, q->block[1]);
	}
	return -1;
}

size_t ti_quant_layout(const ti_quant_spec *q, int64_t in, int64_t out, ti_module_stored *rows, size_t cap)
{
	const layout *l = find_layout(q->method);
	size_t n = 0;
	if (!l || in < 1 || out < 1)
		return 0;
	for (size_t i = 0; i < sizeof(l->rows) / sizeof(l->rows[0]) && l->rows[i].name; i++) {
		const layout_row *r = &l->rows[i];
		if (r->double_quant >= 0 && r->double_quant != q->double_quant)
			continue;
		if (n == cap)
			return 0;
		rows[n] = (ti_module_stored){r->name, r->dtype, r->ndim, {0, 0}};
		for (int k = 0; k < r->ndim; k++)
			rows[n].shape[k] = dim_value(r->dims[k], q, in, out);
		n++;
	}
	return n;
}

/* A whole number of the object, def when absent; false when it is there and no integer. */
static bool int_field(const cJSON *q, const char *key, int64_t def, int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(q, key);
	*out = def;
	if (!v || cJSON_IsNull(v))
		return true;
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble)
		return false;
	*out = (int64_t)v->valuedouble;
	return true;
}

ti_status ti_quant_spec_parse(const void *json, ti_quant_spec *out, ti_error *err)
{
	const cJSON *q = json;
	memset(out, 0, sizeof(*out));
	const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(q, "method"));
	if (!cJSON_IsObject(q) || !(out->method = ti_quant_method_from_name(method)))
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\" needs a \"method\": gptq, awq, nf4, fp4, int8 or fp8");
	const cJSON *block = cJSON_GetObjectItemCaseSensitive(q, "block");
	const cJSON *dq = cJSON_GetObjectItemCaseSensitive(q, "double_quant");
	int64_t bits, group, blocksize;
	out->block[0] = out->block[1] = 128;
	if (block && !(cJSON_IsArray(block) && cJSON_GetArraySize(block) == 2 &&
	               cJSON_IsNumber(cJSON_GetArrayItem(block, 0)) && cJSON_IsNumber(cJSON_GetArrayItem(block, 1))))
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\": \"block\" is [OUT, IN], two sizes");
	for (int k = 0; block && k < 2; k++)
		out->block[k] = (int64_t)cJSON_GetArrayItem(block, k)->valuedouble;
	if (!int_field(q, "bits", 4, &bits) || bits < 2 || bits > 8 || (out->method == TI_QUANT_METHOD_AWQ && 32 % bits))
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\": \"bits\" is 2 to 8 (AWQ: 2, 4 or 8)");
	if (!int_field(q, "group_size", 128, &group) || group < -1)
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\": \"group_size\" is a whole number of inputs, or -1");
	if (!int_field(q, "blocksize", 64, &blocksize) || blocksize < 1 || blocksize > 4096)
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\": \"blocksize\" is 1 to 4096");
	if (out->block[0] < 1 || out->block[1] < 1 || out->block[0] > 65536 || out->block[1] > 65536)
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\": \"block\" sizes are 1 to 65536");
	if (dq && !cJSON_IsBool(dq))
		return TI_FAIL(err, TI_E_CORRUPT, "\"quantization\": \"double_quant\" is true or false");
	out->bits = (int)bits;
	out->group_size = group;
	out->blocksize = blocksize;
	out->double_quant = cJSON_IsTrue(dq);
	return TI_OK;
}

/* Whether key is path or a run of its dotted parts: "mlp.gate" in "model.layers.0.mlp.gate", not in "...mlp.gate_proj". */
static bool names_part(const char *path, const char *key)
{
	size_t len = key ? strlen(key) : 0;
	for (const char *hit = len ? strstr(path, key) : NULL; hit; hit = strstr(hit + 1, key))
		if ((hit == path || hit[-1] == '.') && (hit[len] == '\0' || hit[len] == '.'))
			return true;
	return false;
}

/*
 * Whether the Linear at path stays floating: lm_head (transformers'
 * get_keys_to_not_convert), peft's adapters (lora_A, lora_B: the adapters of
 * a quantized base are not quantized), or a run of its dotted parts in names
 * (a cJSON list of strings).
 */
bool ti_quant_not_converted(const void *names, const char *path)
{
	static const char *const always[] = {"lm_head", "lora_A", "lora_B"};
	for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
		if (names_part(path, always[i]))
			return true;
	const cJSON *n;
	cJSON_ArrayForEach(n, (const cJSON *)names) {
		if (names_part(path, cJSON_GetStringValue(n)))
			return true;
	}
	return false;
}
