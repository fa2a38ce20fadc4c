/*
 * test_quant.c - --quantize: Linear weights as bitsandbytes stores them
 * (bitsandbytes/functional.py quantize_4bit, int8_vectorwise_quant) and the
 * weight each call dequantizes (autograd/_functions.py MatMul4Bit,
 * MatMul8bitLt; matmul_4bit's gemv_4bit for one token), byte for byte.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"

#include "tinspect/memory.h"
#include "tinspect/model.h"

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
