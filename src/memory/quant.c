/*
 * quant.c - the base model's Linear weights as bitsandbytes stores and runs
 * them (--quantize int8|nf4|fp4, and QLoRA: --lora on a 4-bit base).
 *
 * Storage, after bitsandbytes/functional.py:
 *   quantize_4bit     out = uint8 [(n + 1) // 2, 1]: two 4-bit codes a byte;
 *                     absmax = float32 [ceil(n / blocksize)], blocksize 64
 *                     (transformers' BitsAndBytesConfig default); with
 *                     compress_statistics (bnb_4bit_use_double_quant):
 *                     offset = absmax.mean() (a float32 scalar), then
 *                     quantize_blockwise(absmax - offset, blocksize=256): a
 *                     uint8 absmax per block and state2.absmax, float32 per
 *                     256 blocks, with the dynamic map (create_dynamic_map,
 *                     256 float32) cached once in name2qmap["dynamic"] and
 *                     shared; code = get_4bit_type(quant_type): 16 float32,
 *                     a tensor per weight.
 *   int8_vectorwise_quant (Int8Params, LLM.int8): CB int8 [out, in] and SCB
 *                     float32 [out], a scale per row.
 * Running (bitsandbytes/autograd/_functions.py):
 *   MatMul4Bit        forward: F.linear(A, dequantize_4bit(B, state).to(A.dtype).t())
 *                     materialises the weight in the compute dtype, freed when
 *                     the call returns; it saves only B (the packed weight);
 *                     backward: grad_A = grad_output @ dequantize_4bit(B) again
 *                     (no grad_B: the 4-bit weight does not train). matmul_4bit
 *                     takes gemv_4bit instead, with no dequantized weight, for
 *                     one token that needs no gradient (a decode step).
 *   GPTQ, AWQ         (a Hugging Face config's quantization_config) their kernels
 *                     (exllama, marlin, AWQ's GEMM) dequantize a tile at a time:
 *                     no whole weight, no scratch counted.
 *   MatMul8bitLt      forward: A.to(float16) (a copy unless A is float16),
 *                     int8_vectorwise_quant: CA int8 [rows, in] and SCA float32
 *                     [rows], the int8 product accumulated in int32 [rows, out]
 *                     and dequantized: freed when the call returns; it keeps A
 *                     (ctx.tensors) when A wants a gradient, and backward
 *                     dequantizes CB into A's dtype for grad_A.
 */
#include <string.h>

#include "memory/memory_internal.h"

enum { BLOCK = 64, BLOCK2 = 256, CODE4 = 16 * 4, DYNAMIC = 256 * 4 };

const char *ti_memory_quant_name(ti_memory_quant q)
{
	static const char *const names[] = {"none", "int8", "nf4", "fp4", "gptq", "awq", "fp8"};
	return (unsigned)q < sizeof(names) / sizeof(names[0]) ? names[q] : "?";
}

int64_t ti_memory_quant_bytes(ti_memory_quant q, bool double_quant, int64_t rows, int64_t cols)
{
	int64_t n = rows * cols;
	if (q == TI_QUANT_INT8)
		return n + 4 * rows;
	if (q != TI_QUANT_NF4 && q != TI_QUANT_FP4)
		return -1;
	int64_t blocks = (n + BLOCK - 1) / BLOCK;
	int64_t stats = double_quant ? blocks + 4 * ((blocks + BLOCK2 - 1) / BLOCK2) + 4 : 4 * blocks;
	return (n + 1) / 2 + stats + CODE4;
}

int64_t ti_memory_gptq_bytes(bool awq, int bits, int64_t group, int64_t rows, int64_t cols)
{
	if (bits < 1 || bits > 8 || rows < 0 || cols < 0)
		return -1;
	int64_t groups = group > 0 ? (cols + group - 1) / group : 1;
	/* packed in int32s: 32 / bits values each (AutoGPTQ's pack: qweight [in // 32 * bits, out]) */
	int64_t qweight = (cols * bits + 31) / 32 * 4 * rows;
	if (awq)
		qweight = (rows * bits + 31) / 32 * 4 * cols;
	int64_t qzeros = groups * ((rows * bits + 31) / 32) * 4;
	int64_t scales = groups * rows * 2;
	return qweight + qzeros + scales + (awq ? 0 : 4 * cols);
}

int64_t ti_memory_fp8_bytes(int64_t block, int64_t rows, int64_t cols)
{
	if (block < 1 || rows < 0 || cols < 0)
		return -1;
	return rows * cols + 4 * ((rows + block - 1) / block) * ((cols + block - 1) / block);
}

int64_t ti_memory_quant_shared_bytes(ti_memory_quant q, bool double_quant)
{
	return (q == TI_QUANT_NF4 || q == TI_QUANT_FP4) && double_quant ? DYNAMIC : 0;
}

/* transformers' Conv1D (GPT-2), a def of the templates named Conv1D...: its weight is [in, out] */
static bool is_conv1d(const ti_module *mod)
{
	return mod && !strncmp(mod->type, "Conv1D", 6);
}

bool mem_quantized(const ti_model *m, const ti_memory_options *o, size_t i)
{
	if (!o->quantize || i >= m->param_count_all)
		return false;
	const ti_model_param *p = &m->params[i];
	const ti_module *mod = m->param_modules[i];
	/* replace_with_bnb_linear converts nn.Linear and Conv1D (its weight transposed) alike */
	if (p->buffer || !mod || (strcmp(mod->type, "Linear") && !is_conv1d(mod)) || strcmp(m->param_locals[i], "weight") ||
	    !ti_dtype_is_floating(p->dtype) || p->ndim != 2)
		return false;
	/* transformers' get_keys_to_not_convert: the output embedding stays; peft's adapters are not the base's */
	const char *path = mod->path;
	if (!strcmp(path, "lm_head") || !strncmp(path, "lm_head.", 8))
		return false;
	return !strstr(p->name, ".lora_A.") && !strstr(p->name, ".lora_B.");
}

int64_t mem_quant_rows(const ti_model *m, size_t i)
{
	const ti_model_param *p = &m->params[i];
	int64_t rows = p->shape[is_conv1d(m->param_modules[i]) ? 1 : 0];
	return rows > 0 ? rows : 1;
}

void mem_quant_linear(mem_builder *b, mem_unit *u, const ti_meta_tensor *x, const ti_meta_tensor *w)
{
	if (u->nin < 2 || !x || !w || w->ndim != 2)
		return;
	const mem_tensor *t = &b->tensors[u->in[1]];
	if (t->param < 0 || !mem_quantized(b->model, b->options, (size_t)t->param))
		return;
	bool conv1d = is_conv1d(b->model->param_modules[t->param]);
	int64_t out = w->shape[conv1d ? 1 : 0].value, in = w->shape[conv1d ? 0 : 1].value;
	int64_t rows = in ? mem_meta_bytes(x) / (int64_t)ti_dtype_size(x->dtype) / in : 0;
	int64_t es = (int64_t)ti_dtype_size(x->dtype);
	if (b->options->quantize == TI_QUANT_GPTQ || b->options->quantize == TI_QUANT_AWQ)
		return;
	if (b->options->quantize == TI_QUANT_FP8) {
		/* FP8Linear: act_quant casts the input to fp8 with a float32 scale a group of block inputs a row, and
		   the block-wise fp8 matmul writes the output; the weight is never dequantized */
		int64_t block = b->options->quant_group > 0 ? b->options->quant_group : 128;
		u->fwd_scratch += rows * in + 4 * rows * ((in + block - 1) / block);
		return;
	}
	if (b->options->quantize == TI_QUANT_INT8) {
		int64_t scratch = rows * in * (x->dtype == TI_DT_FLOAT16 ? 1 : 3) + 4 * rows + 4 * rows * out;
		u->fwd_scratch += scratch;
		/* ctx.tensors = (CAt, subA, A): A itself is kept when it wants a gradient; backward dequantizes CB
		   (state.CB.to(dtype_A, copy=True).mul_(SCB)) for grad_A */
		u->saved_in |= 1u;
		u->saved_if[0] |= 1u;
		u->bwd_scratch_in += out * in * es;
		return;
	}
	bool grad = mem_training(b);
	if (rows == 1 && !grad) /* gemv_4bit: no dequantized weight */
		return;
	int64_t deq = out * in * es;
	u->fwd_scratch += deq;
	/* backward: dequantized again for grad_input, when the input wants one */
	u->bwd_scratch_in += deq;
}
