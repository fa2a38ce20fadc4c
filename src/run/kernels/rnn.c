/*
 * rnn.c - the recurrent modules RNN (tanh, relu), LSTM (with proj_size) and
 * GRU, in eval mode (no dropout between layers), as PyTorch's CPU kernels
 * compute them (aten/src/ATen/native/RNN.cpp).
 *
 * Per layer and direction: the input gates of the whole sequence at once,
 * X W_ih^T + b_ih by one sgemm over L * N rows; then per time step (reversed
 * for the _reverse direction) the hidden gates h W_hh^T + b_hh by sgemm and
 * the cell's elementwise arithmetic, gates in PyTorch's order: LSTM i, f, g,
 * o; GRU r, z, n with n = tanh(x_n + r * (W_hn h + b_hn)). An LSTM with a
 * projection multiplies its new h by W_hr^T.
 *
 * Layers run sequence-first on [L, N, features] rows; outputs are laid out
 * as PyTorch's: output [L, N, D * R] (batch_first: its transposed view),
 * h_n [D * layers, N, R] and LSTM's c_n [D * layers, N, H], without N when
 * the input is unbatched.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"

/* One time step of one layer and direction, over the batch. */
typedef struct rnn_step {
	int64_t N, H;
	const float *gi;  /* [N, G*H]: input gates with b_ih */
	const float *gh;  /* [N, G*H]: hidden gates with b_hh */
	const float *h;   /* [N, H]: the previous h (RNN, GRU) */
	float *c;         /* [N, H]: LSTM's cell state, updated in place */
	float *h_new;     /* [N, H] */
} rnn_step;

typedef void (*rnn_cell_fn)(const rnn_step *s);

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

static void cell_tanh(const rnn_step *s)
{
	for (int64_t i = 0; i < s->N * s->H; i++)
		s->h_new[i] = tanhf(s->gi[i] + s->gh[i]);
}

static void cell_relu(const rnn_step *s)
{
	for (int64_t i = 0; i < s->N * s->H; i++) {
		float v = s->gi[i] + s->gh[i];
		s->h_new[i] = v > 0 ? v : 0;
	}
}

static void cell_lstm(const rnn_step *s)
{
	int64_t H = s->H;
	for (int64_t n = 0; n < s->N; n++) {
		const float *gi = s->gi + n * 4 * H, *gh = s->gh + n * 4 * H;
		float *c = s->c + n * H, *h = s->h_new + n * H;
		for (int64_t j = 0; j < H; j++) {
			float in = sigmoid(gi[j] + gh[j]), forget = sigmoid(gi[H + j] + gh[H + j]);
			float cell = tanhf(gi[2 * H + j] + gh[2 * H + j]), out = sigmoid(gi[3 * H + j] + gh[3 * H + j]);
			c[j] = forget * c[j] + in * cell;
			h[j] = out * tanhf(c[j]);
		}
	}
}

static void cell_gru(const rnn_step *s)
{
	int64_t H = s->H;
	for (int64_t n = 0; n < s->N; n++) {
		const float *gi = s->gi + n * 3 * H, *gh = s->gh + n * 3 * H, *h = s->h + n * H;
		float *out = s->h_new + n * H;
		for (int64_t j = 0; j < H; j++) {
			float reset = sigmoid(gi[j] + gh[j]), update = sigmoid(gi[H + j] + gh[H + j]);
			float fresh = tanhf(gi[2 * H + j] + reset * gh[2 * H + j]);
			out[j] = (1.0f - update) * fresh + update * h[j];
		}
	}
}

/* The module types and nonlinearities: gate blocks and the cell. */
static const struct {
	const char *type, *nonlinearity; /* NULL: any */
	int gates;
	rnn_cell_fn cell;
} kinds[] = {
	{"RNN", "tanh", 1, cell_tanh},
	{"RNN", "relu", 1, cell_relu},
	{"LSTM", NULL, 4, cell_lstm},
	{"GRU", NULL, 3, cell_gru},
};

/* The sizes of a run. */
typedef struct rnn_dims {
	int64_t L, N, I, H, R, layers, D, G; /* R: the state size (proj_size or H); G: gate blocks */
	bool lstm;
	rnn_cell_fn cell;
} rnn_dims;

/* rows [n, cols] = bias (or 0) + a [n, k] W[cols, k]^T */
static void affine(const float *a, int64_t n, int64_t k, const float *w, const float *bias, int64_t cols, float *out)
{
	if (!n || !cols)
		return;
	float beta = 0;
	if (bias) {
		for (int64_t i = 0; i < n; i++)
			memcpy(out + i * cols, bias, (size_t)cols * sizeof(float));
		beta = 1;
	}
	if (k)
		rt_sgemm(false, true, n, cols, k, 1.0f, a, k, w, k, beta, out, cols);
	else if (!bias)
		memset(out, 0, (size_t)(n * cols) * sizeof(float));
}

/* A contiguous parameter "<prefix>_l<layer><_reverse>", or NULL when absent (bias=False, no projection). */
static ti_status layer_param(rt_call *c, const char *prefix, int64_t layer, int64_t dir, rt_tensor **out, ti_error *err)
{
	char name[64];
	snprintf(name, sizeof(name), "%s_l%lld%s", prefix, (long long)layer, dir ? "_reverse" : "");
	rt_tensor *t;
	ti_status st = rt_param(c, name, &t, err);
	*out = NULL;
	if (!st && t && t->dtype != TI_DT_FLOAT32)
		st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a %s '%s'", ti_dtype_name(t->dtype), name);
	return st || !t ? st : rt_contiguous(c, t, out, err);
}

/* Scratch of one layer and direction's run. */
typedef struct rnn_work {
	float *gates_in;  /* [L*N, G*H] */
	float *gates_h;   /* [N, G*H] */
	float *h, *h_new; /* [N, R], [N, H] */
	float *c;         /* [N, H] */
} rnn_work;

/*
 * One layer and direction: x [L, N, in] -> out[t, n, dir*R .. (dir+1)*R) of
 * [L, N, D*R]; h and c start as given (h0, c0 or zeros) and end as h_n, c_n.
 */
static ti_status run_direction(rt_call *c, const rnn_dims *d, int64_t layer, int64_t dir, const float *x, int64_t in,
                               float *out, rnn_work *w, ti_error *err)
{
	rt_tensor *w_ih, *w_hh, *b_ih, *b_hh, *w_hr;
	ti_status st = layer_param(c, "weight_ih", layer, dir, &w_ih, err);
	if (!st)
		st = layer_param(c, "weight_hh", layer, dir, &w_hh, err);
	if (!st)
		st = layer_param(c, "bias_ih", layer, dir, &b_ih, err);
	if (!st)
		st = layer_param(c, "bias_hh", layer, dir, &b_hh, err);
	if (!st)
		st = layer_param(c, "weight_hr", layer, dir, &w_hr, err);
	if (!st && (!w_ih || !w_hh))
		st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for an RNN without weight_ih_l%lld", (long long)layer);
	if (st)
		return st;
	int64_t N = d->N, H = d->H, R = d->R, GH = d->G * H, width = d->D * R;
	affine(x, d->L * N, in, rt_f32(w_ih), b_ih ? rt_f32(b_ih) : NULL, GH, w->gates_in);
	for (int64_t k = 0; k < d->L; k++) {
		int64_t t = dir ? d->L - 1 - k : k;
		affine(w->h, N, R, rt_f32(w_hh), b_hh ? rt_f32(b_hh) : NULL, GH, w->gates_h);
		rnn_step s = {N, H, w->gates_in + t * N * GH, w->gates_h, w->h, w->c, w->h_new};
		d->cell(&s);
		if (w_hr)
			affine(w->h_new, N, H, rt_f32(w_hr), NULL, R, w->h);
		else
			memcpy(w->h, w->h_new, (size_t)(N * H) * sizeof(float));
		for (int64_t n = 0; n < N; n++)
			memcpy(out + (t * N + n) * width + dir * R, w->h + n * R, (size_t)R * sizeof(float));
	}
	rt_release(c->ex, w_ih);
	rt_release(c->ex, w_hh);
	rt_release(c->ex, b_ih);
	rt_release(c->ex, b_hh);
	rt_release(c->ex, w_hr);
	return TI_OK;
}

/* A sequence-first [L, N, I] view of the input: batch_first swaps, unbatched gains N = 1. */
static ti_status sequence_first(rt_call *c, rt_tensor *input, bool batch_first, rt_tensor **out, ti_error *err)
{
	int64_t shape[3], stride[3];
	if (input->ndim == 2) {
		shape[0] = input->shape[0], shape[1] = 1, shape[2] = input->shape[1];
		stride[0] = input->stride[0], stride[1] = 0, stride[2] = input->stride[1];
	} else {
		int l = batch_first ? 1 : 0, n = 1 - l;
		shape[0] = input->shape[l], shape[1] = input->shape[n], shape[2] = input->shape[2];
		stride[0] = input->stride[l], stride[1] = input->stride[n], stride[2] = input->stride[2];
	}
	rt_tensor *view, *seq;
	ti_status st = rt_view(c, input, 3, shape, stride, input->offset, &view, err);
	if (st)
		return st;
	st = rt_contiguous(c, view, &seq, err);
	rt_release(c->ex, view);
	*out = st ? NULL : seq;
	return st;
}

/* The initial states: hx (RNN, GRU) or the list (h_0, c_0) (LSTM), contiguous, or NULL when not given. */
static ti_status initial_states(rt_call *c, bool lstm, rt_tensor *states[2], ti_error *err)
{
	states[0] = states[1] = NULL;
	const ti_meta_tensor *metas[2] = {NULL, NULL};
	if (lstm) {
		int n = 0;
		const ti_arg *items = ti_bound_list(&c->call->in, "hx", &n);
		for (int i = 0; items && i < n && i < 2; i++)
			metas[i] = items[i].kind == TI_ARG_TENSOR ? items[i].as.tensor : NULL;
	} else {
		metas[0] = ti_bound_tensor(&c->call->in, "hx");
	}
	for (int i = 0; i < 2; i++) {
		if (!metas[i])
			continue;
		rt_tensor *t;
		ti_status st = rt_of(c, metas[i], &t, err);
		if (!st && t->dtype != TI_DT_FLOAT32)
			st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for %s RNN states", ti_dtype_name(t->dtype));
		if (!st)
			st = rt_contiguous(c, t, &states[i], err);
		if (st)
			return st;
	}
	return TI_OK;
}

static ti_status dims_of(rt_call *c, const rt_tensor *input, rnn_dims *d, ti_error *err)
{
	const ti_module *m = c->module;
	const char *nonlinearity = ti_bound_str(&m->ctor, "nonlinearity");
	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !d->cell; i++)
		if (!strcmp(kinds[i].type, m->type) &&
		    (!kinds[i].nonlinearity || !strcmp(kinds[i].nonlinearity, nonlinearity ? nonlinearity : "tanh"))) {
			d->G = kinds[i].gates;
			d->cell = kinds[i].cell;
		}
	if (!d->cell)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s'", m->type);
	bool batch_first = ti_bound_bool(&m->ctor, "batch_first"), batched = input->ndim == 3;
	d->lstm = !strcmp(m->type, "LSTM");
	d->L = input->shape[batched && batch_first ? 1 : 0];
	d->N = batched ? input->shape[batch_first ? 0 : 1] : 1;
	d->I = input->shape[input->ndim - 1];
	d->H = ti_bound_dim(&m->ctor, "hidden_size").value;
	int64_t proj = d->lstm ? ti_bound_dim(&m->ctor, "proj_size").value : 0;
	d->R = proj > 0 ? proj : d->H;
	d->layers = ti_bound_dim(&m->ctor, "num_layers").value;
	d->D = ti_bound_bool(&m->ctor, "bidirectional") ? 2 : 1;
	return TI_OK;
}

/* A state output [D*layers, N, size], or [D*layers, size] when unbatched. */
static ti_status new_state(rt_call *c, const rnn_dims *d, bool batched, int64_t size, rt_tensor **out, ti_error *err)
{
	int64_t shape[3] = {d->D * d->layers, d->N, size};
	if (!batched)
		shape[1] = size;
	return rt_new(c, TI_DT_FLOAT32, batched ? 3 : 2, shape, out, err);
}

static ti_status k_rnn(rt_call *c, ti_error *err)
{
	rt_tensor *input, *states[2] = {NULL, NULL}, *seq = NULL, *y = NULL, *h_n = NULL, *c_n = NULL;
	ti_status st = rt_arg(c, "input", &input, err);
	if (st)
		return st;
	if (input->dtype != TI_DT_FLOAT32 || (input->ndim != 2 && input->ndim != 3))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' on this input", c->module->type);
	rnn_dims d;
	if ((st = dims_of(c, input, &d, err)))
		return st;
	bool batched = input->ndim == 3, batch_first = ti_bound_bool(&c->module->ctor, "batch_first");
	int64_t N = d.N, H = d.H, R = d.R, width = d.D * R, GH = d.G * H;
	/* the layers' outputs, in turn; the last one becomes the output */
	float *buffers[2] = {NULL, NULL};
	rnn_work w = {0};
	size_t rows = (size_t)(d.L * N);
	buffers[0] = rt_scratch_alloc(c, (rows * (size_t)width + 1) * sizeof(float), false);
	buffers[1] = d.layers > 1 ? rt_scratch_alloc(c, (rows * (size_t)width + 1) * sizeof(float), false) : NULL;
	w.gates_in = rt_scratch_alloc(c, (rows * (size_t)GH + 1) * sizeof(float), false);
	w.gates_h = rt_scratch_alloc(c, ((size_t)(N * GH) + 1) * sizeof(float), false);
	w.h = rt_scratch_alloc(c, ((size_t)(N * H) + 1) * sizeof(float), false);
	w.h_new = rt_scratch_alloc(c, ((size_t)(N * H) + 1) * sizeof(float), false);
	w.c = rt_scratch_alloc(c, ((size_t)(N * H) + 1) * sizeof(float), true);
	if (!buffers[0] || (d.layers > 1 && !buffers[1]) || !w.gates_in || !w.gates_h || !w.h || !w.h_new || !w.c) {
		st = TI_FAIL(err, TI_E_NOMEM, "out of memory for '%s'", c->module->type);
		goto done;
	}
	if ((st = sequence_first(c, input, batch_first, &seq, err)) || (st = initial_states(c, d.lstm, states, err)) ||
	    (st = new_state(c, &d, batched, R, &h_n, err)) || (d.lstm && (st = new_state(c, &d, batched, H, &c_n, err))))
		goto done;
	const float *x = rt_f32(seq);
	int64_t in = d.I;
	float *out = NULL;
	for (int64_t layer = 0; layer < d.layers; layer++) {
		out = buffers[layer % 2];
		for (int64_t dir = 0; dir < d.D; dir++) {
			int64_t k = layer * d.D + dir; /* the state's row in h_0, h_n */
			if (states[0])
				memcpy(w.h, rt_f32(states[0]) + k * N * R, (size_t)(N * R) * sizeof(float));
			else
				memset(w.h, 0, (size_t)(N * R) * sizeof(float));
			if (states[1])
				memcpy(w.c, rt_f32(states[1]) + k * N * H, (size_t)(N * H) * sizeof(float));
			else
				memset(w.c, 0, (size_t)(N * H) * sizeof(float));
			if ((st = run_direction(c, &d, layer, dir, x, in, out, &w, err)))
				goto done;
			memcpy(rt_f32(h_n) + k * N * R, w.h, (size_t)(N * R) * sizeof(float));
			if (c_n)
				memcpy(rt_f32(c_n) + k * N * H, w.c, (size_t)(N * H) * sizeof(float));
		}
		x = out;
		in = width;
	}
	/* output: [L, N, D*R]; batch_first returns its transpose (a view), unbatched drops N */
	int64_t shape[3] = {d.L, N, width};
	if (!batched)
		shape[1] = width;
	if ((st = rt_new(c, TI_DT_FLOAT32, batched ? 3 : 2, shape, &y, err)))
		goto done;
	memcpy(rt_f32(y), out, rows * (size_t)width * sizeof(float));
	if (batched && batch_first) {
		int64_t t_shape[3] = {N, d.L, width}, t_stride[3] = {y->stride[1], y->stride[0], y->stride[2]};
		rt_tensor *view;
		if ((st = rt_view(c, y, 3, t_shape, t_stride, y->offset, &view, err)))
			goto done;
		rt_release(c->ex, y);
		y = view;
	}
	st = rt_output(c, y, err);
	y = NULL;
	if (!st) {
		st = rt_output(c, h_n, err);
		h_n = NULL;
	}
	if (!st && c_n) {
		st = rt_output(c, c_n, err);
		c_n = NULL;
	}
done:
	rt_scratch_free(c, buffers[0]);
	rt_scratch_free(c, buffers[1]);
	rt_scratch_free(c, w.gates_in);
	rt_scratch_free(c, w.gates_h);
	rt_scratch_free(c, w.h);
	rt_scratch_free(c, w.h_new);
	rt_scratch_free(c, w.c);
	rt_release(c->ex, seq);
	rt_release(c->ex, states[0]);
	rt_release(c->ex, states[1]);
	rt_release(c->ex, y);
	rt_release(c->ex, h_n);
	rt_release(c->ex, c_n);
	return st;
}

/* ---- scratch: what each kernel above holds beside its operands, for the plan ---- */

/*
 * RNN, LSTM, GRU: two layers' outputs (one for a single layer), the input
 * gates of the whole sequence, one step's hidden gates, the state (h, the
 * next h, c: each of k_rnn's seven buffers one float longer), and the
 * input copied time-major (sequence_first) unless it is so already: a
 * batch_first batch of more than one sequence always is copied, whatever
 * strides the plan's walk gives the input.
 */
static int64_t rnn_scratch(rt_call *c)
{
	const rt_tensor *x = rt_arg_or_null(c, "input");
	const ti_module *m = c->module;
	if (!x || !m || (x->ndim != 2 && x->ndim != 3))
		return 0;
	bool batch_first = ti_bound_bool(&m->ctor, "batch_first");
	int64_t L, N;
	rt_sequence_dims(x, batch_first, &L, &N);
	int64_t H = rt_ctor_int(m, "hidden_size"), layers = rt_ctor_int(m, "num_layers");
	int64_t proj = !strcmp(m->type, "LSTM") ? rt_ctor_int(m, "proj_size") : 0, R = proj > 0 ? proj : H;
	int64_t G = !strcmp(m->type, "LSTM") ? 4 : !strcmp(m->type, "GRU") ? 3 : 1;
	int64_t width = (ti_bound_bool(&m->ctor, "bidirectional") ? 2 : 1) * R, rows = L * N;
	int64_t floats = (layers > 1 ? 2 : 1) * (rows * width + 1) + rows * G * H + N * G * H + 3 * N * H + 5;
	bool copied = !rt_is_contiguous(x) || (x->ndim == 3 && batch_first && L > 1 && N > 1);
	if (copied)
		floats += rt_numel(x);
	return floats * (int64_t)sizeof(float);
}

const rt_scratch rt_scratch_rnn[] = {
	{k_rnn, rnn_scratch},
	{NULL, NULL},
};

const rt_kernel rt_kernels_rnn[] = {
	{"RNN", true, k_rnn, false},
	{"LSTM", true, k_rnn, false},
	{"GRU", true, k_rnn, false},
	{NULL, false, NULL, false},
};
