/*
 * test_nn_rnn.c - RNN, LSTM, GRU (src/nn/rnn.c).
 *
 * Parameter names, output shapes and strides, and messages were read from
 * PyTorch 1.13 modules on the meta device; the constructor's argument order
 * for RNN (nonlinearity fourth), the rank messages and the hidden_size /
 * num_layers checks are 2.x's torch/nn/modules/rnn.py.
 */
#include "ops_cases.h"

/* interning order is print order: N, then T */
static void setup_symbols(void)
{
	setup();
	ti_dim_symbol(&sym, "N");
	ti_dim_symbol(&sym, "T");
}

TestSuite(nn_rnn, .init = setup_symbols, .fini = teardown);

/* output, then h_n, or the list (h_n, c_n). */
static void expect_outputs(const char *output, const char *h_n, const char *c_n)
{
	ASSERT_INT(call.output_count, 2);
	EXPECT_STR(layout_text(&call.outputs[0]), output);
	if (!c_n) {
		EXPECT_STR(layout_text(&call.outputs[1]), h_n);
		return;
	}
	ASSERT_INT(call.outputs[1].kind, TI_ARG_LIST);
	ASSERT_INT(call.outputs[1].as.list.count, 2);
	EXPECT_STR(layout_text(&call.outputs[1].as.list.items[0]), h_n);
	EXPECT_STR(layout_text(&call.outputs[1].as.list.items[1]), c_n);
}

/* ---- parameters ---- */

Test(nn_rnn, lstm_parameters_go_layer_by_layer_then_direction_by_direction)
{
	EXPECT_STR(tensors_text(module("LSTM", "10, 20, 2, bidirectional=True, proj_size=5")),
	           "weight_ih_l0[80, 10] weight_hh_l0[80, 5] bias_ih_l0[80] bias_hh_l0[80] weight_hr_l0[5, 20] "
	           "weight_ih_l0_reverse[80, 10] weight_hh_l0_reverse[80, 5] bias_ih_l0_reverse[80] "
	           "bias_hh_l0_reverse[80] weight_hr_l0_reverse[5, 20] "
	           "weight_ih_l1[80, 10] weight_hh_l1[80, 5] bias_ih_l1[80] bias_hh_l1[80] weight_hr_l1[5, 20] "
	           "weight_ih_l1_reverse[80, 10] weight_hh_l1_reverse[80, 5] bias_ih_l1_reverse[80] "
	           "bias_hh_l1_reverse[80] weight_hr_l1_reverse[5, 20]");
}

Test(nn_rnn, gru_without_bias_has_only_weights)
{
	EXPECT_STR(tensors_text(module("GRU", "10, 20, 2, bias=False")),
	           "weight_ih_l0[60, 10] weight_hh_l0[60, 20] weight_ih_l1[60, 20] weight_hh_l1[60, 20]");
}

Test(nn_rnn, rnn_takes_nonlinearity_fourth)
{
	EXPECT_STR(tensors_text(module("RNN", "10, 20, 1, 'relu', False")),
	           "weight_ih_l0[20, 10] weight_hh_l0[20, 20]");
	EXPECT_FAILS(build_module("RNN", "10, 20, 1, 'sigmoid'", NULL),
	             "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'.");
}

Test(nn_rnn, constructor_arguments_are_checked)
{
	EXPECT_FAILS(build_module("LSTM", "10, 20, proj_size=20", NULL),
	             "proj_size has to be smaller than hidden_size");
	EXPECT_FAILS(build_module("LSTM", "10, 20, proj_size=-1", NULL),
	             "proj_size should be a positive integer or zero to disable projections");
	EXPECT_FAILS(build_module("GRU", "10, 0", NULL), "hidden_size must be greater than zero");
	EXPECT_FAILS(build_module("GRU", "10, 4, 0", NULL), "num_layers must be greater than zero");
	EXPECT_FAILS(build_module("RNN", "10, 4, dropout=1.5", NULL),
	             "dropout should be a number in range [0, 1] representing the probability of an element being zeroed");
	EXPECT_STATUS(build_module("GRU", "10, 4, proj_size=2", NULL), TI_E_CORRUPT, err);
}

/* ---- forward ---- */

Test(nn_rnn, lstm_returns_output_and_the_pair_of_states)
{
	ti_module *lstm = module("LSTM", "10, 20, 2, batch_first=True");
	ASSERT_STATUS(call_module(lstm, "{3, 5, 10}"), TI_OK, err);
	/* batch_first: the (L, N, H) result transposed, a view */
	expect_outputs("[3, 5, 20]/[20, 60, 1]", "[2, 3, 20]/[60, 20, 1]", "[2, 3, 20]/[60, 20, 1]");
	/* per step and batch element: layer 0 80 * (10 + 20), layer 1 80 * (20 + 20) */
	EXPECT_INT(call.macs.value, 15 * (80 * 30 + 80 * 40));
	EXPECT_INT(call.flops.value, 2 * call.macs.value + 15 * 2 * 20 * (4 * 3 + 9));
}

Test(nn_rnn, a_projected_bidirectional_lstm_splits_hidden_and_cell_sizes)
{
	ti_module *lstm = module("LSTM", "10, 20, 2, bidirectional=True, proj_size=7");
	ASSERT_STATUS(call_module(lstm, "{5, 3, 10}, ({4, 3, 7}, {4, 3, 20})"), TI_OK, err);
	expect_outputs("[5, 3, 14]/[42, 14, 1]", "[4, 3, 7]/[21, 7, 1]", "[4, 3, 20]/[60, 20, 1]");
}

Test(nn_rnn, an_unbatched_gru_drops_the_batch_dim)
{
	ti_module *gru = module("GRU", "10, 20, 2, batch_first=True, bidirectional=True");
	ASSERT_STATUS(call_module(gru, "{5, 10}, {4, 20}"), TI_OK, err);
	expect_outputs("[5, 40]/[40, 1]", "[4, 20]/[20, 1]", NULL);
}

Test(nn_rnn, symbolic_lengths_and_batches_carry_through)
{
	ti_module *lstm = module("LSTM", "10, 20");
	ASSERT_STATUS(call_module(lstm, "{T, N, 10}"), TI_OK, err);
	expect_outputs("[T, N, 20]/[20*N, 20, 1]", "[1, N, 20]/[20*N, 20, 1]", "[1, N, 20]/[20*N, 20, 1]");
	EXPECT_STR(ti_dim_str(&sym, call.macs), "2400*N*T");
}

Test(nn_rnn, input_and_state_sizes_are_checked)
{
	ti_module *rnn = module("RNN", "10, 20, 2");
	EXPECT_FAILS(call_module(rnn, "{5, 3, 12}"), "input.size(-1) must be equal to input_size. Expected 10, got 12");
	EXPECT_FAILS(call_module(rnn, "{5, 3, 10}, {1, 3, 20}"), "Expected hidden size (2, 3, 20), got [1, 3, 20]");
	EXPECT_FAILS(call_module(rnn, "{5, 10}, {2, 1, 20}"),
	             "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
	EXPECT_FAILS(call_module(rnn, "{5, 10}, {1, 20}"), "Expected hidden size (2, 1, 20), got [1, 1, 20]");
	EXPECT_FAILS(call_module(rnn, "{5, 3, 10, 2}"), "RNN: Expected input to be 2D or 3D, got 4D tensor instead");
	EXPECT_FAILS(call_module(module("GRU", "10, 20"), "{5}"), "GRU: Expected input to be 2D or 3D, got 1D instead");
	EXPECT_FAILS(call_module(rnn, "float64{5, 3, 10}"),
	             "mat1 and mat2 must have the same dtype, but got Double and Float");
}

Test(nn_rnn, lstm_states_are_checked_in_pairs)
{
	ti_module *lstm = module("LSTM", "10, 20, 2");
	EXPECT_FAILS(call_module(lstm, "{5, 3, 10}, ({2, 3, 20}, {2, 3, 21})"),
	             "Expected hidden[1] size (2, 3, 20), got [2, 3, 21]");
	EXPECT_FAILS(call_module(lstm, "{5, 3, 10}, ({2, 3, 20}, {2, 3})"),
	             "For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D) tensors");
	EXPECT_FAILS(call_module(lstm, "{0, 3, 10}"), "Expected sequence length to be larger than 0 in RNN");
	EXPECT_FAILS(call_module(lstm, "{5, 3, 10}, [{2, 3, 20}]"),
	             "Expected hx to be a tuple of two tensors (h_0, c_0), got 1");
}
