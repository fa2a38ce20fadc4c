/*
 * test_quant.c - --quantize: Linear weights as bitsandbytes stores them
 * (bitsandbytes/functional.py quantize_4bit, int8_vectorwise_quant) and the
 * weight each call dequantizes (autograd/_functions.py MatMul4Bit,
 * MatMul8bitLt; matmul_4bit's gemv_4bit for one token), byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"

#include "tinspect/arena.h"
#include "tinspect/hf_describe.h"
#include "tinspect/memory.h"
#include "tinspect/model.h"
#include "tinspect/source.h"

/*
 * A 4096 x 4096 weight (16,777,216 values) in NF4 with double quantization:
 * 8,388,608 packed bytes (two codes a byte), 262,144 blocks of 64 with a
 * uint8 absmax each, 1,024 float32 absmax of the second level (one per 256
 * blocks), the float32 offset and the 16 float32 of the NF4 code:
 * 8,388,608 + 262,144 + 4,096 + 4 + 64 = 8,654,916 bytes. Without double
 * quantization the absmax stay float32: 8,388,608 + 1,048,576 + 64.
 */
Test(quant, nf4_4096_square_with_and_without_double_quantization)
{
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_NF4, true, 4096, 4096), 8654916);
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_NF4, false, 4096, 4096), 9437248);
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_FP4, true, 4096, 4096), 8654916, "fp4 stores as nf4 does");
	cr_assert_eq(ti_memory_quant_shared_bytes(TI_QUANT_NF4, true), 1024, "the dynamic map, shared");
	cr_assert_eq(ti_memory_quant_shared_bytes(TI_QUANT_NF4, false), 0);
}

/* An odd count: 15 values pack into 8 bytes, one block (a partial one) of absmax. */
Test(quant, a_partial_block_and_an_odd_count)
{
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_FP4, false, 3, 5), 8 + 4 + 64);
	/* 65 values: two blocks; double quantization: 2 uint8 absmax, one float32 of level two, the offset */
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_NF4, true, 5, 13), 33 + 2 + 4 + 4 + 64);
}

/* LLM.int8: CB int8 [out, in] and SCB, a float32 scale per output row. */
Test(quant, int8_is_a_byte_a_weight_and_a_scale_a_row)
{
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_INT8, false, 4096, 4096), 16777216 + 4 * 4096);
	cr_assert_eq(ti_memory_quant_bytes(TI_QUANT_INT8, false, 11008, 4096), 11008LL * 4096 + 4 * 11008);
}

/* FineGrainedFP8 (DeepSeek-V3's upload): a float8_e4m3fn byte a weight and a float32 weight_scale_inv a 128 x 128
   block, a partial block counting whole (DeepSeek-V3's q_b_proj [24576, 1536]: 192 x 12 blocks). */
Test(quant, fp8_is_a_byte_a_weight_and_a_float32_scale_a_block)
{
	cr_assert_eq(ti_memory_fp8_bytes(128, 24576, 1536), 24576LL * 1536 + 4 * 192 * 12);
	cr_assert_eq(ti_memory_fp8_bytes(128, 129, 1), 129 + 4 * 2);
	cr_assert_eq(ti_memory_fp8_bytes(0, 1, 1), -1);
}

/* x [N, 256] -> norm (LayerNorm) -> fc1 (Linear 256 -> 512) -> ReLU -> lm_head (Linear 512 -> 128), float32. */
static const char *net =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 256]}},"
	" \"modules\": {\"norm\": {\"type\": \"LayerNorm\", \"normalized_shape\": 256},"
	"  \"fc1\": {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 512},"
	"  \"act\": {\"type\": \"ReLU\"},"
	"  \"lm_head\": {\"type\": \"Linear\", \"in_features\": 512, \"out_features\": 128}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"norm\", \"args\": [\"x\"]},"
	"  {\"out\": \"h\", \"call\": \"fc1\", \"args\": [\"h\"]},"
	"  {\"out\": \"h\", \"call\": \"act\", \"args\": [\"h\"]},"
	"  {\"out\": \"y\", \"call\": \"lm_head\", \"args\": [\"h\"]}]}";

static ti_model *open_net(int64_t n)
{
	static const char *const names[] = {"N"};
	int64_t values[] = {n};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 1};
	ti_model *m = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_model_open(net, strlen(net), &o, &m, &err) == TI_OK, "%s", err.message);
	return m;
}

static const ti_memory_report *estimate(ti_model *m, const ti_memory_options *o)
{
	const ti_memory_report *r = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_memory_estimate(m, o, &r, &err) == TI_OK, "%s", err.message);
	return r;
}

/* How much the first step of phase whose name contains step rose above what was live before it. */
static int64_t rise(const ti_memory_report *r, ti_memory_phase phase, const char *step)
{
	for (size_t i = 1; i < r->point_count; i++)
		if (r->timeline[i].phase == phase && strstr(r->timeline[i].step, step))
			return r->timeline[i].high - r->timeline[i - 1].live;
	cr_assert_fail("no step named %s", step);
	return -1;
}

enum { FC1_W = 512 * 256, DEQ = FC1_W * 4, LN = 2 * 256 * 4, FC1_B = 512 * 4, HEAD = 128 * 512 * 4 + 128 * 4 };

Test(quant, the_weights_are_bitsandbytes_bytes_and_lm_head_stays)
{
	ti_model *m = open_net(64);
	ti_memory_options o = {.quantize = TI_QUANT_NF4, .quant_double = true};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->weights, ti_memory_quant_bytes(TI_QUANT_NF4, true, 512, 256) + FC1_B + LN + HEAD);
	ti_model_close(m);
	m = open_net(64);
	ti_memory_options o8 = {.quantize = TI_QUANT_INT8};
	r = estimate(m, &o8);
	cr_assert_eq(r->weights, FC1_W + 4 * 512 + FC1_B + LN + HEAD);
	ti_model_close(m);
}

/*
 * Inference, 64 rows: fc1's call holds its output [64, 512] and, for the
 * call, the weight dequantized in float32 (MatMul4Bit.forward); one row
 * takes gemv_4bit, which dequantizes nothing.
 */
Test(quant, a_4bit_call_dequantizes_its_weight_unless_one_token)
{
	ti_model *m = open_net(64);
	ti_memory_options o = {.quantize = TI_QUANT_NF4};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(rise(r, TI_PHASE_FORWARD, "fc1"), 64 * 512 * 4 + DEQ);
	ti_model_close(m);
	m = open_net(1);
	r = estimate(m, &o);
	cr_assert_eq(rise(r, TI_PHASE_FORWARD, "fc1"), 512 * 4);
	ti_model_close(m);
	ti_memory_options plain = {0};
	m = open_net(64);
	r = estimate(m, &plain);
	cr_assert_eq(rise(r, TI_PHASE_FORWARD, "fc1"), 64 * 512 * 4, "no quantization, no scratch");
	ti_model_close(m);
}

/*
 * LLM.int8 (MatMul8bitLt): the float32 input cast to float16 [64, 256], its
 * int8 copy CA and its float32 row scales SCA, the int32 product [64, 512].
 */
Test(quant, an_int8_call_quantizes_its_input)
{
	ti_model *m = open_net(64);
	ti_memory_options o = {.quantize = TI_QUANT_INT8};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(rise(r, TI_PHASE_FORWARD, "fc1"), 64 * 512 * 4 + 64 * 256 * (2 + 1) + 64 * 4 + 64 * 512 * 4);
	ti_model_close(m);
}

/*
 * Training with the norm trainable (as a QLoRA adapter would be upstream):
 * the 4-bit fc1 gets no gradient and no state, and its backward dequantizes
 * the weight again for the input's gradient (MatMul4Bit.backward).
 */
Test(quant, backward_dequantizes_again_for_the_input_s_gradient)
{
	static const char *const trainable[] = {"norm.*"};
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .trainable = trainable,
	                       .trainable_count = 1, .quantize = TI_QUANT_NF4};
	ti_model *m = open_net(64);
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->gradients, LN, "only the norm's");
	int64_t q = rise(r, TI_PHASE_BACKWARD, "fc1");
	ti_model_close(m);
	ti_memory_options plain = o;
	plain.quantize = TI_QUANT_NONE;
	m = open_net(64);
	r = estimate(m, &plain);
	int64_t p = rise(r, TI_PHASE_BACKWARD, "fc1");
	ti_model_close(m);
	cr_assert_eq(q - p, DEQ, "%lld vs %lld", (long long)q, (long long)p);
}

/* ---- quantized checkpoints: fixtures/quant/gen_quant.py, fixtures/gguf/every_type.gguf ---- */

typedef struct ckpt_report {
	int64_t weights, gradients;
	char note[512];
} ckpt_report;

static ckpt_report from_checkpoint(const char *path, ti_memory_mode mode, ti_dtype dtype)
{
	ti_source *src = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_source_open(path, &src, &err) == TI_OK, "%s: %s", path, err.message);
	ti_arena arena;
	ti_arena_init(&arena, (size_t)16 << 20);
	ti_memory_options o = {.mode = mode, .optimizer = mode == TI_MEMORY_TRAIN ? TI_OPTIM_ADAM : TI_OPTIM_NONE,
	                       .dtype = dtype};
	const ti_memory_report *r = NULL;
	cr_assert(ti_memory_from_source(src, &o, &arena, &r, &err) == TI_OK, "%s", err.message);
	ckpt_report out = {r->weights, r->gradients, ""};
	for (size_t i = 0; i < r->note_count; i++)
		if (!strncmp(r->notes[i], "quantized: ", 11))
			snprintf(out.note, sizeof(out.note), "%s", r->notes[i]);
	ti_arena_release(&arena);
	ti_source_close(src);
	return out;
}

/* float16: embed_tokens and lm_head [100, 64], norm [64]; as float32 under --dtype */
enum { PLAIN16 = (2 * 100 * 64 + 64) * 2, PLAIN32 = PLAIN16 * 2 };

/*
 * GPTQ, 4 bits, group 32, 64 -> 64: qweight int32 [8, 64] 2,048 bytes, qzeros
 * int32 [2, 8] 64, scales float16 [2, 64] 256, g_idx int32 [64] 256, bias
 * float16 128 (a buffer of QuantLinear): 2,752 bytes at their bytes under
 * --dtype float32, and none takes a gradient.
 */
Test(quant, a_gptq_checkpoint_counts_its_packed_tensors_and_trains_none)
{
	ckpt_report r = from_checkpoint("fixtures/quant/gptq_tiny.safetensors", TI_MEMORY_TRAIN, TI_DT_FLOAT32);
	cr_assert_eq(r.weights, PLAIN32 + 2048 + 64 + 256 + 256 + 128);
	cr_assert_eq(r.gradients, PLAIN32);
	cr_assert(strstr(r.note, "GPTQ") && !strstr(r.note, "AWQ"), "%s", r.note);
	r = from_checkpoint("fixtures/quant/awq_tiny.safetensors", TI_MEMORY_TRAIN, TI_DT_INVALID);
	cr_assert_eq(r.weights, PLAIN16 + 64 * 8 * 4 + 64 + 256);
	cr_assert_eq(r.gradients, PLAIN16);
	cr_assert(strstr(r.note, "AWQ"), "%s", r.note);
}

/* bitsandbytes through transformers: the packed weight and QuantState.as_dict(packed=True)'s tensors. */
Test(quant, bitsandbytes_checkpoints_name_their_method)
{
	ckpt_report r = from_checkpoint("fixtures/quant/bnb_nf4_tiny.safetensors", TI_MEMORY_TRAIN, TI_DT_FLOAT32);
	cr_assert_eq(r.gradients, PLAIN32, "the uint8 weight, absmax, quant maps train not");
	cr_assert(r.weights > PLAIN32 + 2048 + 64 + 64 + 4 + 1024, "the state is counted, not cast: %lld",
	          (long long)r.weights);
	cr_assert(strstr(r.note, "bitsandbytes nf4") && !strstr(r.note, "4-bit"), "%s", r.note);
	r = from_checkpoint("fixtures/quant/bnb_int8_tiny.safetensors", TI_MEMORY_TRAIN, TI_DT_INVALID);
	cr_assert_eq(r.weights, PLAIN16 + 64 * 64 + 64 * 4 + 1);
	cr_assert_eq(r.gradients, PLAIN16, "SCB is float32 but the weight's scale, not a parameter");
	cr_assert(strstr(r.note, "bitsandbytes int8"), "%s", r.note);
}

/*
 * GGUF: Q8_0 [2, 64] is 4 blocks of 34 bytes (136), Q4_0 [2, 32] 2 blocks of
 * 18 (36), Q4_K [1, 256] one super-block of 144: the file's bytes, though
 * tinspect reads the first two as float32; the other tensors are 261 bytes.
 */
Test(quant, gguf_blocks_count_at_their_bytes_in_the_file)
{
	ckpt_report r = from_checkpoint("fixtures/gguf/every_type.gguf", TI_MEMORY_TRAIN, TI_DT_INVALID);
	cr_assert_eq(r.weights, 136 + 36 + 144 + 261);
	cr_assert_eq(r.gradients, 48 + 32 + 32 + 20 + 32 + 48, "the floating tensors that are not blocks");
	cr_assert(strstr(r.note, "GGUF Q8_0, Q4_0, Q4_K"), "%s", r.note);
}

Test(quant, a_plain_checkpoint_has_no_quantization_note)
{
	ckpt_report r = from_checkpoint("fixtures/resnet18_small.pt", TI_MEMORY_INFER, TI_DT_INVALID);
	cr_assert_str_eq(r.note, "");
}

/*
 * GPTQ 4-bit, group 128, a 4096 x 4096 q_proj as AutoGPTQ packs it (the
 * tensors of Llama-3.1-8B GPTQ-INT4 uploads): qweight int32 [512, 4096]
 * 8,388,608 bytes, qzeros int32 [32, 512] 65,536, scales float16 [32, 4096]
 * 262,144, g_idx int32 [4096] 16,384; AWQ has no g_idx, and its qweight is
 * [4096, 512].
 */
Test(quant, gptq_and_awq_pack_as_autogptq_and_autoawq)
{
	cr_assert_eq(ti_memory_gptq_bytes(false, 4, 128, 4096, 4096), 8388608 + 65536 + 262144 + 16384);
	cr_assert_eq(ti_memory_gptq_bytes(true, 4, 128, 4096, 4096), 8388608 + 65536 + 262144);
	/* the fixtures, written by gen_quant.py from the quantizers' shapes: 64 -> 64 in groups of 32 */
	cr_assert_eq(ti_memory_gptq_bytes(false, 4, 32, 64, 64), 2048 + 64 + 256 + 256);
	cr_assert_eq(ti_memory_gptq_bytes(true, 4, 32, 64, 64), 2048 + 64 + 256);
	/* group_size -1: one group a row; 8 bits: 4 values an int32 */
	cr_assert_eq(ti_memory_gptq_bytes(false, 8, -1, 64, 128), 128 / 4 * 4 * 64 + 64 / 4 * 4 + 64 * 2 + 128 * 4);
	cr_assert_eq(ti_memory_gptq_bytes(false, 9, 128, 64, 64), -1);
}

/* The fixtures' model as a description: embed_tokens, one q_proj (64 -> 64, with a bias), an RMSNorm, lm_head. */
static const char *llama_one =
	"{\"inputs\": {\"ids\": {\"shape\": [1, 8], \"dtype\": \"int64\"}},"
	" \"modules\": {\"model\": {\"type\": \"Module\", \"modules\": {"
	"   \"embed_tokens\": {\"type\": \"Embedding\", \"num_embeddings\": 100, \"embedding_dim\": 64},"
	"   \"layers\": {\"type\": \"Module\", \"modules\": {\"0\": {\"type\": \"Module\", \"modules\": {"
	"     \"self_attn\": {\"type\": \"Module\", \"modules\": {"
	"       \"q_proj\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}}}}}}},"
	"   \"norm\": {\"type\": \"RMSNorm\", \"normalized_shape\": 64}}},"
	"  \"lm_head\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 100, \"bias\": false}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"model.embed_tokens\", \"args\": [\"ids\"]},"
	"  {\"out\": \"h\", \"call\": \"model.layers.0.self_attn.q_proj\", \"args\": [\"h\"]},"
	"  {\"out\": \"h\", \"call\": \"model.norm\", \"args\": [\"h\"]},"
	"  {\"out\": \"y\", \"call\": \"lm_head\", \"args\": [\"h\"]}]}";

/* --weights CKPT: q_proj.weight held as GPTQ's or bitsandbytes' tensors counts at their bytes and does not train. */
Test(quant, weights_from_a_quantized_checkpoint_hold_the_linear_at_its_bytes)
{
	static const struct {
		const char *path;
		int64_t held;
	} cases[] = {
		{"fixtures/quant/gptq_tiny.safetensors", 2048 + 64 + 256 + 256},
		{"fixtures/quant/awq_tiny.safetensors", 2048 + 64 + 256},
		{"fixtures/quant/bnb_int8_tiny.safetensors", 64 * 64 + 64 * 4 + 1},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		ti_model *m = NULL;
		ti_error err;
		ti_error_clear(&err);
		ti_model_options mo = {.training = true};
		cr_assert(ti_model_open(llama_one, strlen(llama_one), &mo, &m, &err) == TI_OK, "%s", err.message);
		ti_source *src = NULL;
		cr_assert(ti_source_open(cases[k].path, &src, &err) == TI_OK, "%s", err.message);
		ti_arena arena;
		ti_arena_init(&arena, (size_t)16 << 20);
		ti_dtype *dtypes;
		int64_t *held, state;
		size_t matched;
		cr_assert(ti_memory_weights_from(src, m, &arena, &dtypes, &held, &matched, &state, &err) == TI_OK);
		size_t np;
		const ti_model_param *p = ti_model_params(m, &np);
		int64_t q = 0;
		for (size_t i = 0; i < np; i++)
			if (!strcmp(p[i].name, "model.layers.0.self_attn.q_proj.weight"))
				q = held[i];
		cr_assert_eq(q, cases[k].held, "%s: %lld", cases[k].path, (long long)q);
		ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .param_dtypes = dtypes,
		                       .param_bytes = held};
		const ti_memory_report *r = NULL;
		cr_assert(ti_memory_estimate(m, &o, &r, &err) == TI_OK, "%s", err.message);
		/* the rest as the checkpoint's float16 (embed, norm, lm_head), a bias as found or float32 */
		int64_t bias = strstr(cases[k].path, "gptq") ? 64 * 2 : 64 * 4;
		int64_t rest = (100 * 64 + 64 + 100 * 64) * 2 + bias;
		cr_assert_eq(r->weights, rest + cases[k].held, "%s", cases[k].path);
		cr_assert_eq(r->gradients, rest, "%s: the quantized weight trains not", cases[k].path);
		ti_arena_release(&arena);
		ti_source_close(src);
		ti_model_close(m);
	}
}

/*
 * LLM.int8 in training (the norm trainable): MatMul8bitLt keeps its input A
 * (ctx.tensors) where a 4-bit or a frozen float layer keeps nothing of it,
 * and its backward dequantizes CB into A's dtype for grad_A.
 */
Test(quant, int8_keeps_its_input_and_dequantizes_in_backward)
{
	static const char *const trainable[] = {"norm.*"};
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .trainable = trainable,
	                       .trainable_count = 1, .quantize = TI_QUANT_INT8};
	ti_model *m = open_net(64);
	const ti_memory_report *r = estimate(m, &o);
	int64_t acts = r->activations, q = rise(r, TI_PHASE_BACKWARD, "fc1");
	ti_model_close(m);
	ti_memory_options plain = o;
	plain.quantize = TI_QUANT_NONE;
	m = open_net(64);
	r = estimate(m, &plain);
	cr_assert_eq(acts - r->activations, 64 * 256 * 4, "the norm's output, fc1's A");
	cr_assert_eq(q - rise(r, TI_PHASE_BACKWARD, "fc1"), DEQ);
	ti_model_close(m);
}

/*
 * GPT-2's Conv1D layers (weight [in, out]) are quantized as replace_with_bnb_linear
 * converts them, out x in: 12 layers of c_attn 768 -> 2304, attn.c_proj
 * 768 -> 768, c_fc 768 -> 3072, mlp.c_proj 3072 -> 768; the embeddings, norms
 * and biases stay float32.
 */
Test(quant, gpt2_conv1d_weights_are_quantized_too)
{
	FILE *f = fopen("fixtures/hf/gpt2/config.json", "rb");
	cr_assert(f);
	char text[8192];
	size_t n = fread(text, 1, sizeof(text), f);
	fclose(f);
	char *desc;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(text, n, &desc, &err) == TI_OK, "%s", err.message);
	static const char *const names[] = {"B", "T"};
	int64_t values[] = {1, 16};
	ti_model_options mo = {.bind_names = names, .bind_values = values, .bind_count = 2};
	ti_memory_options plain = {0}, nf4 = {.quantize = TI_QUANT_NF4};
	int64_t w[2];
	for (int k = 0; k < 2; k++) { /* a model traces once: a fresh one for each estimate */
		ti_model *m = NULL;
		cr_assert(ti_model_open(desc, strlen(desc), &mo, &m, &err) == TI_OK, "%s", err.message);
		w[k] = estimate(m, k ? &nf4 : &plain)->weights;
		ti_model_close(m);
	}
	free(desc);
	int64_t p = w[0], q = w[1];
	int64_t values_per_layer = 768 * 2304 + 768 * 768 + 768 * 3072 + 3072 * 768;
	int64_t packed = ti_memory_quant_bytes(TI_QUANT_NF4, false, 2304, 768) +
	                 ti_memory_quant_bytes(TI_QUANT_NF4, false, 768, 768) +
	                 ti_memory_quant_bytes(TI_QUANT_NF4, false, 3072, 768) +
	                 ti_memory_quant_bytes(TI_QUANT_NF4, false, 768, 3072);
	cr_assert_eq(p - q, 12 * (values_per_layer * 4 - packed), "%lld vs %lld", (long long)p, (long long)q);
}
