/*
 * init_rules.c - PyTorch's default initialisation by module type and tensor name (see init_rules.h).
 *
 * One table row per module type. Composite types (the Transformer family)
 * hand each tensor to the row of the part it belongs to, by prefix; a part
 * finds its siblings (a bias its weight) under the same prefix. The bounds
 * repeat torch/nn/init.py's arithmetic step by step, so they are the same
 * doubles PyTorch computes.
 */
#include "tinspect/init_rules.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The answer for one tensor. */
typedef struct init_answer {
	ti_fill_policy policy;
	const char *rule;
} init_answer;

/*
 * A tensor being resolved: its full local name, and where in it the part
 * that a rule handles begins ("layers.0.linear1.bias" at 9 is "linear1.bias"
 * for the layer, at 17 "bias" for the Linear).
 */
typedef struct init_query {
	const ti_init_module *m;
	const ti_init_tensor *tensor;
	const char *name;
	size_t at;
} init_query;

typedef ti_status (*init_rule_fn)(const init_query *q, int gates, init_answer *a, ti_error *err);

/* ---- helpers ---- */

static const char *local_of(const init_query *q)
{
	return q->name + q->at;
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* The module's tensor named <the query's prefix><name>, or NULL. */
static const ti_init_tensor *sibling(const init_query *q, const char *name)
{
	for (int i = 0; i < q->m->tensor_count; i++) {
		const char *n = q->m->tensors[i].name;
		if (n && !strncmp(n, q->name, q->at) && !strcmp(n + q->at, name))
			return &q->m->tensors[i];
	}
	return NULL;
}

/* The module's first tensor named <the query's prefix><start>..., or NULL. */
static const ti_init_tensor *sibling_starting(const init_query *q, const char *start)
{
	for (int i = 0; i < q->m->tensor_count; i++) {
		const char *n = q->m->tensors[i].name;
		if (n && !strncmp(n, q->name, q->at) && starts_with(n + q->at, start))
			return &q->m->tensors[i];
	}
	return NULL;
}

static bool has_elements(const ti_init_tensor *t)
{
	for (int i = 0; i < t->rank; i++)
		if (t->shape[i] == 0)
			return false;
	return true;
}

/* _calculate_fan_in_and_fan_out: size(1) and size(0) times the receptive field prod(shape[2:]). */
static ti_status fans_of(const ti_init_tensor *t, int64_t *fan_in, int64_t *fan_out, ti_error *err)
{
	if (t->rank < 2)
		return TI_FAIL(err, TI_E_INVALID,
		               "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions ('%s')", t->name);
	int64_t field = 1;
	for (int i = 2; i < t->rank; i++) {
		if (t->shape[i] && field > INT64_MAX / t->shape[i])
			return TI_FAIL(err, TI_E_LIMIT, "the receptive field of '%s' overflows int64", t->name);
		field *= t->shape[i];
	}
	if ((field && t->shape[1] > INT64_MAX / field) || (field && t->shape[0] > INT64_MAX / field))
		return TI_FAIL(err, TI_E_LIMIT, "the fans of '%s' overflow int64", t->name);
	*fan_in = t->shape[1] * field;
	*fan_out = t->shape[0] * field;
	return TI_OK;
}

static void answer(init_answer *a, ti_fill_policy policy, const char *rule)
{
	a->policy = policy;
	a->rule = rule;
}

/* uniform:-b,b, or zeros when b is 0 (a fan of 0 leaves nothing to draw). */
static ti_fill_policy symmetric(double b)
{
	return b > 0 ? ti_fill_uniform(-b, b) : ti_fill_constant(TI_FILL_ZEROS);
}

/* kaiming_uniform_(a=sqrt(5), mode='fan_in', nonlinearity='leaky_relu'), in init.py's order. */
static double kaiming_bound(int64_t fan_in)
{
	double a = sqrt(5.0);
	double gain = sqrt(2.0 / (1 + a * a)); /* calculate_gain('leaky_relu', a) */
	double std = gain / sqrt((double)fan_in);
	return sqrt(3.0) * std;
}

/* xavier_uniform_(gain=1): the bound; xavier_normal_'s std is the same without sqrt(3). */
static double xavier_std(int64_t fan_in, int64_t fan_out)
{
	return 1.0 * sqrt(2.0 / (double)(fan_in + fan_out));
}

static ti_status unknown_tensor(const init_query *q, ti_error *err)
{
	return TI_FAIL(err, TI_E_UNSUPPORTED, "no default initialisation known for %s tensor '%s'", q->m->type, q->name);
}

/* ---- the rules ---- */

static ti_status kaiming_weight(const init_query *q, init_answer *a, ti_error *err)
{
	int64_t fan_in, fan_out;
	ti_status st = fans_of(q->tensor, &fan_in, &fan_out, err);
	if (st)
		return st;
	if (!has_elements(q->tensor) || fan_in == 0) {
		answer(a, ti_fill_constant(TI_FILL_ZEROS), "kaiming_uniform_(a=sqrt(5)) of no element: zeros");
		return TI_OK;
	}
	answer(a, symmetric(kaiming_bound(fan_in)), "kaiming_uniform_(a=sqrt(5))");
	return TI_OK;
}

/* Linear, Conv*, ConvTranspose*: _ConvNd.reset_parameters and Linear.reset_parameters. */
static ti_status rule_linear(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	(void)gates;
	const char *local = local_of(q);
	if (!strcmp(local, "weight"))
		return kaiming_weight(q, a, err);
	if (strcmp(local, "bias"))
		return unknown_tensor(q, err);
	const ti_init_tensor *w = sibling(q, "weight");
	if (!w)
		return TI_FAIL(err, TI_E_INVALID, "%s tensor '%s' has no weight to take its fan_in from", q->m->type, q->name);
	int64_t fan_in, fan_out;
	ti_status st = fans_of(w, &fan_in, &fan_out, err);
	if (st)
		return st;
	answer(a, symmetric(fan_in > 0 ? 1 / sqrt((double)fan_in) : 0), "uniform_(-1/sqrt(fan_in), 1/sqrt(fan_in))");
	return TI_OK;
}

/* Bilinear.reset_parameters: both from weight.size(1). */
static ti_status rule_bilinear(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	(void)gates;
	const char *local = local_of(q);
	if (strcmp(local, "weight") && strcmp(local, "bias"))
		return unknown_tensor(q, err);
	const ti_init_tensor *w = sibling(q, "weight");
	if (!w || w->rank < 2)
		return TI_FAIL(err, TI_E_INVALID, "Bilinear tensor '%s' needs a weight of rank 3", q->name);
	answer(a, symmetric(w->shape[1] > 0 ? 1 / sqrt((double)w->shape[1]) : 0),
	       "uniform_(-1/sqrt(in1_features), 1/sqrt(in1_features))");
	return TI_OK;
}

/* Embedding and EmbeddingBag: normal_(weight), then _fill_padding_idx_with_zero. */
static ti_status rule_embedding(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	(void)gates;
	if (strcmp(local_of(q), "weight"))
		return unknown_tensor(q, err);
	ti_fill_policy p = ti_fill_constant(TI_FILL_RANDN);
	int64_t pad = q->m->padding_idx;
	if (pad >= 0) {
		const ti_init_tensor *t = q->tensor;
		if (t->rank != 2 || pad >= t->shape[0])
			return TI_FAIL(err, TI_E_INVALID, "padding_idx %lld is not a row of %s tensor '%s'", (long long)pad,
			               q->m->type, q->name);
		p.zero_begin = (uint64_t)pad * (uint64_t)t->shape[1];
		p.zero_end = p.zero_begin + (uint64_t)t->shape[1];
	}
	answer(a, p, pad >= 0 ? "normal_(0, 1), padding_idx row zeroed" : "normal_(0, 1)");
	return TI_OK;
}

/* _NormBase (BatchNorm, InstanceNorm), LayerNorm, GroupNorm, RMSNorm: reset_parameters and reset_running_stats. */
static ti_status rule_norm(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	(void)gates;
	static const struct {
		const char *name;
		ti_fill_kind kind;
		const char *rule;
	} tensors[] = {
		{"weight", TI_FILL_ONES, "ones_"},
		{"bias", TI_FILL_ZEROS, "zeros_"},
		{"running_mean", TI_FILL_ZEROS, "running_mean.zero_()"},
		{"running_var", TI_FILL_ONES, "running_var.fill_(1)"},
		{"num_batches_tracked", TI_FILL_ZEROS, "num_batches_tracked.zero_()"},
	};
	for (size_t i = 0; i < sizeof(tensors) / sizeof(tensors[0]); i++)
		if (!strcmp(local_of(q), tensors[i].name)) {
			answer(a, ti_fill_constant(tensors[i].kind), tensors[i].rule);
			return TI_OK;
		}
	return unknown_tensor(q, err);
}

/* PReLU: Parameter(torch.empty(num_parameters).fill_(init)). */
static ti_status rule_prelu(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	(void)gates;
	if (strcmp(local_of(q), "weight"))
		return unknown_tensor(q, err);
	answer(a, ti_fill_full(q->m->prelu_init), "fill_(init)");
	return TI_OK;
}

/* RNNBase and RNNCellBase.reset_parameters: every parameter uniform_(-stdv, stdv), stdv = 1/sqrt(hidden_size). */
static ti_status rule_rnn(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	const char *local = local_of(q);
	if (!starts_with(local, "weight_") && !starts_with(local, "bias_"))
		return unknown_tensor(q, err);
	int64_t hidden = q->m->hidden_size;
	if (hidden <= 0) {
		/* weight_hh[_lK][_reverse] is [gates * hidden_size, hidden_size or proj_size] */
		const ti_init_tensor *hh = sibling_starting(q, "weight_hh");
		if (!hh || hh->rank < 1)
			return TI_FAIL(err, TI_E_INVALID, "%s tensor '%s': no hidden_size and no weight_hh to take it from",
			               q->m->type, q->name);
		hidden = hh->shape[0] / gates;
	}
	answer(a, symmetric(hidden > 0 ? 1.0 / sqrt((double)hidden) : 0),
	       "uniform_(-1/sqrt(hidden_size), 1/sqrt(hidden_size))");
	return TI_OK;
}

static ti_status xavier(const init_query *q, bool normal, init_answer *a, ti_error *err)
{
	int64_t fan_in, fan_out;
	ti_status st = fans_of(q->tensor, &fan_in, &fan_out, err);
	if (st)
		return st;
	if (!has_elements(q->tensor)) {
		answer(a, ti_fill_constant(TI_FILL_ZEROS), normal ? "xavier_normal_ of no element: zeros"
		                                                  : "xavier_uniform_ of no element: zeros");
		return TI_OK;
	}
	double std = xavier_std(fan_in, fan_out);
	if (normal)
		answer(a, ti_fill_normal(0.0, std), "xavier_normal_");
	else
		answer(a, symmetric(sqrt(3.0) * std), "xavier_uniform_");
	return TI_OK;
}

/* MultiheadAttention._reset_parameters; out_proj.weight keeps its Linear's init. */
static ti_status rule_attention(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	const char *local = local_of(q);
	if (!strcmp(local, "in_proj_weight") || !strcmp(local, "q_proj_weight") || !strcmp(local, "k_proj_weight") ||
	    !strcmp(local, "v_proj_weight"))
		return xavier(q, false, a, err);
	if (!strcmp(local, "in_proj_bias") || !strcmp(local, "out_proj.bias")) {
		answer(a, ti_fill_constant(TI_FILL_ZEROS), "constant_(0)");
		return TI_OK;
	}
	if (!strcmp(local, "bias_k") || !strcmp(local, "bias_v"))
		return xavier(q, true, a, err);
	if (!strcmp(local, "out_proj.weight")) {
		init_query part = *q;
		part.at += strlen("out_proj.");
		return rule_linear(&part, gates, a, err);
	}
	return unknown_tensor(q, err);
}

/* The parts of a Transformer layer, by prefix. */
static ti_status rule_layer(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	static const struct {
		const char *prefix;
		init_rule_fn rule;
	} parts[] = {
		{"self_attn.", rule_attention}, {"multihead_attn.", rule_attention}, {"linear1.", rule_linear},
		{"linear2.", rule_linear},      {"norm1.", rule_norm},               {"norm2.", rule_norm},
		{"norm3.", rule_norm},
	};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (starts_with(local_of(q), parts[i].prefix)) {
			init_query part = *q;
			part.at += strlen(parts[i].prefix);
			return parts[i].rule(&part, gates, a, err);
		}
	return unknown_tensor(q, err);
}

/* TransformerEncoder/Decoder: layers.N. and norm. */
static ti_status rule_stack(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	const char *local = local_of(q);
	init_query part = *q;
	if (starts_with(local, "norm.")) {
		part.at += strlen("norm.");
		return rule_norm(&part, gates, a, err);
	}
	if (starts_with(local, "layers.")) {
		const char *digits = local + strlen("layers."), *end = digits;
		while (*end >= '0' && *end <= '9')
			end++;
		if (end > digits && *end == '.') {
			part.at += (size_t)(end + 1 - local);
			return rule_layer(&part, gates, a, err);
		}
	}
	return unknown_tensor(q, err);
}

/* Transformer: its stacks, then xavier_uniform_ for every tensor of rank 2 or more. */
static ti_status rule_transformer(const init_query *q, int gates, init_answer *a, ti_error *err)
{
	const char *local = local_of(q);
	init_query part = *q;
	if (starts_with(local, "encoder."))
		part.at += strlen("encoder.");
	else if (starts_with(local, "decoder."))
		part.at += strlen("decoder.");
	else
		return unknown_tensor(q, err);
	ti_status st = rule_stack(&part, gates, a, err);
	if (st || q->tensor->rank < 2)
		return st;
	return xavier(q, false, a, err);
}

/* One row per module type; gates is the RNN family's gate count. */
static const struct {
	const char *type;
	init_rule_fn rule;
	int gates;
} types[] = {
	{"Linear", rule_linear, 0},
	{"LazyLinear", rule_linear, 0},
	{"NonDynamicallyQuantizableLinear", rule_linear, 0},
	{"Conv1d", rule_linear, 0},
	{"Conv2d", rule_linear, 0},
	{"Conv3d", rule_linear, 0},
	{"ConvTranspose1d", rule_linear, 0},
	{"ConvTranspose2d", rule_linear, 0},
	{"ConvTranspose3d", rule_linear, 0},
	{"LazyConv1d", rule_linear, 0},
	{"LazyConv2d", rule_linear, 0},
	{"LazyConv3d", rule_linear, 0},
	{"LazyConvTranspose1d", rule_linear, 0},
	{"LazyConvTranspose2d", rule_linear, 0},
	{"LazyConvTranspose3d", rule_linear, 0},
	{"Bilinear", rule_bilinear, 0},
	{"Embedding", rule_embedding, 0},
	{"EmbeddingBag", rule_embedding, 0},
	{"BatchNorm1d", rule_norm, 0},
	{"BatchNorm2d", rule_norm, 0},
	{"BatchNorm3d", rule_norm, 0},
	{"LazyBatchNorm1d", rule_norm, 0},
	{"LazyBatchNorm2d", rule_norm, 0},
	{"LazyBatchNorm3d", rule_norm, 0},
	{"SyncBatchNorm", rule_norm, 0},
	{"InstanceNorm1d", rule_norm, 0},
	{"InstanceNorm2d", rule_norm, 0},
	{"InstanceNorm3d", rule_norm, 0},
	{"LayerNorm", rule_norm, 0},
	{"GroupNorm", rule_norm, 0},
	{"RMSNorm", rule_norm, 0},
	{"PReLU", rule_prelu, 0},
	{"RNN", rule_rnn, 1},
	{"RNNCell", rule_rnn, 1},
	{"LSTM", rule_rnn, 4},
	{"LSTMCell", rule_rnn, 4},
	{"GRU", rule_rnn, 3},
	{"GRUCell", rule_rnn, 3},
	{"MultiheadAttention", rule_attention, 0},
	{"TransformerEncoderLayer", rule_layer, 0},
	{"TransformerDecoderLayer", rule_layer, 0},
	{"TransformerEncoder", rule_stack, 0},
	{"TransformerDecoder", rule_stack, 0},
	{"Transformer", rule_transformer, 0},
};

void ti_init_module_defaults(ti_init_module *m, const char *type, const ti_init_tensor *tensors, int count)
{
	*m = (ti_init_module){.type = type, .tensors = tensors, .tensor_count = count, .padding_idx = -1,
	                      .prelu_init = 0.25};
}

static ti_status check_shape(const char *name, int rank, const int64_t *shape, ti_error *err)
{
	if (rank < 0 || (rank > 0 && !shape))
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has no shape", name);
	for (int i = 0; i < rank; i++)
		if (shape[i] < 0)
			return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has a negative size %lld", name, (long long)shape[i]);
	return TI_OK;
}

ti_status ti_init_policy(const ti_init_module *m, const char *name, ti_fill_policy *out, const char **rule,
                         ti_error *err)
{
	if (!m || !m->type || !name || !out)
		return TI_FAIL(err, TI_E_INVALID, "init policy without a module or a tensor name");
	const ti_init_tensor *tensor = NULL;
	for (int i = 0; i < m->tensor_count; i++)
		if (m->tensors[i].name && !strcmp(m->tensors[i].name, name))
			tensor = &m->tensors[i];
	if (!tensor)
		return TI_FAIL(err, TI_E_INVALID, "%s has no tensor '%s'", m->type, name);
	for (int i = 0; i < m->tensor_count; i++) {
		ti_status st = check_shape(m->tensors[i].name, m->tensors[i].rank, m->tensors[i].shape, err);
		if (st)
			return st;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strcmp(types[i].type, m->type))
			continue;
		init_query q = {.m = m, .tensor = tensor, .name = name, .at = 0};
		init_answer a;
		ti_status st = types[i].rule(&q, types[i].gates, &a, err);
		if (st)
			return st;
		*out = a.policy;
		if (rule)
			*rule = a.rule;
		return TI_OK;
	}
	return TI_FAIL(err, TI_E_UNSUPPORTED, "no default initialisation known for module type '%s'", m->type);
}

/* ---- by name alone ---- */

/* Whether a dotted component of name contains "embed" or is "wte" or "wpe" (GPT-2's embeddings). */
static bool names_an_embedding(const char *name)
{
	for (const char *c = name; *c;) {
		size_t len = strcspn(c, ".");
		bool embed = false;
		for (size_t i = 0; i + 5 <= len && !embed; i++)
			embed = !strncmp(c + i, "embed", 5);
		if (embed || (len == 3 && (!strncmp(c, "wte", 3) || !strncmp(c, "wpe", 3))))
			return true;
		c += len;
		if (*c == '.')
			c++;
	}
	return false;
}

ti_status ti_init_policy_by_name(const char *name, ti_dtype dtype, int rank, const int64_t *shape,
                                 ti_fill_policy *out, const char **rule, ti_error *err)
{
	if (!name || !out)
		return TI_FAIL(err, TI_E_INVALID, "init policy without a tensor name");
	ti_status st = check_shape(name, rank, shape, err);
	if (st)
		return st;
	const char *dot = strrchr(name, '.'), *last = dot ? dot + 1 : name;
	init_answer a;
	bool is_float = dtype == TI_DT_FLOAT32 || dtype == TI_DT_FLOAT64 || dtype == TI_DT_FLOAT16 ||
	                dtype == TI_DT_BFLOAT16 || dtype == TI_DT_COMPLEX32 || dtype == TI_DT_COMPLEX64 ||
	                dtype == TI_DT_COMPLEX128;
	if (!is_float) {
		if (!strcmp(last, "position_ids"))
			answer(&a, ti_fill_constant(TI_FILL_ARANGE), "integer position_ids: arange");
		else
			answer(&a, ti_fill_constant(TI_FILL_ZEROS), "integer or bool dtype: zeros");
	} else if (!strcmp(last, "num_batches_tracked") || !strcmp(last, "running_mean")) {
		answer(&a, ti_fill_constant(TI_FILL_ZEROS), "running statistics: zeros");
	} else if (!strcmp(last, "running_var")) {
		answer(&a, ti_fill_constant(TI_FILL_ONES), "running_var: ones");
	} else if (starts_with(last, "bias") || ends_with(last, "bias") || !strcmp(last, "beta")) {
		answer(&a, ti_fill_constant(TI_FILL_ZEROS), "name ends in bias: zeros");
	} else if (!strcmp(last, "gamma") || (rank == 1 && ends_with(last, "weight"))) {
		answer(&a, ti_fill_constant(TI_FILL_ONES), "rank-1 weight (a norm's scale): ones");
	} else if (rank == 2 && names_an_embedding(name)) {
		answer(&a, ti_fill_constant(TI_FILL_RANDN), "embedding: normal_(0, 1)");
	} else if (rank >= 2 && strstr(last, "weight")) {
		ti_init_tensor t = {.name = name, .rank = rank, .shape = shape};
		init_query q = {.tensor = &t, .name = name};
		if ((st = kaiming_weight(&q, &a, err)))
			return st;
		if (a.policy.kind == TI_FILL_UNIFORM)
			a.rule = "weight of rank 2 or more: kaiming_uniform_(a=sqrt(5))";
	} else {
		answer(&a, ti_fill_constant(TI_FILL_ZEROS), "no rule: zeros");
	}
	*out = a.policy;
	if (rule)
		*rule = a.rule;
	return TI_OK;
}
