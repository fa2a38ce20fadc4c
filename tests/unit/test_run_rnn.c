/*
 * test_run_rnn.c - the recurrent and attention kernels of the CPU executor
 * on tiny cases computed by hand: weights of ones, inputs 0, 1, 2, ...
 */
#include "run_harness.h"

/* Opens text, fills the weights with fill and the input "x" with arange, runs on one thread. */
static ran run_text(const char *text, const char *fill)
{
	const char *names[] = {"x"}, *policies[] = {"arange"};
	ran r = run_filled(text, (ti_model_options){0}, fill, names, policies, 1, 0);
	cr_assert_eq(r.status, TI_OK, "run: %s", r.err.message);
	return r;
}

static void expect_values(const ti_run_tensor *t, const float *want, size_t n) { expect_floats_within(t, want, n, 1e-5f); }

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

#define ONE_STEP_MODEL(type, extra)                                                                                   \
	"{\"inputs\": {\"x\": {\"shape\": [3, 1, 1]}}, \"modules\": {\"m\": {\"type\": \"" type "\", \"input_size\": 1, " \
	"\"hidden_size\": 1" extra "}}, \"graph\": [{\"out\": [\"y\", \"h\"], \"call\": \"m\", \"args\": [\"x\"]}], "      \
	"\"outputs\": [\"y\", \"h\"]}"

Test(run_rnn, relu_rnn_carries_the_state_from_step_to_step)
{
	/* h_t = relu(x_t + 1 + h_{t-1} + 1) over x = 0, 1, 2: 2, 5, 9 */
	ran r = run_text(ONE_STEP_MODEL("RNN", ", \"nonlinearity\": \"relu\""), "ones");
	const float y[] = {2, 5, 9}, h[] = {9};
	expect_values(&r.report->outputs[0], y, 3);
	expect_values(&r.report->outputs[1], h, 1);
	done(&r);
}

Test(run_rnn, reverse_direction_reads_the_sequence_backwards)
{
	/* forward 2, 5, 9; reverse from x = 2 down: 4, 7, 9, written at its own time steps */
	ran r = run_text(ONE_STEP_MODEL("RNN", ", \"nonlinearity\": \"relu\", \"bidirectional\": true"), "ones");
	const float y[] = {2, 9, 5, 7, 9, 4}, h[] = {9, 9};
	expect_values(&r.report->outputs[0], y, 6);
	expect_values(&r.report->outputs[1], h, 2);
	done(&r);
}

Test(run_rnn, gru_resets_the_hidden_bias_inside_the_candidate)
{
	/* x = 0, h = 0 first: r = z = sigmoid(2), n = tanh(1 + r * (0 + b_hn)), h = (1 - z) n */
	ran r = run_text(ONE_STEP_MODEL("GRU", ""), "ones");
	float gate = sigmoid(2), h1 = (1 - gate) * tanhf(1 + gate);
	const float *y = r.report->outputs[0].data;
	cr_expect(fabsf(y[0] - h1) < 1e-6f, "got %.7g, want %.7g (r times W_hn h + b_hn)", (double)y[0], (double)h1);
	done(&r);
}

Test(run_rnn, lstm_projects_h_and_returns_the_cell_state)
{
	/* one step at x = 0: every gate is 2; c = sigmoid(2) tanh(2) per unit, h = 2 sigmoid(2) tanh(c) through W_hr of ones */
	ran r = run_text("{\"inputs\": {\"x\": {\"shape\": [1, 1, 1]}}, \"modules\": {\"m\": {\"type\": \"LSTM\", "
	                 "\"input_size\": 1, \"hidden_size\": 2, \"proj_size\": 1}}, \"graph\": [{\"out\": [\"y\", \"hc\"], "
	                 "\"call\": \"m\", \"args\": [\"x\"]}], \"outputs\": [\"y\", \"hc\"]}", "ones");
	float cell = sigmoid(2) * tanhf(2), h = 2 * sigmoid(2) * tanhf(cell);
	const float y[] = {h}, c[] = {cell, cell};
	cr_assert_eq(r.report->output_count, 3, "output, h_n and c_n: got %zu", r.report->output_count);
	expect_values(&r.report->outputs[0], y, 1);
	expect_values(&r.report->outputs[1], y, 1);
	expect_values(&r.report->outputs[2], c, 2);
	done(&r);
}
