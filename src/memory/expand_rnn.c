/*
 * expand_rnn.c - nn.RNN, nn.LSTM and nn.GRU as PyTorch 1.13's CPU kernels
 * run them (aten/src/ATen/native/RNN.cpp), for the ledger.
 *
 * Each layer and direction computes linear_ih over the whole sequence at
 * once, then one cell per time step. In training a step keeps, measured and
 * read from the cell code: the gates (LSTM 4H: the sigmoid_/tanh_ results
 * are views of them; GRU 3H), the clones autograd makes for in-place mul_ on
 * values its backward needs, the cell state and its tanh, and h (saved by
 * the next step's linear_hh): 7 x B x H elements a step for LSTM and GRU
 * alike; the plain RNN's cell (tanh(linear_hh(h) + input)) keeps only its
 * output h, saved by tanh's backward and the next step; and each layer's
 * input (one whose time-major view does not fold into rows, as a batch_first
 * input's, is copied contiguous by each direction's linear_ih). Measured within 0.7 % by
 * tests/conformance/memory_ops.py.
 *
 * Inference frees each step as it goes; what is live is the layer's (per
 * T x B x H, G gates: LSTM 4, GRU 3, RNN 1), read from FullLayer,
 * FullBidirectionalLayer and apply_layer_stack: the previous layer's output
 * (dirs, from the second layer on); one direction: linear_ih over the
 * sequence (G), the list of step outputs (1) and their stack (1); both
 * directions: at the second linear_ih the first's is still held (2G) with
 * the forward list and stack (2), and at the cat every piece is (G, two
 * lists, two stacks, the cat's 2); a batch_first input is copied contiguous by
 * each direction's linear_ih (first_layer_copy). The scratch is that peak
 * less the output.
 * Training's backward is walked as 1.13's autograd engine runs it, layer by
 * layer from the top, the reverse direction first (its nodes are newer):
 * each step's linear_hh gives a new G*H x H gradient of weight_hh, and the
 * engine's InputBuffer adds the next one out of place (old + new: the
 * gradient comes out of TBackward as a view, so its storage is shared and
 * input_buffer.cpp may not reuse it), three live at once from the second
 * step on;
 * each step's gate gradient (G x B x H) is held until UnbindBackward stacks
 * them for linear_ih's backward, which then gives weight_ih's gradient and,
 * below the top layer, the input's (a second direction's added to the
 * first's in place; the first layer's input gradient, where one is wanted,
 * the simulator counts after the walk: the builder cannot know whether it
 * is, that is decided when the step is played); a step's saved tensors go
 * as its backward runs (LSTM and GRU 7 x B x H, the plain RNN its output h).
 * The walk's highest point above where the backward starts is the unit's
 * whole backward peak (bwd_whole): measured within 1 % of 1.13 from 1 to 3
 * layers, both directions, H 256 to 1024 (tests/conformance/memory_rnn.py).
 * The figures assume no cuDNN and no mkldnn RNN (neither in 1.13's CPU path).
 * On cuda the module is PyTorch 2's one _cudnn_rnn call instead (below).
 */
#include <string.h>

#include "memory/memory_internal.h"

typedef struct rnn_costs {
	const char *type;
	int saved_per_step, gates; /* in B x H elements; gates: G */
} rnn_costs;

static const rnn_costs costs[] = {
	{"LSTM", 7, 4},
	{"GRU", 7, 3},
	{"RNN", 1, 1},
};

typedef struct rnn_dims {
	int64_t steps, batch, hidden, input, layers, dirs, es;
	bool dropout;    /* training with dropout between layers: each layer's input is its own tensor */
	int64_t copy;    /* input_copied: the time-major copy of the input the reverse direction's
	                    linear_ih saved (measured: one direction saves none, two save one), else 0 */
} rnn_dims;

/* The product of n factors, false past 2^62. */
static bool product(int64_t *out, int n, const int64_t *f)
{
	*out = 1;
	for (int i = 0; i < n; i++)
		if (!mem_mul(*out, f[i], out))
			return false;
	return true;
}

#define PRODUCT(out, ...) product(out, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})

/*
 * The training backward's highest point above its start, walked as the header says; with input_grad, the
 * first layer's input wants a gradient: each direction's linear_ih backward makes one, the second beside the
 * first until the engine adds it in place (measured: a bidirectional RNN after a Linear holds both). False
 * past 2^62.
 */
static bool backward_peak(const rnn_costs *k, const rnn_dims *d, bool input_grad, bool out_grad_stored, int64_t *peak)
{
	int64_t g = k->gates, ghh, tbh, layer_out;
	if (!PRODUCT(&ghh, g, d->hidden, d->hidden, d->es) || !PRODUCT(&tbh, d->steps, d->batch, d->hidden, d->es) ||
	    !PRODUCT(&layer_out, tbh, d->dirs))
		return false;
	int64_t live = 0, hh_sums = d->steps >= 2 ? 3 : 1;
	*peak = 0;
	for (int64_t l = d->layers; l-- > 0;) {
		int64_t in = l ? d->dirs * d->hidden : d->input, ghi, tbi = 0, at;
		if (!PRODUCT(&ghi, g, d->hidden, in, d->es) ||
		    ((l || input_grad) && !PRODUCT(&tbi, d->steps, d->batch, in, d->es)))
			return false;
		int64_t held, freed; /* a direction's gate gradients; its steps' saved tensors */
		if (!PRODUCT(&held, g, tbh) || !PRODUCT(&freed, k->saved_per_step, tbh))
			return false;
		for (int64_t dir = 0; dir < d->dirs; dir++) {
			at = live + hh_sums * ghh; /* the step weight_hh gradients: old, new and their sum */
			*peak = at > *peak ? at : *peak;
			live += ghh + held - freed;
			if (dir == d->dirs - 1 && (l < d->layers - 1 || out_grad_stored))
				live -= layer_out; /* the output's gradient: the steps' gradients were its views */
			at = live + held; /* UnbindBackward's stack beside the gate gradients it stacks */
			*peak = at > *peak ? at : *peak;
			at = live + ghi + tbi; /* linear_ih's backward; a second input gradient is added in place */
			*peak = at > *peak ? at : *peak;
			live += ghi + (dir ? 0 : tbi) - held - (l ? 0 : d->copy); /* and the input's copy it saved */
			if (live > ((int64_t)1 << 62) || *peak > ((int64_t)1 << 62))
				return false;
		}
		if (l)
			live -= layer_out; /* the layer's input, the one below's output, saved by its linear_ih */
		if (l && d->dropout) {
			/* the input was dropout(below's output) = output * noise: the gradient through the noise is new */
			int64_t at = live + layer_out;
			*peak = at > *peak ? at : *peak;
			live -= layer_out; /* the gradient it replaces and the noise go; the new one stays */
		}
	}
	return true;
}

/*
 * Inference, the first layer's input copied (input_copied): linear_ih (a matmul) copies it contiguous for
 * the call. One direction: the copy beside the gates it makes (G + X); two: the second
 * linear_ih's copy beside the first's gates, its step outputs and their stack, and the second's gates
 * (2G + 2 + X): FullBidirectionalLayer reassigns input_w, so the old is freed after the new is made.
 * Measured: LSTM two directions 26.0 MiB against 20.0 time-major (X 6 MiB, T x B x H 2 MiB), one 14.0
 * against 12.0; GRU two 22.0 against 18.0. Raises *scratch (bytes, the output excluded) to that layer's
 * peak when it is the higher; false past 2^62.
 */
static bool first_layer_copy(int64_t g, int64_t dirs, int64_t per_step, int64_t x_bytes, int64_t *scratch)
{
	int64_t gates, peak;
	if (!mem_mul(per_step, dirs == 2 ? 2 * g + 2 : g, &gates) || !mem_add(&gates, x_bytes))
		return false;
	peak = gates - dirs * per_step; /* the unit's output is counted beside its scratch */
	if (peak > *scratch)
		*scratch = peak;
	return true;
}

/*
 * Whether linear_ih copies the first layer's input: it reads the time-major view (a batch_first input
 * transposed), and matmul folds (T, B) into rows with reshape, a copy when the two do not merge into one
 * stride. A batch_first input is usually such a view; one that is itself the transposed output of a
 * batch_first recurrent layer before it transposes back to contiguous and is read as it is.
 */
static bool input_copied(const ti_meta_tensor *x, bool batch_first)
{
	if (x->ndim != 3)
		return false;
	int t = batch_first ? 1 : 0, n = batch_first ? 0 : 1;
	if (x->shape[t].sym || x->shape[n].sym || x->stride[t].sym || x->stride[n].sym)
		return batch_first; /* symbolic: as the usual batch_first input */
	int64_t steps = x->shape[t].value, batch = x->shape[n].value;
	return steps > 1 && batch > 1 && x->stride[t].value != x->stride[n].value * batch;
}

static void add_tensors(mem_builder *b, mem_unit *u, const ti_arg *a, bool in)
{
	if (a->kind == TI_ARG_TENSOR) {
		if (in && u->nin < MEM_MAX_IO)
			u->in[u->nin++] = mem_tensor_of(b, a->as.tensor);
	} else if (a->kind == TI_ARG_LIST) {
		for (int i = 0; i < a->as.list.count; i++)
			add_tensors(b, u, &a->as.list.items[i], in);
	}
}

static ti_status bind_new(mem_builder *b, mem_unit *u, const ti_arg *a, ti_error *err)
{
	if (a->kind == TI_ARG_TENSOR) {
		int id = mem_tensor_new(b, mem_meta_bytes(a->as.tensor), u->label);
		if (id < 0 || mem_tensor_bind(b, a->as.tensor, id) || u->nout == MEM_MAX_IO)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for the ledger");
		u->out[u->nout++] = id;
	} else if (a->kind == TI_ARG_LIST) {
		for (int i = 0; i < a->as.list.count; i++) {
			ti_status st = bind_new(b, u, &a->as.list.items[i], err);
			if (st)
				return st;
		}
	}
	return TI_OK;
}

/*
 * ---- CUDA: one aten._cudnn_rnn for every layer and direction ----
 *
 * PyTorch 2.x on CUDA runs the module as one _cudnn_rnn (aten/src/ATen/
 * native/cudnn/RNN.cpp), measured op by op on an H200 (PyTorch 2.11, cuDNN
 * 9.19: tests/device/measured/probe_grids_h200.json.gz, 172 configurations
 * x infer/train). Before it the module makes h0 (and c0) as zeros
 * (torch/nn/modules/rnn.py, LSTM.forward / RNNBase.forward: num_layers x D
 * x N x H) unless given; the op then takes a time-major contiguous copy of a
 * batch_first input (`auto x = input.contiguous()` after the transpose; no
 * copy when the two dimensions merge), allocates y (T x N x D*H; returned
 * transposed for batch_first, a view), hy and cy, a byte workspace from
 * cudnnGetRNNTempSpaceSizes freed when it returns, and in training a byte
 * reserve the backward reads. The module's flattened weight buffer is
 * passed in, not copied. CudnnRnnBackward0 saves input, hx, cx, the weights,
 * result0 (y), result3 (the reserve) and result4 (the weight buffer).
 *
 * _cudnn_rnn_backward runs _cudnn_rnn_backward_input, then
 * _cudnn_rnn_backward_weight: grad_hy and grad_cy are zeros_like when the
 * loss does not read hy and cy, or a contiguous copy of an expanded one; the
 * first takes its own x.contiguous() copy, dy = grad_output.contiguous() (a
 * copy of y's size for batch_first: the transpose of a contiguous gradient),
 * dx (always, "unconditionally compute this gradient, because it mutates
 * reserve"), dhx, dcx and a workspace of the training size; the second
 * another x copy, dw (zeros of the weight buffer's size, the parameters'
 * gradients are its views) and the workspace again. Its highest point
 * above what it returns is therefore the workspace, the x copy, the hidden
 * states' gradients in and out, and dy beyond dw (measured: the op's
 * scratch is the forward's plus grad_hy's zeros on every grid row; with a
 * batch_first gradient lstm_tagger's backward holds dy and the expanded
 * grad_hy and grad_cy copies beside the workspace, to the byte).
 */
/* The hidden sizes the grid measured, the columns of ws_token. */
static const int64_t ws_hidden[] = {32, 64, 128, 200, 256, 512, 1024};
#define WS_COLUMNS ((int)(sizeof(ws_hidden) / sizeof(ws_hidden[0])))

typedef struct cudnn_rnn_costs {
	const char *type;
	int gates;
	int reserve_first, reserve_more; /* the reserve, in N x T x D*H elements: the first layer, each further one */
	int ws_token[2][2][WS_COLUMNS]; /* the workspace above its floor, in bytes a token, direction and element
	                                   byte (T x N x D x element), by hidden size: [directions - 1][training] */
	int ws_ceil[2];  /* the most above the floor and 1 MiB a layer and direction, per mille of ws_tokens */
} cudnn_rnn_costs;

/*
 * The reserve is exact on every grid row (cudnnGetRNNTempSpaceSizes' reserveSpaceSize: 256 bytes beside the
 * kernels' per-step activations). The workspace is cuDNN's own choice of kernels: on every grid row it is at
 * least 8 MiB a layer and direction plus the weight buffer's bytes (the floor, never missed), and what lies
 * above grows with the tokens, not the layers, at a rate that depends on the hidden size and the directions,
 * and not monotonically (H 128 takes more than 200, one direction more than two there, fewer at 1024):
 * ws_token is the grid's median for the directions at each measured hidden size (rows of 256 tokens or more;
 * the median over both directions where the grid has no row for one; between two sizes, the line between
 * them; above 1024, in proportion), which puts 95 % of the grid's workspaces within 10 % (fp16 LSTM at H 512
 * on 19200 tokens takes three and a half times it). The ceiling holds every row: above the floor and 1 MiB a
 * layer and direction, ws_ceil per mille of T x N x D x element x (G x H + 2 x input + 512) (ws_tokens), the
 * grid's most (LSTM 3.14 and 3.41, GRU 1.65 and 2.09, RNN 2.42 and 5.44) with a tenth more.
 */
static const cudnn_rnn_costs cudnn_costs[] = {
	{"LSTM", 4, 5, 6,
	 {{{932, 1603, 2989, 966, 1383, 2929, 5296}, {999, 1797, 3117, 1118, 1383, 2929, 5296}},
	  {{769, 1046, 2057, 1816, 1930, 3733, 7970}, {1890, 1046, 2057, 1881, 1930, 3733, 7970}}},
	 {3500, 3750}},
	{"GRU", 3, 6, 7,
	 {{{531, 1282, 2307, 1063, 1107, 3330, 4510}, {644, 1862, 3077, 1375, 1162, 3330, 4610}},
	  {{531, 898, 1794, 1259, 1595, 3330, 6576}, {644, 1411, 2819, 1309, 1651, 3330, 6576}}},
	 {1850, 2300}},
	{"RNN", 1, 1, 2,
	 {{{763, 449, 1073, 1797, 1616, 2668, 2434}, {2043, 1116, 2437, 4118, 3736, 3635, 4359}},
	  {{249, 439, 1073, 1797, 1683, 2668, 5079}, {582, 787, 2437, 4118, 2812, 3635, 6652}}},
	 {2700, 6000}},
};

/* ws_token at hidden size h: the measured column, the line between two, the first below 32, in proportion
   past 1024. */
static int64_t ws_per_token(const int *row, int64_t h)
{
	if (h <= ws_hidden[0])
		return row[0];
	for (int i = 1; i < WS_COLUMNS; i++)
		if (h <= ws_hidden[i])
			return row[i - 1] + (row[i] - row[i - 1]) * (h - ws_hidden[i - 1]) / (ws_hidden[i] - ws_hidden[i - 1]);
	return row[WS_COLUMNS - 1] * (h / ws_hidden[WS_COLUMNS - 1]);
}

#define MIB ((int64_t)1 << 20)
#define CUDNN_WS_FLOOR (8 * MIB) /* a layer and direction: the least the grid's workspaces hold */
/* cudnnDropoutGetStatesSize on the H200 the grid ran on: 48 KiB a multiprocessor, 132 of them */
#define CUDNN_DROPOUT_STATE ((int64_t)6488064)

typedef struct cudnn_dims {
	int64_t steps, batch, input, hidden, layers, dirs, es, gates;
} cudnn_dims;

/* The flattened weight buffer's bytes (the parameters, in the input's dtype): per layer and direction
   G*H x (in + H) weights, and 2 x G*H biases. False past 2^62. */
static bool cudnn_weights(const cudnn_dims *d, bool bias, int64_t *out)
{
	*out = 0;
	for (int64_t l = 0; l < d->layers; l++) {
		int64_t in = l ? d->dirs * d->hidden : d->input, w;
		if (!PRODUCT(&w, d->dirs, d->gates * d->hidden, in + d->hidden + (bias ? 2 : 0), d->es) || !mem_add(out, w))
			return false;
	}
	return true;
}

/* The workspace the options ask for (the estimate, the floor or the ceiling), training's or inference's. */
static bool cudnn_workspace(const cudnn_rnn_costs *k, const cudnn_dims *d, int64_t weights, bool train,
                            mem_rnn_workspace which, int64_t *out)
{
	int64_t floor, tokens, above;
	if (!PRODUCT(&floor, CUDNN_WS_FLOOR, d->layers, d->dirs) || !mem_add(&floor, weights) ||
	    !PRODUCT(&tokens, d->steps, d->batch, d->dirs, d->es, d->gates * d->hidden + 2 * d->input + 512))
		return false;
	*out = floor;
	if (which == MEM_RNN_WS_LOW)
		return true;
	if (which == MEM_RNN_WS_HIGH)
		return PRODUCT(&above, tokens / 1000 + 1, k->ws_ceil[train]) && mem_add(out, above) &&
		       PRODUCT(&above, MIB, d->layers, d->dirs) && mem_add(out, above);
	return PRODUCT(&above, d->steps, d->batch, d->dirs, d->es, ws_per_token(k->ws_token[d->dirs - 1][train], d->hidden)) &&
	       mem_add(out, above);
}

/* A recurrent layer's unit: one call, new outputs. */
static void rnn_unit(mem_builder *b, mem_unit *u, const char *label, const char *op)
{
	memset(u, 0, sizeof(*u));
	u->label = label;
	u->op = op;
	u->module = b->module;
	u->differentiable = true;
	u->out_kind = MEM_OUT_NEW;
}

/* The call's tensor arguments (input, and hx and cx where given), in order. */
static void add_call_inputs(mem_builder *b, mem_unit *u, const ti_op_call *c)
{
	for (int i = 0; c->in.sig && i < c->in.sig->count; i++)
		add_tensors(b, u, &c->in.args[i], true);
}

/* After them the module's weights (what their gradients are made for), then the call's outputs. */
static ti_status add_weights_and_outputs(mem_builder *b, mem_unit *u, const ti_module *m, const ti_op_call *c,
                                         ti_error *err)
{
	for (int i = 0; i < m->tensor_count && u->nin < MEM_MAX_IO; i++)
		if (!m->tensors[i].buffer)
			u->in[u->nin++] = mem_tensor_of(b, m->tensors[i].tensor);
	for (int i = 0; i < c->output_count; i++) {
		ti_status st = bind_new(b, u, &c->outputs[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* Whether a tensor argument was given (h0, or (h0, c0)): else the module makes zeros for it. */
static bool given(const ti_op_call *c, int i)
{
	return c->in.sig && i < c->in.sig->count && (c->in.args[i].kind == TI_ARG_TENSOR || c->in.args[i].kind == TI_ARG_LIST);
}

static ti_status expand_cudnn(mem_builder *b, const mem_event *ev, const ti_meta_tensor *x, ti_error *err)
{
	const ti_module *m = ev->module;
	const ti_op_call *c = ev->call;
	const cudnn_rnn_costs *k = &cudnn_costs[0];
	for (size_t i = 0; i < sizeof(cudnn_costs) / sizeof(cudnn_costs[0]); i++)
		if (!strcmp(cudnn_costs[i].type, ev->name))
			k = &cudnn_costs[i];
	bool lstm = !strcmp(k->type, "LSTM"), train = mem_training(b);
	bool batch_first = ti_module_bool(m, "batch_first"), batched = x->ndim == 3;
	cudnn_dims d = {x->shape[batched && batch_first ? 1 : 0].value, batched ? x->shape[batch_first ? 0 : 1].value : 1,
	                x->shape[x->ndim - 1].value, ti_module_dim(m, "hidden_size").value,
	                ti_module_dim(m, "num_layers").value, ti_module_bool(m, "bidirectional") ? 2 : 1,
	                (int64_t)ti_dtype_size(x->dtype), k->gates};
	bool dropping = train && d.layers > 1 && ti_module_float(m, "dropout") > 0;
	/* the time-major copy: RNN.cpp's input.contiguous() after transpose(0, 1) (batch_first), a copy when
	   (T, N) do not merge, as input_copied says for the CPU's linear_ih */
	int64_t x_bytes = mem_meta_bytes(x), x_copy = batched && input_copied(x, batch_first) ? x_bytes : 0;
	int64_t weights, ws, ws_train, y, state, zeros = 0, reserve = 0, mask = 0, dy = 0;
	if (x_bytes < 0 || !cudnn_weights(&d, ti_module_bool(m, "bias"), &weights) ||
	    !cudnn_workspace(k, &d, weights, false, b->rnn_workspace, &ws) ||
	    !cudnn_workspace(k, &d, weights, true, b->rnn_workspace, &ws_train) ||
	    !PRODUCT(&y, d.steps, d.batch, d.dirs, d.hidden, d.es) ||
	    !PRODUCT(&state, d.layers, d.dirs, d.batch, d.hidden, d.es, lstm ? 2 : 1) ||
	    /* cudnnGetRNNTempSpaceSizes' reserveSpaceSize, exact on the grid: 256 + el x N x T x D*H x (a + b(L-1)) */
	    !PRODUCT(&reserve, d.steps, d.batch, d.dirs, d.hidden, d.es, k->reserve_first + k->reserve_more * (d.layers - 1)) ||
	    /* between layers the dropout's mask, a bit per element of D inputs to each of D directions, rounded to
	       32 bytes a layer (a 7-step GRU's 175 bytes took 192) */
	    (dropping && !PRODUCT(&mask, d.steps, d.batch, d.dirs, d.dirs, d.hidden)))
		return TI_FAIL(err, TI_E_LIMIT, "%s: more than 2^62 bytes", m->path);
	reserve += 256 + (d.layers - 1) * ((mask / 8 + 31) / 32 * 32);
	if (!given(c, 1))
		zeros = state; /* h0 (and c0): torch.zeros(num_layers * D, N, H) in the module's forward */
	if (batch_first && x_copy)
		dy = y; /* the gradient of the transposed y, made time-major contiguous */
	mem_unit u;
	rnn_unit(b, &u, ti_arena_printf(b->arena, "%s (%s, _cudnn_rnn)", m->path, ev->name), ev->name);
	/* inference: the workspace and the x copy within the op, h0 and c0 until the module returns */
	u.fwd_scratch = ws + x_copy + zeros;
	u.fwd_scratch_grad = ws_train + x_copy;
	u.saved_extra = reserve + zeros; /* result3, and the h0 and c0 made here (hx, cx) */
	/* the backward's own: the workspace, the x copy, grad_hy (and grad_cy) in and dhx (and dcx) out, and dy
	   while dw is not yet made; dx, which it always makes, where the input wants none */
	int64_t beside = ws_train + x_copy + 2 * state + (dy > weights ? dy - weights : 0);
	u.bwd_scratch_in = beside;
	u.bwd_scratch = beside + x_bytes;
	add_call_inputs(b, &u, c);
	for (int i = 0; i < u.nin; i++)
		u.saved_in |= 1u << i; /* input, and hx and cx where given */
	ti_status st = add_weights_and_outputs(b, &u, m, c, err);
	if (st)
		return st;
	if (u.nout)
		u.saved_out = 1u; /* result0, y */
	if (dropping)
		b->cudnn_dropout_state = CUDNN_DROPOUT_STATE;
	return mem_emit(b, &u, err);
}

ti_status mem_expand_rnn(mem_builder *b, const mem_event *ev, ti_error *err)
{
	const ti_module *m = ev->module;
	const ti_op_call *c = ev->call;
	const rnn_costs *k = &costs[0];
	for (size_t i = 0; i < sizeof(costs) / sizeof(costs[0]); i++)
		if (!strcmp(costs[i].type, ev->name))
			k = &costs[i];
	const ti_meta_tensor *x = c->in.sig && c->in.args[0].kind == TI_ARG_TENSOR ? c->in.args[0].as.tensor : NULL;
	if (!x || x->ndim < 2)
		return mem_rule_default(b, ev, err);
	if (b->options->device == TI_MEMORY_CUDA)
		return expand_cudnn(b, ev, x, err);
	bool batch_first = ti_module_bool(m, "batch_first");
	bool batched = x->ndim == 3, copied = input_copied(x, batch_first);
	int64_t steps = x->shape[batched && batch_first ? 1 : 0].value;
	int64_t batch = batched ? x->shape[batch_first ? 0 : 1].value : 1;
	int64_t hidden = ti_module_dim(m, "hidden_size").value;
	int64_t layers = ti_module_dim(m, "num_layers").value;
	int64_t dirs = ti_module_bool(m, "bidirectional") ? 2 : 1;
	int64_t es = (int64_t)ti_dtype_size(x->dtype);
	/* inference: the peak of the last layer (with its input from the second on), in T x B x H, less the output */
	int64_t g = k->gates, layer_peak = dirs == 2 ? (2 * g + 2 > g + 6 ? 2 * g + 2 : g + 6) : g + 2;
	int64_t infer_scratch = (layers > 1 ? dirs : 0) + layer_peak - dirs;
	/* training, dropout between layers (apply_layer_stack): the noise (input * noise; mul saves it) beside each
	 * layer's input, which is the dropout's output; the output below it is not kept */
	bool dropping = b->options->mode == TI_MEMORY_TRAIN && layers > 1 && ti_module_float(m, "dropout") > 0;
	int64_t bh, per_step, total, scratch;
	int64_t layer_inputs, x_bytes = mem_meta_bytes(x);
	if (!mem_mul(batch, hidden, &bh) || !mem_mul(bh, es, &bh) || !mem_mul(bh, steps, &per_step) ||
	    !mem_mul(per_step, layers * dirs * k->saved_per_step, &total) || !mem_mul(per_step, infer_scratch, &scratch) ||
	    (copied && !first_layer_copy(g, dirs, per_step, x_bytes, &scratch)) ||
	    !mem_mul(per_step, (layers - 1) * dirs * (dropping ? 2 : 1), &layer_inputs) || x_bytes < 0 ||
	    !mem_add(&total, layer_inputs) ||
	    (copied && !mem_add(&total, dirs * x_bytes)))
		return TI_FAIL(err, TI_E_LIMIT, "%s: more than 2^62 bytes", m->path);
	mem_unit u;
	rnn_unit(b, &u, ti_arena_printf(b->arena, "%s (%s)", m->path, ev->name), ev->name);
	u.fwd_scratch = scratch;
	/* input_copied: a time-major copy of the input for each direction's linear_ih, which the forward-walked
	   direction does not keep (measured: one direction keeps no copy after the forward, two keep one) */
	/* training: what the last layer's forward holds above its saved steps and the output when it ends, in
	   T x B x H: the precomputed gates linear_ih made (G; the step inputs are views of them until the layer
	   returns), and with two directions both directions' stacks beside the cat of them (G + 2). Measured
	   on 1.13, B 4 to 16, T 64 to 256, one to three layers: LSTM 4 and 6, GRU 3 and 5, RNN 1 and 3. */
	u.fwd_scratch_grad = per_step * (g + (dirs == 2 ? 2 : 0));
	u.saved_extra = total;
	rnn_dims dims = {steps, batch, hidden, x->shape[x->ndim - 1].value, layers, dirs, es,
	                 dropping, copied ? x_bytes : 0};
	if (!backward_peak(k, &dims, false, true, &u.bwd_scratch) || !backward_peak(k, &dims, true, true, &u.bwd_scratch_in) ||
	    !backward_peak(k, &dims, false, false, &u.bwd_scratch_no_go[0]) ||
	    !backward_peak(k, &dims, true, false, &u.bwd_scratch_no_go[1]))
		return TI_FAIL(err, TI_E_LIMIT, "%s: more than 2^62 bytes", m->path);
	u.bwd_whole = true;
	add_call_inputs(b, &u, c);
	if (u.nin)
		u.saved_in = copied ? 0 : 1u; /* the input, read by the first layer's linear_ih (or its copies) */
	ti_status st = add_weights_and_outputs(b, &u, m, c, err);
	return st ? st : mem_emit(b, &u, err);
}
