/*
 * test_init_rules.c - PyTorch's default initialisation as fill policies.
 * The bounds are the doubles torch/nn/init.py computes (worked out with
 * Python's math module, as init.py does): kaiming_uniform_(a=sqrt(5)) on
 * fan_in 4 is 0.49999999999999994, not 0.5.
 */
#include "unit.h"

#include "tinspect/init_rules.h"

#define T(name, ...) {name, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (const int64_t[]){__VA_ARGS__}}

typedef struct init_row {
	const char *tensor;
	ti_fill_kind kind;
	double a, b;
	const char *rule;
} init_row;

/* Resolves each row's tensor in the module and compares the policy. */
static void check_module(const ti_init_module *m, const init_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ti_fill_policy p;
		const char *rule = NULL;
		ti_error err;
		ti_error_clear(&err);
		ti_status st = ti_init_policy(m, rows[i].tensor, &p, &rule, &err);
		cr_expect(st == TI_OK, "%s %s: %s", m->type, rows[i].tensor, err.message);
		if (st)
			continue;
		cr_expect(p.kind == rows[i].kind, "%s %s: kind %d, want %d", m->type, rows[i].tensor, p.kind, rows[i].kind);
		cr_expect(p.a == rows[i].a && p.b == rows[i].b, "%s %s: got (%.17g, %.17g), want (%.17g, %.17g)", m->type,
		          rows[i].tensor, p.a, p.b, rows[i].a, rows[i].b);
		if (rows[i].rule)
			EXPECT_STR(rule, rows[i].rule);
	}
}

#define KAIMING(b) TI_FILL_UNIFORM, -(b), (b)
#define CHECK(m, rows) check_module((m), (rows), sizeof(rows) / sizeof((rows)[0]))

Test(init_rules, linear_weight_is_kaiming_uniform_and_its_bias_uses_the_weight_s_fan_in)
{
	const ti_init_tensor tensors[] = {T("weight", 3, 4), T("bias", 3)};
	ti_init_module m;
	ti_init_module_defaults(&m, "Linear", tensors, 2);
	static const init_row rows[] = {
		{"weight", KAIMING(0.49999999999999994), "kaiming_uniform_(a=sqrt(5))"},
		{"bias", KAIMING(0.5), "uniform_(-1/sqrt(fan_in), 1/sqrt(fan_in))"},
	};
	CHECK(&m, rows);
}

Test(init_rules, conv_fan_in_counts_the_kernel_and_conv_transpose_uses_its_second_dimension)
{
	const ti_init_tensor conv[] = {T("weight", 8, 3, 3, 3), T("bias", 8)};
	ti_init_module m;
	ti_init_module_defaults(&m, "Conv2d", conv, 2);
	static const init_row conv_rows[] = {
		{"weight", KAIMING(0.19245008972987523), NULL},
		{"bias", KAIMING(0.19245008972987526), NULL},
	};
	CHECK(&m, conv_rows);
	/* ConvTranspose2d(4, 6, 3, groups=2): weight [4, 3, 3, 3], fan_in = 3 * 9 */
	const ti_init_tensor transpose[] = {T("weight", 4, 3, 3, 3), T("bias", 6)};
	ti_init_module_defaults(&m, "ConvTranspose2d", transpose, 2);
	CHECK(&m, conv_rows);
}

Test(init_rules, bilinear_draws_both_from_in1_features)
{
	const ti_init_tensor tensors[] = {T("weight", 2, 5, 7), T("bias", 2)};
	ti_init_module m;
	ti_init_module_defaults(&m, "Bilinear", tensors, 2);
	static const init_row rows[] = {{"weight", KAIMING(0.4472135954999579), NULL}, {"bias", KAIMING(0.4472135954999579), NULL}};
	CHECK(&m, rows);
}

Test(init_rules, embedding_is_normal_with_the_padding_row_zeroed)
{
	const ti_init_tensor tensors[] = {T("weight", 10, 4)};
	ti_init_module m;
	ti_init_module_defaults(&m, "Embedding", tensors, 1);
	ti_fill_policy p;
	const char *rule;
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_init_policy(&m, "weight", &p, &rule, &err), TI_OK, err);
	EXPECT_INT(p.kind, TI_FILL_RANDN);
	EXPECT_INT(p.zero_end, 0);
	EXPECT_STR(rule, "normal_(0, 1)");
	m.padding_idx = 2;
	ASSERT_STATUS(ti_init_policy(&m, "weight", &p, &rule, &err), TI_OK, err);
	EXPECT_INT(p.zero_begin, 8);
	EXPECT_INT(p.zero_end, 12);
	m.padding_idx = 10;
	EXPECT_STATUS(ti_init_policy(&m, "weight", &p, &rule, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "padding_idx 10 is not a row of Embedding tensor 'weight'");
}

Test(init_rules, norms_are_ones_and_zeros_and_running_stats_start_at_0_and_1)
{
	const ti_init_tensor tensors[] = {T("weight", 16), T("bias", 16), T("running_mean", 16),
	                                         T("running_var", 16), {"num_batches_tracked", 0, NULL}};
	ti_init_module m;
	ti_init_module_defaults(&m, "BatchNorm2d", tensors, 5);
	static const init_row rows[] = {
		{"weight", TI_FILL_ONES, 1, 0, "ones_"},
		{"bias", TI_FILL_ZEROS, 0, 0, "zeros_"},
		{"running_mean", TI_FILL_ZEROS, 0, 0, NULL},
		{"running_var", TI_FILL_ONES, 1, 0, NULL},
		{"num_batches_tracked", TI_FILL_ZEROS, 0, 0, NULL},
	};
	CHECK(&m, rows);
	ti_init_module_defaults(&m, "LayerNorm", tensors, 2);
	check_module(&m, rows, 2);
	ti_init_module_defaults(&m, "GroupNorm", tensors, 2);
	check_module(&m, rows, 2);
}

Test(init_rules, prelu_is_filled_with_its_init_argument)
{
	const ti_init_tensor tensors[] = {T("weight", 3)};
	ti_init_module m;
	ti_init_module_defaults(&m, "PReLU", tensors, 1);
	static const init_row rows[] = {{"weight", TI_FILL_FULL, 0.25, 0, "fill_(init)"}};
	CHECK(&m, rows);
	m.prelu_init = -0.5;
	static const init_row custom[] = {{"weight", TI_FILL_FULL, -0.5, 0, NULL}};
	CHECK(&m, custom);
}

Test(init_rules, recurrent_layers_draw_everything_from_hidden_size)
{
	/* LSTM(10, 20, proj_size=5, bidirectional=True): weight_hh is [80, 5], weight_hr [5, 20] */
	const ti_init_tensor lstm[] = {
		T("weight_ih_l0", 80, 10), T("weight_hh_l0", 80, 5), T("bias_ih_l0", 80), T("bias_hh_l0", 80),
		T("weight_hr_l0", 5, 20),  T("weight_ih_l0_reverse", 80, 10),
	};
	ti_init_module m;
	ti_init_module_defaults(&m, "LSTM", lstm, 6);
	static const init_row rows[] = {
		{"weight_ih_l0", KAIMING(0.22360679774997896), "uniform_(-1/sqrt(hidden_size), 1/sqrt(hidden_size))"},
		{"weight_hh_l0", KAIMING(0.22360679774997896), NULL},
		{"bias_hh_l0", KAIMING(0.22360679774997896), NULL},
		{"weight_hr_l0", KAIMING(0.22360679774997896), NULL},
		{"weight_ih_l0_reverse", KAIMING(0.22360679774997896), NULL},
	};
	CHECK(&m, rows);
	/* GRU(7, 20): three gates */
	const ti_init_tensor gru[] = {T("weight_ih_l0", 60, 7), T("weight_hh_l0", 60, 20)};
	ti_init_module_defaults(&m, "GRU", gru, 2);
	check_module(&m, rows, 1);
	m.hidden_size = 5;
	static const init_row given[] = {{"weight_ih_l0", KAIMING(0.4472135954999579), NULL}};
	CHECK(&m, given);
}

Test(init_rules, multihead_attention_is_xavier_with_zero_biases_and_a_linear_out_proj)
{
	const ti_init_tensor tensors[] = {
		T("in_proj_weight", 24, 8), T("in_proj_bias", 24), T("bias_k", 1, 1, 8), T("bias_v", 1, 1, 8),
		T("out_proj.weight", 8, 8), T("out_proj.bias", 8),
	};
	ti_init_module m;
	ti_init_module_defaults(&m, "MultiheadAttention", tensors, 6);
	static const init_row rows[] = {
		{"in_proj_weight", KAIMING(0.4330127018922193), "xavier_uniform_"},
		{"in_proj_bias", TI_FILL_ZEROS, 0, 0, "constant_(0)"},
		{"bias_k", TI_FILL_NORMAL, 0, 0.3535533905932738, "xavier_normal_"},
		{"bias_v", TI_FILL_NORMAL, 0, 0.3535533905932738, NULL},
		{"out_proj.weight", KAIMING(0.3535533905932737), "kaiming_uniform_(a=sqrt(5))"},
		{"out_proj.bias", TI_FILL_ZEROS, 0, 0, NULL},
	};
	CHECK(&m, rows);
}

Test(init_rules, transformer_stacks_resolve_each_part_and_transformer_makes_matrices_xavier)
{
	const ti_init_tensor tensors[] = {
		T("layers.0.self_attn.in_proj_weight", 24, 8), T("layers.0.linear1.weight", 32, 8),
		T("layers.0.linear1.bias", 32),                T("layers.10.linear2.weight", 8, 32),
		T("layers.10.linear2.bias", 8),                T("layers.10.norm2.weight", 8),
		T("norm.bias", 8),
	};
	ti_init_module m;
	ti_init_module_defaults(&m, "TransformerEncoder", tensors, 7);
	static const init_row rows[] = {
		{"layers.0.self_attn.in_proj_weight", KAIMING(0.4330127018922193), "xavier_uniform_"},
		{"layers.0.linear1.weight", KAIMING(0.3535533905932737), NULL},
		{"layers.0.linear1.bias", KAIMING(0.35355339059327373), NULL},
		{"layers.10.linear2.bias", KAIMING(0.17677669529663687), NULL},
		{"layers.10.norm2.weight", TI_FILL_ONES, 1, 0, NULL},
		{"norm.bias", TI_FILL_ZEROS, 0, 0, NULL},
	};
	CHECK(&m, rows);
	const ti_init_tensor full[] = {
		T("encoder.layers.0.linear1.weight", 32, 8), T("encoder.layers.0.linear1.bias", 32),
		T("decoder.layers.0.multihead_attn.out_proj.weight", 8, 8), T("decoder.norm.bias", 8),
	};
	ti_init_module_defaults(&m, "Transformer", full, 4);
	static const init_row full_rows[] = {
		{"encoder.layers.0.linear1.weight", KAIMING(0.38729833462074165), "xavier_uniform_"},
		{"encoder.layers.0.linear1.bias", KAIMING(0.35355339059327373), NULL},
		{"decoder.layers.0.multihead_attn.out_proj.weight", KAIMING(0.6123724356957946), "xavier_uniform_"},
		{"decoder.norm.bias", TI_FILL_ZEROS, 0, 0, NULL},
	};
	CHECK(&m, full_rows);
}

Test(init_rules, tensors_without_elements_or_fan_in_get_zeros)
{
	const ti_init_tensor tensors[] = {T("weight", 3, 0), T("bias", 3)};
	ti_init_module m;
	ti_init_module_defaults(&m, "Linear", tensors, 2);
	static const init_row rows[] = {{"weight", TI_FILL_ZEROS, 0, 0, NULL}, {"bias", TI_FILL_ZEROS, 0, 0, NULL}};
	CHECK(&m, rows);
}

Test(init_rules, unknown_modules_tensors_and_impossible_fans_are_refused)
{
	const ti_init_tensor tensors[] = {T("weight", 3), T("scale", 3), T("bias", 3, -1)};
	ti_init_module m;
	ti_fill_policy p;
	ti_error err;
	ti_error_clear(&err);
	ti_init_module_defaults(&m, "Linear", tensors, 2);
	EXPECT_STATUS(ti_init_policy(&m, "weight", &p, NULL, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions ('weight')");
	EXPECT_STATUS(ti_init_policy(&m, "scale", &p, NULL, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STR(err.message, "no default initialisation known for Linear tensor 'scale'");
	EXPECT_STATUS(ti_init_policy(&m, "missing", &p, NULL, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "Linear has no tensor 'missing'");
	ti_init_module_defaults(&m, "MyBlock", tensors, 2);
	EXPECT_STATUS(ti_init_policy(&m, "weight", &p, NULL, &err), TI_E_UNSUPPORTED, err);
	EXPECT_STR(err.message, "no default initialisation known for module type 'MyBlock'");
	ti_init_module_defaults(&m, "LayerNorm", tensors, 3);
	EXPECT_STATUS(ti_init_policy(&m, "weight", &p, NULL, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "tensor 'bias' has a negative size -1");
}

Test(init_rules, an_init_policy_fills_within_pytorch_s_bound)
{
	const ti_init_tensor tensors[] = {T("weight", 64, 100)};
	ti_init_module m;
	ti_init_module_defaults(&m, "Linear", tensors, 1);
	ti_fill_policy p;
	ti_error err;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_init_policy(&m, "weight", &p, NULL, &err), TI_OK, err);
	static float w[6400];
	ASSERT_STATUS(ti_fill(&p, TI_DT_FLOAT32, ti_fill_key_of(0, "fc.weight"), 0, 6400, w, &err), TI_OK, err);
	float lo = 1, hi = -1;
	for (int i = 0; i < 6400; i++) {
		lo = w[i] < lo ? w[i] : lo;
		hi = w[i] > hi ? w[i] : hi;
	}
	cr_expect(lo >= -0.1f && hi <= 0.1f && lo < -0.099f && hi > 0.099f, "range [%g, %g]", lo, hi);
}

Test(init_rules, checkpoint_tensors_are_guessed_by_name_dtype_and_rank)
{
	const struct {
		ti_init_tensor t;
		ti_dtype dtype;
		ti_fill_kind kind;
		double a, b;
	} rows[] = {
		{T("embeddings.position_ids", 1, 512), TI_DT_INT64, TI_FILL_ARANGE, 0, 0},
		{{"bn1.num_batches_tracked", 0, NULL}, TI_DT_INT64, TI_FILL_ZEROS, 0, 0},
		{T("attention.mask", 1, 1, 8, 8), TI_DT_BOOL, TI_FILL_ZEROS, 0, 0},
		{T("bn1.running_mean", 64), TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
		{T("module.bn1.running_var", 64), TI_DT_FLOAT32, TI_FILL_ONES, 1, 0},
		{T("fc.bias", 10), TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
		{T("rnn.bias_ih_l0", 80), TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
		{T("attn.in_proj_bias", 24), TI_DT_FLOAT16, TI_FILL_ZEROS, 0, 0},
		{T("encoder.layer.0.output.LayerNorm.weight", 768), TI_DT_FLOAT32, TI_FILL_ONES, 1, 0},
		{T("LayerNorm.gamma", 768), TI_DT_FLOAT32, TI_FILL_ONES, 1, 0},
		{T("LayerNorm.beta", 768), TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
		{T("bert.embeddings.word_embeddings.weight", 30522, 768), TI_DT_FLOAT32, TI_FILL_RANDN, 0, 1},
		{T("transformer.wte.weight", 50257, 768), TI_DT_BFLOAT16, TI_FILL_RANDN, 0, 1},
		{T("layer1.0.conv1.weight", 64, 64, 3, 3), TI_DT_FLOAT32, KAIMING(0.04166666666666666)},
		{T("lstm.weight_ih_l0", 80, 8), TI_DT_FLOAT32, KAIMING(0.3535533905932737)},
		{T("head.weight", 10, 0), TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
		{T("cls_token", 1, 1, 768), TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
		{{"logit_scale", 0, NULL}, TI_DT_FLOAT32, TI_FILL_ZEROS, 0, 0},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_fill_policy p;
		const char *rule = NULL;
		ti_error err;
		ti_error_clear(&err);
		ti_status st = ti_init_policy_by_name(rows[i].t.name, rows[i].dtype, rows[i].t.rank, rows[i].t.shape, &p,
		                                      &rule, &err);
		cr_expect(st == TI_OK, "%s: %s", rows[i].t.name, err.message);
		cr_expect(rule != NULL, "%s: no rule", rows[i].t.name);
		cr_expect(p.kind == rows[i].kind && p.a == rows[i].a && p.b == rows[i].b,
		          "%s: got kind %d (%.17g, %.17g), want kind %d (%.17g, %.17g)", rows[i].t.name, p.kind, p.a, p.b,
		          rows[i].kind, rows[i].a, rows[i].b);
	}
}
