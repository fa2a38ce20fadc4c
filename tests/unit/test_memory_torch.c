/*
 * test_memory_torch.c - what the PyTorch version and the device change in
 * the memory simulation: 2.x's fused attention kernels and optimizer
 * defaults, CUDA's bool dropout mask, the feature dropouts' per-channel
 * noise.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"

#include "tinspect/memory.h"

/* The model as `memory --mode train` opens it: its modules in training (dropout drops). */
static ti_model *open_bound(const char *text, int64_t n)
{
	const char *names[] = {"N"};
	int64_t values[] = {n};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 1, .training = true};
	ti_model *m = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_model_open(text, strlen(text), &o, &m, &err) == TI_OK, "opening failed: %s", err.message);
	return m;
}

static const ti_memory_report *simulate(ti_model *m, const ti_memory_options *o)
{
	const ti_memory_report *r = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_memory_estimate(m, o, &r, &err) == TI_OK, "estimate failed: %s", err.message);
	return r;
}

static bool ran(const ti_memory_report *r, const char *op)
{
	for (size_t i = 0; i < r->point_count; i++)
		if (r->timeline[i].step && strstr(r->timeline[i].step, op))
			return true;
	return false;
}

/* Self-attention over [N, 128, 64] with 4 heads; need_weights and the dropout are filled in. */
static char *attention(char *buf, size_t cap, bool need_weights, double dropout)
{
	snprintf(buf, cap,
	         "{\"inputs\": {\"x\": {\"shape\": [\"N\", 128, 64]}},"
	         " \"modules\": {\"attn\": {\"type\": \"MultiheadAttention\", \"embed_dim\": 64, \"num_heads\": 4,"
	         "                          \"batch_first\": true, \"dropout\": %g}},"
	         " \"graph\": [{\"out\": [\"y\", \"w\"], \"call\": \"attn\", \"args\": [\"x\", \"x\", \"x\"],"
	         "             \"need_weights\": %s}], \"outputs\": [\"y\"]}",
	         dropout, need_weights ? "true" : "false");
	return buf;
}

enum { N = 2, HEADS = 4, T = 128, E = 64, SCORES = N * HEADS * T * T * 4, TOKENS = N * T * E * 4 };

static int64_t attention_activations(bool need_weights, double dropout, ti_memory_device dev, ti_torch_version v,
                                     const char *op_expected)
{
	char text[1024];
	ti_model *m = open_bound(attention(text, sizeof(text), need_weights, dropout), N);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .device = dev, .torch = v};
	const ti_memory_report *r = simulate(m, &o);
	if (op_expected)
		cr_expect(ran(r, op_expected), "no step ran %s", op_expected);
	int64_t a = r->activations;
	ti_model_close(m);
	return a;
}

Test(memory_torch, pytorch_2_trains_attention_without_weights_through_a_kernel_that_keeps_no_scores)
{
	int64_t old = attention_activations(false, 0, TI_MEMORY_CUDA, TI_TORCH_1_13, "softmax");
	int64_t fused = attention_activations(false, 0, TI_MEMORY_CUDA, TI_TORCH_2, "_scaled_dot_product_efficient_attention");
	/* 1.13 keeps the softmax's result [N*H, T, T] and k's and v's own copies (q's is scaled); 2.x keeps the
	   packed q, k, v copy whole (3 token-sized), the output and a float32 per row, never the scores */
	cr_expect_eq(old - fused, SCORES - TOKENS - N * HEADS * T * 4, "1.13 kept %lld, 2.x %lld: the scores are %d",
	             (long long)old, (long long)fused, SCORES);
	cr_expect(fused < 8 * TOKENS, "2.x kept %lld bytes, more than 8 token-sized tensors", (long long)fused);
}

Test(memory_torch, asking_for_the_weights_keeps_the_math_path_in_every_version)
{
	int64_t old = attention_activations(true, 0, TI_MEMORY_CUDA, TI_TORCH_1_13, NULL);
	int64_t now = attention_activations(true, 0, TI_MEMORY_CUDA, TI_TORCH_2, "softmax");
	/* the same math path; 2.x's packed projection keeps q's part beside k's and v's, 1.13 k's and v's copies */
	EXPECT_INT(now, old + TOKENS);
}

Test(memory_torch, pytorch_2_on_the_cpu_runs_flash_attention_unless_it_drops_out)
{
	attention_activations(false, 0, TI_MEMORY_CPU, TI_TORCH_2, "_scaled_dot_product_flash_attention_for_cpu");
	int64_t math = attention_activations(false, 0.1, TI_MEMORY_CPU, TI_TORCH_2, "softmax");
	cr_expect(math > SCORES, "with dropout the math kernel keeps the scores: %lld", (long long)math);
}

Test(memory_torch, each_device_defaults_to_the_version_it_was_measured_with)
{
	ti_memory_options cpu = {0}, cuda = {.device = TI_MEMORY_CUDA}, old_cuda = {.device = TI_MEMORY_CUDA, .torch = TI_TORCH_1_13};
	EXPECT_INT(ti_memory_torch(&cpu), TI_TORCH_1_13);
	EXPECT_INT(ti_memory_torch(&cuda), TI_TORCH_2);
	EXPECT_INT(ti_memory_default_impl(&cuda), TI_IMPL_FOREACH);
	EXPECT_INT(ti_memory_default_impl(&cpu), TI_IMPL_FOR_LOOP);
	EXPECT_INT(ti_memory_default_impl(&old_cuda), TI_IMPL_FOR_LOOP);
}

Test(memory_torch, versions_are_spelled_1_13_or_a_release_of_2)
{
	EXPECT_INT(ti_torch_version_parse("1.13"), TI_TORCH_1_13);
	EXPECT_INT(ti_torch_version_parse("2"), TI_TORCH_2);
	EXPECT_INT(ti_torch_version_parse("2.x"), TI_TORCH_2);
	EXPECT_INT(ti_torch_version_parse("2.11"), TI_TORCH_2);
	EXPECT_INT(ti_torch_version_parse("2."), -1);
	EXPECT_INT(ti_torch_version_parse("2.4a"), -1);
	EXPECT_INT(ti_torch_version_parse("1.12"), -1);
	EXPECT_INT(ti_torch_version_parse("3"), -1);
	EXPECT_STR(ti_torch_version_name(TI_TORCH_2), "2");
}

/* x [N, 1024] -> Linear(1024, 1024) -> a dropout of the kind given. */
static int64_t dropout_activations(const char *type, const char *shape, ti_memory_device dev)
{
	char text[768];
	snprintf(text, sizeof(text),
	         "{\"inputs\": {\"x\": {\"shape\": %s}},"
	         " \"modules\": {\"l\": {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 1024},"
	         "               \"d\": {\"type\": \"%s\", \"p\": 0.5}},"
	         " \"graph\": [{\"out\": \"h\", \"call\": \"l\", \"args\": [\"x\"]},"
	         "            {\"out\": \"y\", \"call\": \"d\", \"args\": [\"h\"]}], \"outputs\": [\"y\"]}",
	         shape, type);
	ti_model *m = open_bound(text, 8);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_SGD, .device = dev};
	int64_t a = simulate(m, &o)->activations;
	ti_model_close(m);
	return a;
}

Test(memory_torch, dropout_saves_float_noise_on_the_cpu_and_a_bool_mask_on_cuda)
{
	/* the linear's input is the model's input: the dropout's noise or mask is all that is kept */
	EXPECT_INT(dropout_activations("Dropout", "[\"N\", 1024]", TI_MEMORY_CPU), 8 * 1024 * 4);
	EXPECT_INT(dropout_activations("Dropout", "[\"N\", 1024]", TI_MEMORY_CUDA), 8 * 1024);
}

Test(memory_torch, a_feature_dropout_keeps_one_noise_value_per_channel)
{
	/* Dropout1d on [N, C=16, L=1024]: noise [N, 16, 1] */
	EXPECT_INT(dropout_activations("Dropout1d", "[\"N\", 16, 1024]", TI_MEMORY_CPU), 8 * 16 * 4);
}

/* x [64, 1024] -> Linear(1024, 4096) -> ReLU -> Linear(4096, 1024): Adam's step. */
Test(memory_torch, foreach_adam_in_pytorch_2_makes_one_temporary_of_every_parameter_not_two)
{
	const char *mlp =
		"{\"inputs\": {\"x\": {\"shape\": [\"N\", 1024]}},"
		" \"modules\": {\"net\": {\"type\": \"Sequential\", \"modules\": ["
		"   {\"type\": \"Linear\", \"in_features\": 1024, \"out_features\": 4096}, {\"type\": \"ReLU\"},"
		"   {\"type\": \"Linear\", \"in_features\": 4096, \"out_features\": 1024}]}},"
		" \"graph\": [{\"out\": \"y\", \"call\": \"net\", \"args\": [\"x\"]}]}";
	const int64_t weights = (4096 * 1024 + 4096 + 1024 * 4096 + 1024) * 4, x = 64 * 1024 * 4;
	ti_model *m = open_bound(mlp, 64);
	ti_memory_options o = {.mode = TI_MEMORY_TRAIN, .optimizer = TI_OPTIM_ADAM, .impl = TI_IMPL_FOREACH,
	                       .torch = TI_TORCH_2};
	const ti_memory_report *r = simulate(m, &o);
	/* weights, x, gradients, exp_avg + exp_avg_sq + four steps, and exp_avg_sq_sqrt of every parameter */
	EXPECT_INT(r->peak, weights + x + weights + (2 * weights + 16) + weights);
	ti_model_close(m);
}

Test(memory_torch, the_math_kernels_causal_mask_is_made_for_the_call_and_is_no_input)
{
	const char *text =
		"{\"inputs\": {\"q\": {\"shape\": [\"N\", 4, 256, 32]}},"
		" \"graph\": [{\"out\": \"y\", \"op\": \"scaled_dot_product_attention\", \"args\": [\"q\", \"q\", \"q\"],"
		"             \"is_causal\": true}], \"outputs\": [\"y\"]}";
	ti_model *m = open_bound(text, 2);
	ti_memory_options o = {.torch = TI_TORCH_1_13};
	const ti_memory_report *r = simulate(m, &o);
	const int64_t q = 2 * 4 * 256 * 32 * 4, scores = 2 * 4 * 256 * 256 * 4, mask = 256 * 256;
	EXPECT_INT(r->inputs, q);
	/* at most, at the softmax: q, the scaled q, the scores, the mask and the softmax's result */
	cr_expect_leq(r->peak, q + q + 2 * scores + mask + q, "peak %lld", (long long)r->peak);
	cr_expect_geq(r->peak, q + 2 * scores, "peak %lld", (long long)r->peak);
	ti_model_close(m);
}
