/*
 * init_rules.h - PyTorch's default initialisation, as fill policies (the `init` policy of fill.h).
 *
 * ti_init_policy() says how a freshly constructed torch.nn module fills one
 * of its tensors, by module type and local tensor name, as a policy that
 * ti_fill() writes: uniform:-b,b, normal:0,s, ones, zeros or full:v, with
 * the bounds computed in double by the same formulas, in the same order, as
 * torch/nn/init.py and the modules' reset_parameters() (1.13 and 2.x agree):
 *
 *   Linear, Conv1d/2d/3d, ConvTranspose1d/2d/3d (and their Lazy forms)
 *     weight  kaiming_uniform_(a=sqrt(5)): b = sqrt(3) * gain / sqrt(fan_in),
 *             gain = sqrt(2 / (1 + a^2)); that is 1/sqrt(fan_in) up to rounding
 *     bias    uniform_(-b, b), b = 1 / sqrt(fan_in) of the weight
 *     fan_in = weight.size(1) * prod(weight.shape[2:])
 *             (_calculate_fan_in_and_fan_out: for ConvTranspose, whose weight
 *             is [in, out/groups, k...], that is out/groups * prod(k))
 *   Bilinear  weight, bias: uniform_(-b, b), b = 1 / sqrt(weight.size(1))
 *   Embedding, EmbeddingBag
 *     weight  normal_(0, 1), then the padding_idx row zeroed (the policy's
 *             zero_begin/zero_end)
 *   BatchNorm1d/2d/3d, SyncBatchNorm, InstanceNorm1d/2d/3d, LayerNorm,
 *   GroupNorm, RMSNorm
 *     weight ones, bias zeros, running_mean zeros, running_var ones,
 *     num_batches_tracked zeros
 *   PReLU     weight full:init (0.25 unless the constructor said otherwise)
 *   RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell
 *     every weight and bias: uniform_(-b, b), b = 1 / sqrt(hidden_size)
 *   MultiheadAttention (MultiheadAttention._reset_parameters)
 *     in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight:
 *             xavier_uniform_: b = sqrt(3) * sqrt(2 / (fan_in + fan_out))
 *     in_proj_bias, out_proj.bias: zeros
 *     out_proj.weight: left as its Linear made it: kaiming_uniform_(a=sqrt(5))
 *     bias_k, bias_v: xavier_normal_: std = sqrt(2 / (fan_in + fan_out))
 *   TransformerEncoderLayer, TransformerDecoderLayer: their parts, by prefix:
 *     self_attn. and multihead_attn. are MultiheadAttention, linear1. and
 *     linear2. Linear, norm1. to norm3. LayerNorm
 *   TransformerEncoder, TransformerDecoder: layers.N. is a layer, norm. a LayerNorm
 *   Transformer: encoder. and decoder. are stacks, and then every tensor of
 *     rank 2 or more is xavier_uniform_ (Transformer._reset_parameters)
 *
 * A tensor with no element gets zeros (there is nothing to draw; PyTorch
 * warns and leaves it), and so does a bias whose weight has fan_in 0.
 *
 * ti_init_policy_by_name() is for a checkpoint without a description: it
 * guesses from the tensor's name, dtype and rank alone. The first rule that
 * matches wins; "last" is the name's last dotted component:
 *
 *   1. a dtype that is neither floating nor complex: arange when last is "position_ids" (the buffer
 *      Hugging Face models keep), zeros otherwise
 *   2. last is "num_batches_tracked" or "running_mean": zeros
 *   3. last is "running_var": ones
 *   4. last starts or ends with "bias" (bias, in_proj_bias, bias_ih_l0,
 *      bias_k), or is "beta": zeros
 *   5. last is "gamma", or rank 1 and last ends with "weight": ones (the
 *      scale of a normalization layer; PReLU's weight gets 1 too)
 *   6. rank 2 and a component contains "embed" or is "wte" or "wpe":
 *      normal:0,1 (Embedding)
 *   7. rank 2 or more and last contains "weight": kaiming_uniform_(a=sqrt(5))
 *      with fan_in = prod(shape[1:]) (Linear and Conv weights); zeros when
 *      fan_in is 0
 *   8. anything else: zeros
 *
 * Nothing is allocated; the policies hold no pointers. `rule`, when not
 * NULL, receives a static string naming what PyTorch would call
 * ("kaiming_uniform_(a=sqrt(5))", "zeros_", ...) or the by-name rule
 * ("name ends in bias: zeros"), for reports.
 */
#ifndef TINSPECT_INIT_RULES_H
#define TINSPECT_INIT_RULES_H

#include <stdint.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/fill_policy.h"

/* One tensor of a module, under the module's local name. */
typedef struct ti_init_tensor {
	const char *name;     /* "weight", "bias_hh_l1_reverse", "self_attn.in_proj_weight", "layers.0.norm1.bias" */
	int rank;
	const int64_t *shape;
} ti_init_tensor;

/* What the rules need to know of a module: its type, all its tensors, and a few constructor arguments. */
typedef struct ti_init_module {
	const char *type;              /* the torch.nn class name: "Conv2d", "LSTM", "TransformerEncoder" */
	const ti_init_tensor *tensors; /* every parameter and buffer it owns: a bias finds its weight here */
	int tensor_count;
	int64_t padding_idx;           /* Embedding, EmbeddingBag: the zeroed row in [0, num_embeddings), -1 for none */
	double prelu_init;             /* PReLU: the init argument */
	int64_t hidden_size;           /* RNN family: 0 takes it from weight_hh's rows / gates */
} ti_init_module;

/* A module with PyTorch's constructor defaults: no padding_idx, PReLU init 0.25, hidden_size derived. */
void ti_init_module_defaults(ti_init_module *m, const char *type, const ti_init_tensor *tensors, int count);

/*
 * The default initialisation of the tensor `name` (a local name, one of
 * m->tensors). TI_E_UNSUPPORTED for a module type or tensor name the table
 * does not know; TI_E_INVALID for a name missing from m->tensors, a weight
 * of rank below 2 where fans are needed (PyTorch's "Fan in and fan out can
 * not be computed for tensor with fewer than 2 dimensions"), a negative
 * size, or a padding_idx outside the weight; TI_E_LIMIT for a fan that
 * overflows int64.
 */
ti_status ti_init_policy(const ti_init_module *m, const char *name, ti_fill_policy *out, const char **rule,
                         ti_error *err);

/* The by-name guess above for a tensor of a checkpoint (full dotted name). TI_E_INVALID for a negative size. */
ti_status ti_init_policy_by_name(const char *name, ti_dtype dtype, int rank, const int64_t *shape,
                                 ti_fill_policy *out, const char **rule, ti_error *err);

#endif
