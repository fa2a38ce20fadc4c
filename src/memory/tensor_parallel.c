/*
 * tensor_parallel.c - one rank's share under Megatron-style tensor
 * parallelism (--tensor-parallel K), for the ledger.
 *
 * A Linear that takes a whole (replicated) input is column-parallel: its
 * weight and bias are split by output features and its output is split; a
 * Linear that takes a split input is row-parallel: its weight is split by
 * input features, its output all-reduced whole (its bias replicated). So
 * attention's QKV projection and an MLP's first Linear are column-parallel,
 * the output projection and the second Linear row-parallel, as Megatron-LM
 * pairs them. An embedding is vocabulary-parallel (weight split, output
 * whole). Everything computed from a split tensor is split (attention's
 * scores, softmax, dropout masks, activations inside the MLP): 1/K of the
 * bytes. Norms, residual adds and everything else on whole tensors stay
 * replicated, as without sequence parallelism. Convolutions are not split.
 */
#include <string.h>

#include "memory/memory_internal.h"

static int64_t share(int64_t bytes, int64_t k)
{
	return (bytes + k - 1) / k;
}

void mem_tp(mem_builder *b, mem_unit *u, const char *op)
{
	int64_t k = b->options->tensor_parallel;
	if (k <= 1 || !op)
		return;
	bool split_in = false;
	for (int i = 0; i < u->nin; i++)
		split_in |= b->tensors[u->in[i]].split && b->tensors[u->in[i]].param < 0;
	bool split_out;
	if (!strcmp(op, "linear") && u->nin >= 2 && b->tensors[u->in[1]].param >= 0) {
		bool column = !b->tensors[u->in[0]].split;
		b->tensors[u->in[1]].tp_shard = true;
		if (column && u->nin >= 3 && b->tensors[u->in[2]].param >= 0)
			b->tensors[u->in[2]].tp_shard = true;
		split_out = column;
	} else if (!strcmp(op, "embedding") && u->nin >= 2 && b->tensors[u->in[1]].param >= 0) {
		b->tensors[u->in[1]].tp_shard = true;
		split_out = false;
	} else {
		split_out = split_in;
	}
	if (!split_out)
		return;
	for (int o = 0; o < u->nout; o++) {
		mem_tensor *t = &b->tensors[u->out[o]];
		if (!t->floating || t->split)
			continue;
		t->split = true;
		t->bytes = share(t->bytes, k);
	}
	if (split_in) { /* what the call saves and its scratch are of split tensors too */
		u->saved_extra = share(u->saved_extra, k);
		u->fwd_scratch = share(u->fwd_scratch, k);
		if (u->fwd_scratch_grad > 0)
			u->fwd_scratch_grad = share(u->fwd_scratch_grad, k);
		u->bwd_scratch = share(u->bwd_scratch, k);
	}
}
