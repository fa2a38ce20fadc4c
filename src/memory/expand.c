/*
 * expand.c - the modules and operators memory plays as the PyTorch kernels
 * they run (expand_attention.c, expand_rnn.c), found by name. Above the
 * expansions, which build with the rules below them.
 */
#include <string.h>

#include "memory/memory_internal.h"

/* on cuda PyTorch runs recurrent layers in cuDNN (_cudnn_rnn), whose kernels and buffers are not these */
#define CUDNN_RNN MEM_UNCERTAIN(TI_UNCERTAIN_CUDNN_RNN)

static const mem_rule module_rules[] = {
	{"MultiheadAttention", mem_expand_mha, "in-projection input, q/k/v, softmax result, dropout mask, attention output", 0},
	{"TransformerEncoderLayer", mem_expand_encoder_layer, "its attention, norms, feed-forward and dropouts", 0},
	{"TransformerEncoder", mem_expand_encoder, "each layer's, and the final norm's", 0},
	{"LSTM", mem_expand_rnn, "the gates, cell states and h of every step of every layer", CUDNN_RNN},
	{"GRU", mem_expand_rnn, "the gates, the clones of in-place updates and h of every step", CUDNN_RNN},
	{"RNN", mem_expand_rnn, "h and its pre-activation of every step", CUDNN_RNN},
	{NULL, NULL, NULL, 0},
};

static const mem_rule op_rules[] = {
	{"scaled_dot_product_attention", mem_expand_sdpa, "math kernel: scaled q, k, softmax result, dropout mask, v", 0},
	{NULL, NULL, NULL, 0},
};

const mem_rule *mem_rule_find(const char *name, bool module)
{
	for (const mem_rule *r = module ? module_rules : op_rules; r->name; r++)
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}
