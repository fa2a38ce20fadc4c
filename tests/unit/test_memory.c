/*
 * test_memory.c - the memory simulation on small descriptions whose every
 * byte is worked out by hand below: what is live when, what autograd
 * keeps, what the optimizer adds, and the errors for what cannot be sized.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "unit.h"

#include "tinspect/hf_describe.h"
#include "tinspect/memory.h"

/* x [64, 1024] -> Linear(1024, 4096) -> ReLU -> Linear(4096, 1024), float32. */
static const char *mlp =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 1024]}},"
	" \"modules\": {\"net\": {\"type\": \"Sequential\", \"modules\": ["
	"   {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 4096},"
	"   {\"type\": \"ReLU\"},"
	"   {\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 1024}]}},"
	" \"graph\": [{\"out\": \"y\", \"call\": \"net\", \"args\": [\"x\"]}]}";

enum {
	W1 = 4096 * 1024 * 4, B1 = 4096 * 4, W2 = 1024 * 4096 * 4, B2 = 1024 * 4,
	WEIGHTS = W1 + B1 + W2 + B2, /* 33,574,912 */
	X = 64 * 1024 * 4,           /* 262,144 */
	H = 64 * 4096 * 4,           /* 1 MiB: the hidden layer */
	Y = 64 * 1024 * 4            /* the output: in training live until the backward ends */
};

/* The description with its symbols bound. */
static ti_model *model_bound(const char *text, const char *const *names, const int64_t *values, size_t count)
{
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = count};
	ti_model *m = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status st = ti_model_open(text, strlen(text), &o, &m, &err);
	cr_assert(st == TI_OK, "opening failed: %s", err.message);
	return m;
}

static ti_model *model_of(const char *text, int64_t n)
{
	const char *names[] = {"N"};
	int64_t values[] = {n};
	return model_bound(text, names, values, 1);
}

static const ti_memory_report *estimate(ti_model *m, const ti_memory_options *o)
{
	const ti_memory_report *r = NULL;
	ti_error err;
	ti_error_clear(&err);
	ti_status st = ti_memory_estimate(m, o, &r, &err);
	cr_assert(st == TI_OK, "estimate failed: %s", err.message);
	return r;
}

/* How much the first backward step whose name contains step rose above what was live before it; asserts there is one. */
static int64_t backward_rise(const ti_memory_report *r, const char *step)
{
	for (size_t i = 1; i < r->point_count; i++)
		if (r->timeline[i].phase == TI_PHASE_BACKWARD && strstr(r->timeline[i].step, step))
			return r->timeline[i].high - r->timeline[i - 1].live;
	cr_assert_fail("no backward step named %s", step);
	return -1;
}

/* The most a forward step holds above what it leaves live: its scratch. */
static int64_t forward_scratch(const ti_memory_report *r, const char *step)
{
	for (size_t i = 0; i < r->point_count; i++)
		if (r->timeline[i].phase == TI_PHASE_FORWARD && strstr(r->timeline[i].step, step))
			return r->timeline[i].high - r->timeline[i].live;
	cr_assert_fail("no forward step named %s", step);
	return -1;
}

Test(memory, inference_peaks_while_the_hidden_layer_and_its_relu_are_both_live)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->weights, WEIGHTS);
	cr_assert_eq(r->inputs, X);
	cr_assert_eq(r->gradients, 0);
	cr_assert_eq(r->activations, 0);
	/* weights + x + linear's output + relu's output: the first output dies after relu */
	cr_assert_eq(r->peak, WEIGHTS + X + 2 * H, "peak %lld", (long long)r->peak);
	cr_assert_eq(r->peak_phase, TI_PHASE_FORWARD);
	cr_assert_str_eq(r->peak_step, "net.1 (relu)");
	ti_model_close(m);
}

Test(memory, training_keeps_what_relu_and_linear_saved_and_peaks_at_the_first_layers_gradients)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->gradients, WEIGHTS);
	cr_assert_eq(r->optimizer_state, 0);
	/* relu saves its result, which the second linear saves as its input: one hidden layer */
	cr_assert_eq(r->activations, H, "activations %lld", (long long)r->activations);
	/* the first linear's backward: the output, the second's .grad, the hidden gradient, the first's new .grad */
	cr_assert_eq(r->peak, WEIGHTS + X + Y + (W2 + B2) + H + (W1 + B1), "peak %lld", (long long)r->peak);
	cr_assert_eq(r->peak_phase, TI_PHASE_BACKWARD);
	cr_assert_str_eq(r->peak_step, "net.0 (linear)");
	ti_model_close(m);
}

Test(memory, momentum_adds_one_buffer_per_parameter_for_the_whole_step)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_MOMENTUM};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->optimizer_state, WEIGHTS);
	cr_assert_eq(r->peak, 2 * WEIGHTS + X + Y + (W2 + B2) + H + (W1 + B1));
	ti_model_close(m);
}

Test(memory, adam_peaks_in_the_step_with_two_temporaries_of_the_largest_parameter_and_the_last_denom)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_ADAM};
	const ti_memory_report *r = estimate(m, &o);
	/* exp_avg and exp_avg_sq per parameter, and a float32 step tensor each of the four */
	cr_assert_eq(r->optimizer_state, 2 * WEIGHTS + 4 * 4);
	/* the second weight's sqrt and division while the first bias's denom is still bound */
	cr_assert_eq(r->peak, WEIGHTS + X + WEIGHTS + (2 * WEIGHTS + 16) + B1 + 2 * W2, "peak %lld", (long long)r->peak);
	cr_assert_eq(r->peak_phase, TI_PHASE_OPTIMIZER);
	ti_model_close(m);
}

Test(memory, foreach_makes_the_temporaries_of_every_parameter_at_once)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_ADAM, .impl = TI_IMPL_FOREACH};
	const ti_memory_report *r = estimate(m, &o);
	/* measured on 1.13: foreach Adam makes two temporaries of every parameter at once */
	cr_assert_eq(r->peak, WEIGHTS + X + WEIGHTS + (2 * WEIGHTS + 16) + 2 * WEIGHTS, "peak %lld", (long long)r->peak);
	ti_model_close(m);
}

Test(memory, frozen_parameters_get_no_gradient_and_no_state)
{
	ti_model *m = model_of(mlp, 64);
	const char *frozen[] = {"net.0.*"};
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_MOMENTUM, .frozen = frozen, .frozen_count = 1};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->gradients, W2 + B2);
	cr_assert_eq(r->optimizer_state, W2 + B2);
	ti_model_close(m);
}

Test(memory, accumulation_starts_the_last_micro_batch_with_every_gradient_live)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .accumulate = 4};
	const ti_memory_report *r = estimate(m, &o);
	/* the second linear's backward: the output, every .grad, relu's saved result, the loss's gradient made
	   contiguous for its formulas, and its three new gradients */
	cr_assert_eq(r->peak, WEIGHTS + X + Y + WEIGHTS + H + Y + (H + W2 + B2), "peak %lld", (long long)r->peak);
	ti_model_close(m);
}

Test(memory, the_cuda_allocator_rounds_every_tensor_up_to_512_bytes)
{
	ti_model *m = model_of(mlp, 1);
	ti_memory_options o = {.device = TI_MEMORY_CUDA};
	const ti_memory_report *r = estimate(m, &o);
	/* x is 4096 bytes already; a hidden vector of 16384 bytes too; the biases round to 16384 and 4096 */
	cr_assert_eq(r->peak % 512, 0);
	ti_model_close(m);
}

static const char *tied =
	"{\"inputs\": {\"ids\": {\"shape\": [8], \"dtype\": \"int64\"}},"
	" \"modules\": {\"emb\": {\"type\": \"Embedding\", \"num_embeddings\": 1000, \"embedding_dim\": 64},"
	"               \"head\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1000, \"bias\": false}},"
	" \"tied\": {\"head.weight\": \"emb.weight\"},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"emb\", \"args\": [\"ids\"]},"
	"            {\"out\": \"y\", \"call\": \"head\", \"args\": [\"h\"]}]}";

Test(memory, tied_weights_are_one_storage_and_their_two_gradients_are_summed_out_of_place)
{
	ti_model *m = model_of(tied, 0);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	enum { E = 1000 * 64 * 4, LOGITS = 8 * 1000 * 4 };
	cr_assert_eq(r->weights, E);
	cr_assert_eq(r->gradients, E);
	/* the head's gradient, the embedding's, and their sum, at once (measured on PyTorch 1.13), beside the
	   logits, live until the backward ends */
	cr_assert(r->peak >= 4 * E + LOGITS && r->peak < 4 * E + LOGITS + 8192, "peak %lld", (long long)r->peak);
	ti_model_close(m);
}

static const char *causal =
	"{\"inputs\": {\"q\": {\"shape\": [2, 4, \"T\", 16]}, \"k\": {\"shape\": [2, 4, \"T\", 16]},"
	"             \"v\": {\"shape\": [2, 4, \"T\", 16]}, \"mask\": {\"shape\": [\"T\", \"T\"], \"dtype\": \"bool\"}},"
	" \"graph\": [{\"out\": \"kt\", \"op\": \"transpose\", \"args\": [\"k\", -2, -1]},"
	"            {\"out\": \"s\", \"op\": \"matmul\", \"args\": [\"q\", \"kt\"]},"
	"            {\"out\": \"s\", \"op\": \"masked_fill\", \"args\": [\"s\", \"mask\", -1e9]},"
	"            {\"out\": \"a\", \"op\": \"softmax\", \"args\": [\"s\", -1]},"
	"            {\"out\": \"y\", \"op\": \"matmul\", \"args\": [\"a\", \"v\"]}]}";

Test(memory, a_masked_attention_step_is_a_decoder_and_caches_its_keys_and_values)
{
	const char *names[] = {"T"};
	int64_t values[] = {128};
	ti_model_options mo = {.bind_names = names, .bind_values = values, .bind_count = 1};
	ti_model *m = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert_eq(ti_model_open(causal, strlen(causal), &mo, &m, &err), TI_OK, "%s", err.message);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->kv_sites, 1);
	cr_assert_eq(r->kv_causal, 1);
	cr_assert_eq(r->kv_cache, 2 * (2 * 4 * 128 * 16 * 4));
	ti_model_close(m);
}

Test(memory, an_unbound_symbol_is_named_with_the_option_that_binds_it)
{
	ti_model *m = NULL;
	ti_model_options mo = {0};
	ti_error err;
	ti_error_clear(&err);
	cr_assert_eq(ti_model_open(mlp, strlen(mlp), &mo, &m, &err), TI_OK);
	ti_memory_options o = {0};
	const ti_memory_report *r;
	cr_assert_eq(ti_memory_estimate(m, &o, &r, &err), TI_E_INVALID);
	cr_assert(strstr(err.message, "bind N"), "%s", err.message);
	ti_model_close(m);
}

Test(memory, sizes_past_2_to_the_62_are_refused_not_wrapped)
{
	ti_model *m = model_of(mlp, (int64_t)1 << 50);
	ti_memory_options o = {0};
	const ti_memory_report *r;
	ti_error err;
	ti_error_clear(&err);
	cr_assert_eq(ti_memory_estimate(m, &o, &r, &err), TI_E_LIMIT, "%s", err.message);
	ti_model_close(m);
}

Test(memory, shapes_that_do_not_line_up_are_the_shape_error)
{
	const char *bad = "{\"inputs\": {\"x\": {\"shape\": [2, 3]}},"
	                  " \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 2}},"
	                  " \"graph\": [{\"out\": \"y\", \"call\": \"fc\", \"args\": [\"x\"]}]}";
	ti_model *m = model_of(bad, 1);
	ti_memory_options o = {0};
	const ti_memory_report *r;
	ti_error err;
	ti_error_clear(&err);
	cr_assert_eq(ti_memory_estimate(m, &o, &r, &err), TI_E_SHAPE);
	cr_assert(strstr(err.message, "mat1 and mat2 shapes cannot be multiplied"), "%s", err.message);
	ti_model_close(m);
}

Test(memory, autocast_runs_the_linears_in_bfloat16_with_each_weight_cast_once)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.amp = TI_DT_BFLOAT16};
	const ti_memory_report *r = estimate(m, &o);
	/*
	 * the peak is the second linear's: both linears' weights and biases cast
	 * and cached (autocast caches a leaf that requires grad, under no_grad
	 * too), relu's bf16 output and the second linear's bf16 output; x's cast
	 * died after the first linear
	 */
	cr_assert_eq(r->weights, WEIGHTS);
	cr_assert_eq(r->peak, WEIGHTS + X + (W1 + B1) / 2 + (W2 + B2) / 2 + H / 2 + X / 2, "peak %lld", (long long)r->peak);
	ti_model_close(m);
}

Test(memory, zero3_keeps_a_ranks_share_of_the_weights_gradients_and_state)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_MOMENTUM, .strategy = TI_STRATEGY_ZERO3,
	                       .world_size = 4};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->parameters, (W1 + 3) / 4 + (B1 + 3) / 4 + (W2 + 3) / 4 + (B2 + 3) / 4);
	cr_assert_eq(r->gradients, (WEIGHTS + 3) / 4);
	cr_assert_eq(r->optimizer_state, (WEIGHTS + 3) / 4);
	ti_model_close(m);
}

Test(memory, ddp_keeps_a_bucket_copy_of_every_gradient)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .strategy = TI_STRATEGY_DDP,
	                       .world_size = 2};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->communication, WEIGHTS);
	cr_assert_eq(r->peak, 2 * WEIGHTS + X + Y + (W2 + B2) + H + (W1 + B1), "peak %lld", (long long)r->peak);
	ti_model_close(m);
}

Test(memory, checkpointing_a_module_keeps_only_its_input_through_the_forward)
{
	ti_model *m = model_of(mlp, 64);
	const char *globs[] = {"net"};
	ti_memory_options plain = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	ti_memory_options ckpt = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .checkpoint = globs,
	                          .checkpoint_count = 1};
	const ti_memory_report *r = estimate(m, &ckpt);
	cr_assert_eq(r->activations, 0, "activations %lld", (long long)r->activations); /* x is an input: held already */
	ti_model_close(m);
	m = model_of(mlp, 64);
	const ti_memory_report *p = estimate(m, &plain);
	cr_assert_eq(p->activations, H);
	ti_model_close(m);
}

Test(memory, tensor_parallel_splits_the_column_then_row_pair_and_what_lies_between)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .tensor_parallel = 4};
	const ti_memory_report *r = estimate(m, &o);
	/* the first linear is column-parallel (weight and bias split), the second row-parallel (weight split, bias whole) */
	cr_assert_eq(r->parameters, W1 / 4 + B1 / 4 + W2 / 4 + B2, "parameters %lld", (long long)r->parameters);
	/* relu's saved output lies between them: split */
	cr_assert_eq(r->activations, H / 4, "activations %lld", (long long)r->activations);
	ti_model_close(m);
}

Test(memory, a_pipeline_stage_holds_its_own_weights_and_the_micro_batches_in_flight)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .pipeline = 2, .stage = 0};
	const ti_memory_report *r = estimate(m, &o);
	/* two stages of about equal parameters: the first linear, then relu and the second */
	cr_assert_eq(r->parameters, W1 + B1, "parameters %lld", (long long)r->parameters);
	cr_assert_eq(r->in_flight, 2);
	/* it sends the hidden layer (kept for backward) and holds two micro-batches of it */
	cr_assert_eq(r->activations, H, "activations %lld", (long long)r->activations);
	ti_model_close(m);
	m = model_of(mlp, 64);
	o.stage = 1;
	r = estimate(m, &o);
	cr_assert_eq(r->parameters, W2 + B2);
	cr_assert_eq(r->in_flight, 1);
	cr_assert_eq(r->inputs, H, "the received hidden layer: %lld", (long long)r->inputs);
	ti_model_close(m);
}

/*
 * oneDNN's kernel choice by instruction set: x [2, C, H, W] -> Conv2d(C, C, 3, padding=D, dilation=D), no bias.
 * Where the set has no JIT kernel for the weight gradient, gemm_convolution's backward takes five weights
 * (the gradient in oneDNN's layout and a reduction buffer of four) and one image's im2col columns.
 */
typedef struct conv_case {
	int c, h, w, dilation, groups;
} conv_case;

static int64_t conv_peak(conv_case k, ti_memory_mode mode, ti_cpu_isa isa)
{
	char text[600];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", %d, %d, %d]}},"
	         " \"modules\": {\"conv\": {\"type\": \"Conv2d\", \"in_channels\": %d, \"out_channels\": %d,"
	         "   \"kernel_size\": 3, \"padding\": %d, \"dilation\": %d, \"groups\": %d, \"bias\": false}},"
	         " \"graph\": [{\"out\": \"y\", \"call\": \"conv\", \"args\": [\"x\"]}]}",
	         k.c, k.h, k.w, k.c, k.c, k.dilation, k.dilation, k.groups);
	ti_model *m = model_of(text, 2);
	ti_memory_options o = {.mode = mode, .optimizer = mode == TI_MEMORY_TRAIN ? TI_OPTIM_SGD : TI_OPTIM_NONE,
	                       .cpu_isa = isa};
	int64_t peak = estimate(m, &o)->peak;
	ti_model_close(m);
	return peak;
}

#define TRAIN TI_MEMORY_TRAIN

Test(memory, avx2_takes_gemms_scratch_for_a_kernel_taller_than_its_map)
{
	conv_case k = {512, 2, 3, 1, 1};
	int64_t weight = 512 * 512 * 9 * 4, map = 2 * 512 * 2 * 3 * 4, columns = 512 * 9 * 2 * 3 * 4;
	int64_t avx512 = conv_peak(k, TRAIN, TI_ISA_AVX512_CORE), avx2 = conv_peak(k, TRAIN, TI_ISA_AVX2);
	/* avx512_core peaks in backward (measured on 1.13: 27.1 MiB): the weight, x, y, y.sum()'s gradient copied
	   out whole, the weight's gradient and beside it oneDNN's, larger than its reorders of x and y's gradient */
	cr_assert_eq(avx512, 3 * weight + 3 * map, "avx512_core %lld", (long long)avx512);
	/* avx2 in backward: the weight, x (saved), y (live until the backward ends), y's gradient copied, and the
	   GEMM's five weights and columns */
	cr_assert_eq(avx2, 6 * weight + 3 * map + columns, "avx2 %lld", (long long)avx2);
	cr_assert_eq(conv_peak(k, TRAIN, TI_ISA_SSE41), avx2);
}

Test(memory, avx2_has_a_jit_kernel_for_a_plain_3x3_on_a_larger_map)
{
	conv_case k = {64, 8, 8, 1, 1};
	cr_assert_eq(conv_peak(k, TRAIN, TI_ISA_AVX2), conv_peak(k, TRAIN, TI_ISA_AVX512_CORE));
	cr_assert_gt(conv_peak(k, TRAIN, TI_ISA_AVX), conv_peak(k, TRAIN, TI_ISA_AVX2),
	             "avx has no JIT weight-gradient kernel");
}

Test(memory, avx2_runs_a_dilated_convolution_as_a_gemm)
{
	conv_case k = {64, 16, 16, 2, 1};
	cr_assert_gt(conv_peak(k, TRAIN, TI_ISA_AVX2), conv_peak(k, TRAIN, TI_ISA_AVX512_CORE));
}

Test(memory, avx512_core_runs_a_dilation_wider_than_the_map_as_a_gemm_and_a_narrower_one_in_its_kernel)
{
	/* DeepLabV3's ASPP: dilation 12 on an 8x14 map (extent 25 > 8); at dilation 2 (extent 5) the JIT kernel */
	conv_case wide = {64, 8, 14, 12, 1}, narrow = {64, 8, 14, 2, 1};
	cr_assert_eq(conv_peak(wide, TRAIN, TI_ISA_AVX512_CORE), conv_peak(wide, TRAIN, TI_ISA_AVX2));
	cr_assert_lt(conv_peak(narrow, TRAIN, TI_ISA_AVX512_CORE), conv_peak(narrow, TRAIN, TI_ISA_AVX2));
}

Test(memory, a_depthwise_convolution_has_jit_uni_dws_kernel_on_every_set)
{
	conv_case k = {64, 2, 3, 1, 64};
	cr_assert_eq(conv_peak(k, TRAIN, TI_ISA_SSE41), conv_peak(k, TRAIN, TI_ISA_AVX512_CORE));
}

Test(memory, inference_does_not_depend_on_the_instruction_set)
{
	conv_case k = {512, 2, 3, 1, 1};
	cr_assert_eq(conv_peak(k, TI_MEMORY_INFER, TI_ISA_AVX2), conv_peak(k, TI_MEMORY_INFER, TI_ISA_AVX512_CORE));
}

Test(memory, cpu_isa_names_are_onednns_in_any_case_and_extensions_are_their_family)
{
	cr_assert_eq(ti_cpu_isa_parse("AVX2"), TI_ISA_AVX2);
	cr_assert_eq(ti_cpu_isa_parse("avx512_core_vnni"), TI_ISA_AVX512_CORE);
	cr_assert_eq(ti_cpu_isa_parse("avx2_vnni"), TI_ISA_AVX2);
	cr_assert_eq(ti_cpu_isa_parse("sse41"), TI_ISA_SSE41);
	cr_assert_eq(ti_cpu_isa_parse("ALL"), -1);
	cr_assert_eq(ti_cpu_isa_parse("avx512_core_with_a_name_too_long_to_be_one"), -1);
	cr_assert_str_eq(ti_cpu_isa_name(TI_ISA_AVX512_CORE), "avx512_core");
	cr_assert_null(ti_cpu_isa_name((ti_cpu_isa)4));
	cr_assert_not_null(ti_cpu_isa_name(ti_cpu_isa_host()));
}

Test(memory, a_device_size_says_its_unit_and_a_shared_gpu_name_is_refused)
{
	int64_t bytes = 0;
	const char *gpu = NULL;
	ti_error err;
	cr_assert_eq(ti_memory_parse_size("24GiB", &bytes, &gpu, &err), TI_OK);
	cr_assert_eq(bytes, (int64_t)24 << 30);
	cr_assert_eq(ti_memory_parse_size("256B", &bytes, &gpu, &err), TI_OK);
	cr_assert_eq(bytes, 256);
	cr_assert_eq(ti_memory_parse_size("24", &bytes, &gpu, &err), TI_E_INVALID, "24 alone is not 24 bytes");
	cr_assert(strstr(err.message, "has no unit"), "%s", err.message);
	cr_assert_eq(ti_memory_parse_size("4090", &bytes, &gpu, &err), TI_E_INVALID);
	cr_assert(strstr(err.message, "RTX-4090"), "the GPU it may mean is named: %s", err.message);
	cr_assert_eq(ti_memory_parse_size("A100", &bytes, &gpu, &err), TI_E_INVALID, "two cards share the name");
	cr_assert(strstr(err.message, "A100-40GB or A100-80GB"), "%s", err.message);
	cr_assert_eq(ti_memory_parse_size("rtx 4090", &bytes, &gpu, &err), TI_OK);
	cr_assert_str_eq(gpu, "RTX-4090");
}

/* x [T=10, B=4, 32] -> LSTM(32, 64), sequence-first, float32. */
static const char *lstm =
	"{\"inputs\": {\"x\": {\"shape\": [10, \"N\", 32]}},"
	" \"modules\": {\"rnn\": {\"type\": \"LSTM\", \"input_size\": 32, \"hidden_size\": 64, \"num_layers\": %d,"
	"   \"bidirectional\": %s}},"
	" \"graph\": [{\"out\": [\"y\", \"h\"], \"call\": \"rnn\", \"args\": [\"x\"]}], \"outputs\": [\"y\"]}";

static int64_t lstm_backward_rise(int layers, const char *bidirectional)
{
	char text[1024];
	snprintf(text, sizeof(text), lstm, layers, bidirectional);
	ti_model *m = model_of(text, 4);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_eq(r->peak_phase, TI_PHASE_BACKWARD);
	cr_assert_str_eq(r->peak_step, "rnn (LSTM)");
	int64_t start = -1;
	for (size_t i = 0; i < r->point_count; i++)
		if (r->timeline[i].phase == TI_PHASE_FORWARD)
			start = r->timeline[i].live;
	/* h_n and c_n, returned beside y and used by nothing, go when the backward starts */
	int64_t rise = r->peak - (start - 2 * layers * (strcmp(bidirectional, "true") ? 1 : 2) * 4 * 64 * 4);
	ti_model_close(m);
	return rise;
}

enum { GHH = 4 * 64 * 64 * 4, TBH = 10 * 4 * 64 * 4 };

Test(memory, an_lstm_backward_holds_three_weight_hh_gradients_while_the_engine_adds_them)
{
	/* one layer: the top of the walk is the second step's old + new + sum of weight_hh's gradient */
	int64_t rise = lstm_backward_rise(1, "false");
	cr_assert_eq(rise, 3 * GHH, "rise %lld", (long long)rise);
}

Test(memory, a_lower_lstm_layer_peaks_above_what_the_upper_one_left)
{
	/* the upper layer leaves weight_hh's and weight_ih's gradients (G*H*H each here, its input being H wide) and
	 * its input's gradient (T*B*H), and lets go of its steps' 7*T*B*H and of its input (the lower layer's output):
	 * then the lower layer's three weight_hh gradients */
	int64_t rise = lstm_backward_rise(2, "false");
	int64_t upper = GHH + GHH + TBH - 7 * TBH - TBH /* the layer's input, saved */;
	cr_assert_eq(rise, upper + 3 * GHH, "rise %lld", (long long)rise);
}

/* x [N=64, 8, 64] -> Linear(64, 64) as q; q @ k^T * 0.125 -> softmax -> @ v, k and v inputs without gradients. */
static const char *scaled_scores =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 8, 64]}, \"k\": {\"shape\": [\"N\", 8, 64]},"
	"             \"v\": {\"shape\": [\"N\", 8, 64]}},"
	" \"modules\": {\"q\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}},"
	" \"graph\": [{\"out\": \"q\", \"call\": \"q\", \"args\": [\"x\"]},"
	"            {\"out\": \"kt\", \"op\": \"transpose\", \"args\": [\"k\", -2, -1]},"
	"            {\"out\": \"s\", \"op\": \"matmul\", \"args\": [\"q\", \"kt\"]},"
	"            {\"out\": \"s\", \"op\": \"mul\", \"args\": [\"s\", 0.125]},"
	"            {\"out\": \"a\", \"op\": \"softmax\", \"args\": [\"s\", -1]},"
	"            {\"out\": \"y\", \"op\": \"matmul\", \"args\": [\"a\", \"v\"]}], \"outputs\": [\"y\"]}";

Test(memory, an_operand_is_saved_only_for_the_gradient_whose_formula_reads_it)
{
	ti_model *m = model_of(scaled_scores, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	/* kept: softmax's result (and the linear's input x, an input already). Not kept: q (only k's gradient, not
	   wanted, reads it), the scores (scaled by a number, which wants no gradient), a as matmul's operand
	   beyond softmax's own, v and k^T (inputs) */
	cr_assert_eq(r->activations, 64 * 8 * 8 * 4, "activations %lld", (long long)r->activations);
	ti_model_close(m);
}

/* Two linears on x, added: the residual pattern. */
static const char *two_branches =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 256]}},"
	" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 256},"
	"               \"b\": {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 256}},"
	" \"graph\": [{\"out\": \"p\", \"call\": \"a\", \"args\": [\"x\"]}, {\"out\": \"q\", \"call\": \"b\", \"args\": [\"x\"]},"
	"            {\"out\": \"y\", \"op\": \"add\", \"args\": [\"p\", \"q\"]}], \"outputs\": [\"y\"]}";

Test(memory, add_hands_its_output_gradient_to_both_operands_without_a_copy)
{
	ti_model *m = model_of(two_branches, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	/* the loss's gradient is an expanded scalar and add's formula returns it for both operands */
	EXPECT_INT(backward_rise(r, "add"), 0);
	ti_model_close(m);
}

/* x [N, 64, 32, 32] -> 1x1 Conv2d -> ReLU -> 1x1 Conv2d: the model's output is the last convolution's. */
static const char *two_convs =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 64, 32, 32]}},"
	" \"modules\": {\"c\": {\"type\": \"Conv2d\", \"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 1},"
	"               \"r\": {\"type\": \"ReLU\"},"
	"               \"l\": {\"type\": \"Conv2d\", \"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 1}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"c\", \"args\": [\"x\"]}, {\"out\": \"h\", \"call\": \"r\", \"args\": [\"h\"]},"
	"            {\"out\": \"y\", \"call\": \"l\", \"args\": [\"h\"]}], \"outputs\": [\"y\"]}";

Test(memory, a_convolution_takes_the_losss_expanded_gradient_as_a_contiguous_copy)
{
	ti_model *m = model_of(two_convs, 16);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .cpu_isa = TI_ISA_AVX512_CORE};
	const ti_memory_report *r = estimate(m, &o);
	const ti_memory_point *before = NULL, *last = NULL;
	for (size_t i = 1; i < r->point_count && !last; i++)
		if (r->timeline[i].phase == TI_PHASE_BACKWARD) {
			last = &r->timeline[i];
			before = &r->timeline[i - 1];
		}
	cr_assert(last && !strcmp(last->step, "l (conv2d)"), "the backward does not start at l");
	/* measured on 1.13: the 4 MiB copy of the gradient, h's gradient, mkldnn's reorders of h and y (4 + 4) */
	const int64_t map = 16 * 64 * 32 * 32 * 4;
	cr_assert_eq(last->high - before->live, 4 * map + 64 * 64 * 4 + 64 * 4, "l's backward rose %lld bytes",
	             (long long)(last->high - before->live));
	ti_model_close(m);
}

/* Self-attention over x [N, T, E], batch_first, evaluated: heads and need_weights filled in. */
static int64_t attention_rise(int64_t n, int t, int e, int heads, const char *need_weights)
{
	char text[768];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", %d, %d]}},"
	         " \"modules\": {\"m\": {\"type\": \"MultiheadAttention\", \"embed_dim\": %d, \"num_heads\": %d,"
	         "                       \"batch_first\": true}},"
	         " \"graph\": [{\"out\": [\"y\", \"w\"], \"call\": \"m\", \"args\": [\"x\", \"x\", \"x\"],"
	         "             \"need_weights\": %s}], \"outputs\": [\"y\"]}",
	         t, e, e, heads, need_weights);
	ti_model *m = model_of(text, n);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	int64_t rise = r->peak - r->weights - r->inputs;
	ti_model_close(m);
	return rise;
}

Test(memory, the_attention_fast_path_holds_qkv_twice_then_the_scores_and_wants_an_even_head_count)
{
	const int64_t mib = 1 << 20;
	/* measured on 1.13 (memshim): X the input's bytes, A the scores' */
	cr_expect_eq(attention_rise(16, 32, 128, 2, "false"), 3 * mib / 2, "6X: qkv and q_k_v together");
	cr_expect_eq(attention_rise(4, 256, 64, 4, "false"), 19 * mib / 4, "A + 3X: the scores, q_k_v, the output");
	cr_expect_eq(attention_rise(8, 128, 256, 8, "true"), 9 * mib, "5X + A: need_weights keeps the scores");
	/* an odd head count takes the Python path: its locals live to the end, max(6X + A, 4X + 2A) */
	cr_expect_eq(attention_rise(4, 256, 64, 1, "false"), 3 * mib);
	cr_expect_eq(attention_rise(16, 128, 256, 1, "false"), 13 * mib);
}

/* ---- the peak's range and what makes it uncertain ---- */

/* A measurement within 5 % of itself of the estimate x lies in [x / 1.05, x / 0.95] (floor, ceiling). */
static int64_t range_low(int64_t x)
{
	return x * 100 / 105;
}

static int64_t range_high(int64_t x)
{
	return (x * 100 + 94) / 95;
}

static const ti_memory_uncertainty *uncertainty(const ti_memory_report *r, const char *name)
{
	for (size_t i = 0; i < r->uncertain_count; i++)
		if (!strcmp(r->uncertain[i].name, name))
			return &r->uncertain[i];
	return NULL;
}

static const ti_memory_term *term(const ti_memory_report *r, const char *name)
{
	for (size_t i = 0; i < r->term_count; i++)
		if (!strcmp(r->terms[i].name, name))
			return &r->terms[i];
	cr_assert_fail("no term '%s'", name);
	return NULL;
}

#define BIT(kind) (1u << (kind))

/* The estimate of conv_case k under options o (training with SGD, the instruction set as o says). */
static const ti_memory_report *conv_report(conv_case k, ti_memory_options o, ti_model **m)
{
	char text[600];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", %d, %d, %d]}},"
	         " \"modules\": {\"conv\": {\"type\": \"Conv2d\", \"in_channels\": %d, \"out_channels\": %d,"
	         "   \"kernel_size\": 3, \"padding\": %d, \"dilation\": %d, \"groups\": %d, \"bias\": false}},"
	         " \"graph\": [{\"out\": \"y\", \"call\": \"conv\", \"args\": [\"x\"]}]}",
	         k.c, k.h, k.w, k.c, k.c, k.dilation, k.dilation, k.groups);
	*m = model_of(text, 2);
	o.mode = TRAIN;
	o.optimizer = TI_OPTIM_SGD;
	return estimate(*m, &o);
}

Test(memory, a_convolutions_range_on_the_cpu_spans_every_instruction_sets_peak_and_the_rules_tolerance)
{
	conv_case k = {512, 2, 3, 1, 1}; /* avx512_core has a JIT weight gradient here, avx2 and below a GEMM */
	ti_model *m;
	const ti_memory_report *r = conv_report(k, (ti_memory_options){.cpu_isa = TI_ISA_AVX512_CORE}, &m);
	int64_t least = INT64_MAX, most = 0;
	for (int isa = TI_ISA_AVX512_CORE; isa <= TI_ISA_SSE41; isa++) {
		int64_t p = conv_peak(k, TRAIN, (ti_cpu_isa)isa);
		least = p < least ? p : least;
		most = p > most ? p : most;
		cr_expect_leq(r->peak_low, p * 100 / 105, "low %lld, %s's peak %lld", (long long)r->peak_low,
		              ti_cpu_isa_name((ti_cpu_isa)isa), (long long)p);
		cr_expect_geq(r->peak_high, p * 100 / 95, "high %lld, %s's peak %lld", (long long)r->peak_high,
		              ti_cpu_isa_name((ti_cpu_isa)isa), (long long)p);
	}
	cr_assert_lt(least, most, "the sets' peaks differ here");
	EXPECT_INT(r->peak_low, range_low(least));
	EXPECT_INT(r->peak_high, range_high(most));
	cr_expect_leq(r->peak_low, r->peak);
	cr_expect_geq(r->peak_high, r->peak);
	ASSERT_INT(r->uncertain_count >= 2, 1);
	EXPECT_STR(r->uncertain[0].name, "rules");
	const ti_memory_uncertainty *isa = uncertainty(r, "cpu-isa");
	cr_assert_not_null(isa, "cpu-isa is named");
	cr_expect(isa->covered, "the range spans the sets");
	/* another set's GEMM backward books its buffer per thread: named, and past the high end */
	cr_expect_not_null(uncertainty(r, "threads"));
	cr_expect(r->peak_high_open);
	cr_expect(term(r, "peak")->depends & BIT(TI_UNCERTAIN_CPU_ISA), "the peak names cpu-isa");
	EXPECT_INT(term(r, "weights")->depends, 0);
	ti_model_close(m);
}

Test(memory, the_scratch_live_at_the_peak_says_it_depends_on_the_instruction_set)
{
	conv_case k = {512, 2, 3, 1, 1};
	ti_model *m;
	const ti_memory_report *r = conv_report(k, (ti_memory_options){.cpu_isa = TI_ISA_AVX2}, &m);
	bool found = false;
	for (size_t i = 0; i < r->top_count; i++)
		if (r->top[i].kind == TI_MEM_TEMPORARY) {
			found = true;
			cr_expect(r->top[i].depends & BIT(TI_UNCERTAIN_CPU_ISA), "'%s' names cpu-isa", r->top[i].name);
			cr_expect(r->top[i].depends & BIT(TI_UNCERTAIN_THREADS), "the GEMM's buffer names threads");
		} else {
			EXPECT_INT(r->top[i].depends, 0);
		}
	cr_expect(found, "avx2's GEMM scratch is live at the peak");
	ti_model_close(m);
}

Test(memory, an_mlps_range_is_the_rules_tolerance_around_its_peak)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_ADAM};
	const ti_memory_report *r = estimate(m, &o);
	EXPECT_INT(r->peak_low, range_low(r->peak));
	EXPECT_INT(r->peak_high, range_high(r->peak));
	ASSERT_INT(r->uncertain_count, 1);
	EXPECT_STR(r->uncertain[0].name, "rules");
	cr_expect(r->uncertain[0].covered);
	cr_expect_not(r->peak_high_open);
	EXPECT_INT(term(r, "peak")->depends, 0);
	ti_model_close(m);
}

Test(memory, an_instruction_set_given_does_not_widen_the_range)
{
	conv_case k = {512, 2, 3, 1, 1};
	ti_model *m;
	const ti_memory_report *r =
		conv_report(k, (ti_memory_options){.cpu_isa = TI_ISA_AVX512_CORE, .cpu_isa_fixed = true}, &m);
	EXPECT_INT(r->peak_low, range_low(r->peak));
	EXPECT_INT(r->peak_high, range_high(r->peak));
	cr_expect_null(uncertainty(r, "cpu-isa"));
	cr_expect_null(uncertainty(r, "threads"), "avx512_core's JIT kernel books nothing per thread here");
	EXPECT_INT(term(r, "peak")->depends, 0);
	ti_model_close(m);
	/* avx2 given: its GEMM backward still depends on the thread count, which nothing fixes */
	r = conv_report(k, (ti_memory_options){.cpu_isa = TI_ISA_AVX2, .cpu_isa_fixed = true}, &m);
	EXPECT_INT(r->peak_high, range_high(r->peak));
	cr_expect_null(uncertainty(r, "cpu-isa"));
	cr_expect_not_null(uncertainty(r, "threads"));
	cr_expect(r->peak_high_open);
	ti_model_close(m);
}

Test(memory, a_depthwise_convolution_whose_scratch_no_set_changes_is_not_uncertain)
{
	conv_case k = {64, 2, 3, 1, 64}; /* jit_uni_dw on every set, 64 channels a multiple of every block */
	ti_model *m;
	const ti_memory_report *r = conv_report(k, (ti_memory_options){0}, &m);
	cr_expect_null(uncertainty(r, "cpu-isa"));
	EXPECT_INT(r->peak_high, range_high(r->peak));
	ti_model_close(m);
}

Test(memory, on_cuda_a_convolution_names_cudnns_workspace_and_its_range_holds_it)
{
	conv_case k = {64, 8, 8, 1, 1};
	ti_model *m;
	const ti_memory_report *r = conv_report(k, (ti_memory_options){.device = TI_MEMORY_CUDA}, &m);
	const ti_memory_uncertainty *ws = uncertainty(r, "cudnn-workspace");
	cr_assert_not_null(ws, "cudnn-workspace is named");
	cr_expect(ws->covered, "from none to the most measured");
	cr_expect_not(r->peak_high_open);
	cr_expect_null(uncertainty(r, "cpu-isa"), "no oneDNN on cuda");
	cr_expect_gt(r->peak_high, range_high(r->peak), "the most measured is more than the estimate");
	cr_expect(term(r, "peak")->depends & BIT(TI_UNCERTAIN_CUDNN_WORKSPACE));
	ti_model_close(m);
}

Test(memory, on_cuda_a_recurrent_layer_names_cudnns_rnn_in_its_activations_and_bounds_it)
{
	char text[1024];
	snprintf(text, sizeof(text), lstm, 1, "false");
	ti_model *m = model_of(text, 4);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .device = TI_MEMORY_CUDA};
	const ti_memory_report *r = estimate(m, &o);
	const ti_memory_uncertainty *rnn = uncertainty(r, "cudnn-rnn");
	cr_assert_not_null(rnn);
	cr_expect(rnn->covered, "the workspace's floor and ceiling are played");
	cr_expect(term(r, "activations")->depends & BIT(TI_UNCERTAIN_CUDNN_RNN));
	cr_expect_not(r->peak_high_open);
	cr_expect_gt(r->peak_high, range_high(r->peak), "the ceiling's workspace is above the estimate's");
	cr_expect_lt(r->peak_low, r->peak);
	ti_model_close(m);
	m = model_of(text, 4);
	o.device = TI_MEMORY_CPU;
	r = estimate(m, &o);
	cr_expect_null(uncertainty(r, "cudnn-rnn"), "the CPU's kernels are the ones modelled");
	ti_model_close(m);
}

Test(memory, training_without_an_optimizer_leaves_the_high_end_open)
{
	ti_model *m = model_of(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_not_null(uncertainty(r, "no-optimizer"));
	cr_expect(r->peak_high_open);
	cr_expect(term(r, "peak")->lower_bound, "its why names the cause; depends names the machine's");
	EXPECT_INT(term(r, "peak")->depends, 0);
	EXPECT_STR(ti_memory_uncertain_name(TI_UNCERTAIN_CUDNN_WORKSPACE), "cudnn-workspace");
	cr_expect_null(ti_memory_uncertain_name(TI_UNCERTAIN_KIND_COUNT));
	ti_model_close(m);
}

Test(memory, a_set_that_changes_the_scratch_but_not_the_peak_is_not_named)
{
	/* 24 channels: avx512_core pads them to 32 in its blocked layout, avx2 not (a multiple of 8); inference
	   peaks at the two maps of the output and its relu, beside which the padded scratch is smaller */
	const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 24, 32, 32]}},"
		" \"modules\": {\"conv\": {\"type\": \"Conv2d\", \"in_channels\": 24, \"out_channels\": 24, \"kernel_size\": 1,"
		"   \"stride\": 2}, \"big\": {\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 4096}},"
		" \"graph\": [{\"out\": \"y\", \"call\": \"conv\", \"args\": [\"x\"]},"
		"            {\"out\": \"z\", \"call\": \"big\", \"args\": [\"y\"]}]}";
	int64_t peaks[4];
	for (int isa = 0; isa < 4; isa++) {
		ti_model *m = model_of(text, 16);
		ti_memory_options o = {.cpu_isa = (ti_cpu_isa)isa, .cpu_isa_fixed = true};
		peaks[isa] = estimate(m, &o)->peak;
		ti_model_close(m);
	}
	cr_assert(peaks[0] == peaks[1] && peaks[1] == peaks[3], "every set peaks alike here");
	ti_model *m = model_of(text, 16);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_null(uncertainty(r, "cpu-isa"));
	EXPECT_INT(r->peak_high, range_high(r->peak));
	ti_model_close(m);
}

/* x [64, N, 512] -> Linear(512, 512) -> RNN(512, 64, bidirectional): the RNN's input wants a gradient. */
static const char *linear_rnn =
	"{\"inputs\": {\"x\": {\"shape\": [64, \"N\", 512]}},"
	" \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": 512, \"out_features\": 512},"
	"               \"r\": {\"type\": \"RNN\", \"input_size\": 512, \"hidden_size\": 64, \"bidirectional\": true}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"l\", \"args\": [\"x\"]}, {\"out\": [\"y\", \"hn\"], \"call\": \"r\", \"args\": [\"h\"]}],"
	" \"outputs\": [\"y\"]}";

Test(memory, both_directions_input_gradients_are_held_until_the_engine_adds_them)
{
	ti_model *m = model_of(linear_rnn, 16);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	const int64_t x = 64 * 16 * 512 * 4;
	/* measured on 1.13: the backward peaks 4 MiB above the end of the forward (10.35 MiB), two input gradients */
	int64_t rise = backward_rise(r, "(RNN)");
	cr_expect_geq(rise, 2 * x, "the RNN's backward rose %lld bytes", (long long)rise);
	cr_expect_lt(r->peak, 11 << 20, "peak %lld", (long long)r->peak);
	ti_model_close(m);
}

/* x [N, 64] -> two Linears -> cat -> Linear: cat's gradient is sliced for its inputs, never copied. */
static const char *concat =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 64]}},"
	" \"modules\": {\"a\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1024},"
	"               \"b\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 1024},"
	"               \"h\": {\"type\": \"Linear\", \"in_features\": 2048, \"out_features\": 8}},"
	" \"graph\": [{\"out\": \"p\", \"call\": \"a\", \"args\": [\"x\"]}, {\"out\": \"q\", \"call\": \"b\", \"args\": [\"x\"]},"
	"            {\"out\": \"c\", \"op\": \"cat\", \"args\": [[\"p\", \"q\"]], \"dim\": 1},"
	"            {\"out\": \"y\", \"call\": \"h\", \"args\": [\"c\"]}], \"outputs\": [\"y\"]}";

Test(memory, cat_hands_each_input_a_slice_of_its_gradient_and_allocates_nothing)
{
	ti_model *m = model_of(concat, 256);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	const ti_memory_report *r = estimate(m, &o);
	EXPECT_INT(backward_rise(r, "cat"), 0);
	ti_model_close(m);
}

/* x [4, 256, 32, 32] -> 1x1 Conv2d -> Conv2d(256, 16, 3, groups 8): two output channels a group, no blocked kernel. */
static int64_t grouped_rise(bool input_grad)
{
	char text[900];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", 256, 32, 32]}},"
	         " \"modules\": {\"p\": {\"type\": \"Conv2d\", \"in_channels\": 256, \"out_channels\": 256, \"kernel_size\": 1,"
	         "                      \"bias\": false},"
	         "               \"c\": {\"type\": \"Conv2d\", \"in_channels\": 256, \"out_channels\": 16, \"kernel_size\": 3,"
	         "                      \"padding\": 1, \"groups\": 8, \"bias\": false}},"
	         " \"graph\": [%s{\"out\": \"y\", \"call\": \"c\", \"args\": [\"%s\"]}], \"outputs\": [\"y\"]}",
	         input_grad ? "{\"out\": \"h\", \"call\": \"p\", \"args\": [\"x\"]}, " : "", input_grad ? "h" : "x");
	ti_model *m = model_of(text, 4);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .cpu_isa = TI_ISA_AVX512_CORE};
	const ti_memory_report *r = estimate(m, &o);
	int64_t rise = backward_rise(r, "c (conv2d)");
	ti_model_close(m);
	return rise;
}

Test(memory, a_grouped_gemm_convolution_computes_its_inputs_gradient_through_an_input_sized_buffer)
{
	const int64_t x = 4 * 256 * 32 * 32 * 4, w = 16 * 32 * 9 * 4, y = 4 * 16 * 32 * 32 * 4, cols = 32 * 9 * 32 * 32 * 4;
	/* without the input's gradient: y's gradient copied, the weight's, one image's and group's columns and oneDNN's */
	cr_expect_eq(grouped_rise(false), y + w + cols + w, "no input gradient: %lld", (long long)grouped_rise(false));
	/* with it: the gradient, and beside it a buffer of the input's size (measured on 1.13 within 0.1 MiB) */
	cr_expect_eq(grouped_rise(true), y + w + x + x + w, "input gradient: %lld", (long long)grouped_rise(true));
}

/* x [N, 64, 32, 32] -> 1x1 Conv2d -> a pool -> Linear or flatten: what the pool keeps for backward. */
static int64_t pool_activations(const char *pool)
{
	char text[900];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", 64, 32, 32]}},"
	         " \"modules\": {\"c\": {\"type\": \"Conv2d\", \"in_channels\": 64, \"out_channels\": 64, \"kernel_size\": 1},"
	         "               \"p\": %s},"
	         " \"graph\": [{\"out\": \"h\", \"call\": \"c\", \"args\": [\"x\"]}, {\"out\": \"y\", \"call\": \"p\", \"args\": [\"h\"]}],"
	         " \"outputs\": [\"y\"]}",
	         pool);
	ti_model *m = model_of(text, 2);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	int64_t a = estimate(m, &o)->activations;
	ti_model_close(m);
	return a;
}

Test(memory, avg_pool_keeps_its_input_for_backward_even_when_it_pools_to_one_value)
{
	const int64_t h = 2 * 64 * 32 * 32 * 4;
	EXPECT_INT(pool_activations("{\"type\": \"AvgPool2d\", \"kernel_size\": 2}"), h);
	EXPECT_INT(pool_activations("{\"type\": \"AdaptiveAvgPool2d\", \"output_size\": 4}"), h);
	/* measured on 1.13: the conv's output is kept with AdaptiveAvgPool2d(1), as with the others */
	EXPECT_INT(pool_activations("{\"type\": \"AdaptiveAvgPool2d\", \"output_size\": 1}"), h);
}

/* Linear(384, 384) then a bidirectional LSTM(384, 128), the input batch-first or sequence-first. */
static int64_t lstm_activations(bool batch_first)
{
	char text[900];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": %s}},"
	         " \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": 384, \"out_features\": 384},"
	         "               \"r\": {\"type\": \"LSTM\", \"input_size\": 384, \"hidden_size\": 128,"
	         "                      \"bidirectional\": true, \"batch_first\": %s}},"
	         " \"graph\": [{\"out\": \"h\", \"call\": \"l\", \"args\": [\"x\"]},"
	         "            {\"out\": [\"y\", \"hn\"], \"call\": \"r\", \"args\": [\"h\"]}], \"outputs\": [\"y\"]}",
	         batch_first ? "[\"N\", 256, 384]" : "[256, \"N\", 384]", batch_first ? "true" : "false");
	ti_model *m = model_of(text, 16);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	int64_t a = estimate(m, &o)->activations;
	ti_model_close(m);
	return a;
}

Test(memory, a_batch_first_recurrent_layer_saves_a_time_major_copy_of_its_input_per_direction)
{
	const int64_t x = 16 * 256 * 384 * 4;
	/* measured on 1.13: batch-first keeps two copies after the forward (12 MiB at 6 MiB of input), where
	   sequence-first keeps the input itself, which the Linear's output is */
	EXPECT_INT(lstm_activations(true) - lstm_activations(false), 2 * x - x);
}

/* ---- the KV cache as `memory --batch --context` sizes it: a grouped-query model's keys and values at their
   own (kv_heads) size under every attention kernel, at the decode step's length, capped by a sliding window,
   in another dtype; and the scores --attn eager keeps. Each is 2 (k, v) x B x kv_heads x tokens x head_dim x
   bytes. ---- */

/* One causal attention step of a GQA model: 8 query heads, 2 key/value heads, head_dim 64, float32. */
static const char *gqa =
	"{\"inputs\": {\"q\": {\"shape\": [\"B\", 8, \"T\", 64]}, \"k\": {\"shape\": [\"B\", 2, \"T\", 64]},"
	"             \"v\": {\"shape\": [\"B\", 2, \"T\", 64]}},"
	" \"graph\": [{\"out\": \"y\", \"op\": \"scaled_dot_product_attention\", \"args\": [\"q\", \"k\", \"v\"],"
	"             \"is_causal\": true, \"enable_gqa\": true}]}";

static ti_model *open_bt(int64_t batch, int64_t tokens)
{
	const char *names[] = {"B", "T"};
	int64_t values[] = {batch, tokens};
	return model_bound(gqa, names, values, 2);
}

/* 2 x B x kv_heads x tokens x head_dim x bytes */
static int64_t kv(int64_t batch, int64_t tokens, int64_t bytes)
{
	return 2 * batch * 2 * tokens * 64 * bytes;
}

Test(memory, a_grouped_query_cache_holds_the_key_value_heads_not_the_query_heads)
{
	ti_model *m = open_bt(3, 512);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_eq(r->kv_sites, 1);
	cr_expect_eq(r->kv_causal, 1);
	cr_expect_eq(r->kv_cache, kv(3, 512, 4), "got %lld, want %lld", (long long)r->kv_cache, (long long)kv(3, 512, 4));
	ti_model_close(m);
}

Test(memory, a_fused_kernel_is_an_attention_step_too_and_caches_the_same)
{
	/* cuda runs PyTorch 2's fused kernels: no softmax to find, the kernel itself is the step */
	ti_memory_attention kinds[] = {TI_ATTN_DEFAULT, TI_ATTN_SDPA, TI_ATTN_FLASH, TI_ATTN_EAGER};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		ti_model *m = open_bt(1, 1024);
		ti_memory_options o = {.device = TI_MEMORY_CUDA, .attention = kinds[i]};
		const ti_memory_report *r = estimate(m, &o);
		cr_expect_eq(r->kv_causal, 1, "--attn %s: a causal step", ti_memory_attention_name(kinds[i]));
		cr_expect_eq(r->kv_cache, kv(1, 1024, 4), "--attn %s: got %lld, want %lld", ti_memory_attention_name(kinds[i]),
		             (long long)r->kv_cache, (long long)kv(1, 1024, 4));
		ti_model_close(m);
	}
}

Test(memory, the_decode_step_runs_one_token_beside_the_cache_of_the_whole_context)
{
	/* flash: the token's q, k, v and output beside the cache (a few KiB), no scores; and the cache grown by
	   torch.cat as DynamicCache.update does it: the keys at 8193 tokens made while the old ones are held,
	   the old keys let go (their own storage), then the values at 8193 beside the old values: at most
	   half of kv(8193) + half of kv(8193) - half of kv(8192) above the cache */
	ti_model *m = open_bt(2, 1);
	ti_memory_options o = {.kv_cache = 1, .kv_tokens = 8192, .attention = TI_ATTN_FLASH};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_eq(r->kv_cache, kv(2, 8192, 4), "got %lld, want %lld", (long long)r->kv_cache, (long long)kv(2, 8192, 4));
	int64_t grow = kv(2, 8193, 4) - kv(2, 8192, 4) / 2;
	cr_expect(r->peak >= r->kv_cache + grow && r->peak < r->kv_cache + grow + 64 * 1024, "peak %lld",
	          (long long)r->peak);
	ti_model_close(m);
}

Test(memory, an_eager_decode_step_attends_over_the_cache_repeated_to_the_query_heads)
{
	/* the math path copies the cached k and v to the 8 query heads (B x 8 x 8192 x 64 x 4 bytes each) and
	   scores the token against all 8192 (B x 8 x 1 x 8192 x 4, and their softmax) */
	const int64_t repeat = (int64_t)2 * 8 * 8192 * 64 * 4, scores = (int64_t)2 * 8 * 8192 * 4;
	ti_model *m = open_bt(2, 1);
	ti_memory_options o = {.kv_cache = 1, .kv_tokens = 8192, .attention = TI_ATTN_EAGER};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_eq(r->kv_cache, kv(2, 8192, 4), "the cache stays at the key/value heads");
	cr_expect(r->peak >= r->kv_cache + 2 * repeat + scores && r->peak < r->kv_cache + 2 * repeat + 2 * scores + 64 * 1024,
	          "peak %lld, want the cache %lld + 2 copies %lld + the scores", (long long)r->peak, (long long)r->kv_cache,
	          (long long)repeat);
	ti_model_close(m);
}

/*
 * A prefill's cache is the keys and values each layer makes, kept from then
 * on (DynamicCache holds the tensors themselves): while the first layer
 * attends, the second layer's cache does not exist yet, and the first's is
 * not counted twice. Layer 0 attends with 8 heads (scores of 8 x T x T), layer
 * 1 with one, so the step peaks in layer 0 whether or not layer 1 follows.
 */
static const char *two_layers =
	"{\"inputs\": {\"q0\": {\"shape\": [1, 8, \"T\", 64]}, \"k0\": {\"shape\": [1, 8, \"T\", 64]},"
	"             \"v0\": {\"shape\": [1, 8, \"T\", 64]}, \"q1\": {\"shape\": [1, 1, \"T\", 64]},"
	"             \"k1\": {\"shape\": [1, 1, \"T\", 64]}, \"v1\": {\"shape\": [1, 1, \"T\", 64]}},"
	" \"graph\": [{\"out\": \"k\", \"op\": \"mul\", \"args\": [\"k0\", 2.0]},"
	"            {\"out\": \"v\", \"op\": \"mul\", \"args\": [\"v0\", 2.0]},"
	"            {\"out\": \"y\", \"op\": \"scaled_dot_product_attention\", \"args\": [\"q0\", \"k\", \"v\"],"
	"             \"is_causal\": true}%s]}";
static const char *second_layer =
	",{\"out\": \"k\", \"op\": \"mul\", \"args\": [\"k1\", 2.0]},"
	" {\"out\": \"v\", \"op\": \"mul\", \"args\": [\"v1\", 2.0]},"
	" {\"out\": \"z\", \"op\": \"scaled_dot_product_attention\", \"args\": [\"q1\", \"k\", \"v\"],"
	"  \"is_causal\": true}";

Test(memory, a_prefills_cache_is_the_keys_and_values_each_layer_makes_from_when_it_makes_them)
{
	char one[2048], two[2048];
	snprintf(one, sizeof(one), two_layers, "");
	snprintf(two, sizeof(two), two_layers, second_layer);
	const char *names[] = {"T"};
	int64_t values[] = {512};
	const int64_t kv0 = 2 * 8 * 512 * 64 * 4, kv1 = 2 * 1 * 512 * 64 * 4;
	ti_memory_options o = {.mode = TI_MEMORY_INFER, .kv_cache = 1};
	ti_model *a = model_bound(one, names, values, 1), *b = model_bound(two, names, values, 1);
	const ti_memory_report *ra = estimate(a, &o), *rb = estimate(b, &o);
	EXPECT_INT(ra->kv_cache, kv0);
	EXPECT_INT(rb->kv_cache, kv0 + kv1);
	/* the same peak but for layer 1's inputs (q1, k1, v1: held from the start, where the step reads them): in
	   layer 0, with layer 0's keys and values once and layer 1's not yet made */
	EXPECT_INT(rb->peak, ra->peak + 3 * 512 * 64 * 4);
	/* the peak's tensors show the cache in one row: layer 0's keys and values, all there is of it then */
	int rows = 0;
	int64_t cached = 0;
	for (size_t i = 0; i < rb->top_count; i++)
		if (rb->top[i].kind == TI_MEM_KV_CACHE) {
			rows++;
			cached += rb->top[i].bytes;
		}
	EXPECT_INT(rows, 1);
	EXPECT_INT(cached, kv0);
	ti_model_close(a);
	ti_model_close(b);
}

Test(memory, a_sliding_window_caps_the_cache_and_a_shorter_context_is_left_alone)
{
	ti_model *m = open_bt(1, 8192);
	ti_memory_options o = {.kv_window = 4096};
	cr_expect_eq(estimate(m, &o)->kv_cache, kv(1, 4096, 4));
	ti_model_close(m);
	m = open_bt(1, 1000);
	cr_expect_eq(estimate(m, &o)->kv_cache, kv(1, 1000, 4));
	ti_model_close(m);
}

Test(memory, the_kv_dtype_sets_the_element_size)
{
	struct { ti_dtype dt; int64_t bytes; } cases[] = {
		{TI_DT_BFLOAT16, 2}, {TI_DT_FLOAT16, 2}, {TI_DT_INT8, 1}, {TI_DT_FLOAT8_E4M3FN, 1}, {TI_DT_FLOAT32, 4},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_model *m = open_bt(1, 256);
		ti_memory_options o = {.kv_dtype = cases[i].dt};
		const ti_memory_report *r = estimate(m, &o);
		cr_expect_eq(r->kv_cache, kv(1, 256, cases[i].bytes), "%s: got %lld, want %lld", ti_dtype_name(cases[i].dt),
		             (long long)r->kv_cache, (long long)kv(1, 256, cases[i].bytes));
		ti_model_close(m);
	}
}

Test(memory, eager_attention_keeps_the_scores_and_flash_keeps_none)
{
	/* B x H x T x T float32 scores: 1 x 8 x 2048 x 2048 x 4 = 128 MiB, and their softmax beside them */
	const int64_t scores = (int64_t)8 * 2048 * 2048 * 4;
	ti_model *m = open_bt(1, 2048);
	ti_memory_options eager = {.device = TI_MEMORY_CUDA, .attention = TI_ATTN_EAGER};
	int64_t eager_peak = estimate(m, &eager)->peak;
	ti_model_close(m);
	m = open_bt(1, 2048);
	ti_memory_options flash = {.device = TI_MEMORY_CUDA, .attention = TI_ATTN_FLASH};
	int64_t flash_peak = estimate(m, &flash)->peak;
	ti_model_close(m);
	cr_expect(eager_peak >= 2 * scores, "eager %lld: the scores and their softmax", (long long)eager_peak);
	cr_expect(flash_peak < scores / 8, "flash %lld: no scores", (long long)flash_peak);
}

Test(memory, the_attention_kernels_have_their_hugging_face_names)
{
	cr_expect_str_eq(ti_memory_attention_name(TI_ATTN_EAGER), "eager");
	cr_expect_str_eq(ti_memory_attention_name(TI_ATTN_SDPA), "sdpa");
	cr_expect_str_eq(ti_memory_attention_name(TI_ATTN_FLASH), "flash");
	cr_expect_null(ti_memory_attention_name((ti_memory_attention)9));
}

/* Inference of Linear(384, 384) then an LSTM(384, 128) over [16, 256] tokens: the peak, batch-first or not. */
static int64_t lstm_inference_peak(bool batch_first, bool bidirectional)
{
	char text[900];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": %s}},"
	         " \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": 384, \"out_features\": 384},"
	         "               \"r\": {\"type\": \"LSTM\", \"input_size\": 384, \"hidden_size\": 128,"
	         "                      \"bidirectional\": %s, \"batch_first\": %s}},"
	         " \"graph\": [{\"out\": \"h\", \"call\": \"l\", \"args\": [\"x\"]},"
	         "            {\"out\": [\"y\", \"hn\"], \"call\": \"r\", \"args\": [\"h\"]}], \"outputs\": [\"y\"]}",
	         batch_first ? "[\"N\", 256, 384]" : "[256, \"N\", 384]", bidirectional ? "true" : "false",
	         batch_first ? "true" : "false");
	ti_model *m = model_of(text, 16);
	ti_memory_options o = {.mode = TI_MEMORY_INFER};
	const ti_memory_report *r = estimate(m, &o);
	cr_assert_str_eq(r->peak_step, "r (LSTM)");
	int64_t peak = r->peak;
	ti_model_close(m);
	return peak;
}

Test(memory, a_batch_first_lstm_copies_its_input_for_each_direction_s_input_projection_in_inference)
{
	const int64_t x = 16 * 256 * 384 * 4, tbh = 16 * 256 * 128 * 4;
	/* measured on 1.13: two directions 26.0 MiB above the input against 20.0 sequence-first (the second
	   linear_ih's contiguous copy beside the first's gates); one direction 14.0 against 12.0 (the copy beside
	   its gates, 4 T x B x H, where the sequence-first peak is the gates with the step outputs and their stack) */
	EXPECT_INT(lstm_inference_peak(true, true) - lstm_inference_peak(false, true), x);
	EXPECT_INT(lstm_inference_peak(true, false) - lstm_inference_peak(false, false), x - 2 * tbh);
}

/* Linear(16, 8) over x [8, N=4, 16], or over its transpose [N, 8, 16] (not contiguous), training with SGD. */
static int64_t linear_activations(bool transposed, bool frozen, int64_t *peak)
{
	char text[700];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [8, \"N\", 16]}},"
	         " \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": 16, \"out_features\": 8}},"
	         " \"graph\": [%s{\"out\": \"y\", \"call\": \"l\", \"args\": [\"%s\"]}], \"outputs\": [\"y\"]}",
	         transposed ? "{\"out\": \"xt\", \"op\": \"transpose\", \"args\": [\"x\", 0, 1]}, " : "",
	         transposed ? "xt" : "x");
	ti_model *m = model_of(text, 4);
	const char *all[] = {"*"};
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .frozen = frozen ? all : NULL,
	                       .frozen_count = frozen ? 1 : 0};
	const ti_memory_report *r = estimate(m, &o);
	int64_t a = r->activations;
	*peak = r->peak;
	ti_model_close(m);
	return a;
}

Test(memory, a_linear_over_a_transposed_input_keeps_the_copy_it_folds_the_input_into)
{
	const int64_t x = 8 * 4 * 16 * 4;
	int64_t peak_plain, peak_transposed;
	/* contiguous: the input itself is saved (a model input, no new activation); transposed: reshape to rows
	   copies it, and mm saves the copy */
	EXPECT_INT(linear_activations(true, false, &peak_transposed) - linear_activations(false, false, &peak_plain), x);
	/* a frozen weight needs neither: the copy is made and freed in the call */
	int64_t frozen_plain, frozen_transposed;
	EXPECT_INT(linear_activations(true, true, &frozen_transposed), linear_activations(false, true, &frozen_plain));
	cr_assert_geq(frozen_transposed - frozen_plain, x, "the copy is still made during the call");
}

/* x [N=4, T=64, 32] -> RNN(32, 64, bidirectional, batch_first) -> Linear(128, 8), training with SGD. */
static const ti_memory_report *rnn_step(ti_model **m, const char *type, bool bidirectional)
{
	char text[900];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [64, \"N\", 32]}},"
	         " \"modules\": {\"r\": {\"type\": \"%s\", \"input_size\": 32, \"hidden_size\": 64,"
	         "                      \"bidirectional\": %s},"
	         "               \"o\": {\"type\": \"Linear\", \"in_features\": %d, \"out_features\": 8}},"
	         " \"graph\": [{\"out\": [\"y\", \"h\"], \"call\": \"r\", \"args\": [\"x\"]},"
	         "            {\"out\": \"z\", \"call\": \"o\", \"args\": [\"y\"]}], \"outputs\": [\"z\"]}",
	         type, bidirectional ? "true" : "false", bidirectional ? 128 : 64);
	*m = model_of(text, 4);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD};
	return estimate(*m, &o);
}

/* The forward's high at the recurrent layer less what is live when it ends. */
static int64_t rnn_forward_scratch(const char *type, bool bidirectional)
{
	ti_model *m;
	const ti_memory_report *r = rnn_step(&m, type, bidirectional);
	int64_t scratch = forward_scratch(r, "r (");
	ti_model_close(m);
	return scratch;
}

Test(memory, a_recurrent_layer_in_training_holds_its_precomputed_gates_and_both_directions_stacks_at_the_end)
{
	const int64_t tbh = 64 * 4 * 64 * 4;
	/* measured on 1.13 (one to three layers, B 4 to 16, T 64 to 256): the precomputed gates of linear_ih
	   (G x T x B x H), held by the step inputs that are their views until the layer returns; with two
	   directions also both directions' stacks beside their cat */
	EXPECT_INT(rnn_forward_scratch("LSTM", false), 4 * tbh);
	EXPECT_INT(rnn_forward_scratch("GRU", false), 3 * tbh);
	EXPECT_INT(rnn_forward_scratch("RNN", false), 1 * tbh);
	EXPECT_INT(rnn_forward_scratch("LSTM", true), 6 * tbh);
	EXPECT_INT(rnn_forward_scratch("RNN", true), 3 * tbh);
}

Test(memory, a_recurrent_layer_s_output_gradient_goes_before_the_last_direction_stacks_its_gate_gradients)
{
	/* the steps' gradients are views of the output's (unbind, cat's slices): it goes when the last
	   direction's first step has run, so UnbindBackward's stack (T x B x H) replaces it; the walk's top is
	   then the second step's three weight_hh gradients (old, new, their sum), as measured on 1.13 */
	ti_model *m;
	const ti_memory_report *r = rnn_step(&m, "RNN", false);
	int64_t rise = backward_rise(r, "r (");
	ti_model_close(m);
	EXPECT_INT(rise, 3 * 64 * 64 * 4);
}

/* Self-attention over x [N=4, 64, 64], 2 heads, batch_first, a training step: what it saves for backward. */
static int64_t attention_saved(ti_torch_version torch)
{
	ti_model *m = model_of("{\"inputs\": {\"x\": {\"shape\": [\"N\", 64, 64]}},"
	                       " \"modules\": {\"m\": {\"type\": \"MultiheadAttention\", \"embed_dim\": 64, \"num_heads\": 2,"
	                       "                       \"batch_first\": true}},"
	                       " \"graph\": [{\"out\": [\"y\", \"w\"], \"call\": \"m\", \"args\": [\"x\", \"x\", \"x\"],"
	                       "             \"need_weights\": false}], \"outputs\": [\"y\"]}",
	                       4);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .torch = torch};
	int64_t a = estimate(m, &o)->activations;
	ti_model_close(m);
	return a;
}

Test(memory, multihead_attention_in_1_13_saves_the_query_s_copy_scaled_and_the_keys_and_values_copies)
{
	const int64_t x = 4 * 64 * 64 * 4, scores = 4 * 2 * 64 * 64 * 4;
	/* 1.13 (measured with saved-tensor hooks, 448 KiB): the in-projection's [T*B, E] copy of the transposed
	   query (mm saves it), the scaled q, k's and v's copies made from linear(...).chunk(3), the softmax, the
	   out-projection's input; the chunked projection itself goes once its three copies are made */
	EXPECT_INT(attention_saved(TI_TORCH_1_13), 5 * x + scores);
}

/*
 * x [N, 3, side, side] -> Conv2d(3, channels, 1) -> the module d given -> relu when asked: the step a test
 * reads, as PyTorch 1.13 runs it on avx512_core, in training with SGD or evaluated. The model is *m's.
 */
static const ti_memory_report *after_pointwise(ti_model **m, int64_t n, int side, int channels, const char *d,
                                               bool relu, bool train)
{
	char text[1200];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", 3, %d, %d]}},"
	         " \"modules\": {\"c\": {\"type\": \"Conv2d\", \"in_channels\": 3, \"out_channels\": %d, \"kernel_size\": 1},"
	         "               \"d\": %s},"
	         " \"graph\": [{\"out\": \"h\", \"call\": \"c\", \"args\": [\"x\"]}, {\"out\": \"y\", \"call\": \"d\", \"args\": [\"h\"]}%s],"
	         " \"outputs\": [\"%s\"]}",
	         side, side, channels, d, relu ? ", {\"out\": \"z\", \"op\": \"relu\", \"args\": [\"y\"]}" : "", relu ? "z" : "y");
	*m = model_of(text, n);
	ti_memory_options o = {.mode = train ? TI_MEMORY_TRAIN : TI_MEMORY_INFER, .optimizer = train ? TI_OPTIM_SGD : 0,
	                       .cpu_isa = TI_ISA_AVX512_CORE, .cpu_isa_fixed = true};
	return estimate(*m, &o);
}

/* x [N=2, 3, 16, 16] -> Conv2d(3, 8, 1) -> the pooling given, ending the model; training with SGD. */
static int64_t pool_backward_rise(const char *pool)
{
	ti_model *m;
	int64_t rise = backward_rise(after_pointwise(&m, 2, 16, 8, pool, false, true), "d (");
	ti_model_close(m);
	return rise;
}

Test(memory, a_pooling_that_ends_the_model_copies_the_loss_s_expanded_gradient_for_its_backward)
{
	const int64_t h = 2 * 8 * 16 * 16 * 4;
	/* measured on 1.13: max_pool2d's and avg_pool2d's backward hold a contiguous copy of their output's
	   gradient (an expanded scalar from the loss) beside their input's gradient */
	EXPECT_INT(pool_backward_rise("{\"type\": \"MaxPool2d\", \"kernel_size\": 2}"), h + h / 4);
	EXPECT_INT(pool_backward_rise("{\"type\": \"AvgPool2d\", \"kernel_size\": 2}"), h + h / 4);
	EXPECT_INT(pool_backward_rise("{\"type\": \"AdaptiveAvgPool2d\", \"output_size\": 2}"), h + 2 * 8 * 2 * 2 * 4);
}

/* x [N=2, 3, 32, 32] -> Conv2d(3, 32, 1) -> a depthwise Conv2d(32, 32, k, padding k/2, groups 32, no bias). */
static int64_t depthwise_backward_rise(int k)
{
	char d[200];
	snprintf(d, sizeof(d), "{\"type\": \"Conv2d\", \"in_channels\": 32, \"out_channels\": 32, \"kernel_size\": %d,"
	         " \"padding\": %d, \"groups\": 32, \"bias\": false}", k, k / 2);
	ti_model *m;
	int64_t rise = backward_rise(after_pointwise(&m, 2, 32, 32, d, true, true), "d (");
	ti_model_close(m);
	return rise;
}

Test(memory, a_depthwise_convolution_holds_only_the_larger_of_its_reorders_in_backward_unless_it_is_2_or_3_wide)
{
	const int64_t map = 2 * 32 * 32 * 32 * 4;
	/* measured on 1.13 (avx512_core): beside the input's gradient and the weight's, a 3x3 depthwise backward
	   holds the input and the output's gradient reordered, a 7x7 one only the larger of them */
	EXPECT_INT(depthwise_backward_rise(3), map + 2 * map + 32 * 9 * 4);
	EXPECT_INT(depthwise_backward_rise(7), map + map + 32 * 49 * 4);
	/* and a 1x1 one (at stride 1 and a batch under 16 it is THNN's, holding one sample's columns) */
	EXPECT_INT(depthwise_backward_rise(1), map + map / 2 + 32 * 4);
}

/* x [N=4, 3, 96, 96] -> Conv2d(3, 96, 1) -> the convolution d given -> relu; d's backward rise in training. */
static int64_t conv_backward_rise(const char *conv)
{
	ti_model *m;
	int64_t rise = backward_rise(after_pointwise(&m, 4, 96, 96, conv, true, true), "d (");
	ti_model_close(m);
	return rise;
}

Test(memory, a_dilated_convolution_at_a_stride_holds_only_its_input_reordered_in_backward)
{
	const int64_t map = 4 * 96 * 96 * 96 * 4, weight = 96 * 96 * 9 * 4;
	/* measured on 1.13 (avx512_core), beside the input's and the weight's gradients: undilated, the input and
	   the output's gradient reordered (17.19 MiB above the input's gradient); dilated at a stride, the input
	   alone (13.50: the weight's gradient, 0.32, is made after that moment; counted beside it here) */
	EXPECT_INT(conv_backward_rise("{\"type\": \"Conv2d\", \"in_channels\": 96, \"out_channels\": 96, \"kernel_size\": 3,"
	                              " \"stride\": 2, \"padding\": 1, \"bias\": false}"),
	           map + map + map / 4 + weight);
	EXPECT_INT(conv_backward_rise("{\"type\": \"Conv2d\", \"in_channels\": 96, \"out_channels\": 96, \"kernel_size\": 3,"
	                              " \"stride\": 2, \"padding\": 2, \"dilation\": 2, \"bias\": false}"),
	           map + map + weight);
}

/* x [N=4, 3, 96, 96] -> Conv2d(3, 32, 1) -> Conv2d(32, cout, 3, stride 2, padding 1, groups 8), evaluated. */
static int64_t grouped_forward_scratch(int cout)
{
	char d[200];
	snprintf(d, sizeof(d), "{\"type\": \"Conv2d\", \"in_channels\": 32, \"out_channels\": %d, \"kernel_size\": 3,"
	         " \"stride\": 2, \"padding\": 1, \"groups\": 8}", cout);
	ti_model *m;
	int64_t scratch = forward_scratch(after_pointwise(&m, 4, 96, 32, d, false, false), "d (");
	ti_model_close(m);
	return scratch;
}

Test(memory, a_grouped_convolution_with_groups_of_4_output_channels_holds_the_larger_of_its_input_and_output)
{
	const int64_t in = 4 * 32 * 96 * 96 * 4, out_per_channel = 4 * 48 * 48 * 4;
	/* measured on 1.13 (avx512_core): 12 output channels a group run on 4-channel blocks and hold the input
	   once more (it is the larger here); 6 a group run as a plain GEMM and hold the output once more */
	EXPECT_INT(grouped_forward_scratch(96), in);
	EXPECT_INT(grouped_forward_scratch(48), 48 * out_per_channel);
}

/* ---- Hugging Face MoE templates, against what transformers' modeling code keeps ---- */

/* A mixtral config.json (hidden H = 64, intermediate I = 128, 4 experts, top-2) described and bound at B x T. */
static ti_model *open_mixtral(int64_t batch, int64_t tokens)
{
	static const char config[] =
		"{\"model_type\": \"mixtral\", \"vocab_size\": 100, \"hidden_size\": 64, \"intermediate_size\": 128,"
		" \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
		" \"num_local_experts\": 4, \"num_experts_per_tok\": 2}";
	char *desc = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(config, strlen(config), &desc, &err) == TI_OK, "%s", err.message);
	const char *names[] = {"B", "T"};
	int64_t values[] = {batch, tokens};
	ti_model *m = model_bound(desc, names, values, 2);
	free(desc);
	return m;
}

static int64_t module_activations(const ti_memory_report *r, const char *path)
{
	for (size_t i = 0; i < r->module_count; i++)
		if (!strcmp(r->modules[i].path, path))
			return r->modules[i].activations;
	cr_assert_fail("no module %s", path);
	return -1;
}

Test(memory, a_mixtral_expert_choice_saves_its_tokens_copy_and_its_weighted_output)
{
	/* transformers' MixtralSparseMoeBlock: per expert hidden_states[top_x] (a copy its w1 and w3 save), w1's
	   output (silu saves it), silu's and w3's (their product saves them), the product (w2 saves it), w2's output
	   (the routing weight's mul saves it): over the k = 2 choices, N = B*T rows of each */
	const int64_t n = 4 * 64, h = 64, i = 128, k = 2;
	const int64_t per_choice = (2 * n * h + 4 * n * i) * 4;
	ti_model *m = open_mixtral(4, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN};
	const ti_memory_report *r = estimate(m, &o);
	int64_t moe = module_activations(r, "model.layers.0.block_sparse_moe");
	/* beside them only the router's: its softmax (N x 4 floats), top-k values and indices (N x 2) */
	cr_expect(moe >= k * per_choice && moe <= k * per_choice + n * (4 + 2 * 3) * 4,
	          "the MoE block keeps %lld, want %lld and the router's", (long long)moe, (long long)(k * per_choice));
	ti_model_close(m);
}

Test(memory, a_mixtral_rotation_lets_go_of_its_temporaries_before_the_scores)
{
	/* apply_rotary_pos_emb is a function: rotate_half's halves, negation and concatenation die when it returns,
	   and with them the projections' outputs; at the peak (the scores and their softmax) only q, k and v remain */
	ti_model *m = open_mixtral(2, 512);
	ti_memory_options o = {.kv_cache = -1};
	const ti_memory_report *r = estimate(m, &o);
	for (size_t t = 0; t < r->top_count; t++) {
		const char *name = r->top[t].name;
		if (r->top[t].kind != TI_MEM_ACTIVATION)
			continue;
		bool rotated = strstr(name, "self_attn.rotary (add)") != NULL; /* the rotated q and k: what it returns */
		cr_expect(rotated || (!strstr(name, "self_attn.rotary") && !strstr(name, "q_proj") && !strstr(name, "k_proj")),
		          "%s (%lld bytes) is live at the peak", name, (long long)r->top[t].bytes);
	}
	ti_model_close(m);
}

static const char rms_mlp[] =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 64]}},"
	" \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64},"
	"  \"norm\": {\"type\": \"RMSNorm\", \"normalized_shape\": 64}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"fc\", \"args\": [\"x\"]}, {\"out\": \"y\", \"call\": \"norm\", \"args\": [\"h\"]}],"
	" \"outputs\": [\"y\"]}";

Test(memory, an_rms_norm_saves_its_normalized_rows_and_on_1_13_their_squares)
{
	/* x * rsqrt(x.pow(2).mean(-1) + eps) * weight, N = 32 rows of 64: beside its input (fc's output), the rsqrt
	   (a float a row) and the normalized rows the weight's mul saves; 1.13's mean also saves x.pow(2) */
	const int64_t rows = 32, elems = 32 * 64;
	ti_model *m = model_of(rms_mlp, rows);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .torch = TI_TORCH_1_13};
	cr_expect_eq(module_activations(estimate(m, &o), "norm"), 4 * rows + 2 * 4 * elems);
	ti_model_close(m);
	m = model_of(rms_mlp, rows);
	ti_memory_options o2 = {.mode = TI_MEMORY_TRAIN, .torch = TI_TORCH_2};
	cr_expect_eq(module_activations(estimate(m, &o2), "norm"), 4 * rows + 4 * elems);
	ti_model_close(m);
}

static const char mean_mlp[] =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 64]}},"
	" \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 64}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"fc\", \"args\": [\"x\"]}, {\"out\": \"s\", \"op\": \"pow\", \"args\": [\"h\", 2]},"
	"  {\"out\": \"y\", \"op\": \"mean\", \"args\": [\"s\"], \"dim\": -1}],"
	" \"outputs\": [\"y\"]}";

Test(memory, a_mean_over_a_dim_saves_its_input_on_1_13_only)
{
	/* MeanBackward1 saves self on 1.13 (2.x keeps its sizes): pow's output, N x 64 floats, lives to backward */
	const int64_t squares = 32 * 64 * 4;
	ti_model *m = model_of(mean_mlp, 32);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .torch = TI_TORCH_1_13};
	int64_t old = estimate(m, &o)->activations;
	ti_model_close(m);
	m = model_of(mean_mlp, 32);
	ti_memory_options o2 = {.mode = TI_MEMORY_TRAIN, .torch = TI_TORCH_2};
	int64_t now = estimate(m, &o2)->activations;
	ti_model_close(m);
	cr_expect_eq(old - now, squares, "1.13 keeps %lld more, want %lld", (long long)(old - now), (long long)squares);
}

/* x [64, 256] -> Linear(256, 8000): a language model's head, its logits 64 x 8000 float32; class as given. */
static ti_model *head_model(const char *cls)
{
	char text[512];
	snprintf(text, sizeof(text),
	         "{%s%s%s \"inputs\": {\"x\": {\"shape\": [\"N\", 256]}},"
	         " \"modules\": {\"lm_head\": {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 8000}},"
	         " \"graph\": [{\"out\": \"logits\", \"call\": \"lm_head\", \"args\": [\"x\"]}]}",
	         cls ? "\"class\": \"" : "", cls ? cls : "", cls ? "\"," : "");
	return model_of(text, 64);
}

Test(memory, a_causal_language_model_trains_on_cross_entropy_and_anything_else_on_the_sum)
{
	struct { const char *cls; ti_memory_loss option, want; } cases[] = {
		{"LlamaForCausalLM", TI_LOSS_DEFAULT, TI_LOSS_CROSS_ENTROPY},
		{"GPT2LMHeadModel", TI_LOSS_DEFAULT, TI_LOSS_CROSS_ENTROPY},
		{"BertModel", TI_LOSS_DEFAULT, TI_LOSS_SUM},
		{NULL, TI_LOSS_DEFAULT, TI_LOSS_SUM},
		{NULL, TI_LOSS_CROSS_ENTROPY, TI_LOSS_CROSS_ENTROPY},
		{"LlamaForCausalLM", TI_LOSS_SUM, TI_LOSS_SUM},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_model *m = head_model(cases[i].cls);
		ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .loss = cases[i].option};
		ti_memory_loss got = estimate(m, &o)->loss;
		cr_expect_eq(got, cases[i].want, "case %zu: loss %d, want %d", i, (int)got, (int)cases[i].want);
		ti_model_close(m);
	}
	ti_model *m = head_model("LlamaForCausalLM");
	ti_memory_options infer = {0};
	cr_expect_eq(estimate(m, &infer)->loss, TI_LOSS_DEFAULT, "inference takes no loss");
	ti_model_close(m);
	cr_expect_str_eq(ti_memory_loss_name(TI_LOSS_CROSS_ENTROPY), "cross-entropy");
	cr_expect_str_eq(ti_memory_loss_name(TI_LOSS_SUM), "sum");
	cr_expect_null(ti_memory_loss_name((ti_memory_loss)7));
}

Test(memory, cross_entropy_saves_its_log_softmax_and_its_backward_holds_two_gradients_of_the_logits)
{
	const int64_t logits = (int64_t)64 * 8000 * 4; /* 2,048,000 */
	ti_model *m = head_model(NULL);
	ti_memory_options sum = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .loss = TI_LOSS_SUM};
	const ti_memory_report *rs = estimate(m, &sum);
	ti_memory_options ce = sum;
	ce.loss = TI_LOSS_CROSS_ENTROPY;
	ti_model *m2 = head_model(NULL);
	const ti_memory_report *rc = estimate(m2, &ce);
	/* log_softmax's result, saved by it and by nll_loss until backward */
	cr_expect_eq(rc->activations - rs->activations, logits, "activations %lld vs %lld", (long long)rc->activations,
	             (long long)rs->activations);
	/* nll_loss's gradient and log_softmax's, both alive before the first is let go */
	cr_expect_eq(backward_rise(rc, "the loss (cross_entropy)"), 2 * logits);
	/* the head's backward takes the logits' gradient as it is: no copy of an expanded one */
	int64_t sum_head = backward_rise(rs, "lm_head"), ce_head = backward_rise(rc, "lm_head");
	cr_expect_eq(sum_head - ce_head, logits,
	             "the sum's expanded gradient is copied out (%lld), cross-entropy's not (%lld)", (long long)sum_head,
	             (long long)ce_head);
	ti_model_close(m);
	ti_model_close(m2);
}

/* x [N, 256, 512] -> RMSNorm(512): transformers' RMSNorm written out, as PyTorch 1.13 runs it. */
static const char *rms_model =
	"{\"inputs\": {\"x\": {\"shape\": [\"N\", 256, 512]}},"
	" \"modules\": {\"norm\": {\"type\": \"RMSNorm\", \"normalized_shape\": 512},"
	"   \"proj\": {\"type\": \"Linear\", \"in_features\": 512, \"out_features\": 512}},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"proj\", \"args\": [\"x\"]},"
	"   {\"out\": \"y\", \"call\": \"norm\", \"args\": [\"h\"]}]}";

Test(memory, rms_norm_saves_two_float32_copies_of_its_input_as_its_composite_does)
{
	const int64_t x = (int64_t)4 * 256 * 512 * 4, rows = (int64_t)4 * 256 * 4; /* 2 MiB; rstd: a float per row */
	ti_model *m = model_of(rms_model, 4);
	ti_memory_options train = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .loss = TI_LOSS_SUM};
	const ti_memory_report *r = estimate(m, &train);
	/* proj's output h (saved by the norm), the norm's two float32 tensors and its rstd: measured on 1.13 */
	cr_expect_eq(r->activations, x + 2 * x + rows, "activations %lld", (long long)r->activations);
	/* its backward: two input-sized temporaries beside the input's gradient, and the weight's gradient */
	cr_expect_eq(backward_rise(r, "rms_norm"), 3 * x + 512 * 4, "rise %lld", (long long)backward_rise(r, "rms_norm"));
	ti_model_close(m);
	m = model_of(rms_model, 4);
	ti_memory_options infer = {0};
	const ti_memory_report *ri = estimate(m, &infer);
	/* under no_grad: x, h, x * rstd and the output at once */
	int64_t above = ri->peak - ri->weights - ri->inputs;
	cr_expect_eq(above, 3 * x, "inference %lld", (long long)above);
	ti_model_close(m);
}

/* x [B, T, 256] -> Linear(256, 768) split into q, k, v [B, 4, T, 64]: GPT-2's fused projection. */
static const char *fused_qkv =
	"{\"inputs\": {\"x\": {\"shape\": [\"B\", \"T\", 256]}},"
	" \"modules\": {\"c_attn\": {\"type\": \"Linear\", \"in_features\": 256, \"out_features\": 768}},"
	" \"graph\": [{\"out\": \"qkv\", \"call\": \"c_attn\", \"args\": [\"x\"]},"
	"   {\"out\": [\"q\", \"k\", \"v\"], \"op\": \"split\", \"args\": [\"qkv\", 256], \"dim\": 2},"
	"   {\"out\": \"q\", \"op\": \"unflatten\", \"args\": [\"q\", -1, [4, 64]]},"
	"   {\"out\": \"q\", \"op\": \"transpose\", \"args\": [\"q\", 1, 2]},"
	"   {\"out\": \"k\", \"op\": \"unflatten\", \"args\": [\"k\", -1, [4, 64]]},"
	"   {\"out\": \"k\", \"op\": \"transpose\", \"args\": [\"k\", 1, 2]},"
	"   {\"out\": \"v\", \"op\": \"unflatten\", \"args\": [\"v\", -1, [4, 64]]},"
	"   {\"out\": \"v\", \"op\": \"transpose\", \"args\": [\"v\", 1, 2]},"
	"   {\"out\": \"y\", \"op\": \"scaled_dot_product_attention\", \"args\": [\"q\", \"k\", \"v\"],"
	"    \"is_causal\": true}]}";

Test(memory, a_cache_of_keys_and_values_that_view_a_fused_projection_holds_all_of_it)
{
	/* DynamicCache keeps k and v, views of c_attn's [B, T, 768] output: the queries stay with them */
	const char *names[] = {"B", "T"};
	int64_t values[] = {2, 128};
	ti_model *m = model_bound(fused_qkv, names, values, 2);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_eq(r->kv_cache, (int64_t)2 * 128 * 768 * 4, "got %lld", (long long)r->kv_cache);
	ti_model_close(m);
	/* in another dtype the cache is a copy: k and v alone */
	m = model_bound(fused_qkv, names, values, 2);
	ti_memory_options half = {.kv_dtype = TI_DT_BFLOAT16};
	cr_expect_eq(estimate(m, &half)->kv_cache, (int64_t)2 * 128 * 512 * 2);
	ti_model_close(m);
}

/* Eager attention as transformers writes it: repeat_kv (x[:, :, None].expand(...).reshape(...)) of 2 key/value
   heads to 8 query heads, scores masked by adding, softmax, the values. */
static const char *repeat_kv_eager =
	"{\"inputs\": {\"q\": {\"shape\": [\"B\", 8, \"T\", 64]}, \"k\": {\"shape\": [\"B\", 2, \"T\", 64]},"
	"             \"v\": {\"shape\": [\"B\", 2, \"T\", 64]}, \"mask\": {\"shape\": [\"B\", 1, \"T\", \"T\"]}},"
	" \"graph\": ["
	"   {\"out\": \"k\", \"op\": \"unsqueeze\", \"args\": [\"k\", 2]},"
	"   {\"out\": \"k\", \"op\": \"expand\", \"args\": [\"k\", \"B\", 2, 4, \"T\", 64]},"
	"   {\"out\": \"k\", \"op\": \"reshape\", \"args\": [\"k\", \"B\", 8, \"T\", 64]},"
	"   {\"out\": \"v\", \"op\": \"unsqueeze\", \"args\": [\"v\", 2]},"
	"   {\"out\": \"v\", \"op\": \"expand\", \"args\": [\"v\", \"B\", 2, 4, \"T\", 64]},"
	"   {\"out\": \"v\", \"op\": \"reshape\", \"args\": [\"v\", \"B\", 8, \"T\", 64]},"
	"   {\"out\": \"kt\", \"op\": \"transpose\", \"args\": [\"k\", 2, 3]},"
	"   {\"out\": \"s\", \"op\": \"matmul\", \"args\": [\"q\", \"kt\"]},"
	"   {\"out\": \"s\", \"op\": \"add\", \"args\": [\"s\", \"mask\"]},"
	"   {\"out\": \"p\", \"op\": \"softmax\", \"args\": [\"s\"], \"dim\": -1},"
	"   {\"out\": \"y\", \"op\": \"matmul\", \"args\": [\"p\", \"v\"]}]}";

Test(memory, hugging_face_s_repeat_kv_is_a_repeat_and_the_cache_holds_the_key_value_heads)
{
	const char *names[] = {"B", "T"};
	int64_t values[] = {3, 512};
	ti_model *m = model_bound(repeat_kv_eager, names, values, 2);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_eq(r->kv_sites, 1);
	cr_expect_eq(r->kv_causal, 1, "the mask added to the scores makes it causal");
	cr_expect_eq(r->kv_cache, kv(3, 512, 4), "got %lld, want %lld (2 heads, not 8)", (long long)r->kv_cache,
	             (long long)kv(3, 512, 4));
	ti_model_close(m);
}

Test(memory, a_constant_tinspect_export_records_as_torch_tensor_has_a_rule)
{
	/* transformers' torch.tensor(hidden_size ** 0.5) (Gemma's normalizer), recorded opaque: a new scalar */
	const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 256]}},"
		" \"graph\": [{\"out\": \"c\", \"opaque\": \"torch.tensor\", \"args\": [16.0],"
		"              \"outputs\": [{\"shape\": [], \"dtype\": \"float32\"}]},"
		"            {\"out\": \"y\", \"op\": \"mul\", \"args\": [\"x\", \"c\"]}]}";
	ti_model *m = model_of(text, 64);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect(!r->peak_high_open, "no operator without a rule: the range is closed");
	cr_expect_eq(r->peak, 2 * 64 * 256 * 4 + 4, "x, the scalar and y: %lld", (long long)r->peak);
	ti_model_close(m);
}

/* One causal attention step of a multi-query model: 8 query heads, one key/value head, head_dim 64, float32. */
static const char *mqa =
	"{\"inputs\": {\"q\": {\"shape\": [\"B\", 8, \"T\", 64]}, \"k\": {\"shape\": [\"B\", 1, \"T\", 64]},"
	"             \"v\": {\"shape\": [\"B\", 1, \"T\", 64]}},"
	" \"graph\": [{\"out\": \"y\", \"op\": \"scaled_dot_product_attention\", \"args\": [\"q\", \"k\", \"v\"],"
	"             \"is_causal\": true, \"enable_gqa\": true}]}";

Test(memory, a_multi_query_decode_step_copies_the_keys_and_the_values_to_the_query_heads_one_at_a_time)
{
	/* repeat_kv of one head is a view; the scores' matmul copies the keys (B x 8 x 8192 x 64 x 4), the output's the
	   values after it: one copy live at a time on 1.13, both at once on 2's math kernel */
	const int64_t copy = (int64_t)2 * 8 * 8192 * 64 * 4, cache = (int64_t)2 * 2 * 8192 * 64 * 4;
	const char *names[] = {"B", "T"};
	int64_t values[] = {2, 1};
	ti_model *m = model_bound(mqa, names, values, 2);
	ti_memory_options o = {.kv_cache = 1, .kv_tokens = 8192, .attention = TI_ATTN_EAGER};
	const ti_memory_report *r = estimate(m, &o);
	cr_expect_eq(r->kv_cache, cache);
	cr_expect(r->peak >= cache + copy && r->peak < cache + copy + copy / 4, "1.13: peak %lld, one copy %lld",
	          (long long)r->peak, (long long)copy);
	ti_model_close(m);
	m = model_bound(mqa, names, values, 2);
	ti_memory_options two = {.kv_cache = 1, .kv_tokens = 8192, .attention = TI_ATTN_EAGER, .torch = TI_TORCH_2};
	r = estimate(m, &two);
	cr_expect(r->peak >= cache + 2 * copy, "2: peak %lld, two copies", (long long)r->peak);
	ti_model_close(m);
}

Test(memory, mean_over_a_dimension_keeps_its_input_for_backward_on_1_13)
{
	/* x [N, 1024] -> Linear(1024, 1024) -> mean(-1): the Linear's output (4 MiB at N = 1024) stays saved; a
	   mean of everything keeps only the sizes */
	const char *text =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 1024]}},"
		" \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024}},"
		" \"graph\": [{\"out\": \"h\", \"call\": \"fc\", \"args\": [\"x\"]},"
		"            {\"out\": \"y\", \"op\": \"mean\", \"args\": [\"h\", -1], \"keepdim\": true}]}";
	const char *all =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 1024]}},"
		" \"modules\": {\"fc\": {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024}},"
		" \"graph\": [{\"out\": \"h\", \"call\": \"fc\", \"args\": [\"x\"]},"
		"            {\"out\": \"y\", \"op\": \"mean\", \"args\": [\"h\"]}]}";
	const int64_t h = (int64_t)1024 * 1024 * 4;
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .loss = TI_LOSS_SUM};
	ti_model *m = model_of(text, 1024);
	int64_t dim = estimate(m, &o)->activations;
	ti_model_close(m);
	m = model_of(all, 1024);
	int64_t whole = estimate(m, &o)->activations;
	ti_model_close(m);
	cr_expect_eq(dim - whole, h, "mean(-1) keeps %lld, mean() %lld", (long long)dim, (long long)whole);
}

Test(memory, eager_attention_on_strided_values_saves_their_copy_not_the_projection_they_view)
{
	/* fused_qkv's v views c_attn's [B, T, 768] output; 1.13's matmul copies it (reshape of a strided view) and
	   bmm saves the copy: the projection's output goes once q, k and v are taken (k too is a strided view) */
	const char *names[] = {"B", "T"};
	int64_t values[] = {2, 128};
	ti_model *m = model_bound(fused_qkv, names, values, 2);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .loss = TI_LOSS_SUM};
	const ti_memory_report *r = estimate(m, &o);
	const ti_memory_module *attn = NULL;
	for (size_t i = 0; i < r->module_count; i++)
		if (!strcmp(r->modules[i].path, "c_attn"))
			attn = &r->modules[i];
	cr_assert_not_null(attn);
	cr_expect_eq(attn->activations, 0, "c_attn's output kept: %lld", (long long)attn->activations);
	ti_model_close(m);
}

Test(memory, indexing_with_a_list_of_ints_copies_and_a_slice_views)
{
	/* Falcon's fused_qkv[..., [-2], :]: a gathered copy of one head (B x T x 1 x 64), not a view of the
	   projection (which its name h holds to the end here) */
	const char *gather =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 128, 384]}},"
		" \"modules\": {\"qkv\": {\"type\": \"Linear\", \"in_features\": 384, \"out_features\": 384}},"
		" \"graph\": [{\"out\": \"h\", \"call\": \"qkv\", \"args\": [\"x\"]},"
		"   {\"out\": \"h\", \"op\": \"unflatten\", \"args\": [\"h\", -1, [6, 64]]},"
		"   {\"out\": \"k\", \"op\": \"getitem\", \"args\": [\"h\", [\"...\", [-2], {\"slice\": [null, null, null]}]]},"
		"   {\"out\": \"y\", \"op\": \"mul\", \"args\": [\"k\", 2.0]}]}";
	const int64_t x = (int64_t)8 * 128 * 384 * 4, head = (int64_t)8 * 128 * 64 * 4;
	ti_model *m = model_of(gather, 8);
	ti_memory_options o = {0};
	const ti_memory_report *r = estimate(m, &o);
	/* x, the projection, the gathered head and its product: a view would add no head of its own */
	cr_expect_eq(r->peak - r->weights, x + x + 2 * head, "peak above the weights %lld",
	             (long long)(r->peak - r->weights));
	ti_model_close(m);
}

Test(memory, a_plain_gemm_grouped_convolution_makes_its_input_s_gradient_through_the_larger_of_input_and_columns)
{
	/* x [1, 3, 64, 64] -> Conv2d(3, 128, 1) -> Conv2d(128, 16, 7, padding 3, groups 8): 2 output channels a
	   group, the plain-layout GEMM; one image's and group's columns (16 x 49 x 4096 floats, 12.25 MiB) are larger
	   than the input (2 MiB) */
	ti_model *m;
	int64_t rise = backward_rise(after_pointwise(&m, 1, 64, 128,
	                                             "{\"type\": \"Conv2d\", \"in_channels\": 128, \"out_channels\": 16,"
	                                             " \"kernel_size\": 7, \"padding\": 3, \"groups\": 8, \"bias\": false}",
	                                             true, true),
	                             "d (");
	ti_model_close(m);
	const int64_t x = 128 * 64 * 64 * 4, columns = 16 * 49 * 64 * 64 * 4, weight = 16 * 16 * 49 * 4;
	/* measured on 1.13 at 128 -> 16 on 192x192 maps: 115 MiB beside the input's gradient, the columns 110 */
	EXPECT_INT(rise, x + columns + weight + weight);
}
