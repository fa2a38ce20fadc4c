/*
 * test_run_scratch.c - every kernel holds no more beside its operands than
 * its scratch row states (rt_scratch_<family>[], beside the kernels): the
 * plan adds that row to what is live to refuse a run that would not fit, so
 * a kernel that takes more than its row says would let a run pass the
 * ceiling. The executor's probe (rt_scratch_probe) reports, after each
 * kernel of the real walk, what the row states for the call and what the
 * kernel held at its highest beyond what stays live (its rt_scratch_alloc
 * temporaries, the tensors it made and let go, oneDNN's buffers); the
 * cases below are representative calls of each kernel that has a row, and
 * every other kernel they run is held to its row too (none: 0 bytes).
 */
#include <stdlib.h>

#include "run/run_internal.h"
#include "run_harness.h"

#define SCRATCH_MAX_CALLS 64

static struct {
	const char *name[SCRATCH_MAX_CALLS];
	int64_t stated[SCRATCH_MAX_CALLS], held[SCRATCH_MAX_CALLS];
	int count, with_row;
} seen;

static void probe(const rt_kernel *k, rt_call *c, int64_t stated, int64_t held)
{
	(void)c;
	if (stated > 0)
		seen.with_row++;
	if (seen.count == SCRATCH_MAX_CALLS)
		return;
	seen.name[seen.count] = k->name;
	seen.stated[seen.count] = stated;
	seen.held[seen.count++] = held;
}

/* Runs text (inputs filled with randn) and checks every kernel call against its row; kernel must be among them. */
static void expect_within_rows(const char *text, const char *kernel)
{
	memset(&seen, 0, sizeof(seen));
	rt_scratch_probe = probe;
	ran r = run_filled(text, (ti_model_options){0}, "randn", NULL, NULL, 0, 0);
	rt_scratch_probe = NULL;
	cr_assert_eq(r.status, TI_OK, "run: %s", r.err.message);
	cr_assert_null(r.report->mismatch, "%s", r.report->mismatch);
	bool ran_kernel = false;
	for (int i = 0; i < seen.count; i++) {
		ran_kernel = ran_kernel || !strcmp(seen.name[i], kernel);
		cr_expect(seen.held[i] <= seen.stated[i],
		          "'%s' held %lld bytes beside what stays live, its scratch row states %lld", seen.name[i],
		          (long long)seen.held[i], (long long)seen.stated[i]);
	}
	cr_expect(ran_kernel, "no call of '%s' ran", kernel);
	cr_expect(seen.with_row > 0, "no kernel with a scratch row ran");
	done(&r);
}

#define MODULE(inputs, spec) "{\"inputs\": {" inputs "}, \"modules\": {\"m\": {" spec "}}}"
#define X(shape) "\"x\": {\"shape\": " shape "}"

Test(run_scratch, convolutions_hold_their_columns_as_stated)
{
	/* 3x3 over small planes: images side by side in one sgemm (columns and the wide product) */
	expect_within_rows(MODULE(X("[4, 3, 8, 8]"), "\"type\": \"Conv2d\", \"in_channels\": 3, \"out_channels\": 5, "
	                                             "\"kernel_size\": 3, \"padding\": 1"), "conv2d");
	/* 1x1 of stride 1: direct, columns only when images share an sgemm */
	expect_within_rows(MODULE(X("[3, 4, 6, 6]"), "\"type\": \"Conv2d\", \"in_channels\": 4, \"out_channels\": 2, "
	                                             "\"kernel_size\": 1"), "conv2d");
	/* grouped, strided, dilated over a wide plane: an image and a group at a time */
	expect_within_rows(MODULE(X("[1, 4, 50, 50]"), "\"type\": \"Conv2d\", \"in_channels\": 4, \"out_channels\": 6, "
	                                               "\"kernel_size\": 3, \"groups\": 2, \"dilation\": 2"), "conv2d");
	expect_within_rows(MODULE(X("[2, 2, 9]"), "\"type\": \"Conv1d\", \"in_channels\": 2, \"out_channels\": 3, "
	                                          "\"kernel_size\": 2, \"stride\": 2, \"padding\": \"valid\""), "conv1d");
	expect_within_rows(MODULE(X("[1, 2, 4, 5, 6]"), "\"type\": \"Conv3d\", \"in_channels\": 2, \"out_channels\": 2, "
	                                                "\"kernel_size\": 2, \"padding\": \"same\""), "conv3d");
}

Test(run_scratch, convolutions_worth_onednn_hold_what_the_plan_gave_it)
{
	/* 2^25 multiply-adds and more go to oneDNN when it is installed: its copies within the row's weights room */
	expect_within_rows(MODULE(X("[2, 64, 32, 32]"), "\"type\": \"Conv2d\", \"in_channels\": 64, \"out_channels\": 64, "
	                                                "\"kernel_size\": 3, \"padding\": 1"), "conv2d");
	expect_within_rows(MODULE(X("[8, 128, 16, 16]"), "\"type\": \"Conv2d\", \"in_channels\": 128, \"out_channels\": 256, "
	                                                "\"kernel_size\": 1"), "conv2d");
}

Test(run_scratch, transposed_convolution_and_bilinear_hold_their_products_as_stated)
{
	expect_within_rows(MODULE(X("[2, 4, 5, 5]"), "\"type\": \"ConvTranspose2d\", \"in_channels\": 4, "
	                                             "\"out_channels\": 6, \"kernel_size\": 3, \"stride\": 2, \"groups\": 2"),
	                   "conv_transpose2d");
	expect_within_rows(MODULE(X("[1, 3, 7]"), "\"type\": \"ConvTranspose1d\", \"in_channels\": 3, \"out_channels\": 2, "
	                                          "\"kernel_size\": 4, \"padding\": 1, \"output_padding\": 1, \"stride\": 2"),
	                   "conv_transpose1d");
	expect_within_rows("{\"inputs\": {\"a\": {\"shape\": [3, 5, 4]}, \"b\": {\"shape\": [3, 5, 6]}}, \"modules\": {\"m\": "
	                   "{\"type\": \"Bilinear\", \"in1_features\": 4, \"in2_features\": 6, \"out_features\": 7}}, "
	                   "\"graph\": [{\"out\": \"y\", \"call\": \"m\", \"args\": [\"a\", \"b\"]}], \"outputs\": [\"y\"]}",
	                   "bilinear");
}

Test(run_scratch, attention_holds_its_scores_as_stated)
{
	expect_within_rows("{\"inputs\": {\"q\": {\"shape\": [2, 3, 5, 8]}, \"k\": {\"shape\": [2, 3, 7, 8]}, "
	                   "\"v\": {\"shape\": [2, 3, 7, 4]}, \"w\": {\"shape\": [5, 7]}}, \"graph\": [{\"out\": \"y\", "
	                   "\"op\": \"scaled_dot_product_attention\", \"args\": [\"q\", \"k\", \"v\"], \"attn_mask\": \"w\"}], "
	                   "\"outputs\": [\"y\"]}", "scaled_dot_product_attention");
	expect_within_rows("{\"inputs\": {\"q\": {\"shape\": [6, 8]}, \"k\": {\"shape\": [6, 8]}, \"v\": {\"shape\": [6, 8]}}, "
	                   "\"graph\": [{\"out\": \"y\", \"op\": \"scaled_dot_product_attention\", "
	                   "\"args\": [\"q\", \"k\", \"v\"], \"is_causal\": true}], \"outputs\": [\"y\"]}",
	                   "scaled_dot_product_attention");
}

#define MHA "\"type\": \"MultiheadAttention\", \"embed_dim\": 8, \"num_heads\": 2"

Test(run_scratch, multi_head_attention_holds_its_projections_as_stated)
{
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [4, 2, 8]}, \"w\": {\"shape\": [4, 4]}}, \"modules\": {\"m\": "
	                   "{" MHA "}}, \"graph\": [{\"out\": [\"y\", \"a\"], \"call\": \"m\", \"args\": [\"x\", \"x\", \"x\"], "
	                   "\"attn_mask\": \"w\"}], \"outputs\": [\"y\", \"a\"]}", "MultiheadAttention");
	expect_within_rows("{\"inputs\": {\"q\": {\"shape\": [4, 2, 8]}, \"k\": {\"shape\": [6, 2, 5]}, "
	                   "\"v\": {\"shape\": [6, 2, 3]}}, \"modules\": {\"m\": {" MHA ", \"kdim\": 5, \"vdim\": 3}}, "
	                   "\"graph\": [{\"out\": [\"y\", \"a\"], \"call\": \"m\", \"args\": [\"q\", \"k\", \"v\"]}], "
	                   "\"outputs\": [\"y\", \"a\"]}", "MultiheadAttention");
	/* bias_k and the zero-attention column widen the keys; a padding mask merges per head */
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [2, 5, 8]}, \"w\": {\"shape\": [2, 5]}}, \"modules\": {\"m\": "
	                   "{" MHA ", \"add_bias_kv\": true, \"add_zero_attn\": true, \"batch_first\": true}}, \"graph\": ["
	                   "{\"out\": \"bm\", \"op\": \"gt\", \"args\": [\"w\", 1.0]}, {\"out\": [\"y\", \"a\"], \"call\": "
	                   "\"m\", \"args\": [\"x\", \"x\", \"x\"], \"key_padding_mask\": \"bm\", "
	                   "\"average_attn_weights\": false}], \"outputs\": [\"y\", \"a\"]}", "MultiheadAttention");
}

#define TX "\"d_model\": 8, \"nhead\": 2, \"dim_feedforward\": 16, \"dropout\": 0.0"

Test(run_scratch, transformer_modules_hold_their_buffers_as_stated)
{
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [5, 2, 8]}, \"f\": {\"shape\": [5, 5]}}, \"modules\": {\"m\": "
	                   "{\"type\": \"TransformerEncoderLayer\", " TX ", \"activation\": \"gelu\"}}, \"graph\": ["
	                   "{\"out\": \"y\", \"call\": \"m\", \"args\": [\"x\"], \"src_mask\": \"f\"}], \"outputs\": [\"y\"]}",
	                   "TransformerEncoderLayer");
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [4, 2, 8]}, \"mem\": {\"shape\": [6, 2, 8]}, "
	                   "\"f\": {\"shape\": [4, 4]}, \"g\": {\"shape\": [4, 6]}}, \"modules\": {\"m\": "
	                   "{\"type\": \"TransformerDecoderLayer\", " TX "}}, \"graph\": [{\"out\": \"y\", \"call\": \"m\", "
	                   "\"args\": [\"x\", \"mem\"], \"tgt_mask\": \"f\", \"memory_mask\": \"g\"}], \"outputs\": [\"y\"]}",
	                   "TransformerDecoderLayer");
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [5, 2, 8]}}, \"modules\": {\"m\": {\"type\": "
	                   "\"TransformerEncoder\", " TX ", \"num_layers\": 2, \"norm\": true}}}", "TransformerEncoder");
	expect_within_rows("{\"inputs\": {\"s\": {\"shape\": [6, 2, 8]}, \"x\": {\"shape\": [4, 2, 8]}}, \"modules\": {\"m\": "
	                   "{\"type\": \"Transformer\", " TX ", \"num_encoder_layers\": 2, \"num_decoder_layers\": 1}}, "
	                   "\"graph\": [{\"out\": \"y\", \"call\": \"m\", \"args\": [\"s\", \"x\"]}], \"outputs\": [\"y\"]}",
	                   "Transformer");
}

#define RNN_CALL "\"graph\": [{\"out\": [\"y\", \"h\"], \"call\": \"m\", \"args\": [\"x\"]}], \"outputs\": [\"y\", \"h\"]}"

Test(run_scratch, recurrent_layers_hold_their_gates_as_stated)
{
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [5, 3, 4]}}, \"modules\": {\"m\": {\"type\": \"RNN\", "
	                   "\"input_size\": 4, \"hidden_size\": 6}}, " RNN_CALL, "RNN");
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [3, 5, 4]}}, \"modules\": {\"m\": {\"type\": \"LSTM\", "
	                   "\"input_size\": 4, \"hidden_size\": 6, \"proj_size\": 3, \"num_layers\": 2, "
	                   "\"bidirectional\": true, \"batch_first\": true}}, " RNN_CALL, "LSTM");
	expect_within_rows("{\"inputs\": {\"x\": {\"shape\": [7, 4]}}, \"modules\": {\"m\": {\"type\": \"GRU\", "
	                   "\"input_size\": 4, \"hidden_size\": 5, \"num_layers\": 3}}, " RNN_CALL, "GRU");
}
