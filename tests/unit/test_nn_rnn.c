/*
 * test_nn_rnn.c - RNN, LSTM, GRU (src/nn/rnn.c).
 *
 * Parameter names, output shapes and strides, and messages were read from
 * PyTorch 1.13 modules on the meta device; the constructor's argument order
 * for RNN (nonlinearity fourth), the rank messages and the hidden_size /
 * num_layers checks are 2.x's torch/nn/modules/rnn.py.
 */
#include <stdio.h>

#include "nn/module.h"
#include "unit.h"

static ti_arena arena;
static ti_symctx sym;
static ti_shape_ctx ctx;
static ti_error err;
static ti_op_call call;

static void setup(void)
{
	ti_arena_init(&arena, (size_t)1 << 24);
	ti_symctx_init(&sym, &arena);
	ctx = (ti_shape_ctx){&arena, &sym, TI_DT_FLOAT32, NULL, NULL};
	ti_error_clear(&err);
	/* interning order is print order: N, then T */
	ti_dim_symbol(&sym, "N");
	ti_dim_symbol(&sym, "T");
}

static void teardown(void) { ti_arena_release(&arena); }

TestSuite(nn_rnn, .init = setup, .fini = teardown);

#define COUNT(...) (int)(sizeof((ti_arg[]){__VA_ARGS__}) / sizeof(ti_arg))
#define KW(name, value) ti_arg_named(name, value)
#define INT(v) ti_arg_int(v)
#define BOOL(v) ti_arg_bool(v)

/* A contiguous tensor; sizes -1 and -2 stand for the symbols N and T. */
static ti_arg tensor(ti_dtype dtype, int ndim, const int64_t *sizes)
{
	ti_dim shape[8];
	for (int i = 0; i < ndim; i++)
		shape[i] = sizes[i] >= 0 ? ti_dim_int(sizes[i]) : ti_dim_symbol(&sym, sizes[i] == -1 ? "N" : "T");
	const ti_meta_tensor *t = ti_meta_new(&ctx, dtype, ndim, shape);
	cr_assert(t != NULL);
	return ti_arg_tensor(t);
}

#define SIZES(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define F32(...) tensor(TI_DT_FLOAT32, SIZES(__VA_ARGS__))
#define PAIR(h, c) ti_arg_list((ti_arg[]){h, c}, 2)

static ti_module *module(const char *type, const ti_arg *args, int n)
{
	ti_module *m = NULL;
	ti_status st = ti_module_new_leaf(&ctx, "rnn", type, args, n, &m, &err);
	cr_assert(st == TI_OK, "%s(): got %s (\"%s\")", type, ti_status_name(st), err.message);
	return m;
}

#define MODULE(type, ...) module(type, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__))
#define NEW_FAILS(type, ...) ti_module_new_leaf(&ctx, "rnn", type, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &(ti_module *){0}, &err)
#define FORWARD(m, ...) ti_module_call(&ctx, m, (ti_arg[]){__VA_ARGS__}, COUNT(__VA_ARGS__), &call, &err)

static const char *tensors_text(const ti_module *m)
{
	char buf[2048] = "";
	size_t n = 0;
	for (int i = 0; i < m->tensor_count && n < sizeof(buf); i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%s", i ? " " : "", m->tensors[i].name,
		                      ti_meta_shape_str(&ctx, m->tensors[i].tensor));
	return ti_arena_strdup(&arena, buf);
}

/* "shape/strides" of a tensor. */
static const char *layout(const ti_arg *a)
{
	cr_assert(a->kind == TI_ARG_TENSOR, "a tensor output");
	const ti_meta_tensor *t = a->as.tensor;
	return ti_arena_printf(&arena, "%s/%s", ti_meta_shape_str(&ctx, t), ti_shape_str(&ctx, t->ndim, t->stride));
}

/* output, then h_n, or the list (h_n, c_n). */
static void expect_outputs(const char *output, const char *h_n, const char *c_n)
{
	ASSERT_INT(call.output_count, 2);
	EXPECT_STR(layout(&call.outputs[0]), output);
	if (!c_n) {
		EXPECT_STR(layout(&call.outputs[1]), h_n);
		return;
	}
	ASSERT_INT(call.outputs[1].kind, TI_ARG_LIST);
	ASSERT_INT(call.outputs[1].as.list.count, 2);
	EXPECT_STR(layout(&call.outputs[1].as.list.items[0]), h_n);
	EXPECT_STR(layout(&call.outputs[1].as.list.items[1]), c_n);
}

#define EXPECT_FAILS(status, want)                                                                            \
	do {                                                                                                  \
		EXPECT_STATUS(status, TI_E_SHAPE, err);                                                       \
		EXPECT_STR(err.message, want);                                                                \
	} while (0)

/* ---- parameters ---- */

Test(nn_rnn, lstm_parameters_go_layer_by_layer_then_direction_by_direction)
{
	EXPECT_STR(tensors_text(MODULE("LSTM", INT(10), INT(20), INT(2), KW("bidirectional", BOOL(true)),
	                               KW("proj_size", INT(5)))),
	           "weight_ih_l0[80, 10] weight_hh_l0[80, 5] bias_ih_l0[80] bias_hh_l0[80] weight_hr_l0[5, 20] "
	           "weight_ih_l0_reverse[80, 10] weight_hh_l0_reverse[80, 5] bias_ih_l0_reverse[80] "
	           "bias_hh_l0_reverse[80] weight_hr_l0_reverse[5, 20] "
	           "weight_ih_l1[80, 10] weight_hh_l1[80, 5] bias_ih_l1[80] bias_hh_l1[80] weight_hr_l1[5, 20] "
	           "weight_ih_l1_reverse[80, 10] weight_hh_l1_reverse[80, 5] bias_ih_l1_reverse[80] "
	           "bias_hh_l1_reverse[80] weight_hr_l1_reverse[5, 20]");
}

Test(nn_rnn, gru_without_bias_has_only_weights)
{
	EXPECT_STR(tensors_text(MODULE("GRU", INT(10), INT(20), INT(2), KW("bias", BOOL(false)))),
	           "weight_ih_l0[60, 10] weight_hh_l0[60, 20] weight_ih_l1[60, 20] weight_hh_l1[60, 20]");
}

Test(nn_rnn, rnn_takes_nonlinearity_fourth)
{
	EXPECT_STR(tensors_text(MODULE("RNN", INT(10), INT(20), INT(1), ti_arg_str("relu"), BOOL(false))),
	           "weight_ih_l0[20, 10] weight_hh_l0[20, 20]");
	EXPECT_FAILS(NEW_FAILS("RNN", INT(10), INT(20), INT(1), ti_arg_str("sigmoid")),
	             "Unknown nonlinearity 'sigmoid'. Select from 'tanh' or 'relu'.");
}

Test(nn_rnn, constructor_arguments_are_checked)
{
	EXPECT_FAILS(NEW_FAILS("LSTM", INT(10), INT(20), KW("proj_size", INT(20))),
	             "proj_size has to be smaller than hidden_size");
	EXPECT_FAILS(NEW_FAILS("LSTM", INT(10), INT(20), KW("proj_size", INT(-1))),
	             "proj_size should be a positive integer or zero to disable projections");
	EXPECT_FAILS(NEW_FAILS("GRU", INT(10), INT(0)), "hidden_size must be greater than zero");
	EXPECT_FAILS(NEW_FAILS("GRU", INT(10), INT(4), INT(0)), "num_layers must be greater than zero");
	EXPECT_FAILS(NEW_FAILS("RNN", INT(10), INT(4), KW("dropout", ti_arg_float(1.5))),
	             "dropout should be a number in range [0, 1] representing the probability of an element being zeroed");
	EXPECT_STATUS(NEW_FAILS("GRU", INT(10), INT(4), KW("proj_size", INT(2))), TI_E_CORRUPT, err);
}

/* ---- forward ---- */

Test(nn_rnn, lstm_returns_output_and_the_pair_of_states)
{
	ti_module *lstm = MODULE("LSTM", INT(10), INT(20), INT(2), KW("batch_first", BOOL(true)));
	ASSERT_STATUS(FORWARD(lstm, F32(3, 5, 10)), TI_OK, err);
	/* batch_first: the (L, N, H) result transposed, a view */
	expect_outputs("[3, 5, 20]/[20, 60, 1]", "[2, 3, 20]/[60, 20, 1]", "[2, 3, 20]/[60, 20, 1]");
	/* per step and batch element: layer 0 80 * (10 + 20), layer 1 80 * (20 + 20) */
	EXPECT_INT(call.macs.value, 15 * (80 * 30 + 80 * 40));
	EXPECT_INT(call.flops.value, 2 * call.macs.value + 15 * 2 * 20 * (4 * 3 + 9));
}

Test(nn_rnn, a_projected_bidirectional_lstm_splits_hidden_and_cell_sizes)
{
	ti_module *lstm = MODULE("LSTM", INT(10), INT(20), INT(2), KW("bidirectional", BOOL(true)), KW("proj_size", INT(7)));
	ASSERT_STATUS(FORWARD(lstm, F32(5, 3, 10), PAIR(F32(4, 3, 7), F32(4, 3, 20))), TI_OK, err);
	expect_outputs("[5, 3, 14]/[42, 14, 1]", "[4, 3, 7]/[21, 7, 1]", "[4, 3, 20]/[60, 20, 1]");
}

Test(nn_rnn, an_unbatched_gru_drops_the_batch_dim)
{
	ti_module *gru = MODULE("GRU", INT(10), INT(20), INT(2), KW("batch_first", BOOL(true)), KW("bidirectional", BOOL(true)));
	ASSERT_STATUS(FORWARD(gru, F32(5, 10), F32(4, 20)), TI_OK, err);
	expect_outputs("[5, 40]/[40, 1]", "[4, 20]/[20, 1]", NULL);
}

Test(nn_rnn, symbolic_lengths_and_batches_carry_through)
{
	ti_module *lstm = MODULE("LSTM", INT(10), INT(20));
	ASSERT_STATUS(FORWARD(lstm, F32(-2, -1, 10)), TI_OK, err);
	expect_outputs("[T, N, 20]/[20*N, 20, 1]", "[1, N, 20]/[20*N, 20, 1]", "[1, N, 20]/[20*N, 20, 1]");
	EXPECT_STR(ti_dim_str(&sym, call.macs), "2400*N*T");
}

Test(nn_rnn, input_and_state_sizes_are_checked)
{
	ti_module *rnn = MODULE("RNN", INT(10), INT(20), INT(2));
	EXPECT_FAILS(FORWARD(rnn, F32(5, 3, 12)), "input.size(-1) must be equal to input_size. Expected 10, got 12");
	EXPECT_FAILS(FORWARD(rnn, F32(5, 3, 10), F32(1, 3, 20)), "Expected hidden size (2, 3, 20), got [1, 3, 20]");
	EXPECT_FAILS(FORWARD(rnn, F32(5, 10), F32(2, 1, 20)),
	             "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
	EXPECT_FAILS(FORWARD(rnn, F32(5, 10), F32(1, 20)), "Expected hidden size (2, 1, 20), got [1, 1, 20]");
	EXPECT_FAILS(FORWARD(rnn, F32(5, 3, 10, 2)), "RNN: Expected input to be 2D or 3D, got 4D tensor instead");
	EXPECT_FAILS(FORWARD(MODULE("GRU", INT(10), INT(20)), F32(5)), "GRU: Expected input to be 2D or 3D, got 1D instead");
	EXPECT_FAILS(FORWARD(rnn, tensor(TI_DT_FLOAT64, SIZES(5, 3, 10))),
	             "mat1 and mat2 must have the same dtype, but got Double and Float");
}

Test(nn_rnn, lstm_states_are_checked_in_pairs)
{
	ti_module *lstm = MODULE("LSTM", INT(10), INT(20), INT(2));
	EXPECT_FAILS(FORWARD(lstm, F32(5, 3, 10), PAIR(F32(2, 3, 20), F32(2, 3, 21))),
	             "Expected hidden[1] size (2, 3, 20), got [2, 3, 21]");
	EXPECT_FAILS(FORWARD(lstm, F32(5, 3, 10), PAIR(F32(2, 3, 20), F32(2, 3))),
	             "For batched 3-D input, hx and cx should also be 3-D but got (3-D, 2-D) tensors");
	EXPECT_FAILS(FORWARD(lstm, F32(0, 3, 10)), "Expected sequence length to be larger than 0 in RNN");
	EXPECT_FAILS(FORWARD(lstm, F32(5, 3, 10), ti_arg_list((ti_arg[]){F32(2, 3, 20)}, 1)),
	             "Expected hx to be a tuple of two tensors (h_0, c_0), got 1");
}
