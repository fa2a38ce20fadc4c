/*
 * memory_internal.h - what the memory simulation's files share.
 *
 * The path from a description to a figure:
 *   trace.c     records every operator and module call of a shape run (an
 *               observer on the run), as a tree of events;
 *   rules.c     one table, a row per operator or module type: how a call
 *               becomes ledger units (what it allocates, saves for backward,
 *               which scratch its kernels take) - a row may expand a module
 *               (MultiheadAttention, LSTM) into the units PyTorch runs;
 *   optim.c     one table, a row per optimizer: state and step temporaries;
 *   ledger.c    live storages, the high-water mark and the timeline;
 *   simulate.c  plays the step over the units: forward, backward, optimizer.
 */
#ifndef TINSPECT_MEMORY_INTERNAL_H
#define TINSPECT_MEMORY_INTERNAL_H

#include "model/model_internal.h"
#include "tinspect/memory.h"

#define MEM_MAX_IO 32 /* tensors in or out of one unit; more are folded into one */

/* ---- the trace: one event per call ---- */

typedef struct mem_event {
	const char *name;            /* operator name or module type */
	const ti_module *module;     /* a module call, else NULL */
	const ti_op_call *call;      /* bound arguments and outputs; NULL for containers, composites and failed calls */
	const ti_arg *released;      /* a release: the value a graph's name let go of (name is NULL) */
	int parent;                  /* event index, -1 at top level */
	int first_child, last_child, next_sibling;
} mem_event;

typedef struct mem_trace {
	mem_event *events;
	size_t count, capacity;
	int current;                 /* innermost open event */
	ti_arena *arena;
	bool failed;                 /* out of memory while tracing */
} mem_trace;

/* Runs the model's shape propagation, recording every call in *trace. */
ti_status mem_trace_run(ti_model *model, mem_trace *trace, const ti_model_report **report, ti_error *err);

/* ---- tensors and units ---- */

typedef struct mem_tensor {
	int64_t bytes;               /* numel x element size */
	int storage;                 /* the storage it lives in (views share it) */
	bool grad;                   /* requires grad */
	int param;                   /* index in the model's parameters, -1 if none */
	int producer;                /* the unit that made it, -1 none */
	int elsize;                  /* bytes an element: its dtype's */
	bool floating;               /* a floating dtype: autocast may cast it */
	bool split;                  /* tensor parallelism: this rank holds 1/K of it */
	bool tp_shard;               /* a parameter split over the tensor-parallel ranks */
	const char *name;            /* what produced it, for the report */
	int64_t rows;                /* its meta tensor's second-to-last size (a value's length: the tokens it
	                                holds, for the KV cache), 0 unknown */
	int64_t lead;                /* its meta tensor's first size (a batch) when it has 3 dimensions or more,
	                                else 0 */
} mem_tensor;

typedef enum mem_out_kind {
	MEM_OUT_NEW,      /* the outputs are new tensors */
	MEM_OUT_VIEW,     /* output 0 views input 0 (its storage); its gradient is a view too */
	MEM_OUT_INPLACE   /* output 0 is input 0, written in place */
} mem_out_kind;

/* What one unit does, as the ledger sees it. */
typedef struct mem_unit {
	const char *label;           /* "layer1.0.conv1 (conv2d)" */
	const char *op;              /* the operator ("conv2d") */
	int module;                  /* index of the module it belongs to in the report's list */
	int in[MEM_MAX_IO], nin;     /* tensor ids (duplicates allowed) */
	int out[MEM_MAX_IO], nout;
	mem_out_kind out_kind;
	bool differentiable;         /* false: outputs never require grad (argmax, comparisons) */
	unsigned saved_in;           /* bit i: in[i] is saved for backward (when the unit records a graph) */
	unsigned saved_if[MEM_MAX_IO]; /* per input: 0 saved as saved_in says; else only when one of these
	                                  inputs (bit j: in[j]) wants a gradient, the formula that reads it */
	unsigned saved_out;          /* bit i: out[i] is saved */
	int64_t saved_extra;         /* new tensors saved beside (a dropout mask, norm statistics) */
	int64_t saved_cond;          /* new bytes saved only while one of saved_cond_if's inputs wants a gradient,
	                                else made and freed within the call (an operand's copy, a product the
	                                weight's gradient reads) */
	unsigned saved_cond_if;      /* bits of in[] for saved_cond; 0: saved_cond unused */
	int64_t fwd_scratch;         /* freed before the call returns */
	int64_t fwd_scratch_grad;    /* the same when the call records a graph, if different (-1: same) */
	int64_t bwd_scratch;         /* the backward's own temporaries */
	int64_t bwd_scratch_in;      /* > 0: bwd_scratch when in[0] wants a gradient (a recurrent walk that makes it,
	                                a convolution's backward-data buffer) */
	int64_t bwd_scratch_no_go[2]; /* > 0: bwd_scratch ([1]: bwd_scratch_in) when the output's gradient has
	                                no storage of the output's size to let go of midway (the loss's expanded
	                                gradient): a recurrent walk frees it when its steps have read it */
	bool bwd_whole;              /* bwd_scratch is the backward's whole peak above its start, its own
	                                gradients included: what it saved is let go before they are counted */
	unsigned grad_view;          /* bit i: in[i]'s gradient is a view of the output's, or that gradient
	                                itself (add: no allocation) */
	bool unknown;                /* no rule: what it saves is a guess */
	bool release;                /* no call: a graph's name lets go of its inputs here */
	int segment;                 /* the checkpointed module it runs in, -1 none */
	unsigned depends;            /* bit k: uncertainty kind k shapes its scratch and what it saves beside
	                                (the instruction set a convolution's kernels are chosen for) */
	bool causal;                 /* a fused attention kernel that masks its scores (is_causal or a mask) */
	int64_t kv_window;           /* > 0: its module's sliding attention window (the description's kv_windows,
	                                or --sliding-window, which overrides it) */
	int64_t kv_compressed;       /* > 0: the elements a token of its module's compressed cache, when the
	                                options ask for that layout (kv_compressed) */
	bool no_cache;               /* its module is an encoder's: an attention step there keeps no KV cache */
	int64_t bwd_reduce;          /* cuda: the reduction buffer of a gradient summed to its input's shape (a
	                                Linear bias's), beside the backward's gradients when bwd_reduce_if's
	                                inputs want one (cuda_reduce.c) */
	int64_t bwd_reduce_expanded; /* the same when the output's gradient is the expanded gradient of a sum */
	unsigned bwd_reduce_if;      /* bits of in[] for bwd_reduce */
} mem_unit;

/*
 * Which cuDNN convolution workspaces a play of the step gives (cuda): the
 * estimate, none at all (the range's low end), or the most the grid of
 * measured convolutions saw for a shape (its high end).
 */
typedef enum mem_cudnn_play {
	MEM_CUDNN_ESTIMATE,
	MEM_CUDNN_NONE,
	MEM_CUDNN_MOST
} mem_cudnn_play;

/*
 * cuDNN's recurrent workspace (cudnnGetRNNTempSpaceSizes) is its kernels'
 * choice, which the description does not fix: the estimate plays the
 * grid's fit, the range's ends its measured floor and its ceiling
 * (expand_rnn.c).
 */
typedef enum mem_rnn_workspace {
	MEM_RNN_WS_ESTIMATE, /* the fit */
	MEM_RNN_WS_LOW,      /* the floor every measured workspace reaches */
	MEM_RNN_WS_HIGH      /* the ceiling no measured workspace passes */
} mem_rnn_workspace;

/* Builds units from events: the rules' side. */
typedef struct mem_builder {
	ti_model *model;
	ti_arena *arena;
	const ti_memory_options *options;
	mem_cudnn_play cudnn;         /* cuda: the convolution workspaces this play gives */
	mem_tensor *tensors;
	size_t tensor_count, tensor_capacity;
	mem_unit *units;
	size_t unit_count, unit_capacity;
	void *map;                   /* meta tensor pointer -> tensor id */
	int module;                  /* current module index */
	const char *module_path;
	const char *window_path;     /* the module path kv_window was looked up for */
	int64_t window;              /* mem_kv_window's answer for window_path */
	int64_t compressed;          /* and the compressed cache's elements a token there, when asked */
	unsigned attention;          /* and how the model's code runs attention there (TI_MODEL_ATTN_*) */
	const char *moe_layer;       /* the MoE layer (the path above "experts.N") whose expert calls are summed */
	size_t moe_layer_len;
	int64_t moe_tokens;          /* its expert calls' input bytes so far */
	int64_t moe_tokens_max;      /* the most of any MoE layer */
	int64_t moe_call_max;        /* the most bytes one expert call's own units make (its transients, at most) */
	int moe_calls;               /* expert calls walked */
	bool leaf_module_parent;     /* the event's caller is a leaf module (its training flags follow the mode) */
	int storage_count;
	mem_rnn_workspace rnn_workspace; /* on cuda, which of cuDNN's recurrent workspaces a rule plays */
	int64_t cudnn_dropout_state; /* > 0: the bytes of cuDNN's dropout state a recurrent layer's training dropout
	                                makes once and the process keeps (held from the start of the step) */
	int segment;                 /* the open checkpointed module, -1 none */
	struct mem_segment { int first, last; const char *path; } *segments;
	size_t segment_count, segment_capacity;
	const char **unknown_ops;    /* operators without a rule, once each */
	int *amp_cache;              /* --amp: per tensor, its cached low-precision cast + 1, 0 none */
	size_t amp_cache_capacity;
	size_t unknown_count;
} mem_builder;

/* The tensor id of a meta tensor: an existing one, or a new tensor (and storage) for one never seen. */
int mem_tensor_of(mem_builder *b, const ti_meta_tensor *t);
/* A new tensor of bytes in a storage of its own (views: mem_tensor_view). -1 when out of memory. */
int mem_tensor_new(mem_builder *b, int64_t bytes, const char *name);
int mem_tensor_view(mem_builder *b, int base, int64_t bytes);
/* The empty map from meta tensors to tensor ids a builder starts with (builder.c); NULL when out of memory. */
void *mem_tensor_map_new(ti_arena *arena);
/* The tensor id bound to t, or -1. */
int mem_tensor_find(const mem_builder *b, const ti_meta_tensor *t);
/* Binds meta tensor t to tensor id (a rule's synthetic output is the op's real output). */
int mem_tensor_bind(mem_builder *b, const ti_meta_tensor *t, int id);
int64_t mem_meta_bytes(const ti_meta_tensor *t);
/*
 * The sliding window of the attention steps the current module runs, in
 * tokens: --sliding-window when given, else the description's kv_windows
 * entry for the module; 0 for full attention.
 */
int64_t mem_kv_window(mem_builder *b);
/* How the model's own code runs the current module's attention steps: TI_MODEL_ATTN_* bits (model.h). */
unsigned mem_attention(mem_builder *b);
/* Appends a unit (copied), its kv_window set from the current module. */
ti_status mem_emit(mem_builder *b, const mem_unit *u, ti_error *err);

/*
 * For rows that expand a module into the operators PyTorch runs: one unit
 * over tensor ids ins[0..nin) (-1 entries skipped), saving the inputs of
 * saved_in's bits (and its output when save_out, and saved_extra new bytes
 * beside), with one output of out_bytes (a view of ins[0] for MEM_OUT_VIEW).
 * Returns the output's tensor id, or -1 with err set.
 */
int mem_step(mem_builder *b, const char *op, const int *ins, int nin, unsigned saved_in, int64_t out_bytes,
             mem_out_kind kind, bool save_out, int64_t saved_extra, ti_error *err);
/* The tensor id of a module's parameter or buffer by local name ("self_attn.in_proj_weight"), -1 if it has none. */
int mem_param(mem_builder *b, const ti_module *m, const char *local);
/* Whether calls under the module train (the mode, as module.train() / .eval() set it). */
bool mem_training(const mem_builder *b);

/* --quantize: whether model parameter i is a Linear weight bitsandbytes quantizes (quant.c). */
bool mem_quantized(const ti_model *m, const ti_memory_options *o, size_t i);
/* A quantized weight's output features (its rows once quantized): a Linear's shape[0], a Conv1D's shape[1]. */
int64_t mem_quant_rows(const ti_model *m, size_t i);
/*
 * --quantize, a linear call u over input x and weight w: when w is a
 * quantized parameter, the weight dequantized in the compute dtype for the
 * call (4-bit: forward, and backward when x wants a gradient) or LLM.int8's
 * int8 input and int32 product, as scratch.
 */
void mem_quant_linear(mem_builder *b, mem_unit *u, const ti_meta_tensor *x, const ti_meta_tensor *w);

/* Records a tensor's dtype (element size, floating or not) for autocast. */
void mem_tensor_dtype(mem_builder *b, int id, ti_dtype dtype);
/*
 * Under --amp, before u is emitted: casts its floating inputs as autocast
 * would for op (to the low dtype for matmuls and convolutions, a parameter's
 * cast cached until the forward ends; to float32 for softmax, norms and
 * losses) by emitting the cast units, and sizes its outputs in the dtype the
 * op then computes in. Nothing without --amp.
 */
ti_status mem_amp(mem_builder *b, mem_unit *u, const char *op, ti_error *err);
/* Under --tensor-parallel K, before u is emitted: which of its tensors this rank holds a 1/K share of. */
void mem_tp(mem_builder *b, mem_unit *u, const char *op);
/* The casts autocast cached, held until the forward returns (a unit that reads them last). */
ti_status mem_amp_finish(mem_builder *b, ti_error *err);

/* A rule: turns one event into units. */
typedef ti_status (*mem_rule_fn)(mem_builder *b, const mem_event *ev, ti_error *err);
typedef struct mem_rule {
	const char *name;            /* operator name or module type */
	mem_rule_fn plan;
	const char *saves;           /* in words, for --explain and the man page */
	unsigned cuda_depends;       /* on cuda: the uncertainty kinds (bits) of the kernels PyTorch runs there
	                                instead of the ones the row plays (cuDNN's RNN) */
} mem_rule;

/* The rows that expand a module or operator into the operators PyTorch runs (expand_*.c). */
ti_status mem_expand_mha(mem_builder *b, const mem_event *ev, ti_error *err);
ti_status mem_expand_encoder_layer(mem_builder *b, const mem_event *ev, ti_error *err);
ti_status mem_expand_encoder(mem_builder *b, const mem_event *ev, ti_error *err);
ti_status mem_expand_sdpa(mem_builder *b, const mem_event *ev, ti_error *err);
ti_status mem_expand_rnn(mem_builder *b, const mem_event *ev, ti_error *err);

/* Whether an operator has a plain row (what it allocates and saves, in rules.c), and planning by it. */
bool mem_rule_plain(const char *name);
ti_status mem_rule_plan_op(mem_builder *b, const mem_event *ev, ti_error *err);

/* The row for an operator or module type; NULL when none. Modules are looked up by type, operators by name. */
const mem_rule *mem_rule_find(const char *name, bool module);
/* The row used when an operator has neither a row nor sub-calls: outputs new, inputs saved. */
ti_status mem_rule_default(mem_builder *b, const mem_event *ev, ti_error *err);

/* ---- what is uncertain (uncertain.c) ---- */

#define MEM_UNCERTAIN(k) (1u << (k))

/* The kinds of uncertainty the step's figures have, as a mask: from the units' depends and the options. */
unsigned mem_uncertain_kinds(const ti_memory_options *o, unsigned unit_depends, bool unknown_ops);
/* Sets r's list of uncertainties (kinds, a mask) and whether the high end is open; the list lives in arena. */
ti_status mem_uncertain_list(ti_memory_report *r, ti_arena *arena, unsigned kinds, ti_error *err);
/* Sets r's range from the least and the most peak under the alternatives, widened by the rules' tolerance. */
ti_status mem_peak_range(ti_memory_report *r, int64_t least, int64_t most, ti_error *err);

/* ---- optimizers ---- */

typedef struct mem_param_info {
	int64_t bytes, numel;
	int ndim;
	const int64_t *shape;
	ti_dtype dtype;
} mem_param_info;

typedef struct mem_optim_cost {
	int64_t state;               /* bytes of state kept between steps */
	int64_t step_scratch;        /* the most the step allocates at once beyond the state */
} mem_optim_cost;

/* State and step temporaries for the trainable parameters params[0..n). */
/*
 * What a training dropout of `bytes` (elements of es bytes) saves beside its
 * output: on the CPU the noise it multiplies by, in the input's dtype
 * (input * bernoulli noise, _dropout_impl); on CUDA F.dropout (fused: true
 * when the call is plain dropout) runs native_dropout, which saves a bool
 * mask, a byte per element.
 */
int64_t mem_dropout_saved(const mem_builder *b, int64_t bytes, int64_t es, bool fused);
/*
 * The bytes PyTorch's CUDA reduction kernel asks the caching allocator for
 * (buffer and semaphores, each rounded), reducing inputs_per_output values
 * into each of outputs laid out as layout says; for MEM_REDUCE_ROWS inner
 * is the kept fastest dimension's size (the columns); acc_size is the
 * accumulator's bytes (4 for float32, float16, bfloat16; 8 for float64).
 * 0 when the kernel reduces within blocks. cuda_reduce.c.
 */
typedef enum mem_reduce_layout {
	MEM_REDUCE_FASTEST,   /* the reduced values are adjacent: a sum over the last dimension */
	MEM_REDUCE_ROWS,      /* over rows of contiguous columns: a bias's gradient from [M, C] */
	MEM_REDUCE_BROADCAST  /* over an expanded tensor, every stride 0: the gradient of a sum */
} mem_reduce_layout;
int64_t mem_cuda_reduce_scratch(int64_t outputs, int64_t inputs_per_output, mem_reduce_layout layout,
                                int64_t inner, int acc_size);

ti_status mem_optim_cost_of(const ti_memory_options *options, const mem_param_info *params, size_t n,
                            mem_optim_cost *out, const char **rule, ti_error *err);

/* ---- checked arithmetic ---- */

static inline bool mem_add(int64_t *acc, int64_t v)
{
	if (v < 0 || *acc > TI_MEMORY_MAX_BYTES - v)
		return false;
	*acc += v;
	return true;
}

static inline bool mem_mul(int64_t a, int64_t b, int64_t *out)
{
	if (a < 0 || b < 0)
		return false;
	if (a && b > TI_MEMORY_MAX_BYTES / a)
		return false;
	*out = a * b;
	return true;
}

#endif
