/*
 * rnn.c - recurrent modules: RNN, LSTM, GRU (torch/nn/modules/rnn.py, 2.x).
 *
 * Parameters are registered as RNNBase.__init__ does, per layer and then per
 * direction: weight_ih_l{k}{_reverse}, weight_hh_l{k}{_reverse}, then the two
 * biases, then LSTM's projection weight_hr_l{k}{_reverse}. Forward follows
 * the module's checks (rank, hx rank, input_size, hidden size) and returns
 * output and h_n; LSTM returns output and the list (h_n, c_n), as PyTorch
 * returns (output, (h_n, c_n)).
 *
 * Counting, for a sequence of L steps and a batch of N, per layer and
 * direction with G gate blocks (RNN 1, LSTM 4, GRU 3), hidden size H, state
 * size R (the projection size P, or H), layer input size I:
 *   MACs  = L * N * (G*H * (I + R) + P*H)     (P*H only with a projection)
 *   FLOPs = L * N * H * (G + 2*G [biases] + C) beyond 2 * MACs, where G sums
 *           the input and hidden products and C is the cell's own arithmetic:
 *           RNN 1 (activation), LSTM 9 (4 activations, 3 for the cell state,
 *           2 for the output), GRU 6 (3 activations, reset product, 2 to mix).
 */
#include <string.h>

#include "nn/tables.h"

typedef struct rnn_kind {
	const char *type;
	int gates;        /* gate blocks stacked in weight_ih */
	int cell_flops;   /* per hidden unit and step, see the counting note */
	bool cell_state;  /* LSTM: hx is (h_0, c_0) */
	const char *rank_word; /* 2.x's rank message says "tensor instead" for RNN, "instead" for the others */
} rnn_kind;

static const rnn_kind kinds[] = {
	{"RNN", 1, 1, false, "tensor instead"},
	{"LSTM", 4, 9, true, "instead"},
	{"GRU", 3, 6, false, "instead"},
};

static const rnn_kind *kind_of(const ti_module *m)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].type, m->type))
			return &kinds[i];
	return &kinds[0];
}

/* The sizes fixed by the constructor. */
typedef struct rnn_config {
	const rnn_kind *kind;
	int64_t input_size, hidden, proj, layers, directions;
	bool bias, batch_first;
} rnn_config;

static rnn_config config_of(const ti_module *m)
{
	rnn_config c = {
		.kind = kind_of(m),
		.input_size = ti_module_dim(m, "input_size").value,
		.hidden = ti_module_dim(m, "hidden_size").value,
		.proj = ti_module_dim(m, "proj_size").value, /* 0: only LSTM has the argument */
		.layers = ti_module_dim(m, "num_layers").value,
		.directions = ti_module_bool(m, "bidirectional") ? 2 : 1,
		.bias = ti_module_bool(m, "bias"),
		.batch_first = ti_module_bool(m, "batch_first"),
	};
	return c;
}

/* The size of h: the projection size when there is one. */
static int64_t state_size(const rnn_config *c) { return c->proj > 0 ? c->proj : c->hidden; }

static int64_t layer_input_size(const rnn_config *c, int64_t layer)
{
	return layer == 0 ? c->input_size : state_size(c) * c->directions;
}

/* ---- construction ---- */

/* RNNBase.__init__'s checks, and RNN's nonlinearity. */
static ti_status check_config(const ti_module *m, const rnn_config *c, ti_error *err)
{
	double dropout = ti_module_float(m, "dropout");
	const char *nonlinearity = ti_module_str(m, "nonlinearity");
	if (!(dropout >= 0 && dropout <= 1))
		return TI_FAIL(err, TI_E_SHAPE,
		               "dropout should be a number in range [0, 1] representing the probability of an element "
		               "being zeroed");
	if (c->hidden <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "hidden_size must be greater than zero");
	if (c->layers <= 0)
		return TI_FAIL(err, TI_E_SHAPE, "num_layers must be greater than zero");
	if (c->proj < 0)
		return TI_FAIL(err, TI_E_SHAPE, "proj_size should be a positive integer or zero to disable projections");
	if (c->proj >= c->hidden)
		return TI_FAIL(err, TI_E_SHAPE, "proj_size has to be smaller than hidden_size");
	if (nonlinearity && strcmp(nonlinearity, "tanh") && strcmp(nonlinearity, "relu"))
		return TI_FAIL(err, TI_E_SHAPE, "Unknown nonlinearity '%s'. Select from 'tanh' or 'relu'.", nonlinearity);
	return TI_OK;
}

typedef enum param_shape { W_IH, W_HH, B_GATES, W_HR } param_shape;

/* One (layer, direction)'s parameters in registration order. */
static const struct {
	const char *prefix;
	param_shape shape;
} layer_params[] = {
	{"weight_ih", W_IH}, {"weight_hh", W_HH}, {"bias_ih", B_GATES}, {"bias_hh", B_GATES}, {"weight_hr", W_HR},
};

static int param_dims(const rnn_config *c, int64_t layer, param_shape shape, int64_t dims[2])
{
	int64_t gate_rows = c->kind->gates * c->hidden;
	switch (shape) {
	case W_IH: dims[0] = gate_rows; dims[1] = layer_input_size(c, layer); return 2;
	case W_HH: dims[0] = gate_rows; dims[1] = state_size(c); return 2;
	case B_GATES: dims[0] = gate_rows; return 1;
	case W_HR: dims[0] = c->proj; dims[1] = c->hidden; return 2;
	}
	return 0;
}

static ti_status init_rnn(ti_module *m, ti_error *err)
{
	rnn_config c = config_of(m);
	ti_status st = check_config(m, &c, err);
	if (st)
		return st;
	for (int64_t layer = 0; layer < c.layers; layer++)
		for (int64_t direction = 0; direction < c.directions; direction++)
			for (size_t i = 0; i < sizeof(layer_params) / sizeof(layer_params[0]); i++) {
				param_shape shape = layer_params[i].shape;
				if ((shape == B_GATES && !c.bias) || (shape == W_HR && c.proj == 0))
					continue;
				int64_t dims[2];
				int ndim = param_dims(&c, layer, shape, dims);
				const char *name = ti_arena_printf(m->ctx->arena, "%s_l%lld%s", layer_params[i].prefix,
				                                   (long long)layer, direction ? "_reverse" : "");
				if (!name)
					return TI_FAIL(err, TI_E_NOMEM, "out of memory for a parameter name");
				if ((st = ti_module_add_param(m, name, ti_module_dtype(m), ndim, dims, err)))
					return st;
			}
	return TI_OK;
}

/* ---- forward ---- */

static const char *dim_text(ti_shape_ctx *ctx, ti_dim d)
{
	const char *s = ti_dim_str(ctx->sym, d);
	return s ? s : "?";
}

/* A Python tuple of sizes, as the expected hidden size prints: "(2, 3, 20)". */
static const char *tuple_text(ti_shape_ctx *ctx, const ti_dim *dims, int n)
{
	const char *shape = ti_shape_str(ctx, n, dims); /* "[2, 3, 20]" */
	if (!shape)
		return "(?)";
	const char *s = ti_arena_printf(ctx->arena, "(%.*s)", (int)strlen(shape) - 2, shape + 1);
	return s ? s : "(?)";
}

/* check_hidden_size: hx.size() equals the expected tuple; undecidable sizes are assumed to. */
static ti_status check_hidden(ti_shape_ctx *ctx, const char *what, int ndim, const ti_dim *got, const ti_dim want[3],
                              ti_error *err)
{
	bool same = ndim == 3;
	for (int i = 0; same && i < 3; i++)
		same = ti_dim_assume(ctx->sym, got[i], TI_CMP_EQ, want[i]);
	if (same)
		return TI_OK;
	return TI_FAIL(err, TI_E_SHAPE, "Expected %s size %s, got %s", what, tuple_text(ctx, want, 3),
	               ti_shape_str(ctx, ndim, got));
}

/* The forward's view of its inputs: the input and the states as 3-d, batched tensors. */
typedef struct rnn_inputs {
	bool batched;
	ti_dim input[3]; /* (L, N, H_in), or (N, L, H_in) with batch_first */
	int state_count;
	const ti_meta_tensor *states[2]; /* hx, or (h_0, c_0); NULL when not given */
	int state_ndim[2];
	ti_dim state_shape[2][3]; /* unbatched states unsqueezed at 1 */
} rnn_inputs;

/* The rank checks of RNN/LSTM/GRU.forward; unbatched inputs and states gain their batch dim. */
static ti_status gather_inputs(ti_op_call *call, const rnn_config *c, rnn_inputs *in, ti_error *err)
{
	const ti_meta_tensor *input = ti_call_tensor(call, "input");
	if (input->ndim != 2 && input->ndim != 3)
		return TI_FAIL(err, TI_E_SHAPE, "%s: Expected input to be 2D or 3D, got %dD %s", c->kind->type, input->ndim,
		               c->kind->rank_word);
	memset(in, 0, sizeof(*in));
	in->batched = input->ndim == 3;
	int batch_dim = c->batch_first ? 0 : 1;
	for (int i = 0, j = 0; i < 3; i++)
		in->input[i] = !in->batched && i == batch_dim ? ti_dim_int(1) : input->shape[j++];
	in->state_count = c->kind->cell_state ? 2 : 1;
	if (c->kind->cell_state) {
		int n;
		const ti_arg *hx = ti_call_list(call, "hx", &n);
		if (hx && n != 2)
			return TI_FAIL(err, TI_E_SHAPE, "Expected hx to be a tuple of two tensors (h_0, c_0), got %d", n);
		for (int i = 0; hx && i < 2; i++)
			in->states[i] = hx[i].as.tensor;
	} else {
		in->states[0] = ti_call_tensor(call, "hx");
	}
	if (!in->states[0])
		return TI_OK;
	int want = in->batched ? 3 : 2;
	const char *rank = in->batched ? "batched 3-D" : "unbatched 2-D";
	if (c->kind->cell_state && (in->states[0]->ndim != want || in->states[1]->ndim != want))
		return TI_FAIL(err, TI_E_SHAPE, "For %s input, hx and cx should also be %d-D but got (%d-D, %d-D) tensors", rank,
		               want, in->states[0]->ndim, in->states[1]->ndim);
	if (!c->kind->cell_state && in->states[0]->ndim != want)
		return TI_FAIL(err, TI_E_SHAPE, "For %s input, hx should also be %d-D but got %d-D tensor", rank, want,
		               in->states[0]->ndim);
	for (int s = 0; s < in->state_count; s++) {
		const ti_meta_tensor *t = in->states[s];
		in->state_ndim[s] = 3;
		for (int i = 0, j = 0; i < 3; i++)
			in->state_shape[s][i] = !in->batched && i == 1 ? ti_dim_int(1) : t->shape[j++];
	}
	return TI_OK;
}

/* check_forward_args: the feature size, then each state's size; then mm's dtype check. */
static ti_status check_inputs(ti_op_call *call, const ti_module *m, const rnn_config *c, const rnn_inputs *in,
                              ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	if (!ti_dim_assume(ctx->sym, in->input[2], TI_CMP_EQ, ti_dim_int(c->input_size)))
		return TI_FAIL(err, TI_E_SHAPE, "input.size(-1) must be equal to input_size. Expected %lld, got %s",
		               (long long)c->input_size, dim_text(ctx, in->input[2]));
	ti_dim batch = in->input[c->batch_first ? 0 : 1], stacked = ti_dim_int(c->layers * c->directions);
	const ti_dim want[2][3] = {{stacked, batch, ti_dim_int(state_size(c))}, {stacked, batch, ti_dim_int(c->hidden)}};
	static const char *const names[2][2] = {{"hidden", NULL}, {"hidden[0]", "hidden[1]"}};
	ti_status st;
	for (int s = 0; in->states[0] && s < in->state_count; s++)
		if ((st = check_hidden(ctx, names[c->kind->cell_state][s], in->state_ndim[s], in->state_shape[s], want[s], err)))
			return st;
	/* the first mm is input @ weight_ih^T, then each state @ weight_hh^T */
	ti_dtype param = ti_module_tensor_get(m, "weight_ih_l0")->dtype;
	const ti_meta_tensor *operands[3] = {ti_call_tensor(call, "input"), in->states[0], in->states[1]};
	for (int i = 0; i < 3; i++)
		if (operands[i] && operands[i]->dtype != param)
			return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 must have the same dtype, but got %s and %s",
			               ti_dtype_torch_name(operands[i]->dtype), ti_dtype_torch_name(param));
	return TI_OK;
}

static void count_rnn(ti_op_call *call, const rnn_config *c, ti_dim steps_times_batch)
{
	ti_symctx *s = call->ctx->sym;
	int64_t gate_rows = c->kind->gates * c->hidden, macs = 0;
	for (int64_t layer = 0; layer < c->layers; layer++)
		macs += gate_rows * (layer_input_size(c, layer) + state_size(c)) + c->proj * c->hidden;
	int64_t flops = c->layers * c->hidden * (c->kind->gates * (c->bias ? 3 : 1) + c->kind->cell_flops);
	ti_dim per_step = ti_dim_mul(s, steps_times_batch, ti_dim_int(c->directions));
	/* the gates are matrix products (FlopCounterMode sees the addmms); fvcore has no rule for aten::lstm & co. */
	ti_dim all = ti_dim_mul(s, per_step, ti_dim_int(macs));
	ti_call_macs_only(call, all);
	ti_call_count_as(call, ti_dim_mul(s, all, ti_dim_int(2)), ti_dim_int(0));
	ti_call_flops(call, ti_dim_mul(s, per_step, ti_dim_int(flops)));
}

/* A contiguous state (D * num_layers, N, size), without N when the input was unbatched. */
static ti_meta_tensor *new_state(ti_shape_ctx *ctx, ti_dtype dtype, const rnn_inputs *in, ti_dim batch, int64_t size,
                                 ti_dim stacked)
{
	ti_dim shape[3] = {stacked, batch, ti_dim_int(size)};
	if (!in->batched)
		shape[1] = shape[2];
	return ti_meta_new(ctx, dtype, in->batched ? 3 : 2, shape);
}

static ti_status rnn_forward(ti_op_call *call, const ti_module *m, ti_error *err)
{
	ti_shape_ctx *ctx = call->ctx;
	rnn_config c = config_of(m);
	if (ti_module_float(m, "dropout") > 0 && ti_module_dim(m, "num_layers").value > 1)
		ctx->mode_dependent = true; /* dropout between layers in training */
	rnn_inputs in;
	ti_status st = gather_inputs(call, &c, &in, err);
	if (!st)
		st = check_inputs(call, m, &c, &in, err);
	if (st)
		return st;
	ti_dim steps = in.input[c.batch_first ? 1 : 0], batch = in.input[c.batch_first ? 0 : 1];
	if (ti_dim_is_int(steps) && steps.value == 0)
		return TI_FAIL(err, TI_E_SHAPE, "Expected sequence length to be larger than 0 in RNN");
	count_rnn(call, &c, ti_dim_mul(ctx->sym, steps, batch));
	ti_dtype dtype = ti_call_tensor(call, "input")->dtype;
	/* output is stacked (L, N, D * H_out); batch_first returns its transpose, a view */
	ti_dim features = ti_dim_int(c.directions * state_size(&c));
	ti_dim shape[3] = {steps, batch, features};
	ti_meta_tensor *output = ti_meta_new(ctx, dtype, in.batched ? 3 : 2, in.batched ? shape : (ti_dim[]){steps, features});
	if (output && in.batched && c.batch_first) {
		ti_dim t_shape[3] = {batch, steps, features}, t_stride[3] = {output->stride[1], output->stride[0], output->stride[2]};
		output = ti_meta_view(ctx, output, 3, t_shape, t_stride);
	}
	if ((st = ti_call_output_tensor(call, output, err)))
		return st;
	ti_dim stacked = ti_dim_int(c.layers * c.directions);
	ti_meta_tensor *h_n = new_state(ctx, dtype, &in, batch, state_size(&c), stacked);
	if (!c.kind->cell_state)
		return ti_call_output_tensor(call, h_n, err);
	ti_meta_tensor *c_n = new_state(ctx, dtype, &in, batch, c.hidden, stacked);
	ti_arg *pair = ti_arena_calloc(ctx->arena, 2, sizeof(*pair));
	if (!h_n || !c_n || !pair)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the LSTM states");
	pair[0] = ti_arg_tensor(h_n);
	pair[1] = ti_arg_tensor(c_n);
	return ti_call_output(call, ti_arg_list(pair, 2), err);
}

#define RNN_TAIL "bool batch_first=False, float dropout=0.0, bool bidirectional=False"

ti_module_rule ti_nn_rnn[] = {
	{"RNN(int input_size, int hidden_size, int num_layers=1, str nonlinearity='tanh', bool bias=True, " RNN_TAIL
	 ", str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input, Tensor? hx=None)", init_rnn, rnn_forward, TI_COUNT_RULE, NULL, NULL},
	{"LSTM(int input_size, int hidden_size, int num_layers=1, bool bias=True, " RNN_TAIL
	 ", int proj_size=0, str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input, Tensor[]? hx=None)", init_rnn, rnn_forward, TI_COUNT_RULE, NULL, NULL},
	{"GRU(int input_size, int hidden_size, int num_layers=1, bool bias=True, " RNN_TAIL
	 ", str? device=None, ScalarType? dtype=None)",
	 "forward(Tensor input, Tensor? hx=None)", init_rnn, rnn_forward, TI_COUNT_RULE, NULL, NULL},
	{NULL, NULL, NULL, NULL, TI_COUNT_NONE, NULL, NULL},
};
