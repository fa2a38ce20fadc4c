/*
 * test_ops_conventions.c - FLOPs as other tools count them: PyTorch's
 * FlopCounterMode (2 per multiply-accumulate of a matrix product: mm, addmm,
 * bmm, convolution, attention; nothing else) and fvcore's FlopCountAnalysis
 * (1 per such multiply-accumulate; its norm, upsample and adaptive-pool
 * rules; nothing else). Expected values are computed by hand from those rules.
 */
#include "ops_cases.h"

/* Criterion copies rows into another process: they hold their text (see ops_cases.h). */
typedef struct convention_row {
	char op[32], args[96];
	char torch[16], fvcore[16];
} convention_row;

static const convention_row rows[] = {
	/* linear: 2*3 outputs x 4 inputs = 24 MACs; the bias is not counted by either */
	{"linear", "{2, 4}, {3, 4}, {3}", "48", "24"},
	{"matmul", "{5, 2, 4}, {4, 3}", "240", "120"},
	/* conv2d: 1x8x3x3 output, 3 channels x 2x2 kernel: 72*12 = 864 MACs */
	{"conv2d", "{1, 3, 4, 4}, {8, 3, 2, 2}", "1728", "864"},
	/* batch_norm: fvcore 2 per element in evaluation with an affine weight, 5 in training */
	{"batch_norm", "{2, 3, 4}, {3}, {3}, {3}, {3}, False", "0", "48"},
	{"batch_norm", "{2, 3, 4}, None, None, {3}, {3}, True", "0", "120"},
	{"batch_norm", "{2, 3, 4}, {3}, {3}, None, None, False", "0", "24"},
	/* layer_norm: 5 per element with a weight, 4 without */
	{"layer_norm", "{2, 8}, [8], {8}, {8}", "0", "80"},
	{"layer_norm", "{2, 8}, [8]", "0", "64"},
	/* upsampling: fvcore counts nearest 2-d as 1 and bilinear 2-d as 4 per output element */
	{"interpolate", "{1, 2, 3, 3}, scale_factor=2, mode='nearest'", "0", "72"},
	{"interpolate", "{1, 2, 3, 3}, scale_factor=2, mode='bilinear'", "0", "288"},
	{"interpolate", "{1, 2, 3}, scale_factor=2, mode='linear'", "0", "0"},
	/* adaptive_avg_pool2d: fvcore 1 per input element, FlopCounterMode nothing */
	{"adaptive_avg_pool2d", "{2, 4, 6, 6}, 1", "0", "288"},
	/* attention: FlopCounterMode counts every score even when causal; fvcore has no rule */
	{"scaled_dot_product_attention", "{1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2, 4, 8}", "1024", "0"},
	{"scaled_dot_product_attention", "{1, 2, 4, 8}, {1, 2, 4, 8}, {1, 2, 4, 8}, is_causal=True", "1024", "0"},
	/* elementwise work is not counted by either tool */
	{"relu", "{4, 4}", "0", "0"},
	{"softmax", "{4, 4}, 1", "0", "0"},
};

ParameterizedTestParameters(ops_conventions, flops_follow_each_tools_rules)
{
	return ROWS(rows);
}

ParameterizedTest(const convention_row *r, ops_conventions, flops_follow_each_tools_rules, .init = setup,
                  .fini = teardown)
{
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s(%s): %s", r->op, r->args, err.message);
	cr_expect_str_eq(dim_text(call.flops_torch), r->torch, "%s(%s): FlopCounterMode", r->op, r->args);
	cr_expect_str_eq(dim_text(call.flops_fvcore), r->fvcore, "%s(%s): fvcore", r->op, r->args);
}

Test(ops_conventions, a_module_counts_what_its_operators_count, .init = setup, .fini = teardown)
{
	ti_module *m;
	cr_assert(run_module("Linear", "4, 3", "{2, 4}", &m) == TI_OK, "%s", err.message);
	cr_expect_str_eq(dim_text(call.flops_torch), "48");
	cr_expect_str_eq(dim_text(call.flops_fvcore), "24");
}

Test(ops_conventions, an_lstm_is_matrix_products_to_pytorch_and_unknown_to_fvcore, .init = setup, .fini = teardown)
{
	ti_module *m;
	/* one layer, H=3, I=2: 4 gates x 3 rows x (2 + 3) = 60 MACs per step, 5 steps */
	cr_assert(run_module("LSTM", "2, 3", "{5, 2}", &m) == TI_OK, "%s", err.message);
	cr_expect_str_eq(dim_text(call.macs), "300");
	cr_expect_str_eq(dim_text(call.flops_torch), "600");
	cr_expect_str_eq(dim_text(call.flops_fvcore), "0");
}
